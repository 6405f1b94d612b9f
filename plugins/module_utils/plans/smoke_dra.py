# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""GPU smoke test through Dynamic Resource Allocation, pure part: which DeviceClasses and ResourceClaimTemplates
to test, the devices each can still get, the cases and the fill test. The objects, how a case ended and the
tables are in plans/smoke_dra_run.py; ops/smoke_dra.py reads the cluster and runs them.

Inputs are the API's objects as dicts: DeviceClasses, ResourceClaimTemplates (every namespace), the
ResourceSlices of NVIDIA's driver and every ResourceClaim; and the ``nodes`` of ``gpuops.gpu.gpu_nodes_info``
(the nodes the test may use: ``label_selector`` applies).

* **What is tested**: the DeviceClasses and ResourceClaimTemplates named by the user, or, when none are
  named, the ones the dra role wrote (``gpuops.gpu/role: dra``) plus the classes of NVIDIA's driver chart
  (``gpu.nvidia.com``, ``mig.nvidia.com``). Templates of the same name and spec in several namespaces (a
  ``namespace_selector`` entry of the dra role) are one case.
* **Devices**: the devices of the newest generation of each pool (gpu/dra_fleet.py) on the given nodes. A
  device is usable unless its node is cordoned, not Ready or has a NoSchedule/NoExecute taint the test pods
  do not tolerate, or the device itself carries such a taint; it is free unless a claim's allocation names
  it. Which devices a class (and a template's request) selects is the CEL of its selectors, evaluated by
  gpu/dra_select.py; a selector it does not understand makes the count unknown, never a guess.
* **Cases** (one Job each): a ``class`` case requests one device of the class through a claim template;
  a ``template`` case runs with a copy of the template's claim spec (the pod's namespace must hold the
  template); an ``extended-resource`` case requests 1 of a class's ``extendedResourceName`` in ``limits``,
  pinned to nodes that do not advertise that resource themselves, so the scheduler can only serve it through
  the class (``DRAExtendedResource``). Each is pinned (required node affinity on ``metadata.name``) to the
  nodes where it can get its devices.
* **Fill test** (per class, with ``fill``): N = the class's free usable devices; N + ``extra`` claims of one
  device each and as many pods, pinned to the nodes of those devices, go to the real scheduler, which must
  allocate exactly N and leave ``extra`` pods Pending with its reason (plans/smoke_fill.py is the same test
  for time-sliced and MPS-shared extended resources).

:func:`plan` also returns the input errors (a named object that does not exist, a template whose request names a
DeviceClass that does not exist: its pods could never be scheduled), all at once, before anything is written.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json

from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import is_dns_label, is_dns_subdomain, suggest
from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import is_managed
from ansible_collections.gpuops.gpu.plugins.module_utils.common.objects import labels_of, meta_of
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import dra, dra_fleet
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.dra_select import Selector, selector_expressions
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.tolerations import tolerates
from ansible_collections.gpuops.gpu.plugins.module_utils.plans import smoke as S
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.smoke_fill import FILL_MAX_PODS, SKIPPED

MODES = ('device-plugin', 'dra', 'both')
KINDS = ('class', 'template', 'extended-resource')
DRIVER_CLASSES = (dra.GPU_CLASS, dra.MIG_CLASS)
BLOCKING_EFFECTS = ('NoSchedule', 'NoExecute')


def _spec(obj):
    return (obj or {}).get('spec') or {}


def _key(obj):
    meta = meta_of(obj)
    return '%s/%s' % (meta.get('namespace'), meta.get('name')) if meta.get('namespace') else meta.get('name')


def _by_role(obj):
    labels = labels_of(obj)
    return is_managed(labels) and labels.get(dra.LABEL_ROLE) == dra.ROLE


def _hint(name, names):
    close = suggest(name, names)
    return '; did you mean %s?' % close if close else ''


def _named(wanted, known, option, kind, errors):
    """The objects of ``known`` (a dict by name) that ``wanted`` names, in its order; an error for each missing."""
    found = []
    for name in wanted or []:
        if name in known:
            found.append(known[name])
        else:
            errors.append('%s: %s %s does not exist%s' % (option, kind, name, _hint(name, known)))
    return found


# --- what is tested ------------------------------------------------------------------------------------------

def requested_classes(claim_spec):
    """The DeviceClass names a claim spec's requests (``exactly`` and every ``firstAvailable`` alternative) use."""
    out = []
    for request in (claim_spec.get('devices') or {}).get('requests') or []:
        for exact in [request.get('exactly')] + list(request.get('firstAvailable') or []):
            if exact and exact.get('deviceClassName') and exact['deviceClassName'] not in out:
                out.append(exact['deviceClassName'])
    return out


def select_objects(classes, templates, wanted_classes=None, wanted_templates=None):
    """``(classes, templates, errors)``: the DeviceClass objects and the template groups to test.

    A template group is ``{'name', 'namespaces', 'template': <one of them>}``: templates of one name and
    spec. With nothing named, the dra role's objects and the driver's classes; else only what is named."""
    errors = []
    by_name = dict((meta_of(c).get('name'), c) for c in classes or [])
    by_key = dict((_key(t), t) for t in templates or [])
    named = bool(wanted_classes or wanted_templates)
    if named:
        chosen = _named(wanted_classes, by_name, 'device_classes', 'DeviceClass', errors)
        picked = _named(wanted_templates, by_key, 'claim_templates', 'ResourceClaimTemplate', errors)
    else:
        chosen = [c for c in classes or [] if _by_role(c) or meta_of(c).get('name') in DRIVER_CLASSES]
        picked = [t for t in templates or [] if _by_role(t)]
    groups = {}
    for template in sorted(picked, key=_key):
        spec = _spec(template).get('spec') or {}
        group = groups.setdefault((meta_of(template).get('name'), json.dumps(spec, sort_keys=True)), {
            'name': meta_of(template).get('name'), 'namespaces': [], 'template': template})
        group['namespaces'].append(meta_of(template).get('namespace'))
        for name in requested_classes(spec):
            if name not in by_name:
                errors.append('ResourceClaimTemplate %s asks for DeviceClass %s, which does not exist (its pods '
                              'could never be scheduled)%s' % (_key(template), name, _hint(name, by_name)))
        if not requested_classes(spec):
            errors.append('ResourceClaimTemplate %s requests no device' % _key(template))
    chosen = sorted(chosen, key=lambda c: meta_of(c).get('name'))
    if not chosen and not groups and not errors:
        errors.append('nothing to test through DRA: no DeviceClass or ResourceClaimTemplate was named, and the '
                      'cluster has none written by the dra role nor the classes of NVIDIA\'s driver (%s)'
                      % ', '.join(DRIVER_CLASSES))
    return chosen, list(groups.values()), errors


# --- devices -------------------------------------------------------------------------------------------------

def _node_block(info, tolerations):
    if info is None:
        return 'not selected'
    if info.get('unschedulable'):
        return 'cordoned'
    if info.get('ready') is False:
        return 'not Ready'
    for taint in info.get('taints') or []:
        if taint.get('effect') in BLOCKING_EFFECTS and not any(tolerates(t, taint) for t in tolerations or []):
            return 'taint %s' % taint.get('key')
    return None


def devices(slices, claims, nodes, tolerations=None):
    """Every device of the driver's current slices: ``{'node', 'pool', 'name', 'device', 'allocated', 'blocked'
    (why the test pods cannot use it, or None), 'countable' (False for a device that shares counters or allows
    several allocations: free devices are then not simply the unallocated ones)}``."""
    current, _stale = dra_fleet.current_slices(slices or [])
    allocated = dra_fleet.allocations(claims or [])
    infos = dict((n.get('name'), n) for n in nodes or [])
    out = []
    for item in current:
        spec = _spec(item)
        node, pool = spec.get('nodeName'), (spec.get('pool') or {}).get('name')
        if not node:
            continue
        block = _node_block(infos.get(node), tolerations)
        for device in spec.get('devices') or []:
            tainted = [t.get('key') for t in device.get('taints') or [] if t.get('effect') in BLOCKING_EFFECTS]
            out.append({'node': node, 'pool': pool, 'name': device.get('name'), 'device': device,
                        'allocated': (pool, device.get('name')) in allocated,
                        'blocked': block or ('device taint %s' % tainted[0] if tainted else None),
                        'countable': not (device.get('consumesCounters') or device.get('allowMultipleAllocations'))})
    return out


def selector_of(device_class, request=None):
    """The Selector of a class's selectors and-ed with a request's (``exactly`` or a subrequest)."""
    expressions = selector_expressions(_spec(device_class).get('selectors'))
    expressions += selector_expressions((request or {}).get('selectors'))
    return Selector([e for e in expressions if e is not None], dra.DRIVER)


def matching(selector, all_devices):
    """``(devices the selector selects, problem)``; problem (a text) when some device cannot be judged."""
    picked, problem = [], selector.problem
    for record in all_devices:
        verdict = selector.select(record['device'])
        if verdict is None:
            problem = problem or 'the selector fails on %s/%s (a missing attribute?)' % (record['node'], record['name'])
        elif verdict:
            picked.append(record)
    return picked, problem


def count(picked, problem):
    """The counts of a class's devices: total, allocated, free (usable and unallocated), the nodes with free ones,
    and whether the count is exact (``countable``) with why not (``uncounted``)."""
    free = [d for d in picked if not d['allocated'] and not d['blocked']]
    blocked = sorted(set('%s (%s)' % (d['node'], d['blocked']) for d in picked
                         if d['blocked'] and d['blocked'] != 'not selected'))
    uncounted = problem or ('devices share counters or allow several allocations'
                            if any(not d['countable'] for d in picked) else None)
    return {'devices': len(picked), 'allocated': sum(1 for d in picked if d['allocated']), 'free': len(free),
            'nodes': sorted(set(d['node'] for d in free)), 'blocked': blocked, 'countable': uncounted is None,
            'uncounted': uncounted}


def usable_nodes(all_devices):
    """The nodes with at least one usable device (where a case whose devices cannot be counted may run)."""
    return sorted(set(d['node'] for d in all_devices if not d['blocked']))


def _no_capacity_reason(counts, what):
    if not counts['devices']:
        return 'no published device matches %s' % what
    if counts['blocked'] and counts['allocated'] < counts['devices']:
        return 'every free device of %s is on a node the test cannot use: %s' % (what, ', '.join(counts['blocked']))
    return 'every device of %s is allocated (%d)' % (what, counts['allocated'])


def _settle(case, counts, fallback_nodes, what):
    """Fill a case's counts, nodes and status (planned, or no-capacity with the reason)."""
    case.update(devices=counts['devices'], allocated=counts['allocated'], free=counts['free'],
                countable=counts['countable'], status=S.PLANNED, reason='')
    if not counts['countable']:
        case.update(nodes=fallback_nodes, reason='free devices not counted: %s' % counts['uncounted'])
    elif counts['free'] <= 0:
        case.update(nodes=[], status=S.NO_CAPACITY, reason=_no_capacity_reason(counts, what))
    else:
        case['nodes'] = counts['nodes']
    return case


# --- cases ---------------------------------------------------------------------------------------------------

def class_claim_spec(name, count_=1):
    """A claim spec of ``count_`` devices of DeviceClass ``name`` (request ``gpu``)."""
    return {'devices': {'requests': [{'name': 'gpu', 'exactly': {'deviceClassName': name,
                                                                 'allocationMode': 'ExactCount', 'count': count_}}]}}


def _template_nodes(claim_spec, classes, all_devices):
    """``(nodes where every request of the claim spec finds its devices free, problem)``: per node, each request in
    order takes ``count`` free matching devices not taken by an earlier one (``All``: every matching device of the
    node, at least one, none allocated); a ``firstAvailable`` request takes its first alternative that fits."""
    by_node, problem = {}, None
    for record in all_devices:
        by_node.setdefault(record['node'], []).append(record)
    fits = []
    for node, records in sorted(by_node.items()):
        taken = set()
        for request in (claim_spec.get('devices') or {}).get('requests') or []:
            options = [request['exactly']] if request.get('exactly') else list(request.get('firstAvailable') or [])
            got = None
            for option in options:
                picked, trouble = matching(selector_of(classes.get(option.get('deviceClassName')), option), records)
                problem = problem or trouble
                usable = [d for d in picked if not d['blocked'] and (d['pool'], d['name']) not in taken]
                if option.get('allocationMode') == 'All':
                    got = usable if usable and not any(d['allocated'] for d in picked) else None
                else:
                    free = [d for d in usable if not d['allocated']][:int(option.get('count') or 1)]
                    got = free if len(free) == int(option.get('count') or 1) else None
                if got:
                    break
            if not got:
                break
            taken.update((d['pool'], d['name']) for d in got)
        else:
            fits.append(node)
    return fits, problem


def _newest_per_extended_name(classes):
    """{extendedResourceName: the class that serves it}: of two classes naming it the newer one serves it."""
    out = {}
    for item in sorted(classes, key=lambda c: (meta_of(c).get('creationTimestamp') or '', meta_of(c).get('name'))):
        name = _spec(item).get('extendedResourceName')
        if name:
            out[name] = item
    return out


def plan_cases(tested, groups, all_classes, all_devices, nodes, extended_resources=True):
    """The DRA cases (see the module docstring), in the order class, template, extended-resource."""
    classes = dict((meta_of(c).get('name'), c) for c in all_classes or [])
    fallback = usable_nodes(all_devices)
    infos = dict((n.get('name'), n) for n in nodes or [])
    cases = []
    for item in tested:
        name = meta_of(item).get('name')
        counts = count(*matching(selector_of(item), all_devices))
        cases.append(_settle({'kind': 'class', 'resource': name, 'device_class': name,
                              'claim_spec': class_claim_spec(name)}, counts, fallback, 'DeviceClass %s' % name))
    for group in groups:
        claim_spec = _spec(group['template']).get('spec') or {}
        fits, problem = _template_nodes(claim_spec, classes, all_devices)
        case = {'kind': 'template', 'resource': '%s/%s' % (group['namespaces'][0], group['name']),
                'template': group['name'], 'namespaces': group['namespaces'], 'claim_spec': claim_spec,
                'device_class': ', '.join(requested_classes(claim_spec)), 'nodes': fits, 'status': S.PLANNED,
                'reason': '', 'countable': problem is None}
        if problem:
            case.update(nodes=fallback, reason='free devices not counted: %s' % problem)
        elif not fits:
            case.update(status=S.NO_CAPACITY, reason='no node has free devices for every request of the template')
        cases.append(case)
    if extended_resources:
        tested_names = set(meta_of(c).get('name') for c in tested)
        for resource, item in sorted(_newest_per_extended_name(all_classes or []).items()):
            name = meta_of(item).get('name')
            if name not in tested_names:
                continue
            counts = count(*matching(selector_of(item), all_devices))
            case = _settle({'kind': 'extended-resource', 'resource': resource, 'device_class': name}, counts,
                           fallback, 'DeviceClass %s' % name)
            own = [n for n in case['nodes'] if int((infos.get(n, {}).get('allocatable') or {}).get(resource, 0) or 0)]
            case['nodes'] = [n for n in case['nodes'] if n not in own]
            if case['status'] == S.PLANNED and not case['nodes']:
                case.update(status=S.NO_CAPACITY, reason='every node with a free device of %s advertises %s itself '
                            '(a device plugin serves it there): %s' % (name, resource, ', '.join(own)))
            cases.append(case)
    for index, case in enumerate(cases):
        case['id'] = index
    return cases


def plan_fill(cases, extra=1):
    """One fill case per class case (see the module docstring): N = its free usable devices."""
    out = []
    for case in cases:
        if case['kind'] != 'class':
            continue
        fill = {'kind': 'dra-fill', 'resource': case['device_class'], 'device_class': case['device_class'],
                'nodes': list(case.get('nodes') or []), 'devices': case.get('devices', 0),
                'in_use': case.get('allocated', 0), 'expect_running': case.get('free', 0),
                'expect_pending': int(extra), 'status': S.PLANNED, 'reason': ''}
        if not case.get('countable', True):
            fill.update(status=SKIPPED, reason=case['reason'])
        elif case['status'] == S.NO_CAPACITY:
            fill.update(status=S.NO_CAPACITY, reason=case['reason'])
        elif case['free'] + int(extra) > FILL_MAX_PODS:
            needed = case['free'] + int(extra)
            fill.update(status=SKIPPED, reason='%d claims needed, more than %d' % (needed, FILL_MAX_PODS))
        out.append(fill)
    for index, case in enumerate(out):
        case['id'] = index
    return out


def plan(classes, templates, slices, claims, nodes, wanted_classes=None, wanted_templates=None, tolerations=None,
         extended_resources=True, fill=False, fill_extra=1):
    """``{'cases', 'fill_cases', 'errors'}`` of a DRA smoke test (see the module docstring)."""
    tested, groups, errors = select_objects(classes, templates, wanted_classes, wanted_templates)
    all_devices = devices(slices, claims, nodes, tolerations)
    cases = plan_cases(tested, groups, classes, all_devices, nodes, extended_resources) if not errors else []
    return {'cases': cases, 'fill_cases': plan_fill(cases, fill_extra) if fill else [], 'errors': errors}


# --- the role's settings -------------------------------------------------------------------------------------

def input_errors(settings):
    """plans/smoke.py ``input_errors`` and the DRA settings: ``mode``, ``device_classes`` (DeviceClass names),
    ``claim_templates`` (``<namespace>/<name>``), no ``load`` with mode ``dra``."""
    errors = S.input_errors(settings)
    mode = settings.get('mode', 'device-plugin')
    if mode not in MODES:
        errors.append('smoke_test_mode must be one of %s, got %s' % (', '.join(MODES), mode))
    for key, check in (('device_classes', is_dns_subdomain), ('claim_templates', _is_template_key)):
        value = settings.get(key) or []
        if not isinstance(value, list):
            errors.append('smoke_test_%s must be a list' % key)
            continue
        bad = [str(v) for v in value if not check(v)]
        if bad:
            what = 'a DeviceClass name' if key == 'device_classes' else '<namespace>/<name> of a ResourceClaimTemplate'
            errors.append('smoke_test_%s: %s %s not %s' % (key, ', '.join(bad), 'is' if len(bad) == 1 else 'are',
                                                           what))
        if value and mode == 'device-plugin':
            errors.append('smoke_test_%s is used only with smoke_test_mode dra or both' % key)
    if mode == 'dra' and settings.get('load'):
        errors.append('smoke_test_load runs on the resources the device plugin advertises: use it with '
                      'smoke_test_mode both or device-plugin')
    return errors


def _is_template_key(value):
    namespace, _sep, name = value.partition('/') if isinstance(value, str) else ('', '', '')
    return bool(namespace) and is_dns_subdomain(name) and '/' not in name and is_dns_label(namespace)
