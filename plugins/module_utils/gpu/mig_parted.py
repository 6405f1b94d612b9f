# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""mig-parted config documents: structure, and which entry configures which GPU. Pure, no I/O.

Semantics mirrored from NVIDIA/mig-parted v0.15.0:
- every entry whose device-filter and devices match a GPU is applied to it,
  in document order, and each apply replaces the GPU's layout, so for one GPU
  the LAST matching entry wins (cmd/nvidia-mig-parted/apply/config.go,
  pkg/mig/config/config.go SetMigConfig clears before creating);
- the structure is the one api/spec/v1/spec.go accepts.
The per-GPU geometry of the winning entry is checked by gpu/geometry.py.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import (
    is_int, label_value_errors, type_name, unknown_key_error)
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.catalog import (
    NVIDIA_VENDOR_ID, packed_pci_ids, parse_profile)
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.geometry import (
    MigGeometryError, geometry_errors, nonzero, resolve_product, shape_errors)
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.products import get_product, product_names

MIG_PARTED_VERSION = 'v1'
DOCUMENT_KEYS = ('version', 'mig-configs')
ENTRY_KEYS = ('device-filter', 'devices', 'mig-enabled', 'mig-devices')
# strconv.ParseUint(s, 0, 32) forms we accept: hex with 0x, or plain decimal.
_PCI_ID_RE = re.compile(r'^(0[xX][0-9A-Fa-f]{1,8}|[1-9][0-9]*|0)$')


# ---------------------------------------------------------------------------
# Structure
# ---------------------------------------------------------------------------

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
    if not all(is_int(d) and d >= 0 for d in devices):
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
    errors = ['%s.mig-devices: %s' % (path, e) for e in shape_errors(devices)]
    if not errors:
        errors = ["%s.mig-devices: malformed profile name '%s' (expected e.g. 1g.10gb or 1g.10gb+me)"
                  % (path, name) for name in sorted(devices) if parse_profile(name) is None]
    return errors


def _entry_errors(path, entry):
    if not isinstance(entry, dict):
        return ['%s must be a mapping, got %s' % (path, type_name(entry))]
    errors = [unknown_key_error(k, ENTRY_KEYS, path) for k in sorted(entry, key=str) if k not in ENTRY_KEYS]
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
    if not isinstance(name, str) or not name or label_value_errors(name):
        errors.append("config name %r cannot be a value of the nvidia.com/mig.config label (at most 63 "
                      "characters: letters, digits, '-', '_', '.', starting and ending alphanumeric)" % (name,))
    if not isinstance(entries, list) or not entries:
        errors.append('%s must be a non-empty list of entries' % path)
        return errors
    for index, entry in enumerate(entries):
        errors.extend(_entry_errors('%s[%d]' % (path, index), entry))
    return errors


def document_errors(document):
    if not isinstance(document, dict):
        return ['mig-parted config must be a mapping, got %s' % type_name(document)]
    errors = [unknown_key_error(k, DOCUMENT_KEYS, 'mig-parted config')
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
# What each GPU of a product gets
# ---------------------------------------------------------------------------

def _filter_matches(entry, pci_ids):
    """mig-parted MatchesDeviceFilter on the primary ID (subsystems are unknown here)."""
    value = entry.get('device-filter')
    if value in (None, '', []):
        return True
    return any(packed in pci_ids for packed, subsystem in parse_device_filter(value))


def matching_entries(entries, product_entry):
    pci_ids = packed_pci_ids(product_entry)
    return [(i, e) for i, e in enumerate(entries) if _filter_matches(e, pci_ids)]


def _covers(entry, index):
    return entry['devices'] == 'all' or index in entry['devices']


def _index_classes(matching):
    """GPU indices named by entries, plus None for 'any other index'."""
    named = sorted(set(i for position, e in matching if e['devices'] != 'all' for i in e['devices']))
    return named + [None]


def effective_entry(matching, index):
    """(winning (position, entry), overridden positions) for a GPU index (None = unnamed index)."""
    hits = [(i, e) for i, e in matching if (e['devices'] == 'all' if index is None else _covers(e, index))]
    if not hits:
        return None, []
    winner = hits[-1]
    lost = [i for i, e in hits[:-1] if _setting(e) != _setting(winner[1])]
    return winner, lost


def _setting(entry):
    return (entry['mig-enabled'], nonzero(entry.get('mig-devices')))


def _gpu_label(index):
    return 'GPU %d' % index if index is not None else 'all GPUs'


def config_product_errors(config, entries, product, overrides):
    """Errors for applying one config (its ``entries``) to GPUs of one product: the rule
    mig_parted_errors applies per product, for callers that check one config on many products
    without re-checking the whole document each time (gpu/mig_demand_pool.py)."""
    entry, errors = resolve_product(product, overrides)
    if errors:
        return ["config '%s' on %s: %s" % (config, product, e) for e in errors]
    name, path = entry['product'], 'mig-configs.%s' % config
    matching = matching_entries(entries, entry)
    if not matching and not entry['mig_capable']:
        return []
    if not matching:
        return ["config '%s' has no entry that applies to %s (PCI %s): its device-filters name other GPUs, "
                "so these GPUs would keep their current MIG layout"
                % (config, name, ', '.join('0x%08X' % p for p in packed_pci_ids(entry)))]
    errors, winners, conflicts = [], {}, {}
    for index in _index_classes(matching):
        winner, lost = effective_entry(matching, index)
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
        if not isinstance(products, (list, str)) or not all(isinstance(p, str) for p in as_list(products)):
            errors.append("products for config '%s' must be a list of GPU product names, got %r"
                          % (config, products))
    return errors


def as_list(products):
    return [products] if isinstance(products, str) else list(products)


def mig_parted_errors(document, products_by_config=None, overrides=None):
    """Validate a whole mig-parted config document.

    Checks the structure mig-parted enforces (api/spec/v1/spec.go) and, per
    config, the geometry each GPU would get: for the products in
    ``products_by_config`` (``{'config': ['NVIDIA-A100-SXM4-40GB', ...]}``) and
    for known products named by the config's device-filters.
    """
    errors = document_errors(document)
    if errors:
        return errors
    configs = document['mig-configs']
    products_by_config = {} if products_by_config is None else products_by_config
    errors = _products_by_config_errors(products_by_config, configs)
    if errors:
        return errors
    for config, entries in configs.items():
        products = set(as_list(products_by_config.get(config, [])))
        products.update(_filter_products(entries, overrides))
        for product in sorted(products, key=str):
            errors.extend(config_product_errors(config, entries, product, overrides))
    return errors
