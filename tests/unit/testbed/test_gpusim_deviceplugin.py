"""Node-level device plugin + GFD decisions: where it runs, config snapshots, crashes."""
import json

from gpusim import contract as C
from gpusim import deviceplugin as dp
from gpusim_util import TS_CONFIG, apply_plan, cfg, cluster_policy, configmap, node, product

A100 = product("A100-SXM4-40GB")
OPERATOR_LABELS = {C.L_DEPLOY_DP: "true", C.L_DEPLOY_GFD: "true"}


def converge(n, prod=A100, cp=None, cm=None, uid="", config=None, rounds=4):
    """Reconcile until the plan is empty (like the watch loop does)."""
    config = config or cfg()
    plan = None
    for _round in range(rounds):
        plan = dp.reconcile(n, prod, cp, cm, uid, config)
        if plan.empty():
            return n, plan
        n = apply_plan(n, plan)
    raise AssertionError("did not converge: %r" % plan)


def gpu(n, key="capacity", res="nvidia.com/gpu"):
    return n["status"][key].get(res)


def test_always_mode_without_cluster_policy_advertises_gpus():
    n, _plan = converge(node())
    assert gpu(n) == "8" and gpu(n, "allocatable") == "8"
    labels = n["metadata"]["labels"]
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-40GB"
    assert labels["nvidia.com/gpu.present"] == "true"
    assert labels["nvidia.com/mig.strategy"] == "single"


def test_operator_mode_waits_for_deploy_label():
    cp = cluster_policy()
    n, _plan = converge(node(), cp=cp)
    assert gpu(n) is None
    assert "nvidia.com/gpu.product" not in n["metadata"]["labels"]
    n["metadata"]["labels"].update(OPERATOR_LABELS)
    n, _plan = converge(n, cp=cp)
    assert gpu(n) == "8"


def test_paused_for_mig_change_zeroes_allocatable_keeps_capacity():
    cp = cluster_policy()
    n, _plan = converge(node(labels=OPERATOR_LABELS), cp=cp)
    n["metadata"]["labels"][C.L_DEPLOY_DP] = C.PAUSED
    n, _plan = converge(n, cp=cp)
    assert gpu(n) == "8" and gpu(n, "allocatable") == "0"
    n["metadata"]["labels"][C.L_DEPLOY_DP] = "true"
    n, _plan = converge(n, cp=cp)
    assert gpu(n, "allocatable") == "8"


def test_device_plugin_disabled_in_policy():
    cp = cluster_policy()
    cp["spec"]["devicePlugin"]["enabled"] = False
    n, _plan = converge(node(labels=OPERATOR_LABELS), cp=cp)
    assert gpu(n) is None


def test_config_content_change_needs_restart():
    cp = cluster_policy(dp_config="dp", dp_default="ts")
    cm = configmap("dp", {"ts": TS_CONFIG})
    n, _plan = converge(node(labels=OPERATOR_LABELS), cp=cp, cm=cm, uid="pod-1")
    assert gpu(n) == "32"
    assert n["metadata"]["labels"]["nvidia.com/gpu.replicas"] == "4"
    cm2 = configmap("dp", {"ts": TS_CONFIG.replace("replicas: 4", "replicas: 10")})
    n, _plan = converge(n, cp=cp, cm=cm2, uid="pod-1")           # same pod: old snapshot
    assert gpu(n) == "32"
    n, _plan = converge(n, cp=cp, cm=cm2, uid="pod-2")           # pod restarted: new content
    assert gpu(n) == "80"
    assert n["metadata"]["labels"]["nvidia.com/gpu.replicas"] == "10"
    assert n["metadata"]["labels"]["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-40GB-SHARED"


def test_restart_annotation_without_pods():
    cp = cluster_policy(dp_config="dp", dp_default="ts")
    n, _plan = converge(node(labels=OPERATOR_LABELS), cp=cp, cm=configmap("dp", {"ts": TS_CONFIG}))
    cm2 = configmap("dp", {"ts": TS_CONFIG.replace("replicas: 4", "replicas: 2")})
    n, _plan = converge(n, cp=cp, cm=cm2)
    assert gpu(n) == "32"
    n["metadata"]["annotations"][C.ANN_DP_RESTART] = "1"
    n, _plan = converge(n, cp=cp, cm=cm2)
    assert gpu(n) == "16"


def test_node_label_selects_key_and_is_picked_up_live():
    cp = cluster_policy(dp_config="dp")
    cm = configmap("dp", {"ts": TS_CONFIG, "none": "version: v1\n"})
    n, _plan = converge(node(labels=OPERATOR_LABELS), cp=cp, cm=cm, uid="p")
    assert gpu(n) == "8"                                    # no label, no default: empty config
    n["metadata"]["labels"][C.L_DP_CONFIG] = "ts"
    n, _plan = converge(n, cp=cp, cm=cm, uid="p")
    assert gpu(n) == "32"
    state = json.loads(n["metadata"]["annotations"][C.ANN_DP_STATE])
    assert state["key"] == "ts" and state["config"]["strategy"] == "time-slicing"


def test_invalid_config_keeps_capacity_and_reports():
    cp = cluster_policy(dp_config="dp")
    cm = configmap("dp", {"ts": TS_CONFIG, "bad": TS_CONFIG.replace("replicas: 4", "replicas: 1")})
    n, _plan = converge(node(labels=dict(OPERATOR_LABELS, **{C.L_DP_CONFIG: "ts"})), cp=cp, cm=cm,
                        uid="p")
    n["metadata"]["labels"][C.L_DP_CONFIG] = "bad"
    plan = dp.reconcile(n, A100, cp, cm, "p", cfg())
    assert ("Warning", "DevicePluginFailed") == plan.events[0][:2]
    n, _plan = converge(n, cp=cp, cm=cm, uid="p")
    assert gpu(n) == "32" and gpu(n, "allocatable") == "0"
    assert "replicas must be >= 2" in n["metadata"]["annotations"][C.ANN_DP_ERROR]
    assert n["metadata"]["labels"]["nvidia.com/gpu.replicas"] == "4"   # labels unchanged
    # fixing the ConfigMap heals a crash-looping plugin without a manual restart
    cm_fixed = configmap("dp", {"ts": TS_CONFIG, "bad": TS_CONFIG.replace("replicas: 4", "replicas: 3")})
    n, _plan = converge(n, cp=cp, cm=cm_fixed, uid="p")
    assert gpu(n) == "24" and gpu(n, "allocatable") == "24"
    assert C.ANN_DP_ERROR not in n["metadata"]["annotations"]


def test_missing_key_and_missing_configmap():
    cp = cluster_policy(dp_config="dp", dp_default="nope")
    n, _plan = converge(node(labels=OPERATOR_LABELS), cp=cp, cm=configmap("dp", {"ts": TS_CONFIG}))
    assert "specified config nope does not exist" in n["metadata"]["annotations"][C.ANN_DP_ERROR]
    n, _plan = converge(node(labels=OPERATOR_LABELS), cp=cp, cm=None)
    assert "ConfigMap dp not found" in n["metadata"]["annotations"][C.ANN_DP_ERROR]
    assert gpu(n) is None


def test_crash_injection():
    n, _plan = converge(node())
    n["metadata"]["annotations"][C.ANN_INJECT] = "device-plugin-crash"
    n, _plan = converge(n)
    assert gpu(n) == "8" and gpu(n, "allocatable") == "0"
    assert "injected crash" in n["metadata"]["annotations"][C.ANN_DP_ERROR]
    del n["metadata"]["annotations"][C.ANN_INJECT]
    n, _plan = converge(n)
    assert gpu(n, "allocatable") == "8" and C.ANN_DP_ERROR not in n["metadata"]["annotations"]


def mig_applied(devices, gpus=8):
    return json.dumps({"config": "x", "gpus": [{"mig": True, "devices": devices}] * gpus})


def test_mixed_strategy_replaces_resources_and_removes_stale_ones():
    n, _plan = converge(node())
    assert gpu(n) == "8"
    n["metadata"]["annotations"][C.ANN_MIG_APPLIED] = mig_applied(
        {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1})
    cp = cluster_policy(strategy="mixed")
    n["metadata"]["labels"].update(OPERATOR_LABELS)
    n, _plan = converge(n, cp=cp)
    assert gpu(n) is None                                      # nvidia.com/gpu removed
    assert gpu(n, res="nvidia.com/mig-1g.5gb") == "16"
    assert gpu(n, "allocatable", "nvidia.com/mig-3g.20gb") == "8"
    assert n["metadata"]["labels"]["nvidia.com/mig-2g.10gb.count"] == "8"
    # back to single 7x1g: mig-* resources and labels disappear
    n["metadata"]["annotations"][C.ANN_MIG_APPLIED] = mig_applied({"1g.5gb": 7})
    n, _plan = converge(n, cp=cluster_policy())
    assert gpu(n) == "56"
    assert not [k for k in n["status"]["capacity"] if k.startswith("nvidia.com/mig-")]
    assert not [k for k in n["metadata"]["labels"] if k.startswith("nvidia.com/mig-")]
    assert n["metadata"]["labels"]["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb"


def test_single_strategy_with_mixed_geometry():
    cp = cluster_policy()
    n, _plan = converge(node(labels=OPERATOR_LABELS), cp=cp)
    n["metadata"]["annotations"][C.ANN_MIG_APPLIED] = mig_applied(
        {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1})
    n, _plan = converge(n, cp=cp)
    labels = n["metadata"]["labels"]
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-40GB-MIG-INVALID"
    assert labels["nvidia.com/gpu.count"] == "0"
    assert "more than one MIG device type" in n["metadata"]["annotations"][C.ANN_DP_ERROR]
    assert gpu(n, "allocatable") == "0"


def test_converged_node_yields_empty_plan_and_t4():
    t4 = product("T4")
    n, plan = converge(node(product_name="Tesla-T4", gpus=1), prod=t4)
    assert plan.empty() and gpu(n) == "1"
    assert n["metadata"]["labels"]["nvidia.com/mig.capable"] == "false"


def test_not_a_gpu_node():
    assert dp.reconcile(node(product_name=None), None, None, None, "", cfg()).empty()


def test_component_runs_modes():
    assert dp.component_runs("always", True, None)
    assert not dp.component_runs("always", True, C.PAUSED)
    assert not dp.component_runs("operator", False, None)
    assert dp.component_runs("operator", False, "true")
    assert dp.component_runs("auto", False, None)
    assert not dp.component_runs("auto", True, None)
    assert not dp.component_runs("always", True, "true", enabled=False)


def test_unhealthy_gpus_lower_allocatable_with_one_xid_event_each_until_repaired():
    n, _plan = converge(node())
    n["metadata"]["annotations"][C.ANN_UNHEALTHY] = "2"
    plan = dp.reconcile(n, A100, None, None, "", cfg())
    assert plan.status == {"allocatable": {"nvidia.com/gpu": "6"}}
    assert [(e[0], e[1]) for e in plan.events] == [("Warning", "XidCriticalError")] * 2
    assert plan.events[0][2].startswith("XidCriticalError: Xid=79 on Device=GPU-")
    assert plan.events[0][2].endswith("; marking device as unhealthy.")
    n = apply_plan(n, plan)
    assert gpu(n) == "8" and gpu(n, "allocatable") == "6"
    assert dp.reconcile(n, A100, None, None, "", cfg()).empty()      # no second event
    n["metadata"]["annotations"][C.ANN_UNHEALTHY] = "3:48"
    plan = dp.reconcile(n, A100, None, None, "", cfg())
    assert [e[2].split(" on ")[0] for e in plan.events] == ["XidCriticalError: Xid=48"]
    n = apply_plan(n, plan)
    assert gpu(n, "allocatable") == "5"
    del n["metadata"]["annotations"][C.ANN_UNHEALTHY]               # repaired
    n, plan = converge(n)
    assert gpu(n) == "8" and gpu(n, "allocatable") == "8"
    assert "unhealthy" not in json.loads(n["metadata"]["annotations"][C.ANN_DP_STATE])


def test_unhealthy_gpus_bad_value_is_ignored_and_count_is_capped():
    assert C.unhealthy_gpus(node(annotations={C.ANN_UNHEALTHY: "x"})) == (0, C.DEFAULT_XID)
    n, _plan = converge(node(annotations={C.ANN_UNHEALTHY: "20"}))
    assert gpu(n) == "8" and gpu(n, "allocatable") == "0"


def test_an_application_xid_leaves_the_gpus_healthy_as_the_real_plugin_does():
    n, _plan = converge(node())
    n["metadata"]["annotations"][C.ANN_UNHEALTHY] = "1:13"          # Graphics Engine Exception: the app's fault
    assert dp.reconcile(n, A100, None, None, "", cfg()).empty()
    assert gpu(n, "allocatable") == "8"
