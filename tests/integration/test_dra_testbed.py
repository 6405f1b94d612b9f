"""The DRA node side of the virtual cluster: the simulated NVIDIA DRA kubelet plugin (gpusim) publishes
ResourceSlices where the driver's kubelet-plugin DaemonSet runs, and the REAL kube-scheduler allocates
ResourceClaims from them and serves `nvidia.com/gpu` requests through the DeviceClass's extendedResourceName.
Then the smoke test role validates it with claims (smoke_test_mode: dra): one workload per DeviceClass and
ResourceClaimTemplate (written by the dra role) and per extendedResourceName, the fill test per class (N + 1 claims
on N free devices: exactly N allocated by the scheduler, one Pending with its reason), everything cleaned up.

Cluster: tests/testbed/configs/dra.yaml (a100-0 with 8 A100s, t4-0 and t4-1 with one T4 each, cpu-0; no GPU
operator). The driver is the stand-in chart of dra_helpers.py, installed with helm and a node selector on
`nvidia.com/gpu.deploy.device-plugin=false`: the nodes where the device plugin is switched off are the DRA nodes.
"""

import os
import ssl
import urllib.request

import pytest

from ansible_run import changed_tasks, run_role
from conftest import REPO, create_namespace, wait_until
from role_cases import assert_failed, failures
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


# --- the smoke test through DRA (after the MIG test: a100-0 is a DRA node with 56 MIG 1g.5gb devices, t4-0 and t4-1
# DRA nodes with one whole T4 each) ---------------------------------------------------------------------------------

SMOKE_NS = "gpuops-smoke-test"
TEAM = {"gpuops-it/smoke-team": "ml"}
T4_CLASS, MIG_CLASS, ODD_CLASS = "t4.smoke-it.example.com", "mig-1g.smoke-it.example.com", "odd.smoke-it.example.com"
T4_RESOURCE = "smoke-it.example.com/t4"
DRA_RESOURCES = {
    "dra_device_classes": [
        {"name": T4_CLASS, "type": "gpu", "product_name": "Tesla T4", "architecture": "Turing",
         "extended_resource_name": T4_RESOURCE},
        {"name": MIG_CLASS, "mig_profile": "1g.5gb", "driver_version_min": "550.0"}],
    "dra_claim_templates": [
        {"name": "one-t4", "namespace_selector": "gpuops-it/smoke-team=ml", "device_class": T4_CLASS},
        {"name": "two-migs", "namespace": "dra-smoke-a", "device_class": MIG_CLASS, "count": 2}],
}
FAST = {"smoke_test_mode": "dra", "smoke_test_poll_interval": 0.5, "smoke_test_timeout": 120,
        "smoke_test_stuck_timeout": 20}
RUN_TASK = "Run a workload on every GPU resource"
VECTORADD_END = ["Test PASSED", "Done"]
DEVICES = {"gpu.nvidia.com": ["t4-0", "t4-1"], T4_CLASS: ["t4-0", "t4-1"], "mig.nvidia.com": ["a100-0"],
           MIG_CLASS: ["a100-0"]}
FREE = {"gpu.nvidia.com": 2, T4_CLASS: 2, "mig.nvidia.com": 56, MIG_CLASS: 56}


def feature_enabled(testbed, component, feature):
    """Whether ``component`` (its port in the testbed's state) runs with ``feature`` on: its /metrics say so."""
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    port = testbed.state()["ports"][component]
    with urllib.request.urlopen("https://127.0.0.1:%d/metrics" % port, context=context, timeout=10) as answer:
        text = answer.read().decode()
    return any(line.startswith('kubernetes_feature_enabled{name="%s"' % feature) and line.endswith(" 1")
               for line in text.splitlines())


def smoke_left(core, batch, custom):
    """What a smoke test run could leave: its Jobs, pods, claims and claim templates anywhere, and every claim of the
    cluster (the devices it held are free again once none is left)."""
    selector = "app.kubernetes.io/name=gpuops-smoke-test"
    return {"jobs": [j.metadata.name for j in batch.list_job_for_all_namespaces(label_selector=selector).items],
            "pods": [p.metadata.name for p in core.list_pod_for_all_namespaces(label_selector=selector).items],
            "templates": [t["metadata"]["name"] for t in custom.list_cluster_custom_object(
                *RES, "resourceclaimtemplates", label_selector=selector)["items"]],
            "claims": [c["metadata"]["name"] for c in custom.list_cluster_custom_object(*RES, "resourceclaims")["items"]]}


CLEAN = {"jobs": [], "pods": [], "templates": [], "claims": []}


@pytest.fixture(scope="module")
def dra_resources(driver, testbed, core, custom):
    """The dra role's DeviceClasses (T4s with an extendedResourceName, MIG 1g.5gb) and templates (one T4 in two team
    namespaces, two MIG devices in one), on a cluster whose claims of the tests before are gone; and a DeviceClass of
    the cluster's own whose selector the collection does not evaluate (lowerAscii)."""
    wait_until("no ResourceClaim left by the tests before",
               lambda: not custom.list_cluster_custom_object(*RES, "resourceclaims")["items"], 90)
    for name in ("dra-smoke-a", "dra-smoke-b"):
        create_namespace(core, name, TEAM)
    custom.create_cluster_custom_object(*RES, "deviceclasses", {
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": ODD_CLASS},
        "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com' && device.attributes["
                                                      "'gpu.nvidia.com'].productName.lowerAscii() == 'nvidia b200'"}}]}})
    rc, _results, raw = run_role(testbed.kubeconfig, "dra", DRA_RESOURCES)
    assert rc == 0, raw[-3000:]
    wait_pools(custom, DRA_NODES + ["a100-0"])


def test_smoke_dra_check_mode_plans_and_writes_nothing(dra_resources, testbed, core, batch, custom):
    rc, results, raw = run_role(testbed.kubeconfig, "smoke_test", dict(FAST, smoke_test_fill=True), check=True)
    assert rc == 0, raw[-3000:]
    result = results[RUN_TASK]
    cases = {(c["kind"], c["resource"]): c for c in result["dra_cases"]}
    # the dra role's classes and templates and the driver's classes (not the cluster's own odd one)
    want = [("class", name) for name in FREE] + [
        ("template", "dra-smoke-a/one-t4"), ("template", "dra-smoke-a/two-migs"),
        ("extended-resource", "nvidia.com/gpu"), ("extended-resource", T4_RESOURCE)]
    assert sorted(cases) == sorted(want)
    for name, free in FREE.items():
        case = cases[("class", name)]
        assert (case["status"], case["free"], case["nodes"]) == ("planned", free, DEVICES[name]), case
    assert cases[("template", "dra-smoke-a/one-t4")]["namespaces"] == ["dra-smoke-a", "dra-smoke-b"]
    assert cases[("template", "dra-smoke-a/two-migs")]["nodes"] == ["a100-0"]
    assert cases[("extended-resource", "nvidia.com/gpu")]["nodes"] == ["t4-0", "t4-1"]
    assert cases[("extended-resource", T4_RESOURCE)]["device_class"] == T4_CLASS
    fill = {c["device_class"]: c for c in result["dra_fill_cases"]}
    assert {name: (c["status"], c["expect_running"], len(c["claims"])) for name, c in fill.items()} == {
        name: ("planned", free, free + 1) for name, free in FREE.items()}
    assert result["cases"] == []   # the device-plugin resources are not tested with smoke_test_mode dra
    assert smoke_left(core, batch, custom) == CLEAN


def test_smoke_dra_bad_input_is_refused_before_anything_is_written(dra_resources, testbed, core, batch, custom):
    custom.create_namespaced_custom_object(*RES, "dra-smoke-a", "resourceclaimtemplates", {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "typo"},
        "spec": {"spec": one_device("gpu", "h100.smoke-it.example.co")}})
    try:
        got, raw = failures(testbed.kubeconfig, "smoke_test", FAST, {
            "missing-template": {"smoke_test_claim_templates": ["dra-smoke-a/one-t5"]},
            "missing-class": {"smoke_test_device_classes": [T4_CLASS[:-1]]},
            "template-of-no-class": {"smoke_test_claim_templates": ["dra-smoke-a/typo"]},
            "classes-without-dra": {"smoke_test_mode": "device-plugin", "smoke_test_device_classes": [T4_CLASS]},
            "bad-template-name": {"smoke_test_claim_templates": ["one-t4"]},
        })
    finally:
        custom.delete_namespaced_custom_object(*RES, "dra-smoke-a", "resourceclaimtemplates", "typo")
    assert_failed(got, raw, {
        "missing-template": "ResourceClaimTemplate dra-smoke-a/one-t5 does not exist; did you mean dra-smoke-a/one-t4?",
        "missing-class": "DeviceClass %s does not exist; did you mean %s?" % (T4_CLASS[:-1], T4_CLASS),
        "template-of-no-class": "ResourceClaimTemplate dra-smoke-a/typo asks for DeviceClass h100.smoke-it.example.co, "
                                "which does not exist",
        "classes-without-dra": "smoke_test_device_classes is used only with smoke_test_mode dra or both",
        "bad-template-name": "one-t4 is not <namespace>/<name> of a ResourceClaimTemplate"})
    for case in ("missing-template", "missing-class", "template-of-no-class"):
        assert "nothing was created" in got[case]["msg"], got[case]
        assert got[case]["task"].endswith("Check the DeviceClasses and ResourceClaimTemplates to test"), got[case]
    assert smoke_left(core, batch, custom) == CLEAN
    assert SMOKE_NS not in [n.metadata.name for n in core.list_namespace().items]  # not even the namespace


def test_smoke_dra_every_class_template_and_extended_resource(dra_resources, testbed, core, batch, custom):
    # the real scheduler serves extended resources through DeviceClasses: the feature is on, not assumed
    assert feature_enabled(testbed, "scheduler", "DRAExtendedResource")
    rc, results, raw = run_role(testbed.kubeconfig, "smoke_test", FAST)
    assert rc == 0, raw[-4000:]
    cases = {(c["kind"], c["resource"]): c for c in results[RUN_TASK]["dra_cases"]}
    assert len(cases) == 8
    for key, case in cases.items():
        assert case["status"] == "passed", case
        assert case["ran_on"] in case["nodes"], case
        # the vectorAdd log read back through pods/log: it ran on the allocated device
        assert case["detail"] == "completed; output has 'Test PASSED'", case
        assert case["log"].splitlines()[-2:] == VECTORADD_END, case
        assert case["claim"], case
    for resource in ("nvidia.com/gpu", T4_RESOURCE):
        case = cases[("extended-resource", resource)]
        # the scheduler made the claim of the pod's extended resource (named in the pod's extendedResourceClaimStatus):
        # served through the DeviceClass, on a DRA node
        assert "-extended-" in case["claim"] and case["ran_on"] in DRA_NODES, case
    assert cases[("template", "dra-smoke-a/two-migs")]["ran_on"] == "a100-0"
    table = "\n".join(results["Show the GPU smoke test results"]["msg"])
    assert "8 cases: passed 8" in table, table
    scheduled = {e.involved_object.name: e.message for e in core.list_namespaced_event(SMOKE_NS).items
                 if e.reason == "Scheduled"}
    for case in cases.values():
        assert scheduled[case["pod"]].endswith("to %s" % case["ran_on"]), case
    assert smoke_left(core, batch, custom) == CLEAN
    rc, results, raw = run_role(testbed.kubeconfig, "smoke_test", FAST)
    assert rc == 0, raw[-4000:]
    assert changed_tasks(results) == [], changed_tasks(results)
    assert smoke_left(core, batch, custom) == CLEAN


def test_smoke_dra_fill_n_plus_one_claims_on_n_devices(dra_resources, testbed, core, batch, custom):
    rc, results, raw = run_role(testbed.kubeconfig, "smoke_test", dict(
        FAST, smoke_test_fill=True, smoke_test_device_classes=[T4_CLASS, MIG_CLASS]))
    assert rc == 0, raw[-4000:]
    fill = {c["device_class"]: c for c in results[RUN_TASK]["dra_fill_cases"]}
    for name in (T4_CLASS, MIG_CLASS):
        case = fill[name]
        n = FREE[name]
        assert case["status"] == "passed", case
        assert case["detail"].startswith("%d claims allocated, %d pods bound, 1 Pending (Unschedulable); expected %d "
                                         "and 1; the scheduler: " % (n, n, n)), case
        # the scheduler's own reason: no node can allocate the extra claim
        assert "cannot allocate all claims" in case["pending_reason"], case
    # the scheduler's word, read back from the apiserver: N pods Scheduled, one FailedScheduling, per class
    events = [e for e in core.list_namespaced_event(SMOKE_NS).items if e.involved_object.name.startswith("gpuops-dra-fill")]
    for name in (T4_CLASS, MIG_CLASS):
        claims = set(fill[name]["claims"])
        scheduled = {e.involved_object.name for e in events if e.reason == "Scheduled" and e.involved_object.name in claims}
        failed = {e.involved_object.name for e in events if e.reason == "FailedScheduling"
                  and e.involved_object.name in claims}
        assert len(scheduled) == FREE[name] and len(failed) == 1 and not scheduled & failed, (name, events)
    assert [c["status"] for c in results[RUN_TASK]["dra_cases"]] == ["passed"] * 3  # two classes, T4 extended
    assert smoke_left(core, batch, custom) == CLEAN


def test_smoke_dra_a_failed_case_is_reported_and_cleaned_up(dra_resources, testbed, core, batch, custom):
    """A DeviceClass whose selector the collection does not evaluate: its devices are not counted (the fill test is
    skipped, not guessed), its workload goes to the scheduler, which finds no device; the role fails, saying so, and
    leaves nothing behind."""
    rc, results, raw = run_role(testbed.kubeconfig, "smoke_test", dict(
        FAST, smoke_test_fill=True, smoke_test_device_classes=[ODD_CLASS, T4_CLASS], smoke_test_stuck_timeout=10))
    assert rc != 0
    result = results[RUN_TASK]
    odd = {c["kind"]: c for c in result["dra_cases"] if c["device_class"] == ODD_CLASS}["class"]
    assert odd["status"] == "unschedulable" and "cannot allocate all claims" in odd["detail"], odd
    assert odd["reason"].startswith("free devices not counted: selector not understood"), odd
    fill = {c["device_class"]: c for c in result["dra_fill_cases"]}
    assert fill[ODD_CLASS]["status"] == "skipped" and fill[T4_CLASS]["status"] == "passed", fill
    message = str(results["Check the GPU smoke test results"]["msg"])
    assert "%s unschedulable" % ODD_CLASS in message, message
    assert smoke_left(core, batch, custom) == CLEAN
