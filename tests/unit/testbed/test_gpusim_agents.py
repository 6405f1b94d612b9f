"""The thin agent loops of gpusim, driven against in-memory fakes (no cluster)."""
import copy
import threading
import time

from gpusim import contract as C
from gpusim import kube as K
from gpusim.agents.nodes import DevicePluginAgent, MigManagerAgent, NFDAgent
from gpusim_util import CATALOG, FakeInformer, cfg, node

from ansible_collections.gpuops.gpu.plugins.module_utils.common.merge import deep_merge


class FakeKube(object):
    def __init__(self, ctx):
        self.ctx = ctx
        self.events = []
        self.patches = 0

    def merge_patch(self, res, name, patch, namespace=None, subresource=None):
        assert res is K.NODES
        self.patches += 1
        n = deep_merge(self.ctx._nodes.get(name), patch)   # the apiserver's JSON merge patch
        n["metadata"]["resourceVersion"] = str(int(n["metadata"]["resourceVersion"]) + 1)
        return n

    def event(self, involved, etype, reason, message, component="gpusim"):
        self.events.append((involved["metadata"]["name"], etype, reason))


class FakeCtx(object):
    operator_namespace = "gpu-operator"

    def __init__(self, **sim):
        self.cfg = cfg(**sim)
        self.catalog = CATALOG
        self.stop = threading.Event()
        self._nodes = FakeInformer()
        self._pods = FakeInformer(key=lambda o: o["metadata"]["namespace"] + "/" + o["metadata"]["name"])
        self._cms = FakeInformer()
        self._cps = FakeInformer()
        self.kube = FakeKube(self)

    def nodes(self):
        return self._nodes

    def pods(self):
        return self._pods

    def configmaps(self):
        return self._cms

    def clusterpolicies(self):
        return self._cps

    def cluster_policy(self):
        items = self._cps.items()
        return items[0] if items else None

    def operator_configmaps(self):
        return {c["metadata"]["name"]: c for c in self._cms.items()}

    def operator_configmap(self, name):
        return self._cms.get(name) if name else None

    def gpuclusters(self):
        return self.informer(K.GPUCLUSTERS)

    def gpu_cluster(self):
        return None

    def informer(self, res, namespace=None, transform=None):
        self._other = getattr(self, "_other", {})
        return self._other.setdefault(res.plural + res.group, FakeInformer())


def setup(agent_cls, **sim):
    ctx = FakeCtx(**sim)
    agent = agent_cls(ctx)
    agent.setup()
    return ctx, agent


def drain(ctx, agents, rounds=20):
    """Run every queued reconcile (delays ignored) until the queues are empty."""
    for _round in range(rounds):
        busy = False
        for a in agents:
            while True:
                key = a.queue.get(timeout=0.01)
                if key is None:
                    break
                busy = True
                try:
                    a.reconcile(key)
                finally:
                    a.queue.done(key)
        if not busy:
            return
    raise AssertionError("queues did not drain")


def labels(ctx, name):
    return ctx._nodes.get(name)["metadata"]["labels"]


def set_label(ctx, name, **kv):
    n = deep_merge(ctx._nodes.get(name), {"metadata": {"labels": kv}})
    n["metadata"]["resourceVersion"] = str(int(n["metadata"]["resourceVersion"]) + 1)
    ctx._nodes.put(n)


def mig_cluster():
    ctx, mm = setup(MigManagerAgent, mig_reconfigure_seconds=0)
    dp = DevicePluginAgent(ctx)
    dp.setup()
    ctx._nodes.put(node("a", labels={C.L_MIG_CONFIG: "all-disabled"}))
    drain(ctx, [mm, dp])
    return ctx, mm, dp


def test_mig_agent_applies_and_dp_agent_follows():
    ctx, mm, dp = mig_cluster()
    assert labels(ctx, "a")[C.L_MIG_STATE] == "success"
    set_label(ctx, "a", **{C.L_MIG_CONFIG: "all-1g.5gb"})
    drain(ctx, [mm, dp])
    n = ctx._nodes.get("a")
    assert n["metadata"]["labels"][C.L_MIG_STATE] == "success"
    assert n["status"]["capacity"]["nvidia.com/gpu"] == "56"
    assert n["metadata"]["labels"]["nvidia.com/gpu.deploy.device-plugin"] == "true"
    assert not ctx.kube.events                     # only failures are recorded as Events


def test_same_value_again_does_nothing_but_remove_and_readd_does():
    ctx, mm, dp = mig_cluster()
    set_label(ctx, "a", **{C.L_MIG_STATE: None})
    drain(ctx, [mm, dp])
    assert C.L_MIG_STATE not in labels(ctx, "a")                 # value unchanged: no action
    set_label(ctx, "a", **{C.L_MIG_CONFIG: None})
    set_label(ctx, "a", **{C.L_MIG_CONFIG: "all-disabled"})      # before the worker runs
    drain(ctx, [mm, dp])
    assert labels(ctx, "a")[C.L_MIG_STATE] == "success"


def test_mig_manager_restart_rereads_the_label():
    ctx, mm, dp = mig_cluster()
    set_label(ctx, "a", **{C.L_MIG_STATE: None})
    n = copy.deepcopy(ctx._nodes.get("a"))
    n["metadata"]["annotations"][C.ANN_MM_RESTART] = "1"
    n["metadata"]["resourceVersion"] = "99"
    ctx._nodes.put(n)
    drain(ctx, [mm, dp])
    assert labels(ctx, "a")[C.L_MIG_STATE] == "success"
    # a new mig-manager pod on the node does the same
    set_label(ctx, "a", **{C.L_MIG_STATE: None})
    ctx._pods.put({"metadata": {"name": "mm", "namespace": "gpu-operator", "uid": "u1",
                                "labels": {"app": "nvidia-mig-manager"}, "creationTimestamp": "t"},
                   "spec": {"nodeName": "a"}, "status": {"phase": "Running"}, "resources": []})
    drain(ctx, [mm, dp])
    assert labels(ctx, "a")[C.L_MIG_STATE] == "success"


def test_gpu_pod_blocks_then_stuck_pending_injection():
    ctx, mm, dp = mig_cluster()
    ctx._pods.put({"metadata": {"name": "job", "namespace": "ml", "uid": "p1", "labels": {}},
                   "spec": {"nodeName": "a"}, "status": {"phase": "Running"},
                   "resources": ["nvidia.com/gpu"]})
    set_label(ctx, "a", **{C.L_MIG_CONFIG: "all-1g.5gb"})
    drain(ctx, [mm, dp])
    assert labels(ctx, "a")[C.L_MIG_STATE] == "failed"
    assert "ml/job" in ctx._nodes.get("a")["metadata"]["annotations"][C.ANN_MIG_ERROR]
    assert ("a", "Warning", "MigConfigFailed") in ctx.kube.events
    # stuck-pending: the job never finishes while the injection is there
    ctx._pods.store.clear()
    n = copy.deepcopy(ctx._nodes.get("a"))
    n["metadata"]["annotations"][C.ANN_INJECT] = "stuck-pending"
    n["metadata"]["labels"][C.L_MIG_CONFIG] = "all-balanced"
    n["metadata"]["resourceVersion"] = "200"
    ctx._nodes.put(n)
    key = mm.queue.get(0.1)
    mm.reconcile(key)
    mm.queue.done(key)
    assert labels(ctx, "a")[C.L_MIG_STATE] == "pending"
    mm.reconcile("a")
    assert labels(ctx, "a")[C.L_MIG_STATE] == "pending" and "a" in mm.jobs


def test_dp_agent_no_patch_when_converged():
    ctx, mm, dp = mig_cluster()
    before = ctx.kube.patches
    for _round in range(3):
        dp.reconcile("a")
        mm.reconcile("a")
    assert ctx.kube.patches == before


def test_nfd_agent_labels_gpu_and_cpu_nodes():
    ctx, agent = setup(NFDAgent)
    ctx._nodes.put(node("g"))
    ctx._nodes.put(node("c", product_name=None))
    drain(ctx, [agent])
    assert labels(ctx, "g")["feature.node.kubernetes.io/pci-10de.present"] == "true"
    assert "feature.node.kubernetes.io/pci-10de.present" not in labels(ctx, "c")
    assert labels(ctx, "c")["feature.node.kubernetes.io/system-os_release.ID"] == "rhcos"


def test_nfd_agent_on_cr_waits_for_the_custom_resource():
    ctx, agent = setup(NFDAgent, nfd="on-cr")
    ctx._nodes.put(node("g"))
    drain(ctx, [agent])
    assert "feature.node.kubernetes.io/pci-10de.present" not in labels(ctx, "g")
    ctx.informer(K.NFD_OPENSHIFT).put({"metadata": {"name": "nfd-instance", "namespace": "openshift-nfd"}})
    drain(ctx, [agent])
    assert labels(ctx, "g")["feature.node.kubernetes.io/pci-10de.present"] == "true"


def test_reconfiguration_time_counts_from_when_the_label_was_seen():
    ctx, mm = setup(MigManagerAgent, mig_reconfigure_seconds=5)
    ctx._nodes.put(node("a"))
    drain(ctx, [mm])
    set_label(ctx, "a", **{C.L_MIG_CONFIG: "all-1g.5gb"})
    assert mm.seen["a"][0] == "all-1g.5gb"
    mm.seen["a"] = ("all-1g.5gb", time.monotonic() - 4.0)   # the worker gets to the node 4 s after the watch
    mm.reconcile("a")
    assert labels(ctx, "a")[C.L_MIG_STATE] == "pending"
    assert mm.jobs["a"]["due"] - time.monotonic() < 1.5     # 5 s from the label, not from the worker
    assert "a" not in mm.seen


def test_a_label_seen_earlier_does_not_shorten_a_later_start():
    ctx, mm = setup(MigManagerAgent, mig_reconfigure_seconds=5)
    ctx._nodes.put(node("a"))
    drain(ctx, [mm])
    set_label(ctx, "a", **{C.L_MIG_CONFIG: "all-1g.5gb"})
    mm.seen["a"] = ("all-2g.10gb", time.monotonic() - 4.0)  # a newer value than the node this worker read
    mm.reconcile("a")
    assert mm.jobs["a"]["due"] - time.monotonic() > 4.0
    assert "a" in mm.seen                                    # kept for the reconciliation of that value


def test_a_reconfiguration_costs_two_writes_per_agent():
    """mig-manager: pending, then success; device plugin + GFD: one write when paused (allocatable 0 and its
    state annotation together), one after the change (labels, state and allocatable together)."""
    ctx, mm, dp = mig_cluster()
    set_label(ctx, "a", **{C.L_MIG_CONFIG: "all-1g.5gb"})
    writes = []
    for agent, state in ((mm, "pending"), (dp, "pending"), (mm, "success"), (dp, "success")):
        before = ctx.kube.patches
        agent.reconcile("a")
        writes.append(ctx.kube.patches - before)
        assert labels(ctx, "a")[C.L_MIG_STATE] == state
        if agent is dp:
            paused = state == "pending"
            assert ctx._nodes.get("a")["status"]["allocatable"]["nvidia.com/gpu"] == ("0" if paused else "56")
    assert writes == [1, 1, 1, 1]
    assert labels(ctx, "a")["nvidia.com/gpu.slices.gi"] == "1"
    before = ctx.kube.patches
    drain(ctx, [mm, dp])
    assert ctx.kube.patches == before


def test_cluster_policy_status_alone_requeues_no_node():
    ctx, mm, dp = mig_cluster()
    cp = {"metadata": {"name": "cluster-policy", "creationTimestamp": "t"}, "spec": {"mig": {"strategy": "single"}},
          "status": {"state": "notReady"}}
    ctx._cps.put(copy.deepcopy(cp))
    drain(ctx, [mm, dp])
    cp["status"]["state"] = "ready"
    ctx._cps.put(copy.deepcopy(cp))
    assert len(mm.queue) == 0 and len(dp.queue) == 0
    cp["spec"]["mig"]["strategy"] = "mixed"
    ctx._cps.put(copy.deepcopy(cp))
    assert len(mm.queue) == 1 and len(dp.queue) == 1


def test_device_plugin_requeues_nodes_only_for_its_configmap():
    ctx, mm, dp = mig_cluster()
    ctx._cms.put({"metadata": {"name": "unrelated", "namespace": "gpu-operator"}, "data": {"a": "1"}})
    assert len(dp.queue) == 0
    ctx.cfg["defaults"]["device_plugin_config"] = {"name": "plugin-config", "default": ""}
    ctx._cms.put({"metadata": {"name": "plugin-config", "namespace": "gpu-operator"}, "data": {"a": "1"}})
    assert len(dp.queue) == 1
