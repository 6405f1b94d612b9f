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

import time
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import node as gn
from ansible_collections.gpuops.gpu.plugins.module_utils.k8s.errors import RolloutFailed
from ansible_collections.gpuops.gpu.plugins.module_utils.k8s.waiter import Waiter
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout import drain as dr
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.api import RolloutApi
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.batches import plan_batches
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.node import (
    ANN_CORDONED, ANN_PHASE, ANN_REASON, ANN_TARGET, FINAL, NodeSteps, annotations)
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.watch import NodeWatch

try:
    from kubernetes.client.rest import ApiException
except ImportError:  # pragma: no cover - the module reports the missing library
    ApiException = Exception

try:
    from urllib3.exceptions import HTTPError as _Urllib3Error
    TRANSIENT_ERRORS = (_Urllib3Error, ConnectionError, OSError)
except ImportError:  # pragma: no cover
    TRANSIENT_ERRORS = (ConnectionError, OSError)

MAX_WORKERS = 32  # concurrent node reads and writes in one tick


class _Retry(Exception):
    """A step hit a conflict or a transient API error: re-read and retry on the next tick."""


def _transient(exc):
    return getattr(exc, 'status', None) in (0, 429, 500, 502, 503, 504) or getattr(exc, 'status', None) is None


class NodeRollout(object):
    """Applies {node name: value} with ``kind`` through the API connection ``conn``.

    ``opts`` keys: max_unavailable, drain, force, pod_selector, drain_timeout, state_timeout,
    reboot_timeout, verify_timeout, verify, retry_stuck, poll_interval, check_mode.
    """

    def __init__(self, conn, kind, opts, log=None):
        self.conn = conn
        self.kind = kind
        self.opts = opts
        self.log = log or (lambda msg: None)
        self.api = RolloutApi(conn)
        self.watch = None

    @property
    def warnings(self):
        return self.api.warnings

    def list_nodes(self):
        return self.api.list_nodes()

    # ============================================================== planning
    def needs_work(self, node, value):
        ann = annotations(node)
        return (not self.kind.at_target(node, value) or ANN_CORDONED in ann or ANN_PHASE in ann)

    def plan(self, assignments, nodes_by_name):
        """Nodes to change (and unfinished ones to resume), in batches; nothing written."""
        work = dict((n, v) for n, v in assignments.items() if self.needs_work(nodes_by_name[n], v))
        # a node a killed run left behind (our markers) is finished even if no longer assigned
        for name, node in nodes_by_name.items():
            ann = annotations(node)
            if name in work or name in assignments or ANN_TARGET not in ann:
                continue
            label, _sep, value = ann[ANN_TARGET].partition('=')
            if label == self.kind.label:
                work[name] = value
        pool = set(assignments) | set(work)
        unavailable = [n for n in pool if (nodes_by_name[n].get('spec') or {}).get('unschedulable')]
        batches = plan_batches(sorted(work), self.opts['max_unavailable'], unavailable=unavailable,
                               pool_size=len(pool))
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
                    'from': gn.node_gpu_info(node).get('mig_config') if self.kind.name == 'mig'
                    else (node['metadata'].get('labels') or {}).get(self.kind.label),
                    'to': work[name],
                    'resume': ANN_TARGET in annotations(node),
                    'pods_to_evict': ['%s/%s' % (p['metadata']['namespace'], p['metadata']['name']) for p in evict],
                    'blocking_pdbs': sorted(set(b for p in evict for b in dr.blocking_pdbs(p, pdbs))),
                })
                describe = getattr(self.kind, 'describe', None)
                if describe is not None:
                    entries[-1].update(describe(node, work[name]))
            plan.append({'batch': index + 1, 'nodes': entries})
        return plan

    # ============================================================== one batch
    def run_batch(self, batch, work, nodes_by_name):
        """Drive every node of a batch to done or failed. Returns {node: result}.

        Each tick reads the unfinished nodes and advances them concurrently (one worker per node, up
        to MAX_WORKERS), so a tick costs about one round trip, not one per node. Between ticks the loop
        waits for the node watch (a followed node changed: only those are read) or for poll_interval.
        """
        interval = self.opts['poll_interval']
        waiter = Waiter(interval, wake=self.watch)
        steps = NodeSteps(self.api, self.kind, self.opts, waiter, self.log)
        states = dict((name, {'node': name, 'to': work[name], 'phase': 'cordon', 'started': time.monotonic(),
                              'evicted': [], 'cycled': False, 'changed': False, 'detail': ''}) for name in batch)
        deadlines = {}
        poll = outage = None
        if self.watch is not None:
            self.watch.follow(batch)
        with ThreadPoolExecutor(max_workers=max(1, min(len(batch), MAX_WORKERS))) as pool:
            while True:
                active = [st for st in states.values() if st['phase'] not in FINAL]
                if not active:
                    break
                changed = self.watch.take() if self.watch is not None else set()
                if poll is None or poll.passed():
                    poll = waiter.deadline(interval)
                else:  # woken by the watch: read only the nodes that changed
                    active = [st for st in active if st['node'] in changed]
                errors = [exc for exc in pool.map(lambda st: self._tick(steps, st, deadlines), active) if exc]
                if errors:
                    outage = self._outage(errors[0], outage, waiter, states)
                    poll = waiter.deadline(interval)
                else:
                    outage = None
                if any(s['phase'] not in FINAL for s in states.values()):
                    waiter.pause(poll.left())
        for st in states.values():
            st['duration_s'] = round(st.pop('ended', time.monotonic()) - st.pop('started'), 2)
        return states

    def _tick(self, steps, st, deadlines):
        """Read one node and advance it (in a worker thread); returns the exception to handle, if any."""
        try:
            node = self.api.get_node(st['node'])
            try:
                steps.step(node, st, deadlines)
            except ApiException as exc:
                if exc.status == 409 or _transient(exc):
                    raise _Retry(exc)
                steps.fail(node, st, 'API error %s %s: %s' % (exc.status, exc.reason, (exc.body or '')[:300]))
        except Exception as exc:  # handed to the tick loop, which retries outages and raises the rest
            return exc
        return None

    def _outage(self, exc, outage, waiter, states):
        """A tick failed with ``exc``. API server restarting or overloaded: keep the state in memory
        and on the nodes and return the outage's deadline (api_timeout), past which the rollout
        stops (the next run resumes from the annotations). Anything else is raised."""
        if not isinstance(exc, (_Retry, ApiException) + TRANSIENT_ERRORS):
            raise exc
        cause = exc.args[0] if isinstance(exc, _Retry) else exc
        if isinstance(cause, ApiException) and not _transient(cause) and cause.status != 409:
            raise exc
        outage = outage or waiter.deadline(self.opts.get('api_timeout', 300))
        if outage.passed():
            raise RolloutFailed('the Kubernetes API did not answer for %ss (%s); nodes of this batch keep their '
                                'gpuops.gpu annotations and the next run resumes them'
                                % (self.opts.get('api_timeout', 300), cause), {'nodes': list(states.values())})
        self.log('API unavailable (%s), retrying' % cause)
        return outage

    # ============================================================== the whole rollout
    def run(self, assignments, nodes_by_name):
        work, batches = self.plan(assignments, nodes_by_name)
        result = {'changed': bool(work), 'batches': [list(b) for b in batches], 'nodes': [], 'plan': []}
        if self.opts.get('check_mode'):
            result['plan'] = self.describe_plan(work, batches, nodes_by_name)
            return result
        if batches:  # workers + the watch + the event posters
            self.api.conn = self.conn.pooled(min(max(len(b) for b in batches), MAX_WORKERS) + 3)
        if batches and self.api.nodes_version:
            self.watch = NodeWatch(self.api.conn, self.api.nodes_version)
        self.api.start_events()
        try:
            self._run_batches(batches, work, nodes_by_name, result)
        finally:
            if self.watch is not None:
                self.watch.stop()
                self.watch = None
            self.api.stop_events()
        result['changed'] = any(s['changed'] for s in result['nodes'])
        return result

    def _run_batches(self, batches, work, nodes_by_name, result):
        for index, batch in enumerate(batches):
            self.log('batch %d/%d: %s' % (index + 1, len(batches), ', '.join(batch)))
            states = self.run_batch(batch, work, nodes_by_name)
            result['nodes'].extend(states[n] for n in batch)
            failed = [s for s in states.values() if s['phase'] == 'failed']
            if failed:
                untouched = [n for b in batches[index + 1:] for n in b]
                result['untouched'] = untouched
                msg = '; '.join('node %s: %s' % (s['node'], s['reason']) for s in failed)
                raise RolloutFailed('rollout stopped in batch %d/%d: %s. Failed nodes stay cordoned and annotated '
                                    '(%s); %d node(s) not started were left untouched. Fix the cause and run again '
                                    'to resume.' % (index + 1, len(batches), msg, ANN_REASON, len(untouched)), result)
