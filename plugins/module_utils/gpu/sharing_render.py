# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What a device-plugin sharing config produces: the capacity and GFD labels of a node under it,
and the device-plugin ConfigMap text. Pure, no I/O (facts in gpu/sharing.py).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

try:
    import yaml
except ImportError:  # pragma: no cover - PyYAML ships with ansible-core
    yaml = None

from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import is_int, type_name
from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import GPU_RESOURCE
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.sharing import (
    MIG_RESOURCE_RE, SHARED_SUFFIX, active_block, effective_mig_strategy, is_mig_resource, renames_by_default,
    replicas_by_resource, shared_resources, sharing_strategy)
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.sharing_checks import profile_errors, sharing_config_errors


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
    rename = renames_by_default(config)
    for _suffix, name, replicas in shared_resources(active_block(config)):
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
    if replicas > 1 and not renames_by_default(config):
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


# --- the device-plugin ConfigMap ------------------------------------------------------------

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


# A key may stay plain when it is an identifier that no YAML 1.1 reader resolves to anything but
# a string (go-yaml v2 reads y, n, on, off, yes, no, true, false as booleans, null and ~ as null).
_PLAIN_KEY_RE = re.compile(r'^[A-Za-z][A-Za-z0-9]*$')
_YAML11_WORDS = ('y', 'n', 'yes', 'no', 'on', 'off', 'true', 'false', 'null')


class _Quoted(str):
    """A string value: always emitted quoted, so every YAML 1.1 reader reads back this string."""


if yaml is not None:
    class _Dumper(yaml.SafeDumper):  # pylint: disable=too-many-ancestors
        """SafeDumper that quotes every string value (and every key that is not a plain identifier)."""

    _Dumper.add_representer(
        _Quoted, lambda dumper, value: dumper.represent_scalar('tag:yaml.org,2002:str', str(value), style="'"))


def render_config(config):
    """One config as YAML text with a canonical key order (no validation).

    Every string value is quoted: NVIDIA's device plugin reads the file with go-yaml v2 (YAML
    1.1), where a plain ``y``, ``off``, ``0o17`` or ``1e3`` is a boolean or a number, not the
    string we meant. Integers, booleans and null stay plain. Uses PyYAML's pure-Python dumper (not
    libyaml) so the text is the same on every host.
    """
    if yaml is None:  # pragma: no cover
        raise ValueError('rendering device-plugin profiles needs the PyYAML Python library')
    data = dict(config)
    data['version'] = data.get('version') or 'v1'
    return yaml.dump(_canonical(data), Dumper=_Dumper, default_flow_style=False, sort_keys=False,
                     allow_unicode=True, width=1000)


def _canonical(value):
    """Plain builtins (no Ansible string/dict subclasses) with dict keys in canonical order;
    string values become ``_Quoted``, keys stay plain only when ``_plain_key`` allows it."""
    if isinstance(value, dict):
        keys = sorted(value, key=lambda k: (_KEY_ORDER.index(k) if k in _KEY_ORDER else len(_KEY_ORDER), str(k)))
        return dict((_key(k), _canonical(value[k])) for k in keys)
    if isinstance(value, (list, tuple)):
        return [_canonical(item) for item in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    return _Quoted(value)


def _key(key):
    key = str(key)
    return key if _PLAIN_KEY_RE.match(key) and key.lower() not in _YAML11_WORDS else _Quoted(key)
