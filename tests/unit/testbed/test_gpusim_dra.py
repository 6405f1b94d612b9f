"""The simulated NVIDIA DRA kubelet plugin's ResourceSlice (gpusim.dra): devices, names, attributes, updates."""
import json

import pytest

from gpusim import contract as C
from gpusim import dra
from gpusim_util import cfg, node, product

A100 = product("A100-SXM4-40GB")
DRIVER = cfg()["driver"]


def mig_node(layout, gpus=8):
    """An A100 node whose MIG manager applied ``layout`` (a list of {profile: count} per GPU; None = MIG off)."""
    state = [{"mig": devs is not None, "devices": devs or {}} for devs in layout]
    return node(gpus=gpus, annotations={C.ANN_MIG_APPLIED: json.dumps({"config": "test", "gpus": state})})


def test_semver_as_the_driver_formats_versions():
    assert dra.semver("580.95.05") == "580.95.5"
    assert dra.semver("13.0") == "13.0.0"
    assert dra.semver("8.0") == "8.0.0"
    with pytest.raises(ValueError):
        dra.semver("none")


def test_whole_gpus_when_mig_is_off():
    devs = dra.devices(node(gpus=8), A100, 8, DRIVER)
    assert [d["name"] for d in devs] == ["gpu-%d" % i for i in range(8)]
    gpu = devs[0]
    attrs = gpu["attributes"]
    assert attrs["type"] == {"string": "gpu"}
    assert attrs["productName"] == {"string": "NVIDIA A100-SXM4-40GB"}
    assert attrs["architecture"] == {"string": "Ampere"} and attrs["brand"] == {"string": "Nvidia"}
    assert attrs["cudaComputeCapability"] == {"version": "8.0.0"}
    assert attrs["driverVersion"] == {"version": "580.95.5"}
    assert attrs["cudaDriverVersion"] == {"version": "13.0.0"}
    assert attrs["uuid"]["string"].startswith("GPU-")
    assert gpu["capacity"] == {"memory": {"value": str(40960 * 2 ** 20)}}
    assert len({d["attributes"]["uuid"]["string"] for d in devs}) == 8


def test_mig_devices_replace_their_gpu_and_are_named_like_the_driver():
    n = mig_node([{"1g.5gb": 7}, {"3g.20gb": 2}, {"1g.5gb+me": 1}] + [None] * 5)
    devs = {d["name"]: d for d in dra.devices(n, A100, 8, DRIVER)}
    assert "gpu-0" not in devs and "gpu-1" not in devs and "gpu-3" in devs
    assert ["gpu-0-mig-1g5gb-19-%d" % s for s in range(7)] == sorted(k for k in devs if k.startswith("gpu-0-"))
    assert sorted(k for k in devs if k.startswith("gpu-1-")) == ["gpu-1-mig-3g20gb-9-0", "gpu-1-mig-3g20gb-9-4"]
    assert "gpu-2-mig-1g5gb-me-20-0" in devs
    mig = devs["gpu-1-mig-3g20gb-9-4"]
    assert mig["attributes"]["type"] == {"string": "mig"}
    assert mig["attributes"]["profile"] == {"string": "3g.20gb"}
    gpu1 = dra.gpu_device("gpu-0", A100, DRIVER, 1)
    assert mig["attributes"]["parentUUID"] == gpu1["attributes"]["uuid"]
    cap = mig["capacity"]
    assert cap["memory"] == {"value": str(A100["profiles"]["3g.20gb"]["memory_mib"] * 2 ** 20)}
    assert cap["multiprocessors"] == {"value": "42"}
    assert sorted(k for k in cap if k.startswith("memorySlice")) == ["memorySlice%d" % i for i in range(4, 8)]


def test_mig_enabled_gpu_without_devices_publishes_nothing():
    devs = dra.devices(mig_node([{}] + [None] * 7), A100, 8, DRIVER)
    assert [d["name"] for d in devs] == ["gpu-%d" % i for i in range(1, 8)]


def test_rfc1123_device_names():
    assert dra.mig_device_name(3, "1g.10gb+me", 20, 6) == "gpu-3-mig-1g10gb-me-20-6"


def current_slice(n, devs, generation=1, name="00000-gpu.nvidia.com-gpu-0-abcde"):
    s = dra.new_slice(n, devs)
    s["metadata"] = {"name": name}
    s["spec"]["pool"]["generation"] = generation
    return s


def test_plan_creates_updates_in_place_and_deletes():
    n = node(gpus=2)
    action, new = dra.plan(n, A100, 2, DRIVER, True, [])
    assert action == "create"
    assert new["metadata"]["generateName"] == "00000-gpu.nvidia.com-gpu-0-"   # index: 5 hex digits at least
    assert new["metadata"]["ownerReferences"][0]["kind"] == "Node"
    assert new["spec"]["pool"] == {"name": "gpu-0", "generation": 1, "resourceSliceCount": 1}
    assert new["spec"]["nodeName"] == "gpu-0" and new["spec"]["driver"] == "gpu.nvidia.com"
    cur = current_slice(n, new["spec"]["devices"], generation=3)
    assert dra.plan(n, A100, 2, DRIVER, True, [cur]) is None
    changed = mig_node([{"7g.40gb": 1}, None], gpus=2)
    action, upd = dra.plan(changed, A100, 2, DRIVER, True, [cur])
    assert action == "update" and upd["metadata"]["name"] == cur["metadata"]["name"]
    assert upd["spec"]["pool"]["generation"] == 3   # one slice updated in place keeps the generation
    assert [d["name"] for d in upd["spec"]["devices"]] == ["gpu-0-mig-7g40gb-0-0", "gpu-1"]
    assert dra.plan(n, A100, 2, DRIVER, False, [cur]) == ("delete", [cur["metadata"]["name"]])
    assert dra.plan(n, None, 0, DRIVER, True, [cur]) == ("delete", [cur["metadata"]["name"]])
    assert dra.plan(n, A100, 2, DRIVER, False, []) is None


def test_plan_removes_extra_slices_of_the_pool():
    n = node(gpus=1)
    devs = dra.devices(n, A100, 1, DRIVER)
    a, b = current_slice(n, devs, name="00000-a"), current_slice(n, devs, name="00000-b")
    assert dra.plan(n, A100, 1, DRIVER, True, [b, a]) == ("delete", ["00000-b"])


def test_plugin_wait_publishes_the_slice_the_start_time_after_the_pod_ran():
    # simulation.dra_plugin_start_seconds: 0 (the default) publishes at once
    assert dra.plugin_wait(100.0, 100.0, 0.0) == 0.0
    assert dra.plugin_wait(100.0, 101.5, 5.0) == 3.5
    assert dra.plugin_wait(100.0, 105.0, 5.0) == 0.0
    assert dra.plugin_wait(100.0, 200.0, 5.0) == 0.0
    # a pod already Running when the simulator started has long started
    assert dra.plugin_wait(None, 100.0, 5.0) == 0.0
