"""testbed: the virtual GPU cluster (real control plane + KWOK + real gpu-operator).

  testbed up [--config FILE] [--name NAME] [--nodes N --gpu PRODUCT --gpus-per-node K]
  testbed down [--name NAME] [--keep-state]
  testbed status [--name NAME] [--json]
  testbed kubeconfig [--name NAME]
  testbed env [--name NAME]          # shell exports (KUBECONFIG=...)
  testbed build                      # build/cache the binaries (tests/testbed/build.sh)
  testbed logs COMPONENT [--name NAME]
  testbed chaos ACTION TARGET        # faults: freeze/thaw/kill/start COMPONENT, delete-node/add-node/
                                     # not-ready/ready NODE (vcluster/chaos.py)

See docs/testbed.md. Everything listens on 127.0.0.1; every process is started by this
CLI, recorded by PID in the state dir and stopped by that PID on `down`.
"""
from __future__ import annotations

import argparse
import importlib.util
import os

from . import common
from .common import COMPONENTS, DEFAULT_CONFIG, REPO, RUN_ROOT, die


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="testbed", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--name", default=os.environ.get("GPUOPS_TESTBED_NAME", "gpuops"),
                    help="cluster name (one cluster per name; default gpuops or $GPUOPS_TESTBED_NAME)")
    ap.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    common_args = argparse.ArgumentParser(add_help=False)
    common_args.add_argument("--name", default=argparse.SUPPRESS, help="cluster name (also accepted here)")
    common_args.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS)
    sub = ap.add_subparsers(dest="cmd", required=True)
    _add = sub.add_parser
    sub.add_parser = lambda *a, **k: _add(*a, parents=[common_args], **k)  # --name after the command too
    up = sub.add_parser("up", help="start (or reconcile) the cluster; prints the kubeconfig path")
    up.add_argument("--config", help=f"config file (default {os.path.relpath(DEFAULT_CONFIG, REPO)})")
    up.add_argument("--nodes", type=int, help="replace node_groups with one group of N GPU nodes")
    up.add_argument("--gpu", help="GPU product for --nodes (default NVIDIA-A100-SXM4-40GB)")
    up.add_argument("--gpus-per-node", type=int, help="GPUs per node for --nodes (default 8)")
    up.add_argument("--group-name", help="node group name for --nodes (default gpu)")
    up.add_argument("--no-gpu-operator", action="store_true", help="do not run the gpu-operator controller")
    up.add_argument("--no-gpusim", action="store_true", help="do not start tests/testbed/gpusim")
    up.add_argument("--no-build", action="store_true", help="fail instead of building missing binaries")
    up.add_argument("--wait-gpus", action="store_true",
                    help="also wait until gpusim has published GPU capacity on every GPU node")
    down = sub.add_parser("down", help="stop every process this CLI started and remove the state")
    down.add_argument("--keep-state", action="store_true", help="keep the state dir (logs, etcd data)")
    stp = sub.add_parser("status", help="table of nodes with GPU resources and MIG/sharing labels")
    stp.add_argument("--json", action="store_true")
    sub.add_parser("kubeconfig", help="print the admin kubeconfig path")
    sub.add_parser("env", help="print shell exports for this cluster")
    lg = sub.add_parser("logs", help="print the tail of a component log")
    lg.add_argument("component", choices=COMPONENTS)
    lg.add_argument("-n", "--lines", type=int, default=50)
    ch = sub.add_parser("chaos", help="inject a fault: freeze/thaw/kill/start a component, "
                        "delete-node/add-node/not-ready/ready a node (docs/testbed.md, Chaos)")
    ch.add_argument("action", choices=["freeze", "thaw", "kill", "start",
                                       "delete-node", "add-node", "not-ready", "ready"])
    ch.add_argument("target", help="component (freeze/thaw/kill/start) or node name")
    ch.add_argument("--group", help="add-node: the config's node group the new node belongs to")
    b = sub.add_parser("build", help="build the binaries into the cache (build.sh)")
    b.add_argument("--force", action="store_true")
    return ap


def command(name: str):
    """The function of a command; up and status (the API users) are imported only when run."""
    if name in ("up", "status") and importlib.util.find_spec("kubernetes") is None:
        die(f"{name} needs the kubernetes Python client (pip install kubernetes, or make venv)")
    if name == "up":
        from .up import cmd_up
        return cmd_up
    if name == "chaos":
        from .chaos import cmd_chaos
        return cmd_chaos
    if name == "status":
        from .status import cmd_status
        return cmd_status
    from . import commands
    return getattr(commands, f"cmd_{name}")


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    common.QUIET = args.quiet
    if "/" in args.name or args.name.startswith("."):
        die("--name must be a simple name")
    os.makedirs(RUN_ROOT, exist_ok=True)
    return command(args.cmd)(args)
