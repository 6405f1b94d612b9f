"""The virtual GPU cluster's real parts: control plane version, scheduling of GPU pods on KWOK
nodes, CRDs with real schemas, RBAC, and the real NVIDIA gpu-operator reconciling a ClusterPolicy.
"""
from __future__ import annotations

import kubernetes
import pytest
from cluster_policy_example import clusterpolicy_example
from conftest import wait_until

GPU = "nvidia.com/gpu"
GROUP_LABEL = "gpuops.dev/node-group"


def gpu_groups(testbed):
    return [g for g in testbed.config["node_groups"] if int(g.get("gpus_per_node", 0) or 0) > 0
            and int(g.get("count", 0)) > 0]


def ready(node) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in (node.status.conditions or []))


def ensure_gpu_capacity(testbed, core, node_name: str, gpus: int) -> int:
    """GPU capacity comes from the simulated device plugin (gpusim). Wait for it; when gpusim is
    not part of this checkout, publish the capacity ourselves the way a device plugin would."""
    def alloc():
        n = core.read_node(node_name)
        return int((n.status.allocatable or {}).get(GPU, "0"))

    if testbed.gpusim_expected():
        assert testbed.process_running("gpusim"), testbed.cli("logs", "gpusim", check=False).stdout
        return wait_until(f"gpusim to advertise {GPU} on {node_name}", alloc, timeout=90)
    if alloc() == 0:
        core.patch_node_status(node_name, {"status": {"capacity": {GPU: str(gpus)},
                                                      "allocatable": {GPU: str(gpus)}}})
    return wait_until(f"{GPU} on {node_name}", alloc, timeout=10)


def gpu_pod(name: str, gpus: int, node_group: str) -> dict:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "nodeSelector": {GROUP_LABEL: node_group},
            "tolerations": [{"key": GPU, "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [{"name": "cuda", "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubi9",
                            "command": ["nvidia-smi"],
                            "resources": {"limits": {GPU: str(gpus)}}}],
        },
    }


# ------------------------------------------------------------------------------------------------


def test_version_is_real_kubernetes_1_36(api_client):
    v = kubernetes.client.VersionApi(api_client).get_code()
    assert v.git_version.startswith("v1.36."), v.git_version
    assert (v.major, v.minor) == ("1", "36")
    assert v.git_tree_state == "clean"


def test_nodes_are_kwok_gpu_nodes(testbed, core):
    want = {g["name"]: int(g.get("count", 0)) for g in testbed.config["node_groups"]}
    nodes = core.list_node(label_selector="gpuops.dev/testbed=true").items
    got: dict = {}
    for n in nodes:
        got[n.metadata.labels[GROUP_LABEL]] = got.get(n.metadata.labels[GROUP_LABEL], 0) + 1
        assert n.metadata.annotations["kwok.x-k8s.io/node"] == "fake"
        assert n.spec.provider_id == f"kwok://{n.metadata.name}"
        assert n.status.node_info.container_runtime_version.startswith("containerd://")
        assert n.status.node_info.kubelet_version.startswith("v1.36.")
        assert ready(n), f"{n.metadata.name} not Ready"
        assert all(a.address == "127.0.0.1" for a in n.status.addresses if a.type == "InternalIP")
    assert got == {k: v for k, v in want.items() if v}
    for g in gpu_groups(testbed):
        n = next(n for n in nodes if n.metadata.labels[GROUP_LABEL] == g["name"])
        assert n.metadata.annotations["gpusim.gpuops.dev/gpus"] == str(g["gpus_per_node"])
        assert n.metadata.annotations["gpusim.gpuops.dev/product"] == g["gpu_product"]


def test_gpu_pods_schedule_run_and_over_capacity_stays_pending(testbed, core, namespace):
    group = min(gpu_groups(testbed), key=lambda g: int(g["count"]))
    nodes = core.list_node(label_selector=f"{GROUP_LABEL}={group['name']}").items
    cap = {n.metadata.name: ensure_gpu_capacity(testbed, core, n.metadata.name,
                                                int(group["gpus_per_node"])) for n in nodes}
    # one pod per node taking all of its GPUs: all Running, each on a node of the group
    for i, (node, gpus) in enumerate(sorted(cap.items())):
        core.create_namespaced_pod(namespace, gpu_pod(f"full-{i}", gpus, group["name"]))

    def running():
        pods = core.list_namespaced_pod(namespace).items
        ok = [p for p in pods if p.status.phase == "Running"
              and any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or [])]
        return pods if len(ok) == len(cap) else None

    pods = wait_until("GPU pods Running and Ready", running, timeout=60)
    assert sorted(p.spec.node_name for p in pods) == sorted(cap), "one full pod per GPU node"

    # the group is now full: one more GPU pod must stay Pending, unschedulable for nvidia.com/gpu
    core.create_namespaced_pod(namespace, gpu_pod("one-too-many", 1, group["name"]))

    def unschedulable():
        p = core.read_namespaced_pod("one-too-many", namespace)
        cond = [c for c in p.status.conditions or [] if c.type == "PodScheduled"]
        return cond and cond[0].status == "False" and cond[0].reason == "Unschedulable" and cond[0]

    cond = wait_until("FailedScheduling for the over-capacity pod", unschedulable, timeout=30)
    assert f"Insufficient {GPU}" in cond.message
    p = core.read_namespaced_pod("one-too-many", namespace)
    assert p.status.phase == "Pending" and not p.spec.node_name

    # freeing one node's GPUs lets the pending pod run there
    core.delete_namespaced_pod("full-0", namespace, grace_period_seconds=0)
    wait_until("pending pod to be scheduled after GPUs were freed",
               lambda: core.read_namespaced_pod("one-too-many", namespace).status.phase == "Running",
               timeout=60)


def test_pods_requesting_gpus_never_land_on_cpu_nodes(testbed, core, namespace):
    cpu_groups = [g for g in testbed.config["node_groups"] if not int(g.get("gpus_per_node", 0) or 0)
                  and int(g.get("count", 0))]
    if not cpu_groups:
        pytest.fail("the testbed config has no CPU-only node group to test against")
    pod = gpu_pod("gpu-on-cpu", 1, cpu_groups[0]["name"])
    core.create_namespaced_pod(namespace, pod)

    def unschedulable():
        p = core.read_namespaced_pod("gpu-on-cpu", namespace)
        return any(c.type == "PodScheduled" and c.reason == "Unschedulable" for c in p.status.conditions or [])

    wait_until("GPU pod pinned to a CPU node to be Unschedulable", unschedulable, timeout=30)


EXPECTED_CRDS = {
    "clusterpolicies.nvidia.com": "ClusterPolicy",
    "nvidiadrivers.nvidia.com": "NVIDIADriver",
    "subscriptions.operators.coreos.com": "Subscription",
    "installplans.operators.coreos.com": "InstallPlan",
    "clusterserviceversions.operators.coreos.com": "ClusterServiceVersion",
    "operatorgroups.operators.coreos.com": "OperatorGroup",
    "catalogsources.operators.coreos.com": "CatalogSource",
    "machinesets.machine.openshift.io": "MachineSet",
    "machines.machine.openshift.io": "Machine",
    "clusterautoscalers.autoscaling.openshift.io": "ClusterAutoscaler",
    "machineautoscalers.autoscaling.openshift.io": "MachineAutoscaler",
    "imagedigestmirrorsets.config.openshift.io": "ImageDigestMirrorSet",
    "imagetagmirrorsets.config.openshift.io": "ImageTagMirrorSet",
    "images.config.openshift.io": "Image",
    "operatorhubs.config.openshift.io": "OperatorHub",
    "imagecontentsourcepolicies.operator.openshift.io": "ImageContentSourcePolicy",
    "servicemonitors.monitoring.coreos.com": "ServiceMonitor",
    "nodefeaturediscoveries.nfd.openshift.io": "NodeFeatureDiscovery",
    "stages.kwok.x-k8s.io": "Stage",
}


def test_crds_are_installed_with_real_schemas(api_client):
    ext = kubernetes.client.ApiextensionsV1Api(api_client)
    crds = {c.metadata.name: c for c in ext.list_custom_resource_definition().items}
    missing = sorted(set(EXPECTED_CRDS) - set(crds))
    assert not missing, f"CRDs missing: {missing}"
    for name, kind in EXPECTED_CRDS.items():
        c = crds[name]
        assert c.spec.names.kind == kind
        assert any(x.type == "Established" and x.status == "True" for x in c.status.conditions)
        served = [v for v in c.spec.versions if v.served]
        schema = served[0].schema.open_apiv3_schema
        assert schema.properties and "spec" in schema.properties, name
        assert schema.properties["spec"].properties, f"{name}: spec has no schema"
    # a real schema rejects a wrongly typed field (a stub `x-kubernetes-preserve-unknown-fields`
    # CRD would accept it)
    co = kubernetes.client.CustomObjectsApi(api_client)
    bad = {"apiVersion": "machine.openshift.io/v1beta1", "kind": "MachineSet",
           "metadata": {"name": "bad", "namespace": "default"}, "spec": {"replicas": "three"}}
    with pytest.raises(kubernetes.client.ApiException) as e:
        co.create_namespaced_custom_object("machine.openshift.io", "v1beta1", "default", "machinesets", bad)
    assert e.value.status == 422, e.value.body
    bad_cp = {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": "bad"},
              "spec": {"mig": {"strategy": "sometimes"}}}
    with pytest.raises(kubernetes.client.ApiException) as e:
        co.create_cluster_custom_object("nvidia.com", "v1", "clusterpolicies", bad_cp)
    assert e.value.status == 422 and "strategy" in e.value.body


def test_rbac_refuses_a_restricted_service_account(api_client, core, namespace, testbed):
    core.create_namespaced_service_account(namespace, {"metadata": {"name": "restricted"}})
    tr = core.create_namespaced_service_account_token(
        "restricted", namespace, {"spec": {"expirationSeconds": 600}})
    cfg = kubernetes.client.Configuration()
    cfg.host = api_client.configuration.host
    cfg.ssl_ca_cert = api_client.configuration.ssl_ca_cert
    cfg.api_key = {"authorization": "Bearer " + tr.status.token}
    restricted = kubernetes.client.CoreV1Api(kubernetes.client.ApiClient(cfg))
    some_node = core.list_node(limit=1).items[0].metadata.name
    for call in (restricted.list_node,
                 lambda: restricted.list_namespaced_pod(namespace),
                 lambda: restricted.patch_node(some_node, {"metadata": {"labels": {"x": "y"}}})):
        with pytest.raises(kubernetes.client.ApiException) as e:
            call()
        assert e.value.status == 403, e.value.body
        assert f"system:serviceaccount:{namespace}:restricted" in e.value.body
    # the token itself is valid: a Role binding grants exactly what it says
    rbac = kubernetes.client.RbacAuthorizationV1Api(api_client)
    rbac.create_namespaced_role(namespace, {"metadata": {"name": "pod-reader"}, "rules": [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]})
    rbac.create_namespaced_role_binding(namespace, {
        "metadata": {"name": "restricted-pod-reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "restricted", "namespace": namespace}]})
    wait_until("the RoleBinding to take effect",
               lambda: _can(lambda: restricted.list_namespaced_pod(namespace)), timeout=15)
    with pytest.raises(kubernetes.client.ApiException) as e:
        restricted.list_node()
    assert e.value.status == 403


def _can(call) -> bool:
    try:
        call()
        return True
    except kubernetes.client.ApiException:
        return False


# ------------------------------------------------------------------------------------------------
# The real NVIDIA gpu-operator controller, reconciling a ClusterPolicy into DaemonSets on KWOK nodes


NFD_LABELS = {
    "feature.node.kubernetes.io/pci-10de.present": "true",
    "feature.node.kubernetes.io/system-os_release.ID": "rhcos",
    "feature.node.kubernetes.io/system-os_release.VERSION_ID": "4.18",
    "feature.node.kubernetes.io/kernel-version.full": "5.14.0-427.50.1.el9_4.x86_64",
}


def test_real_gpu_operator_reconciles_clusterpolicy_to_ready(testbed, core, custom, api_client):
    assert testbed.process_running("gpu-operator"), "the testbed did not start the gpu-operator"
    ns = testbed.config.get("cluster", {}).get("operator_namespace", "gpu-operator")
    gpu_nodes = [n.metadata.name for n in core.list_node(label_selector="gpuops.dev/testbed=true").items
                 if int((n.metadata.annotations or {}).get("gpusim.gpuops.dev/gpus", "0")) > 0]
    assert gpu_nodes
    # NFD labels come from the simulated NFD worker (gpusim); publish them ourselves without it
    if testbed.gpusim_expected():
        assert testbed.process_running("gpusim"), testbed.cli("logs", "gpusim", check=False).stdout
    else:
        for n in gpu_nodes:
            core.patch_node(n, {"metadata": {"labels": NFD_LABELS}})
    wait_until("NFD pci-10de labels on the GPU nodes", lambda: all(
        core.read_node(n).metadata.labels.get("feature.node.kubernetes.io/pci-10de.present") == "true"
        for n in gpu_nodes), timeout=60)

    cp = clusterpolicy_example()
    custom.create_cluster_custom_object("nvidia.com", "v1", "clusterpolicies", cp)
    try:
        apps = kubernetes.client.AppsV1Api(api_client)

        def daemonsets():
            return {d.metadata.name: d for d in apps.list_namespaced_daemon_set(ns).items}

        def at_least_four():
            found = daemonsets()
            return found if len(found) >= 4 else None

        ds = wait_until("the operator to create its DaemonSets", at_least_four, timeout=120)
        assert "nvidia-device-plugin-daemonset" in ds, sorted(ds)
        assert any(name.startswith("nvidia-driver-daemonset") for name in ds), sorted(ds)

        def state():
            obj = custom.get_cluster_custom_object("nvidia.com", "v1", "clusterpolicies", cp["metadata"]["name"])
            return (obj.get("status") or {}).get("state")

        try:
            wait_until("ClusterPolicy status.state == ready", lambda: state() == "ready", timeout=240, interval=2)
        except pytest.fail.Exception:
            summary = {n: (d.status.desired_number_scheduled, d.status.number_available, d.status.number_ready)
                       for n, d in daemonsets().items()}
            log = testbed.cli("logs", "gpu-operator", "-n", "40", check=False).stdout
            pytest.fail(f"ClusterPolicy state={state()!r}; daemonsets (desired, available, ready)={summary}\n"
                        f"gpu-operator log tail:\n{log}")
        # the operator labelled the GPU nodes for its operands and the DaemonSets run on them
        for n in gpu_nodes:
            labels = core.read_node(n).metadata.labels
            assert labels.get("nvidia.com/gpu.present") == "true", (n, labels)
            assert labels.get("nvidia.com/gpu.deploy.device-plugin") == "true", (n, labels)

        # (the operator may call a DaemonSet ready while its status is still being computed:
        # it treats desiredNumberScheduled == 0 as ready; so wait for the pods themselves)
        def plugin_everywhere():
            status = daemonsets()["nvidia-device-plugin-daemonset"].status
            return status.desired_number_scheduled == len(gpu_nodes) and status.number_available == len(gpu_nodes)

        wait_until("the device plugin DaemonSet available on every GPU node", plugin_everywhere, timeout=90)
    finally:
        custom.delete_cluster_custom_object("nvidia.com", "v1", "clusterpolicies", cp["metadata"]["name"])
