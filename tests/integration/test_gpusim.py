"""The simulated NVIDIA/OpenShift agents (tests/testbed/gpusim) on the virtual GPU cluster.

Each test makes its own KWOK GPU nodes (so tests do not disturb each other or the testbed's node
groups) carrying the operator's deploy labels, and checks what NVIDIA/OpenShift document: the MIG
state machine and capacity, placement failures, GPU pods blocking MIG changes, time-slicing with
device-plugin restart semantics, OLM Subscription -> InstallPlan -> CSV, machine-api scaling and
every failure injection.
"""
from __future__ import annotations

import json
import os
import sys
import time
import uuid

import kubernetes
import pytest
import yaml
from conftest import REPO, wait_until

sys.path.insert(0, os.path.join(REPO, "tests", "testbed"))
from gpusim import config as gpusim_config  # noqa: E402

P = "gpusim.gpuops.dev/"
MIG_CONFIG = "nvidia.com/mig.config"
MIG_STATE = "nvidia.com/mig.config.state"
DP_CONFIG = "nvidia.com/device-plugin.config"
DEPLOY_DP = "nvidia.com/gpu.deploy.device-plugin"
GPU = "nvidia.com/gpu"
OLM = ("operators.coreos.com", "v1alpha1")
MIG_CM = "gpusim-it-mig-parted"
DP_CM = "gpusim-it-device-plugin"

TS = """version: v1
sharing:
  timeSlicing:
    resources:
    - name: nvidia.com/gpu
      replicas: {n}
"""
MIG_PARTED = """version: v1
mig-configs:
  all-disabled:
    - devices: all
      mig-enabled: false
  all-1g.5gb:
    - devices: all
      mig-enabled: true
      mig-devices: {"1g.5gb": 7}
  all-balanced:
    - devices: all
      mig-enabled: true
      mig-devices: {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1}
  too-big:
    - devices: all
      mig-enabled: true
      mig-devices: {"3g.20gb": 2, "1g.5gb": 1}
"""


@pytest.fixture(scope="module")
def sim(testbed):
    """The effective gpusim settings of this cluster (defaults + the config's simulation:)."""
    if not testbed.gpusim_expected():
        pytest.fail("gpusim is disabled in this testbed config; these tests need it", pytrace=False)
    return gpusim_config.load(yaml.safe_dump(testbed.config))


@pytest.fixture(scope="module")
def operator_ns(sim, core):
    ns = sim["operator_namespace"] or "gpu-operator"
    try:
        core.read_namespace(ns)
    except kubernetes.client.ApiException:
        core.create_namespace(kubernetes.client.V1Namespace(metadata={"name": ns}))
    return ns


@pytest.fixture(scope="module")
def cluster_policy(custom, core, operator_ns):
    """A ClusterPolicy naming our mig-parted and device-plugin ConfigMaps (created, or an existing
    policy patched and restored afterwards). The simulator then runs in operator mode."""
    cms = {MIG_CM: {"config.yaml": MIG_PARTED},
           DP_CM: {"ts4": TS.format(n=4), "ts2": TS.format(n=2), "none": "version: v1\n",
                   "bad": TS.format(n=1)}}
    for name, data in cms.items():
        body = {"metadata": {"name": name}, "data": data}
        try:
            core.create_namespaced_config_map(operator_ns, body)
        except kubernetes.client.ApiException as e:
            if e.status != 409:
                raise
            core.replace_namespaced_config_map(name, operator_ns, body)
    grp, ver, plural = "nvidia.com", "v1", "clusterpolicies"
    existing = custom.list_cluster_custom_object(grp, ver, plural)["items"]
    patch = {"spec": {"migManager": {"enabled": True, "config": {"name": MIG_CM}},
                      "devicePlugin": {"enabled": True, "config": {"name": DP_CM, "default": ""}},
                      "mig": {"strategy": "single"}}}
    if existing:
        cp = sorted(existing, key=lambda o: (o["metadata"]["creationTimestamp"], o["metadata"]["name"]))[0]
        name = cp["metadata"]["name"]
        saved = {k: cp["spec"].get(k) for k in ("migManager", "devicePlugin", "mig")}
        custom.patch_cluster_custom_object(grp, ver, plural, name, patch)
        created = False
    else:
        from gpusim import bundles
        doc, _src = bundles.bundle_csv("gpu-operator")
        example = [e for e in json.loads(doc["metadata"]["annotations"]["alm-examples"])
                   if e["kind"] == "ClusterPolicy"][0]
        # the OLM example's name: the real operator honours only the first ClusterPolicy name it
        # sees (a singleton) until restarted, so a different name would break later tests
        name = "gpu-cluster-policy"
        example["metadata"] = {"name": name}
        for k, v in patch["spec"].items():
            example["spec"][k] = v
        custom.create_cluster_custom_object(grp, ver, plural, example)
        created = True
    yield name
    if created:
        custom.delete_cluster_custom_object(grp, ver, plural, name)

        def gone():
            try:
                custom.get_cluster_custom_object(grp, ver, plural, name)
                return False
            except kubernetes.client.ApiException as e:
                return e.status == 404
        wait_until("ClusterPolicy deleted", gone, timeout=60)
    else:
        custom.patch_cluster_custom_object(grp, ver, plural, name, {"spec": saved})
    for cm in cms:
        core.delete_namespaced_config_map(cm, operator_ns)


# ------------------------------------------------------------------------------------------------
# nodes


class Nodes:
    def __init__(self, core):
        self.core = core
        self.made = []

    def make(self, product="NVIDIA-A100-SXM4-40GB", gpus=8, reconfigure_seconds=1.0, labels=None,
             annotations=None):
        name = "gpusim-it-" + uuid.uuid4().hex[:6]
        lab = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "type": "kwok",
               "node-role.kubernetes.io/worker": "",
               # what the gpu-operator puts on a GPU node (so the test does not depend on it)
               DEPLOY_DP: "true", "nvidia.com/gpu.deploy.gpu-feature-discovery": "true",
               "nvidia.com/gpu.deploy.mig-manager": "true"}
        if product in ("NVIDIA-A100-SXM4-40GB", "NVIDIA-A30", "NVIDIA-H100-80GB-HBM3"):
            lab[MIG_CONFIG] = "all-disabled"
        lab.update(labels or {})
        ann = {"kwok.x-k8s.io/node": "fake", P + "product": product, P + "gpus": str(gpus),
               P + "reconfigure-seconds": str(reconfigure_seconds)}
        ann.update(annotations or {})
        res = {"cpu": "32", "memory": "256Gi", "pods": "110"}
        body = {"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "labels": lab, "annotations": ann},
                "spec": {"providerID": "kwok://" + name},
                "status": {"capacity": res, "allocatable": res,
                           "nodeInfo": {"containerRuntimeVersion": "containerd://1.7.27",
                                        "kubeletVersion": "v1.36.3", "architecture": "amd64",
                                        "operatingSystem": "linux", "kernelVersion": "5.14.0",
                                        "osImage": "rhcos", "bootID": "", "machineID": "",
                                        "systemUUID": "", "kubeProxyVersion": "v1.36.3"}}}
        self.core.create_node(body)
        self.made.append(name)
        wait_until(f"{name}: {GPU} advertised", lambda: self.capacity(name).get(GPU) == str(gpus)
                   if gpus else True, timeout=60, interval=0.2)
        if MIG_CONFIG in lab:
            wait_until(f"{name}: initial mig state", lambda: self.labels(name).get(MIG_STATE) == "success",
                       timeout=60, interval=0.2)
        return name

    def get(self, name):
        return self.core.read_node(name)

    def labels(self, name):
        return self.get(name).metadata.labels or {}

    def annotations(self, name):
        return self.get(name).metadata.annotations or {}

    def capacity(self, name):
        return {k: v for k, v in (self.get(name).status.capacity or {}).items() if k.startswith("nvidia.com/")}

    def allocatable(self, name):
        return {k: v for k, v in (self.get(name).status.allocatable or {}).items() if k.startswith("nvidia.com/")}

    def label(self, name, **labels):
        self.core.patch_node(name, {"metadata": {"labels": {k.replace("__", "/").replace("_", "."): v
                                                            for k, v in labels.items()}}})

    def set_labels(self, name, labels):
        self.core.patch_node(name, {"metadata": {"labels": labels}})

    def annotate(self, name, ann):
        self.core.patch_node(name, {"metadata": {"annotations": ann}})

    def cleanup(self):
        for n in self.made:
            try:
                self.core.delete_node(n)
            except kubernetes.client.ApiException:
                pass


@pytest.fixture
def nodes(core, sim):
    n = Nodes(core)
    yield n
    n.cleanup()


def watch_states(nodes, name, until, timeout=30.0):
    """Poll the node until until(labels, node); return each distinct (mig state, device-plugin deploy
    label, alloc gpu) seen on the way."""
    seen = []

    def reached():
        n = nodes.get(name)
        lab = n.metadata.labels or {}
        cur = (lab.get(MIG_STATE), lab.get(DEPLOY_DP), (n.status.allocatable or {}).get(GPU))
        if not seen or seen[-1] != cur:
            seen.append(cur)
        return until(lab, n)
    wait_until(lambda: f"{name}: states seen {seen}; annotations {nodes.annotations(name)}", reached, timeout, 0.1)
    return seen


def set_mig_config(nodes, name, value):
    # clear the old state in the same patch, like the collection's mig_rollout does
    nodes.set_labels(name, {MIG_CONFIG: value, MIG_STATE: None})


# ------------------------------------------------------------------------------------------------
# NFD / GFD / device plugin


def test_gpu_nodes_get_feature_labels_and_capacity(nodes):
    a100 = nodes.make("NVIDIA-A100-SXM4-40GB", 8)
    t4 = nodes.make("Tesla-T4", 1)
    lab = nodes.labels(a100)
    assert lab["feature.node.kubernetes.io/pci-10de.present"] == "true"
    assert lab["feature.node.kubernetes.io/kernel-version.full"]
    assert lab["feature.node.kubernetes.io/system-os_release.ID"]
    assert lab["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-40GB"
    assert lab["nvidia.com/gpu.count"] == "8"
    assert lab["nvidia.com/gpu.memory"] == "40960"
    assert lab["nvidia.com/gpu.family"] == "ampere"
    assert lab["nvidia.com/mig.capable"] == "true"
    assert nodes.capacity(a100) == {GPU: "8"} and nodes.allocatable(a100) == {GPU: "8"}
    lab = nodes.labels(t4)
    assert lab["nvidia.com/gpu.product"] == "Tesla-T4"
    assert lab["nvidia.com/mig.capable"] == "false"
    assert lab["nvidia.com/gpu.family"] == "turing"
    assert nodes.capacity(t4) == {GPU: "1"}


# ------------------------------------------------------------------------------------------------
# mig-manager


def test_mig_change_walks_pending_to_success_and_changes_capacity(nodes):
    name = nodes.make("NVIDIA-A100-SXM4-40GB", 8, reconfigure_seconds=1.5)
    set_mig_config(nodes, name, "all-1g.5gb")
    seen = watch_states(nodes, name, lambda lab, n: lab.get(MIG_STATE) == "success"
                        and (n.status.allocatable or {}).get(GPU) == "56")
    assert ("pending", "paused-for-mig-change", "0") in seen, seen
    assert seen[-1] == ("success", "true", "56"), seen
    lab = nodes.labels(name)
    assert lab["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb"
    assert lab["nvidia.com/gpu.count"] == "56"
    assert lab["nvidia.com/gpu.memory"] == "4864"
    applied = json.loads(nodes.annotations(name)[P + "mig-applied"])
    assert applied["gpus"] == [{"mig": True, "devices": {"1g.5gb": 7}}] * 8

    # the same value again does nothing (mig-manager acts on label value changes) ...
    nodes.set_labels(name, {MIG_STATE: None})
    time.sleep(3)
    assert MIG_STATE not in nodes.labels(name)
    # ... but removing the label and setting it again does (already applied: straight to success)
    nodes.set_labels(name, {MIG_CONFIG: None})
    nodes.set_labels(name, {MIG_CONFIG: "all-1g.5gb"})
    seen = watch_states(nodes, name, lambda lab, n: lab.get(MIG_STATE) == "success")
    assert not [s for s in seen if s[0] == "pending"], seen
    # ... and so does a restarted mig-manager (new pod, or the annotation when there is none)
    nodes.set_labels(name, {MIG_STATE: None})
    nodes.annotate(name, {P + "mig-manager-restart": str(time.time())})
    watch_states(nodes, name, lambda lab, n: lab.get(MIG_STATE) == "success")

    # back to full GPUs
    set_mig_config(nodes, name, "all-disabled")
    watch_states(nodes, name, lambda lab, n: lab.get(MIG_STATE) == "success"
                 and (n.status.capacity or {}).get(GPU) == "8"
                 and (n.status.allocatable or {}).get(GPU) == "8")
    assert nodes.labels(name)["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-40GB"


def test_unknown_config_fails_without_pending(nodes):
    name = nodes.make()
    set_mig_config(nodes, name, "no-such-config")
    seen = watch_states(nodes, name, lambda lab, n: lab.get(MIG_STATE) == "failed")
    assert not [s for s in seen if s[0] == "pending"], seen
    assert "does not exist" in nodes.annotations(name)[P + "mig-error"]
    assert nodes.capacity(name) == {GPU: "8"}


def test_non_fitting_geometry_fails(nodes, cluster_policy):
    name = nodes.make()
    set_mig_config(nodes, name, "too-big")
    seen = watch_states(nodes, name, lambda lab, n: lab.get(MIG_STATE) == "failed")
    assert seen[-1][:2] == ("failed", "true"), seen        # GPU clients restored on failure
    assert any(s[0] == "pending" for s in seen), seen
    err = nodes.annotations(name)[P + "mig-error"]
    assert "all orderings failed" in err, err


def test_mixed_geometry_under_single_strategy_is_invalid(nodes, cluster_policy):
    name = nodes.make()
    set_mig_config(nodes, name, "all-balanced")
    watch_states(nodes, name, lambda lab, n: lab.get(MIG_STATE) == "success")
    wait_until("MIG-INVALID product label",
               lambda: nodes.labels(name).get("nvidia.com/gpu.product") == "NVIDIA-A100-SXM4-40GB-MIG-INVALID",
               timeout=20, interval=0.2)
    assert nodes.labels(name)["nvidia.com/gpu.count"] == "0"
    assert "more than one MIG device type" in nodes.annotations(name)[P + "device-plugin-error"]


def test_running_gpu_pod_blocks_mig_change(nodes, core, namespace):
    name = nodes.make()
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "cuda"},
           "spec": {"nodeName": name,   # bound directly: a pod holding a GPU on this node
                    "tolerations": [{"operator": "Exists"}],
                    "containers": [{"name": "c", "image": "cuda:12", "command": ["sleep", "inf"],
                                    "resources": {"limits": {GPU: "1"}}}]}}
    core.create_namespaced_pod(namespace, pod)
    set_mig_config(nodes, name, "all-1g.5gb")
    watch_states(nodes, name, lambda lab, n: lab.get(MIG_STATE) == "failed")
    err = nodes.annotations(name)[P + "mig-error"]
    assert f"{namespace}/cuda" in err, err
    assert nodes.capacity(name) == {GPU: "8"}
    assert json.loads(nodes.annotations(name)[P + "mig-applied"])["gpus"][0]["mig"] is False
    # once the pod is gone the same change succeeds
    core.delete_namespaced_pod("cuda", namespace, grace_period_seconds=0)
    wait_until("pod gone", lambda: not core.list_namespaced_pod(namespace).items, timeout=30)
    set_mig_config(nodes, name, "all-disabled")
    watch_states(nodes, name, lambda lab, n: lab.get(MIG_STATE) == "success")
    set_mig_config(nodes, name, "all-1g.5gb")
    watch_states(nodes, name, lambda lab, n: lab.get(MIG_STATE) == "success"
                 and (n.status.allocatable or {}).get(GPU) == "56")


# ------------------------------------------------------------------------------------------------
# sharing


def restart_device_plugin(core, nodes, name):
    """Restart the plugin on the node: delete its pod (operator-managed) or bump the annotation."""
    pods = core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={name}",
                                            label_selector="app=nvidia-device-plugin-daemonset").items
    for p in pods:
        core.delete_namespaced_pod(p.metadata.name, p.metadata.namespace, grace_period_seconds=0)
    nodes.annotate(name, {P + "device-plugin-restart": str(time.time())})


def settle_device_plugin(api_client, core, operator_ns, node):
    """When the real gpu-operator runs the device-plugin DaemonSet, wait until its rollout is done
    and the plugin pod on `node` runs: a pod (re)start re-reads the config, which would race with
    the 'content change is not picked up' check below."""
    apps = kubernetes.client.AppsV1Api(api_client)

    def settled():
        try:
            ds = apps.read_namespaced_daemon_set("nvidia-device-plugin-daemonset", operator_ns)
        except kubernetes.client.ApiException as e:
            return e.status == 404          # no operator-managed plugin: nothing to wait for
        st = ds.status
        if (st.observed_generation or 0) < (ds.metadata.generation or 0) or \
                (st.updated_number_scheduled or 0) != (st.desired_number_scheduled or 0) or \
                (st.number_available or 0) != (st.desired_number_scheduled or 0):
            return False
        pods = core.list_namespaced_pod(operator_ns, field_selector=f"spec.nodeName={node}",
                                        label_selector="app=nvidia-device-plugin-daemonset").items
        return any(p.status.phase == "Running" and not p.metadata.deletion_timestamp for p in pods)
    wait_until("device-plugin DaemonSet settled", settled, timeout=120, interval=0.5)
    time.sleep(1)


def test_time_slicing_multiplies_capacity_after_restart(nodes, api_client, core, operator_ns, cluster_policy):
    name = nodes.make()
    nodes.set_labels(name, {DP_CONFIG: "ts4"})
    wait_until("time-sliced capacity", lambda: nodes.capacity(name).get(GPU) == "32", timeout=30, interval=0.2)
    settle_device_plugin(api_client, core, operator_ns, name)
    lab = nodes.labels(name)
    assert lab["nvidia.com/gpu.replicas"] == "4"
    assert lab["nvidia.com/gpu.sharing-strategy"] == "time-slicing"
    assert lab["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-40GB-SHARED"
    assert nodes.allocatable(name)[GPU] == "32"

    # ConfigMap content change: NOT picked up by the running plugin ...
    core.patch_namespaced_config_map(DP_CM, operator_ns, {"data": {"ts4": TS.format(n=8)}})
    try:
        time.sleep(3)
        assert nodes.capacity(name)[GPU] == "32"
        # ... until the plugin restarts
        restart_device_plugin(core, nodes, name)
        wait_until("new replicas after restart", lambda: nodes.capacity(name).get(GPU) == "64",
                   timeout=30, interval=0.2)
        assert nodes.labels(name)["nvidia.com/gpu.replicas"] == "8"
    finally:
        core.patch_namespaced_config_map(DP_CM, operator_ns, {"data": {"ts4": TS.format(n=4)}})

    # back to no sharing via the label (config-manager picks up label changes itself)
    nodes.set_labels(name, {DP_CONFIG: "none"})
    wait_until("unshared capacity", lambda: nodes.capacity(name).get(GPU) == "8", timeout=30, interval=0.2)
    assert nodes.labels(name)["nvidia.com/gpu.replicas"] == "1"


def test_invalid_sharing_config_keeps_capacity_and_reports(nodes, core, cluster_policy):
    name = nodes.make()
    nodes.set_labels(name, {DP_CONFIG: "ts2"})
    wait_until("ts2 capacity", lambda: nodes.capacity(name).get(GPU) == "16", timeout=30, interval=0.2)
    nodes.set_labels(name, {DP_CONFIG: "bad"})
    wait_until("device-plugin error", lambda: P + "device-plugin-error" in nodes.annotations(name),
               timeout=30, interval=0.2)
    assert "replicas must be >= 2" in nodes.annotations(name)[P + "device-plugin-error"]
    assert nodes.capacity(name)[GPU] == "16"          # capacity unchanged
    assert nodes.allocatable(name)[GPU] == "0"        # the crashing plugin's devices are unhealthy
    events = core.list_namespaced_event("default", field_selector=f"involvedObject.name={name}").items
    assert any(e.reason == "DevicePluginFailed" and e.type == "Warning" for e in events)
    nodes.set_labels(name, {DP_CONFIG: "ts2"})
    wait_until("healthy again", lambda: P + "device-plugin-error" not in nodes.annotations(name)
               and nodes.allocatable(name).get(GPU) == "16", timeout=30, interval=0.2)


# ------------------------------------------------------------------------------------------------
# failure injection


def test_inject_fail(nodes):
    name = nodes.make(annotations={P + "inject": "fail"})
    set_mig_config(nodes, name, "all-1g.5gb")
    seen = watch_states(nodes, name, lambda lab, n: lab.get(MIG_STATE) == "failed")
    assert any(s[0] == "pending" for s in seen), seen
    assert "injected" in nodes.annotations(name)[P + "mig-error"]
    assert nodes.capacity(name) == {GPU: "8"}


def test_inject_stuck_pending(nodes):
    name = nodes.make(reconfigure_seconds=0.5, annotations={P + "inject": "stuck-pending"})
    set_mig_config(nodes, name, "all-1g.5gb")
    wait_until("pending", lambda: nodes.labels(name).get(MIG_STATE) == "pending", timeout=20, interval=0.1)
    time.sleep(4)                                     # 8x the reconfiguration time
    assert nodes.labels(name).get(MIG_STATE) == "pending"
    nodes.annotate(name, {P + "inject": None})
    watch_states(nodes, name, lambda lab, n: lab.get(MIG_STATE) == "success", timeout=20)


def test_inject_slow(nodes):
    name = nodes.make(reconfigure_seconds=0.4, annotations={P + "inject": "slow"})
    set_mig_config(nodes, name, "all-1g.5gb")
    wait_until("pending", lambda: nodes.labels(name).get(MIG_STATE) == "pending", timeout=20, interval=0.1)
    t0 = time.monotonic()
    watch_states(nodes, name, lambda lab, n: lab.get(MIG_STATE) == "success", timeout=30)
    took = time.monotonic() - t0
    assert took >= 3.0, f"slow injection finished after {took:.1f}s (expected ~4s = 10 x 0.4s)"


def test_inject_device_plugin_crash(nodes):
    name = nodes.make()
    nodes.annotate(name, {P + "inject": "device-plugin-crash"})
    wait_until("crash reported", lambda: "injected crash" in nodes.annotations(name).get(P + "device-plugin-error", ""),
               timeout=30, interval=0.2)
    assert nodes.capacity(name) == {GPU: "8"} and nodes.allocatable(name) == {GPU: "0"}
    nodes.annotate(name, {P + "inject": None})
    wait_until("plugin healthy", lambda: nodes.allocatable(name) == {GPU: "8"}
               and P + "device-plugin-error" not in nodes.annotations(name), timeout=30, interval=0.2)


def test_unhealthy_gpus_lower_allocatable_emit_xid_events_and_repair(nodes, core):
    name = nodes.make()
    nodes.annotate(name, {P + "unhealthy-gpus": "1"})
    wait_until("allocatable lowered", lambda: nodes.allocatable(name) == {GPU: "7"}, timeout=30, interval=0.2)
    assert nodes.capacity(name) == {GPU: "8"}

    def xid_events():
        items = core.list_namespaced_event("default", field_selector="involvedObject.name=%s" % name).items
        return [e for e in items if e.reason == "XidCriticalError"]
    wait_until("XID event", xid_events, timeout=30, interval=0.2)
    assert "Xid=79" in xid_events()[0].message and xid_events()[0].type == "Warning"
    nodes.annotate(name, {P + "unhealthy-gpus": None})
    wait_until("repaired", lambda: nodes.allocatable(name) == {GPU: "8"}, timeout=30, interval=0.2)


# ------------------------------------------------------------------------------------------------
# OLM


def _olm(custom, plural, ns, name=None):
    if name:
        return custom.get_namespaced_custom_object(*OLM, ns, plural, name)
    return custom.list_namespaced_custom_object(*OLM, ns, plural)["items"]


def _subscribe(custom, ns, approval="Automatic", package="gpu-operator-certified", channel=None,
               starting_csv=None, operator_group=True, source="certified-operators", sub_name=None):
    if operator_group:
        custom.create_namespaced_custom_object("operators.coreos.com", "v1", ns, "operatorgroups", {
            "apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
            "metadata": {"name": "og"}, "spec": {"targetNamespaces": [ns]}})
    spec = {"name": package, "source": source, "sourceNamespace": "openshift-marketplace",
            "installPlanApproval": approval}
    if channel:
        spec["channel"] = channel
    if starting_csv:
        spec["startingCSV"] = starting_csv
    custom.create_namespaced_custom_object(*OLM, ns, "subscriptions", {
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
        "metadata": {"name": sub_name or package}, "spec": spec})


def _csv_phase(custom, ns, name):
    try:
        return (_olm(custom, "clusterserviceversions", ns, name).get("status") or {}).get("phase")
    except kubernetes.client.ApiException:
        return None


def test_catalog_sources_are_ready(custom):
    def ready():
        items = _olm(custom, "catalogsources", "openshift-marketplace")
        return {i["metadata"]["name"]: ((i.get("status") or {}).get("connectionState") or {}).get("lastObservedState")
                for i in items}
    wait_until("default catalog sources READY",
               lambda: ready().get("certified-operators") == "READY" and ready().get("redhat-operators") == "READY",
               timeout=30)


def test_subscription_automatic_yields_succeeded_csv(custom, namespace, sim):
    pkg = sim["olm"]["packages"]["gpu-operator-certified"]
    head = pkg["channels"][pkg["default_channel"]][-1]
    _subscribe(custom, namespace)
    wait_until("CSV Succeeded", lambda: _csv_phase(custom, namespace, head) == "Succeeded", timeout=60)
    sub = _olm(custom, "subscriptions", namespace, "gpu-operator-certified")
    assert sub["status"]["installedCSV"] == head and sub["status"]["state"] == "AtLatestKnown"
    plan = _olm(custom, "installplans", namespace, sub["status"]["installPlanRef"]["name"])
    assert plan["status"]["phase"] == "Complete" and plan["spec"]["approved"] is True
    csv = _olm(custom, "clusterserviceversions", namespace, head)
    examples = json.loads(csv["metadata"]["annotations"]["alm-examples"])
    cp = next(e for e in examples if e["kind"] == "ClusterPolicy")
    for section in ("daemonsets", "devicePlugin", "driver", "gfd", "migManager", "toolkit", "operator"):
        assert section in cp["spec"], section
    assert isinstance(csv["spec"].get("relatedImages"), list)
    assert csv["metadata"]["annotations"]["olm.targetNamespaces"] == namespace


def test_subscription_manual_waits_for_approval(custom, namespace, sim):
    pkg = sim["olm"]["packages"]["gpu-operator-certified"]
    head = pkg["channels"][pkg["default_channel"]][-1]
    _subscribe(custom, namespace, approval="Manual")

    def plan_ref():
        st = _olm(custom, "subscriptions", namespace, "gpu-operator-certified").get("status") or {}
        return (st.get("installPlanRef") or {}).get("name")
    name = wait_until("InstallPlan", plan_ref, timeout=30)
    wait_until("RequiresApproval", lambda: (_olm(custom, "installplans", namespace, name).get("status") or {})
               .get("phase") == "RequiresApproval", timeout=30)
    sub = _olm(custom, "subscriptions", namespace, "gpu-operator-certified")
    cond = {c["type"]: c for c in sub["status"]["conditions"]}
    assert cond["InstallPlanPending"]["reason"] == "RequiresApproval"
    assert sub["status"]["state"] == "UpgradePending"
    time.sleep(2 + sim["olm"]["install_seconds"])
    assert _csv_phase(custom, namespace, head) is None       # nothing installed yet
    custom.patch_namespaced_custom_object(*OLM, namespace, "installplans", name, {"spec": {"approved": True}})
    wait_until("CSV Succeeded", lambda: _csv_phase(custom, namespace, head) == "Succeeded", timeout=60)


def test_subscription_starting_csv_then_manual_upgrade(custom, namespace, sim):
    pkg = sim["olm"]["packages"]["gpu-operator-certified"]
    stable = pkg["channels"]["stable"]
    assert len(stable) >= 2
    _subscribe(custom, namespace, approval="Manual", channel="stable", starting_csv=stable[0])

    def ref():
        st = _olm(custom, "subscriptions", namespace, "gpu-operator-certified").get("status") or {}
        return (st.get("installPlanRef") or {}).get("name")

    first = wait_until("first InstallPlan", ref, timeout=30)
    plan = _olm(custom, "installplans", namespace, first)
    assert plan["spec"]["clusterServiceVersionNames"] == [stable[0]]
    custom.patch_namespaced_custom_object(*OLM, namespace, "installplans", first, {"spec": {"approved": True}})
    wait_until("starting CSV Succeeded", lambda: _csv_phase(custom, namespace, stable[0]) == "Succeeded",
               timeout=60)
    second = wait_until("upgrade InstallPlan", lambda: ref() if ref() != first else None, timeout=30)
    plan = _olm(custom, "installplans", namespace, second)
    assert plan["spec"]["clusterServiceVersionNames"] == [stable[-1]]
    wait_until("upgrade waits for approval", lambda: (_olm(custom, "installplans", namespace, second)
               .get("status") or {}).get("phase") == "RequiresApproval", timeout=30)
    assert _csv_phase(custom, namespace, stable[0]) == "Succeeded"


def test_subscription_resolution_failed(custom, namespace):
    cases = [("bad-package", {"package": "no-such-operator"}, "no operators found in package no-such-operator"),
             ("bad-channel", {"channel": "v0.1"}, "no operators found in channel v0.1"),
             ("bad-source", {"source": "no-such-catalog"}, "no operators found from catalog no-such-catalog")]
    for i, (sub_name, kwargs, _msg) in enumerate(cases):
        _subscribe(custom, namespace, sub_name=sub_name, operator_group=(i == 0), **kwargs)

    def failed(sub_name):
        st = _olm(custom, "subscriptions", namespace, sub_name).get("status") or {}
        c = [c for c in st.get("conditions") or [] if c["type"] == "ResolutionFailed"]
        return c[0] if c and c[0]["status"] == "True" else None
    for sub_name, _kwargs, message in cases:
        cond = wait_until(f"{sub_name}: ResolutionFailed", lambda: failed(sub_name), timeout=30)
        assert cond["reason"] == "ConstraintsNotSatisfiable" and message in cond["message"], cond
    assert not _olm(custom, "installplans", namespace)


def test_csv_fails_without_operator_group(custom, namespace, sim):
    pkg = sim["olm"]["packages"]["gpu-operator-certified"]
    head = pkg["channels"][pkg["default_channel"]][-1]
    _subscribe(custom, namespace, operator_group=False)
    wait_until("CSV Failed", lambda: _csv_phase(custom, namespace, head) == "Failed", timeout=60)
    csv = _olm(custom, "clusterserviceversions", namespace, head)
    assert csv["status"]["reason"] == "NoOperatorGroup"
    custom.create_namespaced_custom_object("operators.coreos.com", "v1", namespace, "operatorgroups", {
        "apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
        "metadata": {"name": "og"}, "spec": {"targetNamespaces": [namespace]}})
    wait_until("CSV Succeeded", lambda: _csv_phase(custom, namespace, head) == "Succeeded", timeout=60)


# ------------------------------------------------------------------------------------------------
# machine-api


def test_machineset_scales_gpu_nodes(custom, core, sim):
    ns = sim["machine_api"]["namespace"]
    try:
        core.create_namespace(kubernetes.client.V1Namespace(metadata={"name": ns}))
    except kubernetes.client.ApiException as e:
        if e.status != 409:
            raise
    grp, ver = "machine.openshift.io", "v1beta1"
    name = "gpusim-it-" + uuid.uuid4().hex[:5]
    ms = {"apiVersion": f"{grp}/{ver}", "kind": "MachineSet",
          "metadata": {"name": name, "annotations": {"machine.openshift.io/GPU": "8"}},
          "spec": {"replicas": 2,
                   "selector": {"matchLabels": {"machine.openshift.io/cluster-api-machineset": name}},
                   "template": {
                       "metadata": {"labels": {"machine.openshift.io/cluster-api-machineset": name}},
                       "spec": {"metadata": {"labels": {
                           "cluster-api/accelerator": "A100-SXM4-40GB", "gpuops.dev/it": name,
                           # as the gpu-operator would label them (not required when no ClusterPolicy)
                           DEPLOY_DP: "true", "nvidia.com/gpu.deploy.gpu-feature-discovery": "true"}},
                           "taints": [{"key": GPU, "effect": "NoSchedule"}],
                           "providerSpec": {"value": {"instanceType": "p4d.24xlarge"}}}}}}
    custom.create_namespaced_custom_object(grp, ver, ns, "machinesets", ms)

    def gpu_nodes():
        return core.list_node(label_selector=f"gpuops.dev/it={name}").items
    try:
        wait_until("2 nodes", lambda: len(gpu_nodes()) == 2, timeout=60)
        wait_until("GPU capacity on both", lambda: all((n.status.capacity or {}).get(GPU) == "8" for n in gpu_nodes()),
                   timeout=60)
        wait_until("both nodes Ready", lambda: all(any(c.type == "Ready" and c.status == "True"
                                                       for c in n.status.conditions or [])
                                                   for n in gpu_nodes()), timeout=60)
        for n in gpu_nodes():
            assert n.metadata.annotations["kwok.x-k8s.io/node"] == "fake"
            assert n.metadata.annotations[P + "product"] == "A100-SXM4-40GB"
            assert n.metadata.annotations["machine.openshift.io/machine"].startswith(ns + "/")
            assert n.metadata.labels["node.kubernetes.io/instance-type"] == "p4d.24xlarge"
            assert n.metadata.labels["feature.node.kubernetes.io/pci-10de.present"] == "true"
            # the template's taint (the node lifecycle controller may add/remove node.kubernetes.io/*)
            assert [(t.key, t.effect) for t in n.spec.taints or []
                    if not t.key.startswith("node.kubernetes.io/")] == [(GPU, "NoSchedule")]
            assert n.spec.provider_id == "kwok://" + n.metadata.name

        def machines():
            return custom.list_namespaced_custom_object(
                grp, ver, ns, "machines", label_selector=f"machine.openshift.io/cluster-api-machineset={name}")["items"]
        wait_until("2 Machines Running", lambda: [((m.get("status") or {}).get("phase")) for m in machines()]
                   == ["Running", "Running"], timeout=60)
        assert all(m["status"]["nodeRef"]["name"] == m["metadata"]["name"] for m in machines())
        assert all(m["spec"]["providerID"] == "kwok://" + m["metadata"]["name"] for m in machines())

        def status():
            return custom.get_namespaced_custom_object(grp, ver, ns, "machinesets", name).get("status") or {}
        wait_until("MachineSet status.replicas 2", lambda: status().get("replicas") == 2, timeout=30)

        custom.patch_namespaced_custom_object(grp, ver, ns, "machinesets", name, {"spec": {"replicas": 1}})
        wait_until("scaled down to 1 node", lambda: len(gpu_nodes()) == 1, timeout=60)
        wait_until("1 machine", lambda: len(machines()) == 1, timeout=60)
        wait_until("MachineSet status.replicas 1", lambda: status().get("replicas") == 1, timeout=30)
    finally:
        custom.patch_namespaced_custom_object(grp, ver, ns, "machinesets", name, {"spec": {"replicas": 0}})
        wait_until("scaled to 0", lambda: not gpu_nodes(), timeout=60)
        custom.delete_namespaced_custom_object(grp, ver, ns, "machinesets", name)
