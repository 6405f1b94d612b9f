# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The MIG demand planner against the brute-force reference (mig_demand_reference.py) on thousands of
seeded small pools: every busy-node policy, small and default search budgets, per-GPU-index configs on
and off, generated configs, strategies single and mixed.

Always: the shortfall is the smallest any plan has, whatever the budget; the bounds are below (or at) the
best plan's values; a plan said to be optimal has the best (shortfall, changes, pods); every target is a
config whose public capacity gives capacity_after.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import mig_demand as md
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.gpu import mig_demand_reference as ref

POOLS = 2000
BATCH = 250


def _check_plan(nodes, result, strategy):
    """Every target passes mig_parted_errors on its product, and capacity_after is the public capacity of
    every node's config after the plan."""
    by_name = dict((n['name'], n) for n in nodes)
    targets = dict((c['node'], c['to']) for c in result['changes'])
    total = {}
    for raw in nodes:
        config = targets.get(raw['name'], raw['mig_config'])
        if config in ref.DOC['mig-configs']:
            cap = ref.capacity(config, raw['product'], raw['count'], strategy)
        else:
            cap = ref.generated_capacity(config, result['custom_configs'][config], raw['product'], raw['count'],
                                         strategy)
        assert cap is not None, '%s cannot take %s' % (raw['name'], config)
        for name, qty in cap.items():
            total[name] = total.get(name, 0) + qty
    assert set(targets) <= set(by_name)
    assert result['capacity_after'] == dict((k, v) for k, v in total.items() if v)


def check_seed(seed):
    nodes, demand, strategy, policy = ref.random_case(seed)
    result = md.plan_mig_demand(nodes, ref.DOC, demand, strategy, policy)
    assert result['errors'] == []
    got = (sum(result['shortfall'].values()), len(result['changes']), sum(len(c['pods']) for c in result['changes']))
    expected = ref.best(nodes, demand, strategy, policy)
    bounds = result['bounds']
    assert got[0] == expected[0] == bounds['shortfall'], 'shortfall not the smallest'
    assert result['meetable'] is (got[0] == 0)
    assert got >= expected
    assert bounds['changes'] == result['lower_bound'] <= expected[1]
    if bounds['changes'] == expected[1]:
        assert bounds['pods'] <= expected[2]
    if result['optimal']:
        assert got == expected == (bounds['shortfall'], bounds['changes'], bounds['pods'])
    if policy['search_budget'] == 50000:
        assert result['optimal'], 'small pools are proven within the default budget'
    _check_plan(nodes, result, strategy)
    return policy, strategy, expected


@pytest.mark.parametrize('start', range(0, POOLS, BATCH))
def test_planner_matches_brute_force(start):
    for seed in range(start, start + BATCH):
        try:
            check_seed(seed)
        except AssertionError as exc:
            raise AssertionError('seed %d: %s' % (seed, exc))


def test_the_seeded_pools_cover_every_case():
    """The pools exercise every policy, budget, strategy and both outcomes, with several changes."""
    seen = set()
    most = 0
    for seed in range(0, POOLS, 7):
        policy, strategy, expected = check_seed(seed)
        seen.update([policy['busy_nodes'], policy['search_budget'], ('generate', policy['generate_configs']),
                     ('per_gpu', policy['per_gpu_configs']), strategy, ('meetable', expected[0] == 0)])
        most = max(most, expected[1])
    assert set(md.BUSY_POLICIES) | {1, 3, 20, 50000, 'single', 'mixed'} <= seen
    assert {('generate', True), ('generate', False)} <= seen
    assert {('per_gpu', True), ('per_gpu', False), ('meetable', True), ('meetable', False)} <= seen
    assert most >= 3


def test_optimal_means_fewest_pods_too():
    """Changing either node meets the demand: the plan changes the one with one pod, not the one with three."""
    nodes = []
    for name, pods in (('a', 3), ('b', 1)):
        nodes.append({'name': name, 'product': ref.H100, 'count': 1, 'mig_config': 'all-disabled',
                      'mig_state': 'success', 'requested': {'nvidia.com/gpu': 1},
                      'gpu_pods': ['team/%s-%d' % (name, i) for i in range(pods)], 'ready': True,
                      'unschedulable': False, 'sharing_strategy': 'none', 'allocatable': {}})
    result = md.plan_mig_demand(nodes, ref.DOC, {'nvidia.com/mig-1g.10gb': 7}, 'mixed', {'busy_nodes': 'any'})
    assert [c['node'] for c in result['changes']] == ['b']
    assert result['optimal'] is True and result['bounds'] == {'shortfall': 0, 'changes': 1, 'pods': 1}
