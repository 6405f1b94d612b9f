"""machine-api, NFD, config, contract, work queue and informer of gpusim."""
import threading
import time

import pytest
from gpusim import config as config_mod
from gpusim import contract as C
from gpusim import machineapi as M
from gpusim import nfd
from gpusim.controller import WorkQueue
from gpusim.informer import Informer
from gpusim.kube import ApiError, Resource
from gpusim_util import cfg

MA = cfg()["machine_api"]


def machineset(annotations=None, instance_type=None, labels=None, taints=None, replicas=2):
    value = {"instanceType": instance_type} if instance_type else {}
    return {"metadata": {"name": "gpu-a", "namespace": "openshift-machine-api", "uid": "ms-uid",
                         "annotations": annotations or {}, "generation": 3},
            "spec": {"replicas": replicas, "template": {
                "metadata": {"labels": {"machine.openshift.io/cluster-api-machine-role": "worker"}},
                "spec": {"metadata": {"labels": labels or {}}, "taints": taints or [],
                         "providerSpec": {"value": value}}}}}


def test_hardware_from_gpusim_annotations():
    hw = M.hardware(machineset({C.ANN_PRODUCT: "NVIDIA-H100-80GB-HBM3", C.ANN_GPUS: "4"}), MA)
    assert (hw["product"], hw["gpus"]) == ("NVIDIA-H100-80GB-HBM3", 4)


def test_hardware_from_instance_type():
    hw = M.hardware(machineset(instance_type="p4d.24xlarge"), MA)
    assert (hw["product"], hw["gpus"], hw["cpu"]) == ("A100-SXM4-40GB", 8, 96)
    hw = M.hardware(machineset(instance_type="g6e.xlarge"), MA)
    assert (hw["product"], hw["gpus"]) == ("L40S", 1)


def test_hardware_from_scale_from_zero_annotation():
    hw = M.hardware(machineset({M.GPU_ANN: "2", M.VCPU_ANN: "8", M.MEM_ANN: "32768"},
                               labels={"nvidia.com/gpu.product": "Tesla-T4"}), MA)
    assert (hw["product"], hw["gpus"], hw["cpu"], hw["memory_mb"]) == ("Tesla-T4", 2, 8, 32768)


def test_hardware_cpu_only():
    hw = M.hardware(machineset(instance_type="m5.xlarge"), MA)
    assert hw["product"] is None and hw["gpus"] == 0


def test_machine_and_node_objects():
    ms = machineset({C.ANN_PRODUCT: "A30", C.ANN_GPUS: "2"}, labels={"cluster-api/accelerator": "A30"},
                    taints=[{"key": "nvidia.com/gpu", "effect": "NoSchedule"}],
                    instance_type="custom")
    m = M.machine_object(ms, "gpu-a-abcde")
    assert m["metadata"]["labels"][M.MS_LABEL] == "gpu-a"
    assert m["metadata"]["ownerReferences"][0]["uid"] == "ms-uid"
    n = M.node_object(m, M.hardware(ms, MA), "v1.36.3", MA)
    assert n["metadata"]["annotations"][C.ANN_KWOK] == "fake"
    assert n["metadata"]["annotations"][M.MACHINE_ANN] == "openshift-machine-api/gpu-a-abcde"
    assert n["metadata"]["annotations"][C.ANN_PRODUCT] == "A30"
    assert n["metadata"]["labels"]["cluster-api/accelerator"] == "A30"
    assert n["metadata"]["labels"]["node.kubernetes.io/instance-type"] == "custom"
    assert n["spec"]["taints"] == [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]
    assert n["spec"]["providerID"] == "kwok://gpu-a-abcde"
    assert n["status"]["nodeInfo"]["kubeletVersion"] == "v1.36.3"
    assert "nvidia.com/gpu" not in n["status"]["capacity"]     # the device plugin adds it


def test_scale_down_order():
    ms = [{"metadata": {"name": "a", "creationTimestamp": "2026-01-01T00:00:00Z"}},
          {"metadata": {"name": "b", "creationTimestamp": "2026-01-02T00:00:00Z"}},
          {"metadata": {"name": "c", "creationTimestamp": "2026-01-01T00:00:00Z",
                        "annotations": {M.DELETE_ANN: "true"}}}]
    assert [m["metadata"]["name"] for m in M.to_delete(ms, 2)] == ["c", "b"]
    assert M.to_delete(ms, 0) == []


def test_machineset_status():
    ms = machineset()
    machines = [{"metadata": {"name": "x"}}, {"metadata": {"name": "y"}}]
    st = M.machineset_status(ms, machines, {"x"})
    assert st == {"replicas": 2, "fullyLabeledReplicas": 2, "readyReplicas": 1,
                  "availableReplicas": 1, "observedGeneration": 3}


def test_nfd_labels():
    os_cfg = {"id": "rhcos", "version_id": "4.18", "kernel": "5.14.0-427.50.1.el9_4.x86_64"}
    lab = nfd.nfd_labels(True, os_cfg)
    assert lab[nfd.PCI_NVIDIA] == "true"
    assert lab[nfd.PREFIX + "system-os_release.ID"] == "rhcos"
    assert lab[nfd.PREFIX + "system-os_release.VERSION_ID.major"] == "4"
    assert lab[nfd.PREFIX + "kernel-version.full"] == "5.14.0-427.50.1.el9_4.x86_64"
    assert lab[nfd.PREFIX + "kernel-version.minor"] == "14"
    assert nfd.PCI_NVIDIA not in nfd.nfd_labels(False, os_cfg)
    assert nfd.label_patch(lab, True, os_cfg) == {}
    assert nfd.label_patch({}, False, os_cfg)[nfd.PREFIX + "system-os_release.ID"] == "rhcos"


def test_config_defaults_and_validation():
    c = config_mod.load(None)
    assert c["gfd"] == c["mig_manager"] == "auto"
    assert c["mig_reconfigure_seconds"] == 2.0
    c = config_mod.load("cluster: {operator_namespace: nvidia-gpu-operator}\n"
                        "simulation: {mig_reconfigure_seconds: 5, olm: {install_seconds: 0}}")
    assert c["operator_namespace"] == "nvidia-gpu-operator"
    assert c["mig_reconfigure_seconds"] == 5.0
    assert "gpu-operator-certified" in c["olm"]["packages"]      # deep merge keeps defaults
    for bad in ("simulation: {device_plugin: sometimes}", "simulation: {nfd: never}",
                "simulation: {agents: [dcgm]}", "simulation: {mig_reconfigure_seconds: -1}",
                "simulation: []",
                "simulation: {olm: {packages: {x: {channels: {a: [x.v1]}, default_channel: b}}}}"):
        with pytest.raises(config_mod.ConfigError):
            config_mod.load(bad)


def test_contract_helpers():
    n = {"metadata": {"annotations": {C.ANN_PRODUCT: "A30", C.ANN_INJECT: "slow, fail"}}}
    assert C.node_product_and_count(n, 8) == ("A30", 8)
    assert C.injections(n) == {"slow", "fail"}
    n = {"metadata": {"labels": {C.ANN_PRODUCT: "A30", C.ANN_GPUS: "2"}}}
    assert C.node_product_and_count(n) == ("A30", 2)
    assert C.node_product_and_count({"metadata": {}}) == (None, 0)
    assert C.is_gpu_resource("nvidia.com/mig-1g.5gb") and C.is_gpu_resource("nvidia.com/gpu.shared")
    assert not C.is_gpu_resource("nvidia.com/gpumem") and not C.is_gpu_resource("cpu")


def test_workqueue_dedup_delay_and_exclusivity():
    q = WorkQueue()
    q.add("a")
    q.add("a")
    q.add("b")
    assert q.get(0.1) == "a"
    q.add("a")                      # re-added while processing: not handed out twice
    assert q.get(0.1) == "b"
    assert q.get(0.05) is None
    q.done("a")
    assert q.get(0.1) == "a"
    q.done("a")
    q.done("b")
    t0 = time.monotonic()
    q.add_after("c", 0.2)
    assert q.get(1.0) == "c"
    assert time.monotonic() - t0 >= 0.19
    q.close()
    assert q.get(0.1) is None


class FakeKube(object):
    """list/watch/exists double for the Informer."""

    def __init__(self):
        self.lists = []
        self.watches = []
        self.objects = {}
        self.rv = 10

    def exists(self, res, refresh=False):
        return True

    def list(self, res, namespace=None, label_selector=None, field_selector=None):
        self.lists.append(self.rv)
        return [dict(o) for o in self.objects.values()], str(self.rv)

    def watch(self, res, rv, namespace=None, timeout_seconds=240, label_selector=None,
              field_selector=None):
        self.watches.append(rv)
        if len(self.watches) == 1:
            yield "ADDED", {"metadata": {"name": "n2", "resourceVersion": "11"}}
            yield "MODIFIED", {"metadata": {"name": "n1", "resourceVersion": "12"}, "x": 2}
            yield "BOOKMARK", {"metadata": {"resourceVersion": "13"}}
            yield "ERROR", {"code": 410, "message": "too old"}
        elif len(self.watches) == 2:
            yield "DELETED", {"metadata": {"name": "n2", "resourceVersion": "14"}}
            raise ApiError(500, "boom")
        else:
            time.sleep(0.05)
            return


def test_informer_list_watch_relist():
    kube = FakeKube()
    kube.objects["n1"] = {"metadata": {"name": "n1", "resourceVersion": "5"}, "x": 1}
    stop = threading.Event()
    inf = Informer(kube, Resource("", "v1", "nodes", False), stop, resync=300)
    seen = []
    inf.add_handler(lambda e, o, old: seen.append((e, o["metadata"]["name"])))
    inf.add_indexer("x", lambda o: [str(o.get("x"))])
    inf.start()
    assert inf.wait_synced(2)
    deadline = time.monotonic() + 5
    while len(kube.watches) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    stop.set()
    inf.join(2)
    assert ("ADDED", "n1") in seen and ("ADDED", "n2") in seen and ("MODIFIED", "n1") in seen
    assert ("DELETED", "n2") in seen            # the relist after 410 drops it
    assert len(kube.lists) >= 2                  # 410 -> relist
    assert kube.watches[0] == "10"
    # after the relist the store matches the server (n2 was never created there)
    assert sorted(inf.keys()) == ["n1"]
    assert inf.by_index("x", "1")[0]["metadata"]["name"] == "n1"


def test_informer_update_local_keeps_newest_and_notifies_once():
    stop = threading.Event()
    inf = Informer(FakeKube(), Resource("", "v1", "nodes", False), stop)
    seen = []
    inf.add_handler(lambda e, o, old: seen.append((e, o["v"], old and old["v"])))
    inf.update_local({"metadata": {"name": "a", "resourceVersion": "7"}, "v": 1})
    inf.update_local({"metadata": {"name": "a", "resourceVersion": "6"}, "v": 0})
    inf.update_local({"metadata": {"name": "a", "resourceVersion": "8"}, "v": 2})
    assert inf.get("a")["v"] == 2
    # other agents must see a change another agent wrote (old != new in the handler)
    assert seen == [("ADDED", 1, None), ("MODIFIED", 2, 1)]


def test_dra_plugin_start_seconds_defaults_to_at_once():
    assert config_mod.load(None)["dra_plugin_start_seconds"] == 0.0
    assert config_mod.load("simulation: {dra_plugin_start_seconds: 5}")["dra_plugin_start_seconds"] == 5.0
    with pytest.raises(config_mod.ConfigError):
        config_mod.load("simulation: {dra_plugin_start_seconds: -1}")
