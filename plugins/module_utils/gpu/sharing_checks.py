# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Validation of NVIDIA k8s-device-plugin sharing configs and named profiles. Pure, no I/O.

Refuses everything NVIDIA's device plugin refuses at start-up (explicit nulls where its decoders
fail on them, integers beyond Go's int/uint64), and is stricter where the plugin silently ignores
or reinterprets a mistake (unknown or mis-cased keys, resources it does not advertise, more than
MAX_REPLICAS replicas); the facts the checks follow are listed in gpu/sharing.py.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import (
    Fields, Items, bool_errors, is_dns_subdomain, is_int, label_value_errors, one_of, string_errors, type_name)
from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import (
    GPU_RESOURCE, MIG_STRATEGIES, MPS_ROOT, RESOURCE_DOMAIN)
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.sharing import (
    GO_INT_MAX, GO_UINT64_MAX, MAX_REPLICAS, MAX_RESOURCE_NAME_LENGTH, MPS_MAX_REPLICAS, SHARED_SUFFIX,
    config_mig_strategy, effective_mig_strategy, is_mig_resource, mps_max_replicas, normalise_resource_name,
    parse_compute_capability, section, shared_resources, sharing_blocks)

_ADVERTISES = {'none': 'which advertises only full GPUs, as nvidia.com/gpu',
               'single': 'which advertises MIG devices as nvidia.com/gpu'}
_CONFIGMAP_KEY_RE = re.compile(r'^[-._a-zA-Z0-9]+$')
_UUID = r'[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}'
_DEVICE_REF_RE = re.compile(r'^([0-9]+|[0-9]+:[0-9]+|GPU-%s|MIG-%s|MIG-GPU-%s/[0-9]+/[0-9]+)$' % (_UUID, _UUID, _UUID))
_DEVICE_LIST_STRATEGIES = ('envvar', 'volume-mounts', 'cdi-annotations', 'cdi-cri')
_GO_DURATION_RE = re.compile(r'^[-+]?(([0-9]*(\.[0-9]*)?(ns|us|\u00b5s|\u03bcs|ms|s|m|h))+|0)$')
_GO_DURATION_PART_RE = re.compile(r'([0-9]*)(?:\.([0-9]*))?(ns|us|\u00b5s|\u03bcs|ms|s|m|h)')
_NS_PER_UNIT = {'ns': 1, 'us': 10 ** 3, '\u00b5s': 10 ** 3, '\u03bcs': 10 ** 3, 'ms': 10 ** 6, 's': 10 ** 9,
                'm': 60 * 10 ** 9, 'h': 3600 * 10 ** 9}
_NULL_FAILS = 'the device plugin fails to start on an explicit null; give a value or remove the key'


# --- structural schema ----------------------------------------------------------------------

def _resource_name_errors(name, path):
    if not isinstance(name, str) or not name:
        return ['%s must be a resource name such as nvidia.com/gpu, got %s' % (path, type_name(name))]
    if '/' in name and not name.startswith(RESOURCE_DOMAIN + '/'):
        return ['%s %s: the device plugin only shares %s/ resources, e.g. nvidia.com/gpu' % (path, name, RESOURCE_DOMAIN)]
    full = normalise_resource_name(name)
    if len(full) > MAX_RESOURCE_NAME_LENGTH:
        return ['%s %s is longer than %d characters' % (path, full, MAX_RESOURCE_NAME_LENGTH)]
    if not is_dns_subdomain(full.split('/', 1)[1]):
        return ['%s %s is not a valid resource name: after the nvidia.com/ prefix use lowercase '
                'letters, digits, - and . only' % (path, full)]
    return []


def _version(value, path):
    if value in ('', 'v1'):
        return []
    return ["%s must be v1 (or omitted), got %r" % (path, value)]


def _replicas(value, path):
    if not (is_int(value) and value >= 2):
        return ['%s must be an integer >= 2 (to stop sharing, remove the resource or the whole sharing '
                'block), got %s %r' % (path, type_name(value), value)]
    if value > MAX_REPLICAS:
        return ['%s %d is more than %d, the most replicas per device gpuops.gpu accepts (the device plugin '
                'advertises replicas x devices entries to the kubelet); lower replicas'
                % (path, value, MAX_REPLICAS)]
    return []


def _devices(value, path):
    if value == 'all' or (is_int(value) and 0 < value <= GO_INT_MAX):
        return []
    if isinstance(value, list) and value and all(_is_device_ref(item) for item in value):
        return []
    return ["%s must be 'all', a count from 1 to %d, or a list of GPU indexes ('0'), MIG indexes ('0:1') or "
            "GPU-/MIG- UUIDs (indexes at most %d), got %r" % (path, GO_INT_MAX, GO_UINT64_MAX, value)]


def _is_device_ref(item):
    """A device reference the plugin decodes: indexes are Go uint64 (replicas.go ParseUint)."""
    if is_int(item):
        return 0 <= item <= GO_UINT64_MAX
    if not isinstance(item, str) or not _DEVICE_REF_RE.match(item):
        return False
    indexes = item.split('/')[1:] if item.startswith('MIG-GPU-') else item.split(':')
    return all(int(index) <= GO_UINT64_MAX for index in indexes if index.isdigit())


def _device_list_strategy(value, path):
    values = [value] if isinstance(value, str) else value
    if isinstance(values, list) and values and all(v in _DEVICE_LIST_STRATEGIES for v in values):
        return []
    return ['%s must be one (or a list) of %s, got %r' % (path, ', '.join(_DEVICE_LIST_STRATEGIES), value)]


def _duration(value, path):
    """A GFD sleep interval: 'infinite', a Go duration string, or nanoseconds (api/config/v1/duration.go)."""
    nanoseconds = value if is_int(value) else _go_duration_ns(value)
    if value == 'infinite' or (nanoseconds is not None and 0 <= nanoseconds <= GO_INT_MAX):
        return []
    return ["%s must be a duration from 0 to about 292 years, such as '60s' or 'infinite', got %r" % (path, value)]


def _go_duration_ns(value):
    """Nanoseconds of a Go duration string ('1h30m', '0.5s'), or None when Go's ParseDuration fails."""
    if not isinstance(value, str) or not _GO_DURATION_RE.match(value):
        return None
    sign = -1 if value.startswith('-') else 1
    total = 0
    for whole, fraction, unit in _GO_DURATION_PART_RE.findall(value):
        if not whole and not fraction:
            return None
        scale = _NS_PER_UNIT[unit]
        total += int(whole or 0) * scale + int(fraction or 0) * scale // 10 ** len(fraction or '')
    return None if total > GO_INT_MAX + (sign < 0) else sign * total


def _imex_channels(value, path):
    if value in ([], [0]):
        return []
    return ['%s must be [] or [0], got %r' % (path, value)]


_REPLICATED_RESOURCE = Fields(
    {'name': _resource_name_errors, 'rename': _resource_name_errors, 'devices': _devices, 'replicas': _replicas},
    required={'name': 'the resource to share, e.g. nvidia.com/gpu',
              'replicas': 'an integer >= 2, the number of shares per device'},
    not_null={'rename': _NULL_FAILS + " (its resource name decoder reads null as '')",
              'devices': _NULL_FAILS + " ('devices set as '' but the only valid string input is 'all''); "
                                       "omit devices to share all devices"})


_REPLICATED = Fields(
    {'renameByDefault': bool_errors, 'failRequestsGreaterThanOne': bool_errors,
     'resources': Items(_REPLICATED_RESOURCE, non_empty='list at least one resource to share, '
                        'e.g. [{name: nvidia.com/gpu, replicas: 4}]')},
    required={'resources': 'list at least one resource to share, e.g. [{name: nvidia.com/gpu, replicas: 4}] '
                           '(to disable sharing, remove the whole block)'})


_PATTERN_RESOURCE = Fields({'pattern': string_errors, 'name': _resource_name_errors},
                           required={'pattern': "a device name pattern such as '*'", 'name': 'a resource name'})


_SCHEMA = Fields({
    'version': _version,
    'flags': Fields({
        'migStrategy': one_of(*MIG_STRATEGIES),
        'failOnInitError': bool_errors,
        'mpsRoot': string_errors,
        'nvidiaDriverRoot': string_errors,
        'nvidiaDevRoot': string_errors,
        'gdrcopyEnabled': bool_errors,
        'gdsEnabled': bool_errors,
        'mofedEnabled': bool_errors,
        'useNodeFeatureAPI': bool_errors,
        'deviceDiscoveryStrategy': one_of('auto', 'nvml', 'tegra'),
        'plugin': Fields({
            'passDeviceSpecs': bool_errors,
            'deviceListStrategy': _device_list_strategy,
            'deviceIDStrategy': one_of('uuid', 'index'),
            'cdiAnnotationPrefix': string_errors,
            'nvidiaCTKPath': string_errors,
            'containerDriverRoot': string_errors,
            'sharedDevicesAllocationPolicy': one_of('distributed', 'packed'),
        }),
        'gfd': Fields({
            'oneshot': bool_errors,
            'noTimestamp': bool_errors,
            'sleepInterval': _duration,
            'outputFile': string_errors,
            'machineTypeFile': string_errors,
        }),
    }),
    'resources': Fields({'gpus': Items(_PATTERN_RESOURCE), 'mig': Items(_PATTERN_RESOURCE)}),
    # An explicit mps: null is no MPS to the plugin (a nil pointer), timeSlicing: null fails.
    'sharing': Fields({'timeSlicing': _REPLICATED, 'mps': _REPLICATED},
                      not_null={'timeSlicing': "the plugin fails with 'no resources specified'; give its resources "
                                               "or remove the key"}),
    'imex': Fields({'channelIDs': _imex_channels, 'required': bool_errors}),
})


# --- validation -----------------------------------------------------------------------------

def sharing_config_errors(config, mig_strategy=None, compute_capability=None):
    """Validate one device-plugin config (a dict); returns messages, [] when valid.

    ``mig_strategy`` is the cluster's MIG strategy (ClusterPolicy ``mig.strategy``) when known;
    ``compute_capability`` (e.g. '7.0') lowers the MPS replica limit to 16 below 7.5.
    """
    if not isinstance(config, dict):
        return ['the sharing config must be a mapping (one device-plugin config, e.g. '
                '{version: v1, sharing: {timeSlicing: {...}}}), got %s' % type_name(config)]
    errors = _SCHEMA(config, '') + _mig_strategy_errors(config, mig_strategy)
    if compute_capability is not None and parse_compute_capability(compute_capability) is None:
        errors.append("compute_capability must look like '8.0', got %r" % (compute_capability,))
    strategy = effective_mig_strategy(config, mig_strategy)
    blocks = sharing_blocks(config)
    if len(blocks) == 2:
        errors.append('set either sharing.timeSlicing or sharing.mps, not both: the plugin uses '
                      'sharing.mps and silently ignores sharing.timeSlicing')
    if 'mps' in blocks and strategy == 'mixed':
        errors.append("sharing.mps cannot be used with MIG strategy mixed (the plugin refuses to start: "
                      "'using --mig-strategy=mixed is not supported with MPS'); use MIG strategy none "
                      "or single, or sharing.timeSlicing")
    for kind, block in blocks.items():
        errors.extend(_block_errors(kind, block, strategy, mps_max_replicas(compute_capability)))
    return errors


def _mig_strategy_errors(config, mig_strategy):
    if mig_strategy is None:
        return []
    if mig_strategy not in MIG_STRATEGIES:
        return ['mig_strategy must be one of none, single, mixed, got %r' % (mig_strategy,)]
    configured = config_mig_strategy(config)
    if configured and configured != mig_strategy:
        return ["flags.migStrategy is %s but the cluster's MIG strategy is %s (the operator's "
                "MIG_STRATEGY wins); remove flags.migStrategy or make them agree" % (configured, mig_strategy)]
    return []


def _block_errors(kind, block, strategy, mps_limit):
    errors = []
    seen = {}
    for suffix, name, replicas in shared_resources(block):
        path = 'sharing.%s.%s' % (kind, suffix)
        if _resource_name_errors(name, path):
            continue
        errors.extend(_resource_kind_errors(kind, name, strategy, path))
        if name in seen:
            errors.append('%s.name %s is listed twice (also at %s); list each resource once'
                          % (path, name, seen[name]))
        seen.setdefault(name, path)
        if kind == 'mps' and is_int(replicas) and replicas > mps_limit:
            errors.append('%s.replicas %d exceeds the MPS limit of %d clients per GPU%s; lower replicas'
                          % (path, replicas, mps_limit, ' (compute capability < 7.5)'
                             if mps_limit < MPS_MAX_REPLICAS else ''))
    return errors


def _resource_kind_errors(kind, name, strategy, path):
    """Is ``name`` a resource this strategy pair can share?"""
    where = '%s.name %s' % (path, name)
    if name == GPU_RESOURCE:
        return []
    if is_mig_resource(name):
        if kind == 'mps':
            return ['%s: MPS cannot share MIG devices (the plugin fails with "sharing using MPS is not '
                    'supported for MIG devices"); use sharing.timeSlicing for nvidia.com/mig-* resources' % where]
        if strategy != 'mixed':
            return ['%s is only advertised with MIG strategy mixed (the MIG strategy is %s, %s); share '
                    'nvidia.com/gpu or use MIG strategy mixed' % (where, strategy, _ADVERTISES[strategy])]
        return []
    if name.endswith(SHARED_SUFFIX):
        return ["%s: name is the resource to share; '%s' names come from renameByDefault: true; use name: %s "
                "with renameByDefault: true" % (where, SHARED_SUFFIX, name[:-len(SHARED_SUFFIX)])]
    return ['%s is not a resource the device plugin advertises, so nothing would be shared; use %s%s'
            % (where, GPU_RESOURCE, ' or nvidia.com/mig-<profile> (e.g. nvidia.com/mig-1g.5gb)'
               if strategy == 'mixed' else '')]


def sharing_config_warnings(config, mig_strategy=None):
    """Things the plugin accepts but ignores or only supports conditionally (for task warnings)."""
    warnings = []
    if section(config, 'resources'):
        warnings.append("the top-level 'resources' section is ignored by device plugin v0.20 "
                        "(DisableResourceNamingInConfig); remove it")
    for kind, block in sharing_blocks(config).items():
        resources = block.get('resources') if isinstance(block.get('resources'), list) else []
        for index, res in enumerate(resources):
            path = 'sharing.%s.resources[%d]' % (kind, index)
            if not isinstance(res, dict):
                continue
            if _rename_is_ignored(res, block.get('renameByDefault') is True):
                warnings.append('%s.rename is ignored by device plugin v0.20; use renameByDefault: true '
                                'to advertise <name>.shared' % path)
            if res.get('devices') not in (None, 'all'):
                warnings.append('%s.devices is ignored by device plugin v0.20: all devices are shared' % path)
    if 'mps' in sharing_blocks(config) and effective_mig_strategy(config, mig_strategy) == 'single':
        warnings.append('MPS with MIG strategy single works only on nodes whose GPUs have MIG disabled; '
                        'the plugin fails on MIG-enabled GPUs')
    return warnings


def _rename_is_ignored(resource, rename_by_default):
    """True when ``rename`` differs from what the plugin forces (<name>.shared or no rename)."""
    rename, name = resource.get('rename'), resource.get('name')
    if not rename or not isinstance(rename, str) or not isinstance(name, str):
        return bool(rename)
    forced = normalise_resource_name(name) + SHARED_SUFFIX if rename_by_default else None
    return normalise_resource_name(rename) != forced


# --- profiles: the device-plugin ConfigMap --------------------------------------------------

def profile_name_errors(name):
    """A profile name is a ConfigMap key AND the value of the node label nvidia.com/device-plugin.config."""
    if not isinstance(name, str) or not _CONFIGMAP_KEY_RE.match(name) or len(name) > 253:
        return ['profile name %r must be a ConfigMap key: letters, digits, -, _ and . only' % (name,)]
    if label_value_errors(name):
        return ["profile name %r is used as the value of the node label nvidia.com/device-plugin.config, so it "
                "must be at most 63 characters and start and end with a letter or digit" % (name,)]
    return []


def profile_errors(profiles, mig_strategy=None, compute_capability=None, default=None):
    """Validate named profiles {name: config}; ``default`` (devicePlugin.config.default) must be one of them."""
    if not isinstance(profiles, dict) or not profiles:
        return ['profiles must be a non-empty mapping of profile name to device-plugin config, e.g. '
                '{time-sliced-4: {sharing: {timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 4}]}}}}, '
                'got %s' % ('an empty mapping' if profiles == {} else type_name(profiles))]
    errors = []
    for name in sorted(profiles, key=str):
        errors.extend(profile_name_errors(name))
        errors.extend("profile '%s': %s" % (name, error)
                      for error in sharing_config_errors(profiles[name], mig_strategy, compute_capability))
    if default is not None and default not in profiles:
        errors.append("default profile %r is not one of the profiles (%s)"
                      % (default, ', '.join(sorted(str(n) for n in profiles))))
    return errors


# --- ClusterPolicy devicePlugin.mps.root ----------------------------------------------------

def mps_root_errors(value, option='sharing_mps_root'):
    """Why ``value`` may not be set as ClusterPolicy ``devicePlugin.mps.root`` ([] when it may): the GPU operator
    mounts that host directory read-write into the privileged MPS control daemon and the device plugin, so only
    MPS_ROOT, the directory both use (docs/facts.md#mps-root), is accepted, exactly as the rollout account's
    admission policy accepts it; empty means "leave the ClusterPolicy's as it is"."""
    if value in ('', None) or value == MPS_ROOT:
        return []
    shown = ('%r' % (value,)) if isinstance(value, str) else '%s %r' % (type_name(value), value)
    return ['%s must be %s (the host directory of the NVIDIA device plugin and its MPS control daemon, the GPU '
            "operator's default), or empty to leave the ClusterPolicy's devicePlugin.mps.root as it is; got %s"
            % (option, MPS_ROOT, shown)]
