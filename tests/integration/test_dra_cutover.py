"""gpuops.gpu.dra_cutover and the dra role's cutover part on the virtual GPU cluster: a node group moves from the
(simulated) NVIDIA device plugin to NVIDIA's DRA driver and back. The driver is the stand-in chart of
dra_helpers.py installed with kubeletPlugin.nodeSelector gpuops.gpu/dra-kubelet-plugin=true, so its kubelet plugin,
and so the simulated ResourceSlices, land only on the nodes the cutover labels; the simulated device plugin stops
advertising nvidia.com/gpu where nvidia.com/gpu.deploy.device-plugin is "false".

Cluster: tests/testbed/configs/dra.yaml (a100-0 with 8 A100s, t4-0 and t4-1 with one T4 each, cpu-0). The node group
is the T4 nodes; a100-0 is never touched. The tests run in order on one cluster.
"""

import os

import pytest

from ansible_run import run_play, run_role
from conftest import REPO, create_namespace, gpu_pod, wait_until
from dra_helpers import NAMESPACE, helm_install, slices, write_chart

TESTBED_CONFIG = os.path.join(REPO, "tests", "testbed", "configs", "dra.yaml")
GROUP = "nvidia.com/gpu.product=Tesla-T4"
T4 = ["t4-0", "t4-1"]
DP_LABEL = "nvidia.com/gpu.deploy.device-plugin"
DRA_LABEL = "gpuops.gpu/dra-kubelet-plugin"
WORKLOADS = "dra-cutover-it"


def cutover(kubeconfig, stack, check=False, selector=GROUP, nodes=None, state_timeout=60):
    """(rc, result, raw output) of one gpuops.gpu.dra_cutover task."""
    item = {"stack": stack}
    if nodes:
        item["nodes"] = nodes
    else:
        item["label_selector"] = selector
    task = {"name": "cutover", "gpuops.gpu.dra_cutover": {
        "assignments": [item], "lock_namespace": NAMESPACE, "poll_interval": 0.5, "state_timeout": state_timeout,
        "verify_timeout": 30}}
    rc, results, raw = run_play(kubeconfig, [task], check=check)
    return rc, results.get("cutover", {}), raw


def node_view(core, name):
    node = core.read_node(name)
    return {"labels": node.metadata.labels or {}, "annotations": node.metadata.annotations or {},
            "unschedulable": bool(node.spec.unschedulable),
            "gpu": (node.status.allocatable or {}).get("nvidia.com/gpu")}


VALUES = {"kubeletPlugin": {"nodeSelector": {DRA_LABEL: "true"}}}


@pytest.fixture(scope="module")
def driver(testbed, helm, core, custom, tmp_path_factory):
    """The stand-in driver chart, its kubelet plugin only on nodes labelled gpuops.gpu/dra-kubelet-plugin=true
    (none yet), and a one-GPU workload on t4-0."""
    wait_until("the T4 nodes advertise their GPU", lambda: all(node_view(core, n)["gpu"] == "1" for n in T4), 60)
    chart = write_chart(tmp_path_factory.mktemp("chart"))
    helm_install(helm, testbed.kubeconfig, chart, VALUES)
    create_namespace(core, WORKLOADS)
    core.create_namespaced_pod(WORKLOADS, gpu_pod("infer", "t4-0"))
    wait_until("the workload Running", lambda: core.read_namespaced_pod("infer", WORKLOADS).status.phase == "Running",
               60)
    assert slices(custom) == {}
    return chart


def test_check_mode_plans_the_group_and_its_workloads_and_writes_nothing(driver, testbed, core, custom):
    before = dict((n, node_view(core, n)) for n in T4)
    rc, res, raw = cutover(testbed.kubeconfig, "dra", check=True)
    assert rc == 0, raw
    assert res["changed"] is True
    planned = sorted(e["node"] for b in res["plan"] for e in b["nodes"])
    assert planned == T4
    entry = next(e for b in res["plan"] for e in b["nodes"] if e["node"] == "t4-0")
    assert entry["stack_from"] == "device-plugin" and entry["to"] == "dra"
    assert entry["pods_to_evict"] == ["%s/infer" % WORKLOADS] and entry["expected_devices"] == 1
    (group,) = res["groups"]
    assert group["group"] == GROUP and group["stack"] == "dra" and group["nodes"] == T4
    (workload,) = group["workloads"]
    # the stand-in chart's DeviceClass gpu.nvidia.com serves nvidia.com/gpu (extendedResourceName)
    assert workload == {"pod": "%s/infer" % WORKLOADS, "node": "t4-0", "resources": {"nvidia.com/gpu": 1},
                        "schedulable": True, "device_classes": ["gpu.nvidia.com"]}
    assert dict((n, node_view(core, n)) for n in T4) == before
    assert slices(custom) == {}


def test_input_errors_write_nothing(driver, testbed, core):
    rc, res, _raw = cutover(testbed.kubeconfig, "cdi")
    assert rc != 0 and "'cdi' is not a GPU stack" in res["msg"]
    rc, res, _raw = cutover(testbed.kubeconfig, "dra", nodes=["cpu-0"])
    assert rc != 0 and "cpu-0" in res["msg"] and "without NVIDIA GPUs" in res["msg"]
    assert all(DP_LABEL not in node_view(core, n)["labels"] for n in T4 + ["cpu-0"])


def test_a_node_the_driver_never_serves_is_held_cordoned_with_the_reason(driver, testbed, helm, core, custom):
    """The driver's kubelet plugin kept off the node (another node selector): the node's slice never comes, so it is
    held cordoned with the reason; the cutover of the group below resumes it."""
    helm_install(helm, testbed.kubeconfig, driver,
                 {"kubeletPlugin": {"nodeSelector": {DRA_LABEL: "true", "gpuops-it/no-such-label": "true"}}})
    try:
        rc, res, raw = cutover(testbed.kubeconfig, "dra", nodes=["t4-1"], state_timeout=5)
        assert rc != 0, raw
        (node,) = res["nodes"]
        assert node["phase"] == "failed" and "lists 0 of 1 device(s)" in node["reason"]
        view = node_view(core, "t4-1")
        assert view["unschedulable"] and view["annotations"]["gpuops.gpu/rollout-phase"] == "failed"
        assert "lists 0 of 1 device(s)" in view["annotations"]["gpuops.gpu/rollout-reason"]
        assert slices(custom) == {}
    finally:
        helm_install(helm, testbed.kubeconfig, driver, VALUES)


def test_cutover_to_dra(driver, testbed, core, custom):
    rc, res, raw = cutover(testbed.kubeconfig, "dra")
    assert rc == 0, raw
    assert res["changed"] is True
    assert sorted(n["node"] for n in res["nodes"] if n["phase"] == "done") == T4   # t4-1 resumed
    assert sorted(slices(custom)) == T4                      # the slices are listed when the module returns
    for name in T4:
        view = node_view(core, name)
        assert view["labels"][DP_LABEL] == "false" and view["labels"][DRA_LABEL] == "true"
        assert view["gpu"] in ("0", None) and not view["unschedulable"]
        assert not [k for k in view["annotations"] if k.startswith("gpuops.gpu/rollout")]
    assert node_view(core, "a100-0")["gpu"] == "8"            # not in the group
    assert "infer" not in [p.metadata.name for p in core.list_namespaced_pod(WORKLOADS).items]  # drained

    rc, res, raw = cutover(testbed.kubeconfig, "dra")
    assert rc == 0, raw
    assert res["changed"] is False and res["batches"] == []


def test_back_to_the_device_plugin_through_the_role(driver, testbed, core, custom):
    variables = {"dra_parts": ["cutover"], "dra_cutover_stack": "device-plugin", "dra_cutover_node_selector": GROUP,
                 "dra_cutover_operator_namespace": NAMESPACE, "dra_cutover_max_unavailable": 2}
    rc, results, raw = run_role(testbed.kubeconfig, "dra", variables, check=True)
    assert rc == 0, raw
    assert all(node_view(core, n)["labels"][DRA_LABEL] == "true" for n in T4)  # check mode wrote nothing
    rc, results, raw = run_role(testbed.kubeconfig, "dra", variables)
    assert rc == 0, raw
    assert slices(custom) == {}
    for name in T4:
        view = node_view(core, name)
        assert view["labels"][DP_LABEL] == "true" and DRA_LABEL not in view["labels"]
        assert view["gpu"] == "1" and not view["unschedulable"]


def test_mig_on_a_dra_node_is_verified_through_its_resource_slice(driver, testbed, core, custom):
    """a100-0 moves to DRA; then a MIG rollout there is done when the driver's slice lists the layout's devices
    (the MIG manager applies it as on any node; no extended resource is advertised), and back to all-disabled."""
    rc, res, raw = cutover(testbed.kubeconfig, "dra", nodes=["a100-0"])
    assert rc == 0, raw
    assert len(slices(custom)["a100-0"][0]["spec"]["devices"]) == 8

    def mig(config):
        task = {"name": "mig", "gpuops.gpu.mig_rollout": {
            "assignments": [{"nodes": ["a100-0"], "config": config}], "operator_namespace": NAMESPACE,
            "mig_strategy": "mixed", "poll_interval": 0.3, "state_timeout": 60, "verify_timeout": 30}}
        rc, results, raw = run_play(testbed.kubeconfig, [task])
        assert rc == 0, raw[-4000:]
        return results["mig"]
    res = mig("all-1g.5gb")
    (entry,) = res["nodes"]
    assert entry["phase"] == "done" and entry["allocatable"] == {}, entry
    profiles = sorted(set(d["attributes"]["profile"]["string"] for d in slices(custom)["a100-0"][0]["spec"]["devices"]))
    assert profiles == ["1g.5gb"] and len(slices(custom)["a100-0"][0]["spec"]["devices"]) == 56
    assert node_view(core, "a100-0")["gpu"] in ("0", None) and not node_view(core, "a100-0")["unschedulable"]
    res = mig("all-disabled")
    assert res["nodes"][0]["phase"] == "done"
    assert len(slices(custom)["a100-0"][0]["spec"]["devices"]) == 8


def test_mig_from_demand_reads_the_claims_of_pending_pods(driver, testbed, core, custom, namespace):
    """a100-0 on DRA, MIG off: a Pending pod claims two 1g.5gb devices through a ResourceClaimTemplate with a profile
    selector (the claim the resource claim controller makes); another asks first for one 2g.10gb, else two 1g.5gb
    (a prioritized list). The mig role's demand path (tasks/demand.yml, in check mode; the test bed has no
    ClusterPolicy, so the play builds the mig-parted document as preflight.yml does) reads the claims as demand (the
    list by its first choice) and plans a config with 1g.5gb and 2g.10gb devices for a100-0."""
    rc, res, raw = cutover(testbed.kubeconfig, "dra", nodes=["a100-0"])
    assert rc == 0, raw

    def exactly(profile, count):
        cel = "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].profile == '%s'" % profile
        return {"deviceClassName": "mig.nvidia.com", "count": count, "selectors": [{"cel": {"expression": cel}}]}
    for template, request in (("small", {"name": "gpu", "exactly": exactly("1g.5gb", 2)}),
                              ("prefer", {"name": "gpu", "firstAvailable": [
                                  dict(exactly("2g.10gb", 1), name="one"), dict(exactly("1g.5gb", 2), name="two")]})):
        custom.create_namespaced_custom_object("resource.k8s.io", "v1", namespace, "resourceclaimtemplates", {
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": template},
            "spec": {"spec": {"devices": {"requests": [request]}}}})
    for pod, template in (("train", "small"), ("tune", "prefer")):
        core.create_namespaced_pod(namespace, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": pod}, "spec": {
            "terminationGracePeriodSeconds": 0, "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": template}],
            "containers": [{"name": "cuda", "image": "cuda:12.4.0-base-ubi9", "resources": {"claims": [{"name": "gpu"}]}}]}})

    def claim_names():
        items = custom.list_namespaced_custom_object("resource.k8s.io", "v1", namespace, "resourceclaims")["items"]
        names = sorted(c["metadata"]["name"] for c in items if not (c.get("status") or {}).get("allocation"))
        return names if len(names) == 2 else None
    claims = wait_until("the claims made from the templates", claim_names, 60)
    assert [core.read_namespaced_pod(p, namespace).status.phase for p in ("train", "tune")] == ["Pending"] * 2

    product = "nvidia.com/gpu.product=NVIDIA-A100-SXM4-40GB"
    tasks = [
        {"name": "nodes", "kubernetes.core.k8s_info": {"kind": "Node", "label_selectors": [product]}, "register": "n"},
        {"name": "document", "ansible.builtin.set_fact": {"__mig_document": (
            "{{ {} | gpuops.gpu.mig_parted_document(n.resources | map(attribute='metadata.labels')"
            " | map('gpuops.gpu.gpu_base_product') | unique | sort, include_builtin=true) }}")}},
        {"name": "demand", "ansible.builtin.include_role": {"name": "gpuops.gpu.mig", "tasks_from": "demand"},
         "vars": {"mig_demand_from_pending": True, "mig_strategy": "mixed", "mig_demand_label_selector": product}}]
    rc, results, raw = run_play(testbed.kubeconfig, tasks, check=True)
    assert rc == 0, raw[-4000:]
    shown = results["demand | Show the demand"]["msg"]
    assert shown["pending claims"] == ["%s/%s" % (namespace, c) for c in claims], shown
    assert shown["demand"].get("nvidia.com/mig-1g.5gb") == 2 and shown["demand"].get("nvidia.com/mig-2g.10gb") == 1, shown
    table = results["demand | Show the plan (node, from -> to, capacity delta, pods affected)"]["msg"]
    assert any(line.startswith("a100-0 ") for line in table), table
    assert any(line.startswith("mig-1g.5gb: demand 2, before 0, after ") for line in table), table
    assert any(line.startswith("mig-2g.10gb: demand 1, before 0, after ") for line in table), table
