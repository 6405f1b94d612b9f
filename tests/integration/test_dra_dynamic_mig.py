"""Dynamic MIG through DRA on the virtual cluster: the simulated NVIDIA DRA kubelet plugin with the driver's
``DynamicMIG`` gate on (gpusim/dynmig.py) announces, per A100, the full GPU and every possible MIG placement as
partitionable devices consuming the counters of their GPU; the REAL kube-scheduler (DRAPartitionableDevices, on
by default in Kubernetes 1.36) allocates claims for MIG profiles and never two overlapping placements.

Cluster: tests/testbed/configs/dra.yaml; a100-0 (8 A100-SXM4-40GB) gets the gate by its node annotation
``gpusim.gpuops.dev/dra-dynamic-mig: "true"`` and the stand-in driver chart of dra_helpers.py. What this proves and
what not: docs/testbed.md ("Dynamic MIG").
"""

import os

from conftest import REPO, wait_until
from dra_helpers import DRIVER, helm_install, slices, write_chart

TESTBED_CONFIG = os.path.join(REPO, "tests", "testbed", "configs", "dra.yaml")
NODE = "a100-0"
RES = ("resource.k8s.io", "v1")
DP_OFF = {"nvidia.com/gpu.deploy.device-plugin": "false"}
ANN = "gpusim.gpuops.dev/dra-dynamic-mig"
PER_GPU = 26      # the full GPU + 25 placements of the A100-40GB's 7 GPU-instance profiles (NVIDIA's mock NVML)


def pool(custom):
    """(counter sets, {device name: device}) of a100-0 once its pool is complete (9 slices), else None."""
    got = slices(custom).get(NODE) or []
    if len(got) != 9 or any(s["spec"]["pool"]["resourceSliceCount"] != 9 for s in got):
        return None
    sets = [c for s in got for c in s["spec"].get("sharedCounters") or []]
    devs = {d["name"]: d for s in got for d in s["spec"].get("devices") or []}
    return (sets, devs) if len(sets) == 8 and len(devs) == 8 * PER_GPU else None


def test_real_scheduler_allocates_non_overlapping_mig_placements(testbed, helm, core, custom, namespace,
                                                                 tmp_path_factory):
    wait_until("NFD's PCI label on a100-0", lambda: (core.read_node(NODE).metadata.labels or {}).get(
        "feature.node.kubernetes.io/pci-10de.present") == "true", 60)
    core.patch_node(NODE, {"metadata": {"labels": DP_OFF, "annotations": {ANN: "true"}}})
    helm_install(helm, testbed.kubeconfig, write_chart(tmp_path_factory.mktemp("chart")),
                 {"kubeletPlugin": {"nodeSelector": DP_OFF}})
    sets, devs = wait_until("a100-0's pool: 1 counter slice + 8 device slices", lambda: pool(custom), 90)
    assert sorted(s["name"] for s in sets) == ["gpu-%d-counter-set" % g for g in range(8)]
    gpu0 = devs["gpu-0"]["attributes"]["uuid"]["string"]
    assert "gpu-0-mig-1g5gb-19-6" in devs and "uuid" not in devs["gpu-0-mig-1g5gb-19-6"]["attributes"]

    def claim(name, profile=None):
        """A claim for one device of GPU 0: a MIG profile (any placement), or the whole GPU."""
        if profile:
            cls, cel = "mig.nvidia.com", 'device.attributes["%s"].profile == "%s" && ' \
                'device.attributes["%s"].parentUUID == "%s"' % (DRIVER, profile, DRIVER, gpu0)
        else:
            cls, cel = "gpu.nvidia.com", 'device.attributes["%s"].uuid == "%s"' % (DRIVER, gpu0)
        custom.create_namespaced_custom_object(*RES, namespace, "resourceclaims", {
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                "deviceClassName": cls, "selectors": [{"cel": {"expression": cel}}]}}]}}})
        core.create_namespaced_pod(namespace, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {
            "terminationGracePeriodSeconds": 0, "resourceClaims": [{"name": "gpu", "resourceClaimName": name}],
            "containers": [{"name": "cuda", "image": "cuda:12.4.0-base-ubi9",
                            "resources": {"claims": [{"name": "gpu"}]}}]}})

    def allocated(name):
        c = custom.get_namespaced_custom_object(*RES, namespace, "resourceclaims", name)
        results = (((c.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []
        return [(r["pool"], r["device"]) for r in results]

    def unschedulable(name):
        conds = {c.type: c for c in core.read_namespaced_pod(name, namespace).status.conditions or []}
        cond = conds.get("PodScheduled")
        return cond is not None and cond.status == "False" and cond.reason == "Unschedulable"

    placed = {}
    for name, profile in (("four", "4g.20gb"), ("two", "2g.10gb"), ("one", "1g.5gb")):
        claim(name, profile)   # one after the other: the scheduler takes the first free placement in name order
        ((got_pool, placed[name]),) = wait_until("claim %s allocated" % name, lambda: allocated(name), 60)
        assert got_pool == NODE
    assert placed == {"four": "gpu-0-mig-4g20gb-5-0", "two": "gpu-0-mig-2g10gb-14-4", "one": "gpu-0-mig-1g5gb-19-6"}
    used = [k for n in placed.values() for k in devs[n]["consumesCounters"][0]["counters"] if k.startswith("memory-sl")]
    assert len(used) == len(set(used)) == 7          # memory slices 0-6, none twice
    # nothing free on GPU 0 for another 1g.5gb (every placement overlaps), nor for the whole GPU
    claim("more", "1g.5gb")
    claim("whole")
    wait_until("pods more and whole Unschedulable", lambda: unschedulable("more") and unschedulable("whole"), 60)
    assert allocated("more") == [] and allocated("whole") == []
    # a freed placement goes to the waiting claim
    core.delete_namespaced_pod("one", namespace, grace_period_seconds=0)
    wait_until("pod one gone", lambda: "one" not in [p.metadata.name for p in core.list_namespaced_pod(
        namespace).items], 60)
    custom.delete_namespaced_custom_object(*RES, namespace, "resourceclaims", "one")
    assert wait_until("claim more allocated", lambda: allocated("more"), 90) == [(NODE, "gpu-0-mig-1g5gb-19-6")]
    assert allocated("whole") == []
