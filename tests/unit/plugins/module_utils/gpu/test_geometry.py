# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests for module_utils.gpu.geometry: placement and capacity of one GPU."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import itertools

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.catalog import is_media_extension
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.geometry import (
    MigGeometryError,
    config_name_for,
    find_placement,
    geometry_errors,
    mig_capacity,
    resource_name,
)
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.products import get_product, product_names

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


# --- docs/facts.md#worked-checks ---------------------------------------------

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
    ({'1g.5gb': '2'}, "count for '1g.5gb' must be a non-negative integer, got '2' (string)"),
    ({'1g.5gb': -1}, "count for '1g.5gb' must be a non-negative integer, got -1 (integer)"),
    ({'1g.5gb': 1.0}, 'got 1.0 (float)'),
    ({'1g.5gb': True}, 'got True (boolean)'),
    ({'1g.5gb': None}, 'got None (null)'),
    ({1: 1}, 'profile names must be strings, got integer 1'),
    ({'1g.5gb': 0, '2g.10gb': 0}, 'all counts are 0, which mig-parted rejects'),
    (['1g.5gb'], 'geometry must be a mapping of MIG profile -> count, got list'),
    ('1g.5gb: 1', 'geometry must be a mapping of MIG profile -> count, got string'),
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
