# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""MIG demand planner, the pool: the configs each node can take (and their capacity), the nodes that stay,
and groups of alike nodes. Pure, no I/O; used by gpu/mig_demand.py."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json

from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.geometry import (
    MigGeometryError, fits, node_capacity, nonzero)
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.mig_parted import (
    config_product_errors, effective_entry, matching_entries)
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.products import MigCatalogError, get_product

GENERATED_PREFIX = 'gpuops-'
_LABEL_VALUE_MAX = 63
_MEMO, _MEMO_MAX = {}, 4096


def _memo(key, compute):
    """Results of pure catalog look-ups, kept between plans (keys are JSON text of every input)."""
    key = json.dumps(key, sort_keys=True, default=repr)
    if key not in _MEMO:
        if len(_MEMO) >= _MEMO_MAX:
            _MEMO.clear()
        _MEMO[key] = compute()
    return _MEMO[key]


# ---------------------------------------------------------------------------
# Configs a node can take, and their capacity
# ---------------------------------------------------------------------------

def _profile_token(profile):
    return profile.replace('+', '.')


def generated_name(geometry):
    """Config name of a generated uniform layout: gpuops-1x3g.40gb-4x1g.10gb (largest first)."""
    parts = sorted(geometry.items(), key=lambda item: (-int(item[0].split('g.')[0]), item[0]))
    return GENERATED_PREFIX + '-'.join('%dx%s' % (count, _profile_token(name)) for name, count in parts)


def maximal_geometries(entry):
    """Every layout of one GPU to which no further instance can be added (the catalog's rules, as
    geometry_errors applies them: maxima, one media-extension instance, placement, compute slices)."""
    names = sorted(entry['profiles'])
    found = []

    def extend(index, geometry):
        if index == len(names):
            if geometry and not any(fits(_plus(geometry, n), entry) for n in names):
                found.append(dict(geometry))
            return
        name = names[index]
        extend(index + 1, geometry)
        count = 1
        while count <= entry['profiles'][name]['max'] and fits(_with(geometry, name, count), entry):
            extend(index + 1, _with(geometry, name, count))
            count += 1

    extend(0, {})
    return found


def _with(geometry, name, count):
    out = dict(geometry)
    out[name] = count
    return out


def _plus(geometry, name):
    return _with(geometry, name, geometry.get(name, 0) + 1)


def per_index_configs(document):
    """Names of the configs with a per-GPU-index entry (C(devices) a list of indices, not C(all))."""
    return set(name for name, entries in document['mig-configs'].items()
               if any(entry.get('devices') != 'all' for entry in entries))


class ConfigOptions(object):
    """Options per (product, GPU count), computed once: config name -> capacity. ``per_gpu`` false: configs
    with per-GPU-index entries are no targets (they still give the capacity of a node that runs one)."""

    def __init__(self, document, strategy, generate, overrides, per_gpu=True):
        self.document, self.strategy, self.generate, self.overrides = document, strategy, generate, overrides
        self.generated = {}
        self._options, self._validity = {}, {}
        self._no_target = set() if per_gpu else per_index_configs(document)

    def options(self, product, gpus):
        key = (product, gpus)
        if key not in self._options:
            self._options[key] = self._compute(product, gpus)
        return self._options[key]

    def capacity(self, config, product, gpus):
        return self.options(product, gpus).get(config)

    def targets(self, product, gpus):
        """The configs a node may change to (options less the per-GPU-index ones when they are not allowed)."""
        return dict((name, cap) for name, cap in self.options(product, gpus).items() if name not in self._no_target)

    def _compute(self, product, gpus):
        options = {}
        entry = self._entry(product)
        for name, entries in sorted(self.document['mig-configs'].items()):
            if self._valid(name, entries, product):
                capacity = _config_capacity(entries, entry, gpus, self.strategy)
                if capacity is not None:
                    options[name] = capacity
        if self.generate:
            self._add_generated(options, product, gpus)
        return options

    def _entry(self, product):
        return _memo(['entry', product, self.overrides], lambda: get_product(product, self.overrides))

    def _valid(self, name, entries, product):
        key = (name, product)
        if key not in self._validity:
            self._validity[key] = _memo(['valid', name, entries, product, self.overrides],
                                        lambda: not config_product_errors(name, entries, product, self.overrides))
        return self._validity[key]

    def _add_generated(self, options, product, gpus):
        entry = self._entry(product)
        for geometry in _memo(['maximal', product, self.overrides], lambda: maximal_geometries(entry)):
            name = generated_name(geometry)
            if name in options or len(name) > _LABEL_VALUE_MAX:
                continue
            try:
                options[name] = node_capacity([(True, geometry)] * gpus, self.strategy)
            except MigGeometryError:
                continue
            self.generated[name] = [{'devices': 'all', 'mig-enabled': True, 'mig-devices': dict(geometry)}]


def _config_capacity(entries, entry, gpus, strategy):
    """What config_capacity (gpu/mig_configs.py) computes, for a config already checked on the product;
    None when a GPU index has no entry or the strategy cannot expose the layout."""
    matching = matching_entries(entries, entry)
    states = []
    for index in range(gpus):
        winner = effective_entry(matching, index)[0]
        if winner is None:
            return None
        states.append((winner[1]['mig-enabled'], nonzero(winner[1].get('mig-devices'))))
    try:
        return node_capacity(states, strategy)
    except MigGeometryError:
        return None


def physical_gpus(node, catalog):
    """GPUs of a node; under strategy single GFD counts MIG devices, so divide by the current config's."""
    if 'gpus' in node:
        return node['gpus']
    count = node['count']
    if '-MIG-' not in (node.get('product_label') or '') or not node.get('mig_config'):
        return count
    per_gpu = catalog.capacity(node['mig_config'], node['product'], 1)
    total = sum(per_gpu.values()) if per_gpu else 0
    return count // total if total and count % total == 0 else count


# ---------------------------------------------------------------------------
# The pool: nodes that may change, nodes that stay, and groups of alike nodes
# ---------------------------------------------------------------------------

def positive(resources):
    return dict((k, v) for k, v in (resources or {}).items() if v)


def _covers(capacity, requested):
    return all(capacity.get(name, 0) >= qty for name, qty in requested.items())


def skip_reason(node, entry):
    if entry is None:
        return "GPU product '%s' is not in the MIG catalog (describe it with mig_catalog_overrides)" % node['product']
    if not entry['mig_capable']:
        return '%s is not MIG capable' % entry['product']
    if not node.get('ready', True):
        return 'node is NotReady'
    if node.get('unschedulable'):
        return 'node is cordoned'
    if (node.get('sharing_strategy') or 'none') != 'none':
        return ('node runs device-plugin sharing (%s): change its sharing first (gpuops.gpu.sharing)'
                % node['sharing_strategy'])
    if node.get('mig_state') not in (None, 'success'):
        return 'a MIG change is under way (nvidia.com/mig.config.state=%s)' % node['mig_state']
    return None


def lookup_product(product, overrides):
    try:
        return _memo(['entry', product, overrides], lambda: get_product(product, overrides))
    except MigCatalogError:
        return None


class _Node(object):
    """One pool node as the planner sees it."""

    def __init__(self, raw, gpus, current, capacity):
        self.name, self.raw, self.gpus = raw['name'], raw, gpus
        self.product = raw['product']
        self.current, self.capacity = current, capacity
        self.requested = positive(raw.get('requested'))
        self.pods = list(raw.get('gpu_pods') or [])
        self.busy = bool(self.requested) or bool(self.pods)


def pool_node(raw, catalog):
    gpus = physical_gpus(raw, catalog)
    current = raw.get('mig_config')
    capacity = catalog.capacity(current, raw['product'], gpus) if current else None
    if capacity is None:
        capacity = positive(raw.get('allocatable'))
    return _Node(raw, gpus, current, capacity)


def _allowed(node, options, busy_policy):
    """Targets a node may take (its current config excluded)."""
    targets = dict((name, cap) for name, cap in options.items() if name != node.current)
    if not node.busy or busy_policy == 'any':
        return targets
    if busy_policy == 'keep':
        return {}
    return dict((name, cap) for name, cap in targets.items() if _covers(cap, node.requested))


def _delta(node, capacity, resources):
    return tuple(capacity.get(r, 0) - node.capacity.get(r, 0) for r in resources)


def _pareto(options):
    """Drop options that help no demanded resource, and options another one dominates."""
    useful = [o for o in options if any(d > 0 for d in o[1])]
    kept = []
    for option in useful:
        dominated = any(other[1] != option[1] and all(a >= b for a, b in zip(other[1], option[1]))
                        for other in useful)
        if not dominated and all(k[1] != option[1] for k in kept):
            kept.append(option)
    return kept


def _option_order(name):
    """Configs of the document before generated ones, then by name."""
    return (name.startswith(GENERATED_PREFIX), name)


class _Group(object):
    """Alike nodes (sorted by pods, then name), what they offer now (``base``, per demanded resource) and
    the targets they may take, as deltas."""

    def __init__(self, nodes, options, resources):
        self.nodes = sorted(nodes, key=lambda n: (len(n.pods), n.name))
        self.options = options          # [(config, delta tuple)]
        self.base = tuple(self.nodes[0].capacity.get(r, 0) for r in resources)
        self.pod_prefix = [0]
        for node in self.nodes:
            self.pod_prefix.append(self.pod_prefix[-1] + len(node.pods))


def build_groups(nodes, catalog, resources, busy_policy):
    by_key = {}
    for node in nodes:
        allowed = _allowed(node, catalog.targets(node.product, node.gpus), busy_policy)
        options = _pareto([(name, _delta(node, allowed[name], resources))
                           for name in sorted(allowed, key=_option_order)])
        if not options:
            continue
        key = (node.product, node.gpus, node.current, tuple(options), node.busy,
               tuple(node.capacity.get(r, 0) for r in resources))
        by_key.setdefault(key, []).append(node)
    return [_Group(members, list(key[3]), resources) for key, members in sorted(by_key.items(), key=_group_order)]


def _group_order(item):
    key, members = item
    return (key[4], key[0], key[1], str(key[2]), -len(members), str(key[3]))


def add_resources(total, resources):
    for name, qty in resources.items():
        total[name] = total.get(name, 0) + qty
    return total


def split_pool(nodes, catalog, overrides):
    """(candidates, skipped entries, capacity of the skipped nodes)."""
    candidates, skipped, fixed = [], [], {}
    for raw in nodes:
        reason = skip_reason(raw, lookup_product(raw['product'], overrides))
        if reason is None:
            candidates.append(pool_node(raw, catalog))
            continue
        skipped.append({'node': raw['name'], 'reason': reason})
        if raw.get('ready', True) and not raw.get('unschedulable'):
            add_resources(fixed, positive(raw.get('allocatable')))
    return candidates, skipped, fixed
