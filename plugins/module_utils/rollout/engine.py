# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node rollout engine: cordon → evict GPU pods (PDB-aware) → label → wait → verify →
uncordon, batch by batch, resumable through annotations on the nodes.

This file is the batches loop and the planning; the rest is split by concern: ``api.py`` (the API
calls), ``drain.py`` (evictions, PDBs, operand restarts), ``watch.py`` (the node watch) and
``node.py`` (the per-node state machine and its annotations).

One engine for every label-driven GPU change; a *kind* object (mig_kind.MigKind,
sharing_kind.SharingKind) answers the questions that differ (at_target, needs_label, label_patch,
clear_patch, progress, expected_allocatable). Optional kind hooks, absent on MigKind:

- ``restart(node, value)`` -> None or {'namespace', 'selector', 'annotations'}: pods on the node to
  delete after the label step (e.g. the device plugin, which does not watch its ConfigMap), then the
  node annotations to record; the wait step first waits for their replacements to be Running/Ready;
- ``describe(node, value)`` -> extra fields for the check-mode plan entry;
- ``current(node)`` -> the node's value now as the plan and the result show it (``from``), for a kind whose
  value is not one label's (stack_kind.StackKind: the stack the two deploy labels say);
- ``cycle_same_value`` (default True): re-set a label that already has the value by removing it
  first (the MIG manager only acts on a change).

Safety rules (docs/architecture.md#rules):
- no node is relabelled while a GPU pod still runs on it; eviction goes through the Eviction API
  and honours PodDisruptionBudgets (HTTP 429 → retry with backoff until drain_timeout); pods are
  deleted past a PDB only with ``force``;
- a failed or stuck node stops the rollout: it stays cordoned, annotated with the reason, and the
  error names it; nodes not reached yet are not touched;
- a run killed at any point is finished by the next run: the annotations say what was started
  and whether this engine cordoned the node, so only nodes it cordoned are uncordoned.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import node as gn
from ansible_collections.gpuops.gpu.plugins.module_utils.common.errors import InputError, RolloutFailed, status_of
from ansible_collections.gpuops.gpu.plugins.module_utils.common.objects import annotations_of, labels_of
from ansible_collections.gpuops.gpu.plugins.module_utils.common.waiter import Waiter
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout import drain as dr
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.api import RolloutApi, call_words
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.batches import plan_batches, window_size
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.faults import SLOW_ANSWER, Outage, transient
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.inputs import resolve_assignments
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.lock import LockLost, RolloutLock
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.progress import Progress, utc_iso
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.node import (
    ANN_CORDONED, ANN_PHASE, ANN_REASON, ANN_TARGET, FINAL, NodeSteps, held_elsewhere)
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.watch import NodeWatch

try:
    from kubernetes.client.rest import ApiException
except ImportError:  # pragma: no cover - the module reports the missing library
    ApiException = Exception

MAX_WORKERS = 32  # concurrent node reads and writes in one tick
VALUE_KEYS = {'mig': 'config', 'sharing': 'profile', 'stack': 'stack'}  # the assignments' value option, by kind
HOLD_TIMEOUT = (2, 3)  # (connect, read) of the reason written on held nodes when the API was away


class _ApiLost(Exception):
    """The API did not answer for api_timeout (``states``: the batch's node results so far)."""


def _ended(states):
    """The batch's node results with their durations, bookkeeping dropped."""
    for st in states.values():
        if 'started' in st:
            st['duration_s'] = round(st.pop('ended', time.monotonic()) - st.pop('started'), 2)
        for key in ('recorded', 'notify'):
            st.pop(key, None)
    return states


class NodeRollout(object):
    """Applies {node name: value} with ``kind`` through the API connection ``conn``.

    ``opts`` keys: max_unavailable, drain, force, pod_selector, drain_timeout, state_timeout,
    reboot_timeout, verify_timeout, verify, retry_stuck, poll_interval, check_mode.
    """

    def __init__(self, conn, kind, opts, log=None, progress=None, watch_more=None):
        self.conn = conn
        self.kind = kind
        # (conn, woken) -> a second watch (rollout/watch.py) of what the kind waits for besides the nodes
        self.watch_more = watch_more
        self.more = None
        self.opts = opts
        self.progress = progress or Progress()  # rollout/progress.py: what the job output shows
        self.log = self.progress.message if log is None else (lambda msg: (log(msg), self.progress.message(msg)))
        self.api = RolloutApi(conn)
        self.lock = None  # the rollout lock while run() holds it (rollout/lock.py)
        self.watch = None
        self.wake = threading.Event()  # set by the node watch and by every worker that finishes
        self.api_lost = False  # the rollout stopped because the API did not answer
        self.window = None  # the rolling window (opts window: rolling), set by plan()

    @property
    def warnings(self):
        return self.api.warnings

    def list_nodes(self):
        return self.api.list_nodes()

    # ============================================================== planning
    def needs_work(self, node, value):
        ann = annotations_of(node)
        return (not self.kind.at_target(node, value) or ANN_CORDONED in ann or ANN_PHASE in ann)

    def plan(self, assignments, nodes_by_name):
        """Nodes to change (and unfinished ones to resume), in batches; nothing written."""
        work = dict((n, v) for n, v in assignments.items() if self.needs_work(nodes_by_name[n], v))
        # a node a killed run left behind (our markers) is finished even if no longer assigned
        for name, node in nodes_by_name.items():
            ann = annotations_of(node)
            if name in work or name in assignments or ANN_TARGET not in ann:
                continue
            label, _sep, value = ann[ANN_TARGET].partition('=')
            if label == self.kind.label:
                work[name] = value
        pool = set(assignments) | set(work)
        unavailable = [n for n in pool if (nodes_by_name[n].get('spec') or {}).get('unschedulable')]
        batches = plan_batches(sorted(work), self.opts['max_unavailable'], unavailable=unavailable,
                               pool_size=len(pool))
        if batches and self.opts.get('window') == 'rolling':
            self.window = _Window(window_size(sorted(work), self.opts['max_unavailable'], unavailable=unavailable,
                                              pool_size=len(pool)), batches, unavailable)
        return work, batches

    def describe_plan(self, work, batches, nodes_by_name):
        pods = self.api.all_pods() if self.opts.get('drain', True) else []
        pdbs = self.api.list_pdbs() if pods else []
        by_node = {}
        for pod in pods:
            by_node.setdefault((pod.get('spec') or {}).get('nodeName'), []).append(pod)
        plan = []
        for index, batch in enumerate(batches):
            entries = []
            for name in batch:
                node = nodes_by_name[name]
                evict = dr.selected_pods(by_node.get(name, []), self.opts.get('pod_selector'))
                entries.append({
                    'node': name,
                    'from': self.current(node),
                    'to': work[name],
                    'resume': ANN_TARGET in annotations_of(node),
                    'pods_to_evict': ['%s/%s' % (p['metadata']['namespace'], p['metadata']['name']) for p in evict],
                    'blocking_pdbs': sorted(set(b for p in evict for b in dr.blocking_pdbs(p, pdbs))),
                })
                describe = getattr(self.kind, 'describe', None)
                if describe is not None:
                    entries[-1].update(describe(node, work[name]))
            plan.append({'batch': index + 1, 'nodes': entries})
        return plan

    def current(self, node):
        """The node's value now, as the plan and the result show it (``from``)."""
        if self.kind.name == 'mig':
            return gn.node_gpu_info(node).get('mig_config')
        if getattr(self.kind, 'current', None) is not None:  # a kind whose value is not one label's (stack)
            return self.kind.current(node)
        return labels_of(node).get(self.kind.label)

    # ============================================================== one batch
    def _state(self, name, work, nodes_by_name):
        """A node's result as its rollout starts."""
        return {'node': name, 'from': self.current(nodes_by_name[name]), 'to': work[name], 'phase': 'cordon',
                'started': time.monotonic(), 'timeline': {'started': utc_iso()}, 'evicted': [], 'cycled': False,
                'changed': False, 'detail': ''}

    def run_batch(self, batch, work, nodes_by_name, feed=None):
        """Drive every node of a batch to done, failed or gone. Returns {node: result}.

        Each node advances in its own worker (up to MAX_WORKERS): a tick submits a read-and-advance
        for every node that has none in flight, so a node whose request hangs never holds up its
        batch-mates. Between ticks the loop waits for poll_interval, the node watch (a followed node
        changed: only those are advanced) or a worker that finished. ``feed`` (the rolling window)
        adds nodes to the batch as others finish.
        """
        waiter = Waiter(self.opts['poll_interval'], wake=self.wake)
        steps = NodeSteps(self.api, self.kind, self.opts, waiter, self.log)
        states = dict((name, self._state(name, work, nodes_by_name)) for name in batch)
        for watch in (self.watch, self.more):
            if watch is not None and feed is None:
                watch.follow(batch)
        workers = feed.size if feed is not None else len(batch)
        pool = ThreadPoolExecutor(max_workers=max(1, min(workers, MAX_WORKERS)))
        try:
            self._drive(pool, steps, states, waiter, feed)
        except BaseException as exc:
            pool.shutdown(wait=False, cancel_futures=True)  # a hung request never delays the stop
            exc.states = _ended(states)
            raise
        pool.shutdown(wait=True)
        return _ended(states)

    def _drive(self, pool, steps, states, waiter, feed=None):
        """The tick loop of run_batch.

        While the node watch is alive and the API answers, a node is advanced from the newest copy
        the watch (or the answer to this run's own patch) delivered, without reading it again; each
        poll tick reads one node with a GET (in turn), which proves the API still answers. While
        that read is slow or the API is away, every node is read with a GET again (the outage
        clock then works as without the watch).
        """
        deadlines, running = {}, {}
        outage = Outage(self.opts.get('api_timeout', 300))
        poll, probe, turn = None, None, 0
        while True:
            self.wake.clear()
            changed = self.watch.take() if self.watch is not None else set()
            changed |= self.more.take() if self.more is not None else set()
            for name, (future, started) in list(running.items()):
                if future.done():
                    del running[name]
                    probe = None if probe and probe[0] == name else probe
                    self._handle(future.result(), states[name], started, outage, steps)
            if outage.passed():
                self._stop_for_outage(outage, states, steps)
            if feed is not None:
                changed.update(feed(states))
            self.progress.nodes(states)
            todo = [st for st in states.values() if st['phase'] not in FINAL or st.get('recorded') is False]
            if not todo and not running and (feed is None or feed.empty()):
                return
            due = poll is None or poll.passed()
            if due:
                poll = waiter.deadline(self.opts['poll_interval'])
            fresh = (self.watch is not None and self.watch.alive and outage.quiet() and
                     (probe is None or time.monotonic() - probe[1] < SLOW_ANSWER))
            idle = [st['node'] for st in todo if st['node'] not in running]
            if due and fresh and probe is None and idle:
                turn += 1
                probe = (idle[turn % len(idle)], time.monotonic())
            for st in todo:
                name = st['node']
                if name not in running and (due or name in changed):
                    ask = not fresh or (probe is not None and probe[0] == name)
                    future = pool.submit(self._tick, steps, st, deadlines, outage, ask)
                    running[name] = (future, time.monotonic())
                    future.add_done_callback(lambda _f: self.wake.set())
            waiter.pause(poll.left())

    def _tick(self, steps, st, deadlines, outage, ask=True):
        """Advance one node (in a worker thread) from a GET when ``ask``, else from the newest copy
        known; returns the exception to handle, if any."""
        try:
            if st['phase'] == 'failed':  # the failure is known, its annotations are not written yet
                steps.record(st)
                return None
            node = None if ask else self.api.newest(st['node'])
            if node is None:
                asked = time.monotonic()
                node = self.api.get_node(st['node'])
                outage.answered(deadlines, st['node'], time.monotonic() - asked)
            steps.step(node, st, deadlines)
        except Exception as exc:  # handed to the tick loop (_handle)
            return exc
        return None

    def _handle(self, exc, st, started, outage, steps):
        """What a node's tick ended with: nothing; the rollout lock lost (the rollout stops: raised); the
        API away (an outage, retried); a conflict (retried); the node deleted (gone); any other error
        (the node fails, one clear line)."""
        if exc is None:
            return
        if isinstance(exc, LockLost):
            raise exc
        if transient(exc):
            outage.failed(started, exc)
            self.log('API unavailable (%s), retrying' % call_words(exc))
        elif status_of(exc) == 409:
            return
        elif status_of(exc) == 404 and getattr(exc, 'gpuops_call', None) in ('read node', 'patch node'):
            self._gone(st)
        elif st['phase'] in FINAL:
            self.api.warn('node %s: could not record its %s state: %s' % (st['node'], st['phase'], call_words(exc)))
            st['recorded'] = None
        elif isinstance(exc, ApiException):
            st.update(phase='failed', reason='%s (during %s)' % (call_words(exc), st['phase']), recorded=False,
                      notify=True, ended=time.monotonic())
        else:
            st.update(phase='failed', reason='unexpected error during %s: %s: %s' % (
                st['phase'], type(exc).__name__, exc), recorded=False, notify=True, ended=time.monotonic())

    def _gone(self, st):
        """The node was deleted during the rollout: reported, the others go on."""
        self.api.warn('node %s was deleted during the rollout (it had reached phase %s); it is reported as gone '
                      'and the rest of the rollout went on' % (st['node'], st['phase']))
        st.update(phase='gone', ended=time.monotonic(), reason='node deleted during the rollout')
        st.pop('recorded', None)

    def _stop_for_outage(self, outage, states, steps):
        """The API did not answer for api_timeout: write the reason on every node of the batch this
        run holds (best effort, short timeouts, all at once) and stop."""
        reason = ('rollout stopped: the Kubernetes API did not answer for %ss (%s); run again to resume this node'
                  % (outage.api_timeout, call_words(outage.cause)))
        held = [st for st in states.values() if st['phase'] not in FINAL and st['phase'] != 'cordon']
        with ThreadPoolExecutor(max_workers=max(1, min(len(held), MAX_WORKERS))) as pool:
            list(pool.map(lambda st: self._hold(steps, st, reason), held))
        self.api_lost = True
        raise _ApiLost('the Kubernetes API did not answer for %ss (%s); nodes of this batch keep their gpuops.gpu '
                       'annotations (%s says why) and the next run resumes them'
                       % (outage.api_timeout, call_words(outage.cause), ANN_REASON))

    def _hold(self, steps, st, reason):
        try:
            steps.hold(st, reason, timeout=HOLD_TIMEOUT)
        except Exception as exc:  # the API is still away: the reason stays in the result and the message
            st['reason'] = reason
            self.log('node %s: could not write the reason: %s' % (st['node'], call_words(exc)))

    # ============================================================== the whole rollout
    def run(self, assignments, nodes_by_name):
        work, batches = self.plan(assignments, nodes_by_name)
        result = {'changed': bool(work), 'batches': [list(b) for b in batches], 'nodes': [], 'plan': []}
        if self.window is not None:
            result['window'] = self.window.size
        if self.opts.get('check_mode'):
            result['plan'] = self.describe_plan(work, batches, nodes_by_name)
            result['lock'] = self._lock(work).status()
            return result
        lock = self._lock(work) if batches else None  # no node to change: no lock (and no read of where it is)
        try:
            if lock is not None:
                work, batches, nodes_by_name = self._take_lock(lock, assignments, nodes_by_name, result)
            return self._run_work(work, batches, nodes_by_name, result)
        finally:
            self.api.fence = None
            if lock is not None:
                self.api.warnings.extend(lock.let_go())
            self.lock = None

    def _lock(self, work):
        return RolloutLock.for_rollout(self.conn, self.opts, '%s_rollout of %d node(s)' % (self.kind.name, len(work)),
                                       work, self.log)

    def _take_lock(self, lock, assignments, nodes_by_name, result):
        """Hold the rollout lock (rollout/lock.py), then plan again from the nodes read now: another run
        may have changed them while this one waited (nodes that appeared meanwhile stay unknown)."""
        self.lock = lock.hold(self.opts.get('lock_timeout') or 0, min(2.0, max(0.2, self.opts['poll_interval'])))
        self.api.fence = lock.fence  # every write of the rollout from now on proves the lease is still ours
        nodes_by_name = dict(nodes_by_name)
        nodes_by_name.update((n['metadata']['name'], n) for n in self.list_nodes()
                             if n['metadata']['name'] in nodes_by_name)
        errors = held_elsewhere(self.kind, nodes_by_name, assignments)
        if errors:
            raise InputError('nothing was changed; fix these first: ' + ' | '.join(errors))
        work, batches = self.plan(assignments, nodes_by_name)
        result.update(changed=bool(work), batches=[list(b) for b in batches])
        if self.window is not None:
            result['window'] = self.window.size
        return work, batches, nodes_by_name

    def _run_work(self, work, batches, nodes_by_name, result):
        if batches:  # workers + the watch + the event posters
            self.progress.start(self.conn.cluster_name(), len(work))
            self.api.conn = self.conn.pooled(min(max(len(b) for b in batches), MAX_WORKERS) + 3)
        if batches and self.api.nodes_version:
            self.api.follow(nodes_by_name[n] for n in work)
            self.watch = NodeWatch(self.api.conn, self.api.nodes_version, woken=self.wake, cache=self.api)
            self.more = self.watch_more(self.api.conn, self.wake) if self.watch_more is not None else None
        self.api.start_events()
        try:
            if self.window is not None and batches:
                self._run_rolling(work, nodes_by_name, result)
            else:
                self._run_batches(batches, work, nodes_by_name, result)
        finally:
            for watch in (self.watch, self.more):
                if watch is not None:
                    watch.stop()
            self.watch = self.more = None
            self.api.stop_events(wait=not self.api_lost)
            if not self.api_lost and batches:  # nothing rolled out: nothing can have appeared during it
                self._new_nodes(nodes_by_name)
        result['changed'] = any(s['changed'] for s in result['nodes'])
        return result

    def _new_nodes(self, nodes_by_name):
        """Warn about nodes that appeared during the rollout and that the assignments' selectors
        match: this run did not touch them (one node list, only when a selector was given)."""
        assignments = [a for a in self.opts.get('assignments') or [] if a.get('label_selector') or a.get('selector')]
        if not assignments:
            return
        try:
            new = dict((n['metadata']['name'], n) for n in self.api.list_nodes()
                       if n['metadata']['name'] not in nodes_by_name)
        except Exception as exc:  # best effort: the rollout itself is over
            self.api.warn('could not list the nodes to look for new ones: %s' % call_words(exc))
            return
        matched, _errors = resolve_assignments(assignments, new, VALUE_KEYS.get(self.kind.name, 'config'))
        if matched:
            self.api.warn('node(s) %s appeared during the rollout and match the assignments; this run did not touch '
                          'them: run it again to apply their assignments' % ', '.join(sorted(matched)))

    def _run_rolling(self, work, nodes_by_name, result):
        """The rolling window: one batch that starts the next node as soon as one finishes (_Window)."""
        window = self.window
        window.start(self, work, nodes_by_name)
        for watch in (self.watch, self.more):
            if watch is not None:
                watch.follow(list(work))
        self.log('rolling window of %d node(s) over %d node(s)' % (window.size, len(work)))
        self.progress.batch(1, 1, [])
        try:
            states = self.run_batch([], work, nodes_by_name, feed=window)
        except _ApiLost as exc:
            result['nodes'].extend(exc.states[n] for n in window.started)
            result.update(untouched=list(window.queue), changed=any(s['changed'] for s in result['nodes']))
            raise RolloutFailed(str(exc), result)
        except RolloutFailed as exc:  # the lock was lost: nodes started so far, and what was not
            result['nodes'].extend(getattr(exc, 'states', {}).get(n) for n in window.started)
            result['nodes'] = [n for n in result['nodes'] if n]
            result.update(untouched=list(window.queue), changed=any(s['changed'] for s in result['nodes']))
            exc.result = result
            raise
        result['nodes'].extend(states[n] for n in window.started)
        self.progress.nodes(states, force=True)
        self.progress.finished(sum(1 for s in result['nodes'] if s['phase'] == 'done'))
        failed = [s for s in states.values() if s['phase'] == 'failed']
        if failed:
            untouched = list(window.queue)
            result.update(untouched=untouched, changed=any(s['changed'] for s in result['nodes']))
            msg = '; '.join('node %s: %s' % (s['node'], s['reason']) for s in failed)
            raise RolloutFailed('rollout stopped: %s. No node was started after the failure; the nodes already '
                                'started were finished. Failed nodes stay cordoned and annotated (%s); %d node(s) '
                                'not started were left untouched. Fix the cause and run again to resume.'
                                % (msg, ANN_REASON, len(untouched)), result)

    def _run_batches(self, batches, work, nodes_by_name, result):
        for index, batch in enumerate(batches):
            if self.lock is not None:  # the lease lost (not renewed for lock_duration): stop before this batch
                self.lock.ensure(dict(result, untouched=[n for b in batches[index:] for n in b]))
            self.log('batch %d/%d: %s' % (index + 1, len(batches), ', '.join(batch)))
            self.progress.batch(index + 1, len(batches), batch)
            untouched = [n for b in batches[index + 1:] for n in b]
            try:
                states = self.run_batch(batch, work, nodes_by_name)
            except _ApiLost as exc:
                result['nodes'].extend(exc.states[n] for n in batch)
                result.update(untouched=untouched, changed=any(s['changed'] for s in result['nodes']))
                raise RolloutFailed(str(exc), result)
            except LockLost as exc:  # a write found the lease taken over: the batch's nodes as they are
                result['nodes'].extend(getattr(exc, 'states', {})[n] for n in batch if n in getattr(exc, 'states', {}))
                result.update(untouched=untouched, changed=any(s['changed'] for s in result['nodes']))
                exc.result = result
                raise
            result['nodes'].extend(states[n] for n in batch)
            self.progress.nodes(states, force=True)
            self.progress.finished(sum(1 for s in result['nodes'] if s['phase'] == 'done'))
            self.log('batch %d/%d ended: %s' % (index + 1, len(batches), ', '.join(
                '%s %s' % (s['node'], s['phase']) for s in (states[n] for n in batch))))
            failed = [s for s in states.values() if s['phase'] == 'failed']
            if failed:
                result.update(untouched=untouched, changed=any(s['changed'] for s in result['nodes']))
                msg = '; '.join('node %s: %s' % (s['node'], s['reason']) for s in failed)
                raise RolloutFailed('rollout stopped in batch %d/%d: %s. Failed nodes stay cordoned and annotated '
                                    '(%s); %d node(s) not started were left untouched. Fix the cause and run again '
                                    'to resume.' % (index + 1, len(batches), msg, ANN_REASON, len(untouched)), result)


class _Window(object):
    """The rolling window (opts ``window: rolling``): starts nodes in the order of the batches as
    soon as others finish, never more than ``size`` at once (nodes cordoned before the rollout
    started, which plan_batches puts first, are down already and do not count), and none once a
    node failed or the rollout lock was lost; the nodes already started are finished."""

    def __init__(self, size, batches, unavailable):
        self.size = size
        self.queue = [n for batch in batches for n in batch]
        self.down = set(unavailable or ())
        self.started = []
        self.stopped = False
        self.rollout = self.work = self.nodes_by_name = None

    def start(self, rollout, work, nodes_by_name):
        self.rollout, self.work, self.nodes_by_name = rollout, work, nodes_by_name

    def empty(self):
        return self.stopped or not self.queue

    def __call__(self, states):
        """Start the nodes there is room for (their results are added to ``states``); their names."""
        if any(st['phase'] == 'failed' for st in states.values()):
            self.stopped = True
        if self.empty():
            return []
        busy = sum(1 for st in states.values() if st['phase'] not in FINAL and st['node'] not in self.down)
        added = []
        while self.queue and (busy < self.size or self.queue[0] in self.down):
            if self.rollout.lock is not None:  # the lease lost: start nothing more
                self.rollout.lock.ensure()
            name = self.queue.pop(0)
            states[name] = self.rollout._state(name, self.work, self.nodes_by_name)
            self.started.append(name)
            busy += name not in self.down
            added.append(name)
        if added:
            self.rollout.log('started: %s' % ', '.join(added))
        return added
