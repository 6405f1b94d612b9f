"""Simulated OLM pure logic: resolution, install modes, CSV/InstallPlan objects, bundles."""
import json
import os
import random

import pytest
from gpusim import bundles, olm
from gpusim_util import cfg

OLM_CFG = cfg()["olm"]


def sub(pkg="gpu-operator-certified", channel="v26.7", source="certified-operators", **spec):
    s = {"name": pkg, "source": source, "sourceNamespace": "openshift-marketplace"}
    if channel is not None:
        s["channel"] = channel
    s.update(spec)
    return {"metadata": {"name": "gpu-operator-certified", "namespace": "nvidia-gpu-operator",
                         "uid": "sub-uid"}, "spec": s}


def test_resolve_head_of_channel():
    r = olm.resolve(sub(), OLM_CFG, True)
    assert r.csv == "gpu-operator-certified.v26.7.0" and r.error is None


def test_resolve_default_channel():
    r = olm.resolve(sub(channel=None), OLM_CFG, True)
    assert r.channel == "v26.7"


def test_resolve_starting_csv_then_head():
    s = sub(channel="stable", startingCSV="gpu-operator-certified.v25.10.1")
    assert olm.resolve(s, OLM_CFG, True).csv == "gpu-operator-certified.v25.10.1"
    assert olm.resolve(s, OLM_CFG, True, installed_csv="gpu-operator-certified.v25.10.1").csv == \
        "gpu-operator-certified.v26.7.0"


@pytest.mark.parametrize("s, exists, msg", [
    (sub(pkg="nope"), True, "no operators found in package nope"),
    (sub(channel="v1.0"), True, "no operators found in channel v1.0 of package"),
    (sub(startingCSV="gpu-operator-certified.v9.9.9"), True, "with name gpu-operator-certified.v9.9.9"),
    (sub(source="missing"), False, "no operators found from catalog missing"),
])
def test_resolution_failures(s, exists, msg):
    r = olm.resolve(s, OLM_CFG, exists)
    assert r.csv is None and msg in r.error and r.error.startswith("constraints not satisfiable")


def test_serving_catalogs_restricts_packages():
    c = dict(OLM_CFG, serving_catalogs=["redhat-operators"])
    assert olm.resolve(sub(), c, True).error
    assert olm.resolve(sub(pkg="nfd", channel="stable", source="redhat-operators"), c, True).csv


@pytest.mark.parametrize("targets, mode", [
    (["nvidia-gpu-operator"], "OwnNamespace"), (["other"], "SingleNamespace"),
    ([], "AllNamespaces"), (None, "AllNamespaces"), (["a", "b"], "MultiNamespace"),
])
def test_install_modes(targets, mode):
    og = {"metadata": {"name": "og"}, "spec": {} if targets is None else {"targetNamespaces": targets}}
    assert olm.install_mode_for(og, "nvidia-gpu-operator") == mode


def test_csv_phase():
    spec = bundles.builtin_csv("gpu-operator")["spec"]
    own = {"metadata": {"name": "og"}, "spec": {"targetNamespaces": ["ns"]}}
    all_ns = {"metadata": {"name": "og2"}, "spec": {}}
    assert olm.csv_phase(spec, [own], "ns")[:2] == ("Succeeded", "InstallSucceeded")
    assert olm.csv_phase(spec, [], "ns")[:2] == ("Failed", "NoOperatorGroup")
    assert olm.csv_phase(spec, [own, all_ns], "ns")[:2] == ("Failed", "TooManyOperatorGroups")
    phase, reason, msg, _og = olm.csv_phase(spec, [all_ns], "ns")
    assert (phase, reason) == ("Failed", "UnsupportedOperatorGroup")
    assert msg == "AllNamespaces InstallModeType not supported, cannot configure to watch all namespaces"


def test_installplan_object():
    ip = olm.make_installplan(sub(), "gpu-operator-certified.v26.7.0", "Manual",
                              rng=random.Random(1))
    assert ip["metadata"]["name"].startswith("install-") and len(ip["metadata"]["name"]) == 13
    assert ip["spec"] == {"approval": "Manual", "approved": False,
                          "clusterServiceVersionNames": ["gpu-operator-certified.v26.7.0"],
                          "generation": 1}
    assert ip["metadata"]["ownerReferences"][0]["kind"] == "Subscription"
    auto = olm.make_installplan(sub(), "x", "Automatic")
    assert auto["spec"]["approved"] is True
    st = olm.installplan_status("RequiresApproval", sub(), "x")
    assert st["phase"] == "RequiresApproval" and st["catalogSources"] == ["certified-operators"]


def test_make_csv_from_builtin_bundle():
    entries = OLM_CFG["packages"]["gpu-operator-certified"]["channels"]["stable"]
    csv = olm.make_csv(bundles.builtin_csv("gpu-operator"), "gpu-operator-certified.v26.3.3",
                       "gpu-operator-certified", entries, "nvidia-gpu-operator", "og", ["nvidia-gpu-operator"])
    assert csv["metadata"]["name"] == "gpu-operator-certified.v26.3.3"
    assert csv["spec"]["version"] == "26.3.3"
    assert csv["spec"]["replaces"] == "gpu-operator-certified.v25.10.1"
    assert csv["metadata"]["annotations"]["olm.targetNamespaces"] == "nvidia-gpu-operator"
    ex = olm.alm_examples(csv)
    cp = [e for e in ex if e["kind"] == "ClusterPolicy"][0]
    for section in ("daemonsets", "dcgm", "dcgmExporter", "devicePlugin", "driver", "gfd",
                    "nodeStatusExporter", "operator", "toolkit"):
        assert section in cp["spec"], section


def test_bundle_from_module_dir(tmp_path, monkeypatch):
    mod = tmp_path / "gpu-operator@v1"
    manifests = mod / "bundle" / "manifests"
    manifests.mkdir(parents=True)
    doc = bundles.builtin_csv("gpu-operator")
    doc["metadata"]["annotations"]["olm.skipRange"] = ">=1.9.0 <25.10.1"
    doc["spec"]["relatedImages"] = [{"name": "driver-image", "image": "example.invalid/driver@sha256:0"}]
    import yaml
    (manifests / "gpu-operator-certified.clusterserviceversion.yaml").write_text(yaml.safe_dump(doc))
    bundles._bundle_csv_cached.cache_clear()
    got, source = bundles.bundle_csv("gpu-operator", {"gpu_operator_module_dir": str(mod)})
    assert source.startswith("module:") and got["spec"]["relatedImages"][0]["name"] == "driver-image"
    csv = olm.make_csv(got, "gpu-operator-certified.v26.7.0", "gpu-operator-certified",
                       ["gpu-operator-certified.v26.7.0"], "ns")
    assert csv["metadata"]["annotations"]["olm.skipRange"] == ">=1.9.0 <26.7.0"
    missing, source = bundles.bundle_csv("gpu-operator", {"gpu_operator_module_dir": str(tmp_path / "x")})
    assert source == "builtin"


def test_real_module_bundle_if_cached():
    """When the pinned gpu-operator module is in the Go module cache, its CSV is used."""
    moddir = bundles.module_dir("gpu-operator")
    if not moddir or not os.path.exists(os.path.join(moddir, "bundle", "manifests")):
        pytest.skip("gpu-operator module not in the Go module cache")
    doc, source = bundles.bundle_csv("gpu-operator")
    assert source.startswith("module:")
    kinds = [e["kind"] for e in json.loads(doc["metadata"]["annotations"]["alm-examples"])]
    assert "ClusterPolicy" in kinds and doc["spec"]["relatedImages"]


def test_escape_module_path():
    assert bundles.escape_module_path("github.com/NVIDIA/gpu-operator") == \
        "github.com/!n!v!i!d!i!a/gpu-operator"


def test_default_catalog_sources_follow_operatorhub():
    assert len(olm.default_catalog_sources(OLM_CFG, None)) == 2
    hub = {"spec": {"disableAllDefaultSources": True}}
    assert olm.default_catalog_sources(OLM_CFG, hub) == []
    hub = {"spec": {"disableAllDefaultSources": True,
                    "sources": [{"name": "redhat-operators", "disabled": False}]}}
    assert [c["name"] for c in olm.default_catalog_sources(OLM_CFG, hub)] == ["redhat-operators"]
    hub = {"spec": {"sources": [{"name": "certified-operators", "disabled": True}]}}
    assert [c["name"] for c in olm.default_catalog_sources(OLM_CFG, hub)] == ["redhat-operators"]


def test_conditions_keep_transition_time():
    c = olm.set_condition([], "ResolutionFailed", "True", "R", "m", now="t1")
    c = olm.set_condition(c, "ResolutionFailed", "True", "R", "m2", now="t2")
    assert c[0]["lastTransitionTime"] == "t1" and c[0]["message"] == "m2"
    assert olm.set_condition(c, "ResolutionFailed", None) == []


def test_package_manifest_shape():
    pkg = OLM_CFG["packages"]["gpu-operator-certified"]
    pm = olm.package_manifest("gpu-operator-certified", pkg, "openshift-marketplace", OLM_CFG, {})
    assert pm["status"]["defaultChannel"] == "v26.7"
    stable = [c for c in pm["status"]["channels"] if c["name"] == "stable"][0]
    assert stable["currentCSV"] == "gpu-operator-certified.v26.7.0"


def test_csv_version():
    assert olm.csv_version("gpu-operator-certified.v26.7.0") == "26.7.0"
    assert olm.csv_version("nfd.4.18.0-202509100907") == "4.18.0-202509100907"


def test_component_label_fits_label_rules():
    key = olm.component_label("gpu-operator-certified", "t-" + "x" * 80)
    assert len(key.split("/", 1)[1]) <= 63
    ip = olm.make_installplan(sub(), "x", "Automatic")
    assert list(ip["metadata"]["labels"]) == ["operators.coreos.com/gpu-operator-certified.nvidia-gpu-operator"]
