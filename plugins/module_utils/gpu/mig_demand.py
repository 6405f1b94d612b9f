# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""MIG layouts from demand: which nodes of a pool change to which mig-parted config. Pure, no I/O.

Input: the pool's GPU nodes as ``gpuops.gpu.gpu_nodes_info`` returns them (read with
``include_pods: true``), the mig-parted document, the demand (``{'nvidia.com/mig-1g.10gb': 40,
'nvidia.com/gpu': 2}``: the total the pool must advertise), the MIG strategy and a policy.
Every config is checked with the one MIG catalog (gpu/mig_configs.py, gpu/geometry.py).

Objective, in this order: the smallest total shortfall (sum over the demanded resources of what is
missing, 0 when the demand can be met), then the fewest nodes changed, then the fewest GPU pods on
changed nodes. Method (docs/mig.md#mig-from-demand): nodes that are alike (product, GPU count,
current config, the targets they may take, busy or not) form a group; a greedy pass gives a first
plan, then a branch and bound over per-group counts proves it minimal or improves it. The search
is capped at ``search_budget`` steps; a plan found under the cap is reported with ``optimal``
false and ``lower_bound``, the fewest changes any plan can need.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import is_int, type_name
from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import GPU_RESOURCE, MIG_RESOURCE_PREFIX
from ansible_collections.gpuops.gpu.plugins.module_utils.common.objects import meta_of
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.fleet import short_resource
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.mig_parted import document_errors
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.node import pod_gpu_requests, pod_key
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.products import MigCatalogError, product_names
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.quota import REQUESTS, normalise_quota
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.sharing import SHARED_SUFFIX
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.mig_demand_pool import (
    ConfigOptions, add_resources, build_groups, positive, split_pool)
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.mig_demand_search import (
    Search, changes_bound, greedy, plan_cost)
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.mig_demand_shortfall import smallest_shortfall

BUSY_POLICIES = ('keep', 'if_room', 'any')
STRATEGIES = ('mixed', 'single')
POLICY_DEFAULTS = {'busy_nodes': 'if_room', 'generate_configs': False, 'per_gpu_configs': True,
                   'search_budget': 50000}


# ---------------------------------------------------------------------------
# Input checks (every problem at once)
# ---------------------------------------------------------------------------

def _demand_errors(demand):
    if not isinstance(demand, dict):
        return ["demand must be a mapping of resource -> count, e.g. {'nvidia.com/mig-1g.10gb': 40}, got %s"
                % type_name(demand)]
    if not demand:
        return ["demand is empty: name at least one resource and its count, e.g. {'nvidia.com/mig-1g.10gb': 40}"]
    errors = []
    for resource, count in demand.items():
        if not isinstance(resource, str) or not (resource == GPU_RESOURCE or resource.startswith(MIG_RESOURCE_PREFIX)):
            errors.append("demand: %r is not a GPU resource; use nvidia.com/gpu (whole GPUs, MIG disabled) or "
                          "nvidia.com/mig-<profile> (e.g. nvidia.com/mig-3g.40gb)" % (resource,))
        elif not is_int(count) or count < 0:
            errors.append('demand: %s must be a non-negative integer, got %r' % (resource, count))
    return errors


def _policy_errors(policy):
    if not isinstance(policy, dict):
        return ['policy must be a mapping, got %s' % type_name(policy)]
    errors = ["policy: unknown key '%s'; known: %s" % (k, ', '.join(sorted(POLICY_DEFAULTS)))
              for k in sorted(policy, key=str) if k not in POLICY_DEFAULTS]
    if policy.get('busy_nodes', 'if_room') not in BUSY_POLICIES:
        errors.append('policy.busy_nodes must be one of %s, got %r' % (', '.join(BUSY_POLICIES), policy['busy_nodes']))
    for flag in ('generate_configs', 'per_gpu_configs'):
        if not isinstance(policy.get(flag, False), bool):
            errors.append('policy.%s must be true or false, got %r' % (flag, policy[flag]))
    budget = policy.get('search_budget', 1)
    if not is_int(budget) or budget < 1:
        errors.append('policy.search_budget must be a positive integer, got %r' % (budget,))
    return errors


def _node_errors(index, node, seen):
    where = 'nodes[%d]' % index
    if not isinstance(node, dict):
        return ['%s must be a mapping (an entry of gpu_nodes_info nodes), got %s' % (where, type_name(node))]
    name = node.get('name')
    if not isinstance(name, str) or not name:
        return ['%s has no name' % where]
    errors = []
    if name in seen:
        errors.append('node %s is listed twice' % name)
    seen.add(name)
    if not isinstance(node.get('product'), str):
        errors.append('node %s has no GPU product (label nvidia.com/gpu.product): is the GPU operator ready on it?'
                      % name)
    gpus = node.get('gpus', node.get('count'))
    if not is_int(gpus) or gpus < 1:
        errors.append('node %s: cannot tell how many GPUs it has (count %r)' % (name, gpus))
    if node.get('requested') is None or node.get('gpu_pods') is None:
        errors.append('node %s: its GPU pods are unknown; read the pool with gpuops.gpu.gpu_nodes_info '
                      'include_pods: true' % name)
    return errors


def input_errors(nodes, document, demand, strategy, policy):
    """Every problem of the planner's input, as sentences that say what to fix."""
    errors = []
    if not isinstance(nodes, list):
        errors.append('nodes must be a list (the nodes of gpuops.gpu.gpu_nodes_info), got %s' % type_name(nodes))
    else:
        seen = set()
        for index, node in enumerate(nodes):
            errors.extend(_node_errors(index, node, seen))
    errors.extend('mig-parted document: %s' % e for e in document_errors(document))
    errors.extend(_demand_errors(demand))
    if strategy not in STRATEGIES:
        errors.append('strategy must be one of %s, got %r' % (', '.join(STRATEGIES), strategy))
    errors.extend(_policy_errors(policy))
    return errors


# ---------------------------------------------------------------------------
# Demand from Pending pods
# ---------------------------------------------------------------------------

def _plannable(resource):
    return resource == GPU_RESOURCE or resource.startswith(MIG_RESOURCE_PREFIX)


def unscheduled(pod):
    return ((pod.get('status') or {}).get('phase') == 'Pending'
            and not (pod.get('spec') or {}).get('nodeName'))


def pending_demand(pods, nodes, declared=None, claimed=None):
    """The demand that lets the Pending pods run: what the pool's pods use now (``requested`` of the
    gpu_nodes_info nodes) plus what the unscheduled Pending pods among ``pods`` request, per
    nvidia.com/gpu and nvidia.com/mig-* resource, plus ``claimed`` (what their DRA claims ask for,
    gpu/mig_demand_claims.py); ``declared`` (a demand) raises it where it asks for more.

    Returns ``{'demand': {...}, 'pending': ['namespace/name', ...]}``.
    """
    demand = {}
    for node in nodes or []:
        for name, qty in ((node or {}).get('requested') or {}).items():
            if _plannable(name) and qty:
                demand[name] = demand.get(name, 0) + qty
    add_resources(demand, dict((n, q) for n, q in (claimed or {}).items() if _plannable(n)))
    pending = []
    for pod in pods or []:
        wanted = dict((n, q) for n, q in pod_gpu_requests(pod).items() if _plannable(n))
        if unscheduled(pod) and wanted:
            pending.append(pod_key(pod))
            for name, qty in wanted.items():
                demand[name] = demand.get(name, 0) + qty
    return {'demand': raise_demand(demand, declared), 'pending': sorted(pending)}


def raise_demand(demand, other):
    """Per resource the larger of the two demands (sources are combined this way: each is a total the
    pool must advertise, and the pods they count overlap, so they are not added)."""
    out = dict(demand or {})
    for name, qty in (other or {}).items():
        out[name] = max(out.get(name, 0), qty)
    return dict(sorted(out.items()))


# ---------------------------------------------------------------------------
# Demand from ResourceQuotas
# ---------------------------------------------------------------------------

def _quota_limits(quota):
    """(namespace, scoped, {resource: hard count}, errors, 'ResourceQuota ns/name') of one ResourceQuota, for
    the resources the planner plans (nvidia.com/gpu, nvidia.com/mig-*; not the .shared or HAMi ones), keys as
    gpu/quota.py normalises them."""
    meta, spec = meta_of(quota), quota.get('spec') or {}
    where = 'ResourceQuota %s/%s' % (meta.get('namespace'), meta.get('name'))
    hard, errors = normalise_quota(spec.get('hard') or {})
    limits = {}
    for key, value in hard.items():
        resource = key[len(REQUESTS):]
        if key.startswith(REQUESTS) and _plannable(resource) and not resource.endswith(SHARED_SUFFIX):
            limits[resource] = int(value)
    scoped = bool(spec.get('scopes') or spec.get('scopeSelector'))
    return meta.get('namespace'), scoped, limits, ['%s: %s' % (where, e) for e in errors], where


def _namespace_limit(unscoped, scoped):
    """What one namespace may request of a resource: Kubernetes enforces every quota, so the smallest
    unscoped one; scoped quotas each cover some pods only, so together at most their sum."""
    bounds = ([min(unscoped)] if unscoped else []) + ([sum(scoped)] if scoped else [])
    return min(bounds)


def quota_demand(quotas, declared=None):
    """The demand the ResourceQuotas allow: per namespace what its quotas let it request
    (``requests.nvidia.com/gpu``, ``requests.nvidia.com/mig-*`` hard limits; a bare ``nvidia.com/...`` key
    counts as its ``requests.`` form), summed over the namespaces; ``declared`` raises it where it asks for more.

    Returns ``{'demand': {...}, 'quotas': ['namespace/name', ...], 'errors': [...]}``; with errors (a bad
    quantity, a GPU count that is not whole) the demand is empty.
    """
    per_namespace, counted, errors = {}, [], []
    for quota in quotas or []:
        if not isinstance(quota, dict):
            errors.append('ResourceQuotas must be mappings (k8s_info resources), got %s' % type_name(quota))
            continue
        namespace, scoped, limits, quota_errors, where = _quota_limits(quota)
        errors.extend(quota_errors)
        if limits and not quota_errors:
            counted.append(where.split(' ', 1)[1])
        for resource, qty in limits.items():
            per_namespace.setdefault((namespace, resource), ([], []))[1 if scoped else 0].append(qty)
    if errors:
        return {'demand': {}, 'quotas': [], 'errors': errors}
    demand = {}
    for (_namespace, resource), (unscoped, scoped) in per_namespace.items():
        demand[resource] = demand.get(resource, 0) + _namespace_limit(unscoped, scoped)
    return {'demand': raise_demand(positive(demand), declared), 'quotas': sorted(counted), 'errors': []}


# ---------------------------------------------------------------------------
# The plan
# ---------------------------------------------------------------------------

def _diff(after, before):
    names = set(after) | set(before)
    return dict((n, after.get(n, 0) - before.get(n, 0)) for n in sorted(names) if after.get(n, 0) != before.get(n, 0))


def _changes(groups, counts, catalog):
    changes, used = [], [0] * len(groups)
    for (gi, oi), times in sorted(counts.items()):
        group, config = groups[gi], groups[gi].options[oi][0]
        for node in group.nodes[used[gi]:used[gi] + times]:
            after = catalog.capacity(config, node.product, node.gpus)
            changes.append({'node': node.name, 'product': node.product, 'gpus': node.gpus,
                            'from': node.current, 'to': config, 'capacity_before': node.capacity,
                            'capacity_after': after, 'delta': _diff(after, node.capacity), 'pods': node.pods})
        used[gi] += times
    return sorted(changes, key=lambda c: c['node'])


def _assignments(changes):
    by_config = {}
    for change in changes:
        by_config.setdefault(change['to'], []).append(change['node'])
    return [{'nodes': sorted(names), 'config': config} for config, names in sorted(by_config.items())]


def _reasons(shortfall, demand, after, groups, resources):
    offered = set(r for g in groups for o in g.options for r, d in zip(resources, o[1]) if d > 0)
    reasons = []
    for name, short in sorted(shortfall.items()):
        line = '%s: %d short (demand %d, the best plan gives %d)' % (name, short, demand[name], after.get(name, 0))
        if name not in offered:
            line += ('; no config the pool may take adds it (check the strategy, the products, the mig-parted '
                     'document, or allow generate_configs)')
        reasons.append(line)
    return reasons


def _empty(errors):
    return {'errors': errors, 'meetable': False, 'optimal': False, 'lower_bound': 0, 'demand': {},
            'capacity_before': {}, 'capacity_after': {}, 'shortfall': {}, 'reasons': [], 'changes': [],
            'assignments': [], 'untouched': [], 'skipped': [], 'custom_configs': {}, 'search_steps': 0,
            'bounds': {'shortfall': 0, 'changes': 0, 'pods': 0}}


def _overrides_errors(overrides):
    try:
        product_names(overrides)
    except MigCatalogError as exc:
        return ['overrides: %s' % exc]
    return []


def plan_mig_demand(nodes, document, demand, strategy='mixed', policy=None, overrides=None):
    """The plan (see the module docstring); ``errors`` lists every input problem, nothing else is set then."""
    policy = {} if policy is None else policy
    errors = input_errors(nodes, document, demand, strategy, policy) + _overrides_errors(overrides)
    if errors:
        return _empty(errors)
    settings = dict(POLICY_DEFAULTS)
    settings.update(policy)
    catalog = ConfigOptions(document, strategy, settings['generate_configs'], overrides, settings['per_gpu_configs'])
    candidates, skipped, fixed = split_pool(nodes, catalog, overrides)
    before = add_resources(dict(fixed), {})
    for node in candidates:
        add_resources(before, node.capacity)
    resources = sorted(r for r, qty in demand.items() if qty)
    deficit = [demand[r] - before.get(r, 0) for r in resources]
    groups = build_groups(candidates, catalog, resources, settings['busy_nodes'])
    counts = greedy(groups, deficit, [max(1, demand[r]) for r in resources])
    shortfall, counts, _exact = smallest_shortfall(groups, deficit, counts)
    search = Search(groups, deficit, settings['search_budget'])
    bounds = {'shortfall': shortfall, 'changes': changes_bound(search, groups, deficit, shortfall), 'pods': 0}
    if plan_cost(groups, counts, deficit) != (shortfall, bounds['changes'], 0):
        counts = search.run(counts)
    cost = plan_cost(groups, counts, deficit)
    if search.complete:
        bounds.update(changes=cost[1], pods=cost[2])
    return _result({'nodes': nodes, 'demand': demand, 'catalog': catalog, 'skipped': skipped, 'before': before,
                    'resources': resources, 'groups': groups, 'search': search, 'counts': counts,
                    'bounds': bounds, 'optimal': cost == (bounds['shortfall'], bounds['changes'], bounds['pods'])})


def _result(state):
    changes = _changes(state['groups'], state['counts'], state['catalog'])
    after = dict(state['before'])
    for change in changes:
        add_resources(after, change['delta'])
    after = positive(after)
    demand = state['demand']
    shortfall = dict((r, demand[r] - after.get(r, 0)) for r in sorted(demand) if demand[r] > after.get(r, 0))
    changed = set(c['node'] for c in changes)
    used = set(c['to'] for c in changes)
    search = state['search']
    return {
        'errors': [], 'meetable': not shortfall, 'optimal': state['optimal'],
        'lower_bound': state['bounds']['changes'], 'bounds': state['bounds'],
        'demand': dict(demand), 'capacity_before': positive(state['before']), 'capacity_after': after,
        'shortfall': shortfall,
        'reasons': _reasons(shortfall, demand, after, state['groups'], state['resources']),
        'changes': changes, 'assignments': _assignments(changes),
        'untouched': sorted(n['name'] for n in state['nodes'] if n['name'] not in changed),
        'skipped': state['skipped'],
        'custom_configs': dict((n, c) for n, c in state['catalog'].generated.items() if n in used),
        'search_steps': search.steps,
    }


# ---------------------------------------------------------------------------
# The plan as text
# ---------------------------------------------------------------------------

TABLE_HEADERS = ('NODE', 'FROM -> TO', 'CAPACITY DELTA', 'PODS AFFECTED')


def _delta_cell(delta):
    if not delta:
        return '-'
    return ' '.join('%s:%+d' % (short_resource(n), q) for n, q in sorted(delta.items(), key=lambda i: i[0]))


def _row(change):
    return (change['node'], '%s -> %s' % (change['from'] or '-', change['to']), _delta_cell(change['delta']),
            ', '.join(change['pods']) or '-')


def _demand_lines(plan):
    lines = []
    for name in sorted(plan['demand']):
        lines.append('%s: demand %d, before %d, after %d%s'
                     % (short_resource(name), plan['demand'][name], plan['capacity_before'].get(name, 0),
                        plan['capacity_after'].get(name, 0),
                        ', SHORT %d' % plan['shortfall'][name] if name in plan['shortfall'] else ''))
    return lines


def plan_table(plan):
    """The plan as lines of text: one row per changed node, then demand vs capacity."""
    if plan['errors']:
        return ['ERROR: %s' % e for e in plan['errors']]
    rows = [_row(c) for c in plan['changes']]
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(TABLE_HEADERS)]
    lines = ['  '.join(c.ljust(w) for c, w in zip(cells, widths)).rstrip() for cells in [TABLE_HEADERS] + rows]
    if not rows:
        lines.append('(no node changes: the pool already serves the demand)' if plan['meetable']
                     else '(no node change helps)')
    lines.append('')
    lines.extend(_demand_lines(plan))
    lines.append('untouched: %d node(s); changed: %d (fewest possible: %s)'
                 % (len(plan['untouched']), len(plan['changes']),
                    'yes' if plan['optimal'] else 'at least %d' % plan['lower_bound']))
    lines.extend('skipped %s: %s' % (s['node'], s['reason']) for s in plan['skipped'])
    lines.extend('cannot meet %s' % r for r in plan['reasons'])
    return lines
