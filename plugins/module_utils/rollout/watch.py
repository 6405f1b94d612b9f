# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The node watch of a rollout: it wakes the rollout loop as soon as a node it follows changes, and
hands every copy it sees to the rollout's node cache (rollout.api.RolloutApi.offer), so the loop
acts on the change without reading the node again.

The watch is a raw (``_preload_content=False``) streamed node list: each line is decoded with
``json.loads`` into a plain dict, without building client model objects, which is what makes a
watch on hundreds of changing nodes cheap. Lines are read with the kubernetes client's own
``iter_resp_lines`` (measured at least as fast as a splitter of our own).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import threading

from ansible_collections.gpuops.gpu.plugins.module_utils.common.objects import meta_of

try:
    from kubernetes.watch.watch import iter_resp_lines
except ImportError:  # pragma: no cover - AnsibleK8SModule reports missing kubernetes
    iter_resp_lines = None

WATCH_SECONDS = 120  # server-side timeout of one watch request
WATCH_READ_SLACK = 15  # the client-side read timeout of a watch is this much longer than WATCH_SECONDS


def watch_events(resp):
    """The events (dicts) of a streamed watch response; blank lines are skipped."""
    for line in iter_resp_lines(resp):
        if line.strip():
            yield json.loads(line)


class NodeWatch(object):
    """Follows node changes from ``resource_version`` on, in a daemon thread (or, with ``request``
    (call, args, kwargs) and ``node_of`` (object -> node name), the changes of other objects that are
    about nodes, such as the DRA driver's ResourceSlices: rollout.api.SliceReader.watch).

    ``follow(names)`` sets the nodes of interest, ``take()`` returns those changed since the last
    call, ``wait(timeout)`` returns early when one changed (the rollout's common.waiter.Waiter wakes
    on it); ``woken`` is the event it sets (the rollout's, shared with its workers). ``cache``
    (offer(node), forget(name)) receives every node copy and deletion seen. ``alive`` is False
    once the watch ended for good (an ERROR event such as 410 Gone, a failed request): the rollout
    then reads each node with a GET again, polling every poll_interval. The watch request's read
    timeout is WATCH_SECONDS + WATCH_READ_SLACK, so a hung apiserver ends it too.
    """

    def __init__(self, conn, resource_version, woken=None, cache=None, request=None, node_of=None):
        self.conn = conn
        self.cache = cache
        self.alive = True
        self.version = resource_version
        self.names = frozenset()
        self.changed = set()
        self.woken = woken if woken is not None else threading.Event()
        self.lock = threading.Lock()
        self.stopped = False
        self.resp = None
        # another kind of object than nodes: the list call and its arguments, and the node an object is about
        self.request = request or (conn.core.list_node, (), {})
        self.node_of = node_of or (lambda obj: meta_of(obj).get('name'))
        self.thread = threading.Thread(target=self._run, name='gpuops-watch')
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
        try:
            self._follow()
        finally:
            self.alive = False

    def _follow(self):
        while not self.stopped:
            try:
                call, args, kwargs = self.request
                self.resp = self.conn.request(call, *args, watch=True, resource_version=self.version,
                                              timeout_seconds=WATCH_SECONDS, allow_watch_bookmarks=True,
                                              _request_timeout=self._timeout(), **kwargs)
                for event in watch_events(self.resp):
                    if self.stopped or event.get('type') == 'ERROR':  # e.g. 410 Gone: polling goes on alone
                        return
                    self._seen(event.get('type'), event.get('object') or {})
            except Exception:  # API restarting, connection closed by stop(): polling goes on
                return

    def _timeout(self):
        connect = (getattr(self.conn, 'timeout', None) or (5, None))[0]
        return (connect, WATCH_SECONDS + WATCH_READ_SLACK)

    def _seen(self, kind, obj):
        meta = meta_of(obj)
        self.version = meta.get('resourceVersion') or self.version
        if self.cache is not None and kind in ('ADDED', 'MODIFIED'):
            self.cache.offer(obj)
        elif self.cache is not None and kind == 'DELETED':
            self.cache.forget(meta.get('name'))
        name = self.node_of(obj)
        with self.lock:
            if name in self.names:
                self.changed.add(name)
                self.woken.set()

    def stop(self):
        self.stopped = True
        resp = self.resp
        if resp is not None:
            try:
                getattr(resp, 'shutdown', resp.close)()
                resp.release_conn()
            except Exception:  # already closed
                pass
