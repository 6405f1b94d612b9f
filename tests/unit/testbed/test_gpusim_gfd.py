"""Device plugin resources and GFD labels (gpusim.gfd) per MIG strategy and sharing."""
import pytest
from gpusim import gfd, migparted, sharing
from gpusim_util import TS_CONFIG, product

A100 = product("A100-SXM4-40GB")
DRIVER = {"version": "580.95.05", "cuda": "13.0"}


def mig_all(devices, n=8):
    return [{"mig": True, "devices": dict(devices)} for _i in range(n)]


NO_MIG = migparted.initial_state(8)
BALANCED = mig_all({"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1})
ALL_1G = mig_all({"1g.5gb": 7})


def test_full_gpus():
    for strategy in ("none", "single", "mixed"):
        assert gfd.plugin_resources(A100, NO_MIG, strategy, None) == {"nvidia.com/gpu": 8}


def test_single_uniform_mig():
    assert gfd.plugin_resources(A100, ALL_1G, "single", None) == {"nvidia.com/gpu": 56}


def test_none_strategy_ignores_mig():
    assert gfd.plugin_resources(A100, ALL_1G, "none", None) == {"nvidia.com/gpu": 8}


def test_mixed():
    assert gfd.plugin_resources(A100, BALANCED, "mixed", None) == {
        "nvidia.com/mig-1g.5gb": 16, "nvidia.com/mig-2g.10gb": 8, "nvidia.com/mig-3g.20gb": 8}


def test_mixed_with_some_full_gpus_and_me_profile():
    state = NO_MIG[:6] + [{"mig": True, "devices": {"1g.5gb+me": 1, "1g.5gb": 6}}] * 2
    assert gfd.plugin_resources(A100, state, "mixed", None) == {
        "nvidia.com/gpu": 6, "nvidia.com/mig-1g.5gb.me": 2, "nvidia.com/mig-1g.5gb": 12}


@pytest.mark.parametrize("state, msg", [
    (BALANCED, "more than one MIG device type"),
    (NO_MIG[:4] + ALL_1G[:4], "same migEnabled value"),
    ([{"mig": True, "devices": {}}] + ALL_1G[:7], "has no MIG devices"),
])
def test_single_invalid_layouts_crash_the_plugin(state, msg):
    with pytest.raises(gfd.PluginError, match=msg):
        gfd.plugin_resources(A100, state, "single", None)


def test_time_slicing_multiplies():
    ts = sharing.parse(TS_CONFIG)
    assert gfd.plugin_resources(A100, NO_MIG, "single", ts) == {"nvidia.com/gpu": 32}
    assert gfd.plugin_resources(A100, ALL_1G, "single", ts) == {"nvidia.com/gpu": 224}


def test_rename_by_default_moves_to_shared_resource():
    c = sharing.parse("sharing: {timeSlicing: {renameByDefault: true, resources: "
                      "[{name: nvidia.com/gpu, replicas: 3}]}}")
    assert gfd.plugin_resources(A100, NO_MIG, "single", c) == {"nvidia.com/gpu.shared": 24}


def test_time_slicing_mixed_mig_resource():
    c = sharing.parse("sharing: {timeSlicing: {resources: [{name: nvidia.com/mig-1g.5gb, replicas: 2}]}}")
    assert gfd.plugin_resources(A100, BALANCED, "mixed", c) == {
        "nvidia.com/mig-1g.5gb": 32, "nvidia.com/mig-2g.10gb": 8, "nvidia.com/mig-3g.20gb": 8}


def test_mps_rules():
    mps = sharing.parse("sharing: {mps: {resources: [{name: nvidia.com/gpu, replicas: 4}]}}")
    assert gfd.plugin_resources(A100, NO_MIG, "single", mps) == {"nvidia.com/gpu": 32}
    with pytest.raises(gfd.PluginError, match="mixed is not supported with MPS"):
        gfd.plugin_resources(A100, NO_MIG, "mixed", mps)
    with pytest.raises(gfd.PluginError, match="not supported for MIG devices"):
        gfd.plugin_resources(A100, ALL_1G, "single", mps)
    too_many = sharing.parse("sharing: {mps: {resources: [{name: nvidia.com/gpu, replicas: 49}]}}")
    with pytest.raises(gfd.PluginError, match="at most 48"):
        gfd.plugin_resources(A100, NO_MIG, "single", too_many)


def labels(state, strategy, cfg=None, prod=A100):
    return gfd.gfd_labels(prod, state, strategy, cfg or sharing.empty_config(), DRIVER)


def nv(lab, want):
    """The nvidia.com/<key> labels for the keys of ``want``, to compare with it in one assert."""
    return {k: lab.get("nvidia.com/" + k) for k in want}


def test_labels_full_gpu():
    want = {"gpu.product": "NVIDIA-A100-SXM4-40GB", "gpu.count": "8", "gpu.replicas": "1",
            "gpu.sharing-strategy": "none", "gpu.memory": "40960", "gpu.family": "ampere",
            "gpu.compute.major": "8", "gpu.compute.minor": "0", "mig.capable": "true",
            "mig.strategy": "single", "mps.capable": "false",
            "cuda.driver-version.full": "580.95.05", "gpu.present": "true"}
    assert nv(labels(NO_MIG, "single"), want) == want


def test_labels_none_strategy_has_no_strategy_label():
    assert "nvidia.com/mig.strategy" not in labels(NO_MIG, "none")


def test_labels_time_slicing_shared_suffix():
    want = {"gpu.product": "NVIDIA-A100-SXM4-40GB-SHARED", "gpu.replicas": "4",
            "gpu.sharing-strategy": "time-slicing"}
    assert nv(labels(NO_MIG, "single", sharing.parse(TS_CONFIG)), want) == want
    renamed = sharing.parse("sharing: {timeSlicing: {renameByDefault: true, resources: "
                            "[{name: nvidia.com/gpu, replicas: 4}]}}")
    assert labels(NO_MIG, "single", renamed)["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-40GB"


def test_labels_single_mig():
    want = {"gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb-SHARED", "gpu.count": "56",
            "gpu.replicas": "4", "gpu.memory": "4864", "gpu.slices.gi": "1", "gpu.family": "ampere"}
    assert nv(labels(ALL_1G, "single", sharing.parse(TS_CONFIG)), want) == want


def test_labels_single_invalid():
    want = {"gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-INVALID", "gpu.count": "0",
            "gpu.replicas": "0", "gpu.sharing-strategy": "", "gpu.memory": "0"}
    assert nv(labels(BALANCED, "single"), want) == want


def test_labels_mixed():
    want = {"gpu.product": "NVIDIA-A100-SXM4-40GB",
            "gpu.replicas": "0",  # MIG-enabled GPUs are labelled without sharing
            "mig-3g.20gb.count": "8", "mig-3g.20gb.product": "NVIDIA-A100-SXM4-40GB-MIG-3g.20gb",
            "mig-3g.20gb.memory": "19968", "mig-3g.20gb.slices.gi": "3",
            "mig-1g.5gb.count": "16", "mig.strategy": "mixed"}
    assert nv(labels(BALANCED, "mixed"), want) == want


@pytest.mark.parametrize("name, product_label, family", [
    ("T4", "Tesla-T4", "turing"), ("L40S", "NVIDIA-L40S", "ada-lovelace"),
    ("H100-80GB-HBM3", "NVIDIA-H100-80GB-HBM3", "hopper"), ("H200", "NVIDIA-H200", "hopper"),
    ("A30", "NVIDIA-A30", "ampere"), ("A100-SXM4-80GB", "NVIDIA-A100-SXM4-80GB", "ampere"),
])
def test_labels_per_model(name, product_label, family):
    p = product(name)
    lab = labels(migparted.initial_state(4), "single", prod=p)
    assert lab["nvidia.com/gpu.product"] == product_label
    assert lab["nvidia.com/gpu.family"] == family
    assert lab["nvidia.com/mig.capable"] == ("true" if p["mig_capable"] else "false")


def test_mps_labels():
    mps = sharing.parse("sharing: {mps: {resources: [{name: nvidia.com/gpu, replicas: 4}]}}")
    lab = labels(NO_MIG, "single", mps)
    assert lab["nvidia.com/mps.capable"] == "true"
    assert lab["nvidia.com/gpu.sharing-strategy"] == "mps"
    with pytest.raises(gfd.PluginError):
        labels(ALL_1G, "single", mps)


def test_owned_labels():
    assert gfd.is_owned_label("nvidia.com/gpu.product")
    assert gfd.is_owned_label("nvidia.com/mig-1g.5gb.count")
    assert gfd.is_owned_label("nvidia.com/mig-1g.5gb.me.engines.ofa")
    for k in ("nvidia.com/gpu.deploy.device-plugin", "nvidia.com/gpu.present", "nvidia.com/mig.config",
              "nvidia.com/mig.config.state", "nvidia.com/gpu.workload.config",
              "nvidia.com/device-plugin.config"):
        assert not gfd.is_owned_label(k), k


def test_running_driver_follows_the_driver_pod_image():
    default = {"version": "580.95.05", "cuda": "13.0"}
    assert gfd.running_driver([], default) == default
    # OLM's DRIVER_IMAGE is a digest: no version in it, the config's stays
    assert gfd.running_driver(["nvcr.io/nvidia/driver@sha256:838f50e3"], default) == default
    # the operator tags <version>-<os tag>; the newest pod (last) wins; a registry port is not a tag
    assert gfd.running_driver(["nvcr.io/nvidia/driver:580.95.05-rhcos4.18",
                               "registry:5000/nvidia/driver:580.105.08-rhcos4.18"], default) == {
        "version": "580.105.08", "cuda": "13.0"}
    assert gfd.running_driver(["nvcr.io/nvidia/driver:latest"], default) == default
    assert gfd.running_driver(["nvcr.io/nvidia/driver:570.86"], default)["version"] == "570.86"
