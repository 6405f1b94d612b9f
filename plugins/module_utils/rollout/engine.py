# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node rollout engine: cordon → evict GPU pods (PDB-aware) → label → wait → verify →
uncordon, batch by batch, resumable through annotations on the nodes.

One engine for every label-driven GPU change; a *kind* object (mig_target.MigKind,
sharing_target.SharingKind) answers the questions that differ (at_target, needs_label, label_patch,
clear_patch, progress, expected_allocatable). Optional kind hooks, absent on MigKind:

- ``restart(node, value)`` -> None or {'namespace', 'selector', 'annotations'}: pods on the node to
  delete after the label step (e.g. the device plugin, which does not watch its ConfigMap), then the
  node annotations to record; the wait step first waits for their replacements to be Running/Ready;
- ``describe(node, value)`` -> extra fields for the check-mode plan entry;
- ``cycle_same_value`` (default True): re-set a label that already has the value by removing it
  first (the MIG manager only acts on a change).

Safety rules (ARCHITECTURE.md §8):
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

import datetime
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import node as gn
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.batches import plan_batches

try:
    from kubernetes.client.rest import ApiException
except ImportError:  # pragma: no cover - the module reports the missing library
    ApiException = Exception

ANN = 'gpuops.gpu/'
ANN_TARGET = ANN + 'rollout-target'      # "<label>=<value>" being applied
ANN_PHASE = ANN + 'rollout-phase'        # cordoned | labelled | failed
ANN_REASON = ANN + 'rollout-reason'      # why it failed
ANN_CORDONED = ANN + 'cordoned-by-rollout'  # "true" only when this engine cordoned the node
ANN_UPDATED = ANN + 'rollout-updated'
MARKERS = (ANN_TARGET, ANN_PHASE, ANN_REASON, ANN_CORDONED, ANN_UPDATED)
EVENT_SOURCE = 'gpuops.gpu'
CLEAR_PAUSE = 2.0  # seconds between removing a label and setting it again (a retry)
MAX_WORKERS = 32  # concurrent node reads and writes in one tick


try:
    from urllib3.exceptions import HTTPError as _Urllib3Error
    TRANSIENT_ERRORS = (_Urllib3Error, ConnectionError, OSError)
except ImportError:  # pragma: no cover
    TRANSIENT_ERRORS = (ConnectionError, OSError)


class _Retry(Exception):
    """A step hit a conflict or a transient API error: re-read and retry on the next tick."""


def _transient(exc):
    return getattr(exc, 'status', None) in (0, 429, 500, 502, 503, 504) or getattr(exc, 'status', None) is None


class RolloutFailed(Exception):
    def __init__(self, msg, result):
        super(RolloutFailed, self).__init__(msg)
        self.result = result


def _now():
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat()


def _annotations(node):
    return (node.get('metadata') or {}).get('annotations') or {}


def _target_marker(kind, value):
    return '%s=%s' % (kind.label, value)


def _lines(resp):
    """The lines of a streamed watch response."""
    buf = b''
    for chunk in resp.stream(amt=None, decode_content=False):
        buf += chunk if isinstance(chunk, bytes) else chunk.encode('utf-8')
        while b'\n' in buf:
            line, buf = buf.split(b'\n', 1)
            if line.strip():
                yield line


class NodeWatch(object):
    """Wakes the rollout loop as soon as a node it follows changes, so that a state reached is acted
    on at once instead of at the next poll. A latency aid only: every decision still reads the node
    with a GET, and if the watch ends or fails the loop keeps polling every poll_interval."""

    def __init__(self, core, resource_version, count):
        self.core = core
        self.version = resource_version
        self.count = count
        self.names = frozenset()
        self.changed = set()
        self.woken = threading.Event()
        self.lock = threading.Lock()
        self.stopped = False
        self.resp = None
        self.thread = threading.Thread(target=self._run, name='gpuops-node-watch')
        self.thread.daemon = True
        self.thread.start()

    def follow(self, names):
        with self.lock:
            self.names = frozenset(names)
            self.changed = set()

    def take(self):
        """Names of followed nodes changed since the last call."""
        with self.lock:
            changed, self.changed = self.changed, set()
            self.woken.clear()
        return changed

    def wait(self, timeout):
        self.woken.wait(timeout)

    def _run(self):
        while not self.stopped:
            try:
                self.count()
                self.resp = self.core.list_node(watch=True, resource_version=self.version, timeout_seconds=120,
                                                allow_watch_bookmarks=True, _preload_content=False)
                for line in _lines(self.resp):
                    if self.stopped:
                        return
                    event = json.loads(line)
                    obj = event.get('object') or {}
                    if event.get('type') == 'ERROR':  # e.g. 410 Gone: polling goes on without the watch
                        return
                    meta = obj.get('metadata') or {}
                    self.version = meta.get('resourceVersion') or self.version
                    with self.lock:
                        if meta.get('name') in self.names:
                            self.changed.add(meta['name'])
                            self.woken.set()
            except Exception:  # API restarting, connection closed by stop(): polling goes on
                return

    def stop(self):
        self.stopped = True
        resp = self.resp
        if resp is not None:
            try:
                getattr(resp, 'shutdown', resp.close)()
                resp.release_conn()
            except Exception:  # already closed
                pass


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
        self.warnings = []
        self.requests = 0
        self._lock = threading.Lock()  # nodes of a batch advance in worker threads
        self.nodes_version = None  # resourceVersion of the last node list: where the node watch starts
        self.watch = None
        self._events = None  # executor posting Events while a rollout runs

    def _count(self):
        with self._lock:
            self.requests += 1

    def _warn(self, msg):
        with self._lock:
            if msg not in self.warnings:
                self.warnings.append(msg)

    # ============================================================== API helpers (dicts, not models)
    def _call(self, fn, *args, **kwargs):
        self._count()
        kwargs['_preload_content'] = False
        resp = fn(*args, **kwargs)
        data = resp.data if hasattr(resp, 'data') else resp.read()
        return json.loads(data) if data else {}

    def list_nodes(self):
        data = self._call(self.conn.core.list_node)
        self.nodes_version = (data.get('metadata') or {}).get('resourceVersion')
        return data.get('items', [])

    def get_node(self, name):
        return self._call(self.conn.core.read_node, name)

    def node_pods(self, name):
        return self._call(self.conn.core.list_pod_for_all_namespaces,
                          field_selector='spec.nodeName=%s' % name).get('items', [])

    def all_pods(self):
        return self._call(self.conn.core.list_pod_for_all_namespaces,
                          field_selector='status.phase!=Succeeded,status.phase!=Failed').get('items', [])

    def list_pdbs(self):
        return self._call(self.conn.policy.list_pod_disruption_budget_for_all_namespaces).get('items', [])

    def patch_node(self, name, body):
        return self._call(self.conn.core.patch_node, name, body)

    def event(self, node, reason, message, warning=False):
        """A Kubernetes Event on the node: progress visible with `kubectl get events`."""
        meta = node.get('metadata') or {}
        body = {
            'metadata': {'generateName': '%s.gpuops-' % meta.get('name'), 'namespace': 'default'},
            'involvedObject': {'kind': 'Node', 'name': meta.get('name'), 'uid': meta.get('uid'), 'apiVersion': 'v1'},
            'reason': reason, 'message': message, 'type': 'Warning' if warning else 'Normal',
            'source': {'component': EVENT_SOURCE}, 'reportingComponent': EVENT_SOURCE,
            'firstTimestamp': _now(), 'lastTimestamp': _now(), 'count': 1,
        }
        if self._events is not None:  # off the rollout's critical path
            self._events.submit(self._post_event, body)
        else:
            self._post_event(body)

    def _post_event(self, body):
        try:
            self._call(self.conn.core.create_namespaced_event, 'default', body)
        except Exception as exc:  # best effort: an event never stops a rollout
            self._warn('could not record event %s on node %s: %s' % (
                body['reason'], body['involvedObject']['name'], getattr(exc, 'reason', None) or exc))

    # ============================================================== planning
    def selected_pods(self, pods):
        """GPU pods to move off a node: active, not DaemonSet-owned, plus the optional selector."""
        chosen = gn.gpu_pods(pods)
        extra = self.opts.get('pod_selector') or {}
        if extra:
            others = [p for p in pods if gn.pod_is_active(p) and not gn.pod_is_daemonset(p)
                      and all(((p.get('metadata') or {}).get('labels') or {}).get(k) == v for k, v in extra.items())]
            names = set(id(p) for p in chosen)
            chosen += [p for p in others if id(p) not in names]
        return chosen

    @staticmethod
    def blocking_pdbs(pod, pdbs):
        meta = pod.get('metadata') or {}
        labels = meta.get('labels') or {}
        out = []
        for pdb in pdbs:
            if pdb['metadata'].get('namespace') != meta.get('namespace'):
                continue
            sel = (pdb.get('spec') or {}).get('selector') or {}
            if not sel:
                continue
            if not all(labels.get(k) == v for k, v in (sel.get('matchLabels') or {}).items()):
                continue
            if not all(_expr_match(labels, e) for e in sel.get('matchExpressions') or []):
                continue
            if (pdb.get('status') or {}).get('disruptionsAllowed', 0) < 1:
                out.append('%s/%s' % (pdb['metadata']['namespace'], pdb['metadata']['name']))
        return out

    def needs_work(self, node, value):
        ann = _annotations(node)
        return (not self.kind.at_target(node, value) or ANN_CORDONED in ann or ANN_PHASE in ann)

    def plan(self, assignments, nodes_by_name):
        """Nodes to change (and unfinished ones to resume), in batches; nothing written."""
        work = dict((n, v) for n, v in assignments.items() if self.needs_work(nodes_by_name[n], v))
        # a node a killed run left behind (our markers) is finished even if no longer assigned
        for name, node in nodes_by_name.items():
            ann = _annotations(node)
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
        pods = self.all_pods() if self.opts.get('drain', True) else []
        pdbs = self.list_pdbs() if pods else []
        by_node = {}
        for pod in pods:
            by_node.setdefault((pod.get('spec') or {}).get('nodeName'), []).append(pod)
        plan = []
        for index, batch in enumerate(batches):
            entries = []
            for name in batch:
                node = nodes_by_name[name]
                evict = self.selected_pods(by_node.get(name, []))
                entries.append({
                    'node': name,
                    'from': gn.node_gpu_info(node).get('mig_config') if self.kind.name == 'mig'
                    else (node['metadata'].get('labels') or {}).get(self.kind.label),
                    'to': work[name],
                    'resume': ANN_TARGET in _annotations(node),
                    'pods_to_evict': ['%s/%s' % (p['metadata']['namespace'], p['metadata']['name']) for p in evict],
                    'blocking_pdbs': sorted(set(b for p in evict for b in self.blocking_pdbs(p, pdbs))),
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
        opts = self.opts
        states = {}
        for name in batch:
            states[name] = {'node': name, 'to': work[name], 'phase': 'cordon', 'started': time.monotonic(),
                            'evicted': [], 'cycled': False, 'changed': False, 'detail': ''}
        deadline_for = {}
        outage_since = None
        workers = max(1, min(len(batch), MAX_WORKERS))
        if self.watch is not None:
            self.watch.follow(batch)
        next_poll = 0
        with ThreadPoolExecutor(max_workers=workers) as pool:
            while True:
                active = [st for st in states.values() if st['phase'] not in ('done', 'failed')]
                if not active:
                    break
                changed = self.watch.take() if self.watch is not None else set()
                if time.monotonic() >= next_poll:
                    next_poll = time.monotonic() + opts['poll_interval']
                else:  # woken by the watch: read only the nodes that changed
                    active = [st for st in active if st['node'] in changed]
                errors = [exc for exc in pool.map(lambda st: self._tick(st, deadline_for), active) if exc]
                try:
                    if errors:
                        raise errors[0]
                    outage_since = None
                except (_Retry, ApiException) + TRANSIENT_ERRORS as exc:
                    cause = exc.args[0] if isinstance(exc, _Retry) else exc
                    if isinstance(cause, ApiException) and not _transient(cause) and cause.status != 409:
                        raise
                    # API server restarting or overloaded: keep the state in memory and on the nodes,
                    # retry until api_timeout, then stop (the next run resumes from the annotations)
                    outage_since = outage_since or time.monotonic()
                    if time.monotonic() - outage_since > opts.get('api_timeout', 300):
                        raise RolloutFailed('the Kubernetes API did not answer for %ss (%s); nodes of this batch '
                                            'keep their gpuops.gpu annotations and the next run resumes them'
                                            % (opts.get('api_timeout', 300), cause), {'nodes': list(states.values())})
                    self.log('API unavailable (%s), retrying' % cause)
                    next_poll = time.monotonic() + opts['poll_interval']
                if any(s['phase'] not in ('done', 'failed') for s in states.values()):
                    wait = max(0.0, next_poll - time.monotonic())
                    if self.watch is not None:
                        self.watch.wait(wait)
                    else:
                        time.sleep(wait)
        for st in states.values():
            st['duration_s'] = round(st.pop('ended', time.monotonic()) - st.pop('started'), 2)
        return states

    def _tick(self, st, deadlines):
        """Read one node and advance it (in a worker thread); returns the exception to handle, if any."""
        try:
            node = self.get_node(st['node'])
            try:
                self.step(node, st, deadlines)
            except ApiException as exc:
                if exc.status == 409 or _transient(exc):
                    raise _Retry(exc)
                self.fail(node, st, 'API error %s %s: %s' % (exc.status, exc.reason, (exc.body or '')[:300]))
        except Exception as exc:  # handed to the tick loop, which retries outages and raises the rest
            return exc
        return None

    def step(self, node, st, deadlines):
        """Advance one node as far as it can go now without waiting: cordon, drain and label in one
        go when nothing is left to evict; verify and uncordon as soon as the state is reached.
        Stops after a write the next phase must see from the API (the label), and on a wait."""
        while True:
            phase = st['phase']
            self._step_once(node, st, deadlines)
            if st['phase'] in ('done', 'failed'):
                st['ended'] = time.monotonic()
            if st['phase'] in (phase, 'wait', 'done', 'failed'):
                return

    def _step_once(self, node, st, deadlines):
        """Advance one node by at most one phase (never blocks)."""
        name, value, kind = st['node'], st['to'], self.kind

        def key(phase):
            return (name, phase)
        if st['phase'] == 'cordon':
            self.cordon(node, value, st)
            st['phase'] = 'drain' if self.opts.get('drain', True) else 'label'
            deadlines[key('drain')] = time.monotonic() + self.opts['drain_timeout']
            return
        if st['phase'] == 'drain':
            if self.drain(node, st, deadlines[key('drain')]):
                st['phase'] = 'label'
            return
        if st['phase'] == 'label':
            if time.monotonic() < st.get('cleared_until', 0):
                return  # give the MIG manager's watch time to see the removal
            if kind.needs_label(node, value):
                if getattr(kind, 'cycle_same_value', True) and kind.labels(node).get(kind.label) == value:
                    # same value after a failure: the MIG manager only acts on a change, so remove
                    # the label first and set it again on the next tick (once the removal is seen)
                    self.patch_node(name, {'metadata': {'labels': kind.clear_patch()}})
                    st['cleared_until'] = time.monotonic() + CLEAR_PAUSE
                    st['changed'] = True
                    return
                self.patch_node(name, {'metadata': {
                    'labels': kind.label_patch(value),
                    'annotations': {ANN_PHASE: 'labelled', ANN_UPDATED: _now()}}})
                self.event(node, 'GpuopsLabel', 'set %s=%s' % (kind.label, value))
                st['changed'] = True
            restart = getattr(kind, 'restart', None)
            spec = restart(node, value) if restart is not None else None
            if spec:
                self.restart_pods(node, spec, st)
            st['phase'] = 'wait'
            deadlines[key('wait')] = time.monotonic() + self.opts['state_timeout']
            return
        if st['phase'] == 'wait':
            if st.get('restarting'):
                verdict, detail = self.restarted(node, st)
            else:
                verdict, detail = kind.progress(node, value)
            st['detail'] = detail
            if verdict == 'failed':
                self.fail(node, st, detail)
            elif verdict == 'done':
                st['phase'] = 'verify'
                deadlines[key('verify')] = time.monotonic() + self.opts['verify_timeout']
            elif verdict == 'rebooting' and not st.get('reboot_extended'):
                st['reboot_extended'] = True
                deadlines[key('wait')] = time.monotonic() + self.opts['reboot_timeout']
            elif time.monotonic() > deadlines[key('wait')]:
                if self.opts.get('retry_stuck') and not st['cycled']:
                    st['cycled'] = True
                    self.log('%s: stuck (%s), cycling %s once' % (name, detail, kind.label))
                    self.event(node, 'GpuopsRetry', 'stuck (%s): cycling %s once' % (detail, kind.label), True)
                    self.patch_node(name, {'metadata': {'labels': kind.clear_patch()}})
                    st['cleared_until'] = time.monotonic() + CLEAR_PAUSE
                    st['phase'] = 'label'
                else:
                    self.fail(node, st, 'stuck after %ss: %s' % (self.opts['state_timeout'], detail))
            return
        if st['phase'] == 'verify':
            if not self.opts.get('verify', True):
                st['phase'] = 'uncordon'
                return
            # kubelet keeps a resource whose device plugin went away at 0: zeros do not count
            expected = _nonzero(kind.expected_allocatable(node, value))
            actual = _nonzero(gn.gpu_resources((node.get('status') or {}).get('allocatable')))
            if actual == expected:
                st['allocatable'] = actual
                st['phase'] = 'uncordon'
            elif time.monotonic() > deadlines[key('verify')]:
                self.fail(node, st, 'allocatable GPU resources are %s, expected %s' % (actual, expected))
            return
        if st['phase'] == 'uncordon':
            self.finish(node, st)

    # ============================================================== node operations
    def cordon(self, node, value, st):
        name = node['metadata']['name']
        ann = _annotations(node)
        unschedulable = bool((node.get('spec') or {}).get('unschedulable'))
        patch = {'metadata': {'annotations': {ANN_TARGET: _target_marker(self.kind, value), ANN_PHASE: 'cordoned',
                                              ANN_REASON: None, ANN_UPDATED: _now()}}}
        gpus = getattr(self.kind, 'physical_gpus', lambda n: None)(node)
        if gpus and not ann.get('gpuops.gpu/physical-gpus'):
            patch['metadata']['annotations']['gpuops.gpu/physical-gpus'] = str(gpus)
        if not unschedulable:
            patch['spec'] = {'unschedulable': True}
            patch['metadata']['annotations'][ANN_CORDONED] = 'true'
            st['changed'] = True
        elif ann.get(ANN_TARGET) != _target_marker(self.kind, value) or ann.get(ANN_PHASE) == 'failed':
            st['changed'] = True
        self.patch_node(name, patch)
        self.event(node, 'GpuopsCordon', 'cordoned for %s=%s' % (self.kind.label, value)
                   if not unschedulable else 'rollout of %s=%s started' % (self.kind.label, value))

    def drain(self, node, st, deadline):
        """Evict the node's GPU pods; True once none is left."""
        name = node['metadata']['name']
        pods = self.selected_pods(self.node_pods(name))
        if not pods:
            return True
        st['changed'] = True
        blocked = []
        for pod in pods:
            meta = pod['metadata']
            ref = '%s/%s' % (meta['namespace'], meta['name'])
            if meta.get('deletionTimestamp'):
                continue
            try:
                self._call(self.conn.core.create_namespaced_pod_eviction, meta['name'], meta['namespace'], {
                    'apiVersion': 'policy/v1', 'kind': 'Eviction',
                    'metadata': {'name': meta['name'], 'namespace': meta['namespace']},
                    'deleteOptions': {'gracePeriodSeconds': self.opts.get('grace_period')}
                    if self.opts.get('grace_period') is not None else None})
                if ref not in st['evicted']:
                    st['evicted'].append(ref)
                    self.event(node, 'GpuopsEvict', 'evicted GPU pod %s' % ref)
            except ApiException as exc:
                if exc.status == 404:
                    continue
                if exc.status == 429:
                    blocked.append(ref)
                    continue
                raise
        if blocked and time.monotonic() > deadline:
            if self.opts.get('force'):
                for ref in blocked:
                    ns, pod_name = ref.split('/', 1)
                    try:
                        self._call(self.conn.core.delete_namespaced_pod, pod_name, ns,
                                   grace_period_seconds=self.opts.get('grace_period'))
                    except ApiException as exc:
                        if exc.status != 404:
                            raise
                    self._warn('force: deleted %s on %s past its PodDisruptionBudget' % (ref, name))
            else:
                self.fail(node, st, 'eviction of %s blocked by a PodDisruptionBudget for %ss (drain_timeout); '
                                    'scale the workload, relax the PDB or use force'
                          % (', '.join(blocked), self.opts['drain_timeout']))
        elif time.monotonic() > deadline:
            names = ', '.join('%s/%s' % (p['metadata']['namespace'], p['metadata']['name']) for p in pods)
            self.fail(node, st, 'GPU pods still on the node after %ss: %s' % (self.opts['drain_timeout'], names))
        return False

    def restart_pods(self, node, spec, st):
        """Delete the pods ``spec`` selects on the node (their DaemonSet recreates them), then record
        ``spec['annotations']`` on the node; a run killed in between deletes them again next time."""
        name = node['metadata']['name']
        pods = self._call(self.conn.core.list_namespaced_pod, spec['namespace'], label_selector=spec['selector'],
                          field_selector='spec.nodeName=%s' % name).get('items', [])
        # what each deleted pod was (app label) and where its DaemonSet wants it (nodeSelector)
        st['restarting'] = {'namespace': spec['namespace'], 'selector': spec['selector'],
                            'old': sorted(p['metadata']['uid'] for p in pods),
                            'pods': [((p['metadata'].get('labels') or {}).get('app'),
                                      (p.get('spec') or {}).get('nodeSelector') or {}) for p in pods]}
        st['restarted'] = []
        for pod in pods:
            meta = pod['metadata']
            try:
                self._call(self.conn.core.delete_namespaced_pod, meta['name'], meta['namespace'])
                st['restarted'].append('%s/%s' % (meta['namespace'], meta['name']))
            except ApiException as exc:
                if exc.status != 404:
                    raise
        if st['restarted']:
            self.event(node, 'GpuopsRestart', 'restarted %s' % ', '.join(st['restarted']))
        self.patch_node(name, {'metadata': {'annotations': dict(spec.get('annotations') or {}, **{ANN_UPDATED: _now()})}})
        st['changed'] = True

    def restarted(self, node, st):
        """('done'|'wait', detail): is every pod deleted by restart_pods back, Running and Ready?

        A pod whose nodeSelector no longer matches the node (e.g. the MPS control daemon once MPS is
        off) is not coming back and is not waited for.
        """
        spec = st['restarting']
        labels = (node.get('metadata') or {}).get('labels') or {}
        pods = self._call(self.conn.core.list_namespaced_pod, spec['namespace'], label_selector=spec['selector'],
                          field_selector='spec.nodeName=%s' % node['metadata']['name']).get('items', [])
        ready = [(p['metadata'].get('labels') or {}).get('app') for p in pods
                 if p['metadata']['uid'] not in spec['old'] and not p['metadata'].get('deletionTimestamp')
                 and (p.get('status') or {}).get('phase') == 'Running'
                 and any(c.get('type') == 'Ready' and c.get('status') == 'True'
                         for c in (p.get('status') or {}).get('conditions') or [])]
        missing = [app for app, selector in spec['pods']
                   if app not in ready and all(labels.get(k) == v for k, v in selector.items())]
        if not missing:
            st.pop('restarting')
            return 'wait', 'restarted pods are ready'
        return 'wait', 'waiting for the restarted %s pod(s) to be Running and Ready' % ', '.join(sorted(set(missing)))

    def fail(self, node, st, reason):
        """Leave the node cordoned and say why, on the node itself."""
        st['phase'] = 'failed'
        st['reason'] = reason
        self.patch_node(node['metadata']['name'], {'metadata': {'annotations': {
            ANN_PHASE: 'failed', ANN_REASON: reason[:1000], ANN_UPDATED: _now()}}})
        self.event(node, 'GpuopsFailed', reason, warning=True)

    def finish(self, node, st):
        ann = _annotations(node)
        patch = {'metadata': {'annotations': dict((k, None) for k in MARKERS)}}
        if ann.get(ANN_CORDONED) == 'true':
            patch['spec'] = {'unschedulable': False}
            st['changed'] = True
        if any(k in ann for k in MARKERS):
            st['changed'] = True
        self.patch_node(node['metadata']['name'], patch)
        if st['changed']:
            self.event(node, 'GpuopsDone', '%s=%s applied%s' % (self.kind.label, st['to'],
                                                                ', uncordoned' if 'spec' in patch else ''))
        st['phase'] = 'done'

    # ============================================================== the whole rollout
    def run(self, assignments, nodes_by_name):
        work, batches = self.plan(assignments, nodes_by_name)
        result = {'changed': bool(work), 'batches': [list(b) for b in batches], 'nodes': [], 'plan': []}
        if self.opts.get('check_mode'):
            result['plan'] = self.describe_plan(work, batches, nodes_by_name)
            return result
        if batches and hasattr(self.conn, 'pooled'):  # workers + the watch + the event posters
            self.conn = self.conn.pooled(min(max(len(b) for b in batches), MAX_WORKERS) + 3)
        if batches and self.nodes_version:
            self.watch = NodeWatch(self.conn.core, self.nodes_version, self._count)
        self._events = ThreadPoolExecutor(max_workers=2)
        try:
            self._run_batches(batches, work, nodes_by_name, result)
        finally:
            if self.watch is not None:
                self.watch.stop()
                self.watch = None
            self._events.shutdown(wait=True)
            self._events = None
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


def _nonzero(resources):
    return dict((k, v) for k, v in (resources or {}).items() if v)


def _expr_match(labels, expr):
    op, key, values = expr.get('operator'), expr.get('key'), expr.get('values') or []
    if op == 'In':
        return labels.get(key) in values
    if op == 'NotIn':
        return labels.get(key) not in values
    if op == 'Exists':
        return key in labels
    if op == 'DoesNotExist':
        return key not in labels
    return False


# ====================================================================== assignments (pure)
def _parse_selector(selector):
    """A label selector string ('a=b,c!=d,e,!f,g in (x,y),h notin (z)') as a predicate."""
    import re
    terms = []
    for part in re.findall(r'[^,(]+(?:\([^)]*\))?', selector or ''):
        part = part.strip()
        if not part:
            continue
        m = re.match(r'^([\w./-]+)\s+(in|notin)\s+\(([^)]*)\)$', part)
        if m:
            values = set(v.strip() for v in m.group(3).split(','))
            terms.append((m.group(1), m.group(2), values))
            continue
        m = re.match(r'^([\w./-]+)\s*(==|=|!=)\s*([\w./-]*)$', part)
        if m:
            terms.append((m.group(1), '!=' if m.group(2) == '!=' else '=', m.group(3)))
            continue
        m = re.match(r'^(!?)([\w./-]+)$', part)
        if m:
            terms.append((m.group(2), '!' if m.group(1) else 'exists', None))
            continue
        raise ValueError("cannot parse label selector term '%s' in '%s'" % (part, selector))

    def match(labels):
        for key, op, value in terms:
            have = labels.get(key)
            if (op == '=' and have != value) or (op == '!=' and have == value) \
                    or (op == 'in' and have not in value) or (op == 'notin' and have in value) \
                    or (op == 'exists' and key not in labels) or (op == '!' and key in labels):
                return False
        return True
    return match


def resolve_assignments(assignments, nodes_by_name, value_key):
    """[{nodes: [...] | label_selector: str | selector: {k: v}, <value_key>: value}] → ({node: value}, errors).

    A node named by two assignments with different values, an unknown node name, and a selector
    that matches no node are errors (nothing is written when there is any error).
    """
    out, errors = {}, []
    for index, item in enumerate(assignments or []):
        where = 'assignments[%d]' % index
        value = item.get(value_key)
        if value is None or value == '':
            errors.append('%s: %s is required' % (where, value_key))
            continue
        names = list(item.get('nodes') or [])
        selector = item.get('label_selector')
        if item.get('selector'):
            selector = ','.join('%s=%s' % (k, v) for k, v in sorted(item['selector'].items())) + \
                (',' + selector if selector else '')
        if not names and not selector:
            errors.append('%s: give nodes or a label_selector/selector' % where)
            continue
        missing = [n for n in names if n not in nodes_by_name]
        if missing:
            errors.append('%s: node(s) not found: %s' % (where, ', '.join(missing)))
        if selector:
            try:
                match = _parse_selector(selector)
            except ValueError as exc:
                errors.append('%s: %s' % (where, exc))
                continue
            selected = sorted(n for n, node in nodes_by_name.items()
                              if match((node.get('metadata') or {}).get('labels') or {}))
            if not selected:
                errors.append("%s: label selector '%s' matches no node" % (where, selector))
            names += selected
        for name in names:
            if name not in nodes_by_name:
                continue
            if out.get(name, value) != value:
                errors.append("node %s is assigned both '%s' and '%s'" % (name, out[name], value))
            out[name] = value
    return out, errors


def rollout_argument_spec():
    """The engine's options, shared by every module that drives it (documented once in the
    gpuops.gpu.rollout doc fragment, plus drain/verify/state_timeout in each module)."""
    return dict(
        max_unavailable=dict(type='raw', default=1),
        drain=dict(type='bool', default=True),
        pod_selector=dict(type='dict'),
        force=dict(type='bool', default=False),
        grace_period=dict(type='int'),
        drain_timeout=dict(type='int', default=300),
        verify=dict(type='bool', default=True),
        verify_timeout=dict(type='int', default=180),
        api_timeout=dict(type='int', default=300),
        poll_interval=dict(type='float', default=1.0),
    )
