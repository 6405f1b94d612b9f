# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests for module_utils.gpu.products: catalog lookups with the user's overrides checked."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import catalog
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.products import (
    MigCatalogError, get_product, product_names, products_with_profile, require_product)

NEW_GPU = {
    'RTX-PRO-6000': {
        'gfd_product': 'NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition',
        'memory_mib': 97887,
        'memory_slices': 4,
        'profiles': {
            '1g.24gb': {'size': 1, 'placements': [0, 1, 2, 3], 'memory_mib': 24000},
            '2g.48gb': {'size': 2, 'placements': [0, 2]},
        },
    },
    'A100-SXM4-80GB': {'renames': {'7g.80gb': '7g.79gb'}, 'profiles': {'1g.10gb+me': None}},
}


def test_valid_overrides_give_what_the_catalog_merges():
    for name in catalog.product_names(NEW_GPU):
        assert get_product(name, NEW_GPU) == catalog.get_product(name, NEW_GPU)
    assert product_names(NEW_GPU) == catalog.product_names(NEW_GPU)
    assert products_with_profile('2g.48gb', NEW_GPU) == ['RTX-PRO-6000']
    assert get_product('A30') == catalog.get_product('A30')


def test_renames_apply_in_order():
    overrides = {'A30': {'renames': {'4g.24gb': '4g.23gb', '4g.23gb': '4g.22gb'}}}
    assert '4g.22gb' in get_product('A30', overrides)['profiles']


def test_later_override_of_the_same_product_sees_the_earlier_one():
    overrides = {'NVIDIA-NEW': {'memory_slices': 2, 'profiles': {'1g.1gb': {'size': 1, 'placements': [0, 1]}}},
                 'new': {'profiles': {'2g.2gb': {'size': 2, 'placements': [0]}}}}
    assert sorted(get_product('NEW', overrides)['profiles']) == ['1g.1gb', '2g.2gb']


def test_unknown_keys_use_the_one_message_style():
    with pytest.raises(MigCatalogError) as exc:
        get_product('A30', {'A30': {'memory_slice': 4}})
    assert str(exc.value) == ("overrides for 'A30': unknown key 'memory_slice'; did you mean 'memory_slices'? "
                              "(known keys: %s)" % ', '.join(catalog.OVERRIDE_KEYS))


def test_every_lookup_checks_the_overrides():
    for lookup in (lambda o: get_product('A30', o), product_names, lambda o: products_with_profile('1g.6gb', o),
                   lambda o: require_product('A30', o)):
        with pytest.raises(MigCatalogError, match='overrides must be a mapping'):
            lookup(['A30'])


@pytest.mark.parametrize('overrides,fragment', [
    (['A30'], 'overrides must be a mapping'),
    ({'A30': 'x'}, "overrides for 'A30' must be a mapping"),
    ({'A30': {'profile': {}}}, "overrides for 'A30': unknown key 'profile'; did you mean 'profiles'? (known keys: product,"),
    ({'A30': {'profiles': {'1g.6gb': 3}}}, "profile '1g.6gb' must be a mapping or null"),
    ({'A30': {'profiles': {'3g.12gb': {'size': 3}}}}, 'placements must be a non-empty list'),
    ({'A30': {'profiles': {'3g.12gb': {'placements': [0]}}}}, 'size (memory slices) must be a positive integer'),
    ({'A30': {'profiles': {'2g.12gb': {'placements': [0, 3]}}}}, 'do not fit in 4 memory slices'),
    ({'A30': {'profiles': {'big-one': {'size': 1, 'placements': [0]}}}}, 'malformed name'),
    ({'A30': {'profiles': {'1g.6gb': {'sizes': 1}}}}, "profile '1g.6gb' of A30: unknown key 'sizes'; did you mean 'size'?"),
    ({'A30': {'renames': {'9g.1gb': '9g.2gb'}}}, 'renames must map an existing profile'),
    ({'NEW': {'profiles': {'1g.1gb': {'size': 1, 'placements': [0]}}}}, 'memory_slices (a positive integer) is required'),
    ({42: {}}, 'override product names must be strings'),
    ({'A30': {'profiles': ['1g.6gb']}}, "overrides for 'A30': profiles must be a mapping"),
    ({'A30': {'renames': ['1g.6gb']}}, "overrides for 'A30': renames must be a mapping"),
    ({'A30': {'renames': {'1g.6gb': 7}}}, "renames must map an existing profile to a new name, got '1g.6gb' -> 7"),
    ({'A30': {'memory_slices': None}}, 'memory_slices (a positive integer) is required'),
    ({'A30': {'profiles': {'1g.6gb': {'placements': [0, 'x']}}}}, 'placements must be a non-empty list'),
    ({'A30': {'profiles': {'1g.6gb': {'size': True}}}}, 'size (memory slices) must be a positive integer'),
])
def test_bad_overrides(overrides, fragment):
    with pytest.raises(MigCatalogError) as exc:
        get_product('A30', overrides)
    assert fragment in str(exc.value)


def test_require_product_messages():
    with pytest.raises(MigCatalogError, match=r"unknown GPU product 'NVIDIA-V100'; known: A10, A100-PCIE-40GB"):
        require_product('NVIDIA-V100')
    with pytest.raises(MigCatalogError, match='must be a string'):
        require_product(['A30'])
    assert require_product('Tesla-T4')['product'] == 'T4'
