# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests for module_utils.gpu.mig_configs: built-in configs, custom documents, capacity after a config."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.geometry import MigGeometryError, geometry_errors
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.mig_configs import builtin_config, builtin_document, config_capacity, mig_parted_document
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.mig_parted import mig_parted_errors
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.products import get_product, product_names
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.gpu.mig_parted_data import (
    GOOD_DOC, _doc, _entry)

A100 = 'NVIDIA-A100-SXM4-40GB'
MIG_PRODUCTS = [p for p in product_names() if get_product(p)['mig_capable']]


# --- built-in configs (mig-parted pkg/mig/builder) -----------------------------

@pytest.mark.parametrize('product,expected', [
    # same as gpu-operator's default-mig-parted-config all-balanced per device-filter
    ('NVIDIA-A100-SXM4-40GB', {'1g.5gb': 2, '2g.10gb': 1, '3g.20gb': 1}),
    ('NVIDIA-A100-SXM4-80GB', {'1g.10gb': 2, '2g.20gb': 1, '3g.40gb': 1}),
    ('NVIDIA-H100-80GB-HBM3', {'1g.10gb': 2, '2g.20gb': 1, '3g.40gb': 1}),
    ('NVIDIA-H100-NVL', {'1g.12gb': 2, '2g.24gb': 1, '3g.47gb': 1}),
    ('NVIDIA-GH200-480GB', {'1g.12gb': 2, '2g.24gb': 1, '3g.48gb': 1}),
    ('NVIDIA-GH200-144G-HBM3e', {'1g.18gb': 2, '2g.36gb': 1, '3g.72gb': 1}),
    ('NVIDIA-H200', {'1g.18gb': 2, '2g.35gb': 1, '3g.71gb': 1}),
    ('NVIDIA-H200-NVL', {'1g.18gb': 2, '2g.35gb': 1, '3g.71gb': 1}),
    ('NVIDIA-B200', {'1g.23gb': 2, '2g.45gb': 1, '3g.90gb': 1}),
    ('NVIDIA-A30', {'1g.6gb': 2, '2g.12gb': 1}),
])
def test_builtin_all_balanced(product, expected):
    assert builtin_config('all-balanced', product) == expected


@pytest.mark.parametrize('name,product,expected', [
    ('all-1g.5gb', A100, {'1g.5gb': 7}),
    ('all-1g.5gb.me', A100, {'1g.5gb+me': 1}),
    ('all-1g.10gb', A100, {'1g.10gb': 4}),
    ('all-1g.10gb', 'NVIDIA-H100-80GB-HBM3', {'1g.10gb': 7}),
    ('all-1g.35gb', 'NVIDIA-H200', {'1g.35gb': 4}),
    ('all-2g.12gb.me', 'NVIDIA-A30', {'2g.12gb+me': 1}),
    ('all-7g.40gb', A100, {'7g.40gb': 1}),
    ('all-disabled', A100, {}),
    ('all-enabled', A100, {}),
    ('all-disabled', 'Tesla-T4', {}),
])
def test_builtin_config(name, product, expected):
    assert builtin_config(name, product) == expected


@pytest.mark.parametrize('name,product', [
    ('all-1g.10gb', 'NVIDIA-A30'), ('all-1g.5gb+me', A100), ('custom', A100), ('all-balanced', 'Tesla-T4'),
    ('all-1g.5gb', 'Tesla-T4'),
])
def test_builtin_config_absent(name, product):
    assert builtin_config(name, product) is None


def test_builtin_config_unknown_product():
    with pytest.raises(MigGeometryError, match="unknown GPU product 'V100'"):
        builtin_config('all-balanced', 'V100')


@pytest.mark.parametrize('product', MIG_PRODUCTS)
def test_every_builtin_config_fits(product):
    document = builtin_document([product])
    for name in document['mig-configs']:
        assert geometry_errors(builtin_config(name, product), product) == [], name
    assert mig_parted_errors(document, dict((n, [product]) for n in document['mig-configs'])) == []


def test_builtin_document_multiple_devices_uses_filters():
    document = builtin_document(['NVIDIA-A100-SXM4-40GB', 'NVIDIA-A30', 'NVIDIA-A100-SXM4-40GB', 'Tesla-T4'])
    configs = document['mig-configs']
    assert document['version'] == 'v1'
    assert configs['all-disabled'] == [{'devices': 'all', 'mig-enabled': False}]
    assert configs['all-enabled'] == [{'devices': 'all', 'mig-enabled': True, 'mig-devices': {}}]
    assert configs['all-balanced'] == [
        {'device-filter': ['0x20B010DE'], 'devices': 'all', 'mig-enabled': True,
         'mig-devices': {'1g.5gb': 2, '2g.10gb': 1, '3g.20gb': 1}},
        {'device-filter': ['0x20B710DE'], 'devices': 'all', 'mig-enabled': True,
         'mig-devices': {'1g.6gb': 2, '2g.12gb': 1}},
    ]
    assert configs['all-1g.6gb.me'] == [{'device-filter': ['0x20B710DE'], 'devices': 'all', 'mig-enabled': True,
                                         'mig-devices': {'1g.6gb+me': 1}}]
    assert mig_parted_errors(document) == []


def test_builtin_document_groups_equal_max_counts():
    configs = builtin_document(['NVIDIA-A100-SXM4-80GB', 'NVIDIA-H100-80GB-HBM3'])['mig-configs']
    assert configs['all-1g.10gb'] == [{'device-filter': ['0x20B210DE', '0x233010DE'], 'devices': 'all',
                                       'mig-enabled': True, 'mig-devices': {'1g.10gb': 7}}]


def test_builtin_document_single_device_has_no_filters():
    configs = builtin_document(A100)['mig-configs']
    assert all('device-filter' not in e for entries in configs.values() for e in entries)
    assert sorted(configs) == ['all-1g.10gb', 'all-1g.5gb', 'all-1g.5gb.me', 'all-2g.10gb', 'all-3g.20gb',
                               'all-4g.20gb', 'all-7g.40gb', 'all-balanced', 'all-disabled', 'all-enabled']


# --- config_capacity ------------------------------------------------------------

@pytest.mark.parametrize('strategy,expected', [
    ('mixed', {'nvidia.com/mig-1g.5gb': 16, 'nvidia.com/mig-2g.10gb': 8, 'nvidia.com/mig-3g.20gb': 8}),
    ('none', {'nvidia.com/gpu': 8}),
])
def test_config_capacity_builtin_balanced(strategy, expected):
    assert config_capacity(None, 'all-balanced', A100, 8, strategy) == expected


def test_config_capacity_builtin_single():
    assert config_capacity(None, 'all-1g.5gb', A100, 8, 'single') == {'nvidia.com/gpu': 56}
    with pytest.raises(MigGeometryError, match="strategy 'single' needs one MIG profile per node"):
        config_capacity(None, 'all-balanced', A100, 8, 'single')


@pytest.mark.parametrize('strategy', ['none', 'single', 'mixed'])
def test_config_capacity_all_disabled(strategy):
    assert config_capacity(None, 'all-disabled', A100, 4, strategy) == {'nvidia.com/gpu': 4}


def test_config_capacity_all_enabled_differs_from_disabled():
    assert config_capacity(None, 'all-enabled', A100, 4, 'mixed') == {}
    assert config_capacity(None, 'all-enabled', A100, 4, 'none') == {'nvidia.com/gpu': 4}
    with pytest.raises(MigGeometryError, match='rejects a GPU with MIG enabled but no MIG devices'):
        config_capacity(None, 'all-enabled', A100, 4, 'single')


def test_config_capacity_per_index_sums():
    assert config_capacity(GOOD_DOC, 'split-a100', A100, 8, 'mixed') == {
        'nvidia.com/gpu': 2, 'nvidia.com/mig-1g.5gb': 28, 'nvidia.com/mig-3g.20gb': 4}


def test_config_capacity_single_rejects_enabled_and_disabled_mix():
    with pytest.raises(MigGeometryError, match='6 of 8 GPUs would have MIG enabled'):
        config_capacity(GOOD_DOC, 'split-a100', A100, 8, 'single')


def test_config_capacity_uncovered_gpu():
    with pytest.raises(MigGeometryError) as exc:
        config_capacity(GOOD_DOC, 'split-a100', A100, 9, 'mixed')
    assert str(exc.value) == ("config 'split-a100' has no entry for GPU 8 of A100-SXM4-40GB, so its MIG layout "
                              "would stay as it was; cover every GPU index or use devices: all")


def test_config_capacity_device_filtered_products():
    assert config_capacity(GOOD_DOC, 'all-balanced', 'NVIDIA-A30', 4, 'mixed') == {
        'nvidia.com/mig-1g.6gb': 8, 'nvidia.com/mig-2g.12gb': 4}
    assert config_capacity(GOOD_DOC, 'all-balanced', 'NVIDIA-H100-80GB-HBM3', 1, 'mixed') == {
        'nvidia.com/mig-1g.10gb': 2, 'nvidia.com/mig-2g.20gb': 1, 'nvidia.com/mig-3g.40gb': 1}


def test_config_capacity_non_mig_gpus_count_as_gpus():
    assert config_capacity(GOOD_DOC, 'all-balanced', 'Tesla-T4', 4, 'mixed') == {'nvidia.com/gpu': 4}
    assert config_capacity(None, 'all-disabled', 'NVIDIA-L40S', 2, 'single') == {'nvidia.com/gpu': 2}


def test_config_capacity_last_entry_wins_when_identical():
    doc = _doc({'a': [_entry(), _entry(devices=[0])]})
    assert config_capacity(doc, 'a', A100, 2, 'mixed') == {'nvidia.com/mig-1g.5gb': 14}


@pytest.mark.parametrize('args,fragment', [
    ((GOOD_DOC, 'nope', A100, 8, 'mixed'), "config 'nope' is not defined; defined: all-balanced, all-disabled"),
    ((None, 'all-1g.6gb', A100, 8, 'mixed'), "config 'all-1g.6gb' is not defined"),
    ((GOOD_DOC, 'split-a100', A100, 0, 'mixed'), 'gpu_count must be a positive integer, got 0'),
    ((GOOD_DOC, 'split-a100', A100, 8, 'Mixed'), "strategy must be one of none, single, mixed, got 'Mixed'"),
    (({'version': 'v2'}, 'a', A100, 8, 'mixed'), "unknown version 'v2'"),
    ((_doc({'a': [_entry(mig_devices={'1g.10gb': 7})]}), 'a', A100, 8, 'mixed'), 'at most 4 fit'),
    ((GOOD_DOC, 'split-a100', 'V100', 8, 'mixed'), "unknown GPU product 'V100'"),
])
def test_config_capacity_errors(args, fragment):
    with pytest.raises(MigGeometryError) as exc:
        config_capacity(*args)
    assert fragment in str(exc.value)


# --- mig_parted_document ----------------------------------------------------------

CUSTOM = {'two-3g': [{'devices': 'all', 'mig-enabled': True, 'mig-devices': {'3g.20gb': 2}}]}


def test_mig_parted_document_keeps_builtins_and_adds_custom():
    document = mig_parted_document(CUSTOM, [A100])
    assert document['version'] == 'v1'
    assert document['mig-configs']['two-3g'] == CUSTOM['two-3g']
    assert document['mig-configs']['all-balanced'] == builtin_document([A100])['mig-configs']['all-balanced']
    assert mig_parted_errors(document, {'two-3g': [A100], 'all-balanced': [A100]}) == []


def test_mig_parted_document_custom_replaces_builtin_name():
    custom = {'all-balanced': [{'devices': 'all', 'mig-enabled': True, 'mig-devices': {'1g.5gb': 7}}]}
    assert mig_parted_document(custom, [A100])['mig-configs']['all-balanced'] == custom['all-balanced']


def test_mig_parted_document_without_builtins_keeps_all_disabled():
    assert mig_parted_document(CUSTOM, [A100], include_builtin=False) == {'version': 'v1', 'mig-configs': {
        'all-disabled': [{'devices': 'all', 'mig-enabled': False}], 'two-3g': CUSTOM['two-3g']}}


def test_mig_parted_document_defaults():
    assert sorted(mig_parted_document(None)['mig-configs']) == ['all-disabled', 'all-enabled']


def test_mig_parted_document_copies_input():
    document = mig_parted_document(CUSTOM, [A100])
    document['mig-configs']['two-3g'][0]['mig-devices']['3g.20gb'] = 1
    assert CUSTOM['two-3g'][0]['mig-devices']['3g.20gb'] == 2


@pytest.mark.parametrize('custom,products,fragment', [
    (['two-3g'], [A100], 'custom MIG configs must map config name -> list of entries, got list'),
    (CUSTOM, ['V100'], "unknown GPU product 'V100'"),
])
def test_mig_parted_document_errors(custom, products, fragment):
    with pytest.raises(MigGeometryError) as exc:
        mig_parted_document(custom, products)
    assert fragment in str(exc.value)


# --- custom configs named like the operator's built-in ones ---------------------------------

def test_builtin_config_names():
    from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.mig_configs import (
        builtin_document, is_builtin_config_name)
    for name in ('all-disabled', 'all-enabled', 'all-balanced', 'all-1g.10gb', 'all-1g.5gb.me', 'all-1c.3g.20gb',
                 'all-7g.80gb', 'all-1g.12gb.me.all', 'all-1g.24gb.gfx'):
        assert is_builtin_config_name(name), name
    for name in ('training', 'all', 'all-', 'all-gpus', 'gpuops-7x1g.10gb', 'all-1g', 'all-disabled-2',
                 'All-disabled', 'all-\u0661g.10gb', None, 3):
        assert not is_builtin_config_name(name), name
    # every name the MIG manager generates for the catalog's products reads as built-in
    document = builtin_document(['NVIDIA-A100-SXM4-40GB', 'NVIDIA-H100-80GB-HBM3', 'NVIDIA-A30'])
    assert all(is_builtin_config_name(name) for name in document['mig-configs'])


def test_custom_configs_that_redefine_a_builtin_are_refused_unless_allowed():
    from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.mig_configs import builtin_override_errors
    enabled = [{'devices': 'all', 'mig-enabled': True, 'mig-devices': {'1g.5gb': 7}}]
    custom = {'all-disabled': enabled, 'training': enabled, 'all-1g.5gb': enabled}
    errors = builtin_override_errors(custom)
    assert [e.split(':')[0] for e in errors] == ['mig_custom_configs.all-1g.5gb', 'mig_custom_configs.all-disabled']
    assert "'all-disabled' is the name of one of the GPU operator's built-in MIG configs" in errors[1]
    assert 'set mig_allow_builtin_override: true' in errors[1]
    assert builtin_override_errors(custom, allow=True) == []
    assert builtin_override_errors({'training': enabled}) == []
    assert builtin_override_errors(None) == [] and builtin_override_errors({}) == []
