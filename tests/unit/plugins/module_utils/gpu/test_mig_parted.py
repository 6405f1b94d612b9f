# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests for module_utils.gpu.mig_parted: mig-parted documents and which entry configures a GPU."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.geometry import MigGeometryError
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.mig_parted import mig_parted_errors, parse_device_filter
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.gpu.mig_parted_data import (
    GOOD_DOC, _DROP, _doc, _entry)

A100 = 'NVIDIA-A100-SXM4-40GB'


# --- mig-parted documents -------------------------------------------------------


GOOD_PRODUCTS = {
    'all-balanced': ['NVIDIA-A100-SXM4-40GB', 'NVIDIA-A30', 'NVIDIA-H100-80GB-HBM3', 'NVIDIA-A100-80GB-PCIe'],
    'split-a100': ['NVIDIA-A100-SXM4-40GB'],
    'all-disabled': ['Tesla-T4', 'NVIDIA-L40S', 'NVIDIA-A100-SXM4-40GB'],
    'all-enabled': ['NVIDIA-A30'],
}


def test_good_document():
    assert mig_parted_errors(GOOD_DOC, GOOD_PRODUCTS) == []
    assert mig_parted_errors(GOOD_DOC) == []


def test_good_document_product_string_shorthand():
    assert mig_parted_errors(GOOD_DOC, {'split-a100': 'NVIDIA-A100-SXM4-40GB'}) == []


BAD_DOCS = [
    (['version', 'v1'], None, 'mig-parted config must be a mapping, got list'),
    ({'mig-configs': {'a': [_entry()]}}, None, "missing 'version' (must be 'v1')"),
    ({'version': 'v2', 'mig-configs': {'a': [_entry()]}}, None, "unknown version 'v2'; mig-parted supports only 'v1'"),
    (dict(_doc({'a': [_entry()]}), migconfigs={}), None,
     "mig-parted config: unknown key 'migconfigs'; did you mean 'mig-configs'? (known keys: version, mig-configs)"),
    ({'version': 'v1'}, None, "'mig-configs' must be a non-empty mapping"),
    (_doc({}), None, "'mig-configs' must be a non-empty mapping"),
    (_doc({'a': []}), None, 'mig-configs.a must be a non-empty list of entries'),
    (_doc({'my config': [_entry()]}), None,
     "config name 'my config' cannot be a value of the nvidia.com/mig.config label"),
    (_doc({'x' * 64: [_entry()]}), None, 'cannot be a value of the nvidia.com/mig.config label'),
    (_doc({'a': ['devices: all']}), None, 'mig-configs.a[0] must be a mapping, got string'),
    (_doc({'a': [_entry(mig_device={})]}), None,
     "mig-configs.a[0]: unknown key 'mig-device'; did you mean 'mig-devices'? "
     "(known keys: device-filter, devices, mig-enabled, mig-devices)"),
    (_doc({'a': [_entry(devices=_DROP)]}), None, "mig-configs.a[0]: missing required field 'devices'"),
    (_doc({'a': [_entry(devices='ALL')]}), None,
     "mig-configs.a[0].devices must be 'all' or a list of GPU indices, got 'ALL'"),
    (_doc({'a': [_entry(devices=[])]}), None, 'mig-configs.a[0].devices is an empty list'),
    (_doc({'a': [_entry(devices=['0'])]}), None, 'must list non-negative integer GPU indices'),
    (_doc({'a': [_entry(devices=[-1])]}), None, 'must list non-negative integer GPU indices'),
    (_doc({'a': [_entry(devices=[0, 0])]}), None, 'mig-configs.a[0].devices lists a GPU index twice: [0, 0]'),
    (_doc({'a': [_entry(mig_enabled=_DROP)]}), None, "mig-configs.a[0]: missing required field 'mig-enabled'"),
    (_doc({'a': [_entry(mig_enabled='true')]}), None, "mig-configs.a[0].mig-enabled must be true or false, got 'true'"),
    (_doc({'a': [_entry(mig_devices=_DROP)]}), None,
     "mig-configs.a[0]: 'mig-devices' is required when mig-enabled is true (use {} for no instances)"),
    (_doc({'a': [_entry(mig_enabled=False)]}), None, 'mig-configs.a[0]: mig-devices must be empty when mig-enabled '
                                                     'is false'),
    (_doc({'a': [_entry(mig_devices=None)]}), None, 'mig-configs.a[0].mig-devices: geometry must be a mapping'),
    (_doc({'a': [_entry(mig_devices={'1g.5gb': 'seven'})]}), None,
     "mig-configs.a[0].mig-devices: count for '1g.5gb' must be a non-negative integer, got 'seven' (string)"),
    (_doc({'a': [_entry(mig_devices={'1g.5gb': 0})]}), None, 'all counts are 0, which mig-parted rejects'),
    (_doc({'a': [_entry(mig_devices={'1g.5gb+': 1})]}), None,
     "mig-configs.a[0].mig-devices: malformed profile name '1g.5gb+'"),
    (_doc({'a': [_entry(device_filter='20B010DE')]}), None,
     "mig-configs.a[0]: device-filter '20B010DE' is not a packed PCI ID like '0x20B010DE'"),
    (_doc({'a': [_entry(device_filter=['0x20B0'])]}), None,
     "device-filter '0x20B0' does not name an NVIDIA device: IDs are packed as <device><vendor>, e.g. '0x20B010DE'"),
    (_doc({'a': [_entry(device_filter=0x20B010DE)]}), None,
     'device-filter must be a string or a list of strings, got integer'),
    (_doc({'a': [_entry(device_filter='0x20B010DE:0x1:0x2')]}), None, 'is not a packed PCI ID'),
    (_doc({'a': [_entry(mig_devices={'3g.20gb': 2, '1g.5gb': 1})]}), {'a': [A100]},
     'mig-configs.a[0].mig-devices on A100-SXM4-40GB: geometry {1g.5gb: 1, 3g.20gb: 2} does not fit'),
    (_doc({'a': [_entry(mig_devices={'1g.10gb': 7})]}), {'a': [A100]},
     'mig-configs.a[0].mig-devices on A100-SXM4-40GB: 1g.10gb: 7 requested, at most 4 fit on one A100-SXM4-40GB'),
    (_doc({'a': [_entry()]}), {'a': ['NVIDIA-H100-80GB-HBM3']},
     "mig-configs.a[0].mig-devices on H100-80GB-HBM3: profile '1g.5gb' is not valid for H100-80GB-HBM3; valid: "
     "1g.10gb, 1g.10gb+me, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb"),
    (_doc({'a': [_entry()]}), {'b': [A100]},
     "config 'b' is assigned to nodes but not defined in mig-configs; defined: a"),
    (_doc({'a': [_entry()]}), {'a': ['NVIDIA-V100']}, "config 'a' on NVIDIA-V100: unknown GPU product 'NVIDIA-V100'"),
    (_doc({'a': [_entry()]}), {'a': ['Tesla-T4']},
     'mig-configs.a[0] enables MIG on T4, which is not MIG-capable (use mig-enabled: false or a device-filter '
     'that excludes it)'),
    (_doc({'a': [_entry(device_filter='0x20B710DE', mig_devices={'1g.6gb': 4})]}), {'a': [A100]},
     "config 'a' has no entry that applies to A100-SXM4-40GB (PCI 0x20B010DE): its device-filters name other GPUs"),
    (_doc({'a': [_entry(), _entry(mig_devices={'3g.20gb': 2})]}), {'a': [A100]},
     'mig-configs.a[0] and mig-configs.a[1] both configure all GPUs of A100-SXM4-40GB with different settings; '
     'mig-parted applies entries in order, so only mig-configs.a[1] takes effect'),
    (_doc({'a': [_entry(), _entry(devices=[0, 1], mig_devices={'3g.20gb': 2})]}), {'a': [A100]},
     'both configure GPU 0, GPU 1 of A100-SXM4-40GB with different settings'),
    (_doc({'a': [_entry(device_filter='0x20B710DE', mig_devices={'1g.5gb': 4})]}), None,
     "mig-configs.a[0].mig-devices on A30: profile '1g.5gb' is not valid for A30"),
    (_doc({'a': [_entry()]}), ['a'], 'products_by_config must map config name -> list of GPU products, got list'),
    (_doc({'a': [_entry()]}), {'a': [['A30']]}, "products for config 'a' must be a list of GPU product names"),
]


@pytest.mark.parametrize('document,products,fragment', BAD_DOCS)
def test_bad_documents(document, products, fragment):
    errors = mig_parted_errors(document, products)
    assert any(fragment in e for e in errors), errors


def test_at_least_fifteen_bad_documents():
    assert len(BAD_DOCS) >= 15


def test_per_gpu_index_geometry_checked_separately():
    doc = _doc({'split': [
        {'devices': [0, 1], 'mig-enabled': True, 'mig-devices': {'1g.5gb': 7}},
        {'devices': [2], 'mig-enabled': True, 'mig-devices': {'7g.40gb': 1, '1g.5gb': 1}},
    ]})
    assert mig_parted_errors(doc, {'split': [A100]}) == [
        'mig-configs.split[1].mig-devices on A100-SXM4-40GB: geometry {1g.5gb: 1, 7g.40gb: 1} does not fit on one '
        'A100-SXM4-40GB: it needs 9 of 8 memory slices and no non-overlapping placement exists (7g.40gb starts at 0; '
        '1g.5gb starts at 0-6); it fits with one instance fewer of 1g.5gb or 7g.40gb']


def test_overridden_entry_is_not_validated_but_reported():
    doc = _doc({'a': [_entry(mig_devices={'9g.9gb': 1}), _entry(mig_devices={'1g.5gb': 7})]})
    errors = mig_parted_errors(doc, {'a': [A100]})
    assert len(errors) == 1 and 'only mig-configs.a[1] takes effect' in errors[0]


def test_identical_overlapping_entries_are_fine():
    assert mig_parted_errors(_doc({'a': [_entry(), _entry(devices=[0])]}), {'a': [A100]}) == []


def test_device_filter_selects_product_rules():
    doc = _doc({'mixed-node': [
        {'device-filter': '0x20B010DE', 'devices': 'all', 'mig-enabled': True, 'mig-devices': {'1g.5gb': 7}},
        {'device-filter': '0x1EB810DE', 'devices': 'all', 'mig-enabled': False},
    ]})
    assert mig_parted_errors(doc, {'mixed-node': [A100, 'Tesla-T4']}) == []


def test_non_mig_gpu_not_matched_is_fine():
    doc = _doc({'a': [_entry(device_filter='0x20B010DE')]})
    assert mig_parted_errors(doc, {'a': ['Tesla-T4']}) == []


def test_overrides_reach_document_checks():
    doc = _doc({'a': [_entry(mig_devices={'7g.79gb': 1})]})
    overrides = {'A100-SXM4-40GB': {'renames': {'7g.40gb': '7g.79gb'}}}
    assert mig_parted_errors(doc, {'a': [A100]}, overrides) == []
    assert "profile '7g.79gb' is not valid" in mig_parted_errors(doc, {'a': [A100]})[0]


def test_mig_parted_errors_does_not_mutate_input():
    doc = copy.deepcopy(GOOD_DOC)
    mig_parted_errors(doc, GOOD_PRODUCTS)
    assert doc == GOOD_DOC


@pytest.mark.parametrize('value,expected', [
    ('0x20B010DE', [(0x20B010DE, None)]),
    (['0x20b010de', '0x20B710DE:0x153210DE'], [(0x20B010DE, None), (0x20B710DE, 0x153210DE)]),
    ('548409566', [(0x20B010DE, None)]),
])
def test_parse_device_filter(value, expected):
    assert parse_device_filter(value) == expected


@pytest.mark.parametrize('value', ['0x', '0123', 'x20B010DE', '0x20B010DE:', '0x20B010DEFF', ['0x20B010DE', 1]])
def test_parse_device_filter_rejects(value):
    with pytest.raises(MigGeometryError):
        parse_device_filter(value)
