# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The Kubernetes API calls of a node rollout: nodes, pods, PodDisruptionBudgets, evictions and
Events, all as plain JSON through the run's ``k8s.client.Connection`` (which counts them).

Safe to use from the worker threads that advance the nodes of a batch; Events are posted off the
rollout's critical path (a small executor) while a rollout runs, and never stop it.

``known`` keeps the newest copy seen of each node the rollout follows (from the node list, its own
GETs, the answers to its patches and the node watch), compared by resourceVersion: while the watch
is alive it is as fresh as a GET, so the rollout reads it instead of asking the API again.

An exception of a node call carries ``gpuops_call`` (e.g. 'patch node'), which ``call_words`` turns,
with the HTTP status and the apiserver's own message, into the one line the user sees.

The fence: while a rollout holds the rollout lock, ``fence`` is the lock's (rollout/lock.py
RolloutLock.fence) and every write here (node patches, evictions, pod deletions) calls it first, so no
write leaves once the lease is another run's. Events are not fenced: they describe, they change nothing.

``SliceReader``: the ResourceSlices of NVIDIA's DRA driver by node, for the kinds that wait for a node's devices
(the DRA cutover, a MIG change on a DRA node).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import datetime
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.gpuops.gpu.plugins.module_utils.common.objects import meta_of, name_of
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import dra
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.dra_fleet import current_slices
from ansible_collections.gpuops.gpu.plugins.module_utils.ops.inventory import Lister
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.watch import NodeWatch
from ansible_collections.gpuops.gpu.plugins.module_utils.k8s.client import transport_words
from ansible_collections.gpuops.gpu.plugins.module_utils.common.errors import api_error_message, status_of

EVENT_SOURCE = 'gpuops.gpu'
_SLICE_GROUP, _SLICE_VERSION = dra.API_VERSION.split('/')
FENCE_CALL = 'renew the rollout lock'  # gpuops_call of an error of the fence's renewal


def call_words(exc):
    """One line for a failed call: '<call> failed: HTTP <status> <reason>: <apiserver message>'
    (never the raw response: headers and body are left out)."""
    what = getattr(exc, 'gpuops_call', None) or 'API call'
    if status_of(exc) is None:
        return '%s failed: %s' % (what, transport_words(exc))
    return '%s failed: HTTP %s' % (what, ' '.join(api_error_message(exc).split()))


def _named(what, fn, *args, **kwargs):
    """``fn(*args, **kwargs)``; an exception leaves with ``gpuops_call = what``."""
    try:
        return fn(*args, **kwargs)
    except Exception as exc:
        try:
            exc.gpuops_call = what
        except AttributeError:  # pragma: no cover - exceptions with __slots__
            pass
        raise


def _version(node):
    """A node's resourceVersion as a number (etcd's revision), None when it is not one."""
    try:
        return int(meta_of(node).get('resourceVersion'))
    except (TypeError, ValueError):
        return None


def now_iso():
    """The current UTC time, ISO 8601 to the second (annotation and Event timestamps)."""
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat()


class RolloutApi(object):
    """API calls over ``conn``; ``warnings`` collects what the module reports as warnings."""

    def __init__(self, conn):
        self.conn = conn
        self.warnings = []
        self.nodes_version = None  # resourceVersion of the last node list: where the node watch starts
        self._lock = threading.Lock()
        self._events = None  # executor posting Events while a rollout runs
        self.known = {}  # node name -> newest copy seen (see offer); only nodes the rollout follows
        self.fence = None  # called before every write while the rollout lock is held (RolloutLock.fence)

    # ------------------------------------------------------------------ the newest copy of each node
    def follow(self, nodes):
        """Keep the newest copy of these nodes (dicts as listed) from now on."""
        with self._lock:
            for node in nodes:
                self.known[node['metadata']['name']] = node

    def offer(self, node):
        """A copy of a node just read, written or watched: kept when it is newer than the one known
        (a followed node only; a copy whose resourceVersion is not a number is never kept)."""
        name = name_of(node)
        version = _version(node)
        with self._lock:
            if name in self.known and version is not None and version >= (_version(self.known[name]) or -1):
                self.known[name] = node

    def forget(self, name):
        """The node was deleted: its copy is stale (the next read asks the API, which says 404)."""
        with self._lock:
            if name in self.known:
                self.known[name] = None

    def newest(self, name):
        """The newest copy known of the node, or None."""
        with self._lock:
            node = self.known.get(name)
        return node if _version(node or {}) is not None else None

    def warn(self, msg):
        with self._lock:
            if msg not in self.warnings:
                self.warnings.append(msg)

    # ------------------------------------------------------------------ reads
    def list_nodes(self):
        data = self.conn.call(self.conn.core.list_node)
        self.nodes_version = meta_of(data).get('resourceVersion')
        return data.get('items', [])

    def get_node(self, name):
        node = _named('read node', self.conn.call, self.conn.core.read_node, name)
        self.offer(node)
        return node

    def node_pods(self, name):
        return _named('list pods', self.conn.call, self.conn.core.list_pod_for_all_namespaces,
                      field_selector='spec.nodeName=%s' % name).get('items', [])

    def all_pods(self):
        return self.conn.call(self.conn.core.list_pod_for_all_namespaces,
                              field_selector='status.phase!=Succeeded,status.phase!=Failed').get('items', [])

    def selected_pods_on(self, namespace, selector, node_name):
        """Pods of ``namespace`` matching the label ``selector`` on one node."""
        return _named('list pods', self.conn.call, self.conn.core.list_namespaced_pod, namespace,
                      label_selector=selector, field_selector='spec.nodeName=%s' % node_name).get('items', [])

    def list_pdbs(self):
        return self.conn.call(self.conn.policy.list_pod_disruption_budget_for_all_namespaces).get('items', [])

    # ------------------------------------------------------------------ writes
    def _proof(self, timeout=None):
        """The fence before a write: proof that the rollout lock is still this run's (LockLost when not)."""
        if self.fence is not None:
            _named(FENCE_CALL, self.fence, timeout)

    def patch_node(self, name, body, timeout=None):
        """Patch a node; ``timeout`` (connect, read) instead of the connection's."""
        self._proof(timeout)
        kwargs = {'_request_timeout': timeout} if timeout else {}
        node = _named('patch node', self.conn.call, self.conn.core.patch_node, name, body, **kwargs)
        if isinstance(node, dict):
            self.offer(node)
        return node

    def evict(self, name, namespace, grace_period=None):
        """Evict a pod through the Eviction API (PodDisruptionBudgets apply: HTTP 429 when one blocks)."""
        self._proof()
        return _named('evict pod %s/%s' % (namespace, name), self.conn.call,
                      self.conn.core.create_namespaced_pod_eviction, name, namespace, {
            'apiVersion': 'policy/v1', 'kind': 'Eviction', 'metadata': {'name': name, 'namespace': namespace},
            'deleteOptions': {'gracePeriodSeconds': grace_period} if grace_period is not None else None})

    def delete_pod(self, name, namespace, grace_period=None):
        """Delete a pod; False when it was already gone."""
        self._proof()
        kwargs = {} if grace_period is None else {'grace_period_seconds': grace_period}
        return _named('delete pod %s/%s' % (namespace, name), self.conn.call_or_none,
                      self.conn.core.delete_namespaced_pod, name, namespace, **kwargs) is not None

    # ------------------------------------------------------------------ events
    def event(self, node, reason, message, warning=False):
        """A Kubernetes Event on the node: progress visible with `kubectl get events`."""
        meta = meta_of(node)
        body = {
            'metadata': {'generateName': '%s.gpuops-' % meta.get('name'), 'namespace': 'default'},
            'involvedObject': {'kind': 'Node', 'name': meta.get('name'), 'uid': meta.get('uid'), 'apiVersion': 'v1'},
            'reason': reason, 'message': message, 'type': 'Warning' if warning else 'Normal',
            'source': {'component': EVENT_SOURCE}, 'reportingComponent': EVENT_SOURCE,
            'firstTimestamp': now_iso(), 'lastTimestamp': now_iso(), 'count': 1,
        }
        if self._events is not None:  # off the rollout's critical path
            self._events.submit(self._post_event, body)
        else:
            self._post_event(body)

    def _post_event(self, body):
        try:
            self.conn.call(self.conn.core.create_namespaced_event, 'default', body)
        except Exception as exc:  # best effort: an event never stops a rollout
            self.warn('could not record event %s on node %s: %s' % (
                body['reason'], body['involvedObject']['name'], getattr(exc, 'reason', None) or exc))

    def start_events(self):
        """Post Events in the background from now on (until stop_events)."""
        self._events = ThreadPoolExecutor(max_workers=2)

    def stop_events(self, wait=True):
        """Wait for the Events still being posted (or, with ``wait`` False when the API is away,
        drop those not sent yet); post directly again."""
        if self._events is not None:
            self._events.shutdown(wait=wait, cancel_futures=not wait)
            self._events = None


def slice_node(item):
    """The node a ResourceSlice is about: spec.nodeName, else its pool's name (the driver names pools after nodes)."""
    spec = item.get('spec') or {}
    return spec.get('nodeName') or (spec.get('pool') or {}).get('name')


class SliceReader(object):
    """The driver's current ResourceSlices by node, one list call shared by every node read within ``ttl``
    seconds (the engine asks for each node of a batch on each tick)."""

    def __init__(self, conn, ttl=0.5):
        self.conn = conn
        self.ttl = ttl
        self._lock = threading.Lock()
        self._read = None
        self._by_node = {}

    def list(self):
        """The driver's slices; 404 when ``resource.k8s.io/v1`` is not served, 403 when they may not be listed."""
        return Lister(self.conn).list(self.conn.custom.list_cluster_custom_object, 'ResourceSlices',
                                      missing=(403, 404), group=_SLICE_GROUP, version=_SLICE_VERSION,
                                      plural=dra.RESOURCE_SLICES,
                                      field_selector='%s=%s' % (dra.SLICE_DRIVER_FIELD, dra.DRIVER))

    def fill(self, slices):
        by_node = {}
        for item in current_slices(slices if isinstance(slices, list) else [])[0]:
            by_node.setdefault(slice_node(item), []).append(item)
        self._by_node, self._read = by_node, time.monotonic()

    def offer(self, _item):
        """A slice changed (the watch saw it): the next read lists them again."""
        with self._lock:
            self._read = None

    forget = offer

    def watch(self, conn, woken):
        """A watch of the driver's slices that wakes a rollout as soon as the slice of a node it follows changes
        (rollout/watch.py), instead of at its next poll; each change makes the next read list them again."""
        request = (conn.custom.list_cluster_custom_object, (_SLICE_GROUP, _SLICE_VERSION, dra.RESOURCE_SLICES),
                   {'field_selector': '%s=%s' % (dra.SLICE_DRIVER_FIELD, dra.DRIVER)})
        return NodeWatch(conn, None, woken=woken, cache=self, request=request, node_of=slice_node)

    def __call__(self, name):
        with self._lock:
            if self._read is None or time.monotonic() - self._read >= self.ttl:
                self.fill(self.list())
            return list(self._by_node.get(name, []))
