# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""gpuops.gpu.gpu_health against the cluster: read the GPU nodes (and the Node Events when
``window_minutes`` > 0), plan with plans/gpu_health.py, then write each node's change as one merge
patch (cordon, the gpu-health annotation, our taint; resourceVersion-guarded when the taints change)
and, with policy ``quarantine``, move the GPU pods off every quarantined node with the rollout
engine's drain (rollout/drain.py: Eviction API, PodDisruptionBudgets honoured, ``force`` only past
``drain_timeout``). Check mode reads only: the plan, the pods that would be evicted and the
PodDisruptionBudgets that would block them, and the rollout lock's state.

The rollout lock (rollout/lock.py, the Lease ``gpuops-gpu-rollout`` that MIG and sharing rollouts, reset and
the HAMi removal hold): a run with something to write (a node patch or a GPU pod to move) takes it first
(``lock_timeout`` seconds of waiting, 0: refused at once naming the holder and its purpose; ``lock_holder``:
joined, neither taken nor released), reads the nodes and plans again under it (the run it waited for may have
changed them), and fences every node patch and eviction with it. A run with nothing to write, and check mode,
never take it."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import time

from ansible_collections.gpuops.gpu.plugins.module_utils.common.errors import GpuOpsError, InputError
from ansible_collections.gpuops.gpu.plugins.module_utils.common.objects import meta_of
from ansible_collections.gpuops.gpu.plugins.module_utils.k8s.runner import ModuleRun
from ansible_collections.gpuops.gpu.plugins.module_utils.ops import prometheus
from ansible_collections.gpuops.gpu.plugins.module_utils.plans import gpu_health as gh
from ansible_collections.gpuops.gpu.plugins.module_utils.plans import gpu_health_dra as ghd
from ansible_collections.gpuops.gpu.plugins.module_utils.common.errors import status_of
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import dra as dra_names
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout import drain as dr
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.api import RolloutApi, now_iso
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.lock import LockLost, RolloutLock
from ansible_collections.gpuops.gpu.plugins.module_utils.common.lease import MAX_DURATION, describe


def _pod_ref(pod):
    return '%s/%s' % (meta_of(pod).get('namespace'), meta_of(pod).get('name'))


class GpuHealthRun(ModuleRun):
    """One run of the module: reads, the plan, the writes and the drains."""

    def __init__(self, conn, params, check_mode, **kwargs):
        super(GpuHealthRun, self).__init__(conn, params, check_mode, **kwargs)
        self.api = RolloutApi(conn)
        self.dcgm = None
        self.dra_version = None

    def xids(self):
        """The GPUs reporting an XID by node, from the DCGM exporter's metric through Prometheus (None without
        ``prometheus_url``); ``self.dcgm`` says what was asked and which nodes answered."""
        p = self.params
        if not p.get('prometheus_url'):
            return None
        promql = gh.xid_query(p['prometheus_node_label'])
        try:
            found, reporting = gh.xids_by_node(prometheus.query(p, promql), p['prometheus_node_label'],
                                               p['ignored_xids'])
        except ValueError as exc:
            raise InputError('prometheus_url %s: %s; nothing was changed' % (p['prometheus_url'], exc))
        self.dcgm = {'url': p['prometheus_url'], 'query': promql, 'reporting': sorted(reporting)}
        return found

    def dra(self):
        """With ``dra_device_taints``: {'slices', 'rules' (ours), 'effect', 'version'} (None without); InputError
        when the cluster serves no DeviceTaintRule API."""
        if not self.params.get('dra_device_taints'):
            return None
        for version in ghd.RULE_VERSIONS:
            try:
                rules = self.conn.call(self.conn.custom.list_cluster_custom_object, ghd.GROUP, version, ghd.RULES,
                                       label_selector=ghd.NODE_LABEL).get('items', [])
            except Exception as exc:
                if status_of(exc) == 404:
                    continue
                raise
            slices = self.conn.call(self.conn.custom.list_cluster_custom_object, ghd.GROUP, 'v1',
                                    dra_names.RESOURCE_SLICES,
                                    field_selector='%s=%s' % (dra_names.SLICE_DRIVER_FIELD, dra_names.DRIVER))
            self.dra_version = version
            return {'slices': slices.get('items', []), 'rules': rules, 'version': version,
                    'effect': self.params['dra_taint_effect']}
        raise InputError(ghd.not_served_message())

    def read(self):
        """(GPU nodes, Node Events, GPUs reporting an XID by node or None, the DRA view or None): Prometheus first,
        so a bad URL fails before anything else is read."""
        xids = self.xids()
        dra = self.dra()
        nodes = self.conn.call(self.conn.core.list_node, label_selector=self.params['label_selector']).get('items', [])
        names = set(self.params['nodes'] or [])
        missing = names - set(meta_of(n).get('name') for n in nodes)
        if missing:
            raise InputError('node(s) %s: not found among the nodes of label_selector %r'
                             % (', '.join(sorted(missing)), self.params['label_selector']))
        if names:
            nodes = [n for n in nodes if meta_of(n).get('name') in names]
        events = []
        if self.params['window_minutes']:
            events = self.conn.call(self.conn.core.list_event_for_all_namespaces,
                                    field_selector='involvedObject.kind=Node').get('items', [])
        return nodes, events, xids, dra

    def plan(self, nodes, events, xids, dra=None):
        p = self.params
        try:
            planned = gh.plan(nodes, events, p['policy'], time.time(), now_iso(), p['window_minutes'],
                              p['event_reasons'], p['taint'], p['max_nodes'], xids, dra)
        except ValueError as exc:
            raise InputError(str(exc))
        if xids is not None:
            self.dcgm['missing'] = sorted(set(i['name'] for i in planned['nodes']) - set(self.dcgm['reporting']))
            if self.dcgm['missing']:
                self.api.warn('no %s series in Prometheus for GPU node(s) %s (by the label %s): their XIDs are not '
                              'known; is the DCGM exporter running there and scraped, and does prometheus_node_label '
                              'name the label that holds the node name?' % (gh.XID_METRIC, ', '.join(
                                  self.dcgm['missing']), p['prometheus_node_label']))
        return planned

    def pods_to_move(self, name, pdbs):
        """(refs of the GPU pods the drain would evict, {ref: blocking PDBs})."""
        pods = dr.selected_pods(self.api.node_pods(name), self.params['pod_selector'])
        blocking = dict((_pod_ref(p), dr.blocking_pdbs(p, pdbs)) for p in pods)
        return [_pod_ref(p) for p in pods], dict((k, v) for k, v in blocking.items() if v)

    def write_rules(self, action):
        """Create or replace, then delete, the action's DeviceTaintRules (fenced like every write)."""
        for body in action.get('rules_write') or []:
            self.api._proof()
            name, version = body['metadata']['name'], body['apiVersion'].split('/')[-1]
            current = self.conn.call_or_none(self.conn.custom.get_cluster_custom_object, ghd.GROUP, version,
                                             ghd.RULES, name)
            if current is None:
                self.conn.call(self.conn.custom.create_cluster_custom_object, ghd.GROUP, version, ghd.RULES, body)
            else:
                body = dict(body, metadata=dict(body['metadata'], resourceVersion=current['metadata'].get(
                    'resourceVersion')))
                self.conn.call(self.conn.custom.replace_cluster_custom_object, ghd.GROUP, version, ghd.RULES, name,
                               body)
        for name in action.get('rules_delete') or []:
            self.api._proof()
            self.conn.call_or_none(self.conn.custom.delete_cluster_custom_object, ghd.GROUP,
                                   self.dra_version, ghd.RULES, name)
        return bool(action.get('rules_write') or action.get('rules_delete'))

    def write(self, action, node):
        changed = self.write_rules(action)
        patch = gh.node_patch(action)
        if patch is None:
            return changed
        if 'taints' in (patch.get('spec') or {}):
            patch['metadata']['resourceVersion'] = meta_of(node).get('resourceVersion')
        self.api.patch_node(action['node'], patch)
        words = 'quarantined: %s' % action['reason'] if action['action'] == 'quarantine' else 'returned to service'
        if action.get('mode') == 'devices':
            words += ' (DeviceTaintRules: %s)' % ', '.join(
                [b['metadata']['name'] for b in action['rules_write']] + action['rules_delete'])
        self.api.event(node, 'GpuopsGpuHealth', 'gpu_health %s' % words, warning=action['action'] == 'quarantine')
        return True

    def drain(self, node):
        """Move the GPU pods off; (evicted refs, failure or None)."""
        opts = dict((k, self.params[k]) for k in ('drain_timeout', 'grace_period', 'force', 'pod_selector'))
        st = {'evicted': [], 'changed': False}
        deadline = self.waiter.deadline(opts['drain_timeout'])
        while True:
            done, failure = dr.drain(self.api, node, st, deadline, opts)
            if done or failure:
                return st['evicted'], failure
            self.waiter.pause()


def _input_errors(params):
    errors = []
    if params['drain_timeout'] < 0:
        errors.append('drain_timeout must be >= 0 seconds, not %s' % params['drain_timeout'])
    if params['grace_period'] is not None and params['grace_period'] < 0:
        errors.append('grace_period must be >= 0 seconds, not %s' % params['grace_period'])
    errors.extend(prometheus.url_errors(params))
    if params.get('dra_taint_effect') not in ghd.EFFECTS:
        errors.append('dra_taint_effect must be one of %s, not %r' % (', '.join(ghd.EFFECTS), params.get('dra_taint_effect')))
    if params['poll_interval'] <= 0:
        errors.append('poll_interval must be > 0 seconds, not %s' % params['poll_interval'])
    if not 0 <= params['lock_timeout'] <= 7 * 24 * 3600:
        errors.append('lock_timeout must be between 0 and 604800 seconds (one week), not %s' % params['lock_timeout'])
    if not 10 <= params['lock_duration'] <= MAX_DURATION:
        errors.append('lock_duration must be between 10 and %s seconds, not %s' % (MAX_DURATION, params['lock_duration']))
    return errors + gh.input_errors(params['policy'], params['window_minutes'], params['event_reasons'],
                                    params['max_nodes'], params['ignored_xids'])


def _entry(action, plan_info):
    out = dict((k, action[k]) for k in ('node', 'action', 'reason', 'changed'))
    if action.get('mode') == 'devices':
        out.update(mode='devices', device_taint_rules=[b['metadata']['name'] for b in action['rules_write']],
                   deleted_device_taint_rules=list(action['rules_delete']))
    out.update(plan_info)
    return out


def _moves(job, plan):
    """{node: (pods the drain would evict, {pod: blocking PDBs})} of the nodes to drain (not those quarantined
    device by device)."""
    drained = set(plan['quarantined']) | set(a['node'] for a in plan['actions'] if a['action'] == 'quarantine')
    drained -= set(plan['devices'])
    if job.params['policy'] != 'quarantine' or not job.params['drain']:
        drained = set()
    pdbs = job.api.list_pdbs() if drained else []
    return dict((name, job.pods_to_move(name, pdbs)) for name in sorted(drained))


def _result(job, plan):
    result = {'policy': job.params['policy'], 'unhealthy': plan['unhealthy'], 'skipped': plan['skipped'],
              'nodes': [dict((k, i[k]) for k in ('name', 'unhealthy', 'reasons', 'skipped', 'lost', 'events', 'xids'))
                        for i in plan['nodes']], 'actions': [], 'failed': {}}
    if job.dcgm is not None:
        result['dcgm'] = dict(job.dcgm)
    if job.dra_version is not None:
        result['devices'] = plan['devices']
    result['diff'] = {'before': dict((a['node'], a['before']) for a in plan['actions'] if a['changed']),
                      'after': dict((a['node'], a['after']) for a in plan['actions'] if a['changed'])}
    return result


def _work(plan, moves):
    """The nodes this run writes to (a patch, DeviceTaintRules, or GPU pods to move), sorted."""
    writes = set(a['node'] for a in plan['actions'] if a['changed'] or a.get('rules_write') or a.get('rules_delete'))
    return sorted(writes | set(name for name, (pods, _blocking) in moves.items() if pods))


def _lock(job, work):
    return RolloutLock.for_rollout(job.conn, job.params, 'gpu_health %s of %d node(s)' % (job.params['policy'], len(work)),
                                   work)


def run(conn, params, check_mode):
    errors = _input_errors(params)
    if errors:
        raise InputError('; '.join(errors))
    job = GpuHealthRun(conn, params, check_mode)
    nodes, events, xids, dra = job.read()
    plan = job.plan(nodes, events, xids, dra)
    moves = _moves(job, plan)
    work = _work(plan, moves)
    if check_mode:
        result = _result(job, plan)
        for action in plan['actions']:
            pods, blocking = moves.get(action['node'], ([], {}))
            result['actions'].append(_entry(action, {'would_evict': pods, 'blocking_pdbs': blocking}))
        result['changed'] = bool(work)
        result['lock'] = _lock(job, work).status()
        result['warnings'] = list(job.api.warnings)
        if work and result['lock']['state'] == 'held':
            result['warnings'].append('check mode: the rollout lock is held by %s; a real run would wait lock_timeout '
                                      '(%ss) for it, then fail' % (describe(result['lock']), params['lock_timeout']))
        return result
    if not work:  # nothing to write: no lock (and no read of where it is)
        result = _result(job, plan)
        result['actions'] = [_entry(action, {'evicted': []}) for action in plan['actions']]
        result.update(evicted={}, changed=False, warnings=list(job.api.warnings))
        return result
    lock = _lock(job, work)
    try:
        lock.hold(params['lock_timeout'], min(2.0, max(0.2, params['poll_interval'])))
        job.api.fence = lock.fence  # every node patch and eviction from now on proves the lease is still ours
        nodes, events, xids, dra = job.read()  # the run this one waited for may have changed them
        plan = job.plan(nodes, events, xids, dra)
        moves = _moves(job, plan)
        result = _result(job, plan)
        return _apply(job, plan, dict((meta_of(n).get('name'), n) for n in nodes), moves, result)
    finally:
        job.api.fence = None
        job.api.warnings.extend(lock.let_go())


def _apply(job, plan, by_name, moves, result):
    """The writes and the drains under the lock; a LockLost (the fence) leaves with what was done so far."""
    try:
        return _writes(job, plan, by_name, moves, result)
    except LockLost as exc:
        exc.result = dict(result, changed=bool(result.get('changed')), warnings=job.api.warnings)
        raise


def _writes(job, plan, by_name, moves, result):
    changed = False
    for action in plan['actions']:
        changed = job.write(action, by_name[action['node']]) or changed
        result['actions'].append(_entry(action, {}))
        result['changed'] = changed
    evicted = {}
    for name in sorted(moves):
        if not moves[name][0]:
            continue
        evicted[name], failure = job.drain(by_name[name])
        changed = changed or bool(evicted[name])
        result['changed'] = changed
        if failure:
            result['failed'][name] = failure
    for entry in result['actions']:
        entry['evicted'] = evicted.get(entry['node'], [])
    result['evicted'] = evicted
    result['changed'] = changed
    result['warnings'] = job.api.warnings  # the lock's (a stale lease taken over) are added when it is let go
    if result['failed']:
        raise GpuOpsError('could not move the GPU pods off %s' % '; '.join(
            '%s: %s' % item for item in sorted(result['failed'].items())), dict(result, changed=changed))
    return result
