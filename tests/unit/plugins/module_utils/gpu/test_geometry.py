# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests for module_utils.gpu.geometry: placement, capacity, mig-parted documents."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import itertools

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.catalog import (
    get_product,
    is_media_extension,
    product_names,
)
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.geometry import (
    MigGeometryError,
    builtin_config,
    builtin_document,
    config_capacity,
    config_name_for,
    find_placement,
    geometry_errors,
    mig_capacity,
    mig_parted_document,
    mig_parted_errors,
    parse_device_filter,
    resource_name,
)

A100 = 'NVIDIA-A100-SXM4-40GB'
MIG_PRODUCTS = [p for p in product_names() if get_product(p)['mig_capable']]


def _layouts(entry):
    """Independent oracle: every set of non-overlapping instances, by a left-to-right slice scan."""
    profiles = entry['profiles']
    found = set()

    def scan(slice_index, counts):
        if slice_index >= entry['memory_slices']:
            found.add(tuple(sorted(counts.items())))
            return
        scan(slice_index + 1, counts)  # leave this slice empty
        for name, profile in profiles.items():
            if slice_index in profile['placements']:
                bumped = dict(counts)
                bumped[name] = bumped.get(name, 0) + 1
                scan(slice_index + profile['size'], bumped)

    scan(0, {})
    return found


def _oracle_fits(geometry, layouts):
    active = tuple(sorted((n, c) for n, c in geometry.items() if c))
    media = sum(c for n, c in geometry.items() if is_media_extension(n))
    return media <= 1 and active in layouts


# --- nvidia-facts.md 1.4 worked checks ---------------------------------------

@pytest.mark.parametrize('geometry,expected', [
    ({'1g.5gb': 2, '2g.10gb': 1, '3g.20gb': 1}, [('2g.10gb', 0), ('1g.5gb', 2), ('1g.5gb', 3), ('3g.20gb', 4)]),
    ({'4g.20gb': 1, '3g.20gb': 1}, [('4g.20gb', 0), ('3g.20gb', 4)]),
    ({'4g.20gb': 1, '1g.5gb': 3}, [('4g.20gb', 0), ('1g.5gb', 4), ('1g.5gb', 5), ('1g.5gb', 6)]),
    ({'2g.10gb': 3, '1g.5gb': 1}, [('2g.10gb', 0), ('2g.10gb', 2), ('2g.10gb', 4), ('1g.5gb', 6)]),
    ({'1g.10gb': 4}, [('1g.10gb', 0), ('1g.10gb', 2), ('1g.10gb', 4), ('1g.10gb', 6)]),
    ({'7g.40gb': 1}, [('7g.40gb', 0)]),
    ({'1g.5gb': 7}, [('1g.5gb', s) for s in range(7)]),
    ({'1g.5gb+me': 1, '1g.5gb': 6}, [('1g.5gb', s) for s in range(6)] + [('1g.5gb+me', 6)]),
])
def test_worked_checks_that_fit(geometry, expected):
    assert geometry_errors(geometry, A100) == []
    placement = find_placement(geometry, get_product(A100))
    assert [(p['profile'], p['start']) for p in placement] == expected


@pytest.mark.parametrize('geometry,fragment', [
    ({'3g.20gb': 2, '1g.5gb': 1}, 'needs 9 of 8 memory slices'),
    ({'4g.20gb': 1, '2g.10gb': 1, '1g.5gb': 2}, '1g.5gb starts at 0-6'),
    ({'7g.40gb': 1, '1g.5gb': 1}, 'no non-overlapping placement exists'),
    ({'1g.10gb': 4, '1g.5gb': 1}, 'needs 9 of 8 memory slices'),
    ({'3g.20gb': 1, '2g.10gb': 2, '1g.5gb': 1}, 'no non-overlapping placement exists'),
])
def test_worked_checks_that_do_not_fit(geometry, fragment):
    errors = geometry_errors(geometry, A100)
    assert len(errors) == 1
    assert 'does not fit on one A100-SXM4-40GB' in errors[0]
    assert fragment in errors[0]
    assert find_placement(geometry, get_product(A100)) is None


def test_no_fit_suggests_what_to_drop():
    errors = geometry_errors({'4g.20gb': 1, '2g.10gb': 1, '1g.5gb': 2}, A100)
    assert errors[0].endswith('it fits with one instance fewer of 1g.5gb or 2g.10gb or 4g.20gb')
    errors = geometry_errors({'3g.20gb': 2, '1g.5gb': 1}, A100)
    assert errors[0].endswith('it fits with one instance fewer of 1g.5gb or 3g.20gb')


def test_no_fit_without_single_removal_has_no_suggestion():
    errors = geometry_errors({'3g.20gb': 2, '2g.10gb': 3}, A100)
    assert errors[0].startswith('geometry {2g.10gb: 3, 3g.20gb: 2} does not fit on one A100-SXM4-40GB: it needs 14 '
                                'of 8 memory slices')
    assert 'fewer' not in errors[0]


def test_order_sensitive_case_from_mig_guide_fits():
    """-cgi 19,19,14,9 fails with NVML auto-placement, but the layout exists."""
    assert geometry_errors({'3g.20gb': 1, '2g.10gb': 1, '1g.5gb': 2}, A100) == []


# --- A30 ---------------------------------------------------------------------

@pytest.mark.parametrize('geometry', [
    {'1g.6gb': 4}, {'2g.12gb': 2}, {'4g.24gb': 1}, {'1g.6gb': 2, '2g.12gb': 1},
    {'1g.6gb+me': 1, '1g.6gb': 3}, {'2g.12gb+me': 1, '2g.12gb': 1}, {'2g.12gb+me': 1, '1g.6gb': 2},
])
def test_a30_fits(geometry):
    assert geometry_errors(geometry, 'NVIDIA-A30') == []


@pytest.mark.parametrize('geometry,fragment', [
    ({'4g.24gb': 1, '1g.6gb': 1}, 'needs 5 of 4 memory slices'),
    ({'2g.12gb': 2, '1g.6gb': 1}, 'does not fit on one A30'),
    ({'1g.6gb': 5}, '1g.6gb: 5 requested, at most 4 fit on one A30'),
    ({'2g.12gb': 3}, '2g.12gb: 3 requested, at most 2 fit on one A30'),
    ({'1g.6gb+me': 1, '2g.12gb+me': 1}, 'at most one media-extension (+me) instance'),
    ({'3g.12gb': 1}, "profile '3g.12gb' is not valid for A30; valid: 1g.6gb, 1g.6gb+me, 2g.12gb, 2g.12gb+me, "
                     "4g.24gb"),
])
def test_a30_errors(geometry, fragment):
    errors = geometry_errors(geometry, 'NVIDIA-A30')
    assert len(errors) == 1 and fragment in errors[0]


# --- exhaustive cross-check against the slice-scan oracle ---------------------

@pytest.mark.parametrize('product', MIG_PRODUCTS)
def test_every_geometry_agrees_with_oracle(product):
    entry = get_product(product)
    layouts = _layouts(entry)
    names = sorted(entry['profiles'])
    ranges = [range(entry['profiles'][n]['max'] + 1) for n in names]
    checked = 0
    for counts in itertools.product(*ranges):
        if not any(counts):
            continue
        geometry = dict(zip(names, counts))
        fits = geometry_errors(geometry, product) == []
        assert fits == _oracle_fits(geometry, layouts), geometry
        placement = find_placement(geometry, entry)
        if fits:
            occupied = [s for p in placement for s in range(p['start'], p['start'] + p['size'])]
            assert len(occupied) == len(set(occupied))
            assert all(p['start'] in entry['profiles'][p['profile']]['placements'] for p in placement)
            assert sorted(p['profile'] for p in placement) == sorted(n for n in names for i in range(geometry[n]))
        checked += 1
    assert checked > 100


@pytest.mark.parametrize('product', MIG_PRODUCTS)
def test_one_over_max_is_rejected_for_every_profile(product):
    entry = get_product(product)
    for name, profile in entry['profiles'].items():
        errors = geometry_errors({name: profile['max'] + 1}, product)
        assert len(errors) == 1 and ('at most %d fit' % profile['max'] in errors[0] or '(+me)' in errors[0])
        assert geometry_errors({name: profile['max']}, product) == []


# --- media extensions, counts, products ---------------------------------------

def test_me_twice_reports_media_rule_once():
    assert geometry_errors({'1g.5gb+me': 2}, A100) == [
        'at most one media-extension (+me) instance fits on one A100-SXM4-40GB (one set of media engines per GPU); '
        'requested {1g.5gb+me: 2}'
    ]


def test_me_once_fits_on_every_mig_gpu():
    for product in MIG_PRODUCTS:
        me = [n for n in get_product(product)['profiles'] if n.endswith('+me')]
        assert me and all(geometry_errors({n: 1}, product) == [] for n in me), product


@pytest.mark.parametrize('geometry,fragment', [
    ({'1g.5gb': '2'}, "count for '1g.5gb' must be a non-negative integer, got '2' (str)"),
    ({'1g.5gb': -1}, "count for '1g.5gb' must be a non-negative integer, got -1 (int)"),
    ({'1g.5gb': 1.0}, 'got 1.0 (float)'),
    ({'1g.5gb': True}, 'got True (bool)'),
    ({'1g.5gb': None}, 'got None (NoneType)'),
    ({1: 1}, 'profile names must be strings, got int 1'),
    ({'1g.5gb': 0, '2g.10gb': 0}, 'all counts are 0, which mig-parted rejects'),
    (['1g.5gb'], 'geometry must be a mapping of MIG profile -> count, got list'),
    ('1g.5gb: 1', 'geometry must be a mapping of MIG profile -> count, got str'),
    ({'2g.5gb': 1}, "profile '2g.5gb' is not valid for A100-SXM4-40GB; valid: 1g.5gb, 1g.5gb+me, 1g.10gb, "
                    "2g.10gb, 3g.20gb, 4g.20gb, 7g.40gb"),
    ({'2g.20gb': 1}, '(2g.20gb is a profile of A100-PCIE-80GB, A100-SXM4-80GB, H100-80GB-HBM3, H100-PCIe)'),
    ({'1g5gb': 1}, 'malformed name'),
    ({'1g.5gb': 8}, '1g.5gb: 8 requested, at most 7 fit on one A100-SXM4-40GB'),
    ({'3g.20gb': 3}, '3g.20gb: 3 requested, at most 2 fit on one A100-SXM4-40GB'),
])
def test_geometry_input_errors(geometry, fragment):
    errors = geometry_errors(geometry, A100)
    assert any(fragment in e for e in errors), errors


def test_unknown_profiles_all_reported():
    errors = geometry_errors({'9g.1gb': 1, '2g.5gb': 1, '1g.5gb': 1}, A100)
    assert [e.split("'")[1] for e in errors] == ['2g.5gb', '9g.1gb']


def test_zero_counts_are_ignored():
    assert geometry_errors({'1g.5gb': 7, '7g.40gb': 0}, A100) == []


@pytest.mark.parametrize('geometry', [None, {}])
def test_empty_geometry_fits(geometry):
    assert geometry_errors(geometry, A100) == []
    assert geometry_errors(geometry, 'Tesla-T4') == []


def test_unknown_product_lists_known():
    errors = geometry_errors({'1g.5gb': 1}, 'NVIDIA-V100-SXM2-16GB')
    assert errors == ["unknown GPU product 'NVIDIA-V100-SXM2-16GB'; known: " + ', '.join(product_names())
                      + ' (add it with overrides)']


def test_product_must_be_string():
    assert 'must be a string' in geometry_errors({}, None)[0]


def test_non_mig_gpu_rejects_instances():
    assert geometry_errors({'1g.5gb': 1}, 'Tesla-T4') == [
        'T4 is not MIG-capable; use an empty geometry ({}) with MIG disabled']


@pytest.mark.parametrize('product', [
    'NVIDIA-A100-SXM4-40GB-MIG-1g.5gb', 'NVIDIA-A100-SXM4-40GB-MIG-INVALID', 'A100-SXM4-40GB-SHARED',
    'nvidia-a100-sxm4-40gb',
])
def test_product_suffixes_accepted(product):
    assert geometry_errors({'1g.5gb': 7}, product) == []


def test_h100_names_differ_from_a100():
    assert geometry_errors({'1g.10gb': 2, '2g.20gb': 1, '3g.40gb': 1}, 'NVIDIA-H100-80GB-HBM3') == []
    assert "profile '1g.5gb' is not valid for H100-80GB-HBM3" in geometry_errors({'1g.5gb': 1},
                                                                                 'NVIDIA-H100-80GB-HBM3')[0]


def test_overrides_rename_profile():
    overrides = {'A100-SXM4-80GB': {'renames': {'7g.80gb': '7g.79gb'}}}
    assert geometry_errors({'7g.79gb': 1}, 'NVIDIA-A100-SXM4-80GB', overrides) == []
    assert "profile '7g.80gb' is not valid" in geometry_errors({'7g.80gb': 1}, 'NVIDIA-A100-SXM4-80GB', overrides)[0]


def test_overrides_new_gpu_and_compute_check():
    overrides = {'NVIDIA-Tiny': {'memory_slices': 4, 'compute_slices': 3, 'profiles': {
        '1g.1gb': {'size': 1, 'placements': [0, 1, 2, 3]},
        '2g.2gb': {'size': 2, 'placements': [0, 2]},
    }}}
    assert geometry_errors({'1g.1gb': 3}, 'NVIDIA-Tiny', overrides) == []
    assert geometry_errors({'1g.1gb': 4}, 'NVIDIA-Tiny', overrides) == [
        'geometry {1g.1gb: 4} needs 4 compute slices; Tiny has 3']
    assert geometry_errors({'2g.2gb': 2}, 'Tiny', overrides) == ['geometry {2g.2gb: 2} needs 4 compute slices; '
                                                                 'Tiny has 3']


def test_bad_overrides_become_errors():
    assert geometry_errors({}, A100, overrides=['x']) == [
        'overrides must be a mapping of product -> entry, got list']


def test_find_placement_rejects_unknown_profile():
    with pytest.raises(MigGeometryError, match=r"profile\(s\) 2g.5gb not offered by A100-SXM4-40GB"):
        find_placement({'2g.5gb': 1}, get_product(A100))


def test_find_placement_empty():
    assert find_placement({}, get_product(A100)) == []
    assert find_placement({'1g.5gb': 0}, get_product(A100)) == []


# --- resource names and capacity -----------------------------------------------

@pytest.mark.parametrize('profile,resource', [
    ('1g.5gb', 'nvidia.com/mig-1g.5gb'),
    ('1g.5gb+me', 'nvidia.com/mig-1g.5gb.me'),
    ('1g.24gb+me.all', 'nvidia.com/mig-1g.24gb.me.all'),
    ('1g.24gb-me', 'nvidia.com/mig-1g.24gb-me'),
    ('7g.141gb', 'nvidia.com/mig-7g.141gb'),
])
def test_resource_name(profile, resource):
    assert resource_name(profile) == resource


@pytest.mark.parametrize('profile,name', [
    ('1g.5gb', 'all-1g.5gb'), ('1g.5gb+me', 'all-1g.5gb.me'), ('1g.24gb-me', 'all-1g.24gb-me')])
def test_config_name_for(profile, name):
    assert config_name_for(profile) == name


def test_capacity_mixed():
    assert mig_capacity({'1g.5gb': 2, '2g.10gb': 1, '3g.20gb': 1}, A100, strategy='mixed', gpus=8) == {
        'nvidia.com/mig-1g.5gb': 16, 'nvidia.com/mig-2g.10gb': 8, 'nvidia.com/mig-3g.20gb': 8}


def test_capacity_mixed_me_resource():
    assert mig_capacity({'1g.5gb+me': 1, '1g.5gb': 6}, A100, gpus=2) == {
        'nvidia.com/mig-1g.5gb': 12, 'nvidia.com/mig-1g.5gb.me': 2}


def test_capacity_defaults_are_mixed_and_one_gpu():
    assert mig_capacity({'1g.6gb': 4}, 'NVIDIA-A30') == {'nvidia.com/mig-1g.6gb': 4}


def test_capacity_single_homogeneous():
    assert mig_capacity({'1g.5gb': 7}, A100, strategy='single', gpus=8) == {'nvidia.com/gpu': 56}
    assert mig_capacity({'3g.40gb': 2}, 'NVIDIA-H100-80GB-HBM3', 'single', 4) == {'nvidia.com/gpu': 8}


def test_capacity_single_heterogeneous_raises():
    with pytest.raises(MigGeometryError) as exc:
        mig_capacity({'1g.5gb': 2, '2g.10gb': 1, '3g.20gb': 1}, A100, strategy='single', gpus=8)
    assert str(exc.value) == ("strategy 'single' needs one MIG profile per node, got 1g.5gb, 2g.10gb, 3g.20gb; "
                              "use strategy 'mixed' or a homogeneous geometry such as all-1g.5gb")


def test_capacity_single_me_and_plain_are_different_types():
    with pytest.raises(MigGeometryError, match='needs one MIG profile per node'):
        mig_capacity({'1g.5gb+me': 1, '1g.5gb': 6}, A100, strategy='single')


def test_capacity_none_strategy():
    assert mig_capacity({'1g.5gb': 7}, A100, strategy='none', gpus=8) == {'nvidia.com/gpu': 8}


@pytest.mark.parametrize('strategy', ['none', 'single', 'mixed'])
@pytest.mark.parametrize('geometry', [None, {}, {'1g.5gb': 0}])
def test_capacity_mig_disabled(strategy, geometry):
    if geometry == {'1g.5gb': 0}:
        with pytest.raises(MigGeometryError, match='all counts are 0'):
            mig_capacity(geometry, A100, strategy=strategy, gpus=4)
    else:
        assert mig_capacity(geometry, A100, strategy=strategy, gpus=4) == {'nvidia.com/gpu': 4}


def test_capacity_non_mig_gpu():
    assert mig_capacity({}, 'Tesla-T4', gpus=2) == {'nvidia.com/gpu': 2}


@pytest.mark.parametrize('kwargs,fragment', [
    ({'strategy': 'auto'}, "strategy must be one of none, single, mixed, got 'auto'"),
    ({'gpus': 0}, 'gpus must be a positive integer, got 0'),
    ({'gpus': '8'}, "gpus must be a positive integer, got '8'"),
    ({'gpus': True}, 'gpus must be a positive integer, got True'),
])
def test_capacity_argument_errors(kwargs, fragment):
    with pytest.raises(MigGeometryError) as exc:
        mig_capacity({'1g.5gb': 1}, A100, **kwargs)
    assert fragment in str(exc.value)


def test_capacity_invalid_geometry_raises_with_messages():
    with pytest.raises(MigGeometryError) as exc:
        mig_capacity({'3g.20gb': 2, '1g.5gb': 1}, A100)
    assert 'does not fit on one A100-SXM4-40GB' in str(exc.value)
    with pytest.raises(MigGeometryError, match="unknown GPU product 'V100'"):
        mig_capacity({}, 'V100')


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


# --- mig-parted documents -------------------------------------------------------

def _doc(configs):
    return {'version': 'v1', 'mig-configs': configs}


GOOD_DOC = _doc({
    'all-disabled': [{'devices': 'all', 'mig-enabled': False}],
    'all-enabled': [{'devices': 'all', 'mig-enabled': True, 'mig-devices': {}}],
    'all-balanced': [
        {'device-filter': ['0x20B010DE', '0x20B110DE', '0x20F110DE', '0x20F610DE'], 'devices': 'all',
         'mig-enabled': True, 'mig-devices': {'1g.5gb': 2, '2g.10gb': 1, '3g.20gb': 1}},
        {'device-filter': '0x20B710DE', 'devices': 'all', 'mig-enabled': True,
         'mig-devices': {'1g.6gb': 2, '2g.12gb': 1}},
        {'device-filter': ['0x233010DE', '0x233110DE', '0x232210DE', '0x20B210DE', '0x20B510DE', '0x20F310DE',
                           '0x20F510DE', '0x232410DE'], 'devices': 'all', 'mig-enabled': True,
         'mig-devices': {'1g.10gb': 2, '2g.20gb': 1, '3g.40gb': 1}},
    ],
    'split-a100': [
        {'devices': [0, 1, 2, 3], 'mig-enabled': True, 'mig-devices': {'1g.5gb': 7}},
        {'devices': [4, 5], 'mig-enabled': True, 'mig-devices': {'3g.20gb': 2}},
        {'devices': [6, 7], 'mig-enabled': False},
    ],
    'with-subsystem': [{'device-filter': '0x20B010DE:0x145010DE', 'devices': 'all', 'mig-enabled': True,
                        'mig-devices': {'1g.5gb+me': 1, '1g.5gb': 6}}],
    'null-devices-disabled': [{'devices': 'all', 'mig-enabled': False, 'mig-devices': None}],
})

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


def _entry(**fields):
    entry = {'devices': 'all', 'mig-enabled': True, 'mig-devices': {'1g.5gb': 7}}
    for key, value in fields.items():
        key = key.replace('_', '-')
        if value is _DROP:
            entry.pop(key)
        else:
            entry[key] = value
    return entry


_DROP = object()

BAD_DOCS = [
    (['version', 'v1'], None, 'mig-parted config must be a mapping, got list'),
    ({'mig-configs': {'a': [_entry()]}}, None, "missing 'version' (must be 'v1')"),
    ({'version': 'v2', 'mig-configs': {'a': [_entry()]}}, None, "unknown version 'v2'; mig-parted supports only 'v1'"),
    (dict(_doc({'a': [_entry()]}), migconfigs={}), None,
     "mig-parted config: unexpected field 'migconfigs' (allowed: version, mig-configs); did you mean 'mig-configs'?"),
    ({'version': 'v1'}, None, "'mig-configs' must be a non-empty mapping"),
    (_doc({}), None, "'mig-configs' must be a non-empty mapping"),
    (_doc({'a': []}), None, 'mig-configs.a must be a non-empty list of entries'),
    (_doc({'my config': [_entry()]}), None,
     "config name 'my config' cannot be a value of the nvidia.com/mig.config label"),
    (_doc({'x' * 64: [_entry()]}), None, 'cannot be a value of the nvidia.com/mig.config label'),
    (_doc({'a': ['devices: all']}), None, 'mig-configs.a[0] must be a mapping, got str'),
    (_doc({'a': [_entry(mig_device={})]}), None,
     "mig-configs.a[0]: unexpected field 'mig-device' (allowed: device-filter, devices, mig-enabled, mig-devices); "
     "did you mean 'mig-devices'?"),
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
     "mig-configs.a[0].mig-devices: count for '1g.5gb' must be a non-negative integer, got 'seven' (str)"),
    (_doc({'a': [_entry(mig_devices={'1g.5gb': 0})]}), None, 'all counts are 0, which mig-parted rejects'),
    (_doc({'a': [_entry(mig_devices={'1g.5gb+': 1})]}), None,
     "mig-configs.a[0].mig-devices: malformed profile name '1g.5gb+'"),
    (_doc({'a': [_entry(device_filter='20B010DE')]}), None,
     "mig-configs.a[0]: device-filter '20B010DE' is not a packed PCI ID like '0x20B010DE'"),
    (_doc({'a': [_entry(device_filter=['0x20B0'])]}), None,
     "device-filter '0x20B0' does not name an NVIDIA device: IDs are packed as <device><vendor>, e.g. '0x20B010DE'"),
    (_doc({'a': [_entry(device_filter=0x20B010DE)]}), None,
     'device-filter must be a string or a list of strings, got int'),
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
