"""List+watch cache (one thread per watched resource), shared by the agents.

* one LIST (paginated) then WATCH from its resourceVersion, with bookmarks; 410 Gone -> re-list;
* a full re-list every `resync` seconds delivers SYNC events for every object, so controllers
  are level-triggered (a missed event is repaired at the next resync);
* a resource the API does not serve (CRD not installed yet) is re-checked every 5 s, and the
  informer counts as synced (empty) meanwhile;
* objects can be slimmed by a `transform` (pods keep only what the agents read).
"""

import logging
import threading
import time

from gpusim.kube import ApiError

log = logging.getLogger("gpusim.informer")

ADDED, MODIFIED, DELETED, SYNC = "ADDED", "MODIFIED", "DELETED", "SYNC"


def obj_key(obj):
    md = obj.get("metadata") or {}
    ns = md.get("namespace")
    return "%s/%s" % (ns, md["name"]) if ns else md["name"]


def _rv(obj):
    try:
        return int((obj.get("metadata") or {}).get("resourceVersion") or 0)
    except ValueError:
        return 0


class Informer(threading.Thread):
    def __init__(self, kube, res, stop, namespace=None, label_selector=None, field_selector=None,
                 resync=300, watch_timeout=240, transform=None):
        threading.Thread.__init__(self, name="informer-%s" % res.plural, daemon=True)
        self.kube = kube
        self.res = res
        self.stop = stop
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.resync = resync
        self.watch_timeout = watch_timeout
        self.transform = transform or (lambda o: o)
        self.store = {}
        self.lock = threading.RLock()
        self.handlers = []
        self.synced = threading.Event()
        self.available = False
        self.indexers = {}      # name -> fn(obj) -> list of index keys
        self.indexes = {}       # name -> {index key: set(obj keys)}

    # -- public ---------------------------------------------------------------------------

    def add_handler(self, fn):
        """fn(event_type, obj, old) is called from this informer's thread; keep it cheap."""
        self.handlers.append(fn)
        with self.lock:
            items = list(self.store.values())
        for obj in items:
            self._deliver(SYNC, obj, None, [fn])

    def add_indexer(self, name, fn):
        with self.lock:
            self.indexers[name] = fn
            idx = {}
            for key, obj in self.store.items():
                for ik in fn(obj) or ():
                    idx.setdefault(ik, set()).add(key)
            self.indexes[name] = idx

    def by_index(self, name, value):
        with self.lock:
            return [self.store[k] for k in self.indexes.get(name, {}).get(value, ()) if k in self.store]

    def get(self, key):
        with self.lock:
            return self.store.get(key)

    def items(self):
        with self.lock:
            return list(self.store.values())

    def keys(self):
        with self.lock:
            return list(self.store.keys())

    def update_local(self, obj):
        """Put an object we just wrote into the cache (if newer) and tell the handlers now;
        its watch event, arriving later with the same resourceVersion, is then skipped."""
        if not obj or "metadata" not in obj:
            return
        obj = self.transform(obj)
        key = obj_key(obj)
        with self.lock:
            old = self.store.get(key)
            if old is not None and _rv(old) >= _rv(obj):
                return
            self._put(key, obj, old)
        self._deliver(ADDED if old is None else MODIFIED, obj, old)

    def wait_synced(self, timeout=None):
        return self.synced.wait(timeout)

    # -- internals ------------------------------------------------------------------------

    def _index_add(self, key, obj):
        for name, fn in self.indexers.items():
            for ik in fn(obj) or ():
                self.indexes[name].setdefault(ik, set()).add(key)

    def _index_del(self, key, obj):
        for name, fn in self.indexers.items():
            for ik in fn(obj) or ():
                s = self.indexes[name].get(ik)
                if s is not None:
                    s.discard(key)
                    if not s:
                        del self.indexes[name][ik]

    def _put(self, key, obj, old):
        if old is not None:
            self._index_del(key, old)
        self.store[key] = obj
        self._index_add(key, obj)

    def _pop(self, key):
        old = self.store.pop(key, None)
        if old is not None:
            self._index_del(key, old)
        return old

    def _deliver(self, etype, obj, old, handlers=None):
        for fn in handlers or self.handlers:
            try:
                fn(etype, obj, old)
            except Exception:  # noqa: BLE001 - a handler bug must not kill the informer
                log.exception("%s handler failed", self.res)

    def _relist(self):
        items, rv = self.kube.list(self.res, self.namespace, self.label_selector,
                                   self.field_selector)
        fresh = {}
        for raw in items:
            obj = self.transform(raw)
            fresh[obj_key(obj)] = obj
        events = []
        with self.lock:
            for key in list(self.store):
                if key not in fresh:
                    events.append((DELETED, self._pop(key), None))
            for key, obj in fresh.items():
                old = self.store.get(key)
                self._put(key, obj, old)
                if old is None:
                    events.append((ADDED, obj, None))
                elif _rv(old) != _rv(obj):
                    events.append((MODIFIED, obj, old))
                else:
                    events.append((SYNC, obj, old))
        for etype, obj, old in events:
            self._deliver(etype, obj, old)
        return rv

    def run(self):
        backoff = 1.0
        rv = None
        last_list = 0.0
        while not self.stop.is_set():
            try:
                if not self._available():
                    continue
                if rv is None or time.time() - last_list >= self.resync:
                    rv = self._relist()
                    last_list = time.time()
                    self.synced.set()
                    backoff = 1.0
                timeout = max(5, min(self.watch_timeout,
                                     int(self.resync - (time.time() - last_list)) + 1))
                rv = self._watch(rv, timeout)
                backoff = 1.0
            except ApiError as exc:
                if exc.status == 404:
                    self.available = False
                elif exc.status == 410:
                    rv = None
                    continue
                log.warning("%s: %s (retry in %.0fs)", self.res, exc, backoff)
                rv = None
                self.stop.wait(backoff)
                backoff = min(backoff * 2, 30)
            except Exception as exc:  # noqa: BLE001 - network errors, apiserver restarts
                if self.stop.is_set():
                    return
                log.warning("%s: watch failed: %s (retry in %.0fs)", self.res, exc, backoff)
                rv = None
                self.stop.wait(backoff)
                backoff = min(backoff * 2, 30)

    def _available(self):
        """Whether the API serves the resource (a CRD may come later); when it does not, the
        cache counts as synced (empty) and the next check is in 5 s."""
        if self.available:
            return True
        if not self.kube.exists(self.res, refresh=True):
            self.synced.set()
            self.stop.wait(5)
            return False
        self.available = True
        log.info("watching %s", self.res)
        return True

    def _watch(self, rv, timeout):
        """Apply the events of one watch from ``rv``; returns the resourceVersion to go on
        from (None after an ERROR event: list again)."""
        for etype, raw in self.kube.watch(self.res, rv, self.namespace, timeout,
                                          self.label_selector, self.field_selector):
            if self.stop.is_set():
                return rv
            if etype == "BOOKMARK":
                rv = (raw.get("metadata") or {}).get("resourceVersion") or rv
                continue
            if etype == "ERROR":
                if raw.get("code") == 410:
                    log.info("%s: watch expired (410), re-listing", self.res)
                else:
                    log.warning("%s: watch error %s", self.res, raw.get("message"))
                return None
            obj = self._on_event(etype, raw)
            rv = (obj.get("metadata") or {}).get("resourceVersion") or rv
        return rv

    def _on_event(self, etype, raw):
        """Store one watch event's object and hand it to the handlers, unless the store already
        has it (update_local) or a newer version; returns the (transformed) object."""
        obj = self.transform(raw)
        key = obj_key(obj)
        with self.lock:
            if etype == DELETED:
                old = self._pop(key)
            else:
                old = self.store.get(key)
                if old is not None and _rv(old) >= _rv(obj):
                    return obj
                self._put(key, obj, old)
        if etype == DELETED:
            self._deliver(DELETED, obj, old)
        else:
            self._deliver(ADDED if old is None else MODIFIED, obj, old)
        return obj


def slim_pod(pod):
    """Keep only what the agents read from a pod (memory at 1000 nodes x N pods)."""
    md = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    gpu = set()
    for group in ("containers", "initContainers"):
        for c in spec.get(group) or []:
            res = c.get("resources") or {}
            for kind in ("requests", "limits"):
                for name, q in (res.get(kind) or {}).items():
                    if str(q) not in ("0", ""):
                        gpu.add(name)
    return {
        "metadata": {"name": md.get("name"), "namespace": md.get("namespace"),
                     "uid": md.get("uid"), "labels": md.get("labels") or {},
                     "resourceVersion": md.get("resourceVersion"),
                     "creationTimestamp": md.get("creationTimestamp"),
                     "deletionTimestamp": md.get("deletionTimestamp")},
        "spec": {"nodeName": spec.get("nodeName"),
                 # what the workload-logs agent needs to know what a container prints
                 "containers": [{"name": c.get("name"), "image": c.get("image"), "command": bool(c.get("command")),
                                 # DRA: the pod claims the container uses (the scheduler bound the pod only after
                                 # allocating them)
                                 "claims": bool((c.get("resources") or {}).get("claims"))}
                                for c in spec.get("containers") or []]},
        "status": {"phase": (pod.get("status") or {}).get("phase"),
                   # DRA: the containers whose extended resources the scheduler served through a DeviceClass
                   "extendedResourceContainers": sorted(set(
                       m.get("containerName") for m in ((pod.get("status") or {}).get("extendedResourceClaimStatus")
                                                        or {}).get("requestMappings") or []))},
        "resources": sorted(gpu),
    }
