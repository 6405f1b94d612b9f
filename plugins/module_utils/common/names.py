# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Names shared across the collection: labels, annotations, resource names, CRD coordinates.

One place for every name that more than one package reads or writes. Pure constants (and two
helpers for the ownership label), standard library only; who owns a ConfigMap is decided in
common/ownership.py.

- NVIDIA node labels are written by GPU feature discovery (GFD), node feature discovery (NFD)
  and the operator's MIG manager; the collection reads them and, for ``nvidia.com/mig.config``
  and ``nvidia.com/device-plugin.config``, writes them to ask for a change.
- ``gpuops.gpu/...`` annotations are the collection's own bookkeeping on nodes.
- Objects the collection creates carry ``app.kubernetes.io/managed-by: gpuops.gpu``; objects
  without it are never changed or deleted by a planner that checks ownership.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

# --- how a playbook reaches its cluster ------------------------------------------------------------

# The connection options of kubernetes.core (and of this collection's modules) and the playbook variables
# that set them: every play passes these as module_defaults of group/gpuops.gpu.gpu (docs/multi-cluster.md),
# and the gpu_nodes inventory plugin gives its cluster groups the ones that are not secret.
CONNECTION_VARS = (('kubeconfig', 'gpuops_kubeconfig'), ('context', 'gpuops_context'), ('host', 'gpuops_k8s_host'),
                   ('api_key', 'gpuops_k8s_api_key'), ('ca_cert', 'gpuops_k8s_ca_cert'),
                   ('validate_certs', 'gpuops_k8s_validate_certs'))
SECRET_CONNECTION_OPTIONS = ('api_key',)

# --- ownership --------------------------------------------------------------------------------

LABEL_MANAGED_BY = 'app.kubernetes.io/managed-by'
MANAGED_BY = 'gpuops.gpu'


def managed_by_labels(labels=None):
    """A new label dict: ``labels`` (optional) plus ``app.kubernetes.io/managed-by: gpuops.gpu``."""
    out = dict(labels or {})
    out[LABEL_MANAGED_BY] = MANAGED_BY
    return out


def is_managed(labels):
    """True when ``labels`` (an object's metadata.labels) say gpuops.gpu created the object."""
    return (labels or {}).get(LABEL_MANAGED_BY) == MANAGED_BY


# The GPU operator's built-in mig-parted ConfigMap: what the MIG manager reads when the ClusterPolicy's
# migManager.config.name is unset (docs/facts.md#mig-parted-config-format).
DEFAULT_MIG_CONFIG_MAP = 'default-mig-parted-config'

# ConfigMaps in the GPU operator's namespace that belong to someone else, which the collection never writes
# (docs/facts.md#configmaps-the-gpu-operator-owns). By name: the GPU operator's own (its default MIG, GPU-clients and
# vGPU-device configs, the scripts of its VFIO manager and of dcgm-exporter on OpenShift, the Kata manager config,
# the trusted CA bundle it creates on OpenShift) and the CA bundles Kubernetes and OpenShift publish in every
# namespace. By pattern (a regular expression, as the rollout account's admission policy matches it): the
# entrypoint scripts of the operator's privileged operands (nvidia-container-toolkit-entrypoint,
# nvidia-device-plugin-entrypoint, nvidia-mig-manager-entrypoint, nvidia-kata-manager-entrypoint, and any later one).
OPERATOR_CONFIGMAPS = (DEFAULT_MIG_CONFIG_MAP, 'default-gpu-clients', 'default-vgpu-devices-config',
                       'nvidia-vfio-manager', 'nvidia-dcgm-exporter', 'nvidia-kata-manager-config',
                       'gpu-operator-trusted-ca', 'kube-root-ca.crt', 'openshift-service-ca.crt')
OPERATOR_CONFIGMAP_PATTERN = '^nvidia-.*-entrypoint$'


# --- extended resources (NVIDIA device plugin, HAMi) ------------------------------------------

RESOURCE_DOMAIN = 'nvidia.com'
RESOURCE_PREFIX = RESOURCE_DOMAIN + '/'
GPU_RESOURCE = 'nvidia.com/gpu'
SHARED_RESOURCE = 'nvidia.com/gpu.shared'
MIG_RESOURCE_PREFIX = 'nvidia.com/mig-'
HAMI_RESOURCES = ('nvidia.com/gpumem', 'nvidia.com/gpumem-percentage', 'nvidia.com/gpucores')
# How the device plugin advertises MIG devices (ClusterPolicy mig.strategy, label nvidia.com/mig.strategy)
MIG_STRATEGIES = ('none', 'single', 'mixed')
# The host directory NVIDIA's device plugin and its MPS control daemon share (ClusterPolicy devicePlugin.mps.root,
# mounted from the host into both): the GPU operator's default and the device plugin's own (docs/facts.md#mps-root).
# The one value the sharing role sets, and the one the rollout account's ClusterPolicy admission policy admits.
MPS_ROOT = '/run/nvidia/mps'

# --- NVIDIA node labels (GFD, NFD, MIG manager, operator) -------------------------------------

LABEL_PRODUCT = 'nvidia.com/gpu.product'
LABEL_COUNT = 'nvidia.com/gpu.count'
LABEL_MEMORY = 'nvidia.com/gpu.memory'
LABEL_PRESENT = 'nvidia.com/gpu.present'
LABEL_REPLICAS = 'nvidia.com/gpu.replicas'
LABEL_SHARING = 'nvidia.com/gpu.sharing-strategy'
LABEL_COMPUTE_MAJOR = 'nvidia.com/gpu.compute.major'
LABEL_COMPUTE_MINOR = 'nvidia.com/gpu.compute.minor'
LABEL_MPS_CAPABLE = 'nvidia.com/mps.capable'
LABEL_MIG_CAPABLE = 'nvidia.com/mig.capable'
LABEL_MIG_STRATEGY = 'nvidia.com/mig.strategy'
LABEL_MIG_CONFIG = 'nvidia.com/mig.config'
LABEL_MIG_STATE = 'nvidia.com/mig.config.state'
LABEL_DP_CONFIG = 'nvidia.com/device-plugin.config'
LABEL_PCI_PRESENT = 'feature.node.kubernetes.io/pci-10de.present'
DEPLOY_LABEL_PREFIX = 'nvidia.com/gpu.deploy.'
# driver and CUDA versions GFD labels (docs/facts.md#gpu-feature-discovery-labels); the older
# cuda.driver.* / cuda.runtime.* labels are read when the newer ones are absent
LABEL_DRIVER_VERSION = 'nvidia.com/cuda.driver-version.full'
LABEL_DRIVER_PARTS = (('nvidia.com/cuda.driver-version.major', 'nvidia.com/cuda.driver-version.minor',
                       'nvidia.com/cuda.driver-version.revision'),
                      ('nvidia.com/cuda.driver.major', 'nvidia.com/cuda.driver.minor', 'nvidia.com/cuda.driver.rev'))
LABEL_CUDA_VERSION = 'nvidia.com/cuda.runtime-version.full'
LABEL_CUDA_PARTS = (('nvidia.com/cuda.runtime-version.major', 'nvidia.com/cuda.runtime-version.minor'),
                    ('nvidia.com/cuda.runtime.major', 'nvidia.com/cuda.runtime.minor'))
# vGPU: GFD on a vGPU guest (NVIDIA/k8s-device-plugin internal/lm/vgpu.go) and the operator's workload
# config of a vGPU host (NVIDIA/gpu-operator controllers/state_manager.go); docs/facts.md#vgpu-nodes
LABEL_VGPU_PRESENT = 'nvidia.com/vgpu.present'
LABEL_WORKLOAD_CONFIG = 'nvidia.com/gpu.workload.config'
VGPU_LABELS = ((LABEL_VGPU_PRESENT, 'true'), (LABEL_WORKLOAD_CONFIG, 'vm-vgpu'))
PAUSED_FOR_MIG = 'paused-for-mig-change'

# --- gpuops.gpu annotations on nodes (the rollout engine's bookkeeping) -----------------------

ANN_PREFIX = 'gpuops.gpu/'
ANN_ROLLOUT_TARGET = ANN_PREFIX + 'rollout-target'        # "<label>=<value>" being applied
ANN_ROLLOUT_PHASE = ANN_PREFIX + 'rollout-phase'          # cordoned | labelled | failed
ANN_ROLLOUT_REASON = ANN_PREFIX + 'rollout-reason'        # why it failed
ANN_CORDONED_BY_ROLLOUT = ANN_PREFIX + 'cordoned-by-rollout'  # "true" only when a rollout cordoned the node
ANN_ROLLOUT_UPDATED = ANN_PREFIX + 'rollout-updated'
ANN_PHYSICAL_GPUS = ANN_PREFIX + 'physical-gpus'
ANN_DP_CONFIG_HASH = ANN_PREFIX + 'device-plugin-config-hash'  # the sharing config a node's operands restarted on
ANN_GPU_HEALTH = ANN_PREFIX + 'gpu-health'  # JSON: why and since when gpu_health quarantined (or returned) the node
# Every gpuops.gpu annotation the rollout engine and gpu_health write on nodes: the rollout account's node
# admission policy (roles/rbac/files/gpuops-gpu-rollout-admission.yml) admits these keys and no other.
# (gpuops.gpu/owned-taints, which gpu_node_placement trusts to know which taints it may remove, is written by
# the install account only.)
NODE_ANNOTATIONS = (ANN_ROLLOUT_TARGET, ANN_ROLLOUT_PHASE, ANN_ROLLOUT_REASON, ANN_CORDONED_BY_ROLLOUT,
                    ANN_ROLLOUT_UPDATED, ANN_PHYSICAL_GPUS, ANN_DP_CONFIG_HASH, ANN_GPU_HEALTH)

# --- GPU operator operands a sharing rollout restarts -----------------------------------------

# The `app` labels of the operands that read the device-plugin ConfigMap through their config-manager sidecar: the
# device plugin, GPU feature discovery and the MPS control daemon (gpu-operator assets state-device-plugin,
# gpu-feature-discovery, state-mps-control-daemon). The only pods the rollout account may delete in the operator
# namespace.
RESTARTED_OPERANDS = ('nvidia-device-plugin-daemonset', 'gpu-feature-discovery', 'nvidia-device-plugin-mps-control-daemon')

# --- the rollout lock: one coordination.k8s.io Lease per cluster (rollout/lock.py) ------------

LOCK_LEASE_NAME = 'gpuops-gpu-rollout'
LEASE = ('coordination.k8s.io', 'v1', 'leases')  # (group, version, plural) for CustomObjectsApi
ANN_LOCK_PURPOSE = ANN_PREFIX + 'lock-purpose'    # "mig_rollout of 3 nodes"
ANN_LOCK_NODES = ANN_PREFIX + 'lock-nodes'        # "a100-0,a100-1" (truncated)
ANN_LOCK_WHO = ANN_PREFIX + 'lock-who'            # "user@host pid 1234"

# --- custom resources -------------------------------------------------------------------------

CLUSTER_POLICY_GROUP = 'nvidia.com'
CLUSTER_POLICY_VERSION = 'v1'
CLUSTER_POLICY_PLURAL = 'clusterpolicies'
CLUSTER_POLICY_KIND = 'ClusterPolicy'
CLUSTER_POLICY_API_VERSION = CLUSTER_POLICY_GROUP + '/' + CLUSTER_POLICY_VERSION
CLUSTER_POLICY_CRD = CLUSTER_POLICY_PLURAL + '.' + CLUSTER_POLICY_GROUP
# (group, version, plural): the first arguments of the CustomObjectsApi cluster calls
CLUSTER_POLICY = (CLUSTER_POLICY_GROUP, CLUSTER_POLICY_VERSION, CLUSTER_POLICY_PLURAL)
# NVIDIADriver (per-pool driver settings, gpu-operator api/nvidia/v1alpha1): (group, version, plural)
NVIDIA_DRIVER = (CLUSTER_POLICY_GROUP, 'v1alpha1', 'nvidiadrivers')
