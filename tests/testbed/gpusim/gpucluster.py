"""Simulated GPU operator v26.7 behaviour for the GPUCluster (nvidia.com/v1alpha1), pure part.

What NVIDIA/gpu-operator v26.7.0 does (docs/facts.md, "The GPU operator's GPUCluster"), as far as the tests rely
on it: while a GPUCluster exists and no ClusterPolicy does, every GPU node (``nvidia.com/gpu.present=true``) gets
the DRA stack's deploy labels (``gpuClusterStateLabels``: driver, dra-driver, dra-validator, dcgm-dra,
dcgm-exporter-dra) set to ``true`` where absent or empty (a value such as ``false`` or a driver manager's pause is
kept), and the device-plugin-only deploy labels are removed; the GPUCluster's status.state is ``ready`` once its
operands run. With a ClusterPolicy as well, the node labelling stops with an error and the GPUCluster is
``notReady`` with the condition reason ``PrerequisiteNotMet``. When the GPUCluster goes, the operator's node
labelling has nothing to follow and leaves the labels as they are; its DaemonSets go with it (owner references),
so the DRA kubelet plugin stops serving (gpusim/agents/dra.py).

With ``simulation.clusterpolicy_node_labels`` (a test bed without the operator binary plays the v26.7 operator for
both of its resources), while a ClusterPolicy exists and no GPUCluster does, every GPU node gets the ClusterPolicy
stack's deploy labels where absent or empty and loses the DRA stack's (``policy_label_patch``).

Not simulated: the operand DaemonSets themselves (the kubelet plugin "runs" on a node while the GPUCluster is
active and the node's ``nvidia.com/gpu.deploy.dra-driver`` is ``true``), the finalizer and its drain, the
validator, DCGM, the compute-domain controller.
"""

from gpusim import contract as C

API = ("nvidia.com", "v1alpha1", "gpuclusters")
DRA_DRIVER_LABEL = C.DEPLOY_PREFIX + "dra-driver"
# controllers/state_manager.go gpuClusterStateLabels
DRA_STACK_LABELS = tuple(C.DEPLOY_PREFIX + k
                         for k in ("driver", "dra-driver", "dra-validator", "dcgm-dra", "dcgm-exporter-dra"))
# controllers/state_manager.go devicePluginOnlyStateLabelKeys: the ClusterPolicy stack's keys (gpuStateLabels,
# the two sandbox device plugins, mig-manager) minus the DRA stack's and vgpu-manager
DEVICE_PLUGIN_ONLY_LABELS = tuple(C.DEPLOY_PREFIX + k for k in (
    "gpu-feature-discovery", "container-toolkit", "device-plugin", "dcgm", "dcgm-exporter", "node-status-exporter",
    "operator-validator", "client", "sandbox-device-plugin", "sandbox-validator", "vfio-manager", "kata-manager",
    "cc-manager", "vgpu-device-manager", "kata-sandbox-device-plugin", "mig-manager"))


# controllers/state_manager.go gpuStateLabels["container"]: the ClusterPolicy stack's deploy labels of a container
# workload node; mig-manager besides on a MIG-capable node (addGPUStateLabels)
CLUSTER_POLICY_LABELS = tuple(C.DEPLOY_PREFIX + k for k in (
    "driver", "gpu-feature-discovery", "container-toolkit", "device-plugin", "dcgm", "dcgm-exporter",
    "node-status-exporter", "operator-validator", "client"))
MIG_MANAGER_LABEL = C.DEPLOY_PREFIX + "mig-manager"


def policy_label_patch(labels, claims_in_use):
    """The v26.7 operator's node labelling while a ClusterPolicy is its configuration ({} when nothing changes):
    the ClusterPolicy stack's deploy labels where absent or empty, mig-manager on a MIG-capable node, and the DRA
    stack's keys swept, ``dra-driver`` kept while pods on the node use claims (``claims_in_use``)."""
    if labels.get(C.L_GPU_PRESENT) != "true":
        return {}
    patch = dict((k, "true") for k in CLUSTER_POLICY_LABELS if not labels.get(k))
    if labels.get("nvidia.com/mig.capable") == "true" and MIG_MANAGER_LABEL not in labels:
        patch[MIG_MANAGER_LABEL] = "true"
    patch.update((k, None) for k in DRA_STACK_LABELS if k in labels and k not in CLUSTER_POLICY_LABELS
                 and not (k == DRA_DRIVER_LABEL and claims_in_use))
    return patch


def active(gpuclusters, cluster_policies):
    """The GPUCluster the operator follows (not being deleted, no ClusterPolicy beside it), or None."""
    live = [g for g in gpuclusters if not g["metadata"].get("deletionTimestamp")]
    return live[0] if live and not cluster_policies else None


def label_patch(labels):
    """The node label merge patch of an active GPUCluster ({} when none is needed): the DRA stack's deploy labels
    where absent or empty, the device-plugin-only ones removed; nothing on a node without GPUs."""
    if labels.get(C.L_GPU_PRESENT) != "true":
        return {}
    patch = dict((k, None) for k in DEVICE_PLUGIN_ONLY_LABELS if k in labels)
    patch.update((k, "true") for k in DRA_STACK_LABELS if not labels.get(k))
    return patch


def serves_dra(node, gpucluster):
    """Whether the GPUCluster's DRA kubelet plugin runs on the node."""
    return gpucluster is not None and C.node_labels(node).get(DRA_DRIVER_LABEL) == "true"


def status(gpuclusters, cluster_policies, namespace):
    """The status of the (first) GPUCluster: ready, or notReady with PrerequisiteNotMet beside a ClusterPolicy.
    Conditions as internal/conditions/gpucluster.go sets them (types Ready and Error, each naming the other)."""
    if cluster_policies:
        name = sorted(p["metadata"]["name"] for p in cluster_policies)[0]
        message = ("A ClusterPolicy CR %r exists; a ClusterPolicy CR and GPUCluster CR may not exist at the same "
                   "time" % name)
        return {"state": "notReady", "namespace": namespace, "conditions": [
            _condition("Ready", "False", "Error", ""), _condition("Error", "True", "PrerequisiteNotMet", message)]}
    message = "All resources have been successfully reconciled"
    return {"state": "ready", "namespace": namespace, "conditions": [
        _condition("Ready", "True", "Reconciled", message), _condition("Error", "False", "Ready", "")]}


def _condition(kind, value, reason, message):
    return {"type": kind, "status": value, "reason": reason, "message": message}


def status_differs(current, desired):
    """Whether the status must be written (conditions compared without their times)."""
    def strip(s):
        s = s or {}
        return (s.get("state"), s.get("namespace"),
                [dict((k, v) for k, v in c.items() if k != "lastTransitionTime") for c in s.get("conditions") or []])
    return strip(current) != strip(desired)
