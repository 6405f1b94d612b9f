# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Dynamic Resource Allocation (DRA) for NVIDIA GPUs: the names the collection relies on.

One place for the API group, NVIDIA's DRA driver name, its DeviceClasses, the device attributes it
publishes and the GPU operator's node deploy labels of the DRA stack. Sources are in docs/facts.md
("Dynamic Resource Allocation"). Pure: no API access.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

API_GROUP = 'resource.k8s.io'
API_VERSION = 'resource.k8s.io/v1'

# NVIDIA's DRA driver for GPUs: the driver name is also the attribute domain of its devices.
DRIVER = 'gpu.nvidia.com'
GPU_CLASS = 'gpu.nvidia.com'
MIG_CLASS = 'mig.nvidia.com'
DEVICE_TYPES = ('gpu', 'mig')

# Device attributes (qualified by the driver's domain in CEL: device.attributes['gpu.nvidia.com'].<name>).
ATTRIBUTES = ('type', 'uuid', 'productName', 'brand', 'architecture', 'cudaComputeCapability',
              'driverVersion', 'cudaDriverVersion', 'parentUUID', 'profile')
# Capacities of MIG devices (memory in bytes).
MIG_CAPACITIES = ('multiprocessors', 'copyEngines', 'decoders', 'encoders', 'jpegEngines', 'ofaEngines',
                  'memory')

# The extended resource a DeviceClass may serve (DRAExtendedResource): pods keep asking for nvidia.com/gpu.
EXTENDED_RESOURCE = 'nvidia.com/gpu'

DEVICE_PLUGIN_DEPLOY_LABEL = 'nvidia.com/gpu.deploy.device-plugin'
# The node label that places NVIDIA's standalone DRA kubelet plugin on a node (the dra role installs the driver's
# chart with kubeletPlugin.nodeSelector on it, and a node-by-node cutover sets it), value 'true'.
DRA_NODE_LABEL = 'gpuops.gpu/dra-kubelet-plugin'
# The key of the rollout marker the GPU operator v26.7 change window leaves on the nodes it cordoned (never a label:
# the marker annotation reads "<key>=<stack>").
WINDOW_MARKER = 'gpuops.gpu/gpu-stack'

# What the fleet view reads (gpu/dra_fleet.py): the plurals of the two lists and the field selector of the
# ResourceSlice list.
RESOURCE_SLICES = 'resourceslices'
RESOURCE_CLAIMS = 'resourceclaims'
SLICE_DRIVER_FIELD = 'spec.driver'
# Which stack serves a node (gpu/dra_fleet.py node_stack).
STACKS = ('device-plugin', 'dra', 'both', 'none')

# --- claim configuration: the driver's opaque GpuConfig / MigDeviceConfig -------------------------------

# The API group and kinds of the driver's opaque parameters (api/nvidia.com/resource/v1beta1 api.go).
CONFIG_API_VERSION = 'resource.nvidia.com/v1beta1'
GPU_CONFIG_KIND = 'GpuConfig'
MIG_CONFIG_KIND = 'MigDeviceConfig'
# the device type each kind configures (a claim's sharing applies to devices of that type)
CONFIG_KINDS = {GPU_CONFIG_KIND: 'gpu', MIG_CONFIG_KIND: 'mig'}
# sharing.strategy and the driver feature gate each one needs (validate.go, featuregates.go)
TIME_SLICING = 'TimeSlicing'
MPS = 'MPS'
SHARING_STRATEGIES = (TIME_SLICING, MPS)
STRATEGY_GATES = {TIME_SLICING: 'TimeSlicingSettings', MPS: 'MPSSupport'}
# Every feature gate the driver knows (pkg/featuregates/featuregates.go on main, a superset of v25.12.0's); the
# driver refuses to start with any other name in FEATURE_GATES (docs/facts.md "The GPU operator's GPUCluster").
FEATURE_GATES = ('TimeSlicingSettings', 'MPSSupport', 'IMEXDaemonsWithDNSNames', 'PassthroughSupport',
                 'NVMLDeviceHealthCheck', 'DynamicMIG', 'ComputeDomainCliques', 'CrashOnNVLinkFabricErrors',
                 'DeviceMetadata', 'FabricManagerPartitioning', 'HostManagedIMEXDaemon', 'DRAListTypeAttributes',
                 'ConsumableShares')
# timeSlicingConfig.interval (sharing.go)
TIME_SLICE_INTERVALS = ('Default', 'Short', 'Medium', 'Long')
# mpsConfig.defaultActiveThreadPercentage bounds (validate.go)
ACTIVE_THREAD_PERCENTAGE = (0, 100)

# --- resource.k8s.io/v1 limits the API server enforces (k8s.io/api resource/v1 types.go) ---------------

CEL_MAX_LENGTH = 10 * 1024          # CELSelectorExpressionMaxLength
SELECTORS_MAX = 32                  # DeviceSelectorsMaxSize
OPAQUE_PARAMETERS_MAX = 10 * 1024   # OpaqueParametersMaxLength
ALLOCATION_MODES = ('ExactCount', 'All')

# ResourceQuota key of the devices a namespace may claim through one DeviceClass (core/v1 ResourceClaimsPerClass).
QUOTA_SUFFIX = '.deviceclass.resource.k8s.io/devices'


def quota_key(device_class):
    """The ResourceQuota ``spec.hard`` key that limits the devices claimed through ``device_class``."""
    return device_class + QUOTA_SUFFIX


def class_of_quota_key(key):
    """The DeviceClass a ``<class>.deviceclass.resource.k8s.io/devices`` key names, or None."""
    if isinstance(key, str) and key.endswith(QUOTA_SUFFIX) and len(key) > len(QUOTA_SUFFIX):
        return key[:-len(QUOTA_SUFFIX)]
    return None


# Objects the dra role writes carry app.kubernetes.io/managed-by: gpuops.gpu and this label, so that removing an
# entry removes only what the role created (not another role's quota, not a DeviceClass of the driver's chart).
LABEL_ROLE = 'gpuops.gpu/role'
ROLE = 'dra'
