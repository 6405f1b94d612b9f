# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""gpuops.gpu.driver_upgrade against the cluster: read the ClusterPolicy, the nodes, the pods and the
PodDisruptionBudgets, plan with plans/driver_upgrade.py; in check mode return the plan. Otherwise, under the
rollout lock (rollout/lock.py), set the target and the policy on the ClusterPolicy (ops/cluster_policy.py:
server-side dry run first), retry the nodes the operator left ``upgrade-failed`` the way NVIDIA documents
(the GPU pods evicted through rollout/drain.py, PodDisruptionBudgets honoured, then the driver pod deleted),
and follow every node through the operator's states until ``upgrade-done``, writing the progress file the
action plugin prints (rollout/progress.py). A node ``upgrade-failed``, or stuck in one state past
``state_timeout``, stops the run with the node, its state, the operator's reason (its Events) and the
driver pod's status; with ``on_failure: pause`` the operator's upgrades are switched off first
(``autoUpgrade: false``), and a re-run switches them on again and resumes."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import time

from ansible_collections.gpuops.gpu.plugins.module_utils.common.errors import InputError, RolloutFailed
from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import NVIDIA_DRIVER
from ansible_collections.gpuops.gpu.plugins.module_utils.common.objects import labels_of, meta_of, name_of
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.node import pod_key
from ansible_collections.gpuops.gpu.plugins.module_utils.k8s.runner import ModuleRun
from ansible_collections.gpuops.gpu.plugins.module_utils.ops import cluster_policy as ops_cp
from ansible_collections.gpuops.gpu.plugins.module_utils.plans import driver_pools as dp
from ansible_collections.gpuops.gpu.plugins.module_utils.plans import driver_upgrade as du
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.rollout_summary import duration_words
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout import drain as dr
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.api import RolloutApi
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.inputs import option_errors, refuse
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.lock import RolloutLock, lock_namespace
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.progress import Progress, utc_iso

ACTIVE = 'status.phase!=Succeeded,status.phase!=Failed'
NODE_KEYS = ('node', 'from', 'to', 'image_from', 'image_to', 'phase', 'changed', 'state', 'evicted', 'retried',
             'duration_s', 'timeline', 'states', 'reason', 'driver_pod')


class DriverUpgradeRun(ModuleRun):
    """One run of the module: reads, the plan, the writes and the follow loop."""

    def __init__(self, conn, params, check_mode, **kwargs):
        super(DriverUpgradeRun, self).__init__(conn, params, check_mode, **kwargs)
        self.api = RolloutApi(conn)
        self.progress = Progress(params.get('progress_file'), 'driver', params.get('progress_timeout'),
                                 phase_words=du.PHASE_WORDS)
        self.since = utc_iso()
        self.lock = None
        self.namespace = None
        self.pool = params.get('driver_pool')
        self.daemonsets = []

    # ------------------------------------------------------------------ reads
    def read(self):
        """The planner's request (everything but target and policy)."""
        policy = ops_cp.read_cluster_policy(self.conn, self.params.get('cluster_policy'))
        self.namespace = ((policy or {}).get('status') or {}).get('namespace') or self.params['operator_namespace']
        pods = self.conn.call(self.conn.core.list_pod_for_all_namespaces, field_selector=ACTIVE).get('items', [])
        request = {'cluster_policy': policy, 'nodes': self.api.list_nodes(), 'pods': pods, 'pdbs': self.api.list_pdbs(),
                   'nvidia_drivers': [], 'daemonsets': []}
        if dp.uses_nvidia_drivers(policy) or self.pool:
            request['nvidia_drivers'] = self.conn.call(self.conn.custom.list_cluster_custom_object,
                                                       *NVIDIA_DRIVER).get('items', [])
            self.daemonsets = request['daemonsets'] = self.conn.call(
                self.conn.apps.list_namespaced_daemon_set, self.namespace,
                label_selector='%s=%s' % du.COMPONENT_LABEL).get('items', [])
        return request

    def driver_pods(self):
        """The driver pods of the ClusterPolicy's driver, or of the NVIDIADriver ``driver_pool``."""
        label = du.COMPONENT_LABEL if self.pool else du.DRIVER_POD_LABEL
        pods = self.conn.call(self.conn.core.list_namespaced_pod, self.namespace,
                              label_selector='%s=%s' % label).get('items', [])
        return dp.pool_pods(pods, self.daemonsets, self.pool) if self.pool else pods

    def events(self):
        """The operator's upgrade Events on nodes (best effort: [] when they cannot be read)."""
        try:
            return self.conn.call(self.conn.core.list_event_for_all_namespaces,
                                  field_selector='involvedObject.kind=Node,reason=%s' % du.EVENT_REASON).get('items', [])
        except Exception as exc:  # events only explain; the run goes on without them
            self.api.warn('could not read the operator\'s upgrade Events: %s' % getattr(exc, 'reason', exc))
            return []

    def gpu_pods(self, name):
        return set(pod_key(p) for p in self.api.node_pods(name) if du.operator_gpu_pod(p))

    # ------------------------------------------------------------------ writes
    def patch_policy(self, name, patch):
        """The target and the policy on the ClusterPolicy (server-side dry run first); the result of
        gpuops.gpu.cluster_policy's apply."""
        params = {'name': name, 'overrides': patch, 'state': 'patched', 'replace': False, 'wait': False,
                  'tolerations': None, 'alm_examples': None, 'base': None, 'poll_interval': 1}
        if not self.check_mode and self.api.fence is not None:
            self.api.fence()
        return ops_cp.PolicyApply(self.conn, params, self.check_mode).run()

    def patch_nvidia_driver(self, spec):
        """The target on the NVIDIADriver ``driver_pool`` (a server-side dry run first: the CRD's rules)."""
        if self.api.fence is not None:
            self.api.fence()
        for dry_run in ({'dry_run': 'All'}, {}):
            self.conn.call(self.conn.custom.patch_cluster_custom_object, *(NVIDIA_DRIVER + (self.pool, {'spec': spec})),
                           field_manager='gpuops.gpu', field_validation='Strict', **dry_run)

    def pause(self, name, nodes):
        """The documented switch: autoUpgrade false. Marks first the nodes the operator cordoned for the upgrade
        (it removes every state label then, and would take them for nodes a user cordoned)."""
        for node in du.paused_annotations(nodes):
            self.api.patch_node(node, {'metadata': {'annotations': {du.ANN_PAUSED_CORDONED: 'true'},
                                                    'labels': {du.LABEL_PAUSED_CORDONED: 'true'}}})
        self.patch_policy(name, {'driver': {'upgradePolicy': {'autoUpgrade': False}}})

    def retry(self, node, pod, st):
        """NVIDIA's recovery of an ``upgrade-failed`` node (k8s-operator-libs docs/automatic-ofed-upgrade.md,
        "Node is in upgrade-failed state"): move its GPU pods off (Eviction API, PodDisruptionBudgets honoured,
        ``drain_timeout``), then delete its driver pod; the DaemonSet starts the new driver and the operator
        moves the node on once it is ready. Returns None, or why the pods could not be moved."""
        opts = {'drain_timeout': self.params['drain_timeout'], 'grace_period': self.params.get('grace_period'),
                'force': False, 'pod_selector': None}
        deadline = self.waiter.deadline(opts['drain_timeout'])
        self.progress.message('%s: upgrade-failed before this run: moving its GPU pods off, then restarting its driver '
                              'pod (NVIDIA\'s documented recovery)' % name_of(node))
        while True:
            done, failure = dr.drain(self.api, node, st, deadline, opts)
            if failure:
                return failure
            if done:
                break
            self.waiter.pause()
        if pod is not None and not meta_of(pod).get('deletionTimestamp'):
            self.api.delete_pod(name_of(pod), meta_of(pod).get('namespace'))
            self.api.event(node, 'GpuopsDriverRetry', 'restarted driver pod %s to retry the driver upgrade'
                           % name_of(pod))
        st['retried'] = True
        return None

    def uncordon_paused(self, node):
        """A node this collection marked when it paused the upgrade: the operator has finished it; uncordon it
        (only while it is still cordoned) and drop the mark: removing its label wakes the operator, which gives the
        slot the cordon held to the next node at once."""
        patch = {'metadata': {'annotations': {du.ANN_PAUSED_CORDONED: None}}}
        if du.LABEL_PAUSED_CORDONED in labels_of(node):
            patch['metadata']['labels'] = {du.LABEL_PAUSED_CORDONED: None}
        if (node.get('spec') or {}).get('unschedulable'):
            patch['spec'] = {'unschedulable': False}
        self.api.patch_node(name_of(node), patch)
        return 'spec' in patch


def _input_errors(params):
    errors = option_errors(dict(params, operator_namespace=params.get('operator_namespace') or 'nvidia-gpu-operator'))
    if not 1 <= params['state_timeout'] <= 7 * 24 * 3600:
        errors.append('state_timeout must be between 1 and 604800 seconds, got %s' % params['state_timeout'])
    return errors


def run(conn, params, check_mode):
    refuse(_input_errors(params))
    job = DriverUpgradeRun(conn, params, check_mode)
    request = job.read()
    request.update(target={'version': params.get('version'), 'repository': params.get('repository'),
                           'image': params.get('image')}, policy=params.get('policy'))
    plan = dp.plan(request, job.pool)
    if plan['errors']:
        raise InputError('nothing was changed; fix these first: ' + ' | '.join(plan['errors']),
                         {'plan_lines': dp.plan_lines(plan), 'warnings': plan['warnings']})
    policy_name = name_of(request['cluster_policy'])
    nodes = dict((name_of(n), n) for n in request['nodes'])
    paused = sorted(e['node'] for e in plan['nodes']
                    if du.ANN_PAUSED_CORDONED in (meta_of(nodes[e['node']]).get('annotations') or {}))
    result = {'target_image': plan['target_image'], 'cluster_policy': policy_name, 'driver_pool': job.pool,
              'policy': plan['policy'], 'batch_size': plan['batch_size'], 'plan': plan['batches'],
              'plan_lines': dp.plan_lines(plan),
              'upgrade': plan['upgrade'], 'skipped_nodes': plan['skipped'], 'warnings': list(plan['warnings']),
              'diff': _diff(request, plan, job.pool)}
    if check_mode:
        job.namespace = lock_namespace(conn, dict(params, operator_namespace=job.namespace))
        result['lock'] = RolloutLock(conn, job.namespace, holder=params.get('lock_holder'),
                                     joined=bool(params.get('lock_holder'))).status()
        result['changed'] = plan['changes'] or bool(paused)
        result['nodes'] = []
        return result
    if not plan['changes'] and not paused:
        result.update(changed=False, nodes=[], untouched=[])
        return result
    return _apply(job, plan, request, nodes, paused, result)


def _diff(request, plan, pool):
    """Before and after: the ClusterPolicy's driver, and the NVIDIADriver's target when it is a pool's."""
    out = {'before': {'driver': _driver_view(request['cluster_policy'])},
           'after': {'driver': _driver_view(request['cluster_policy'], plan['patch'])}}
    if pool:
        spec = next((d.get('spec') or {}) for d in request['nvidia_drivers'] if name_of(d) == pool)
        before = dict((k, spec.get(k)) for k in dp.TARGET_KEYS)
        out['before']['nvidia_driver'] = {pool: before}
        out['after']['nvidia_driver'] = {pool: dict(before, **plan['driver_patch'])}
        for side in ('before', 'after'):
            out[side]['driver'] = {'upgradePolicy': out[side]['driver']['upgradePolicy']}
    return out


def _driver_view(policy, patch=None):
    driver = ((policy or {}).get('spec') or {}).get('driver') or {}
    view = dict((k, driver.get(k)) for k in ('repository', 'image', 'version'))
    view['upgradePolicy'] = dict(driver.get('upgradePolicy') or {})
    for key, value in ((patch or {}).get('driver') or {}).items():
        if key == 'upgradePolicy':
            for sub, sub_value in value.items():
                view['upgradePolicy'][sub] = dict(view['upgradePolicy'].get(sub) or {}, **sub_value) \
                    if isinstance(sub_value, dict) else sub_value
        else:
            view[key] = value
    return view


def _apply(job, plan, request, nodes, paused, result):
    params = job.params
    started = time.monotonic()
    entries = dict((e['node'], e) for e in plan['nodes'])
    follow = sorted(set(plan['upgrade']) | set(n for n in paused if n in entries))
    purpose = 'driver upgrade to %s' % params['version'] + (' (NVIDIADriver %s)' % job.pool if job.pool else '')
    job.lock = RolloutLock.for_rollout(job.conn, dict(params, operator_namespace=job.namespace), purpose, follow,
                                       log=job.progress.message)
    job.lock.hold(params.get('lock_timeout') or 0, min(2.0, max(0.2, params['poll_interval'])))
    job.api.fence = job.lock.fence
    states = dict((n, _node_result(entries[n], job.gpu_pods(n))) for n in follow)
    result.update(changed=False, nodes=[states[n] for n in follow], untouched=[])
    try:
        job.progress.start(job.conn.cluster_name(), len(follow))
        job.progress.batch(1, 1, follow)
        job.progress.message('driver upgrade of %d node(s) to %s (%s)%s' % (
            len(follow), ', '.join(plan['target_image']), du.describe_policy(plan['policy']),
            '; resuming after a pause: %s' % ', '.join(paused) if paused else ''))
        if plan['patch']:
            job.patch_policy(name_of(request['cluster_policy']), plan['patch'])
            result['changed'] = True
            job.progress.message('ClusterPolicy %s: set %s' % (
                name_of(request['cluster_policy']), du.flat(plan['patch']['driver'], 'driver')))
        if plan['driver_patch']:
            job.patch_nvidia_driver(plan['driver_patch'])
            result['changed'] = True
            job.progress.message('NVIDIADriver %s: set %s' % (job.pool, du.flat(plan['driver_patch'], 'spec')))
        drivers = du.driver_pods_by_node(dp.pool_pods(request['pods'], job.daemonsets, job.pool) if job.pool
                                         else request['pods'])
        for name in follow:
            if du.node_state(nodes[name]) != du.FAILED or not params['retry_failed']:
                continue
            if du.at_target(drivers.get(name), states[name]['image_to']):  # fixed: the operator moves it on
                states[name]['retried'] = True
                continue
            why = job.retry(nodes[name], drivers.get(name), states[name])
            if why:
                states[name].update(phase='failed', reason='upgrade-failed, and moving its GPU pods off for a retry '
                                    'failed: %s' % why)
                _stop(job, result, states, [name], request)
        _follow(job, result, states, follow, request)
    finally:
        job.api.warnings.extend(job.lock.let_go())
        result['warnings'].extend(w for w in job.api.warnings if w not in result['warnings'])
        result['duration_s'] = round(time.monotonic() - started, 2)
        result['api_requests'] = job.conn.requests
    return result


def _node_result(entry, gpu_pods):
    return {'node': entry['node'], 'from': entry['from'], 'to': entry['to'], 'image_from': entry['image_from'],
            'image_to': entry['image_to'], 'phase': 'planned', 'changed': True, 'state': entry['state'],
            'evicted': [], 'retried': False, 'duration_s': 0.0, 'timeline': {}, 'states': [], 'reason': None,
            'driver_pod': entry['driver_pod'], 'gpu_pods': sorted(gpu_pods), '_since': time.monotonic(),
            '_entered': time.monotonic()}


def _follow(job, result, states, follow, request):
    """Poll the nodes and their driver pods until every followed node is done, or one fails or is stuck."""
    params = job.params
    timeout = params['state_timeout']
    last_move = time.monotonic()
    while True:
        events = job.events()  # before the nodes: an Event never names a state the node read after it has not
        nodes = dict((name_of(n), n) for n in job.api.list_nodes())
        drivers = du.driver_pods_by_node(job.driver_pods())
        moved = False
        for name in follow:
            st, node = states[name], nodes.get(name)
            if node is None:
                st.update(phase='gone', reason='node deleted during the upgrade')
                continue
            moved = _observe(job, st, node, drivers.get(name), events) or moved
        if moved:
            last_move = time.monotonic()
        job.progress.nodes(dict((n, {'phase': states[n]['phase'], 'reason': states[n].get('reason')}) for n in follow))
        if all(states[n]['phase'] in ('done', 'gone') for n in follow):
            _finish(job, result, states, follow, nodes)
            return
        now = time.monotonic()
        failed = [n for n in follow if states[n]['state'] == du.FAILED and states[n]['phase'] != 'done'
                  and not (states[n]['retried'] and now - states[n]['_entered'] < timeout)]
        stuck = [n for n in follow if states[n]['phase'] not in ('done', 'gone', 'failed')
                 and states[n]['state'] in du.IN_PROGRESS and now - states[n]['_entered'] > timeout]
        if not failed and not stuck and now - last_move > timeout:
            stuck = [n for n in follow if states[n]['phase'] not in ('done', 'gone')]
        for name in failed + stuck:
            st = states[name]
            what = ('is upgrade-failed' if name in failed else 'has been %s for %s (state_timeout %ss)' % (
                st['state'] or 'without a state', duration_words(now - min(st['_entered'], last_move)), timeout))
            st.update(phase='failed', reason='%s: %s' % (what, du.operator_reason(events, name, job.since)))
        if failed or stuck:
            _stop(job, result, states, failed + stuck, request, nodes)
        job.waiter.pause()


def _observe(job, st, node, pod, events):
    """Record what the node shows now: its state (and, from the operator's Events, the states it passed
    between two polls), whether its driver runs the target; True when it moved. ``upgrade-done`` counts only
    once the node's driver pod runs the target and is ready (before, it is the old driver's)."""
    state, name = du.node_state(node), name_of(node)
    done = du.node_done(node, pod, st['image_to'])
    st['driver_pod'] = du.pod_words(pod)
    st['states'], passed = du.merge_states(st['states'], du.event_states(events, name, job.since), state, utc_iso(),
                                           done)
    for entered in passed:
        job.progress.message('%s: %s' % (name, entered))
    moved = bool(passed)
    if state != st['state']:
        st['state'], st['_entered'], moved = state, time.monotonic(), True
    phase = du.phase_of(state, done)
    if phase == 'failed' and st['retried']:
        phase = 'retrying'
    st['phase'] = phase
    if done and du.ANN_PAUSED_CORDONED in (meta_of(node).get('annotations') or {}):
        # at once: cordoned, it would hold a slot of maxUnavailable the other nodes wait for
        if job.uncordon_paused(node):
            job.progress.message('%s: uncordoned (the operator had cordoned it before the pause, and took it for a '
                                 'node cordoned by hand)' % name)
            st['states'].append(('uncordoned-after-pause', utc_iso()))
    return moved


def _finish(job, result, states, follow, nodes):
    for name in follow:
        _close(job, states[name])
        result['changed'] = True
    job.progress.nodes(dict((n, {'phase': states[n]['phase']}) for n in follow), force=True)
    job.progress.message('driver upgrade done: %d node(s) at %s' % (
        sum(1 for n in follow if states[n]['phase'] == 'done'), ', '.join(result['target_image'])))


def _close(job, st):
    """The node's end: the GPU pods gone from it, its timeline, its duration."""
    now_pods = job.gpu_pods(st['node']) if st['phase'] != 'gone' else set()
    st['evicted'] = sorted(set(st['evicted']) | (set(st.pop('gpu_pods', [])) - now_pods))
    st['states'] = [list(pair) for pair in st['states']]
    st['timeline'] = du.timeline_events(st['states'])
    if st['timeline'] and 'started' not in st['timeline']:
        st['timeline']['started'] = min(st['timeline'].values())
    st['duration_s'] = round(time.monotonic() - st.pop('_since'), 2)
    st.pop('_entered', None)


def _stop(job, result, states, held, request, nodes=None):
    """End the run on the ``held`` nodes: pause the operator's upgrades when asked, then fail with every reason."""
    params = job.params
    nodes = nodes or dict((name_of(n), n) for n in job.api.list_nodes())
    drivers = du.driver_pods_by_node(job.driver_pods())
    lines = []
    for name in held:
        states[name]['driver_pod'] = du.pod_words(drivers.get(name))
        lines.append('node %s (state %s): %s; driver pod: %s' % (
            name, states[name]['state'] or '-', states[name]['reason'], states[name]['driver_pod']))
        job.progress.message('%s held: %s' % (name, states[name]['reason']))
    job.progress.nodes(dict((n, {'phase': st['phase'], 'reason': st.get('reason')}) for n, st in states.items()),
                       force=True)
    paused = params['on_failure'] == 'pause'
    if paused:
        job.pause(name_of(request['cluster_policy']), list(nodes.values()))
        job.progress.message('paused the operator\'s driver upgrades (ClusterPolicy driver.upgradePolicy.autoUpgrade: '
                             'false); the next run switches them on again and resumes')
    for name, st in sorted(states.items()):
        if st['phase'] not in ('done', 'gone', 'failed') and st['state'] in ('', du.REQUIRED):
            result['untouched'].append(name)
        if '_since' in st:
            _close(job, st)
    result.update(changed=True, paused=paused)
    result['warnings'].extend(w for w in job.api.warnings if w not in result['warnings'])
    raise RolloutFailed('driver upgrade held: %s. %s' % (' | '.join(lines), (
        'The operator\'s upgrades are paused (autoUpgrade false); fix the cause and run again to resume'
        if paused else 'The operator keeps its upgrade where it is; fix the cause and run again to resume '
        '(an upgrade-failed node is retried: its GPU pods moved off, its driver pod restarted)')), result)
