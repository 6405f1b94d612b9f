"""mig-manager steps (gpusim.mig): validate -> pending -> success|failed, labels, persistence."""
import json

import pytest
from gpusim import contract as C
from gpusim import mig, migparted
from gpusim_util import apply_step, cfg, cluster_policy, configmap, node, product

A100 = product("A100-SXM4-40GB")
DEPLOY = {"nvidia.com/gpu.deploy.device-plugin": "true",
          "nvidia.com/gpu.deploy.gpu-feature-discovery": "true",
          "nvidia.com/gpu.deploy.dcgm-exporter": "false",
          "nvidia.com/gpu.deploy.dcgm": "true",
          "nvidia.com/gpu.deploy.mig-manager": "true"}
GEN = migparted.generated_spec(A100)


def mig_node(value, **kw):
    labels = dict(DEPLOY)
    labels[C.L_MIG_CONFIG] = value
    return node(labels=labels, **kw)


def run(n, value, pods=(), fail=False, spec=GEN):
    step = mig.begin(n, A100, spec, value, 8)
    n = apply_step(n, step)
    states = [step.state]
    if step.state == "pending":
        step = mig.finish(n, A100, spec, value, 8, list(pods), fail)
        n = apply_step(n, step)
        states.append(step.state)
    return n, states, step


def applied(n):
    return json.loads(n["metadata"]["annotations"][C.ANN_MIG_APPLIED])


def test_pending_pauses_clients_then_success_restores():
    n = mig_node("all-1g.5gb")
    step = mig.begin(n, A100, GEN, "all-1g.5gb", 8)
    assert step.state == "pending"
    assert step.labels[C.L_MIG_STATE] == "pending"
    assert step.labels["nvidia.com/gpu.deploy.device-plugin"] == C.PAUSED
    assert "nvidia.com/gpu.deploy.dcgm-exporter" not in step.labels      # "false" stays false
    assert step.labels["nvidia.com/gpu.deploy.nvsm"] == C.PAUSED          # absent -> paused
    assert "nvidia.com/gpu.deploy.mig-manager" not in step.labels
    n = apply_step(n, step)
    step = mig.finish(n, A100, GEN, "all-1g.5gb", 8, [])
    n = apply_step(n, step)
    labels = n["metadata"]["labels"]
    assert labels[C.L_MIG_STATE] == "success"
    assert labels["nvidia.com/gpu.deploy.device-plugin"] == "true"
    assert labels["nvidia.com/gpu.deploy.dcgm-exporter"] == "false"
    assert labels["nvidia.com/gpu.deploy.nvsm"] == "true"
    assert applied(n) == {"config": "all-1g.5gb",
                          "gpus": [{"mig": True, "devices": {"1g.5gb": 7}}] * 8}


def test_already_applied_goes_straight_to_success():
    n, states, _step = run(mig_node("all-1g.5gb"), "all-1g.5gb")
    assert states == ["pending", "success"]
    n, states, _step = run(n, "all-1g.5gb")
    assert states == ["success"]
    n, states, _step = run(mig_node("all-disabled"), "all-disabled")     # factory state
    assert states == ["success"]
    assert applied(n)["gpus"] == migparted.initial_state(8)


def test_unknown_config_fails_without_pending():
    n, states, step = run(mig_node("no-such-config"), "no-such-config")
    assert states == ["failed"]
    assert "does not exist" in step.error
    assert n["metadata"]["annotations"][C.ANN_MIG_ERROR] == step.error


def test_bad_config_file_fails():
    err = migparted.MigPartedError("unknown version: v2")
    step = mig.begin(mig_node("x"), A100, err, "x", 8)
    assert step.state == "failed" and "unknown version" in step.error


def test_non_fitting_geometry_fails_and_clears_first_gpu():
    spec = migparted.parse_spec("""version: v1
mig-configs:
  too-big: [{devices: all, mig-enabled: true, mig-devices: {"3g.20gb": 2, "1g.5gb": 1}}]
""")
    n, states, step = run(mig_node("too-big"), "too-big", spec=spec)
    assert states == ["pending", "failed"]
    assert "all orderings failed" in step.error
    gpus = applied(n)["gpus"]
    assert gpus[0] == {"mig": True, "devices": {}}       # mig-parted cleared the failing GPU
    assert n["metadata"]["labels"]["nvidia.com/gpu.deploy.device-plugin"] == "true"


def test_running_gpu_pod_fails_and_changes_nothing():
    n0 = mig_node("all-1g.5gb")
    n, states, step = run(n0, "all-1g.5gb", pods=["ns/train-0"])
    assert states == ["pending", "failed"]
    assert "ns/train-0" in step.error
    assert C.ANN_MIG_APPLIED not in n["metadata"]["annotations"]


def test_injected_failure():
    n, states, step = run(mig_node("all-1g.5gb"), "all-1g.5gb", fail=True)
    assert states == ["pending", "failed"] and "injected" in step.error


def test_success_clears_previous_error():
    n, _s, _step = run(mig_node("nope"), "nope")
    assert C.ANN_MIG_ERROR in n["metadata"]["annotations"]
    n["metadata"]["labels"][C.L_MIG_CONFIG] = "all-balanced"
    n, states, step = run(n, "all-balanced")
    assert states[-1] == "success"
    assert C.ANN_MIG_ERROR not in n["metadata"]["annotations"]


def test_resolve_spec_sources():
    c = cfg()
    assert mig.resolve_spec(None, {}, A100, c)[0] == "generated"
    default_cm = configmap(mig.DEFAULT_CM, {"config.yaml": "version: v1\nmig-configs:\n"
                                            "  only: [{devices: all, mig-enabled: false}]\n"})
    src, spec = mig.resolve_spec(cluster_policy(), {mig.DEFAULT_CM: default_cm}, A100, c)
    assert src == "configmap/" + mig.DEFAULT_CM and list(spec["mig-configs"]) == ["only"]
    custom = configmap("custom", {"config.yaml": "version: v1\nmig-configs:\n"
                                  "  mine: [{devices: all, mig-enabled: false}]\n"})
    src, spec = mig.resolve_spec(cluster_policy(mig_config="custom"),
                                 {"custom": custom, mig.DEFAULT_CM: default_cm}, A100, c)
    assert src == "configmap/custom" and "mine" in spec["mig-configs"]
    with pytest.raises(mig.MissingConfigMap):
        mig.resolve_spec(cluster_policy(mig_config="absent"), {}, A100, c)
    with pytest.raises(migparted.MigPartedError, match="no key config.yaml"):
        mig.resolve_spec(cluster_policy(mig_config="custom"),
                         {"custom": configmap("custom", {"x": ""})}, A100, c)


def test_client_label_paused_only_when_present():
    n = mig_node("all-1g.5gb")
    assert C.L_DEPLOY_CLIENT not in mig.paused_labels(n["metadata"]["labels"])
    n["metadata"]["labels"][C.L_DEPLOY_CLIENT] = "true"
    assert mig.paused_labels(n["metadata"]["labels"])[C.L_DEPLOY_CLIENT] == C.PAUSED
    assert mig.restored_labels({C.L_DEPLOY_CLIENT: C.PAUSED})[C.L_DEPLOY_CLIENT] == "true"
