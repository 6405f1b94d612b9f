# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""gpuops.gpu.dra_window against the cluster: the GPU operator v26.7's cluster-wide change between the ClusterPolicy
(device plugin) and the GPUCluster (DRA), as rollout/stack_window.py plans it.

Read everything and refuse before any write; in check mode return the plan. Otherwise, under the rollout lock:
save the ClusterPolicy (to DRA), cordon and drain every GPU node batch by batch (the nodes carry the rollout
markers of rollout/node.py, so a killed run is resumed and only the nodes the window cordoned are uncordoned), stop
before the switch when a node cannot be drained, switch the operator's resource, wait until every node is served
by the new stack (rollout/stack_kind.py served_verdict), uncordon. A node not served by ``state_timeout`` stays
cordoned with the reason."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import time

try:
    from kubernetes.client.rest import ApiException
except ImportError:  # pragma: no cover - the module reports the missing library
    ApiException = Exception

from ansible_collections.gpuops.gpu.plugins.module_utils.common.errors import (
    InputError, RolloutFailed, api_error_message, status_of)
from ansible_collections.gpuops.gpu.plugins.module_utils.common.objects import annotations_of, labels_of, name_of
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import dra
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import node as gn
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.node import pod_key
from ansible_collections.gpuops.gpu.plugins.module_utils.k8s.runner import ModuleRun
from ansible_collections.gpuops.gpu.plugins.module_utils.ops import cluster_policy as ops_cp
from ansible_collections.gpuops.gpu.plugins.module_utils.plans import gpucluster as gc
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout import drain as dr
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout import stack_window as sw
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.api import RolloutApi, SliceReader
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.batches import plan_batches
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.dra_cutover import active_pods_and_classes
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.inputs import finish_result, option_errors, refuse
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.lock import RolloutLock, lock_namespace
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.node import (
    ANN_TARGET, NodeSteps, held_elsewhere, not_ready_errors, target_marker)
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.progress import Progress
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.stack_kind import (
    DRA, StackKind, extended_resource_classes, served_verdict, workload_plan)

GPUCLUSTER = tuple(gc.API_VERSION.split('/')) + ('gpuclusters',)


class WindowKind(object):
    """What rollout/node.py's NodeSteps needs of a kind for the window's cordon, hold and uncordon."""

    label = dra.WINDOW_MARKER
    name = 'window'


WINDOW = WindowKind()


class WindowRun(ModuleRun):
    """One run: the reads, the writes and the waits."""

    def __init__(self, conn, params, check_mode):
        super(WindowRun, self).__init__(conn, params, check_mode)
        self.api = RolloutApi(conn)
        self.progress = Progress(params.get('progress_file'), 'window', params.get('progress_timeout'))
        self.steps = NodeSteps(self.api, WINDOW, dict(params, verify=False), self.waiter, self.progress.message)
        self.slices = SliceReader(conn, ttl=params['poll_interval'] / 2.0)
        self.namespace = params['operator_namespace']
        self.started = time.monotonic()

    # ------------------------------------------------------------------ reads
    def read(self):
        policies, _served = ops_cp.list_policies(self.conn)
        listed = self.conn.call_or_none(self.conn.custom.list_cluster_custom_object, *GPUCLUSTER)
        slices = self.slices.list()
        self.slices.fill(slices)
        saved_secret = self.conn.call_or_none(self.conn.core.read_namespaced_secret, sw.SAVED_NAME, self.namespace)
        saved, saved_error = sw.read_saved(saved_secret)
        nodes = dict((name_of(n), n) for n in self.api.list_nodes()
                     if labels_of(n).get(gn.LABEL_PRESENT) == 'true')
        return {'policies': policies, 'gpuclusters': None if listed is None else listed.get('items') or [],
                'slices_served': slices not in (403, 404), 'saved': saved, 'saved_error': saved_error,
                'nodes': nodes}

    def workloads(self, batches, stack_from):
        """The check-mode plan (per batch, the pods each node loses), the GPU workloads of the nodes and whether they
        stay schedulable (stack_kind.workload_plan), the DeviceClasses that serve an extended resource now."""
        pods, classes = active_pods_and_classes(self.conn)
        by_node = {}
        for pod in pods:
            by_node.setdefault((pod.get('spec') or {}).get('nodeName'), []).append(pod)
        plan = [{'batch': index + 1, 'nodes': [
            {'node': n, 'from': stack_from, 'to': self.params['stack'], 'pods_to_evict': sorted(
                pod_key(p) for p in dr.selected_pods(by_node.get(n, []), self.params.get('pod_selector')))}
            for n in batch]} for index, batch in enumerate(batches)]
        nodes = sorted(n for b in batches for n in b)
        groups = workload_plan([{'group': 'all GPU nodes', 'stack': self.params['stack'], 'nodes': nodes}], pods,
                               classes)
        return plan, groups, sorted(extended_resource_classes(classes).values())

    # ------------------------------------------------------------------ writes
    def fenced(self):
        if self.api.fence is not None:
            self.api.fence()

    def save(self, policy):
        """The saved copy of the ClusterPolicy, replaced when one is there already."""
        self.fenced()
        body = sw.saved_secret(policy, self.namespace)
        if self.conn.call_or_none(self.conn.core.read_namespaced_secret, sw.SAVED_NAME, self.namespace) is None:
            self.conn.call(self.conn.core.create_namespaced_secret, self.namespace, body)
        else:
            self.conn.call(self.conn.core.replace_namespaced_secret, sw.SAVED_NAME, self.namespace, body)
        self.progress.message('saved ClusterPolicy %s to Secret %s/%s'
                              % (name_of(policy), self.namespace, sw.SAVED_NAME))

    def apply_gpucluster(self, definition, dry_run=False):
        """Create the GPUCluster, or set its spec (``dry_run``: a server-side dry run only, the CRD's schema and
        rules); False when it is as defined already."""
        current = self.conn.call_or_none(self.conn.custom.get_cluster_custom_object, *(GPUCLUSTER + (gc.NAME,)))
        if current is not None and current.get('spec') == definition.get('spec'):
            return False
        kwargs = dict(field_manager='gpuops.gpu', field_validation='Strict', **({'dry_run': 'All'} if dry_run else {}))
        if not dry_run:
            self.fenced()
        if current is None:
            self.conn.call(self.conn.custom.create_cluster_custom_object, *(GPUCLUSTER + (definition,)), **kwargs)
        else:
            self.conn.call(self.conn.custom.patch_cluster_custom_object,
                           *(GPUCLUSTER + (gc.NAME, {'spec': definition['spec']})), **kwargs)
        if not dry_run:
            self.progress.message('%s GPUCluster %s' % ('created' if current is None else 'updated', gc.NAME))
        return True

    def dry_run(self, restore):
        """What the switch writes, tried on the API server before anything is written (InputError when refused):
        the GPUCluster to DRA, the saved ClusterPolicy back."""
        what = 'GPUCluster %s' % gc.NAME if self.params['stack'] == DRA else 'the saved ClusterPolicy'
        try:
            if self.params['stack'] == DRA:
                self.apply_gpucluster(self.params['gpucluster'], dry_run=True)
            elif restore is not None:
                ops_cp.restore_policy(self.conn, restore, dry_run=True)
        except ApiException as exc:
            if status_of(exc) not in (400, 409, 422):  # not a refusal of the object itself
                raise
            raise InputError('nothing was changed: the API server refuses %s (server-side dry run): %s'
                             % (what, api_error_message(exc)))

    def delete(self, what, delete, exists):
        """``delete()`` an object and wait until ``exists()`` is False (the operator's finalizer); False when it was
        not there."""
        self.fenced()
        if not delete():
            return False
        self.progress.message('deleted %s; waiting until it is gone' % what)

        def still_there():
            raise RolloutFailed('%s is still there %ss after its deletion (a finalizer?); the nodes stay cordoned: '
                                'run again once it is gone' % (what, self.params['state_timeout']))
        return self.waiter.until(lambda: None if exists() else True, self.params['state_timeout'], still_there)

    # ------------------------------------------------------------------ the window
    def drain_batch(self, names, states):
        """Cordon the batch, then evict until each node is drained or failed; the names of the failed ones."""
        deadline = self.waiter.deadline(self.params['drain_timeout'])
        for name in names:
            self.steps.cordon(self.api.get_node(name), self.params['stack'], states[name])
            states[name]['phase'] = 'drain'

        def drained(node, st):
            done, failure = dr.drain(self.api, node, st, deadline, self.params)
            if failure:
                self.steps.fail(node, st, failure)
            elif done:
                st['phase'] = 'drained'
            return done or bool(failure)
        return self._settle(names, states, drained)

    def wait_served(self, names, states):
        """Uncordon each node once the new stack serves it; hold those it does not serve by state_timeout."""
        deadline = self.waiter.deadline(self.params['state_timeout'])

        def served(node, st):
            verdict, detail = served_verdict(node, self.params['stack'], self.slices(st['node']))
            st.update(phase='wait', detail=detail)
            if verdict == 'done':
                self.steps.finish(node, st)
            elif deadline.passed():
                self.steps.fail(node, st, 'not served by the %s stack %ss after the switch: %s'
                                % (self.params['stack'], self.params['state_timeout'], detail))
            return st['phase'] in ('done', 'failed')
        return self._settle(names, states, served)

    def _settle(self, names, states, settled):
        """Read each node every poll_interval and ask ``settled(node, state)`` until it says True for every one;
        the names of the nodes that failed."""
        pending = list(names)
        while pending:
            pending = [n for n in pending if not settled(self.api.get_node(n), states[n])]
            self.progress.nodes(states)
            if pending:
                self.waiter.pause()
        return [n for n in names if states[n]['phase'] == 'failed']


def run(conn, params, check_mode):
    """Validate everything, then run the window. Returns the result dict; raises InputError (nothing written) or
    RolloutFailed (with a partial result)."""
    started = time.monotonic()
    stack = params['stack']
    refuse(option_errors(params))
    job = WindowRun(conn, params, check_mode)
    reads = job.read()
    nodes = reads['nodes']
    policy = reads['policies'][0] if reads['policies'] else None
    marker = target_marker(WINDOW, stack)
    resumed = sorted(n for n, node in nodes.items() if annotations_of(node).get(ANN_TARGET) == marker)
    switch = sw.needs_switch(stack, reads['policies'], reads['gpuclusters'] or [])
    todo = sorted(nodes) if switch or resumed else []
    errors = sw.window_errors(stack, reads, params.get('gpucluster')) + held_elsewhere(WINDOW, nodes, todo)
    errors.extend(not_ready_errors(nodes, todo))
    for name in todo:
        errors.extend(StackKind().validate(nodes[name], stack))
    refuse(errors)
    try:
        batches = plan_batches(todo, params['max_unavailable'], unavailable=[n for n in todo if n in resumed])
    except ValueError as exc:
        raise InputError('nothing was changed: %s' % exc)
    restore = reads['saved'] if stack != DRA and not reads['policies'] else None
    policy_name, restore_name = name_of(policy) if policy else None, name_of(restore) if restore else None
    stack_from = sw.cluster_stack(reads['policies'], reads['gpuclusters'] or [])
    result = {'changed': bool(todo) or switch, 'stack': stack, 'stack_from': stack_from, 'batches': batches,
              'cluster_policy': policy_name or restore_name, 'nodes': [],
              'steps': sw.steps(stack, policy_name, restore_name, todo, batches, job.namespace)
              if todo or switch else [],
              'diff': {'before': {'stack': stack_from}, 'after': {'stack': stack}}}
    if result['changed']:
        job.dry_run(restore)
    if check_mode:
        result['plan'], result['groups'], result['device_classes'] = job.workloads(batches, stack_from)
        result['lock'] = RolloutLock(conn, lock_namespace(conn, params), holder=params.get('lock_holder'),
                                     joined=bool(params.get('lock_holder'))).status()
        return finish_result(result, conn, started, job.api.warnings)
    if not result['changed']:
        for name in sorted(nodes):  # nothing to switch: say which nodes the stack does not serve (nothing written)
            verdict, detail = served_verdict(nodes[name], stack, job.slices(name))
            if verdict != 'done':
                job.api.warn('node %s is not served by the %s stack: %s' % (name, stack, detail))
        return finish_result(result, conn, started, job.api.warnings)
    _apply(job, result, policy, restore, batches)
    return finish_result(result, conn, started, job.api.warnings)


def _apply(job, result, policy, restore, batches):
    params, stack = job.params, job.params['stack']
    todo = sorted(n for b in batches for n in b)
    lock = RolloutLock.for_rollout(job.conn, params, 'GPU stack window to %s' % stack, todo, log=job.progress.message)
    lock.hold(params.get('lock_timeout') or 0, min(2.0, max(0.2, params['poll_interval'])))
    job.api.fence = lock.fence
    states = dict((n, {'node': n, 'from': result['stack_from'], 'to': stack, 'phase': 'cordon', 'changed': False,
                       'evicted': []}) for n in todo)
    result['nodes'] = [states[n] for n in todo]
    job.api.start_events()
    try:
        job.progress.start(job.conn.cluster_name(), len(todo))
        if stack == DRA and policy is not None:
            job.save(policy)
        for index, batch in enumerate(batches):
            job.progress.batch(index + 1, len(batches), batch)
            failed = job.drain_batch(batch, states)
            if failed:
                result['untouched'] = [n for n in todo if states[n]['phase'] == 'cordon']
                raise RolloutFailed('could not drain %s; the switch was not made: the nodes drained so far stay '
                                    'cordoned (run again to resume, or run the window back to %s to undo)'
                                    % (', '.join(failed), 'device-plugin' if stack == DRA else DRA), result)
        _switch(job, policy, restore)
        failed = job.wait_served(todo, states)
        job.progress.finished(len(todo) - len(failed))
        if failed:
            raise RolloutFailed('the switch to %s was made, but %s are not served by it; they stay cordoned with '
                                'the reason (kubectl describe node), the others were uncordoned'
                                % (stack, ', '.join(failed)), result)
    finally:
        for st in states.values():
            st['duration_s'] = round(time.monotonic() - job.started, 2)
        job.api.stop_events()
        job.api.warnings.extend(lock.let_go())
        job.api.fence = None


def _switch(job, policy, restore):
    conn = job.conn
    if job.params['stack'] == DRA:
        if policy is not None:
            name = name_of(policy)
            job.delete('ClusterPolicy %s' % name, lambda: ops_cp.delete_policy(conn, name),
                       lambda: conn.call_or_none(conn.custom.get_cluster_custom_object, *(ops_cp.CLUSTER_POLICY + (name,))))
        job.apply_gpucluster(job.params['gpucluster'])
        return
    args = GPUCLUSTER + (gc.NAME,)
    job.delete('GPUCluster %s' % gc.NAME,
               lambda: conn.call_or_none(conn.custom.delete_cluster_custom_object, *args) is not None,
               lambda: conn.call_or_none(conn.custom.get_cluster_custom_object, *args) is not None)
    if restore is not None:
        job.fenced()
        ops_cp.restore_policy(conn, restore)
        job.progress.message('restored ClusterPolicy %s as saved' % name_of(restore))


__all__ = ['run', 'InputError', 'RolloutFailed']
