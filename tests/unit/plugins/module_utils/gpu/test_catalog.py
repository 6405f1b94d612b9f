# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests for module_utils.gpu.catalog: the product table and its lookups."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import ast
import os

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import catalog as mig_catalog
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.catalog import (
    ENTRY_KEYS,
    PROFILE_KEYS,
    canonical_product,
    get_product,
    is_media_extension,
    packed_pci_ids,
    parse_profile,
    product_names,
    products_with_profile,
)

ALL = product_names()
MIG = [p for p in ALL if get_product(p)['mig_capable']]
NON_MIG = [p for p in ALL if not get_product(p)['mig_capable']]
PROFILES = [(p, name) for p in MIG for name in sorted(get_product(p)['profiles'])]

# (product, expected profile names) -- docs/facts.md#8-memory-slice-gpus
_A100_40GB = ['1g.5gb', '1g.5gb+me', '1g.10gb', '2g.10gb', '3g.20gb', '4g.20gb', '7g.40gb']
_80GB = ['1g.10gb', '1g.10gb+me', '1g.20gb', '2g.20gb', '3g.40gb', '4g.40gb', '7g.80gb']
_H200 = ['1g.18gb', '1g.18gb+me', '1g.35gb', '2g.35gb', '3g.71gb', '4g.71gb', '7g.141gb']
EXPECTED_PROFILES = {
    'A100-SXM4-40GB': _A100_40GB, 'A100-PCIE-40GB': _A100_40GB,
    'A100-SXM4-80GB': _80GB, 'A100-PCIE-80GB': _80GB, 'H100-80GB-HBM3': _80GB, 'H100-PCIe': _80GB,
    'H100-NVL': ['1g.12gb', '1g.12gb+me', '1g.24gb', '2g.24gb', '3g.47gb', '4g.47gb', '7g.94gb'],
    'GH200-480GB': ['1g.12gb', '1g.12gb+me', '1g.24gb', '2g.24gb', '3g.48gb', '4g.48gb', '7g.96gb'],
    'GH200-144G-HBM3e': ['1g.18gb', '1g.18gb+me', '1g.36gb', '2g.36gb', '3g.72gb', '4g.72gb', '7g.144gb'],
    'H200': _H200, 'H200-NVL': _H200,
    'B200': ['1g.23gb', '1g.23gb+me', '1g.45gb', '2g.45gb', '3g.90gb', '4g.90gb', '7g.180gb'],
    'A30': ['1g.6gb', '1g.6gb+me', '2g.12gb', '2g.12gb+me', '4g.24gb'],
}

# (product, gfd product, pci id, compute capability, memory MiB)
IDENTITY = [
    ('A100-SXM4-40GB', 'NVIDIA-A100-SXM4-40GB', '0x20B0', '8.0', 40960),
    ('A100-PCIE-40GB', 'NVIDIA-A100-PCIE-40GB', '0x20F1', '8.0', 40960),
    ('A100-SXM4-80GB', 'NVIDIA-A100-SXM4-80GB', '0x20B2', '8.0', 81920),
    ('A100-PCIE-80GB', 'NVIDIA-A100-80GB-PCIe', '0x20B5', '8.0', 81920),
    ('H100-80GB-HBM3', 'NVIDIA-H100-80GB-HBM3', '0x2330', '9.0', 81559),
    ('H100-PCIe', 'NVIDIA-H100-PCIe', '0x2331', '9.0', 81559),
    ('H100-NVL', 'NVIDIA-H100-NVL', '0x2321', '9.0', 95830),
    ('H200', 'NVIDIA-H200', '0x2335', '9.0', 143771),
    ('H200-NVL', 'NVIDIA-H200-NVL', '0x233B', '9.0', 143771),
    ('GH200-480GB', 'NVIDIA-GH200-480GB', '0x2342', '9.0', 97871),
    ('B200', 'NVIDIA-B200', '0x2901', '10.0', 183359),
    ('A30', 'NVIDIA-A30', '0x20B7', '8.0', 24576),
    ('T4', 'Tesla-T4', '0x1EB8', '7.5', 15360),
    ('L40S', 'NVIDIA-L40S', '0x26B9', '8.9', 46068),
    ('L4', 'NVIDIA-L4', '0x27B8', '8.9', 23034),
    ('A10', 'NVIDIA-A10', '0x2236', '8.6', 23028),
]


# --- every product table -----------------------------------------------------

def test_required_products_present():
    assert set(EXPECTED_PROFILES) | {'T4', 'L40S', 'L4', 'A10'} == set(ALL)


@pytest.mark.parametrize('product', ALL)
def test_entry_shape(product):
    entry = get_product(product)
    assert sorted(entry) == sorted(ENTRY_KEYS)
    assert entry['product'] == product
    assert canonical_product(entry['gfd_product']) == product


@pytest.mark.parametrize('product,gfd,pci,cc,memory', IDENTITY)
def test_identity(product, gfd, pci, cc, memory):
    entry = get_product(product)
    assert (entry['gfd_product'], entry['pci_device_id'], entry['compute_capability'], entry['memory_mib']) == \
        (gfd, pci, cc, memory)


@pytest.mark.parametrize('product,names', sorted(EXPECTED_PROFILES.items()))
def test_profile_names(product, names):
    assert sorted(get_product(product)['profiles']) == sorted(names)


@pytest.mark.parametrize('product', NON_MIG)
def test_non_mig_products_have_no_profiles(product):
    entry = get_product(product)
    assert entry['mig_capable'] is False
    assert entry['profiles'] == {}
    assert entry['memory_slices'] == 0


@pytest.mark.parametrize('product', MIG)
def test_slice_totals(product):
    entry = get_product(product)
    expected = (4, 4) if product == 'A30' else (8, 7)
    assert (entry['memory_slices'], entry['compute_slices']) == expected


@pytest.mark.parametrize('product,name', PROFILES)
def test_profile_shape(product, name):
    profile = get_product(product)['profiles'][name]
    assert sorted(profile) == sorted(PROFILE_KEYS)
    assert all(isinstance(profile[k], int) for k in PROFILE_KEYS if k != 'placements')
    assert profile['placements'] and all(isinstance(p, int) for p in profile['placements'])


@pytest.mark.parametrize('product,name', PROFILES)
def test_placements_inside_slices(product, name):
    entry = get_product(product)
    profile = entry['profiles'][name]
    assert profile['placements'] == sorted(set(profile['placements']))
    assert all(0 <= start and start + profile['size'] <= entry['memory_slices'] for start in profile['placements'])
    # NVML aligns placements to the instance size
    assert all(start % profile['size'] == 0 for start in profile['placements'])


@pytest.mark.parametrize('product,name', PROFILES)
def test_max_consistent_with_placements(product, name):
    profile = get_product(product)['profiles'][name]
    side_by_side = len(profile['placements'])  # aligned, so starts never overlap each other
    if is_media_extension(name):
        assert profile['max'] == 1
    else:
        assert profile['max'] == side_by_side


@pytest.mark.parametrize('product,name', PROFILES)
def test_names_well_formed_and_match_compute(product, name):
    parts = parse_profile(name)
    profile = get_product(product)['profiles'][name]
    assert parts is not None
    assert parts['c'] == parts['g'] == profile['compute_slices']
    assert parts['negative_attributes'] == [] and parts['attributes'] in ([], ['me'])


@pytest.mark.parametrize('product', MIG)
def test_memory_in_name_follows_size(product):
    """Profiles of equal memory size carry the same <gb>; bigger sizes carry more."""
    gb_by_size = {}
    for name, profile in get_product(product)['profiles'].items():
        gb_by_size.setdefault(profile['size'], set()).add(parse_profile(name)['gb'])
    assert all(len(values) == 1 for values in gb_by_size.values())
    ordered = [gb_by_size[size].pop() for size in sorted(gb_by_size)]
    assert ordered == sorted(ordered) and len(set(ordered)) == len(ordered)


@pytest.mark.parametrize('product,name', PROFILES)
def test_profile_memory_below_device_total(product, name):
    entry = get_product(product)
    profile = entry['profiles'][name]
    assert 0 < profile['memory_mib'] < entry['memory_mib']


@pytest.mark.parametrize('product', MIG)
def test_larger_instances_have_more_memory(product):
    profiles = get_product(product)['profiles']
    memory = [mib for size, mib in sorted((p['size'], p['memory_mib']) for p in profiles.values())]
    assert memory == sorted(memory)


@pytest.mark.parametrize('product', [p for p in MIG if p != 'A30'])
def test_eight_slice_family_gi_ids(product):
    profiles = get_product(product)['profiles']
    ids = sorted((p['gi_id'], p['size'], p['max']) for p in profiles.values())
    assert ids == [(0, 8, 1), (5, 4, 1), (9, 4, 2), (14, 2, 3), (15, 2, 4), (19, 1, 7), (20, 1, 1)]


def test_a100_40gb_table_exact():
    profiles = get_product('A100-SXM4-40GB')['profiles']
    assert profiles['1g.5gb'] == {'gi_id': 19, 'size': 1, 'placements': [0, 1, 2, 3, 4, 5, 6], 'max': 7,
                                  'compute_slices': 1, 'memory_mib': 4864}
    assert profiles['1g.10gb']['placements'] == [0, 2, 4, 6]
    assert profiles['2g.10gb']['placements'] == [0, 2, 4]
    assert profiles['3g.20gb']['placements'] == [0, 4]
    assert profiles['4g.20gb']['placements'] == [0]
    assert profiles['7g.40gb'] == {'gi_id': 0, 'size': 8, 'placements': [0], 'max': 1,
                                   'compute_slices': 7, 'memory_mib': 40192}


def test_a30_table_exact():
    profiles = get_product('A30')['profiles']
    assert [(n, profiles[n]['gi_id'], profiles[n]['placements'], profiles[n]['max']) for n in sorted(profiles)] == [
        ('1g.6gb', 14, [0, 1, 2, 3], 4),
        ('1g.6gb+me', 21, [0, 1, 2, 3], 1),
        ('2g.12gb', 5, [0, 2], 2),
        ('2g.12gb+me', 6, [0, 2], 1),
        ('4g.24gb', 0, [0], 1),
    ]
    assert not any(parse_profile(n)['g'] == 3 for n in profiles)


def test_verified_flags():
    verified = sorted(p for p in MIG if get_product(p)['verified'])
    assert verified == ['A100-SXM4-40GB', 'A100-SXM4-80GB', 'A30', 'H100-80GB-HBM3', 'H100-NVL']


def test_pci_ids_unique():
    ids = [i for p in ALL for i in packed_pci_ids(get_product(p))]
    assert len(ids) == len(set(ids))
    assert packed_pci_ids(get_product('A100-SXM4-40GB')) == [0x20B010DE]
    assert packed_pci_ids(get_product('A100-PCIE-40GB')) == [0x20F110DE, 0x20B110DE]


# --- names -------------------------------------------------------------------

@pytest.mark.parametrize('value,expected', [
    ('NVIDIA-A100-SXM4-40GB', 'A100-SXM4-40GB'),
    ('A100-SXM4-40GB', 'A100-SXM4-40GB'),
    ('nvidia-a100-sxm4-40gb', 'A100-SXM4-40GB'),
    ('NVIDIA A100-SXM4-40GB', 'A100-SXM4-40GB'),
    ('NVIDIA-A100-SXM4-40GB-MIG-1g.5gb', 'A100-SXM4-40GB'),
    ('NVIDIA-A100-SXM4-40GB-MIG-1g.5gb.me', 'A100-SXM4-40GB'),
    ('NVIDIA-A100-SXM4-40GB-MIG-1g.5gb-SHARED', 'A100-SXM4-40GB'),
    ('NVIDIA-A100-SXM4-40GB-MIG-INVALID', 'A100-SXM4-40GB'),
    ('NVIDIA-A100-SXM4-40GB-SHARED', 'A100-SXM4-40GB'),
    ('NVIDIA-A100-80GB-PCIe', 'A100-PCIE-80GB'),
    ('A100-PCIE-80GB', 'A100-PCIE-80GB'),
    ('NVIDIA-H100-80GB-HBM3-MIG-3g.40gb', 'H100-80GB-HBM3'),
    ('NVIDIA-H200', 'H200'),
    ('NVIDIA-H200-NVL', 'H200-NVL'),
    ('Tesla-T4', 'T4'),
    ('Tesla-T4-SHARED', 'T4'),
    ('T4', 'T4'),
    ('NVIDIA-L40S', 'L40S'),
    ('NVIDIA-RTX-PRO-6000-SHARED', 'RTX-PRO-6000'),
    ('  NVIDIA-Unknown-GPU  ', 'Unknown-GPU'),
])
def test_canonical_product(value, expected):
    assert canonical_product(value) == expected


def test_canonical_product_rejects_non_strings():
    with pytest.raises(TypeError, match='must be a string'):
        canonical_product(None)


def test_get_product_spellings_agree():
    assert get_product('NVIDIA-A30-MIG-1g.6gb') == get_product('a30') == get_product('A30')


def test_get_product_unknown_and_non_string():
    assert get_product('NVIDIA-V100') is None
    assert get_product(42) is None


def test_get_product_returns_copies():
    entry = get_product('A30')
    entry['profiles']['1g.6gb']['max'] = 99
    entry['profiles'].clear()
    assert get_product('A30')['profiles']['1g.6gb']['max'] == 4


def test_products_with_profile():
    assert products_with_profile('1g.10gb') == [
        'A100-PCIE-40GB', 'A100-PCIE-80GB', 'A100-SXM4-40GB', 'A100-SXM4-80GB', 'H100-80GB-HBM3', 'H100-PCIe']
    assert products_with_profile('4g.24gb') == ['A30']
    assert products_with_profile('9g.1gb') == []


# --- profile grammar ---------------------------------------------------------

@pytest.mark.parametrize('name,expected', [
    ('1g.5gb', {'c': 1, 'g': 1, 'gb': 5, 'attributes': [], 'negative_attributes': []}),
    ('1c.2g.10gb', {'c': 1, 'g': 2, 'gb': 10, 'attributes': [], 'negative_attributes': []}),
    ('1g.5gb+me', {'c': 1, 'g': 1, 'gb': 5, 'attributes': ['me'], 'negative_attributes': []}),
    ('1g.24gb+me.all', {'c': 1, 'g': 1, 'gb': 24, 'attributes': ['me.all'], 'negative_attributes': []}),
    ('1g.24gb-me', {'c': 1, 'g': 1, 'gb': 24, 'attributes': [], 'negative_attributes': ['me']}),
    ('4g.96gb+gfx', {'c': 4, 'g': 4, 'gb': 96, 'attributes': ['gfx'], 'negative_attributes': []}),
])
def test_parse_profile(name, expected):
    assert parse_profile(name) == expected


@pytest.mark.parametrize('name', [
    '', '1g', '1g.5', 'g.5gb', '1g.5GB', '1g.5gb+', '1g.5gb+me,me', '1g.5gb+me.', '1g.5gb+1me',
    '1g.5gb+me-x', ' 1g.5gb', '1gb.5g', None, 5,
])
def test_parse_profile_rejects(name):
    assert parse_profile(name) is None


@pytest.mark.parametrize('name,expected', [
    ('1g.5gb+me', True), ('1g.24gb+me.all', True), ('1g.5gb', False), ('1g.24gb-me', False),
    ('4g.96gb+gfx', False), ('bogus', False),
])
def test_is_media_extension(name, expected):
    assert is_media_extension(name) is expected


# --- overrides (merged as given; gpu/products.py checks them) -----------------

NEW_GPU = {
    'RTX-PRO-6000': {
        'gfd_product': 'NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition',
        'memory_mib': 97887,
        'compute_capability': '12.0',
        'pci_device_id': '0x2BB5',
        'memory_slices': 4,
        'profiles': {
            '1g.24gb': {'size': 1, 'placements': [0, 1, 2, 3], 'memory_mib': 24000},
            '2g.48gb': {'size': 2, 'placements': [0, 2]},
            '4g.96gb': {'size': 4, 'placements': [0], 'gi_id': 0},
        },
    },
}


def test_override_adds_new_gpu():
    entry = get_product('NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition', NEW_GPU)
    assert entry['product'] == 'RTX-PRO-6000'
    assert entry['mig_capable'] is True
    assert entry['compute_slices'] == 4
    assert entry['profiles']['1g.24gb'] == {'gi_id': None, 'size': 1, 'placements': [0, 1, 2, 3], 'max': 4,
                                            'compute_slices': 1, 'memory_mib': 24000}
    assert entry['profiles']['2g.48gb']['max'] == 2
    assert 'RTX-PRO-6000' in product_names(NEW_GPU)
    assert 'RTX-PRO-6000' not in product_names()
    assert get_product('RTX-PRO-6000') is None


def test_override_partial_merge_keeps_builtins():
    overrides = {'NVIDIA-A100-SXM4-40GB': {'memory_mib': 40000, 'profiles': {'1g.5gb': {'memory_mib': 5000}}}}
    entry = get_product('A100-SXM4-40GB', overrides)
    assert entry['memory_mib'] == 40000
    assert entry['profiles']['1g.5gb']['memory_mib'] == 5000
    assert entry['profiles']['1g.5gb']['placements'] == [0, 1, 2, 3, 4, 5, 6]
    assert entry['profiles']['7g.40gb']['max'] == 1
    assert get_product('A100-SXM4-40GB')['memory_mib'] == 40960


def test_override_rename_and_remove():
    overrides = {'A100-SXM4-80GB': {'renames': {'7g.80gb': '7g.79gb'}, 'profiles': {'1g.10gb+me': None}}}
    profiles = get_product('A100-SXM4-80GB', overrides)['profiles']
    assert '7g.79gb' in profiles and '7g.80gb' not in profiles and '1g.10gb+me' not in profiles
    assert profiles['7g.79gb']['placements'] == [0]


def test_override_can_mark_gpu_not_mig_capable():
    assert get_product('A30', {'A30': {'mig_capable': False}})['mig_capable'] is False


def test_override_non_mig_gpu():
    entry = get_product('NVIDIA-A40', {'NVIDIA-A40': {'memory_mib': 46068, 'compute_capability': '8.6'}})
    assert entry['product'] == 'A40' and entry['mig_capable'] is False and entry['profiles'] == {}
    assert entry['gfd_product'] == 'NVIDIA-A40'


# --- self-contained ----------------------------------------------------------

def test_catalog_imports_only_stdlib():
    """The testbed loads this file by path: it must not import the collection or third parties."""
    with open(mig_catalog.__file__) as handle:
        tree = ast.parse(handle.read())
    modules = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(alias.name.split('.')[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            modules.add(node.module.split('.')[0])
    assert modules <= {'__future__', 'copy', 're'}
    assert os.path.basename(mig_catalog.__file__) == 'catalog.py'
