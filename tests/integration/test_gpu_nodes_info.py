"""gpuops.gpu.gpu_nodes_info and the gpu_fleet_table filter on the virtual GPU cluster, run through
ansible-playbook the way users and AWX run them; playbooks/report.yml end to end.

GPU pods are created in a fresh namespace on one GPU node that has no other GPU pod; the module's
requested counts must match what the scheduler accounted for (init containers by their peak).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from ansible_run import run_play
from conftest import REPO, wait_until

GPU = "nvidia.com/gpu"
GROUP_LABEL = "gpuops.dev/node-group"
MODULE = "gpuops.gpu.gpu_nodes_info"


def gpu_groups(testbed):
    return [g for g in testbed.config["node_groups"]
            if int(g.get("gpus_per_node", 0) or 0) > 0 and int(g.get("count", 0)) > 0]


def cpu_groups(testbed):
    return [g for g in testbed.config["node_groups"]
            if not int(g.get("gpus_per_node", 0) or 0) and int(g.get("count", 0)) > 0]


def expected_gpu_nodes(testbed, core):
    groups = {g["name"] for g in gpu_groups(testbed)}
    return sorted(n.metadata.name for n in core.list_node(label_selector="gpuops.dev/testbed=true").items
                  if (n.metadata.labels or {}).get(GROUP_LABEL) in groups)


def info(kubeconfig, tasks, **kwargs):
    rc, results, raw = run_play(kubeconfig, tasks, **kwargs)
    assert rc == 0, raw[-4000:]
    missing = [t["name"] for t in tasks if t["name"] not in results]
    assert not missing, f"no result for {missing}: {raw[-4000:]}"
    return results


def node_of(result, name):
    found = [n for n in result["nodes"] if n["name"] == name]
    assert len(found) == 1, f"{name} not in {[n['name'] for n in result['nodes']]}"
    return found[0]


def pinned_pod(name, node, containers, init=None):
    spec = {
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}}},
        "tolerations": [{"operator": "Exists"}],
        "containers": containers,
    }
    if init:
        spec["initContainers"] = init
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def container(name, limits=None, requests=None):
    resources = {}
    if limits:
        resources["limits"] = limits
    if requests:
        resources["requests"] = requests
    return {"name": name, "image": "nvidia/cuda:12.4.1-base-ubi9", "command": ["sleep", "3600"],
            "resources": resources}


@pytest.fixture(scope="module")
def gpu_nodes_ready(testbed, core):
    """Every GPU node of the testbed shows GPUs (labels or capacity from gpusim)."""
    names = expected_gpu_nodes(testbed, core)
    assert names, "the testbed config has no GPU node group"

    def detected():
        nodes = {n.metadata.name: n for n in core.list_node(label_selector="gpuops.dev/testbed=true").items}
        ok = [name for name in names
              if int((nodes[name].status.allocatable or {}).get(GPU, "0")) > 0
              or (nodes[name].metadata.labels or {}).get("nvidia.com/gpu.present") == "true"]
        return len(ok) == len(names)

    if not testbed.gpusim_expected():
        for name in names:  # no simulated device plugin: publish capacity the way it would
            gpus = str(next(int(g["gpus_per_node"]) for g in gpu_groups(testbed)
                            if g["name"] == core.read_node(name).metadata.labels[GROUP_LABEL]))
            core.patch_node_status(name, {"status": {"capacity": {GPU: gpus}, "allocatable": {GPU: gpus}}})
    wait_until("every GPU node to show GPUs", detected, timeout=120)
    return names


def test_inventory_matches_the_cluster(testbed, core, gpu_nodes_ready):
    tasks = [
        {"name": "all", MODULE: {}, "register": "r_all"},
        {"name": "checked", MODULE: {}, "check_mode": True},
        {"name": "everything", MODULE: {"only_gpu_nodes": False}},
        {"name": "no_pods", MODULE: {"include_pods": False}},
        {"name": "table", "ansible.builtin.set_fact": {"table": "{{ r_all | gpuops.gpu.gpu_fleet_table }}"}},
    ]
    res = info(testbed.kubeconfig, tasks)
    result = res["all"]
    assert result["changed"] is False
    assert [n["name"] for n in result["nodes"]] == gpu_nodes_ready
    assert result["api_requests"] == 4, ("one node list + one pod list, whatever the node count, and the "
                                         "ResourceSlice and ResourceClaim lists (resource.k8s.io/v1 is served)")
    assert result["dra"]["served"] is True
    assert (result["not_found"], result["not_gpu"]) == ([], [])

    # every value against the Node objects themselves (one list, like the module)
    api_nodes = {n.metadata.name: n for n in core.list_node().items}
    for node in result["nodes"]:
        api = api_nodes[node["name"]]
        labels = api.metadata.labels or {}
        alloc = {k: int(v) for k, v in (api.status.allocatable or {}).items()
                 if k.startswith(("nvidia.com/gpu", "nvidia.com/mig-"))}
        assert node["allocatable"] == alloc, node["name"]
        assert node["product_label"] == labels.get("nvidia.com/gpu.product"), node["name"]
        assert node["mig_config"] == labels.get("nvidia.com/mig.config"), node["name"]
        assert node["mig_state"] == labels.get("nvidia.com/mig.config.state"), node["name"]
        assert node["unschedulable"] is bool(api.spec.unschedulable), node["name"]
        assert node["gpu_node"] is True
        assert all(node["free"][k] == alloc[k] - node["requested"].get(k, 0) for k in alloc)
    assert result["summary"]["nodes"] == result["summary"]["gpu_nodes"] == len(gpu_nodes_ready)
    total = {}
    for node in result["nodes"]:
        for k, v in node["allocatable"].items():
            total[k] = total.get(k, 0) + v
    assert result["summary"]["allocatable"] == total

    # check mode: the same read, nothing changed
    assert res["checked"]["changed"] is False
    assert [n["name"] for n in res["checked"]["nodes"]] == gpu_nodes_ready

    # only_gpu_nodes=false adds the CPU nodes, marked as such
    everything = {n["name"]: n for n in res["everything"]["nodes"]}
    cpu_nodes = sorted(set(everything) - set(gpu_nodes_ready))
    if cpu_groups(testbed):
        assert cpu_nodes, "the CPU node group is missing from only_gpu_nodes=false"
    assert all(everything[n]["gpu_node"] is False and everything[n]["allocatable"] == {} for n in cpu_nodes)
    assert res["everything"]["summary"]["gpu_nodes"] == len(gpu_nodes_ready)

    # include_pods=false: no pod list, pod-derived values unknown (null), not zero
    assert res["no_pods"]["api_requests"] == 3
    assert all(n["requested"] is None and n["gpu_pods"] is None for n in res["no_pods"]["nodes"])
    assert res["no_pods"]["summary"]["requested"] is None

    # the filter renders one row per node
    table = res["table"]["ansible_facts"]["table"].split("\n")
    assert table[0].split()[:3] == ["NODE", "PRODUCT", "GPUS"]
    assert [line.split()[0] for line in table[1:1 + len(gpu_nodes_ready)]] == gpu_nodes_ready


def test_requested_gpus_follow_the_pods(testbed, core, namespace, gpu_nodes_ready):
    before = info(testbed.kubeconfig, [{"name": "before", MODULE: {}}])["before"]
    # a schedulable GPU node with no GPU pod and at least 3 full GPUs; prefer one MIG rollouts
    # leave alone (not MIG-capable)
    candidates = [n for n in before["nodes"] if not n["unschedulable"] and n["ready"]
                  and not n["requested"] and n["allocatable"].get(GPU, 0) >= 3]
    assert candidates, f"no idle GPU node with 3 GPUs: {before['nodes']}"
    node = sorted(candidates, key=lambda n: (n["mig_capable"], -n["allocatable"][GPU], n["name"]))[0]
    name = node["name"]
    alloc = node["allocatable"][GPU]

    pods = [
        # limits only: the request defaults to the limit → 1
        pinned_pod("limits-only", name, [container("cuda", limits={GPU: "1"})]),
        # init container peak 2 beats the app container's 1 → 2 (not 3)
        pinned_pod("with-init", name, [container("cuda", limits={GPU: "1"}, requests={GPU: "1"})],
                   init=[container("warmup", limits={GPU: "2"})]),
        # no GPU: not a GPU pod, requests nothing
        pinned_pod("cpu-only", name, [container("web", requests={"cpu": "100m"})]),
    ]
    for pod in pods:
        core.create_namespaced_pod(namespace, pod)
    # more GPUs than the node has: stays Pending and unbound, counted nowhere
    core.create_namespaced_pod(namespace, pinned_pod("too-big", name, [container("cuda", limits={GPU: "999"})]))

    def bound():
        items = core.list_namespaced_pod(namespace).items
        return all(p.spec.node_name == name for p in items if p.metadata.name != "too-big") and len(items) == 4

    wait_until(f"the pods to be bound to {name}", bound, timeout=60)

    res = info(testbed.kubeconfig, [
        {"name": "after", MODULE: {}},
        {"name": "one", MODULE: {"names": [name, "no-such-node"]}},
        {"name": "single", MODULE: {"names": [name]}},
    ])
    after = node_of(res["after"], name)
    assert after["requested"] == {GPU: 3}
    assert after["free"][GPU] == alloc - 3
    assert after["gpu_pods"] == [f"{namespace}/limits-only", f"{namespace}/with-init"]
    assert res["after"]["summary"]["requested"].get(GPU, 0) == before["summary"]["requested"].get(GPU, 0) + 3
    assert res["after"]["summary"]["gpu_pods"] == before["summary"]["gpu_pods"] + 2
    assert not any(f"{namespace}/too-big" in (n["gpu_pods"] or []) for n in res["after"]["nodes"])
    # the other nodes did not change
    others_before = {n["name"]: n["requested"] for n in before["nodes"] if n["name"] != name}
    others_after = {n["name"]: n["requested"] for n in res["after"]["nodes"] if n["name"] != name}
    assert others_after == others_before

    # names: the node plus a missing one (warning, not_found); one node → still two requests (and the two DRA lists)
    assert [n["name"] for n in res["one"]["nodes"]] == [name]
    assert res["one"]["not_found"] == ["no-such-node"]
    assert node_of(res["one"], name)["requested"] == {GPU: 3}
    assert res["single"]["api_requests"] == 4
    assert node_of(res["single"], name)["gpu_pods"] == after["gpu_pods"]

    # label_selector goes to the API server: only that node group
    group = core.read_node(name).metadata.labels[GROUP_LABEL]
    grouped = info(testbed.kubeconfig, [{"name": "group", MODULE: {"label_selector": f"{GROUP_LABEL}={group}"}}])
    group_nodes = sorted(n.metadata.name for n in core.list_node(label_selector=f"{GROUP_LABEL}={group}").items)
    assert [n["name"] for n in grouped["group"]["nodes"]] == group_nodes

    # deleting a pod gives its GPUs back
    core.delete_namespaced_pod("with-init", namespace, grace_period_seconds=0)
    wait_until("with-init to be gone",
               lambda: "with-init" not in [p.metadata.name for p in core.list_namespaced_pod(namespace).items],
               timeout=60)
    gone = info(testbed.kubeconfig, [{"name": "gone", MODULE: {"names": [name]}}])["gone"]
    assert node_of(gone, name)["requested"] == {GPU: 1}
    assert node_of(gone, name)["gpu_pods"] == [f"{namespace}/limits-only"]


def test_report_playbook(testbed, gpu_nodes_ready):
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_LOCALHOST_WARNING="false",
               ANSIBLE_INVENTORY_UNPARSED_WARNING="false", ANSIBLE_PYTHON_INTERPRETER=sys.executable)
    env.pop("K8S_AUTH_KUBECONFIG", None)  # the playbook's own variable must carry the connection
    env["KUBECONFIG"] = os.devnull
    proc = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
         os.path.join(REPO, "playbooks", "report.yml"),
         "-e", json.dumps({"gpuops_kubeconfig": testbed.kubeconfig, "gpuops_report_title": "integration fleet"})],
        env=env, capture_output=True, text=True, timeout=300, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert '"integration fleet"' in out
    rows = [line.strip().strip('",') for line in out.splitlines() if line.strip().startswith('"')]
    header = next(i for i, r in enumerate(rows) if r.startswith("NODE "))
    assert [r.split()[0] for r in rows[header + 1:header + 1 + len(gpu_nodes_ready)]] == gpu_nodes_ready
    assert any(r.startswith(f"{len(gpu_nodes_ready)} nodes; products: ") for r in rows)
    assert "changed=0" in out and "failed=0" in out
