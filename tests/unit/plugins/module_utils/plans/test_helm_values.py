# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Chart values computed as Helm computes them (helm get values --all), and their difference."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.plans import helm_values as hv

SUB = {'values': {'image': {'tag': 'v1'}, 'worker': {'enabled': True, 'extra': None}, 'global': {'region': 'sub'}}}
CHART = {'values': {'nfd': {'enabled': True}, 'operator': {'level': 'info', 'args': ['a']},
                    'node-feature-discovery': {'worker': {'enabled': False}}, 'global': {'region': 'eu', 'x': {'a': 1}}},
         'dependencies': [{'name': 'node-feature-discovery', 'condition': 'nfd.enabled'}],
         'subcharts': {'node-feature-discovery': SUB}}


def test_merge_values_merges_mappings_and_replaces_the_rest():
    base = {'a': {'b': 1, 'c': [1]}, 'd': 1}
    merged = hv.merge_values(base, {'a': {'c': [2], 'e': None}, 'f': 2})
    assert merged == {'a': {'b': 1, 'c': [2], 'e': None}, 'd': 1, 'f': 2}
    assert base == {'a': {'b': 1, 'c': [1]}, 'd': 1}          # not changed in place
    assert hv.merge_values(None, {'a': 1}) == {'a': 1} and hv.merge_values({'a': {'b': 1}}, {'a': 3}) == {'a': 3}


def test_user_values_win_and_null_removes_a_default():
    chart = {'values': {'a': {'b': 1, 'c': 2}, 'd': 'x', 'keep': None}}
    assert hv.computed_values(chart, {'a': {'b': 5, 'c': None}, 'd': None, 'new': None}) == {
        'a': {'b': 5}, 'keep': None, 'new': None}
    # a table over a scalar default (and the reverse) keeps the user's value, as Helm does with a warning
    assert hv.computed_values({'values': {'a': 1, 'b': {'c': 1}}}, {'a': {'x': 1}, 'b': 2}) == {'a': {'x': 1}, 'b': 2}


def test_an_enabled_subchart_s_defaults_and_the_parent_s_globals_are_stored_with_the_chart():
    values = hv.computed_values(CHART, {'operator': {'level': 'debug'}})
    nfd = values['node-feature-discovery']
    assert nfd == {'image': {'tag': 'v1'}, 'worker': {'enabled': False, 'extra': None},
                   'global': {'region': 'eu', 'x': {'a': 1}}}
    assert values['operator'] == {'level': 'debug', 'args': ['a']}
    assert hv.enabled_subcharts(CHART, {}) == ['node-feature-discovery']


def test_a_disabled_subchart_leaves_the_chart_s_own_values_only():
    values = hv.computed_values(CHART, {'nfd': {'enabled': False}})
    assert values['node-feature-discovery'] == {'worker': {'enabled': False}}
    assert 'global' in values and hv.enabled_subcharts(CHART, {'nfd': {'enabled': False}}) == []


@pytest.mark.parametrize('dep, values, enabled', [
    ({'condition': 'a.on'}, {'a': {'on': False}}, False),
    ({'condition': 'a.missing, b.on'}, {'a': {}, 'b': {'on': False}}, False),
    ({'condition': 'a.text, b.on'}, {'a': {'text': 'no'}, 'b': {'on': True}}, True),   # non-boolean: next path
    ({'tags': ['gpu']}, {'tags': {'gpu': False}}, False),
    ({'tags': ['gpu', 'ml']}, {'tags': {'gpu': False, 'ml': True}}, True),
    ({'tags': ['gpu'], 'condition': 'a.on'}, {'tags': {'gpu': False}, 'a': {'on': True}}, True),  # condition wins
    ({'condition': 'a.on'}, {}, True),
])
def test_dependency_conditions_and_tags(dep, values, enabled):
    assert hv.dependency_enabled(dict(dep, name='x'), values) is enabled


def test_an_alias_and_a_subchart_not_listed_in_the_dependencies():
    chart = {'values': {}, 'dependencies': [{'name': 'base', 'alias': 'first'}],
             'subcharts': {'base': {'values': {'v': 1}}, 'loose': {'values': {'w': 2}}}}
    assert hv.computed_values(chart, {'first': {'v': 3}}) == {'first': {'v': 3, 'global': {}},
                                                              'loose': {'w': 2, 'global': {}}}


def test_parent_globals_win_over_the_subchart_s_and_fill_missing_keys():
    chart = {'values': {'global': {'t': {'a': 1}, 's': 'parent'}}, 'dependencies': [{'name': 'c'}],
             'subcharts': {'c': {'values': {'global': {'t': {'a': 0, 'b': 2}, 's': 'child', 'only': True}}}}}
    assert hv.computed_values(chart, {})['c']['global'] == {'t': {'a': 1, 'b': 2}, 's': 'parent', 'only': True}


def test_the_chart_is_not_changed():
    chart = copy.deepcopy(CHART)
    hv.computed_values(chart, {'node-feature-discovery': {'image': None}})
    assert chart == CHART


def test_values_diff_lines():
    old = {'a': {'b': 1, 'gone': 'x'}, 'list': [1], 'empty': {}, 'dotted': {'k.v': 1}}
    new = {'a': {'b': 2, 'new': True}, 'list': [1, 2], 'empty': {}, 'dotted': {'k.v': 1}}
    assert hv.values_diff(old, new) == ['~ a.b: 1 -> 2', '- a.gone: "x"', '+ a.new: true', '~ list: [1] -> [1, 2]']
    assert hv.values_diff(new, new) == [] and hv.values_diff(None, {}) == []
    assert hv.leaves({'dotted': {'k.v': 1}, 'e': {}}) == {'dotted["k.v"]': 1, 'e': {}}


def test_values_diff_is_capped():
    lines = hv.values_diff({}, dict(('k%03d' % i, i) for i in range(5)), limit=3)
    assert lines == ['+ k000: 0', '+ k001: 1', '+ k002: 2', '... 2 more']
    assert hv.values_diff({}, {'long': 'x' * 200})[0].endswith('...')
