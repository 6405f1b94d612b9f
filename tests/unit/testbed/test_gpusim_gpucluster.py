"""The simulated GPU operator v26.7 GPUCluster behaviour (gpusim.gpucluster) and its agent, against small fakes."""
import copy
import threading

from gpusim import contract as C
from gpusim import deviceplugin
from gpusim import gpucluster
from gpusim import kube as K
from gpusim.agents.gpucluster import STATUS, GPUClusterAgent
from gpusim_util import FakeInformer, apply_plan, cfg, node, product

GC = {"metadata": {"name": "gpu-cluster"}, "spec": {"draDriver": {}}}
CP = {"metadata": {"name": "cluster-policy"}}
DP = C.DEPLOY_PREFIX


def test_label_patch_sets_the_dra_stack_and_sweeps_the_device_plugin_stack():
    labels = {C.L_GPU_PRESENT: "true", DP + "device-plugin": "true", DP + "mig-manager": "true",
              DP + "vgpu-manager": "true", DP + "dcgm-dra": "false", DP + "driver": "", DP + "operands": "true"}
    patch = gpucluster.label_patch(labels)
    assert patch == {DP + "device-plugin": None, DP + "mig-manager": None, DP + "driver": "true",
                     DP + "dra-driver": "true", DP + "dra-validator": "true", DP + "dcgm-exporter-dra": "true"}
    labels.update(patch)
    assert gpucluster.label_patch(dict((k, v) for k, v in labels.items() if v is not None)) == {}


def test_policy_label_patch_sets_the_cluster_policy_stack_and_sweeps_the_dra_stack():
    labels = {C.L_GPU_PRESENT: "true", "nvidia.com/mig.capable": "true", DP + "device-plugin": "false",
              DP + "gpu-feature-discovery": "", DP + "driver": "true", DP + "dra-driver": "true",
              DP + "dcgm-dra": "true"}
    patch = gpucluster.policy_label_patch(labels, claims_in_use=False)
    assert patch == {DP + "gpu-feature-discovery": "true", DP + "container-toolkit": "true", DP + "dcgm": "true",
                     DP + "dcgm-exporter": "true", DP + "node-status-exporter": "true",
                     DP + "operator-validator": "true", DP + "client": "true", DP + "mig-manager": "true",
                     DP + "dra-driver": None, DP + "dcgm-dra": None}
    # the DRA kubelet plugin stays while pods on the node use claims
    assert DP + "dra-driver" not in gpucluster.policy_label_patch(labels, claims_in_use=True)
    labels.update(patch)
    assert gpucluster.policy_label_patch(dict((k, v) for k, v in labels.items() if v is not None), False) == {}
    assert gpucluster.policy_label_patch({DP + "dra-driver": "true"}, False) == {}


def test_no_labels_on_a_node_without_gpus():
    assert gpucluster.label_patch({DP + "device-plugin": "true"}) == {}


def test_active_and_served():
    assert gpucluster.active([GC], []) is GC
    assert gpucluster.active([GC], [CP]) is None
    assert gpucluster.active([dict(GC, metadata={"name": "gpu-cluster", "deletionTimestamp": "x"})], []) is None
    on = node(labels={gpucluster.DRA_DRIVER_LABEL: "true"})
    assert gpucluster.serves_dra(on, GC) and not gpucluster.serves_dra(on, None)
    assert not gpucluster.serves_dra(node(labels={gpucluster.DRA_DRIVER_LABEL: "false"}), GC)


def test_status_ready_or_not_beside_a_cluster_policy():
    ready = gpucluster.status([GC], [], "gpu-operator")
    assert ready["state"] == "ready" and ready["conditions"][0]["type"] == "Ready"
    blocked = gpucluster.status([GC], [CP], "gpu-operator")
    assert blocked["state"] == "notReady"
    assert blocked["conditions"][1]["reason"] == "PrerequisiteNotMet" and "cluster-policy" in \
        blocked["conditions"][1]["message"]
    stamped = copy.deepcopy(ready)
    stamped["conditions"][0]["lastTransitionTime"] = "2026-01-01T00:00:00Z"
    assert not gpucluster.status_differs(stamped, ready) and gpucluster.status_differs(stamped, blocked)


def test_the_device_plugin_follows_the_deploy_labels_under_a_gpucluster():
    """Without a ClusterPolicy the simulated plugin runs unless its label says otherwise; with a GPUCluster the
    labels decide, as with a ClusterPolicy, and the swept label stops it: allocatable nvidia.com/gpu drops to 0."""
    a100 = product("A100-SXM4-40GB")
    n = node(labels={C.L_GPU_PRESENT: "true"})
    n = apply_plan(n, deviceplugin.reconcile(n, a100, None, None, "", cfg()))
    assert n["status"]["allocatable"][C.GPU_RESOURCE] == "8"
    n = apply_plan(n, deviceplugin.reconcile(n, a100, None, None, "", dict(cfg(), gpucluster_active=True)))
    assert n["status"]["allocatable"][C.GPU_RESOURCE] == "0"


class Kube(object):
    def __init__(self, ctx):
        self.ctx = ctx

    def merge_patch(self, res, name, patch, namespace=None, subresource=None):
        store = self.ctx.stores[res.plural]
        obj = copy.deepcopy(store.get(name))
        for key, value in patch.get("metadata", {}).get("labels", {}).items():
            if value is None:
                obj["metadata"]["labels"].pop(key, None)
            else:
                obj["metadata"]["labels"][key] = value
        if "status" in patch:
            obj["status"] = patch["status"]
        return obj


class Ctx(object):
    operator_namespace = "gpu-operator"

    def __init__(self, gpuclusters, policies, nodes, pods=(), **simulation):
        self.cfg, self.stop = dict(cfg(), **simulation), threading.Event()
        self.stores = {"gpuclusters": FakeInformer(*gpuclusters, res=K.GPUCLUSTERS),
                       "clusterpolicies": FakeInformer(*policies, res=K.CLUSTERPOLICIES),
                       "nodes": FakeInformer(*nodes, res=K.NODES), "pods": FakeInformer(*pods, res=K.PODS)}
        self.kube = Kube(self)

    def pods(self):
        return self.stores["pods"]

    def cluster_policy(self):
        return (self.clusterpolicies().items() or [None])[0]

    def gpuclusters(self):
        return self.stores["gpuclusters"]

    def clusterpolicies(self):
        return self.stores["clusterpolicies"]

    def nodes(self):
        return self.stores["nodes"]

    def gpu_cluster(self):
        return gpucluster.active(self.gpuclusters().items(), self.clusterpolicies().items())


def run(ctx):
    agent = GPUClusterAgent(ctx)
    agent.setup()
    for key in [STATUS] + [n["metadata"]["name"] for n in ctx.nodes().items()]:
        agent.reconcile(key)


def test_agent_labels_gpu_nodes_and_reports_ready():
    gpu = node("gpu-0", labels={C.L_GPU_PRESENT: "true", DP + "device-plugin": "true"})
    cpu = node("cpu-0", product_name=None, labels={"kubernetes.io/os": "linux"})
    ctx = Ctx([copy.deepcopy(GC)], [], [gpu, cpu])
    run(ctx)
    labels = ctx.nodes().get("gpu-0")["metadata"]["labels"]
    assert labels[gpucluster.DRA_DRIVER_LABEL] == "true" and DP + "device-plugin" not in labels
    assert ctx.nodes().get("cpu-0")["metadata"]["labels"] == {"kubernetes.io/os": "linux"}
    assert ctx.gpuclusters().get("gpu-cluster")["status"]["state"] == "ready"


def test_agent_leaves_nodes_alone_beside_a_cluster_policy():
    gpu = node("gpu-0", labels={C.L_GPU_PRESENT: "true", DP + "device-plugin": "true"})
    ctx = Ctx([copy.deepcopy(GC)], [CP], [gpu])
    run(ctx)
    assert ctx.nodes().get("gpu-0")["metadata"]["labels"] == {C.L_GPU_PRESENT: "true", DP + "device-plugin": "true"}
    assert ctx.gpuclusters().get("gpu-cluster")["status"]["state"] == "notReady"


def test_agent_plays_the_cluster_policy_labelling_only_when_asked():
    dra_node = {C.L_GPU_PRESENT: "true", DP + "dra-driver": "true", DP + "dcgm-dra": "true", DP + "driver": "true"}
    ctx = Ctx([], [CP], [node("gpu-0", labels=dict(dra_node))])
    run(ctx)
    assert ctx.nodes().get("gpu-0")["metadata"]["labels"] == dra_node
    claim_pod = {"metadata": {"name": "p"}, "spec": {"nodeName": "gpu-0", "containers": [{"claims": True}]},
                 "status": {"phase": "Running"}}
    ctx = Ctx([], [CP], [node("gpu-0", labels=dict(dra_node))], [claim_pod], clusterpolicy_node_labels=True)
    run(ctx)
    labels = ctx.nodes().get("gpu-0")["metadata"]["labels"]
    assert labels[DP + "device-plugin"] == "true" and DP + "dcgm-dra" not in labels
    assert labels[DP + "dra-driver"] == "true"  # a pod on the node still uses its claim
    ctx.pods().store.clear()
    run(ctx)
    assert DP + "dra-driver" not in ctx.nodes().get("gpu-0")["metadata"]["labels"]
    # beside a GPUCluster the ClusterPolicy is not the operator's configuration
    ctx = Ctx([copy.deepcopy(GC)], [CP], [node("gpu-0", labels=dict(dra_node))], clusterpolicy_node_labels=True)
    run(ctx)
    assert ctx.nodes().get("gpu-0")["metadata"]["labels"] == dra_node
