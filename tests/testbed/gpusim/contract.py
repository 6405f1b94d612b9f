"""Names shared by the simulator, the testbed CLI and the tests (the annotation/label contract).

Inputs (set by the testbed CLI when it creates a node, or by the machine-api agent):
  gpusim.gpuops.dev/product   GPU model (annotation, or label), e.g. "NVIDIA-A100-SXM4-40GB"
  gpusim.gpuops.dev/gpus      number of GPUs (annotation or label; default simulation.default_gpus)
Test controls:
  gpusim.gpuops.dev/inject    comma list: fail | stuck-pending | slow | device-plugin-crash |
                              workload-wrong-output | workload-no-log (the validation workload's log: workloads.py)
  gpusim.gpuops.dev/device-plugin-restart   any new value = the simulated device plugin restarts
                              (used when no nvidia-device-plugin-daemonset pod runs on the node)
  gpusim.gpuops.dev/mig-manager-restart     any new value = the simulated mig-manager restarts and
                              re-reads nvidia.com/mig.config (as a new nvidia-mig-manager pod does;
                              used when no such pod runs on the node)
  gpusim.gpuops.dev/reconfigure-seconds     per-node MIG reconfiguration time (overrides
                              simulation.mig_reconfigure_seconds; x slow_factor with inject=slow)
  gpusim.gpuops.dev/unhealthy-gpus          "<n>" or "<n>:<xid>": the first n GPUs report the XID (default 79) to
                              the DCGM exporter (dcgm.py) and the device plugin marks them unhealthy unless it is an
                              application XID (APPLICATION_XIDS); removed = repaired (deviceplugin.py)
Outputs (written by the simulator):
  gpusim.gpuops.dev/mig-applied           JSON, the MIG state of each GPU (survives restarts)
  gpusim.gpuops.dev/mig-error             reason of the last failed reconfiguration
  gpusim.gpuops.dev/device-plugin-state   JSON, the config snapshot the plugin runs with
  gpusim.gpuops.dev/device-plugin-error   why the plugin (or its config-manager) is crashing
"""

import hashlib
import json

import yaml

PREFIX = "gpusim.gpuops.dev/"
ANN_PRODUCT = PREFIX + "product"
ANN_GPUS = PREFIX + "gpus"
ANN_INJECT = PREFIX + "inject"
ANN_DP_RESTART = PREFIX + "device-plugin-restart"
ANN_RECONFIGURE_SECONDS = PREFIX + "reconfigure-seconds"
ANN_MM_RESTART = PREFIX + "mig-manager-restart"
ANN_UNHEALTHY = PREFIX + "unhealthy-gpus"
ANN_MIG_APPLIED = PREFIX + "mig-applied"
ANN_MIG_ERROR = PREFIX + "mig-error"
ANN_DP_STATE = PREFIX + "device-plugin-state"
ANN_DP_ERROR = PREFIX + "device-plugin-error"
ANN_KWOK = "kwok.x-k8s.io/node"

INJECT_FAIL = "fail"
INJECT_STUCK = "stuck-pending"
INJECT_SLOW = "slow"
INJECT_DP_CRASH = "device-plugin-crash"
INJECT_WRONG_OUTPUT = "workload-wrong-output"
INJECT_NO_LOG = "workload-no-log"
INJECTIONS = (INJECT_FAIL, INJECT_STUCK, INJECT_SLOW, INJECT_DP_CRASH, INJECT_WRONG_OUTPUT, INJECT_NO_LOG)

# NVIDIA labels
L_MIG_CONFIG = "nvidia.com/mig.config"
L_MIG_STATE = "nvidia.com/mig.config.state"
L_DP_CONFIG = "nvidia.com/device-plugin.config"
L_GPU_PRESENT = "nvidia.com/gpu.present"
DEPLOY_PREFIX = "nvidia.com/gpu.deploy."
L_DEPLOY_DP = DEPLOY_PREFIX + "device-plugin"
L_DEPLOY_GFD = DEPLOY_PREFIX + "gpu-feature-discovery"
L_DEPLOY_MIG = DEPLOY_PREFIX + "mig-manager"
L_DEPLOY_CLIENT = DEPLOY_PREFIX + "client"
# The labels mig-manager pauses (reconfigure.go shutdownKubernetesGPUClients)
MIG_PAUSED_LABELS = (
    DEPLOY_PREFIX + "device-plugin",
    DEPLOY_PREFIX + "gpu-feature-discovery",
    DEPLOY_PREFIX + "dcgm-exporter",
    DEPLOY_PREFIX + "dcgm",
    DEPLOY_PREFIX + "nvsm",
)
PAUSED = "paused-for-mig-change"

DP_POD_LABEL = ("app", "nvidia-device-plugin-daemonset")
MM_POD_LABEL = ("app", "nvidia-mig-manager")
GPU_RESOURCE = "nvidia.com/gpu"


def node_annotations(node):
    return (node.get("metadata") or {}).get("annotations") or {}


def node_labels(node):
    return (node.get("metadata") or {}).get("labels") or {}


def node_name(node):
    return node["metadata"]["name"]


def injections(node):
    raw = node_annotations(node).get(ANN_INJECT, "")
    return {p.strip() for p in raw.split(",") if p.strip()}


DEFAULT_XID = 79  # "GPU has fallen off the bus": a critical XID the device plugin does not ignore (docs/facts.md)
# The XIDs NVIDIA's device plugin treats as application errors and never marks a device unhealthy for
# (internal/rm/health.go getDisabledHealthCheckXids, docs/facts.md "Unhealthy GPUs"); DCGM still reports them.
APPLICATION_XIDS = (13, 31, 43, 45, 68, 109)


def unhealthy_gpus(node):
    """(number of unhealthy GPUs, XID) from gpusim.gpuops.dev/unhealthy-gpus ("<n>" or "<n>:<xid>");
    (0, DEFAULT_XID) when absent or not a number."""
    raw = node_annotations(node).get(ANN_UNHEALTHY, "")
    count, _sep, xid = str(raw).partition(":")
    try:
        n = max(int(count), 0)
    except ValueError:
        return 0, DEFAULT_XID
    try:
        return n, int(xid) if xid else DEFAULT_XID
    except ValueError:
        return n, DEFAULT_XID


def node_product_and_count(node, default_gpus=8):
    """(product string, gpu count) from the node's gpusim annotations/labels, or (None, 0)."""
    ann = node_annotations(node)
    lab = node_labels(node)
    product = ann.get(ANN_PRODUCT) or lab.get(ANN_PRODUCT)
    if not product:
        return None, 0
    raw = ann.get(ANN_GPUS) or lab.get(ANN_GPUS)
    try:
        count = int(raw) if raw not in (None, "") else int(default_gpus)
    except ValueError:
        count = int(default_gpus)
    return product, max(count, 0)


def is_gpu_resource(name):
    """Extended resources the NVIDIA device plugin advertises (what counts as a 'GPU pod')."""
    return (name == GPU_RESOURCE or name == GPU_RESOURCE + ".shared"
            or name.startswith("nvidia.com/mig-"))


def stable_hash(obj):
    data = obj if isinstance(obj, str) else json.dumps(obj, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(data.encode()).hexdigest()[:16]


def yaml_mapping(text, error, prefix):
    """The YAML mapping in ``text`` ({} when empty); ``error("<prefix>: <why>")`` is raised when
    the text is not YAML or not a mapping (the way NVIDIA's Go tools unmarshal a config file)."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise error("%s: %s" % (prefix, exc))
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise error("%s: not a mapping" % prefix)
    return doc


def dumps(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))
