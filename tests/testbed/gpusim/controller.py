"""Work queue + agent base class + the shared runtime context."""

import heapq
import logging
import os
import threading
import time

from gpusim import kube as K
from gpusim.informer import Informer, slim_pod

log = logging.getLogger("gpusim.controller")


class WorkQueue(object):
    """Deduplicating queue with delayed adds; a key is never processed by two workers at once."""

    def __init__(self):
        self._cond = threading.Condition()
        self._queue = []          # FIFO of keys ready now
        self._dirty = set()       # keys in _queue or to be re-queued after processing
        self._processing = set()
        self._delayed = []        # heap of (due, seq, key)
        self._seq = 0
        self._closed = False

    def add(self, key):
        with self._cond:
            if key in self._dirty:
                return
            self._dirty.add(key)
            if key not in self._processing:
                self._queue.append(key)
                self._cond.notify()

    def add_after(self, key, delay):
        if delay <= 0:
            self.add(key)
            return
        with self._cond:
            self._seq += 1
            heapq.heappush(self._delayed, (time.monotonic() + delay, self._seq, key))
            self._cond.notify()

    def _promote(self):
        now = time.monotonic()
        while self._delayed and self._delayed[0][0] <= now:
            _due, _s, key = heapq.heappop(self._delayed)
            if key not in self._dirty:
                self._dirty.add(key)
                if key not in self._processing:
                    self._queue.append(key)

    def get(self, timeout=1.0):
        """Next key or None (timeout/closed). Call done(key) after processing."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                self._promote()
                if self._queue:
                    key = self._queue.pop(0)
                    self._dirty.discard(key)
                    self._processing.add(key)
                    return key
                if self._closed:
                    return None
                wait = deadline - time.monotonic()
                if self._delayed:
                    wait = min(wait, self._delayed[0][0] - time.monotonic())
                if deadline - time.monotonic() <= 0:
                    return None
                self._cond.wait(max(0.01, wait))

    def done(self, key):
        with self._cond:
            self._processing.discard(key)
            if key in self._dirty:
                self._queue.append(key)
                self._cond.notify()

    def close(self):
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def __len__(self):
        with self._cond:
            return len(self._queue) + len(self._delayed)


class Context(object):
    """What every agent shares: client, config, catalog, informers, stop event."""

    def __init__(self, kube, cfg, catalog, stop=None):
        self.kube = kube
        self.cfg = cfg
        self.catalog = catalog
        self.stop = stop or threading.Event()
        self._informers = {}
        self._lock = threading.Lock()
        ns = cfg.get("operator_namespace") or os.environ.get("OPERATOR_NAMESPACE") or "gpu-operator"
        self.operator_namespace = ns

    def informer(self, res, namespace=None, transform=None):
        key = (res.group, res.version, res.plural, namespace)
        with self._lock:
            inf = self._informers.get(key)
            if inf is None:
                inf = Informer(self.kube, res, self.stop, namespace=namespace,
                               resync=self.cfg.get("resync_seconds", 300),
                               watch_timeout=self.cfg.get("watch_timeout_seconds", 240),
                               transform=transform)
                self._informers[key] = inf
                inf.start()
            return inf

    def nodes(self):
        return self.informer(K.NODES)

    def pods(self):
        inf = self.informer(K.PODS, transform=slim_pod)
        if "node" not in inf.indexers:
            inf.add_indexer("node", lambda p: [p["spec"]["nodeName"]] if p["spec"].get("nodeName")
                            else [])
        return inf

    def configmaps(self):
        return self.informer(K.CONFIGMAPS, namespace=self.operator_namespace)

    def clusterpolicies(self):
        return self.informer(K.CLUSTERPOLICIES)

    def cluster_policy(self):
        """The ClusterPolicy the operator honours (the oldest one), or None."""
        items = self.clusterpolicies().items()
        if not items:
            return None
        return sorted(items, key=lambda o: ((o["metadata"].get("creationTimestamp") or ""),
                                            o["metadata"]["name"]))[0]

    def gpuclusters(self):
        return self.informer(K.GPUCLUSTERS)

    def gpu_cluster(self):
        """The GPUCluster the simulated v26.7 operator follows (gpusim/gpucluster.py active), or None."""
        from gpusim import gpucluster
        return gpucluster.active(self.gpuclusters().items(), self.clusterpolicies().items())

    def operator_configmap(self, name):
        if not name:
            return None
        return self.configmaps().get("%s/%s" % (self.operator_namespace, name))

    def operator_configmaps(self):
        return {c["metadata"]["name"]: c for c in self.configmaps().items()}

    def informers(self):
        with self._lock:
            return list(self._informers.values())


class Agent(object):
    """A named controller: a queue, N worker threads, reconcile(key)."""

    name = "agent"
    workers = 2

    def __init__(self, ctx):
        self.ctx = ctx
        self.kube = ctx.kube
        self.cfg = ctx.cfg
        self.queue = WorkQueue()
        self.log = logging.getLogger("gpusim." + self.name)
        self._threads = []
        self._failures = {}

    def setup(self):
        """Create informers and register handlers (called once before start)."""

    def watched(self):
        """The informers whose caches must be synced before the agent is ready."""
        return ()

    def ready(self, timeout=60):
        """Whether every informer of watched() synced within ``timeout`` seconds (in all)."""
        end = time.monotonic() + timeout
        for inf in self.watched():
            if not inf.wait_synced(max(0.1, end - time.monotonic())):
                return False
        return True

    def patch_status(self, informer, obj, status):
        """Merge-patch the status subresource of ``obj`` (a cached object of ``informer``);
        the cache gets the answer at once. Returns the new object."""
        md = obj["metadata"]
        new = self.kube.merge_patch(informer.res, md["name"], {"status": status},
                                    md.get("namespace"), subresource="status")
        informer.update_local(new)
        return new

    def reconcile(self, key):
        raise NotImplementedError

    def start(self):
        for i in range(self.workers):
            t = threading.Thread(target=self._loop, name="%s-%d" % (self.name, i), daemon=True)
            t.start()
            self._threads.append(t)

    def stop(self, timeout=5):
        self.queue.close()
        deadline = time.monotonic() + timeout
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))

    def _loop(self):
        while not self.ctx.stop.is_set():
            key = self.queue.get(timeout=0.5)
            if key is None:
                continue
            try:
                self.reconcile(key)
                self._failures.pop(key, None)
            except K.ApiError as exc:
                if exc.status == 404:
                    # the object went away between cache and write: its DELETED event follows
                    self.log.debug("%s: %s (gone)", key, exc)
                    self._failures.pop(key, None)
                    continue
                n = self._failures.get(key, 0) + 1
                self._failures[key] = n
                delay = min(0.2 * (2 ** n), 30)
                terminating = exc.status == 403 and "being terminated" in (exc.body or "")
                level = logging.DEBUG if exc.status == 409 or terminating else logging.WARNING
                self.log.log(level, "%s: %s (retry in %.1fs)", key, exc, delay)
                self.queue.add_after(key, delay)
            except Exception:  # noqa: BLE001
                n = self._failures.get(key, 0) + 1
                self._failures[key] = n
                delay = min(0.5 * (2 ** n), 60)
                self.log.exception("%s: reconcile failed (retry in %.1fs)", key, delay)
                self.queue.add_after(key, delay)
            finally:
                self.queue.done(key)
