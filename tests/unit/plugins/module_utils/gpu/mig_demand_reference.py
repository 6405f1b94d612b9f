# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A brute-force reference for the MIG demand planner, written without its grouping, bounds or search.

Every node may stay or take every config the documented rules allow it (the configs of the document and,
with ``generate_configs``, every maximal uniform layout found by trying every geometry with the public
geometry_errors); capacities come from the public config_capacity / mig_capacity. Every assignment of
those choices to the nodes is tried; partial assignments that give the same capacity (clipped at the
demand: more than the demand counts the same) are merged, keeping the best (changes, pods) so far.
The answer is the smallest (shortfall, changed nodes, GPU pods on changed nodes).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import random

from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.geometry import (
    MigGeometryError, geometry_errors, mig_capacity)
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.mig_configs import config_capacity
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.mig_parted import mig_parted_errors
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.products import get_product

A100 = 'NVIDIA-A100-SXM4-40GB'
H100 = 'NVIDIA-H100-80GB-HBM3'
A30 = 'NVIDIA-A30'


def uniform(devices):
    """A mig-parted config with the same MIG devices on every GPU."""
    return [{'devices': 'all', 'mig-enabled': True, 'mig-devices': devices}]


# Small document for exhaustive searches: configs for A100-40GB only, H100-80GB only, and both.
SMALL_DOC = {'version': 'v1', 'mig-configs': {
    'all-disabled': [{'devices': 'all', 'mig-enabled': False}],
    'all-1g.10gb': uniform({'1g.10gb': 4}),          # A100-40GB 4 per GPU; H100 would take 7
    'h-1g.10gb': uniform({'1g.10gb': 7}),            # H100 only
    'all-3g.40gb': uniform({'3g.40gb': 2}),          # H100 only
    'all-2g.20gb': uniform({'2g.20gb': 3}),          # H100 only
    'mix-a': uniform({'3g.20gb': 1, '2g.10gb': 1, '1g.5gb': 2}),   # A100-40GB only
    'mix-h': uniform({'3g.40gb': 1, '2g.20gb': 1, '1g.10gb': 2}),  # H100 only
    'a-1g.5gb': uniform({'1g.5gb': 7}),              # A100-40GB only
}}
# The reference's document adds the A30 (media extensions) and a config that differs per GPU.
DOC = {'version': 'v1', 'mig-configs': dict(SMALL_DOC['mig-configs'], **{
    'a30-me': uniform({'2g.12gb+me': 1, '1g.6gb': 2}),
    'a30-1g': uniform({'1g.6gb': 4}),
    'split': [{'devices': [0], 'mig-enabled': True, 'mig-devices': {'3g.40gb': 2}},
              {'devices': [1], 'mig-enabled': False}],
})}
RESOURCES = ('nvidia.com/gpu', 'nvidia.com/mig-1g.10gb', 'nvidia.com/mig-3g.40gb', 'nvidia.com/mig-2g.20gb',
             'nvidia.com/mig-1g.5gb', 'nvidia.com/mig-3g.20gb', 'nvidia.com/mig-1g.6gb',
             'nvidia.com/mig-2g.12gb.me', 'nvidia.com/mig-1g.6gb.me')
_CACHE = {}


def _cached(key, compute):
    if key not in _CACHE:
        _CACHE[key] = compute()
    return _CACHE[key]


def capacity(config, product, gpus, strategy):
    """The public capacity of a document config on a node, None where it is not valid there."""
    def compute():
        try:
            return config_capacity({'version': 'v1', 'mig-configs': {config: DOC['mig-configs'][config]}},
                                   config, product, gpus, strategy)
        except MigGeometryError:
            return None
    return _cached(('cap', config, product, gpus, strategy), compute)


def maximal_layouts(product):
    """Every geometry of one GPU that geometry_errors accepts and to which no instance can be added (one
    more instance never makes a rejected geometry fit, so counts grow only while it fits)."""
    def compute():
        names = sorted(get_product(product)['profiles'])
        found = []

        def grow(index, geometry):
            if index == len(names):
                if geometry and all(geometry_errors(dict(geometry, **{n: geometry.get(n, 0) + 1}), product)
                                    for n in names):
                    found.append(dict(geometry))
                return
            grow(index + 1, geometry)
            bigger = dict(geometry, **{names[index]: 1})
            while not geometry_errors(bigger, product):
                grow(index + 1, bigger)
                bigger = dict(bigger, **{names[index]: bigger[names[index]] + 1})
        grow(0, {})
        return found
    return _cached(('layouts', product), compute)


def generated_capacity(config, entries, product, gpus, strategy):
    """The capacity of a generated config (one uniform layout), None when mig_parted_errors rejects it."""
    def compute():
        if mig_parted_errors({'version': 'v1', 'mig-configs': {config: entries}}, {config: [product]}):
            return None
        return mig_capacity(entries[0]['mig-devices'], product, strategy, gpus)
    return _cached(('custom', config, product, gpus, strategy), compute)


def _generated(product, gpus, strategy):
    def compute():
        out = []
        for geometry in maximal_layouts(product):
            try:
                out.append(mig_capacity(geometry, product, strategy, gpus))
            except MigGeometryError:
                pass
        return out
    return _cached(('generated', product, gpus, strategy), compute)


def _covers(cap, requested):
    return all(cap.get(r, 0) >= q for r, q in requested.items())


def node_choices(raw, strategy, policy):
    """[(capacity, changed)] a node may end with: staying first."""
    current = capacity(raw['mig_config'], raw['product'], raw['count'], strategy)
    choices = [(current, 0)]
    busy = bool(raw['requested']) or bool(raw['gpu_pods'])
    if busy and policy['busy_nodes'] == 'keep':
        return choices
    targets = []
    for config, entries in sorted(DOC['mig-configs'].items()):
        per_index = any(e['devices'] != 'all' for e in entries)
        if config == raw['mig_config'] or (per_index and not policy.get('per_gpu_configs', True)):
            continue
        targets.append(capacity(config, raw['product'], raw['count'], strategy))
    if policy.get('generate_configs'):
        targets.extend(_generated(raw['product'], raw['count'], strategy))
    for cap in targets:
        if cap is not None and not (busy and policy['busy_nodes'] == 'if_room' and not _covers(cap, raw['requested'])):
            choices.append((cap, 1))
    return choices


def best(nodes, demand, strategy, policy):
    """The smallest (shortfall, changed nodes, GPU pods on changed nodes) over every assignment."""
    names = sorted(demand)
    states = {tuple(0 for _n in names): (0, 0)}
    for raw in nodes:
        pods = len(raw['gpu_pods'])
        merged = {}
        for covered, (changes, pod_count) in states.items():
            for cap, changed in node_choices(raw, strategy, policy):
                key = tuple(min(demand[n], c + cap.get(n, 0)) for n, c in zip(names, covered))
                cost = (changes + changed, pod_count + changed * pods)
                if key not in merged or cost < merged[key]:
                    merged[key] = cost
        states = merged
    return min((sum(demand[n] - c for n, c in zip(names, covered)),) + cost for covered, cost in states.items())


def random_case(seed):
    """(nodes, demand, strategy, policy) of a small random pool."""
    rng = random.Random(seed)
    policy = {'busy_nodes': rng.choice(('keep', 'if_room', 'any')), 'generate_configs': rng.random() < 0.25,
              'per_gpu_configs': rng.random() < 0.7, 'search_budget': rng.choice((1, 3, 20, 50000))}
    strategy = 'single' if rng.random() < 0.15 else 'mixed'
    size = rng.randint(1, 3 if policy['generate_configs'] else 6)
    nodes = []
    for index in range(size):
        product = rng.choice((A100, H100, H100, A30))
        gpus = rng.choice((1, 2, 2, 4))
        configs = [c for c in sorted(DOC['mig-configs']) if capacity(c, product, gpus, strategy) is not None]
        config = rng.choice(configs)
        requested, pods = {}, []
        cap = capacity(config, product, gpus, strategy)
        if cap and rng.random() < 0.4:
            name = rng.choice(sorted(cap))
            requested = {name: rng.randint(1, cap[name])}
            pods = ['team/pod-%d-%d' % (index, p) for p in range(rng.randint(1, 3))]
        nodes.append({'name': 'n%d' % index, 'product': product, 'count': gpus, 'mig_config': config,
                      'mig_state': 'success', 'requested': requested, 'gpu_pods': pods, 'ready': True,
                      'unschedulable': False, 'sharing_strategy': 'none', 'allocatable': {}})
    names = ['nvidia.com/gpu'] if strategy == 'single' else rng.sample(RESOURCES, rng.randint(1, 3))
    total = sum(n['count'] for n in nodes)
    demand = dict((name, rng.randint(1, 4 * total)) for name in names)
    return nodes, demand, strategy, policy
