# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The per-node state machine of a rollout, and the annotations that make it resumable.

Phases: cordon → drain → label → wait → verify → uncordon → done, or failed from any of them, or
gone (the node was deleted during the rollout).
``NodeSteps.step(node, st, deadlines)`` advances one node as far as it can go without waiting,
from the node as just read; ``st`` is the node's result dict (``phase``, ``changed``,
``evicted``, ``detail``, ...), ``deadlines`` the batch's common.waiter.Deadline per (node, phase).

On the node itself (``gpuops.gpu/`` annotations): the target being applied, the phase reached,
why it failed, and whether this rollout cordoned it (only then is it uncordoned at the end), so a
run killed at any point is finished by the next one.

A node that is NotReady is never started (``not_ready_errors`` refuses it before any write; the
cordon step refuses it again when its batch starts) and never uncordoned as done: one that goes
NotReady during the rollout is held (cordoned, phase failed, with the reason), except while the MIG
manager reports the reboot it asked for.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import time

from ansible_collections.gpuops.gpu.plugins.module_utils.common import names
from ansible_collections.gpuops.gpu.plugins.module_utils.common.objects import annotations_of
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import node as gn
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.dra import DRA_NODE_LABEL, WINDOW_MARKER
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout import drain as dr
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.api import now_iso
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.progress import mark

ANN_TARGET = names.ANN_ROLLOUT_TARGET      # "<label>=<value>" being applied
ANN_PHASE = names.ANN_ROLLOUT_PHASE        # cordoned | labelled | failed
ANN_REASON = names.ANN_ROLLOUT_REASON      # why it failed
ANN_CORDONED = names.ANN_CORDONED_BY_ROLLOUT  # "true" only when this engine cordoned the node
ANN_UPDATED = names.ANN_ROLLOUT_UPDATED
MARKERS = (ANN_TARGET, ANN_PHASE, ANN_REASON, ANN_CORDONED, ANN_UPDATED)
CLEAR_PAUSE = 2.0  # seconds between removing a label and setting it again (a retry)
FINAL = ('done', 'failed', 'gone')


def target_marker(kind, value):
    return '%s=%s' % (kind.label, value)


# the module that drives each label, for the message about a node another rollout holds
_ROLLOUT_MODULES = {gn.LABEL_MIG_CONFIG: 'gpuops.gpu.mig_rollout', gn.LABEL_DP_CONFIG: 'gpuops.gpu.sharing_rollout',
                    DRA_NODE_LABEL: 'gpuops.gpu.dra_cutover', WINDOW_MARKER: 'gpuops.gpu.dra_window'}


def held_elsewhere(kind, nodes_by_name, names):
    """Why ``kind`` must not take the named nodes: another kind's rollout left its markers on them
    (unfinished or failed). Taking such a node over would overwrite its target, phase and reason
    and could uncordon it with the other change unfinished, so it is an input error and the
    markers stay; the other rollout, run again, resumes it."""
    errors = []
    for name in sorted(names):
        ann = annotations_of(nodes_by_name[name])
        label = ann.get(ANN_TARGET, '').partition('=')[0]
        if not label or label == kind.label:
            continue
        reason = ann.get(ANN_REASON)
        module = _ROLLOUT_MODULES.get(label, 'the rollout of %s' % label)
        errors.append('node %s is held by an unfinished %s run (%s=%s, phase %s%s); its markers are kept: run %s '
                      'again to finish it (it resumes the node), then run this one'
                      % (name, module, ANN_TARGET, ann[ANN_TARGET], ann.get(ANN_PHASE) or 'unknown',
                         ', reason: %s' % reason if reason else '', module))
    return errors


def not_ready(node):
    """Why the node is NotReady ('Ready=False: <reason>'), None when Ready or when it reports no Ready
    condition at all (nothing known against it)."""
    for condition in (node.get('status') or {}).get('conditions') or []:
        if condition.get('type') == 'Ready':
            if condition.get('status') == 'True':
                return None
            words = condition.get('reason') or condition.get('message') or 'no reason given'
            return 'Ready=%s: %s' % (condition.get('status') or 'Unknown', words)
    return None


def not_ready_errors(nodes_by_name, names):
    """Input errors for the named nodes that are NotReady now: a rollout never starts one (it
    could not drain it, and could not tell a finished change from a dead node)."""
    errors = []
    for name in sorted(names):
        why = not_ready(nodes_by_name[name])
        if why:
            errors.append('node %s is NotReady (%s); it was not touched: bring it back (kubectl describe node %s) '
                          'or leave it out of the assignments, then run again' % (name, why, name))
    return errors


def nonzero(resources):
    return dict((k, v) for k, v in (resources or {}).items() if v)


class NodeSteps(object):
    """Advances nodes for ``kind`` through ``api`` (rollout.api.RolloutApi); ``waiter`` (a
    common.waiter.Waiter) makes the deadlines; ``opts`` are the rollout options."""

    def __init__(self, api, kind, opts, waiter, log):
        self.api = api
        self.kind = kind
        self.opts = opts
        self.waiter = waiter
        self.log = log
        self._phases = {'cordon': self._cordon, 'drain': self._drain, 'label': self._label, 'wait': self._wait,
                        'verify': self._verify, 'uncordon': self._uncordon}

    def step(self, node, st, deadlines):
        """Advance one node as far as it can go now without waiting: cordon, drain and label in one
        go when nothing is left to evict; verify and uncordon as soon as the state is reached.
        Stops after a write the next phase must see from the API (the label), and on a wait."""
        while True:
            phase = st['phase']
            if self._not_ready(node, st):
                st['ended'] = time.monotonic()
                return
            self._phases[phase](node, st, deadlines)
            mark(st, phase, st['phase'])
            if st['phase'] in FINAL:
                st['ended'] = time.monotonic()
            if st['phase'] in (phase, 'wait') + FINAL:
                return

    def _not_ready(self, node, st):
        """Refuse (cordon, nothing written) or hold a NotReady node; True when it was."""
        why = not_ready(node)
        if not why or (st['phase'] == 'wait' and (st.get('reboot_extended') or (
                not st.get('restarting') and self.kind.progress(node, st['to'])[0] == 'rebooting'))):
            return False  # a reboot the MIG manager asked for takes the node down for a while
        if st['phase'] == 'cordon' and annotations_of(node).get(ANN_TARGET) != target_marker(self.kind, st['to']):
            st.update(phase='failed', held=False, reason='node is NotReady (%s) when its batch started; it was not '
                      'touched: bring it back or leave it out of the assignments, then run again' % why)
            return True
        self.fail(node, st, 'node went NotReady during %s (%s); it stays cordoned and is not verified: bring it '
                  'back, then run again to resume' % (st['phase'], why))
        return True

    # ------------------------------------------------------------------ phases (each never blocks)
    def _cordon(self, node, st, deadlines):
        self.cordon(node, st['to'], st)
        st['phase'] = 'drain' if self.opts.get('drain', True) else 'label'
        deadlines[(st['node'], 'drain')] = self.waiter.deadline(self.opts['drain_timeout'])

    def _drain(self, node, st, deadlines):
        done, failure = dr.drain(self.api, node, st, deadlines[(st['node'], 'drain')], self.opts)
        if failure:
            self.fail(node, st, failure)
        elif done:
            st['phase'] = 'label'

    def _label(self, node, st, deadlines):
        name, value, kind = st['node'], st['to'], self.kind
        cleared = deadlines.get((name, 'cleared'))
        if cleared is not None and not cleared.passed():
            return  # give the MIG manager's watch time to see the removal
        if kind.needs_label(node, value):
            if getattr(kind, 'cycle_same_value', True) and kind.labels(node).get(kind.label) == value:
                # same value after a failure: the MIG manager only acts on a change, so remove
                # the label first and set it again on the next tick (once the removal is seen)
                self._clear_label(name, deadlines)
                st['changed'] = True
                return
            self.api.patch_node(name, {'metadata': {
                'labels': kind.label_patch(value),
                'annotations': {ANN_PHASE: 'labelled', ANN_UPDATED: now_iso()}}})
            self.api.event(node, 'GpuopsLabel', 'set %s=%s' % (kind.label, value))
            st['changed'] = True
        restart = getattr(kind, 'restart', None)
        spec = restart(node, value) if restart is not None else None
        if spec:
            dr.restart_pods(self.api, node, spec, st)
        st['phase'] = 'wait'
        deadlines[(name, 'wait')] = self.waiter.deadline(self.opts['state_timeout'])

    def _clear_label(self, name, deadlines):
        self.api.patch_node(name, {'metadata': {'labels': self.kind.clear_patch()}})
        deadlines[(name, 'cleared')] = self.waiter.deadline(CLEAR_PAUSE)

    def _wait(self, node, st, deadlines):
        name, value = st['node'], st['to']
        if st.get('restarting'):
            verdict, detail = dr.restarted(self.api, node, st)
        else:
            verdict, detail = self.kind.progress(node, value)
        st['detail'] = detail
        if verdict == 'failed':
            self.fail(node, st, detail)
        elif verdict == 'done':
            st['phase'] = 'verify'
            deadlines[(name, 'verify')] = self.waiter.deadline(self.opts['verify_timeout'])
        elif verdict == 'rebooting' and not st.get('reboot_extended'):
            st['reboot_extended'] = True
            deadlines[(name, 'wait')] = self.waiter.deadline(self.opts['reboot_timeout'])
        elif deadlines[(name, 'wait')].passed():
            self._stuck(node, st, deadlines, detail)

    def _stuck(self, node, st, deadlines, detail):
        """No progress by state_timeout: cycle the label once (retry_stuck), else fail."""
        label = self.kind.label
        if self.opts.get('retry_stuck') and not st['cycled']:
            st['cycled'] = True
            self.log('%s: stuck (%s), cycling %s once' % (st['node'], detail, label))
            self.api.event(node, 'GpuopsRetry', 'stuck (%s): cycling %s once' % (detail, label), True)
            self._clear_label(st['node'], deadlines)
            st['phase'] = 'label'
        else:
            self.fail(node, st, 'stuck after %ss: %s' % (self.opts['state_timeout'], detail))

    def _verify(self, node, st, deadlines):
        if not self.opts.get('verify', True):
            st['phase'] = 'uncordon'
            return
        # kubelet keeps a resource whose device plugin went away at 0: zeros do not count
        expected = nonzero(self.kind.expected_allocatable(node, st['to']))
        actual = nonzero(gn.gpu_resources((node.get('status') or {}).get('allocatable')))
        if actual == expected:
            st['allocatable'] = actual
            st['phase'] = 'uncordon'
        elif deadlines[(st['node'], 'verify')].passed():
            self.fail(node, st, 'allocatable GPU resources are %s, expected %s' % (actual, expected))

    def _uncordon(self, node, st, deadlines):
        self.finish(node, st)

    # ------------------------------------------------------------------ node writes
    def cordon(self, node, value, st):
        name = node['metadata']['name']
        ann = annotations_of(node)
        unschedulable = bool((node.get('spec') or {}).get('unschedulable'))
        patch = {'metadata': {'annotations': {ANN_TARGET: target_marker(self.kind, value), ANN_PHASE: 'cordoned',
                                              ANN_REASON: None, ANN_UPDATED: now_iso()}}}
        gpus = getattr(self.kind, 'physical_gpus', lambda n: None)(node)
        if gpus and not ann.get(names.ANN_PHYSICAL_GPUS):
            patch['metadata']['annotations'][names.ANN_PHYSICAL_GPUS] = str(gpus)
        if not unschedulable:
            patch['spec'] = {'unschedulable': True}
            patch['metadata']['annotations'][ANN_CORDONED] = 'true'
        changed = not unschedulable or ann.get(ANN_TARGET) != target_marker(self.kind, value) or \
            ann.get(ANN_PHASE) == 'failed'
        self.api.patch_node(name, patch)
        st['changed'] = st['changed'] or changed  # once written (a node deleted meanwhile changed nothing)
        self.api.event(node, 'GpuopsCordon', 'cordoned for %s=%s' % (self.kind.label, value)
                       if not unschedulable else 'rollout of %s=%s started' % (self.kind.label, value))

    def fail(self, node, st, reason):
        """Leave the node cordoned and say why, on the node itself (``st['recorded']`` once written;
        the rollout retries ``record`` while the API is away)."""
        st.update(phase='failed', reason=reason, recorded=False, notify=True)
        self.record(st, node)

    def record(self, st, node=None):
        """Write a failed node's phase and reason annotations, then its Warning Event once."""
        self.api.patch_node(st['node'], {'metadata': {'annotations': {
            ANN_PHASE: 'failed', ANN_REASON: st['reason'][:1000], ANN_UPDATED: now_iso()}}})
        st['recorded'] = True
        if st.pop('notify', False):
            self.api.event(node or {'metadata': {'name': st['node']}}, 'GpuopsFailed', st['reason'], warning=True)

    def hold(self, st, reason, timeout=None):
        """The rollout stops with this node unfinished: write ``reason`` on it (phase kept, so the
        next run resumes it), when this run wrote its markers (past the cordon step)."""
        if st['phase'] in FINAL or st['phase'] == 'cordon':
            return
        st['reason'] = reason
        self.api.patch_node(st['node'], {'metadata': {'annotations': {ANN_REASON: reason[:1000],
                                                                      ANN_UPDATED: now_iso()}}}, timeout=timeout)

    def finish(self, node, st):
        """Remove the markers; uncordon only a node this rollout cordoned."""
        ann = annotations_of(node)
        patch = {'metadata': {'annotations': dict((k, None) for k in MARKERS)}}
        if ann.get(ANN_CORDONED) == 'true':
            patch['spec'] = {'unschedulable': False}
        self.api.patch_node(node['metadata']['name'], patch)
        st['changed'] = st['changed'] or 'spec' in patch or any(k in ann for k in MARKERS)
        if st['changed']:
            self.api.event(node, 'GpuopsDone', '%s=%s applied%s' % (self.kind.label, st['to'],
                                                                    ', uncordoned' if 'spec' in patch else ''))
        st['phase'] = 'done'
