"""The DRA node side of the virtual cluster: the simulated NVIDIA DRA kubelet plugin (gpusim) publishes
ResourceSlices where the driver's kubelet-plugin DaemonSet runs, and the REAL kube-scheduler allocates
ResourceClaims from them and serves `nvidia.com/gpu` requests through the DeviceClass's extendedResourceName.

Cluster: tests/testbed/configs/dra.yaml (a100-0 with 8 A100s, t4-0 and t4-1 with one T4 each, cpu-0; no GPU
operator). The driver is the stand-in chart of dra_helpers.py, installed with helm and a node selector on
`nvidia.com/gpu.deploy.device-plugin=false`: the nodes where the device plugin is switched off are the DRA nodes.
"""

import os

import pytest

from conftest import REPO, wait_until
from dra_helpers import DRIVER, NAMESPACE, PLUGIN_LABEL, devices, helm_install, slices, wait_pools, write_chart

TESTBED_CONFIG = os.path.join(REPO, "tests", "testbed", "configs", "dra.yaml")
DRA_NODES = ["t4-0", "t4-1"]
DP_OFF = {"nvidia.com/gpu.deploy.device-plugin": "false"}
RES = ("resource.k8s.io", "v1")


def label(core, node, labels):
    core.patch_node(node, {"metadata": {"labels": labels}})


def allocatable(core, node, resource="nvidia.com/gpu"):
    return (core.read_node(node).status.allocatable or {}).get(resource)


@pytest.fixture(scope="module")
def driver(testbed, helm, core, custom, tmp_path_factory):
    """The stand-in driver chart installed for the nodes whose device plugin is switched off (t4-0, t4-1)."""
    wait_until("NFD's PCI label on the GPU nodes", lambda: all(
        (core.read_node(n).metadata.labels or {}).get("feature.node.kubernetes.io/pci-10de.present") == "true"
        for n in DRA_NODES + ["a100-0"]), 60)
    for node in DRA_NODES:
        label(core, node, DP_OFF)
    chart = write_chart(tmp_path_factory.mktemp("chart"))
    helm_install(helm, testbed.kubeconfig, chart, {"kubeletPlugin": {"nodeSelector": DP_OFF}})
    wait_pools(custom, DRA_NODES)
    return chart


def plugin_nodes(core):
    return sorted(p.spec.node_name for p in core.list_namespaced_pod(NAMESPACE, label_selector=PLUGIN_LABEL).items
                  if p.status.phase == "Running" and not p.metadata.deletion_timestamp)


def test_slices_only_where_the_kubelet_plugin_runs(driver, core, custom):
    assert plugin_nodes(core) == DRA_NODES
    pools = slices(custom)
    assert sorted(pools) == DRA_NODES              # not a100-0 (device plugin on), not cpu-0
    for node in DRA_NODES:
        (s,) = pools[node]
        assert s["spec"]["nodeName"] == node and s["spec"]["pool"]["resourceSliceCount"] == 1
        assert s["metadata"]["ownerReferences"][0]["kind"] == "Node"
        (dev,) = s["spec"]["devices"]
        assert dev["name"] == "gpu-0"
        attrs = dev["attributes"]
        assert attrs["type"] == {"string": "gpu"} and attrs["productName"] == {"string": "Tesla T4"}
        assert attrs["architecture"] == {"string": "Turing"}
        assert attrs["cudaComputeCapability"] == {"version": "7.5.0"}
        assert attrs["driverVersion"] == {"version": "580.95.5"}
        assert attrs["uuid"]["string"].startswith("GPU-")
        assert dev["capacity"]["memory"]["value"] in ("15Gi", str(15360 * 2 ** 20))
        assert allocatable(core, node) in ("0", None)   # the device plugin does not advertise here
    assert allocatable(core, "a100-0") == "8"
    gpu_class = custom.get_cluster_custom_object(*RES, "deviceclasses", "gpu.nvidia.com")
    assert gpu_class["spec"]["extendedResourceName"] == "nvidia.com/gpu"
    custom.get_cluster_custom_object(*RES, "deviceclasses", "mig.nvidia.com")


def claim_pod(name, template=None, claim=None, node_selector=None):
    source = {"resourceClaimTemplateName": template} if template else {"resourceClaimName": claim}
    spec = {"terminationGracePeriodSeconds": 0, "resourceClaims": [dict(name="gpu", **source)],
            "containers": [{"name": "cuda", "image": "cuda:12.4.0-base-ubi9", "resources": {"claims": [{"name": "gpu"}]}}]}
    if node_selector:
        spec["nodeSelector"] = node_selector
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def one_device(name, device_class):
    return {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": device_class}}]}}


def allocations(custom, namespace):
    """{claim name: [(pool, device)]} of the namespace's claims (empty list: not allocated)."""
    out = {}
    for c in custom.list_namespaced_custom_object(*RES, namespace, "resourceclaims")["items"]:
        results = (((c.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []
        out[c["metadata"]["name"]] = [(r["pool"], r["device"]) for r in results if r["driver"] == DRIVER]
    return out


def phases(core, namespace):
    return {p.metadata.name: (p.status.phase, p.spec.node_name) for p in core.list_namespaced_pod(namespace).items}


def test_n_plus_one_claims_on_n_devices(driver, core, custom, namespace):
    custom.create_namespaced_custom_object(*RES, namespace, "resourceclaimtemplates", {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "one-gpu"},
        "spec": {"spec": one_device("gpu", "gpu.nvidia.com")}})
    for i in range(3):
        core.create_namespaced_pod(namespace, claim_pod("fill-%d" % i, template="one-gpu"))

    def settled():
        got = phases(core, namespace)
        running = sorted(n for ph, n in got.values() if ph == "Running")
        return got if running == DRA_NODES and sum(ph == "Pending" for ph, _n in got.values()) == 1 else None
    wait_until(lambda: "2 pods Running on %s, 1 Pending (%s)" % (DRA_NODES, phases(core, namespace)), settled, 90)
    allocated = sorted(v[0] for v in allocations(custom, namespace).values() if v)
    assert allocated == [("t4-0", "gpu-0"), ("t4-1", "gpu-0")]
    (pending,) = [p for p in core.list_namespaced_pod(namespace).items if p.status.phase == "Pending"]
    cond = {c.type: c for c in pending.status.conditions or []}["PodScheduled"]
    assert cond.status == "False" and cond.reason == "Unschedulable", cond
    assert "claim" in cond.message, cond.message
    # a freed device goes to the pending pod
    running = sorted(n for n, (ph, _node) in phases(core, namespace).items() if ph == "Running")
    core.delete_namespaced_pod(running[0], namespace, grace_period_seconds=0)
    wait_until("the pending pod running on the freed device", lambda: phases(core, namespace).get(
        pending.metadata.name, ("", ""))[0] == "Running", 90)


def test_extended_resource_request_is_served_by_dra(driver, core, custom, namespace):
    pod = claim_pod("ext")
    spec = pod["spec"]
    del spec["resourceClaims"]
    spec["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "1"}}
    spec["nodeSelector"] = {"kubernetes.io/hostname": "t4-0"}
    core.create_namespaced_pod(namespace, pod)
    wait_until(lambda: "pod ext Running on t4-0 (%s)" % phases(core, namespace),
               lambda: phases(core, namespace)["ext"] == ("Running", "t4-0"), 90)
    assert [("t4-0", "gpu-0")] in allocations(custom, namespace).values()


def test_slices_go_with_the_plugin_pod(driver, core, custom):
    label(core, "t4-1", {"nvidia.com/gpu.deploy.device-plugin": None})
    try:
        wait_pools(custom, ["t4-0"])
        wait_until("the device plugin advertising on t4-1 again", lambda: allocatable(core, "t4-1") == "1", 60)
    finally:
        label(core, "t4-1", DP_OFF)
    wait_pools(custom, DRA_NODES)


def test_slice_follows_the_mig_layout(driver, core, custom, namespace):
    label(core, "a100-0", DP_OFF)
    wait_pools(custom, DRA_NODES + ["a100-0"])
    whole = devices(custom, "a100-0")
    assert sorted(whole) == ["gpu-%d" % i for i in range(8)]
    label(core, "a100-0", {"nvidia.com/mig.config": "all-1g.5gb"})
    wait_until("mig.config.state success on a100-0", lambda: (core.read_node("a100-0").metadata.labels or {}).get(
        "nvidia.com/mig.config.state") == "success", 90)
    want = sorted("gpu-%d-mig-1g5gb-19-%d" % (g, s) for g in range(8) for s in range(7))

    def all_migs():
        got = devices(custom, "a100-0")
        return got if sorted(got) == want else None
    migs = wait_until("56 MIG devices in a100-0's slice", all_migs, 60)
    dev = migs["gpu-0-mig-1g5gb-19-3"]
    assert dev["attributes"]["type"] == {"string": "mig"} and dev["attributes"]["profile"] == {"string": "1g.5gb"}
    assert dev["attributes"]["parentUUID"] == whole["gpu-0"]["attributes"]["uuid"]
    assert dev["capacity"]["multiprocessors"]["value"] == "14"
    custom.create_namespaced_custom_object(*RES, namespace, "resourceclaims", {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "mig"},
        "spec": one_device("gpu", "mig.nvidia.com")})
    core.create_namespaced_pod(namespace, claim_pod("mig", claim="mig"))
    wait_until(lambda: "pod mig Running on a100-0 (%s)" % phases(core, namespace),
               lambda: phases(core, namespace)["mig"] == ("Running", "a100-0"), 90)
    ((pool, device),) = allocations(custom, namespace)["mig"]
    assert pool == "a100-0" and device in want
