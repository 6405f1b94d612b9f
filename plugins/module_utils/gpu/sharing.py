# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""NVIDIA k8s-device-plugin (v0.20, ``api/config/v1``) sharing config: facts and reading.

Pure logic, no I/O. This file reads a config the way the plugin does (strategy, replicas);
gpu/sharing_checks.py validates one, gpu/sharing_render.py predicts what a node advertises
under it and renders the device-plugin ConfigMap. Behaviour mirrors the plugin where it is NVIDIA's (capacity, labels,
active strategy); validation refuses everything the plugin refuses at start-up, and is stricter
where the plugin silently ignores or reinterprets a mistake (unknown keys, mis-cased keys,
resources it does not advertise, more time-slicing replicas than is sane).

How the plugin reads the file (api/config/v1/config.go parseConfigFrom): ``sigs.k8s.io/yaml``
decodes it with go-yaml v2 (YAML 1.1: plain ``y``, ``n``, ``on``, ``off`` are booleans, ``0o17``,
``1e3``, ``1_000`` are numbers), converts it to JSON and runs ``encoding/json`` into Go structs:
- struct fields without their own UnmarshalJSON (``Config``, ``Flags``, ``Sharing``, ``Imex``)
  match keys case-insensitively (``timeslicing`` IS ``timeSlicing``; with both spellings one
  silently wins) and read an explicit ``null`` as absent (``sharing.mps: null`` is no MPS);
- ``ReplicatedResources`` / ``ReplicatedResource`` (api/config/v1/replicas.go) look keys up
  exactly, and an explicit ``null`` is passed to the field's decoder: ``sharing.timeSlicing:
  null`` fails with "no resources specified", ``rename: null`` with an invalid resource name,
  ``devices: null`` with "the only valid string input is 'all'"; ``renameByDefault`` and
  ``failRequestsGreaterThanOne`` null read as unset;
- integers are Go ``int`` (int64: ``replicas``, a ``devices`` count, ``imex.channelIDs``) and
  device indexes ``uint64`` (``strconv.ParseUint`` for ``'0'``, ``'0:1'``, ``MIG-GPU-.../1/0``);
  anything larger fails to decode.

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

from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import is_int
from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import MIG_STRATEGIES, RESOURCE_DOMAIN

SHARED_SUFFIX = '.shared'
SHARING_STRATEGIES = ('none', 'time-slicing', 'mps')
SHARING_KINDS = ('timeSlicing', 'mps')
MPS_MAX_REPLICAS = 48
MPS_MAX_REPLICAS_BEFORE_7_5 = 16
MAX_RESOURCE_NAME_LENGTH = 63
# Go's int (64-bit platforms) and uint64: the largest values the plugin's fields decode.
GO_INT_MAX = 2 ** 63 - 1
GO_UINT64_MAX = 2 ** 64 - 1
# Sane upper bound of replicas per device (docs/sharing.md, "How the device plugin reads a
# profile"): the plugin advertises replicas x devices entries to the kubelet, all of them in
# every ListAndWatch message.
MAX_REPLICAS = 256
MIG_RESOURCE_RE = re.compile(r'^nvidia\.com/mig-([1-9][0-9]*g\.[0-9]+gb(?:\.me\.all|\.me|\.gfx|-me)?)$')


# --- resource names -------------------------------------------------------------------------

def normalise_resource_name(name):
    """The plugin's spelling of a resource name: ``gpu`` means ``nvidia.com/gpu``."""
    if name.startswith(RESOURCE_DOMAIN + '/'):
        return name
    return '%s/%s' % (RESOURCE_DOMAIN, name)


def is_mig_resource(name):
    """True for a mixed-strategy MIG resource such as ``nvidia.com/mig-1g.5gb`` or ``...-1g.10gb.me``."""
    return isinstance(name, str) and bool(MIG_RESOURCE_RE.match(name))


# --- reading a (structurally valid) config --------------------------------------------------

def section(mapping, key):
    """``mapping[key]`` when both are mappings, else {} (reads a config that may be invalid)."""
    value = mapping.get(key) if isinstance(mapping, dict) else None
    return value if isinstance(value, dict) else {}


def sharing_blocks(config):
    """{kind: block} for the sharing kinds present in the config."""
    sharing = section(config, 'sharing')
    return dict((kind, sharing[kind]) for kind in SHARING_KINDS if isinstance(sharing.get(kind), dict))


def active_block(config):
    """The replicated-resources block the plugin uses: mps when present, else timeSlicing."""
    blocks = sharing_blocks(config)
    return blocks.get('mps', blocks.get('timeSlicing'))


def shared_resources(block):
    """[(path suffix, normalised name, replicas)] for the well-formed resources of a block."""
    resources = block.get('resources') if isinstance(block, dict) else None
    result = []
    for index, res in enumerate(resources if isinstance(resources, list) else []):
        if isinstance(res, dict) and isinstance(res.get('name'), str) and res['name']:
            result.append(('resources[%d]' % index, normalise_resource_name(res['name']), res.get('replicas')))
    return result


def _is_replicated(block):
    return any(is_int(replicas) and replicas > 1 for _p, _n, replicas in shared_resources(block))


def sharing_strategy(config):
    """The strategy the plugin activates: 'mps', 'time-slicing' or 'none'."""
    blocks = sharing_blocks(config)
    if _is_replicated(blocks.get('mps')):
        return 'mps'
    if _is_replicated(blocks.get('timeSlicing')):
        return 'time-slicing'
    return 'none'


def replicas_by_resource(config):
    """{resource name: replicas} for the resources the active strategy shares ({} when unshared)."""
    return dict((name, replicas) for _p, name, replicas in shared_resources(active_block(config))
                if is_int(replicas) and replicas > 1)


def renames_by_default(config):
    block = active_block(config)
    return bool(block) and block.get('renameByDefault') is True


# --- MIG strategy and compute capability ----------------------------------------------------

def config_mig_strategy(config):
    value = section(config, 'flags').get('migStrategy')
    return value if value in MIG_STRATEGIES else None


def effective_mig_strategy(config, mig_strategy=None):
    """The MIG strategy the plugin runs with: the cluster's (argument) over flags.migStrategy, else none.

    The operator passes ClusterPolicy ``mig.strategy`` as the MIG_STRATEGY environment variable,
    which takes precedence over the config file.
    """
    if mig_strategy in MIG_STRATEGIES:
        return mig_strategy
    return config_mig_strategy(config) or 'none'


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
