# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""NVIDIA k8s-device-plugin (v0.20, ``api/config/v1``) sharing config: validate, predict, render.

Pure logic, no I/O. Behaviour mirrors the plugin where it is NVIDIA's (capacity, labels,
active strategy); validation is stricter than the plugin where the plugin silently ignores a
mistake (unknown or mis-cased keys, resources it does not advertise).

Facts (NVIDIA/k8s-device-plugin v0.20.0):
- ``sharing.timeSlicing`` / ``sharing.mps``: ``renameByDefault``, ``failRequestsGreaterThanOne``,
  ``resources`` (required, non-empty) of ``{name, rename?, devices?, replicas >= 2}``
  (api/config/v1/replicas.go). ``rename`` and non-"all" ``devices`` are ignored with a warning
  (``DisableResourceNamingInConfig``); ``renameByDefault`` renames to ``<name>.shared``.
- Active strategy: mps if any mps resource has replicas > 1, else time-slicing, else none; when
  ``mps`` is present its resources are the replicated ones (api/config/v1/sharing.go).
- MPS: refused with migStrategy mixed (cmd/nvidia-device-plugin/main.go validateFlags) and for
  MIG devices (internal/plugin/mps.go); at most 48 clients, 16 below compute capability 7.5
  (cmd/mps-control-daemon/mps/device.go).
- Capacity: each shared physical device becomes ``replicas`` devices under the (renamed) name
  (internal/rm/device_map.go). Unknown resource names are skipped silently.
- GFD: ``<resource>.product`` gets ``-SHARED`` when replicas > 1 and not renamed;
  ``.replicas`` is 1 and ``.sharing-strategy`` none for unshared resources (internal/lm/resource.go).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

try:
    import yaml
except ImportError:  # pragma: no cover - PyYAML ships with ansible-core
    yaml = None

from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.tolerations import (
    is_dns_subdomain, is_int, label_value_errors, type_name, unknown_key_errors)

RESOURCE_PREFIX = 'nvidia.com'
GPU_RESOURCE = 'nvidia.com/gpu'
SHARED_SUFFIX = '.shared'
MIG_STRATEGIES = ('none', 'single', 'mixed')
SHARING_STRATEGIES = ('none', 'time-slicing', 'mps')
MPS_MAX_REPLICAS = 48
MPS_MAX_REPLICAS_BEFORE_7_5 = 16
MAX_RESOURCE_NAME_LENGTH = 63
MIG_RESOURCE_RE = re.compile(r'^nvidia\.com/mig-([1-9][0-9]*g\.[0-9]+gb(?:\.me\.all|\.me|\.gfx|-me)?)$')

_SHARING_KINDS = ('timeSlicing', 'mps')
_ADVERTISES = {'none': 'which advertises only full GPUs, as nvidia.com/gpu',
               'single': 'which advertises MIG devices as nvidia.com/gpu'}
_CONFIGMAP_KEY_RE = re.compile(r'^[-._a-zA-Z0-9]+$')
_UUID = r'[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}'
_DEVICE_REF_RE = re.compile(r'^([0-9]+|[0-9]+:[0-9]+|GPU-%s|MIG-%s|MIG-GPU-%s/[0-9]+/[0-9]+)$' % (_UUID, _UUID, _UUID))
_DEVICE_LIST_STRATEGIES = ('envvar', 'volume-mounts', 'cdi-annotations', 'cdi-cri')
_GO_DURATION_RE = re.compile(r'^(infinite|[-+]?([0-9]*(\.[0-9]*)?(ns|us|\u00b5s|ms|s|m|h))+|0)$')


# --- resource names -------------------------------------------------------------------------

def normalise_resource_name(name):
    """The plugin's spelling of a resource name: ``gpu`` means ``nvidia.com/gpu``."""
    if name.startswith(RESOURCE_PREFIX + '/'):
        return name
    return '%s/%s' % (RESOURCE_PREFIX, name)


def is_mig_resource(name):
    """True for a mixed-strategy MIG resource such as ``nvidia.com/mig-1g.5gb`` or ``...-1g.10gb.me``."""
    return isinstance(name, str) and bool(MIG_RESOURCE_RE.match(name))


def _resource_name_errors(name, path):
    if not isinstance(name, str) or not name:
        return ['%s must be a resource name such as nvidia.com/gpu, got %s' % (path, type_name(name))]
    if '/' in name and not name.startswith(RESOURCE_PREFIX + '/'):
        return ['%s %s: the device plugin only shares %s/ resources, e.g. nvidia.com/gpu' % (path, name, RESOURCE_PREFIX)]
    full = normalise_resource_name(name)
    if len(full) > MAX_RESOURCE_NAME_LENGTH:
        return ['%s %s is longer than %d characters' % (path, full, MAX_RESOURCE_NAME_LENGTH)]
    if not is_dns_subdomain(full.split('/', 1)[1]):
        return ['%s %s is not a valid resource name: after the nvidia.com/ prefix use lowercase '
                'letters, digits, - and . only' % (path, full)]
    return []


# --- structural schema ----------------------------------------------------------------------

class _Mapping(object):
    """Check a mapping: unknown keys (with hints), required keys, then each known key."""

    def __init__(self, fields, required=None, not_null=None):
        self.fields = fields
        self.required = required or {}
        self.not_null = not_null or {}

    def __call__(self, value, path):
        if not isinstance(value, dict):
            return ['%s must be a mapping, got %s' % (path or 'the config', type_name(value))]
        errors = unknown_key_errors(value, tuple(self.fields), path or 'top level')
        for key, hint in self.required.items():
            if value.get(key) is None:
                errors.append('%s is required: %s' % (_join(path, key), hint))
        for key, hint in self.not_null.items():
            if key in value and value[key] is None:
                errors.append('%s is empty (null): %s' % (_join(path, key), hint))
        for key, check in self.fields.items():
            if value.get(key) is not None:
                errors.extend(check(value[key], _join(path, key)))
        return errors


class _List(object):
    """Check a list and each item; ``non_empty`` is the hint given when it is empty."""

    def __init__(self, item, non_empty=None):
        self.item = item
        self.non_empty = non_empty

    def __call__(self, value, path):
        if not isinstance(value, list):
            return ['%s must be a list, got %s' % (path, type_name(value))]
        if not value and self.non_empty:
            return ['%s must not be empty: %s' % (path, self.non_empty)]
        errors = []
        for index, item in enumerate(value):
            errors.extend(self.item(item, '%s[%d]' % (path, index)))
        return errors


def _join(path, key):
    return '%s.%s' % (path, key) if path else key


def _enum(*allowed):
    def check(value, path):
        if value in allowed:
            return []
        return ["%s must be one of %s, got %r" % (path, ', '.join(allowed), value)]
    return check


def _bool(value, path):
    if isinstance(value, bool):
        return []
    return ['%s must be true or false, got %s %r' % (path, type_name(value), value)]


def _string(value, path):
    if isinstance(value, str):
        return []
    return ['%s must be a string, got %s' % (path, type_name(value))]


def _version(value, path):
    if value in ('', 'v1'):
        return []
    return ["%s must be v1 (or omitted), got %r" % (path, value)]


def _replicas(value, path):
    if is_int(value) and value >= 2:
        return []
    return ['%s must be an integer >= 2 (to stop sharing, remove the resource or the whole sharing '
            'block), got %s %r' % (path, type_name(value), value)]


def _devices(value, path):
    if value == 'all' or (is_int(value) and value > 0):
        return []
    if isinstance(value, list) and value and all(_is_device_ref(item) for item in value):
        return []
    return ["%s must be 'all', a count > 0, or a list of GPU indexes ('0'), MIG indexes ('0:1') or "
            "GPU-/MIG- UUIDs, got %r" % (path, value)]


def _is_device_ref(item):
    if is_int(item):
        return item >= 0
    return isinstance(item, str) and bool(_DEVICE_REF_RE.match(item))


def _device_list_strategy(value, path):
    values = [value] if isinstance(value, str) else value
    if isinstance(values, list) and values and all(v in _DEVICE_LIST_STRATEGIES for v in values):
        return []
    return ['%s must be one (or a list) of %s, got %r' % (path, ', '.join(_DEVICE_LIST_STRATEGIES), value)]


def _duration(value, path):
    if is_int(value) or (isinstance(value, str) and _GO_DURATION_RE.match(value)):
        return []
    return ["%s must be a duration such as '60s' or 'infinite', got %r" % (path, value)]


def _imex_channels(value, path):
    if value in ([], [0]):
        return []
    return ['%s must be [] or [0], got %r' % (path, value)]


_REPLICATED_RESOURCE = _Mapping(
    {'name': _resource_name_errors, 'rename': _resource_name_errors, 'devices': _devices, 'replicas': _replicas},
    required={'name': 'the resource to share, e.g. nvidia.com/gpu',
              'replicas': 'an integer >= 2, the number of shares per device'})

_REPLICATED = _Mapping(
    {'renameByDefault': _bool, 'failRequestsGreaterThanOne': _bool,
     'resources': _List(_REPLICATED_RESOURCE, non_empty='list at least one resource to share, '
                        'e.g. [{name: nvidia.com/gpu, replicas: 4}]')},
    required={'resources': 'list at least one resource to share, e.g. [{name: nvidia.com/gpu, replicas: 4}] '
                           '(to disable sharing, remove the whole block)'})

_PATTERN_RESOURCE = _Mapping({'pattern': _string, 'name': _resource_name_errors},
                             required={'pattern': "a device name pattern such as '*'", 'name': 'a resource name'})

_SCHEMA = _Mapping({
    'version': _version,
    'flags': _Mapping({
        'migStrategy': _enum(*MIG_STRATEGIES),
        'failOnInitError': _bool,
        'mpsRoot': _string,
        'nvidiaDriverRoot': _string,
        'nvidiaDevRoot': _string,
        'gdrcopyEnabled': _bool,
        'gdsEnabled': _bool,
        'mofedEnabled': _bool,
        'useNodeFeatureAPI': _bool,
        'deviceDiscoveryStrategy': _enum('auto', 'nvml', 'tegra'),
        'plugin': _Mapping({
            'passDeviceSpecs': _bool,
            'deviceListStrategy': _device_list_strategy,
            'deviceIDStrategy': _enum('uuid', 'index'),
            'cdiAnnotationPrefix': _string,
            'nvidiaCTKPath': _string,
            'containerDriverRoot': _string,
            'sharedDevicesAllocationPolicy': _enum('distributed', 'packed'),
        }),
        'gfd': _Mapping({
            'oneshot': _bool,
            'noTimestamp': _bool,
            'sleepInterval': _duration,
            'outputFile': _string,
            'machineTypeFile': _string,
        }),
    }),
    'resources': _Mapping({'gpus': _List(_PATTERN_RESOURCE), 'mig': _List(_PATTERN_RESOURCE)}),
    'sharing': _Mapping({'timeSlicing': _REPLICATED, 'mps': _REPLICATED},
                        not_null=dict((kind, "the plugin fails with 'no resources specified'; give its resources "
                                             "or remove the key") for kind in _SHARING_KINDS)),
    'imex': _Mapping({'channelIDs': _imex_channels, 'required': _bool}),
})


# --- reading a (structurally valid) config --------------------------------------------------

def _section(mapping, key):
    value = mapping.get(key) if isinstance(mapping, dict) else None
    return value if isinstance(value, dict) else {}


def _sharing_blocks(config):
    """{kind: block} for the sharing kinds present in the config."""
    sharing = _section(config, 'sharing')
    return dict((kind, sharing[kind]) for kind in _SHARING_KINDS if isinstance(sharing.get(kind), dict))


def _active_block(config):
    """The replicated-resources block the plugin uses: mps when present, else timeSlicing."""
    blocks = _sharing_blocks(config)
    return blocks.get('mps', blocks.get('timeSlicing'))


def _shared_resources(block):
    """[(path suffix, normalised name, replicas)] for the well-formed resources of a block."""
    resources = block.get('resources') if isinstance(block, dict) else None
    result = []
    for index, res in enumerate(resources if isinstance(resources, list) else []):
        if isinstance(res, dict) and isinstance(res.get('name'), str) and res['name']:
            result.append(('resources[%d]' % index, normalise_resource_name(res['name']), res.get('replicas')))
    return result


def _is_replicated(block):
    return any(is_int(replicas) and replicas > 1 for _p, _n, replicas in _shared_resources(block))


def sharing_strategy(config):
    """The strategy the plugin activates: 'mps', 'time-slicing' or 'none'."""
    blocks = _sharing_blocks(config)
    if _is_replicated(blocks.get('mps')):
        return 'mps'
    if _is_replicated(blocks.get('timeSlicing')):
        return 'time-slicing'
    return 'none'


def replicas_by_resource(config):
    """{resource name: replicas} for the resources the active strategy shares ({} when unshared)."""
    return dict((name, replicas) for _p, name, replicas in _shared_resources(_active_block(config))
                if is_int(replicas) and replicas > 1)


def _renames_by_default(config):
    block = _active_block(config)
    return bool(block) and block.get('renameByDefault') is True


# --- MIG strategy and compute capability ----------------------------------------------------

def _config_mig_strategy(config):
    value = _section(config, 'flags').get('migStrategy')
    return value if value in MIG_STRATEGIES else None


def effective_mig_strategy(config, mig_strategy=None):
    """The MIG strategy the plugin runs with: the cluster's (argument) over flags.migStrategy, else none.

    The operator passes ClusterPolicy ``mig.strategy`` as the MIG_STRATEGY environment variable,
    which takes precedence over the config file.
    """
    if mig_strategy in MIG_STRATEGIES:
        return mig_strategy
    return _config_mig_strategy(config) or 'none'


def _mig_strategy_errors(config, mig_strategy):
    if mig_strategy is None:
        return []
    if mig_strategy not in MIG_STRATEGIES:
        return ['mig_strategy must be one of none, single, mixed, got %r' % (mig_strategy,)]
    configured = _config_mig_strategy(config)
    if configured and configured != mig_strategy:
        return ["flags.migStrategy is %s but the cluster's MIG strategy is %s (the operator's "
                "MIG_STRATEGY wins); remove flags.migStrategy or make them agree" % (configured, mig_strategy)]
    return []


def parse_compute_capability(value):
    """(major, minor) from '8.0', 8.0, 7.5, '9' or (8, 0); None when it cannot be read."""
    if isinstance(value, (tuple, list)) and len(value) == 2 and all(is_int(v) for v in value):
        return tuple(value)
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return None
    match = re.match(r'^\s*([0-9]+)(?:\.([0-9]+))?\s*$', str(value))
    if not match:
        return None
    return int(match.group(1)), int(match.group(2) or 0)


def mps_max_replicas(compute_capability=None):
    """Most MPS clients per GPU: 48, or 16 when the compute capability is known to be < 7.5."""
    capability = parse_compute_capability(compute_capability)
    if capability is not None and capability < (7, 5):
        return MPS_MAX_REPLICAS_BEFORE_7_5
    return MPS_MAX_REPLICAS


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
    blocks = _sharing_blocks(config)
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


def _block_errors(kind, block, strategy, mps_limit):
    errors = []
    seen = {}
    for suffix, name, replicas in _shared_resources(block):
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
    if _section(config, 'resources'):
        warnings.append("the top-level 'resources' section is ignored by device plugin v0.20 "
                        "(DisableResourceNamingInConfig); remove it")
    for kind, block in _sharing_blocks(config).items():
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
    if 'mps' in _sharing_blocks(config) and effective_mig_strategy(config, mig_strategy) == 'single':
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


# --- predictions ----------------------------------------------------------------------------

def sharing_capacity(config, gpus=None, strategy=None, mig_resources=None):
    """Allocatable GPU resources a node advertises under ``config``.

    ``gpus``: devices advertised as nvidia.com/gpu (full GPUs; MIG devices with strategy single;
    full non-MIG GPUs with mixed). Default 1, or 0 with mixed. ``strategy``: the MIG strategy
    (none|single|mixed; default flags.migStrategy, else none). ``mig_resources``: physical MIG
    counts for mixed, e.g. {'nvidia.com/mig-1g.5gb': 14}. Raises ValueError on invalid input.
    """
    errors = sharing_config_errors(config, mig_strategy=strategy)
    mig = effective_mig_strategy(config, strategy)
    errors.extend(_physical_errors(gpus, mig, mig_resources))
    if errors:
        raise ValueError('; '.join(errors))
    if gpus is None:
        gpus = 0 if mig == 'mixed' else 1
    physical = dict((name, count) for name, count in (mig_resources or {}).items() if count)
    if gpus:
        physical[GPU_RESOURCE] = gpus
    return _replicate(physical, config)


def _physical_errors(gpus, mig, mig_resources):
    errors = []
    if gpus is not None and not (is_int(gpus) and gpus >= 0):
        errors.append('gpus must be an integer >= 0, got %r' % (gpus,))
    if mig_resources is None:
        return errors
    if not isinstance(mig_resources, dict):
        return errors + ['mig_resources must be a mapping of MIG resource to count, got %s' % type_name(mig_resources)]
    if mig_resources and mig != 'mixed':
        errors.append('mig_resources apply only with MIG strategy mixed (it is %s); with single, pass the '
                      'number of MIG devices as gpus' % mig)
    for name, count in sorted(mig_resources.items()):
        if not is_mig_resource(name):
            errors.append('mig_resources key %r is not a MIG resource such as nvidia.com/mig-1g.5gb' % (name,))
        if not (is_int(count) and count >= 0):
            errors.append('mig_resources[%s] must be an integer >= 0, got %r' % (name, count))
    return errors


def _replicate(physical, config):
    """Apply the plugin's replication (internal/rm/device_map.go) to physical counts."""
    capacity = dict(physical)
    rename = _renames_by_default(config)
    for _suffix, name, replicas in _shared_resources(_active_block(config)):
        count = capacity.pop(name, 0)
        if count:
            target = name + SHARED_SUFFIX if rename else name
            capacity[target] = count * replicas
    return dict(sorted(capacity.items()))


def sanitise_product(name):
    """GFD's product sanitising: drop characters outside [A-Za-z0-9-_. ], spaces to '-'."""
    return '-'.join(re.sub(r'[^A-Za-z0-9\-_. ]', '', name).split())


def expected_labels(config, product, gpus, resource=GPU_RESOURCE, mig_profile=None, mig_strategy=None):
    """The GFD labels a node with ``gpus`` devices of ``product`` carries under ``config``.

    ``product`` may be the NVML name ('Tesla T4') or the current label ('Tesla-T4' or
    'Tesla-T4-SHARED'). ``resource`` is nvidia.com/gpu, or a mixed-strategy MIG resource (its
    profile is then taken from the name); ``mig_profile`` is the profile with MIG strategy single.
    ``mig_strategy`` as for ``sharing_config_errors`` (mixed is implied by a MIG ``resource``).
    Returns ``<resource>.product``, ``.count``, ``.replicas``, ``.sharing-strategy`` and
    ``nvidia.com/mps.capable`` (strings). Raises ValueError on an invalid config.
    """
    if mig_strategy is None and is_mig_resource(resource):
        mig_strategy = 'mixed'
    errors = sharing_config_errors(config, mig_strategy)
    if not isinstance(product, str) or not sanitise_product(product):
        errors.append('product must be the GPU product name, e.g. Tesla-T4, got %r' % (product,))
    if not (is_int(gpus) and gpus >= 0):
        errors.append('gpus must be an integer >= 0, got %r' % (gpus,))
    if errors:
        raise ValueError('; '.join(errors))
    if mig_profile is None and is_mig_resource(resource):
        mig_profile = MIG_RESOURCE_RE.match(resource).group(1)
    replicas = replicas_by_resource(config).get(resource, 1)
    strategy = sharing_strategy(config) if replicas > 1 else 'none'
    parts = [_strip_shared(sanitise_product(product))]
    if mig_profile:
        parts.extend(['MIG', sanitise_product(mig_profile)])
    if replicas > 1 and not _renames_by_default(config):
        parts.append('SHARED')
    full_gpus_mps = sharing_strategy(config) == 'mps' and resource == GPU_RESOURCE and not mig_profile
    return {
        resource + '.product': '-'.join(parts),
        resource + '.count': str(gpus),
        resource + '.replicas': str(replicas),
        resource + '.sharing-strategy': strategy,
        'nvidia.com/mps.capable': 'true' if full_gpus_mps else 'false',
    }


def _strip_shared(product):
    return product[:-len('-SHARED')] if product.endswith('-SHARED') else product


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


# Canonical key order of the rendered YAML (unknown keys follow, sorted).
_KEY_ORDER = ('version', 'flags', 'sharing', 'imex',
              'migStrategy', 'failOnInitError', 'mpsRoot', 'nvidiaDriverRoot', 'nvidiaDevRoot', 'plugin', 'gfd',
              'timeSlicing', 'mps',
              'renameByDefault', 'failRequestsGreaterThanOne', 'resources',
              'name', 'rename', 'devices', 'replicas')


def render_profiles(profiles, mig_strategy=None, compute_capability=None):
    """The device-plugin ConfigMap ``data``: {profile name: YAML text}, byte-identical on re-render.

    Keys are emitted in a fixed order whatever the input order; ``version: v1`` is always set.
    Raises ValueError when ``profile_errors`` finds anything.
    """
    errors = profile_errors(profiles, mig_strategy, compute_capability)
    if errors:
        raise ValueError('; '.join(errors))
    return dict((name, render_config(profiles[name])) for name in sorted(profiles))


def render_config(config):
    """One config as YAML text with a canonical key order (no validation).

    Uses PyYAML's pure-Python SafeDumper (not libyaml) so the text is the same on every host.
    """
    if yaml is None:  # pragma: no cover
        raise ValueError('rendering device-plugin profiles needs the PyYAML Python library')
    data = dict(config)
    data['version'] = data.get('version') or 'v1'
    return yaml.safe_dump(_canonical(data), default_flow_style=False, sort_keys=False,
                          allow_unicode=True, width=1000)


def _canonical(value):
    """Plain builtins (no Ansible string/dict subclasses) with dict keys in canonical order."""
    if isinstance(value, dict):
        keys = sorted(value, key=lambda k: (_KEY_ORDER.index(k) if k in _KEY_ORDER else len(_KEY_ORDER), str(k)))
        return dict((str(k), _canonical(value[k])) for k in keys)
    if isinstance(value, (list, tuple)):
        return [_canonical(item) for item in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    return str(value)
