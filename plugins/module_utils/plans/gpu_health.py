# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unhealthy GPU nodes, pure part: which nodes have bad GPUs, and what a policy does to them.

A GPU node is *unhealthy* when, for ``nvidia.com/gpu``, ``nvidia.com/gpu.shared`` or a
``nvidia.com/mig-*`` resource, ``status.allocatable`` is below ``status.capacity`` (kubelet keeps an
unhealthy device in capacity only: docs/facts.md#unhealthy-gpus), or when Events naming it with one of
``event_reasons`` (default ``XidCriticalError``) are newer than ``window_minutes``, or, when the user gives a
Prometheus URL, when one of its GPUs reports an XID to the DCGM exporter (``DCGM_FI_DEV_XID_ERRORS``, the code of
the last XID of the GPU, not 0 and not one of ``ignored_xids``: docs/facts.md#dcgm-exporter).
A node whose device plugin is known not to serve (MIG change pending, device plugin paused or switched off,
a rollout working on it) is *skipped*: its allocatable is 0 by design.

Policies:

- ``quarantine``: an unhealthy node is cordoned and its GPU pods are moved off (the module drains it);
  the annotation ``gpuops.gpu/gpu-health`` records ``{"state": "quarantined", "reason", "since",
  "cordoned", "tainted"}`` (``cordoned``: whether we cordoned it; ``tainted``: whether we added
  :data:`TAINT`). A node already quarantined is left as it is.
- With DRA device taints (``dra``: the ResourceSlices, our DeviceTaintRules, the effect and API version), a
  node whose bad DRA devices are known (plans/gpu_health_dra.py) is quarantined device by device instead: one
  DeviceTaintRule per bad device, no cordon, no drain; the record says ``"mode": "devices"`` and which devices.
  A device the DRA driver tainted itself (``NoSchedule``/``NoExecute``) also makes its node unhealthy.
- ``return``: a node *we* quarantined whose allocatable equals its capacity again (and, with DCGM metrics, none
  of whose GPUs reports an XID any more; with DRA, none of its devices is tainted by the driver; its
  DeviceTaintRules are deleted) is uncordoned (only when we cordoned it), our taint is removed and the
  annotation says ``{"state": "returned", "since", "reason"}``;
  XID Events from before the return are not counted again. A node we did not quarantine is never touched.

``now`` is seconds since the epoch (UTC); event times are read as UTC.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import calendar
import copy
import json
import re

from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import (
    ANN_GPU_HEALTH, ANN_ROLLOUT_PHASE, DEPLOY_LABEL_PREFIX, LABEL_MIG_STATE, PAUSED_FOR_MIG)
from ansible_collections.gpuops.gpu.plugins.module_utils.common.objects import annotations_of, labels_of, meta_of
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import node as gn
from ansible_collections.gpuops.gpu.plugins.module_utils.plans import gpu_health_dra as ghd

POLICIES = ('quarantine', 'return')
DEFAULT_EVENT_REASONS = ('XidCriticalError',)
# The XIDs NVIDIA's device plugin treats as application errors (docs/facts.md#unhealthy-gpus): not the GPU's fault
APPLICATION_XIDS = (13, 31, 43, 45, 68, 109)
XID_METRIC = 'DCGM_FI_DEV_XID_ERRORS'
TAINT = {'key': 'gpuops.gpu/gpu-unhealthy', 'effect': 'NoSchedule'}
QUARANTINED = 'quarantined'
RETURNED = 'returned'
_TIME = re.compile(r'^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)')


def _whole(value):
    return isinstance(value, int) and not isinstance(value, bool)


def input_errors(policy, window_minutes, event_reasons, max_nodes, ignored_xids=APPLICATION_XIDS):
    """Every error of the settings, as sentences (empty when they are fine)."""
    errors = []
    if not isinstance(ignored_xids, (list, tuple)) or not all(_whole(x) and x > 0 for x in ignored_xids):
        errors.append('ignored_xids must be a list of XID codes (whole numbers > 0), not %r' % (ignored_xids,))
    if policy not in POLICIES:
        errors.append('policy must be one of %s, not %r' % (', '.join(POLICIES), policy))
    if not isinstance(window_minutes, int) or isinstance(window_minutes, bool) or window_minutes < 0:
        errors.append('window_minutes must be a whole number >= 0 (0: Events are not read), not %r'
                      % (window_minutes,))
    if not isinstance(event_reasons, (list, tuple)) or not all(
            isinstance(r, str) and r.strip() for r in event_reasons):
        errors.append('event_reasons must be a list of Event reasons (non-empty strings), not %r' % (event_reasons,))
    if not isinstance(max_nodes, int) or isinstance(max_nodes, bool) or max_nodes < 0:
        errors.append('max_nodes must be a whole number >= 0 (0: no limit), not %r' % (max_nodes,))
    return errors


def epoch_of(stamp):
    """Seconds since the epoch of a Kubernetes time ('2026-01-02T03:04:05Z', fractions and offsets
    ignored: the API writes UTC); None when it is not one."""
    match = _TIME.match(str(stamp or ''))
    if not match:
        return None
    return calendar.timegm(tuple(int(g) for g in match.groups()))


def record(node):
    """Our gpu-health annotation of the node as a dict ({} when absent or unreadable)."""
    raw = annotations_of(node).get(ANN_GPU_HEALTH)
    try:
        value = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _event_time(event):
    for stamp in (event.get('lastTimestamp'), event.get('eventTime'), event.get('firstTimestamp'),
                  meta_of(event).get('creationTimestamp')):
        seconds = epoch_of(stamp)
        if seconds is not None:
            return seconds
    return None


def recent_events(events, name, now, window_minutes, reasons, after=None):
    """The Events on node ``name`` with one of ``reasons`` in the last ``window_minutes`` (and after
    ``after``, seconds), newest first."""
    if not window_minutes:
        return []
    start = now - window_minutes * 60
    if after is not None:
        start = max(start, after)
    out = []
    for event in events or []:
        obj = event.get('involvedObject') or {}
        if obj.get('kind') != 'Node' or obj.get('name') != name or event.get('reason') not in reasons:
            continue
        when = _event_time(event)
        if when is not None and when >= start:
            out.append((when, event))
    return [e for _when, e in sorted(out, key=lambda pair: -pair[0])]


def lost_devices(node):
    """{resource: (allocatable, capacity)} of the GPU resources with allocatable below capacity."""
    status = node.get('status') or {}
    capacity = gn.gpu_resources(status.get('capacity'))
    allocatable = gn.gpu_resources(status.get('allocatable'))
    return dict((res, (allocatable.get(res, 0), cap)) for res, cap in sorted(capacity.items())
                if allocatable.get(res, 0) < cap)


def xid_query(node_label='Hostname'):
    """The PromQL of the last XID per GPU, by node: the exporter names the node ``Hostname`` (``hostname`` after
    NVIDIA/dcgm-exporter d5e5f51; copied into ``Hostname`` here, as the monitoring role's alerts do)."""
    return ('max by (%s, gpu, UUID) (label_replace(%s, "Hostname", "$1", "hostname", "(.+)"))'
            % (node_label, XID_METRIC))


def xids_by_node(answer, node_label='Hostname', ignored_xids=APPLICATION_XIDS):
    """({node: [{'gpu', 'uuid', 'xid'}]} of the GPUs reporting an XID that counts, the set of nodes with any
    series) from the JSON answer of the Prometheus HTTP API to :func:`xid_query`. Raises ValueError when the
    answer is not one (no ``status``/``data``, not a vector)."""
    if not isinstance(answer, dict) or answer.get('status') != 'success' or not isinstance(answer.get('data'), dict):
        raise ValueError('not an answer of the Prometheus HTTP API (status "success" with data)')
    data = answer['data']
    if data.get('resultType') != 'vector' or not isinstance(data.get('result'), list):
        raise ValueError('the answer is a %r, not an instant vector' % (data.get('resultType'),))
    found, reporting = {}, set()
    for sample in data['result']:
        labels = sample.get('metric') or {}
        node = labels.get(node_label)
        try:
            xid = int(float(sample['value'][1]))
        except (KeyError, IndexError, TypeError, ValueError):
            continue
        if not node:
            continue
        reporting.add(node)
        if xid and xid not in ignored_xids:
            found.setdefault(node, []).append({'gpu': labels.get('gpu', '?'), 'uuid': labels.get('UUID', ''),
                                               'xid': xid})
    return dict((n, sorted(g, key=lambda x: str(x['gpu']))) for n, g in found.items()), reporting


def _xid_reason(gpus):
    return 'DCGM: %s' % ', '.join('GPU %s (%s) last XID %d' % (g['gpu'], g['uuid'] or '?', g['xid']) for g in gpus)


def skip_reason(node):
    """Why the node's allocatable says nothing about its GPUs now (None when it does)."""
    labels = labels_of(node)
    if labels.get(LABEL_MIG_STATE) == 'pending':
        return 'MIG change pending (%s=pending)' % LABEL_MIG_STATE
    plugin = labels.get(DEPLOY_LABEL_PREFIX + 'device-plugin')
    if plugin in (PAUSED_FOR_MIG, 'false'):
        return 'device plugin not deployed (%sdevice-plugin=%s)' % (DEPLOY_LABEL_PREFIX, plugin)
    if annotations_of(node).get(ANN_ROLLOUT_PHASE):
        return 'a rollout is working on it (%s=%s)' % (ANN_ROLLOUT_PHASE, annotations_of(node)[ANN_ROLLOUT_PHASE])
    return None


def assess(node, events, now, window_minutes=60, event_reasons=DEFAULT_EVENT_REASONS, xids=None, slices=None):
    """{'name', 'unhealthy', 'reasons', 'skipped', 'lost', 'events', 'xids', 'record'} of one node; ``xids``: the
    node's GPUs reporting an XID (:func:`xids_by_node`), None without DCGM metrics; ``slices``: the DRA driver's
    ResourceSlices (None: DRA not looked at)."""
    name = meta_of(node).get('name')
    rec = record(node)
    after = epoch_of(rec.get('since')) if rec.get('state') == RETURNED else None
    lost = lost_devices(node)
    recent = recent_events(events, name, now, window_minutes, event_reasons, after)
    gpus = xids_of(xids, name)
    reasons = ['%s allocatable %d < capacity %d' % (res, alloc, cap) for res, (alloc, cap) in lost.items()]
    if recent:
        reasons.append('%d %s Event(s) in the last %d min, newest: %s' % (
            len(recent), '/'.join(sorted(set(e.get('reason') for e in recent))), window_minutes,
            (recent[0].get('message') or '').strip()[:200]))
    if gpus:
        reasons.append(_xid_reason(gpus))
    dra_reason = ghd.tainted_reason(slices, name) if slices else ''
    if dra_reason:
        reasons.append(dra_reason)
    skipped = skip_reason(node)
    return {'name': name, 'unhealthy': bool(reasons) and not skipped, 'reasons': reasons, 'skipped': skipped,
            'lost': dict((k, {'allocatable': a, 'capacity': c}) for k, (a, c) in lost.items()),
            'events': len(recent), 'xids': gpus, 'dra_tainted': bool(dra_reason), 'record': rec}


def xids_of(xids, name):
    """The node's GPUs reporting an XID ([] without DCGM metrics or when none does)."""
    return list((xids or {}).get(name) or [])


def node_view(node):
    """What the plan may change on a node: cordon, our annotation, taints (for --diff)."""
    spec = node.get('spec') or {}
    return {'unschedulable': bool(spec.get('unschedulable')), 'annotation': annotations_of(node).get(ANN_GPU_HEALTH),
            'taints': copy.deepcopy(spec.get('taints') or [])}


def _has_taint(taints):
    return any(t.get('key') == TAINT['key'] and t.get('effect') == TAINT['effect'] for t in taints)


def _quarantine(node, info, now_iso, taint):
    before = node_view(node)
    after = copy.deepcopy(before)
    rec = info['record']
    if rec.get('state') == QUARANTINED:
        if taint and not _has_taint(after['taints']):
            after['taints'].append(dict(TAINT))
            rec = dict(rec, tainted=True)
            after['annotation'] = json.dumps(rec, sort_keys=True)
        return before, after
    rec = {'state': QUARANTINED, 'reason': '; '.join(info['reasons']), 'since': now_iso,
           'cordoned': not before['unschedulable'], 'tainted': bool(taint and not _has_taint(before['taints']))}
    after['unschedulable'] = True
    after['annotation'] = json.dumps(rec, sort_keys=True)
    if rec['tainted']:
        after['taints'].append(dict(TAINT))
    return before, after


def _return(node, info, now_iso):
    before = node_view(node)
    after = copy.deepcopy(before)
    rec = info['record']
    if rec.get('cordoned'):
        after['unschedulable'] = False
    if rec.get('tainted'):
        after['taints'] = [t for t in after['taints']
                           if not (t.get('key') == TAINT['key'] and t.get('effect') == TAINT['effect'])]
    after['annotation'] = json.dumps({'state': RETURNED, 'since': now_iso, 'reason': rec.get('reason', '')},
                                     sort_keys=True)
    return before, after


def _returnable(info):
    return (info['record'].get('state') == QUARANTINED and not info['lost'] and not info['xids']
            and not info['dra_tainted'] and not info['skipped'])


def _devices(node, info, now_iso, dra):
    """(before, after, rules to write) of a quarantine device by device, or None when the node is not for it:
    DRA not asked for, its bad devices not known, or it is quarantined whole already."""
    rec = info['record']
    bad = ghd.bad_devices(dra['slices'], info['name'], info['xids']) if dra else {}
    if not bad or (rec.get('state') == QUARANTINED and rec.get('mode') != 'devices'):
        return None
    before = dict(node_view(node), device_rules=sorted(ghd.ours(dra['rules'], info['name'])))
    known = set(rec.get('devices') or []) if rec.get('state') == QUARANTINED else set()
    write, _delete = ghd.rule_changes(info['name'], bad, dra['rules'], dra['effect'], dra['version'])
    if known >= set(bad) and not write:
        return before, copy.deepcopy(before), []
    fresh = rec.get('state') != QUARANTINED
    new = {'state': QUARANTINED, 'mode': 'devices', 'reason': '; '.join(info['reasons']) if fresh else rec.get('reason'),
           'since': now_iso if fresh else rec.get('since'), 'devices': sorted(known | set(bad)), 'cordoned': False,
           'tainted': False}
    after = dict(before, annotation=json.dumps(new, sort_keys=True),
                 device_rules=sorted(set(before['device_rules']) | set(ghd.rule_name(info['name'], d) for d in bad)))
    return before, after, write


def _node_action(node, info, policy, now_iso, taint, dcgm, dra):
    """The node's action of the policy, or None."""
    if policy == 'quarantine' and info['unhealthy']:
        devices = _devices(node, info, now_iso, dra)
        if devices is not None:
            return dict(_action(info, 'quarantine', '; '.join(info['reasons']), devices[0], devices[1]),
                        mode='devices', rules_write=devices[2], rules_delete=[])
        before, after = _quarantine(node, info, now_iso, taint)
        return _action(info, 'quarantine', '; '.join(info['reasons']), before, after)
    if policy == 'return' and _returnable(info):
        before, after = _return(node, info, now_iso)
        action = _action(info, 'return', 'allocatable equals capacity again%s'
                         % (' and no GPU reports an XID' if dcgm else ''), before, after)
        if info['record'].get('mode') == 'devices' and dra:
            rules = sorted(ghd.ours(dra['rules'], info['name']))
            action['before'] = dict(before, device_rules=rules)
            action['after'] = dict(after, device_rules=[])
            action.update(mode='devices', rules_write=[], rules_delete=rules, changed=True)
        return action
    return None


def plan(nodes, events, policy, now, now_iso, window_minutes=60, event_reasons=DEFAULT_EVENT_REASONS,
         taint=False, max_nodes=0, xids=None, dra=None):
    """The plan for the GPU nodes among ``nodes``: {'policy', 'nodes': [assessments], 'actions': [{'node',
    'action', 'reason', 'before', 'after', 'changed'}], 'unhealthy', 'skipped', 'quarantined'}; ``xids``: the
    GPUs reporting an XID by node (:func:`xids_by_node`), None without DCGM metrics; ``dra``: None, or
    {'slices', 'rules' (our DeviceTaintRules), 'effect', 'version'} to quarantine device by device (an action
    then has ``mode`` 'devices', ``rules_write``, ``rules_delete``; ``devices`` lists those nodes). Raises
    ValueError with every input error, or when ``max_nodes`` (> 0) new quarantines would be exceeded."""
    errors = input_errors(policy, window_minutes, event_reasons, max_nodes)
    if errors:
        raise ValueError('; '.join(errors))
    infos, actions = [], []
    by_name = {}
    for node in sorted((n for n in nodes if gn.is_gpu_node(n)), key=lambda n: meta_of(n).get('name') or ''):
        info = assess(node, events, now, window_minutes, tuple(event_reasons), xids, dra and dra['slices'])
        infos.append(info)
        by_name[info['name']] = node
    for info in infos:
        action = _node_action(by_name[info['name']], info, policy, now_iso, taint, xids is not None, dra)
        if action is not None:
            actions.append(action)
    states = dict((i['name'], i['record'].get('state')) for i in infos)
    new = [a['node'] for a in actions if a['action'] == 'quarantine' and states[a['node']] != QUARANTINED]
    if max_nodes and len(new) > max_nodes:
        raise ValueError('%d GPU nodes would be quarantined (%s), more than max_nodes %d: a cause shared by '
                         'many nodes (device plugin config, driver) is more likely than broken GPUs; fix it or '
                         'raise max_nodes' % (len(new), ', '.join(new), max_nodes))
    return {'policy': policy, 'nodes': infos, 'actions': actions,
            'unhealthy': [i['name'] for i in infos if i['unhealthy']],
            'skipped': dict((i['name'], i['skipped']) for i in infos if i['skipped']),
            'quarantined': [i['name'] for i in infos if i['record'].get('state') == QUARANTINED],
            'devices': sorted(set([a['node'] for a in actions if a.get('mode') == 'devices'] + [
                i['name'] for i in infos if i['record'].get('mode') == 'devices']))}


def _action(info, action, reason, before, after):
    return {'node': info['name'], 'action': action, 'reason': reason, 'before': before, 'after': after,
            'changed': before != after}


def node_patch(action):
    """The merge patch that turns the action's ``before`` into its ``after`` (None when nothing changes on the
    node: a device quarantine's DeviceTaintRules are written apart)."""
    before, after = action['before'], action['after']
    if all(before.get(k) == after.get(k) for k in ('unschedulable', 'annotation', 'taints')):
        return None
    patch = {'metadata': {'annotations': {ANN_GPU_HEALTH: after['annotation']}}}
    spec = {}
    if before['unschedulable'] != after['unschedulable']:
        spec['unschedulable'] = after['unschedulable'] or None
    if before['taints'] != after['taints']:
        spec['taints'] = after['taints'] or None
    if spec:
        patch['spec'] = spec
    return patch
