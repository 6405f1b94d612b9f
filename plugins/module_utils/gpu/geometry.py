# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""MIG geometry logic: does a layout fit a GPU, what does a node advertise.

Pure functions, no I/O. A *geometry* is a mig-parted ``mig-devices`` map
(profile -> count) for ONE GPU. Placement follows NVML: a GPU instance
occupies ``size`` consecutive memory slices starting at one of its profile's
placement starts, and instances may not overlap (nvidia-facts.md 1.1).

Resource names follow the k8s-device-plugin (v0.20.0, internal/rm/rm.go):
``nvidia.com/mig-`` + profile with ``+`` replaced by ``.``, so ``1g.5gb+me``
is advertised as ``nvidia.com/mig-1g.5gb.me`` under the mixed strategy.

mig-parted semantics mirrored here (NVIDIA/mig-parted v0.15.0):
- every entry whose device-filter and devices match a GPU is applied to it,
  in document order, and each apply replaces the GPU's layout, so for one GPU
  the LAST matching entry wins (cmd/nvidia-mig-parted/apply/config.go,
  pkg/mig/config/config.go SetMigConfig clears before creating);
- the built-in configs are what mig-manager generates from the hardware
  (pkg/mig/builder): all-disabled, all-enabled, all-balanced, all-<profile>.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import difflib
import re

from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.catalog import (
    NVIDIA_VENDOR_ID,
    MigCatalogError,
    get_product,
    is_media_extension,
    packed_pci_ids,
    parse_profile,
    product_names,
    products_with_profile,
    require_product,
    type_name,
)

GPU_RESOURCE = 'nvidia.com/gpu'
MIG_RESOURCE_PREFIX = 'nvidia.com/mig-'
STRATEGIES = ('none', 'single', 'mixed')
MIG_PARTED_VERSION = 'v1'
DOCUMENT_KEYS = ('version', 'mig-configs')
ENTRY_KEYS = ('device-filter', 'devices', 'mig-enabled', 'mig-devices')
# Kubernetes label value: the config name is the value of nvidia.com/mig.config.
_LABEL_VALUE_RE = re.compile(r'^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$')
# strconv.ParseUint(s, 0, 32) forms we accept: hex with 0x, or plain decimal.
_PCI_ID_RE = re.compile(r'^(0[xX][0-9A-Fa-f]{1,8}|[1-9][0-9]*|0)$')
# mig-parted pkg/mig/builder/balanced.go: slots -> {g: count}
_BALANCED_FORMULA = {7: {1: 2, 2: 1, 3: 1}, 4: {1: 2, 2: 1}}


class MigGeometryError(ValueError):
    """A geometry, config or capacity question that has no valid answer."""


def resource_name(profile):
    """Device-plugin resource for a MIG profile (mixed strategy)."""
    return MIG_RESOURCE_PREFIX + profile.replace('+', '.')


def config_name_for(profile):
    """Operator/mig-manager built-in config name for a profile: all-1g.5gb.me."""
    return 'all-' + profile.replace('+', '.')


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------

def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _nonzero(geometry):
    return dict((name, count) for name, count in (geometry or {}).items() if count)


def _format_geometry(geometry):
    return '{%s}' % ', '.join('%s: %d' % (name, count) for name, count in sorted(geometry.items()))


def _format_starts(starts):
    starts = sorted(starts)
    if len(starts) > 2 and starts == list(range(starts[0], starts[-1] + 1)):
        return '%d-%d' % (starts[0], starts[-1])
    return ','.join(str(s) for s in starts)


def _resolve(product, overrides):
    """(entry, errors) for a product name."""
    try:
        return require_product(product, overrides), []
    except MigCatalogError as exc:
        return None, [str(exc)]


def _entry_or_raise(product, overrides):
    entry, errors = _resolve(product, overrides)
    if errors:
        raise MigGeometryError('; '.join(errors))
    return entry


def _check_strategy(strategy):
    if strategy not in STRATEGIES:
        raise MigGeometryError("strategy must be one of %s, got %r" % (', '.join(STRATEGIES), strategy))


def _check_gpu_count(value, name):
    if not _is_int(value) or value < 1:
        raise MigGeometryError('%s must be a positive integer, got %r' % (name, value))


# ---------------------------------------------------------------------------
# Geometry validation and placement
# ---------------------------------------------------------------------------

def _shape_errors(geometry):
    """Type checks that mig-parted itself performs when it parses mig-devices."""
    if not isinstance(geometry, dict):
        return ['geometry must be a mapping of MIG profile -> count, got %s' % type_name(geometry)]
    errors = []
    for name, count in geometry.items():
        if not isinstance(name, str):
            errors.append('profile names must be strings, got %s %r' % (type_name(name), name))
        elif not _is_int(count) or count < 0:
            errors.append("count for '%s' must be a non-negative integer, got %r (%s)"
                          % (name, count, type_name(count)))
    if not errors and geometry and not any(geometry.values()):
        errors.append('all counts are 0, which mig-parted rejects; use {} for MIG enabled '
                      'with no instances, or disable MIG')
    return errors


def _unknown_profile_error(name, entry, overrides):
    valid = ', '.join(sorted(entry['profiles'], key=_profile_sort_key)) or 'none (not MIG-capable)'
    message = "profile '%s' is not valid for %s; valid: %s" % (name, entry['product'], valid)
    elsewhere = products_with_profile(name, overrides) if parse_profile(name) else []
    if elsewhere:
        message += ' (%s is a profile of %s)' % (name, ', '.join(elsewhere))
    elif parse_profile(name) is None:
        message += ' (malformed name: expected <g>g.<gb>gb[+me], e.g. 1g.10gb)'
    return message


def _profile_sort_key(name):
    parts = parse_profile(name) or {'g': 0, 'gb': 0}
    return (parts['g'], parts['gb'], name)


def _limit_errors(geometry, entry):
    """Per-profile maxima and the GPU's single set of media engines."""
    product, profiles = entry['product'], entry['profiles']
    media = dict((n, c) for n, c in geometry.items() if is_media_extension(n))
    errors = []
    if sum(media.values()) > 1:
        errors.append('at most one media-extension (+me) instance fits on one %s (one set of media '
                      'engines per GPU); requested %s' % (product, _format_geometry(media)))
    for name, count in sorted(geometry.items()):
        limit = profiles[name]['max']
        if count > limit and not (errors and name in media):
            errors.append('%s: %d requested, at most %d fit on one %s' % (name, count, limit, product))
    return errors


def _compute_errors(geometry, entry):
    """Compute slices: implied by placement on NVIDIA's tables, checked for overrides."""
    compute = sum(entry['profiles'][n]['compute_slices'] * c for n, c in geometry.items())
    if compute <= entry['compute_slices']:
        return []
    return ['geometry %s needs %d compute slices; %s has %d'
            % (_format_geometry(geometry), compute, entry['product'], entry['compute_slices'])]


def _minus_one(geometry, name):
    smaller = dict(geometry)
    smaller[name] -= 1
    return smaller


def _no_fit_error(geometry, entry):
    profiles, slices = entry['profiles'], entry['memory_slices']
    used = sum(profiles[n]['size'] * c for n, c in geometry.items())
    rules = '; '.join('%s starts at %s' % (n, _format_starts(profiles[n]['placements']))
                      for n in sorted(geometry, key=_profile_sort_key, reverse=True))
    message = ('geometry %s does not fit on one %s: it needs %d of %d memory slices and no '
               'non-overlapping placement exists (%s)'
               % (_format_geometry(geometry), entry['product'], used, slices, rules))
    removable = [n for n in sorted(geometry) if find_placement(_minus_one(geometry, n), entry)]
    if removable:
        message += '; it fits with one instance fewer of %s' % ' or '.join(removable)
    return message


def geometry_errors(geometry, product, overrides=None):
    """Human-readable reasons why ``geometry`` cannot be created on one GPU of ``product``.

    An empty list means it fits. ``geometry`` None or {} means no MIG instances.
    """
    entry, errors = _resolve(product, overrides)
    if errors:
        return errors
    geometry = {} if geometry is None else geometry
    errors = _shape_errors(geometry)
    if errors:
        return errors
    active = _nonzero(geometry)
    if active and not entry['mig_capable']:
        return ['%s is not MIG-capable; use an empty geometry ({}) with MIG disabled' % entry['product']]
    unknown = [_unknown_profile_error(n, entry, overrides) for n in sorted(active) if n not in entry['profiles']]
    if unknown:
        return unknown
    errors = _limit_errors(active, entry)
    if errors:
        return errors
    if find_placement(active, entry) is None:
        return [_no_fit_error(active, entry)]
    return _compute_errors(active, entry)


def _instances(geometry, profiles):
    """One item per instance, most constrained first (largest, fewest starts)."""
    items = []
    for name, count in geometry.items():
        profile = profiles[name]
        items.extend([(name, profile['size'], sorted(profile['placements']))] * count)
    items.sort(key=lambda item: (-item[1], len(item[2]), item[0]))
    return items


def find_placement(geometry, entry):
    """Non-overlapping placement for ``geometry`` on one GPU described by catalog ``entry``.

    Returns ``[{'profile': name, 'start': slice, 'size': slices}, ...]`` sorted by
    start, or None when no placement exists. Raises MigGeometryError for profiles
    the entry does not have.
    """
    geometry = _nonzero(geometry)
    unknown = sorted(set(geometry) - set(entry['profiles']))
    if unknown:
        raise MigGeometryError("profile(s) %s not offered by %s" % (', '.join(unknown), entry['product']))
    instances = _instances(geometry, entry['profiles'])
    slices = entry['memory_slices']
    chosen = []

    def place(index, occupied):
        if index == len(instances):
            return True
        name, size, starts = instances[index]
        # Identical instances are interchangeable: only try increasing starts.
        floor = chosen[-1][1] + 1 if index and instances[index - 1][0] == name else 0
        for start in starts:
            mask = ((1 << size) - 1) << start
            if start < floor or start + size > slices or occupied & mask:
                continue
            chosen.append((name, start, size))
            if place(index + 1, occupied | mask):
                return True
            chosen.pop()
        return False

    if not place(0, 0):
        return None
    return [{'profile': n, 'start': s, 'size': z} for n, s, z in sorted(chosen, key=lambda c: (c[1], c[0]))]


# ---------------------------------------------------------------------------
# Capacity
# ---------------------------------------------------------------------------

def _add(capacity, resource, count):
    capacity[resource] = capacity.get(resource, 0) + count


def _node_capacity(states, strategy):
    """Allocatable resources of a node from per-GPU (mig_enabled, geometry) states.

    Mirrors k8s-device-plugin v0.20.0 internal/rm/device_map.go: with 'none'
    every GPU is nvidia.com/gpu; with 'mixed' MIG-disabled GPUs are
    nvidia.com/gpu and MIG devices are nvidia.com/mig-<profile>; with 'single'
    all GPUs must share one migEnabled value, no MIG GPU may be empty and all
    MIG devices must be one profile, each then counted as nvidia.com/gpu.
    """
    if strategy == 'none':
        return {GPU_RESOURCE: len(states)}
    if strategy == 'mixed':
        capacity = {}
        for enabled, geometry in states:
            if not enabled:
                _add(capacity, GPU_RESOURCE, 1)
            for name, count in sorted(geometry.items()):
                _add(capacity, resource_name(name), count)
        return dict(sorted(capacity.items()))
    enabled = [geometry for mig_enabled, geometry in states if mig_enabled]
    if not enabled:
        return {GPU_RESOURCE: len(states)}
    if len(enabled) != len(states):
        raise MigGeometryError("strategy 'single' needs MIG enabled on all GPUs of a node or on none; "
                               "%d of %d GPUs would have MIG enabled (use strategy 'mixed')"
                               % (len(enabled), len(states)))
    if not all(enabled):
        raise MigGeometryError("strategy 'single' rejects a GPU with MIG enabled but no MIG devices; "
                               "give every GPU instances or disable MIG")
    names = sorted(set(name for geometry in enabled for name in geometry))
    if len(names) > 1:
        raise MigGeometryError("strategy 'single' needs one MIG profile per node, got %s; use strategy "
                               "'mixed' or a homogeneous geometry such as %s"
                               % (', '.join(names), config_name_for(names[0])))
    return {GPU_RESOURCE: sum(sum(geometry.values()) for geometry in enabled)}


def mig_capacity(geometry, product, strategy='mixed', gpus=1, overrides=None):
    """Expected allocatable for ``gpus`` GPUs of ``product`` all using ``geometry``.

    An empty (or None) geometry means MIG disabled: ``{'nvidia.com/gpu': gpus}``.
    Raises MigGeometryError when the geometry is invalid or the strategy cannot
    expose it.
    """
    _check_strategy(strategy)
    _check_gpu_count(gpus, 'gpus')
    errors = geometry_errors(geometry, product, overrides)
    if errors:
        raise MigGeometryError('; '.join(errors))
    active = _nonzero(geometry)
    return _node_capacity([(bool(active), active)] * gpus, strategy)


# ---------------------------------------------------------------------------
# mig-parted documents: structure
# ---------------------------------------------------------------------------

def _unexpected_key_error(path, key, allowed):
    message = "%s: unexpected field '%s' (allowed: %s)" % (path, key, ', '.join(allowed))
    close = difflib.get_close_matches(str(key), allowed, n=1)
    if close:
        message += "; did you mean '%s'?" % close[0]
    return message


def parse_device_filter(value):
    """Packed IDs of a device-filter: list of (device<<16|vendor, subsystem or None).

    Raises MigGeometryError with the offending text.
    """
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise MigGeometryError('device-filter must be a string or a list of strings, got %s' % type_name(value))
    parsed = []
    for item in items:
        parts = item.split(':')
        if len(parts) > 2 or not all(_PCI_ID_RE.match(p) for p in parts):
            raise MigGeometryError("device-filter '%s' is not a packed PCI ID like '0x20B010DE' "
                                   "(optionally ':<subsystem id>')" % item)
        packed = int(parts[0], 0)
        if packed & 0xFFFF != NVIDIA_VENDOR_ID:
            raise MigGeometryError("device-filter '%s' does not name an NVIDIA device: IDs are packed as "
                                   "<device><vendor>, e.g. '0x%04X10DE'" % (item, packed & 0xFFFF))
        parsed.append((packed, int(parts[1], 0) if len(parts) == 2 else None))
    return parsed


def _devices_errors(path, devices):
    if devices == 'all':
        return []
    if not isinstance(devices, list):
        return ["%s.devices must be 'all' or a list of GPU indices, got %r" % (path, devices)]
    if not devices:
        return ['%s.devices is an empty list, so the entry applies to no GPU' % path]
    if not all(_is_int(d) and d >= 0 for d in devices):
        return ['%s.devices must list non-negative integer GPU indices, got %r' % (path, devices)]
    if len(set(devices)) != len(devices):
        return ['%s.devices lists a GPU index twice: %r' % (path, devices)]
    return []


def _mig_devices_errors(path, entry):
    enabled, has_devices = entry.get('mig-enabled'), 'mig-devices' in entry
    devices = entry.get('mig-devices')
    if enabled is True and not has_devices:
        return ["%s: 'mig-devices' is required when mig-enabled is true (use {} for no instances)" % path]
    if enabled is False and devices:
        return ['%s: mig-devices must be empty when mig-enabled is false' % path]
    if not has_devices or (devices is None and enabled is False):
        return []
    errors = ['%s.mig-devices: %s' % (path, e) for e in _shape_errors(devices)]
    if not errors:
        errors = ["%s.mig-devices: malformed profile name '%s' (expected e.g. 1g.10gb or 1g.10gb+me)"
                  % (path, name) for name in sorted(devices) if parse_profile(name) is None]
    return errors


def _entry_errors(path, entry):
    if not isinstance(entry, dict):
        return ['%s must be a mapping, got %s' % (path, type_name(entry))]
    errors = [_unexpected_key_error(path, k, ENTRY_KEYS) for k in sorted(entry, key=str) if k not in ENTRY_KEYS]
    for key in ('devices', 'mig-enabled'):
        if key not in entry:
            errors.append("%s: missing required field '%s'" % (path, key))
    if 'devices' in entry:
        errors.extend(_devices_errors(path, entry['devices']))
    if 'mig-enabled' in entry and not isinstance(entry['mig-enabled'], bool):
        errors.append('%s.mig-enabled must be true or false, got %r' % (path, entry['mig-enabled']))
    if entry.get('device-filter') not in (None, '', []):
        try:
            parse_device_filter(entry['device-filter'])
        except MigGeometryError as exc:
            errors.append('%s: %s' % (path, exc))
    errors.extend(_mig_devices_errors(path, entry))
    return errors


def _config_errors(name, entries):
    path = 'mig-configs.%s' % name
    errors = []
    if not isinstance(name, str) or len(name) > 63 or not _LABEL_VALUE_RE.match(name):
        errors.append("config name %r cannot be a value of the nvidia.com/mig.config label (at most 63 "
                      "characters: letters, digits, '-', '_', '.', starting and ending alphanumeric)" % (name,))
    if not isinstance(entries, list) or not entries:
        errors.append('%s must be a non-empty list of entries' % path)
        return errors
    for index, entry in enumerate(entries):
        errors.extend(_entry_errors('%s[%d]' % (path, index), entry))
    return errors


def _document_errors(document):
    if not isinstance(document, dict):
        return ['mig-parted config must be a mapping, got %s' % type_name(document)]
    errors = [_unexpected_key_error('mig-parted config', k, DOCUMENT_KEYS)
              for k in sorted(document, key=str) if k not in DOCUMENT_KEYS]
    if 'version' not in document:
        errors.append("missing 'version' (must be '%s')" % MIG_PARTED_VERSION)
    elif document['version'] != MIG_PARTED_VERSION:
        errors.append("unknown version %r; mig-parted supports only '%s'" % (document['version'], MIG_PARTED_VERSION))
    configs = document.get('mig-configs')
    if not isinstance(configs, dict) or not configs:
        errors.append("'mig-configs' must be a non-empty mapping of config name -> entries")
        return errors
    for name, entries in configs.items():
        errors.extend(_config_errors(name, entries))
    return errors


# ---------------------------------------------------------------------------
# mig-parted documents: what each GPU of a product gets
# ---------------------------------------------------------------------------

def _filter_matches(entry, pci_ids):
    """mig-parted MatchesDeviceFilter on the primary ID (subsystems are unknown here)."""
    value = entry.get('device-filter')
    if value in (None, '', []):
        return True
    return any(packed in pci_ids for packed, subsystem in parse_device_filter(value))


def _matching_entries(entries, product_entry):
    pci_ids = packed_pci_ids(product_entry)
    return [(i, e) for i, e in enumerate(entries) if _filter_matches(e, pci_ids)]


def _covers(entry, index):
    return entry['devices'] == 'all' or index in entry['devices']


def _index_classes(matching):
    """GPU indices named by entries, plus None for 'any other index'."""
    named = sorted(set(i for position, e in matching if e['devices'] != 'all' for i in e['devices']))
    return named + [None]


def _effective(matching, index):
    """(winning (position, entry), overridden positions) for a GPU index (None = unnamed index)."""
    hits = [(i, e) for i, e in matching if (e['devices'] == 'all' if index is None else _covers(e, index))]
    if not hits:
        return None, []
    winner = hits[-1]
    lost = [i for i, e in hits[:-1] if _setting(e) != _setting(winner[1])]
    return winner, lost


def _setting(entry):
    return (entry['mig-enabled'], _nonzero(entry.get('mig-devices')))


def _gpu_label(index):
    return 'GPU %d' % index if index is not None else 'all GPUs'


def _assignment_errors(config, entries, product, overrides):
    """Errors for applying one config to GPUs of one product."""
    entry, errors = _resolve(product, overrides)
    if errors:
        return ["config '%s' on %s: %s" % (config, product, e) for e in errors]
    name, path = entry['product'], 'mig-configs.%s' % config
    matching = _matching_entries(entries, entry)
    if not matching and not entry['mig_capable']:
        return []
    if not matching:
        return ["config '%s' has no entry that applies to %s (PCI %s): its device-filters name other GPUs, "
                "so these GPUs would keep their current MIG layout"
                % (config, name, ', '.join('0x%08X' % p for p in packed_pci_ids(entry)))]
    errors, winners, conflicts = [], {}, {}
    for index in _index_classes(matching):
        winner, lost = _effective(matching, index)
        if winner is None:
            continue
        winners[winner[0]] = winner[1]
        if lost:
            conflicts.setdefault((tuple(lost), winner[0]), []).append(_gpu_label(index))
    for (lost, position), gpus in sorted(conflicts.items()):
        errors.append('%s and %s[%d] both configure %s of %s with different settings; mig-parted applies '
                      'entries in order, so only %s[%d] takes effect'
                      % (', '.join('%s[%d]' % (path, i) for i in lost), path, position, ', '.join(gpus), name,
                         path, position))
    for position, spec in sorted(winners.items()):
        errors.extend(_spec_errors('%s[%d]' % (path, position), spec, entry, overrides))
    return errors


def _spec_errors(path, spec, entry, overrides):
    """Errors of the entry that wins for some GPU of a product."""
    if not spec['mig-enabled']:
        return []
    if not entry['mig_capable']:
        return ['%s enables MIG on %s, which is not MIG-capable (use mig-enabled: false or a '
                'device-filter that excludes it)' % (path, entry['product'])]
    return ['%s.mig-devices on %s: %s' % (path, entry['product'], e)
            for e in geometry_errors(spec.get('mig-devices') or {}, entry['product'], overrides)]


def _filter_products(entries, overrides):
    """Products named by the entries' device-filters (known catalog entries only)."""
    by_id = {}
    for key in product_names(overrides):
        for packed in packed_pci_ids(get_product(key, overrides)):
            by_id.setdefault(packed, key)
    found = set()
    for spec in entries:
        if spec.get('device-filter') not in (None, '', []):
            found.update(by_id[p] for p, subsystem in parse_device_filter(spec['device-filter']) if p in by_id)
    return found


def _products_by_config_errors(products_by_config, configs):
    if not isinstance(products_by_config, dict):
        return ['products_by_config must map config name -> list of GPU products, got %s'
                % type_name(products_by_config)]
    errors = []
    for config, products in products_by_config.items():
        if config not in configs:
            errors.append("config '%s' is assigned to nodes but not defined in mig-configs; defined: %s"
                          % (config, ', '.join(sorted(configs))))
        if not isinstance(products, (list, str)) or not all(isinstance(p, str) for p in _as_list(products)):
            errors.append("products for config '%s' must be a list of GPU product names, got %r"
                          % (config, products))
    return errors


def _as_list(products):
    return [products] if isinstance(products, str) else list(products)


def mig_parted_errors(document, products_by_config=None, overrides=None):
    """Validate a whole mig-parted config document.

    Checks the structure mig-parted enforces (api/spec/v1/spec.go) and, per
    config, the geometry each GPU would get: for the products in
    ``products_by_config`` (``{'config': ['NVIDIA-A100-SXM4-40GB', ...]}``) and
    for known products named by the config's device-filters.
    """
    errors = _document_errors(document)
    if errors:
        return errors
    configs = document['mig-configs']
    products_by_config = {} if products_by_config is None else products_by_config
    errors = _products_by_config_errors(products_by_config, configs)
    if errors:
        return errors
    for config, entries in configs.items():
        products = set(_as_list(products_by_config.get(config, [])))
        products.update(_filter_products(entries, overrides))
        for product in sorted(products, key=str):
            errors.extend(_assignment_errors(config, entries, product, overrides))
    return errors


# ---------------------------------------------------------------------------
# Built-in configs and node capacity for a config
# ---------------------------------------------------------------------------

def _device_filter_id(entry):
    return '0x%04X%04X' % (int(entry['pci_device_id'], 16), NVIDIA_VENDOR_ID)


def _is_base_profile(name):
    parts = parse_profile(name)
    return not (parts['attributes'] or parts['negative_attributes'])


def _balanced(entry):
    """mig-parted builder: all-balanced for one device, or None."""
    base = [(n, p) for n, p in entry['profiles'].items() if _is_base_profile(n)]
    slots = max([parse_profile(n)['g'] for n, profile in base] or [0])
    formula = _BALANCED_FORMULA.get(slots)
    if formula is None:
        return None
    chosen = {}
    for name, profile in sorted(base):
        g = parse_profile(name)['g']
        if g in formula and (g not in chosen or profile['max'] > chosen[g][1]):
            chosen[g] = (name, profile['max'])
    if set(chosen) != set(formula):
        return None
    return dict((chosen[g][0], count) for g, count in formula.items())


def builtin_document(products, overrides=None):
    """The mig-parted document mig-manager generates for nodes with these GPU products.

    Mirrors NVIDIA/mig-parted pkg/mig/builder (used by gpu-operator >= v26.3 when no
    custom config is set): all-disabled, all-enabled, all-balanced and one
    ``all-<profile>`` config per profile at its maximum count, with device-filters
    when more than one MIG-capable device type is present.
    """
    entries = [_entry_or_raise(p, overrides) for p in _as_list(products)]
    mig = dict((_device_filter_id(e), e) for e in entries if e['mig_capable'])
    multi = len(mig) > 1
    configs = {
        'all-disabled': [{'devices': 'all', 'mig-enabled': False}],
        'all-enabled': [{'devices': 'all', 'mig-enabled': True, 'mig-devices': {}}],
    }

    def spec(ids, devices):
        item = {'device-filter': sorted(ids)} if multi else {}
        item.update({'devices': 'all', 'mig-enabled': True, 'mig-devices': devices})
        return item

    balanced = [spec([i], _balanced(e)) for i, e in sorted(mig.items()) if _balanced(e)]
    if balanced:
        configs['all-balanced'] = balanced
    by_profile = {}
    for device_id, entry in sorted(mig.items()):
        for name, profile in entry['profiles'].items():
            by_profile.setdefault(name, {}).setdefault(profile['max'], []).append(device_id)
    for name in sorted(by_profile):
        configs[config_name_for(name)] = [spec(ids, {name: count}) for count, ids in sorted(by_profile[name].items())]
    return {'version': MIG_PARTED_VERSION, 'mig-configs': configs}


def mig_parted_document(custom_configs, products=None, include_builtin=True, overrides=None):
    """A mig-parted document: ``custom_configs`` (name -> entries) over the built-in configs.

    With ``include_builtin`` the configs mig-manager would generate for ``products`` are
    kept, so built-in names still work when the ClusterPolicy points at a custom ConfigMap;
    ``all-disabled`` is always present (the operator labels new MIG nodes with it).
    Custom configs replace built-ins of the same name. Validate with mig_parted_errors().
    """
    if custom_configs is None:
        custom_configs = {}
    if not isinstance(custom_configs, dict):
        raise MigGeometryError('custom MIG configs must map config name -> list of entries, got %s'
                               % type_name(custom_configs))
    if include_builtin:
        configs = builtin_document(products or [], overrides)['mig-configs']
    else:
        configs = {'all-disabled': [{'devices': 'all', 'mig-enabled': False}]}
    configs.update(copy.deepcopy(custom_configs))
    return {'version': MIG_PARTED_VERSION, 'mig-configs': configs}


def builtin_config(name, product, overrides=None):
    """Per-GPU geometry of an operator built-in config on ``product``, or None.

    ``all-disabled`` and ``all-enabled`` both give {} (no instances); use
    :func:`config_capacity` with ``document=None`` to tell them apart.
    """
    configs = builtin_document([product], overrides)['mig-configs']
    if name not in configs:
        return None
    return dict(configs[name][-1].get('mig-devices') or {})


def config_capacity(document, config_name, product, gpu_count, strategy, overrides=None):
    """Expected allocatable of a node with ``gpu_count`` GPUs of ``product`` after ``config_name``.

    ``document`` None means the operator's built-in configs. Non-MIG GPUs count
    as nvidia.com/gpu. Raises MigGeometryError for invalid documents or
    geometries, MIG GPUs no entry applies to, and strategies that cannot expose
    the result.
    """
    _check_strategy(strategy)
    _check_gpu_count(gpu_count, 'gpu_count')
    if document is None:
        document = builtin_document([product], overrides)
    errors = _document_errors(document)
    if not errors and config_name not in document['mig-configs']:
        errors = ["config '%s' is not defined; defined: %s"
                  % (config_name, ', '.join(sorted(document['mig-configs'])))]
    errors = errors or mig_parted_errors(document, {config_name: [product]}, overrides)
    if errors:
        raise MigGeometryError('; '.join(errors))
    entry = _entry_or_raise(product, overrides)
    matching = _matching_entries(document['mig-configs'][config_name], entry)
    states = []
    for index in range(gpu_count):
        winner = _effective(matching, index)[0]
        if not entry['mig_capable']:
            states.append((False, {}))
        elif winner is None:
            raise MigGeometryError("config '%s' has no entry for GPU %d of %s, so its MIG layout would stay "
                                   "as it was; cover every GPU index or use devices: all"
                                   % (config_name, index, entry['product']))
        else:
            states.append((winner[1]['mig-enabled'], _nonzero(winner[1].get('mig-devices'))))
    return _node_capacity(states, strategy)
