# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Input checks of the autoscaling role that need no cluster knowledge. Pure, no I/O.

``input_errors(...)`` returns one message per problem, naming the role variable; the autoscaling
plan runs it before reading the cluster and writes nothing while there is one.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import (
    is_dns_subdomain, is_int, label_key_errors, label_value_errors, type_name, unknown_key_errors)
from ansible_collections.gpuops.gpu.plugins.module_utils.common.selector import SelectorError, parse_selector
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.tolerations import taint_errors
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.machineset import ACCELERATOR_LABEL

ENTRY_KEYS = ('name', 'label_selector', 'source', 'replicas', 'accelerator', 'gpus', 'vcpu',
              'memory_mb', 'labels', 'taints', 'zone', 'region', 'sharing_config', 'mig_config',
              'allow_mig_preset', 'provider_spec', 'vgpu_profile', 'min_replicas', 'max_replicas',
              'machine_autoscaler')
LIMIT_KEYS = ('type', 'min', 'max')
SCALE_DOWN_KEYS = ('enabled', 'delayAfterAdd', 'delayAfterDelete', 'delayAfterFailure', 'unneededTime',
                   'utilizationThreshold')
_DURATION_RE = re.compile(r'^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$')

NVIDIA_GPU_EXPLANATION = (
    "'nvidia.com/gpu' is the name of the GPU resource, not a GPU type: a label value cannot "
    "contain '/', and the cluster autoscaler matches ClusterAutoscaler resourceLimits.gpus[].type "
    "against the VALUE of the node label cluster-api/accelerator. Use a GPU type such as "
    "nvidia-a100 or nvidia-t4, the same string on the MachineSet and in the ClusterAutoscaler")
MIG_PRESET_EXPLANATION = (
    'presetting nvidia.com/mig.config on a MachineSet template is affected by gpu-operator#2670: '
    'on a node that joins with the label already set, the device plugin can start before the MIG '
    "manager applied the layout and fails with 'device 0 has no MIG devices configured' (the "
    'workaround is to change the label after the node joined, which gpuops.gpu.mig / mig_rollout '
    'do). Set allow_mig_preset: true on the entry to accept this, or leave mig_config out and '
    'partition new nodes with the mig role')


def accelerator_errors(value, path):
    """Why ``value`` cannot be a cluster-api/accelerator label value (= a resourceLimits.gpus type)."""
    if value in (None, ''):
        return ['%s is required: the GPU type, for example nvidia-a100 (it becomes the node label '
                'cluster-api/accelerator and the ClusterAutoscaler resourceLimits.gpus[].type)' % path]
    if isinstance(value, str) and value.strip().lower() in ('nvidia.com/gpu', 'nvidia.com/gpu.shared'):
        return ['%s: %s' % (path, NVIDIA_GPU_EXPLANATION)]
    return ['%s %s' % (path, e) for e in label_value_errors(value)]


def _int_errors(value, path, minimum=0, required=False):
    if value is None:
        return ['%s is required' % path] if required else []
    if not is_int(value):
        return ['%s must be an integer, got %s %r' % (path, type_name(value), value)]
    if value < minimum:
        return ['%s must be >= %d, got %d' % (path, minimum, value)]
    return []


def _range_errors(mapping, path, low, high, low_required=True, high_minimum=0, high_required=True):
    """``mapping[low]`` and ``mapping[high]`` integers (when given or required), low <= high."""
    errors = _int_errors(mapping.get(low), '%s.%s' % (path, low), required=low_required)
    errors += _int_errors(mapping.get(high), '%s.%s' % (path, high), minimum=high_minimum, required=high_required)
    if is_int(mapping.get(low)) and is_int(mapping.get(high)) and mapping[low] > mapping[high]:
        errors.append('%s: %s %d is greater than %s %d' % (path, low, mapping[low], high, mapping[high]))
    return errors


def _duration_errors(value, path):
    if value in (None, ''):
        return []
    if not isinstance(value, str) or not _DURATION_RE.match(value):
        return ["%s must be a duration such as 10m, 90s or 1h30m, got %r" % (path, value)]
    return []


# --- autoscaling_machine_sets entries ---------------------------------------------------------

def _choice_errors(entry, path):
    """name (one MachineSet, optionally cloned from source) or label_selector, never both."""
    errors = []
    has_name = entry.get('name') not in (None, '')
    has_selector = entry.get('label_selector') not in (None, '')
    if has_name == has_selector:
        errors.append('%s needs exactly one of name (one MachineSet) or label_selector (the GPU '
                      'MachineSets carrying a label); there is no way to choose all MachineSets' % path)
    if has_selector:
        try:
            if not parse_selector(entry['label_selector']):
                errors.append('%s.label_selector: a label selector must be a non-empty string' % path)
        except SelectorError as exc:
            errors.append('%s.label_selector: %s' % (path, exc))
    if has_name and not is_dns_subdomain(entry['name']):
        errors.append('%s.name %r is not a valid MachineSet name (lowercase letters, digits, - and .)'
                      % (path, entry['name']))
    if entry.get('source') not in (None, ''):
        if not has_name:
            errors.append('%s.source (clone a MachineSet) needs name, the name of the new MachineSet' % path)
        if not isinstance(entry['source'], str):
            errors.append('%s.source must be a MachineSet name (string)' % path)
    if entry.get('replicas') is not None and entry.get('source') in (None, ''):
        errors.append('%s.replicas is only used when the MachineSet is created from source; the '
                      'autoscaler owns the replicas of an existing MachineSet' % path)
    return errors


def _node_errors(entry, path):
    """What new nodes get: labels, taints, zone/region, sharing/MIG/vGPU config labels."""
    errors = []
    labels = entry.get('labels')
    if labels is not None and not isinstance(labels, dict):
        errors.append('%s.labels must be a mapping of node labels, got %s' % (path, type_name(labels)))
    for key, value in (labels.items() if isinstance(labels, dict) else ()):
        errors.extend('%s.labels key %s' % (path, e) for e in label_key_errors(key))
        errors.extend('%s.labels[%s] %s' % (path, key, e) for e in label_value_errors(value))
        if key == ACCELERATOR_LABEL:
            errors.append('%s.labels: set the GPU type with accelerator, not labels[%s]' % (path, key))
    errors.extend(taint_errors(entry.get('taints'), path + '.taints'))
    for key in ('zone', 'region', 'sharing_config', 'mig_config', 'vgpu_profile'):
        if entry.get(key) not in (None, ''):
            errors.extend('%s.%s %s' % (path, key, e) for e in label_value_errors(entry[key]))
    if entry.get('mig_config') not in (None, '') and entry.get('allow_mig_preset') is not True:
        errors.append('%s.mig_config: %s' % (path, MIG_PRESET_EXPLANATION))
    if entry.get('allow_mig_preset') not in (None, True, False):
        errors.append('%s.allow_mig_preset must be true or false' % path)
    return errors


def entry_errors(entry, path):
    """Shape errors of one autoscaling_machine_sets entry (no cluster knowledge needed)."""
    if not isinstance(entry, dict):
        return ['%s must be a mapping, got %s' % (path, type_name(entry))]
    errors = unknown_key_errors(entry, ENTRY_KEYS, path)
    errors.extend(_choice_errors(entry, path))
    errors.extend(_int_errors(entry.get('replicas'), path + '.replicas'))
    errors.extend(accelerator_errors(entry.get('accelerator'), path + '.accelerator'))
    for key in ('gpus', 'vcpu', 'memory_mb'):
        errors.extend(_int_errors(entry.get(key), '%s.%s' % (path, key), minimum=1))
    errors.extend(_node_errors(entry, path))
    if entry.get('provider_spec') is not None and not isinstance(entry['provider_spec'], dict):
        errors.append('%s.provider_spec must be a mapping merged into spec.template.spec.providerSpec.value'
                      % path)
    errors.extend(_range_errors(entry, path, 'min_replicas', 'max_replicas', low_required=False, high_minimum=1,
                                high_required=entry.get('machine_autoscaler', True) is not False))
    if entry.get('machine_autoscaler') not in (None, True, False):
        errors.append('%s.machine_autoscaler must be true or false' % path)
    return errors


# --- ClusterAutoscaler settings ---------------------------------------------------------------

def limit_errors(limits):
    """autoscaling_gpu_limits: [{type, min, max}], each type once."""
    if limits is None:
        return []
    if not isinstance(limits, list):
        return ['autoscaling_gpu_limits must be a list of {type, min, max}, got %s' % type_name(limits)]
    errors, seen = [], set()
    for index, limit in enumerate(limits):
        path = 'autoscaling_gpu_limits[%d]' % index
        errors.extend(_limit_entry_errors(limit, path))
        if isinstance(limit, dict) and isinstance(limit.get('type'), str):  # other types: an error above
            if limit.get('type') in seen:
                errors.append('%s: type %s is listed twice' % (path, limit.get('type')))
            seen.add(limit.get('type'))
    return errors


def _limit_entry_errors(limit, path):
    if not isinstance(limit, dict):
        return ['%s must be a mapping {type, min, max}, got %s' % (path, type_name(limit))]
    return (unknown_key_errors(limit, LIMIT_KEYS, path) + accelerator_errors(limit.get('type'), path + '.type')
            + _range_errors(limit, path, 'min', 'max', high_minimum=1))


def resource_limit_errors(resource_limits):
    """autoscaling_resource_limits: maxNodesTotal, cores {min, max}, memory {min, max}."""
    if not resource_limits:
        return []
    if not isinstance(resource_limits, dict):
        return ['autoscaling_resource_limits must be a mapping, got %s' % type_name(resource_limits)]
    errors = unknown_key_errors(resource_limits, ('maxNodesTotal', 'cores', 'memory'), 'autoscaling_resource_limits')
    errors.extend(_int_errors(resource_limits.get('maxNodesTotal'), 'autoscaling_resource_limits.maxNodesTotal'))
    for key in ('cores', 'memory'):
        value = resource_limits.get(key)
        if value is None:
            continue
        path = 'autoscaling_resource_limits.%s' % key
        if not isinstance(value, dict):
            errors.append('%s must be a mapping {min, max}' % path)
            continue
        errors.extend(unknown_key_errors(value, ('min', 'max'), path))
        errors.extend(_range_errors(value, path, 'min', 'max'))
    return errors


def scale_down_errors(scale_down):
    """autoscaling_scale_down: the ClusterAutoscaler scaleDown block."""
    if scale_down in (None, {}):
        return []
    if not isinstance(scale_down, dict):
        return ['autoscaling_scale_down must be a mapping, got %s' % type_name(scale_down)]
    errors = unknown_key_errors(scale_down, SCALE_DOWN_KEYS, 'autoscaling_scale_down')
    if not isinstance(scale_down.get('enabled'), bool):
        errors.append('autoscaling_scale_down.enabled must be true or false')
    for key in SCALE_DOWN_KEYS[1:5]:
        errors.extend(_duration_errors(scale_down.get(key), 'autoscaling_scale_down.' + key))
    threshold = scale_down.get('utilizationThreshold')
    if threshold not in (None, ''):
        if not isinstance(threshold, str) or not re.match(r'^0\.[0-9]+$', threshold):
            errors.append("autoscaling_scale_down.utilizationThreshold must be a quoted string between "
                          "0 and 1 such as '0.5', got %r" % (threshold,))
    return errors


def input_errors(machine_sets, gpu_limits=None, resource_limits=None, scale_down=None,
                 max_node_provision_time=None, cluster_autoscaler_spec=None):
    """Every problem of the role's inputs, before any cluster read."""
    if not isinstance(machine_sets, list):
        return ['autoscaling_machine_sets must be a list, got %s' % type_name(machine_sets)]
    errors = []
    for index, entry in enumerate(machine_sets):
        errors.extend(entry_errors(entry, 'autoscaling_machine_sets[%d]' % index))
    errors.extend(limit_errors(gpu_limits))
    errors.extend(resource_limit_errors(resource_limits))
    errors.extend(scale_down_errors(scale_down))
    errors.extend(_duration_errors(max_node_provision_time, 'autoscaling_max_node_provision_time'))
    if cluster_autoscaler_spec not in (None, {}) and not isinstance(cluster_autoscaler_spec, dict):
        errors.append('autoscaling_cluster_autoscaler_spec must be a mapping')
    return errors
