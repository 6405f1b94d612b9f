"""``testbed chaos``: the faults of the chaos tests (tests/integration/test_chaos.py), by hand too.

Processes are signalled by the PID (and start time) this CLI recorded when it started them, never
by name; a component is started again from its recorded argv, env and cwd, on the same ports and
data dir. Nodes are changed through the API:

  testbed chaos freeze COMPONENT      SIGSTOP (e.g. kube-apiserver: connections stay open, no answer)
  testbed chaos thaw COMPONENT        SIGCONT
  testbed chaos kill COMPONENT        SIGKILL to its process group; its record is kept for ``start``
  testbed chaos start COMPONENT       start it again as ``up`` did and wait until it is healthy
  testbed chaos delete-node NODE      delete the Node object (as an autoscaler scale-down does)
  testbed chaos add-node NODE --group G   create a node shaped like node group G of the config
  testbed chaos not-ready NODE        the node reports Ready=False (kwok's node-not-ready stage)
  testbed chaos ready NODE            back to Ready

Always undo in a ``finally`` (thaw, start, ready): a frozen apiserver stops the whole cluster.
"""
from __future__ import annotations

import os
import signal
import time

from .common import COMPONENTS, die, log, read_versions
from .processes import alive, http_ok, proc_state, start_process, wait_for
from .state import State

NOT_READY_LABEL = "node-not-ready.stage.kwok.x-k8s.io"
PROCESS_ACTIONS = ("freeze", "thaw", "kill", "start")
NODE_ACTIONS = ("delete-node", "add-node", "not-ready", "ready")


def cmd_chaos(args) -> int:
    st = State(args.name)
    if not st.data:
        die(f"no cluster {args.name!r}", 3)
    if args.action in PROCESS_ACTIONS:
        if args.target not in COMPONENTS:
            die(f"{args.action}: unknown component {args.target!r} (one of {', '.join(COMPONENTS)})")
        with st.lock():
            globals()[args.action](State(args.name), args.target)
        return 0
    node_action(st, args.action, args.target, args.group)
    return 0


# -- processes ------------------------------------------------------------------------------

def _live(st: State, comp: str) -> dict:
    rec = st.proc(comp)
    if not alive(rec):
        die(f"{comp} is not running in cluster {st.name!r}")
    return rec


def freeze(st: State, comp: str) -> None:
    """SIGSTOP: the process keeps its sockets and answers nothing (a hung apiserver)."""
    pid = _live(st, comp)["pid"]
    os.kill(pid, signal.SIGSTOP)
    wait_for(f"{comp} (pid {pid}) stopped", lambda: proc_state(pid) == "T", 10, interval=0.05)
    log(f"froze {comp} (pid {pid})")


def thaw(st: State, comp: str) -> None:
    rec = st.proc(comp)
    if alive(rec):
        os.kill(rec["pid"], signal.SIGCONT)
        log(f"thawed {comp} (pid {rec['pid']})")


def kill(st: State, comp: str) -> None:
    """SIGKILL to the component's process group (the one start_process created); the record
    stays in state.json so that ``start`` can start it again."""
    rec = _live(st, comp)
    os.killpg(rec["pid"], signal.SIGKILL)
    wait_for(f"{comp} (pid {rec['pid']}) gone", lambda: not alive(rec), 10, interval=0.05)
    log(f"killed {comp} (pid {rec['pid']})")


def start(st: State, comp: str) -> None:
    """Start a killed component again from its recorded argv/env/cwd; wait until it serves."""
    rec = st.proc(comp)
    if not rec:
        die(f"{comp} was never started in cluster {st.name!r} (run testbed up)")
    if alive(rec):
        log(f"{comp} is running (pid {rec['pid']})")
        return
    if "env" not in rec:
        die(f"{comp} was started by an older testbed CLI (no recorded env): run testbed up")
    start_process(st, comp, rec["argv"], env=rec["env"], cwd=rec.get("cwd"))
    procs = [(st, comp)]
    if comp == "etcd":
        url = f"http://127.0.0.1:{st.data['ports']['etcd']}/health"
        wait_for("etcd /health", lambda: http_ok(url), 60, procs=procs)
    elif comp == "kube-apiserver":
        kube = _kube(st)
        wait_for("kube-apiserver /readyz", kube.ready, 120, interval=0.3, procs=procs)
    else:  # no health endpoint of its own here: it must survive its first second
        time.sleep(1.0)
        wait_for(f"{comp} running", lambda: alive(st.proc(comp)), 1, procs=procs)
    log(f"started {comp} again (pid {st.proc(comp)['pid']})")


# -- nodes ----------------------------------------------------------------------------------

def _kube(st: State):
    from gpusim.kube import Kube  # the kubernetes client only where the API is used

    return Kube(st.path("kubeconfig"), timeout=10, retries=3)


def _ready(node) -> str:
    return next((c["status"] for c in (node or {}).get("status", {}).get("conditions") or []
                 if c["type"] == "Ready"), "")


def node_action(st: State, action: str, name: str, group) -> None:
    from gpusim.kube import NODES

    kube = _kube(st)
    if action == "delete-node":
        kube.delete(NODES, name)
        wait_for(f"node {name} deleted", lambda: kube.get_or_none(NODES, name) is None, 30)
    elif action == "add-node":
        kube.create(NODES, new_node(st, name, group))
        wait_for(f"node {name} Ready", lambda: _ready(kube.get_or_none(NODES, name)) == "True", 60)
    else:
        want = "False" if action == "not-ready" else "True"
        kube.merge_patch(NODES, name, {"metadata": {"labels": {
            NOT_READY_LABEL: "true" if action == "not-ready" else None}}})
        wait_for(f"node {name} Ready={want}", lambda: _ready(kube.get(NODES, name)) == want, 60)
    log(f"{action} {name}: done")


def new_node(st: State, name: str, group) -> dict:
    """A Node shaped like the members of node group ``group`` of the cluster's effective config
    (gpusim gives it GPUs as it does to every node with the GPU annotations)."""
    import yaml

    from .config import group_spec, node_object

    with open(st.path("config.yaml")) as f:
        cfg = yaml.safe_load(f)
    groups = {g["name"]: g for g in cfg.get("node_groups") or []}
    if group not in groups:
        die(f"add-node: --group must be one of the config's node groups: {', '.join(groups)}")
    return node_object(name, group, group_spec(cfg, groups[group]), read_versions()["K8S_VERSION"])
