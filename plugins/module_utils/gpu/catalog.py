# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""NVIDIA GPU catalog: products, MIG profiles and their placements.

This is the ONE table of MIG facts in the collection. It is pure data plus
lookup helpers, uses the standard library only and imports nothing from the
collection, so the virtual GPU cluster can load it by file path.

Entry shape (sizes and placements are counted in memory slices)::

    {'product': 'A100-SXM4-40GB', 'gfd_product': 'NVIDIA-A100-SXM4-40GB',
     'aliases': [], 'mig_capable': True, 'memory_mib': 40960,
     'compute_capability': '8.0', 'pci_device_id': '0x20B0',
     'alt_pci_device_ids': [], 'memory_slices': 8, 'compute_slices': 7,
     'verified': True,
     'profiles': {'1g.5gb': {'gi_id': 19, 'size': 1,
                             'placements': [0, 1, 2, 3, 4, 5, 6], 'max': 7,
                             'compute_slices': 1, 'memory_mib': 4864}, ...}}

``verified`` is False where the placement table is inferred from the GPU
family rather than read from real ``nvidia-smi mig -lgipp`` output.
Sources: shared/reference/nvidia-facts.md section 1.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import re

NVIDIA_VENDOR_ID = 0x10DE

# go-nvlib pkg/nvlib/device/mig_profile.go grammar: [<c>c.]<g>g.<gb>gb[(+|-)attr[,attr...]]
PROFILE_RE = re.compile(
    r'^(?:(?P<c>\d+)c\.)?(?P<g>\d+)g\.(?P<gb>\d+)gb'
    r'(?:(?P<sign>[+-])(?P<attrs>[A-Za-z][A-Za-z0-9.]*(?:,[A-Za-z][A-Za-z0-9.]*)*))?$'
)

ENTRY_KEYS = (
    'product', 'gfd_product', 'aliases', 'mig_capable', 'memory_mib',
    'compute_capability', 'pci_device_id', 'alt_pci_device_ids',
    'memory_slices', 'compute_slices', 'verified', 'profiles',
)
PROFILE_KEYS = ('gi_id', 'size', 'placements', 'max', 'compute_slices', 'memory_mib')
# 'renames' is accepted in overrides only: {'old-name': 'new-name'}.
OVERRIDE_KEYS = ENTRY_KEYS + ('renames',)

_GFD_PREFIX_RE = re.compile(r'^(?:NVIDIA|Tesla)-', re.IGNORECASE)
_GFD_MIG_SUFFIX_RE = re.compile(r'-MIG-.*$', re.IGNORECASE)
_GFD_SHARED_SUFFIX_RE = re.compile(r'-SHARED$', re.IGNORECASE)


class MigCatalogError(ValueError):
    """Raised for malformed catalog overrides."""


# ---------------------------------------------------------------------------
# Profile layouts: (gi_id, compute slices "g", attribute, memory slices,
#                   placement starts, max instances)
# ---------------------------------------------------------------------------

# 8 memory slices / 7 compute slices: A100, H100, H200, GH200, B200.
# Verified from real `nvidia-smi mig -lgipp` output for A100-40GB, A100-80GB,
# H100-80GB and H100 NVL (nvidia-facts.md 1.2); identical GI IDs on all of them.
_EIGHT_SLICE_LAYOUT = (
    (19, 1, '', 1, (0, 1, 2, 3, 4, 5, 6), 7),
    (20, 1, '+me', 1, (0, 1, 2, 3, 4, 5, 6), 1),
    (15, 1, '', 2, (0, 2, 4, 6), 4),
    (14, 2, '', 2, (0, 2, 4), 3),
    (9, 3, '', 4, (0, 4), 2),
    (5, 4, '', 4, (0,), 1),
    (0, 7, '', 8, (0,), 1),
)

# A30-24GB: 4 memory slices / 4 compute slices, no 3g profile. Verified from
# real -lgipp/-lgip output (driver 535.183.01) and mig-parted's hard-coded
# A30 profiles (pkg/mig/discovery/discovery.go).
_A30_LAYOUT = (
    (14, 1, '', 1, (0, 1, 2, 3), 4),
    (21, 1, '+me', 1, (0, 1, 2, 3), 1),
    (5, 2, '', 2, (0, 2), 2),
    (6, 2, '+me', 2, (0, 2), 1),
    (0, 4, '', 4, (0,), 1),
)


def _mig_profiles(layout, gb_by_size, mib_by_size):
    """Build a profiles dict from a layout and per-size GB names / MiB figures."""
    profiles = {}
    for gi_id, g, attr, size, starts, limit in layout:
        name = '%dg.%dgb%s' % (g, gb_by_size[size], attr)
        profiles[name] = {
            'gi_id': gi_id,
            'size': size,
            'placements': list(starts),
            'max': limit,
            'compute_slices': g,
            'memory_mib': mib_by_size[size],
        }
    return profiles


def _product(key, gfd, pci, cc, memory_mib, profiles=None, memory_slices=0,
             compute_slices=0, verified=True, alt_pci=(), aliases=()):
    return {
        'product': key,
        'gfd_product': gfd,
        'aliases': list(aliases),
        'mig_capable': bool(profiles),
        'memory_mib': memory_mib,
        'compute_capability': cc,
        'pci_device_id': pci,
        'alt_pci_device_ids': list(alt_pci),
        'memory_slices': memory_slices,
        'compute_slices': compute_slices,
        'verified': verified,
        'profiles': profiles or {},
    }


def _eight_slice(key, gfd, pci, cc, memory_mib, gb, mib, verified, alt_pci=()):
    return _product(key, gfd, pci, cc, memory_mib,
                    _mig_profiles(_EIGHT_SLICE_LAYOUT, gb, mib), 8, 7, verified, alt_pci)


# Per-profile memory (MiB) keyed by memory slices (1, 2, 4, 8).
# A100-40GB: MIG user guide / go-nvml dgxa100 "real values".
_A100_40_GB = {1: 5, 2: 10, 4: 20, 8: 40}
_A100_40_MIB = {1: 4864, 2: 9856, 4: 19968, 8: 40192}
# A100-80GB: go-nvml mock/gpus/a100.go (UNVERIFIED against hardware).
_A100_80_GB = {1: 10, 2: 20, 4: 40, 8: 80}
_A100_80_MIB = {1: 9856, 2: 19968, 4: 40192, 8: 80384}
# H100-80GB: real `nvidia-smi mig -lgip` GiB figures x 1024.
_H100_80_GB = {1: 10, 2: 20, 4: 40, 8: 80}
_H100_80_MIB = {1: 9984, 2: 20096, 4: 40448, 8: 81152}
# H100 NVL 94GB: mig-parted PR #101 / gpu-operator PR #900 -lgip figures x 1024.
_H100_NVL_GB = {1: 12, 2: 24, 4: 47, 8: 94}
_H100_NVL_MIB = {1: 11008, 2: 22144, 4: 47488, 8: 95360}
# UNVERIFIED figures below: device total x the H100 NVL per-slice ratios,
# rounded down to 64 MiB, except B200 1/2-slice values (-lgip in gpu-operator
# PRs #1242/#1351: 22.00 and 44.25 GiB).
_H100_96_GB = {1: 12, 2: 24, 4: 48, 8: 96}
_H100_96_MIB = {1: 11200, 2: 22592, 4: 48448, 8: 97344}
_H200_GB = {1: 18, 2: 35, 4: 71, 8: 141}
_H200_MIB = {1: 16512, 2: 33216, 4: 71232, 8: 143040}
_GH200_144_GB = {1: 18, 2: 36, 4: 72, 8: 144}
_GH200_144_MIB = {1: 16704, 2: 33664, 4: 72256, 8: 145152}
_B200_GB = {1: 23, 2: 45, 4: 90, 8: 180}
_B200_MIB = {1: 22528, 2: 45312, 4: 90816, 8: 182400}
# A30: real nvidia-smi MIG device memory (5952 / 11968 MiB); 4g from 23.44 GiB.
_A30_GB = {1: 6, 2: 12, 4: 24}
_A30_MIB = {1: 5952, 2: 11968, 4: 24000}

# Device totals (MiB) are nvidia-smi "Memory-Usage" totals, i.e. what GFD
# publishes as nvidia.com/gpu.memory. PCI IDs: NVIDIA driver supported-GPU list
# and gpu-operator default-mig-parted-config device-filters.
_BUILTIN = {}
for _entry in (
    _eight_slice('A100-SXM4-40GB', 'NVIDIA-A100-SXM4-40GB', '0x20B0', '8.0', 40960,
                 _A100_40_GB, _A100_40_MIB, True),
    # Same GA100 die as A100-SXM4-40GB: placements inferred (UNVERIFIED).
    _eight_slice('A100-PCIE-40GB', 'NVIDIA-A100-PCIE-40GB', '0x20F1', '8.0', 40960,
                 _A100_40_GB, _A100_40_MIB, False, alt_pci=('0x20B1',)),
    _eight_slice('A100-SXM4-80GB', 'NVIDIA-A100-SXM4-80GB', '0x20B2', '8.0', 81920,
                 _A100_80_GB, _A100_80_MIB, True),
    # Same GA100 die as A100-SXM4-80GB: placements inferred (UNVERIFIED).
    _eight_slice('A100-PCIE-80GB', 'NVIDIA-A100-80GB-PCIe', '0x20B5', '8.0', 81920,
                 _A100_80_GB, _A100_80_MIB, False),
    _eight_slice('H100-80GB-HBM3', 'NVIDIA-H100-80GB-HBM3', '0x2330', '9.0', 81559,
                 _H100_80_GB, _H100_80_MIB, True),
    # Same GH100 die / profile names as H100 SXM: placements inferred (UNVERIFIED).
    _eight_slice('H100-PCIe', 'NVIDIA-H100-PCIe', '0x2331', '9.0', 81559,
                 _H100_80_GB, _H100_80_MIB, False),
    _eight_slice('H100-NVL', 'NVIDIA-H100-NVL', '0x2321', '9.0', 95830,
                 _H100_NVL_GB, _H100_NVL_MIB, True),
    # H100 96GB on GH200 (PCI 0x2342): names/counts from gpu-operator's default
    # config; 1g.12gb+me and all placements inferred (UNVERIFIED).
    _eight_slice('GH200-480GB', 'NVIDIA-GH200-480GB', '0x2342', '9.0', 97871,
                 _H100_96_GB, _H100_96_MIB, False),
    # GH200 144G HBM3e: names from mig-parted PR #139 -lgip; placements inferred
    # (UNVERIFIED); device total is the CUDA-reported size (UNVERIFIED).
    _eight_slice('GH200-144G-HBM3e', 'NVIDIA-GH200-144G-HBM3e', '0x2348', '9.0', 145920,
                 _GH200_144_GB, _GH200_144_MIB, False),
    # H200 / H200 NVL: names from the MIG guide H200 table; placements inferred
    # (UNVERIFIED; the instaslice emulator also uses the 8-slice table).
    _eight_slice('H200', 'NVIDIA-H200', '0x2335', '9.0', 143771,
                 _H200_GB, _H200_MIB, False),
    _eight_slice('H200-NVL', 'NVIDIA-H200-NVL', '0x233B', '9.0', 143771,
                 _H200_GB, _H200_MIB, False),
    # B200: names from the MIG guide B200 table; placements inferred (UNVERIFIED).
    _eight_slice('B200', 'NVIDIA-B200', '0x2901', '10.0', 183359,
                 _B200_GB, _B200_MIB, False),
    _product('A30', 'NVIDIA-A30', '0x20B7', '8.0', 24576,
             _mig_profiles(_A30_LAYOUT, _A30_GB, _A30_MIB), 4, 4, True),
    # Not MIG-capable.
    _product('T4', 'Tesla-T4', '0x1EB8', '7.5', 15360),
    _product('L40S', 'NVIDIA-L40S', '0x26B9', '8.9', 46068),
    _product('L4', 'NVIDIA-L4', '0x27B8', '8.9', 23034),
    _product('A10', 'NVIDIA-A10', '0x2236', '8.6', 23028),
):
    _BUILTIN[_entry['product']] = _entry
del _entry


# ---------------------------------------------------------------------------
# Profile names
# ---------------------------------------------------------------------------

def parse_profile(name):
    """Parse a MIG profile name; return its parts or None if malformed.

    Mirrors go-nvlib's grammar: ``[<c>c.]<g>g.<gb>gb[+attr,...|-attr,...]``.
    """
    if not isinstance(name, str):
        return None
    match = PROFILE_RE.match(name)
    if not match:
        return None
    attrs = match.group('attrs').split(',') if match.group('attrs') else []
    if len(set(attrs)) != len(attrs) or any(a.endswith('.') for a in attrs):
        return None
    g = int(match.group('g'))
    return {
        'c': int(match.group('c')) if match.group('c') else g,
        'g': g,
        'gb': int(match.group('gb')),
        'attributes': attrs if match.group('sign') == '+' else [],
        'negative_attributes': attrs if match.group('sign') == '-' else [],
    }


def is_media_extension(name):
    """True for profiles that take the GPU's single set of media engines (+me, +me.all)."""
    parts = parse_profile(name)
    return bool(parts) and any(a in ('me', 'me.all') for a in parts['attributes'])


# ---------------------------------------------------------------------------
# Product names
# ---------------------------------------------------------------------------

def _clean(product):
    """Strip GFD decorations: NVIDIA-/Tesla- prefix, -MIG-<profile>, -MIG-INVALID, -SHARED."""
    name = '-'.join(product.strip().split())
    name = _GFD_MIG_SUFFIX_RE.sub('', name)
    name = _GFD_SHARED_SUFFIX_RE.sub('', name)
    return _GFD_PREFIX_RE.sub('', name)


def _name_index(catalog):
    index = {}
    for key, entry in catalog.items():
        names = [key, entry.get('gfd_product') or key] + list(entry.get('aliases') or [])
        for name in names:
            index.setdefault(_clean(name).lower(), key)
    return index


def _lookup(product, catalog):
    if not isinstance(product, str):
        return None
    return _name_index(catalog).get(_clean(product).lower())


def canonical_product(product):
    """Return the catalog key for a GFD ``nvidia.com/gpu.product`` value.

    Accepts values with or without the ``NVIDIA-``/``Tesla-`` prefix, with
    ``-MIG-<profile>``, ``-MIG-INVALID`` and ``-SHARED`` suffixes, spaces
    instead of dashes, any case. Unknown products come back cleaned.
    """
    if not isinstance(product, str):
        raise TypeError('product must be a string, got %s' % type_name(product))
    return _lookup(product, _BUILTIN) or _clean(product)


# ---------------------------------------------------------------------------
# Overrides
# ---------------------------------------------------------------------------

def _default_max(size, placements):
    """Most instances of one profile that fit side by side (greedy is optimal here)."""
    count, free_from = 0, None
    for start in sorted(placements):
        if free_from is None or start >= free_from:
            count += 1
            free_from = start + size
    return count


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _complete_profile(product, name, profile, memory_slices):
    where = "profile '%s' of %s" % (name, product)
    parts = parse_profile(name)
    if parts is None:
        raise MigCatalogError('%s: malformed name (expected e.g. 1g.10gb or 1g.10gb+me)' % where)
    unknown = sorted(set(profile) - set(PROFILE_KEYS))
    if unknown:
        raise MigCatalogError('%s: unknown key(s) %s (allowed: %s)'
                              % (where, ', '.join(unknown), ', '.join(PROFILE_KEYS)))
    size, placements = profile.get('size'), profile.get('placements')
    if not _is_int(size) or size < 1:
        raise MigCatalogError('%s: size (memory slices) must be a positive integer' % where)
    if not isinstance(placements, list) or not placements or not all(_is_int(p) for p in placements):
        raise MigCatalogError('%s: placements must be a non-empty list of start slices' % where)
    if any(p < 0 or p + size > memory_slices for p in placements):
        raise MigCatalogError('%s: placements %s with size %d do not fit in %d memory slices'
                              % (where, placements, size, memory_slices))
    done = {'gi_id': None, 'compute_slices': parts['c'], 'memory_mib': None,
            'max': _default_max(size, placements)}
    done.update(profile)
    done['placements'] = sorted(placements)
    return done


def _merge_entry(key, base, override, spelled):
    """Merge one override dict over a built-in entry (or over nothing, for a new GPU spelled so)."""
    if not isinstance(override, dict):
        raise MigCatalogError("overrides for '%s' must be a mapping, got %s" % (key, type_name(override)))
    unknown = sorted(set(override) - set(OVERRIDE_KEYS))
    if unknown:
        raise MigCatalogError("overrides for '%s': unknown key(s) %s (allowed: %s)"
                              % (key, ', '.join(unknown), ', '.join(OVERRIDE_KEYS)))
    merged = copy.deepcopy(base) if base else _product(key, spelled.strip(), None, None, None)
    profiles = merged['profiles']
    for name, profile in (override.get('profiles') or {}).items():
        if profile is None:
            profiles.pop(name, None)
        elif isinstance(profile, dict):
            profiles[name] = dict(profiles.get(name, {}))
            profiles[name].update(profile)
        else:
            raise MigCatalogError("overrides for '%s': profile '%s' must be a mapping or null" % (key, name))
    for old, new in (override.get('renames') or {}).items():
        if old not in profiles or not isinstance(new, str):
            raise MigCatalogError("overrides for '%s': renames must map an existing profile to a new name, "
                                  "got %r -> %r" % (key, old, new))
        profiles[new] = profiles.pop(old)
    for field in ENTRY_KEYS:
        if field in override and field != 'profiles':
            merged[field] = override[field]
    merged['product'] = key
    if 'mig_capable' not in override:
        merged['mig_capable'] = bool(profiles)
    if profiles and not (_is_int(merged.get('memory_slices')) and merged['memory_slices'] > 0):
        raise MigCatalogError("overrides for '%s': memory_slices (a positive integer) is required "
                              "for a product with MIG profiles" % key)
    merged['profiles'] = dict((name, _complete_profile(key, name, p, merged['memory_slices']))
                              for name, p in profiles.items())
    if profiles and not merged.get('compute_slices'):
        merged['compute_slices'] = max(p['compute_slices'] for p in merged['profiles'].values())
    return merged


def _catalog(overrides=None):
    """Built-ins with overrides merged in (a fresh dict; built-ins untouched)."""
    if not overrides:
        return _BUILTIN
    if not isinstance(overrides, dict):
        raise MigCatalogError('overrides must be a mapping of product -> entry, got %s' % type_name(overrides))
    catalog = dict(_BUILTIN)
    for name, override in overrides.items():
        if not isinstance(name, str):
            raise MigCatalogError('override product names must be strings, got %s' % type_name(name))
        key = _lookup(name, catalog) or _clean(name)
        catalog[key] = _merge_entry(key, catalog.get(key), override, name)
    return catalog


# ---------------------------------------------------------------------------
# Public lookups
# ---------------------------------------------------------------------------

def get_product(product, overrides=None):
    """Return a copy of the catalog entry for ``product`` (any GFD spelling) or None."""
    catalog = _catalog(overrides)
    key = _lookup(product, catalog)
    return copy.deepcopy(catalog[key]) if key else None


def require_product(product, overrides=None):
    """Like get_product, but raises MigCatalogError naming the known products."""
    if not isinstance(product, str):
        raise MigCatalogError("GPU product must be a string like 'NVIDIA-A100-SXM4-40GB', got %s"
                              % type_name(product))
    entry = get_product(product, overrides)
    if entry is None:
        raise MigCatalogError("unknown GPU product '%s'; known: %s (add it with overrides)"
                              % (product, ', '.join(product_names(overrides))))
    return entry


def product_names(overrides=None):
    """Sorted catalog keys, overrides included."""
    return sorted(_catalog(overrides))


def packed_pci_ids(entry):
    """All packed device<<16|vendor IDs of an entry (mig-parted device-filter form)."""
    ids = [entry.get('pci_device_id')] + list(entry.get('alt_pci_device_ids') or [])
    return [(int(i, 16) << 16) | NVIDIA_VENDOR_ID for i in ids if i]


def products_with_profile(profile, overrides=None):
    """Catalog keys of the products that offer ``profile``."""
    return sorted(key for key, entry in _catalog(overrides).items() if profile in entry['profiles'])


def type_name(value):
    """Friendly builtin type name (Ansible 2.19 wraps values in tagged subclasses)."""
    for klass in type(value).__mro__:
        if klass.__module__ == 'builtins' and klass is not object:
            return klass.__name__
    return type(value).__name__
