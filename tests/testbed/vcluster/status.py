"""``testbed status``: the processes and a table (or JSON) of the nodes with their GPU
resources, what pods request, and the MIG/sharing labels."""
from __future__ import annotations

import json

from gpusim.contract import ANN_GPUS, ANN_PRODUCT
from gpusim.kube import NODES, PODS, Kube

from .common import COMPONENTS, GROUP_LABEL, die
from .processes import alive
from .state import State

RUNNING_PODS = "status.phase!=Succeeded,status.phase!=Failed"
TABLE = "{:<14} {:<6} {:<6} {:<24} {:>4} {:<28} {:<28} {:<14} {:<10}"


def cmd_status(args) -> int:
    st = State(args.name)
    if not st.data:
        die(f"no cluster {args.name!r} (state dir {st.dir})", 3)
    procs = {c: ("running" if alive(r) else "DEAD") + f" pid={r['pid']}"
             for c, r in (st.data.get("procs") or {}).items()}
    try:
        kube = Kube(st.path("kubeconfig"), timeout=60, retries=4)
        nodes = kube.list(NODES)[0]
        pods = kube.list(PODS, field_selector=RUNNING_PODS)[0]
    except Exception as e:  # noqa: BLE001
        if args.json:
            print(json.dumps({"name": st.name, "processes": procs, "error": str(e)}, indent=2))
        else:
            print(f"cluster {st.name}: API unreachable: {e}")
            for c, s in procs.items():
                print(f"  {c:24} {s}")
        return 2
    used = gpu_requests(pods)
    rows = [node_row(n, used) for n in sorted(nodes, key=lambda n: n["metadata"]["name"])]
    if args.json:
        print(json.dumps({"name": st.name, "kubeconfig": st.path("kubeconfig"), "processes": procs,
                          "nodes": rows}, indent=2))
    else:
        print_table(st, procs, rows)
    return 0


def gpu_requests(pods: list) -> dict:
    """{node: {nvidia.com/...: count}} requested by the pods bound to each node (requests, else
    limits)."""
    used: dict = {}
    for p in pods:
        node = p["spec"].get("nodeName")
        if not node:
            continue
        for c in p["spec"].get("containers", []):
            res = c.get("resources", {})
            for k, v in (res.get("requests") or res.get("limits") or {}).items():
                if k.startswith("nvidia.com/"):
                    used.setdefault(node, {}).setdefault(k, 0)
                    used[node][k] += int(v)
    return used


def node_row(n: dict, used: dict) -> dict:
    md = n["metadata"]
    lab = md.get("labels", {})
    ann = md.get("annotations", {})
    s = n.get("status", {})
    nvidia = lambda d: {k: v for k, v in d.items() if k.startswith("nvidia.com/")}  # noqa: E731
    return {
        "name": md["name"],
        "group": lab.get(GROUP_LABEL, ""),
        "ready": any(c["type"] == "Ready" and c["status"] == "True" for c in s.get("conditions", [])),
        "unschedulable": bool(n.get("spec", {}).get("unschedulable")),
        "product": lab.get("nvidia.com/gpu.product") or ann.get(ANN_PRODUCT, ""),
        "gpus": ann.get(ANN_GPUS, "0"),
        "capacity": nvidia(s.get("capacity", {})),
        "allocatable": nvidia(s.get("allocatable", {})),
        "requested": used.get(md["name"], {}),
        "mig_strategy": lab.get("nvidia.com/mig.strategy", ""),
        "mig_config": lab.get("nvidia.com/mig.config", ""),
        "mig_state": lab.get("nvidia.com/mig.config.state", ""),
        "sharing": lab.get("nvidia.com/device-plugin.config", ""),
    }


def print_table(st: State, procs: dict, rows: list) -> None:
    print(f"cluster {st.name}  kubeconfig {st.path('kubeconfig')}")
    for c in COMPONENTS:
        if c in procs:
            print(f"  {c:24} {procs[c]}")
    print()
    print(TABLE.format("NODE", "GROUP", "READY", "PRODUCT", "GPUS", "ALLOCATABLE", "REQUESTED",
                       "MIG.CONFIG", "MIG.STATE"))
    kv = lambda d: ",".join(f"{k.split('/', 1)[1]}={v}" for k, v in sorted(d.items())) or "-"  # noqa: E731
    for r in rows:
        ready = ("Ready" if r["ready"] else "NotRdy") + ("/C" if r["unschedulable"] else "")
        print(TABLE.format(r["name"], r["group"][:6], ready, r["product"][:24], r["gpus"],
                           kv(r["allocatable"])[:28], kv(r["requested"])[:28], r["mig_config"][:14] or "-",
                           r["mig_state"][:10] or "-"))
