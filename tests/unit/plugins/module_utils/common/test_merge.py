# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one deep merge (JSON merge patch, RFC 7386) and the patches between two objects."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.common.merge import deep_merge, merge_patch, replace_patch


def test_deep_merge_semantics():
    base = {'a': {'b': 1, 'c': [1, 2]}, 'd': 'x'}
    merged = deep_merge(base, {'a': {'c': [3], 'e': {'f': None, 'g': 1}}, 'd': None, 'h': {'i': True}})
    assert merged == {'a': {'b': 1, 'c': [3], 'e': {'g': 1}}, 'h': {'i': True}}
    assert base == {'a': {'b': 1, 'c': [1, 2]}, 'd': 'x'}


def test_deep_merge_is_rfc7386():
    assert deep_merge({'a': {'b': 1, 'c': 2}, 'd': [1]}, {'a': {'b': None, 'e': 3}, 'd': [2]}) == \
        {'a': {'c': 2, 'e': 3}, 'd': [2]}


@pytest.mark.parametrize('base,patch,expected', [
    # where the old copies differed: the autoscaling plan kept a null inside a mapping new in base
    ({}, {'a': {'b': None, 'c': 1}}, {'a': {'c': 1}}),
    ({'a': 'scalar'}, {'a': {'b': None, 'c': 1}}, {'a': {'c': 1}}),
    ({}, {'a': {'b': {'c': None}}}, {'a': {'b': {}}}),
    # the same in every copy
    ({'a': 1}, None, {'a': 1}),
    ({'a': 1}, {}, {'a': 1}),
    (None, {'a': 1}, {'a': 1}),
    ('not a mapping', {'a': 1}, {'a': 1}),
    ({'a': 1}, {'b': None}, {'a': 1}),
    ({'a': [1, 2]}, {'a': [3]}, {'a': [3]}),
    ({'a': {'b': 1}}, {'a': 'x'}, {'a': 'x'}),
    ({'a': {'b': 1}}, {'a': None}, {}),
])
def test_deep_merge_cases(base, patch, expected):
    assert deep_merge(base, patch) == expected


def test_deep_merge_keep_nulls_sets_them():
    merged = deep_merge({'a': {'b': 1, 'c': 2}, 'd': 3}, {'a': {'b': None}, 'd': None, 'e': {'f': None}}, keep_nulls=True)
    assert merged == {'a': {'b': None, 'c': 2}, 'd': None, 'e': {'f': None}}


def test_deep_merge_shares_nothing():
    patch = {'a': {'l': [1]}}
    base = {'b': {'l': [2]}}
    merged = deep_merge(base, patch)
    merged['a']['l'].append(9)
    merged['b']['l'].append(9)
    assert patch == {'a': {'l': [1]}} and base == {'b': {'l': [2]}}


def test_merge_patch_only_what_differs():
    current = {'a': {'b': 1, 'c': 2}, 'd': 'x', 'keep': True}
    assert merge_patch(current, {'a': {'b': 1, 'c': 3}, 'd': 'x'}) == {'a': {'c': 3}}
    assert merge_patch(current, {'d': None, 'gone': None}) == {'d': None}
    assert merge_patch(current, {'a': {'b': 1}}) == {}


def test_merge_patch_skips_empty_new_mappings():
    assert merge_patch({}, {'daemonsets': {}}) == {}
    assert merge_patch({}, {'daemonsets': {'x': None}}) == {}
    assert merge_patch({'a': 1}, {'a': {'b': 1}}) == {'a': {'b': 1}}


def test_replace_patch_makes_current_exact():
    current = {'a': {'b': 1, 'c': 2}, 'd': 'x'}
    wanted = {'a': {'b': 1}, 'e': [1]}
    patch = replace_patch(current, wanted)
    assert patch == {'a': {'c': None}, 'd': None, 'e': [1]}
    assert deep_merge(current, patch) == wanted
    assert replace_patch(wanted, wanted) == {}
