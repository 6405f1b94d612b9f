# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""NVIDIA GPU catalog: products, MIG profiles and their placements.

This is the ONE table of MIG facts in the collection. It is pure data plus
lookup helpers, uses the standard library only and imports nothing from the
collection. The virtual GPU cluster does not use it: its GPUs come from NVIDIA's
mock NVML, and a test pins the rows NVIDIA mocks to them (docs/testbed.md).

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
Sources, per product: docs/facts.md#mig-profiles-and-placements.

``overrides`` (extra or changed products) are merged here as given: the
collection checks them first (gpu/products.py passes its check to
:func:`with_overrides`), the test-bed simulator trusts its own configuration.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import re

NVIDIA_VENDOR_ID = 0x10DE

# go-nvlib pkg/nvlib/device/mig_profile.go grammar: [<c>c.]<g>g.<gb>gb[(+|-)attr[,attr...]]
PROFILE_RE = re.compile(
    r'^(?:(?P<c>\d+)c\.)?(?P<g>\d+)g\.(?P<gb>\d+)gb'
    r'(?:(?P<sign>[+-])(?P<attrs>[A-Za-z][A-Za-z0-9.]*(?:,[A-Za-z][A-Za-z0-9.]*)*))?$',
    re.ASCII,  # digits 0-9 only: \d alone takes other scripts' digits
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


# ---------------------------------------------------------------------------
# Profile layouts: (gi_id, compute slices "g", attribute, memory slices,
#                   placement starts, max instances)
# ---------------------------------------------------------------------------

# 8 memory slices / 7 compute slices: A100, H100, H200, GH200, B200.
# Verified from real `nvidia-smi mig -lgipp` output for A100-40GB, A100-80GB,
# H100-80GB and H100 NVL (docs/facts.md#8-memory-slice-gpus); identical GI IDs on all of them.
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


# Per-profile GB names and memory (MiB), keyed by memory slices (1, 2, 4, 8).
# A100-40GB: MIG user guide / go-nvml dgxa100 "real values".
_A100_40 = ({1: 5, 2: 10, 4: 20, 8: 40}, {1: 4864, 2: 9856, 4: 19968, 8: 40192})
# A100-80GB: go-nvml mock/gpus/a100.go (UNVERIFIED against hardware).
_A100_80 = ({1: 10, 2: 20, 4: 40, 8: 80}, {1: 9856, 2: 19968, 4: 40192, 8: 80384})
# H100-80GB: real `nvidia-smi mig -lgip` GiB figures x 1024.
_H100_80 = ({1: 10, 2: 20, 4: 40, 8: 80}, {1: 9984, 2: 20096, 4: 40448, 8: 81152})
# H100 NVL 94GB: mig-parted PR #101 / gpu-operator PR #900 -lgip figures x 1024.
_H100_NVL = ({1: 12, 2: 24, 4: 47, 8: 94}, {1: 11008, 2: 22144, 4: 47488, 8: 95360})
# UNVERIFIED figures below: device total x the H100 NVL per-slice ratios,
# rounded down to 64 MiB, except B200 1/2-slice values (-lgip in gpu-operator
# PRs #1242/#1351: 22.00 and 44.25 GiB).
_H100_96 = ({1: 12, 2: 24, 4: 48, 8: 96}, {1: 11200, 2: 22592, 4: 48448, 8: 97344})
_H200 = ({1: 18, 2: 35, 4: 71, 8: 141}, {1: 16512, 2: 33216, 4: 71232, 8: 143040})
_GH200_144 = ({1: 18, 2: 36, 4: 72, 8: 144}, {1: 16704, 2: 33664, 4: 72256, 8: 145152})
_B200 = ({1: 23, 2: 45, 4: 90, 8: 180}, {1: 22528, 2: 45312, 4: 90816, 8: 182400})
# A30: real nvidia-smi MIG device memory (5952 / 11968 MiB); 4g from 23.44 GiB.
_A30 = ({1: 6, 2: 12, 4: 24}, {1: 5952, 2: 11968, 4: 24000})

# Device totals (MiB) are nvidia-smi "Memory-Usage" totals, i.e. what GFD
# publishes as nvidia.com/gpu.memory. PCI IDs: NVIDIA driver supported-GPU list
# and gpu-operator default-mig-parted-config device-filters.
# (key, GFD product, PCI device ID, compute capability, device MiB, layout,
#  memory by slices, memory slices, compute slices, verified, other PCI IDs)
_PRODUCTS = (
    ('A100-SXM4-40GB', 'NVIDIA-A100-SXM4-40GB', '0x20B0', '8.0', 40960, _EIGHT_SLICE_LAYOUT, _A100_40, True),
    # Same GA100 die as A100-SXM4-40GB: placements inferred (UNVERIFIED).
    ('A100-PCIE-40GB', 'NVIDIA-A100-PCIE-40GB', '0x20F1', '8.0', 40960, _EIGHT_SLICE_LAYOUT, _A100_40, False,
     ('0x20B1',)),
    ('A100-SXM4-80GB', 'NVIDIA-A100-SXM4-80GB', '0x20B2', '8.0', 81920, _EIGHT_SLICE_LAYOUT, _A100_80, True),
    # Same GA100 die as A100-SXM4-80GB: placements inferred (UNVERIFIED).
    ('A100-PCIE-80GB', 'NVIDIA-A100-80GB-PCIe', '0x20B5', '8.0', 81920, _EIGHT_SLICE_LAYOUT, _A100_80, False),
    ('H100-80GB-HBM3', 'NVIDIA-H100-80GB-HBM3', '0x2330', '9.0', 81559, _EIGHT_SLICE_LAYOUT, _H100_80, True),
    # Same GH100 die / profile names as H100 SXM: placements inferred (UNVERIFIED).
    ('H100-PCIe', 'NVIDIA-H100-PCIe', '0x2331', '9.0', 81559, _EIGHT_SLICE_LAYOUT, _H100_80, False),
    ('H100-NVL', 'NVIDIA-H100-NVL', '0x2321', '9.0', 95830, _EIGHT_SLICE_LAYOUT, _H100_NVL, True),
    # H100 96GB on GH200 (PCI 0x2342): names/counts from gpu-operator's default
    # config; 1g.12gb+me and all placements inferred (UNVERIFIED).
    ('GH200-480GB', 'NVIDIA-GH200-480GB', '0x2342', '9.0', 97871, _EIGHT_SLICE_LAYOUT, _H100_96, False),
    # GH200 144G HBM3e: names from mig-parted PR #139 -lgip; placements inferred
    # (UNVERIFIED); device total is the CUDA-reported size (UNVERIFIED).
    ('GH200-144G-HBM3e', 'NVIDIA-GH200-144G-HBM3e', '0x2348', '9.0', 145920, _EIGHT_SLICE_LAYOUT, _GH200_144,
     False),
    # H200 / H200 NVL: names from the MIG guide H200 table; placements inferred
    # (UNVERIFIED; the instaslice emulator also uses the 8-slice table).
    ('H200', 'NVIDIA-H200', '0x2335', '9.0', 143771, _EIGHT_SLICE_LAYOUT, _H200, False),
    ('H200-NVL', 'NVIDIA-H200-NVL', '0x233B', '9.0', 143771, _EIGHT_SLICE_LAYOUT, _H200, False),
    # B200: names from the MIG guide B200 table; placements inferred (UNVERIFIED).
    ('B200', 'NVIDIA-B200', '0x2901', '10.0', 183359, _EIGHT_SLICE_LAYOUT, _B200, False),
    ('A30', 'NVIDIA-A30', '0x20B7', '8.0', 24576, _A30_LAYOUT, _A30, True),
    # Not MIG-capable.
    ('T4', 'Tesla-T4', '0x1EB8', '7.5', 15360),
    ('L40S', 'NVIDIA-L40S', '0x26B9', '8.9', 46068),
    ('L4', 'NVIDIA-L4', '0x27B8', '8.9', 23034),
    ('A10', 'NVIDIA-A10', '0x2236', '8.6', 23028),
)


def _builtin_entry(key, gfd, pci, cc, memory_mib, layout=None, memory=None, verified=True, alt_pci=()):
    """A catalog entry from one row of _PRODUCTS (slices come from the layout)."""
    if layout is None:
        return _product(key, gfd, pci, cc, memory_mib)
    profiles = _mig_profiles(layout, memory[0], memory[1])
    memory_slices = max(size + start for _gi, _g, _a, size, starts, _m in layout for start in starts)
    compute_slices = max(g for _gi, g, _a, _s, _p, _m in layout)
    return _product(key, gfd, pci, cc, memory_mib, profiles, memory_slices, compute_slices, verified, alt_pci)


_BUILTIN = dict((row[0], _builtin_entry(*row)) for row in _PRODUCTS)


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
        raise TypeError('product must be a string, got %r' % (product,))
    return _lookup(product, _BUILTIN) or _clean(product)


def product_key(name, catalog):
    """The key of ``name`` (any spelling) in ``catalog``, or its cleaned spelling for a new product."""
    return _lookup(name, catalog) or _clean(name)


# ---------------------------------------------------------------------------
# Overrides (trusted here: see the module docstring)
# ---------------------------------------------------------------------------

def _default_max(size, placements):
    """Most instances of one profile that fit side by side (greedy is optimal here)."""
    count, free_from = 0, None
    for start in sorted(placements):
        if free_from is None or start >= free_from:
            count += 1
            free_from = start + size
    return count


def _complete_profile(name, profile):
    """A profile override with its defaults: compute slices from the name, max from the placements."""
    done = {'gi_id': None, 'compute_slices': parse_profile(name)['c'], 'memory_mib': None,
            'max': _default_max(profile['size'], profile['placements'])}
    done.update(profile)
    done['placements'] = sorted(profile['placements'])
    return done


def merge_profiles(profiles, override):
    """``profiles`` (name -> profile) after an override's ``profiles`` (null removes a profile, a
    mapping updates or adds one) and then its ``renames`` (old name -> new name). New dicts."""
    merged = dict((name, dict(profile)) for name, profile in profiles.items())
    for name, profile in (override.get('profiles') or {}).items():
        if profile is None:
            merged.pop(name, None)
        else:
            merged[name] = dict(merged.get(name, {}))
            merged[name].update(profile)
    for old, new in (override.get('renames') or {}).items():
        merged[new] = merged.pop(old)
    return merged


def _merge_entry(key, base, override, spelled):
    """Merge one override dict over a built-in entry (or over nothing, for a new GPU spelled so)."""
    merged = copy.deepcopy(base) if base else _product(key, spelled.strip(), None, None, None)
    profiles = merge_profiles(merged['profiles'], override)
    for field in ENTRY_KEYS:
        if field in override and field != 'profiles':
            merged[field] = override[field]
    merged['product'] = key
    if 'mig_capable' not in override:
        merged['mig_capable'] = bool(profiles)
    merged['profiles'] = dict((name, _complete_profile(name, p)) for name, p in profiles.items())
    if profiles and not merged.get('compute_slices'):
        merged['compute_slices'] = max(p['compute_slices'] for p in merged['profiles'].values())
    return merged


def with_overrides(overrides=None, check=None):
    """The catalog (key -> entry): built-ins with ``overrides`` merged in, in order.

    ``check(name, override, catalog so far)`` runs before each entry is merged and raises on a
    bad one; without it the overrides are trusted. Built-ins are never modified.
    """
    if not overrides:
        return _BUILTIN
    catalog = dict(_BUILTIN)
    for name, override in overrides.items():
        if check is not None:
            check(name, override, catalog)
        key = product_key(name, catalog)
        catalog[key] = _merge_entry(key, catalog.get(key), override, name)
    return catalog


# ---------------------------------------------------------------------------
# Lookups
# ---------------------------------------------------------------------------

def get_product(product, overrides=None, check=None):
    """Return a copy of the catalog entry for ``product`` (any GFD spelling) or None."""
    catalog = with_overrides(overrides, check)
    key = _lookup(product, catalog)
    return copy.deepcopy(catalog[key]) if key else None


def product_names(overrides=None, check=None):
    """Sorted catalog keys, overrides included."""
    return sorted(with_overrides(overrides, check))


def products_with_profile(profile, overrides=None, check=None):
    """Catalog keys of the products that offer ``profile``."""
    return sorted(key for key, entry in with_overrides(overrides, check).items() if profile in entry['profiles'])


def packed_pci_ids(entry):
    """All packed device<<16|vendor IDs of an entry (mig-parted device-filter form)."""
    ids = [entry.get('pci_device_id')] + list(entry.get('alt_pci_device_ids') or [])
    return [(int(i, 16) << 16) | NVIDIA_VENDOR_ID for i in ids if i]
