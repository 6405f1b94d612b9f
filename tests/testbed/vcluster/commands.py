"""``testbed down``, ``kubeconfig``, ``env``, ``logs`` and ``build`` (no API calls)."""
from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import subprocess
import sys

from .common import COMPONENTS, HERE, RUN_ROOT, die, log
from .processes import alive, stop_process, tail
from .state import State


def cmd_down(args) -> int:
    st = State(args.name)
    if not os.path.isdir(st.dir):
        log(f"no cluster {args.name!r}")
        return 0
    with st.lock():
        down(st, args.keep_state)
    return 0


def down(st: State, keep_state: bool) -> None:
    """Stop every component (reverse start order); remove /host-etc when this cluster made it
    and no other cluster's gpu-operator uses it; remove the state dir unless ``keep_state``."""
    for comp in reversed(COMPONENTS):
        stop_process(st, comp)
    if st.data.get("created_host_etc"):
        others = any(
            alive(State(n).proc("gpu-operator"))
            for n in os.listdir(RUN_ROOT) if n != st.name and os.path.isdir(os.path.join(RUN_ROOT, n))
        )
        if not others:
            with contextlib.suppress(OSError):
                os.rmdir("/host-etc")
    if keep_state:
        log(f"stopped; state kept in {st.dir}")
    else:
        shutil.rmtree(st.dir, ignore_errors=True)
        log(f"cluster {st.name!r} removed")


def cmd_kubeconfig(args) -> int:
    st = State(args.name)
    path = st.path("kubeconfig")
    if not os.path.exists(path):
        die(f"no cluster {args.name!r} (run: testbed up --name {args.name})", 3)
    print(path)
    return 0


def cmd_env(args) -> int:
    st = State(args.name)
    if not os.path.exists(st.path("kubeconfig")):
        die(f"no cluster {args.name!r}", 3)
    print(f"export KUBECONFIG={shlex.quote(st.path('kubeconfig'))}")
    print(f"export GPUOPS_TESTBED_NAME={shlex.quote(st.name)}")
    print(f"export GPUOPS_TESTBED_STATE={shlex.quote(st.dir)}")
    return 0


def cmd_logs(args) -> int:
    st = State(args.name)
    rec = st.proc(args.component)
    path = rec["log"] if rec else st.path("logs", f"{args.component}.log")
    if not os.path.exists(path):
        die(f"no log for {args.component} in {st.dir}")
    sys.stdout.write(tail(path, args.lines))
    return 0


def cmd_build(args) -> int:
    return subprocess.call([os.path.join(HERE, "build.sh")] + (["--force"] if args.force else []))
