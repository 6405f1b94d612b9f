# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests for module_utils.rollout.batches: max_unavailable parsing and batching."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.batches import (
    parse_max_unavailable,
    plan_batches,
)

NODES = ['gpu-%d' % i for i in range(1, 11)]  # gpu-1 .. gpu-10


@pytest.mark.parametrize('value,total,expected', [
    (1, 10, 1),
    (3, 10, 3),
    (10, 10, 10),
    (20, 10, 10),
    ('2', 10, 2),
    (' 4 ', 10, 4),
    ('25%', 10, 3),
    ('10%', 3, 1),
    ('33%', 3, 1),
    ('34%', 3, 2),
    ('50%', 5, 3),
    ('100%', 7, 7),
    ('1%', 1000, 10),
    ('1%', 1001, 11),
    (' 30 % ', 10, 3),
    ('5%', 0, 1),
    (4, 0, 4),
])
def test_parse_max_unavailable(value, total, expected):
    assert parse_max_unavailable(value, total) == expected


@pytest.mark.parametrize('value,fragment', [
    (0, 'must allow at least one node, got 0'),
    (-1, 'must allow at least one node, got -1'),
    ('0', "must allow at least one node, got '0'"),
    ('0%', "percentage must be between 1% and 100%, got '0%'"),
    ('101%', "percentage must be between 1% and 100%, got '101%'"),
    ('12.5%', "positive integer or a percentage like '25%', got '12.5%'"),
    ('%', "got '%'"),
    ('abc', "got 'abc'"),
    ('-1', "got '-1'"),
    ('', "got ''"),
    (None, 'got None (null)'),
    (1.5, 'got 1.5 (float)'),
    (True, 'got True (boolean)'),
    ([1], 'got [1] (list)'),
])
def test_parse_max_unavailable_rejects(value, fragment):
    with pytest.raises(ValueError) as exc:
        parse_max_unavailable(value, 10)
    assert fragment in str(exc.value)


@pytest.mark.parametrize('total', [-1, '10', True, None, 2.0])
def test_parse_max_unavailable_rejects_total(total):
    with pytest.raises(ValueError, match='total must be a non-negative integer'):
        parse_max_unavailable(1, total)


def test_batches_by_count():
    assert plan_batches(NODES, 3) == [['gpu-1', 'gpu-2', 'gpu-3'], ['gpu-4', 'gpu-5', 'gpu-6'],
                                      ['gpu-7', 'gpu-8', 'gpu-9'], ['gpu-10']]


def test_batches_by_percent():
    assert plan_batches(NODES, '25%') == [['gpu-1', 'gpu-2', 'gpu-3'], ['gpu-4', 'gpu-5', 'gpu-6'],
                                          ['gpu-7', 'gpu-8', 'gpu-9'], ['gpu-10']]
    assert plan_batches(NODES, '50%') == [NODES[:5], NODES[5:]]


def test_one_at_a_time():
    assert plan_batches(['b', 'a', 'c'], 1) == [['a'], ['b'], ['c']]


def test_budget_larger_than_fleet():
    assert plan_batches(['n2', 'n1'], 10) == [['n1', 'n2']]
    assert plan_batches(['n2', 'n1'], '100%') == [['n1', 'n2']]


def test_natural_name_order_is_deterministic():
    shuffled = ['gpu-10', 'gpu-2', 'gpu-1', 'gpu-9', 'gpu-3', 'gpu-4', 'gpu-8', 'gpu-5', 'gpu-7', 'gpu-6']
    assert plan_batches(shuffled, 4) == plan_batches(NODES, 4) == [NODES[:4], NODES[4:8], NODES[8:]]


def test_natural_order_mixed_names():
    assert plan_batches(['node-b2', 'node-a10', 'node-a9', 'node-b10', 'node'], 10) == [
        ['node', 'node-a9', 'node-a10', 'node-b2', 'node-b10']]


def test_given_order():
    assert plan_batches(['c', 'a', 'b'], 2, order='given') == [['c', 'a'], ['b']]


def test_empty():
    assert plan_batches([], 3) == []
    assert plan_batches([], '10%', unavailable=['x', 'y', 'z', 'w']) == []


def test_unavailable_members_go_first_and_count_once():
    assert plan_batches(NODES, 3, unavailable=['gpu-7']) == [
        ['gpu-7', 'gpu-1', 'gpu-2'], ['gpu-3', 'gpu-4', 'gpu-5'], ['gpu-6', 'gpu-8', 'gpu-9'], ['gpu-10']]


def test_unavailable_members_beyond_budget_stay_together():
    assert plan_batches(NODES, 2, unavailable=['gpu-9', 'gpu-3', 'gpu-5']) == [
        ['gpu-3', 'gpu-5', 'gpu-9'], ['gpu-1', 'gpu-2'], ['gpu-4', 'gpu-6'], ['gpu-7', 'gpu-8'], ['gpu-10']]


def test_unavailable_outsiders_shrink_every_batch():
    assert plan_batches(['a', 'b', 'c', 'd'], 3, unavailable=['x']) == [['a', 'b'], ['c', 'd']]


def test_unavailable_outsiders_count_in_percent_pool():
    # pool = 4 rollout nodes + 2 outsiders = 6; 50% -> 3; 3 - 2 outsiders down = 1 per batch
    assert plan_batches(['a', 'b', 'c', 'd'], '50%', unavailable=['x', 'y']) == [['a'], ['b'], ['c'], ['d']]
    # pool = 4 + 1 = 5; 50% -> 3 (rounded up); 3 - 1 = 2 per batch
    assert plan_batches(['a', 'b', 'c', 'd'], '50%', unavailable=['x']) == [['a', 'b'], ['c', 'd']]


def test_pool_size_overrides_percent_base():
    assert plan_batches(['a', 'b', 'c', 'd'], '50%', pool_size=8) == [['a', 'b', 'c', 'd']]
    assert plan_batches(['a', 'b', 'c', 'd'], '25%', pool_size=4) == [['a'], ['b'], ['c'], ['d']]


def test_budget_exhausted_by_outsiders():
    with pytest.raises(ValueError) as exc:
        plan_batches(['a', 'b'], 2, unavailable=['x', 'y'])
    assert str(exc.value) == ('2 node(s) this rollout does not change are already unavailable (x, y: cordoned, e.g. '
                              'by an admin, or down) and max_unavailable allows 2: no node can be taken down now; '
                              'uncordon them (kubectl uncordon) or raise max_unavailable')


@pytest.mark.parametrize('kwargs,fragment', [
    ({'nodes': ['a', 'a', 'b']}, 'nodes lists node(s) more than once: a'),
    ({'nodes': ['a', '']}, "nodes must be non-empty node names, got ['']"),
    ({'nodes': ['a', 3]}, 'nodes must be non-empty node names, got [3]'),
    ({'unavailable': ['x', 'x']}, 'unavailable lists node(s) more than once: x'),
    ({'order': 'random'}, "order must be one of name, given, got 'random'"),
    ({'max_unavailable': 0}, 'must allow at least one node'),
    ({'max_unavailable': '150%'}, 'between 1% and 100%'),
])
def test_plan_batches_rejects(kwargs, fragment):
    args = {'nodes': ['a', 'b'], 'max_unavailable': 1}
    args.update(kwargs)
    with pytest.raises(ValueError) as exc:
        plan_batches(**args)
    assert fragment in str(exc.value)


def test_every_node_exactly_once_and_budget_respected():
    for count in range(1, 25):
        nodes = ['n%02d' % i for i in range(count)]
        for limit in (1, 2, 3, 5, '10%', '30%', '100%'):
            batches = plan_batches(nodes, limit)
            assert sorted(n for b in batches for n in b) == nodes
            assert all(0 < len(b) <= parse_max_unavailable(limit, count) for b in batches)


@pytest.mark.parametrize('value', ['\u0663', '\uff12', '\u00b2', '\u0663%', '\uff15\uff10%', '1\u0660', '\u096a'])
def test_parse_max_unavailable_takes_ascii_digits_only(value):
    """Python's int() and \\d read other scripts' digits ('\u0663' is 3, '\uff12' is 2): refused, saying which digits."""
    with pytest.raises(ValueError) as exc:
        parse_max_unavailable(value, 10)
    assert str(exc.value) == ("max_unavailable must be a positive integer or a percentage like '25%%', got %r: write "
                              "it with the digits 0-9" % value)
