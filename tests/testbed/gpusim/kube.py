"""Thin raw-REST layer over the kubernetes Python client (objects are plain dicts).

Using the ApiClient directly (not the typed APIs) keeps 1000-node lists fast (no model
deserialisation) and lets one code path serve core resources and CRDs alike.
"""

import json
import logging
import threading
import time
import uuid
from datetime import datetime, timezone

import urllib3
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config
from kubernetes.client.rest import ApiException
from kubernetes.watch.watch import iter_resp_lines

log = logging.getLogger("gpusim.kube")


class Resource(object):
    """A REST resource: group/version/plural, namespaced or not."""

    def __init__(self, group, version, plural, namespaced, kind=None):
        self.group = group
        self.version = version
        self.plural = plural
        self.namespaced = namespaced
        self.kind = kind

    @property
    def api_version(self):
        return "%s/%s" % (self.group, self.version) if self.group else self.version

    def base(self):
        if not self.group:
            return "/api/%s" % self.version
        return "/apis/%s/%s" % (self.group, self.version)

    def path(self, namespace=None, name=None, subresource=None):
        p = self.base()
        if self.namespaced and namespace:
            p += "/namespaces/%s" % namespace
        p += "/" + self.plural
        if name:
            p += "/" + name
            if subresource:
                p += "/" + subresource
        return p

    def __repr__(self):
        return "%s.%s" % (self.plural, self.group or "core")


NODES = Resource("", "v1", "nodes", False, "Node")
PODS = Resource("", "v1", "pods", True, "Pod")
CONFIGMAPS = Resource("", "v1", "configmaps", True, "ConfigMap")
NAMESPACES = Resource("", "v1", "namespaces", False, "Namespace")
EVENTS = Resource("", "v1", "events", True, "Event")
SERVICEACCOUNTS = Resource("", "v1", "serviceaccounts", True, "ServiceAccount")
CLUSTERPOLICIES = Resource("nvidia.com", "v1", "clusterpolicies", False, "ClusterPolicy")
GPUCLUSTERS = Resource("nvidia.com", "v1alpha1", "gpuclusters", False, "GPUCluster")
NFD_OPENSHIFT = Resource("nfd.openshift.io", "v1", "nodefeaturediscoveries", True,
                         "NodeFeatureDiscovery")
NFD_K8S = Resource("nfd.k8s-sigs.io", "v1alpha1", "nodefeaturediscoveries", True,
                   "NodeFeatureDiscovery")
OLM = "operators.coreos.com"
SUBSCRIPTIONS = Resource(OLM, "v1alpha1", "subscriptions", True, "Subscription")
INSTALLPLANS = Resource(OLM, "v1alpha1", "installplans", True, "InstallPlan")
CSVS = Resource(OLM, "v1alpha1", "clusterserviceversions", True, "ClusterServiceVersion")
CATALOGSOURCES = Resource(OLM, "v1alpha1", "catalogsources", True, "CatalogSource")
OPERATORGROUPS = Resource(OLM, "v1", "operatorgroups", True, "OperatorGroup")
PACKAGEMANIFESTS = Resource("packages.operators.coreos.com", "v1", "packagemanifests", True,
                            "PackageManifest")
OPERATORHUBS = Resource("config.openshift.io", "v1", "operatorhubs", False, "OperatorHub")
MACHINESETS = Resource("machine.openshift.io", "v1beta1", "machinesets", True, "MachineSet")
MACHINES = Resource("machine.openshift.io", "v1beta1", "machines", True, "Machine")


class ApiError(Exception):
    def __init__(self, status, reason, body=""):
        Exception.__init__(self, "%s %s %s" % (status, reason, (body or "")[:500]))
        self.status = status
        self.reason = reason
        self.body = body


def now_iso():
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Kube(object):
    """Raw REST calls; every method returns/accepts plain dicts. Thread-safe."""

    def __init__(self, kubeconfig=None, context=None, pool_size=96, timeout=30, retries=0):
        """``pool_size``: connections kept for reuse; enough for every watch and every worker of the
        simulator's agents at once, so that a burst of writes opens no new TLS connections.
        ``retries``: how many times a call is sent again after a transient failure (no
        connection, HTTP 429 or 5xx), waiting 0.2 s, 0.4 s, ... in between (0: never)."""
        conf = k8s_client.Configuration()
        k8s_config.load_kube_config(config_file=kubeconfig, context=context,
                                    client_configuration=conf)
        conf.connection_pool_maxsize = pool_size
        self.api = k8s_client.ApiClient(conf)
        self.timeout = timeout
        self.retries = retries
        self.requests = 0
        self._lock = threading.Lock()
        self._exists = {}

    def _call(self, method, path, query=None, body=None, content_type=None, stream=False,
              timeout=None):
        for attempt in range(self.retries + 1):
            try:
                return self._call_once(method, path, query, body, content_type, stream, timeout)
            except (ApiError, urllib3.exceptions.HTTPError, OSError) as exc:
                if attempt == self.retries or not is_transient(exc):
                    raise
                time.sleep(0.2 * (attempt + 1))

    def _call_once(self, method, path, query, body, content_type, stream, timeout):
        headers = {"Accept": "application/json"}
        if content_type:
            headers["Content-Type"] = content_type
        with self._lock:
            self.requests += 1
        try:
            resp = self.api.call_api(
                path, method, query_params=list((query or {}).items()), header_params=headers,
                body=body, auth_settings=["BearerToken"], _preload_content=False,
                _return_http_data_only=True,
                _request_timeout=timeout if timeout is not None else self.timeout)
        except ApiException as exc:
            raise ApiError(exc.status, exc.reason, exc.body if isinstance(exc.body, str)
                           else (exc.body or b"").decode("utf-8", "replace"))
        if stream:
            return resp
        try:
            data = resp.data
        finally:
            resp.release_conn()
        return json.loads(data) if data else None

    # -- generic verbs --------------------------------------------------------------------

    def ready(self, path="/readyz"):
        """Whether a health endpoint of the apiserver (/readyz, /livez) answers 200."""
        resp = self._call("GET", path, stream=True)
        try:
            resp.data  # noqa: B018 - read the body so that the connection can be reused
            return resp.status == 200
        finally:
            resp.release_conn()

    def get(self, res, name, namespace=None):
        return self._call("GET", res.path(namespace, name))

    def get_or_none(self, res, name, namespace=None):
        try:
            return self.get(res, name, namespace)
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    def list(self, res, namespace=None, label_selector=None, field_selector=None, limit=500):
        """Full list (paginated). Returns (items, resourceVersion)."""
        items, cont = [], None
        while True:
            q = dict(_selectors(label_selector, field_selector), limit=limit)
            if cont:
                q["continue"] = cont
            doc = self._call("GET", res.path(namespace), q)
            items.extend(doc.get("items") or [])
            cont = (doc.get("metadata") or {}).get("continue")
            if not cont:
                return items, (doc.get("metadata") or {}).get("resourceVersion")

    def watch(self, res, resource_version, namespace=None, timeout_seconds=240,
              label_selector=None, field_selector=None):
        """Yield (type, object) from a watch starting at resource_version."""
        q = dict(_selectors(label_selector, field_selector), watch="true",
                 resourceVersion=resource_version, allowWatchBookmarks="true",
                 timeoutSeconds=int(timeout_seconds))
        resp = self._call("GET", res.path(namespace), q, stream=True,
                          timeout=(10, timeout_seconds + 30))
        try:
            for line in iter_resp_lines(resp):
                if not line:
                    continue
                ev = json.loads(line)
                yield ev.get("type"), ev.get("object") or {}
        finally:
            resp.release_conn()

    def create(self, res, obj, namespace=None):
        return self._call("POST", res.path(namespace or (obj.get("metadata") or {})
                                           .get("namespace")), body=obj)

    def merge_patch(self, res, name, patch, namespace=None, subresource=None):
        return self._call("PATCH", res.path(namespace, name, subresource), body=patch,
                          content_type="application/merge-patch+json")

    def json_patch(self, res, name, ops, namespace=None, subresource=None):
        return self._call("PATCH", res.path(namespace, name, subresource), body=ops,
                          content_type="application/json-patch+json")

    def apply(self, res, obj, field_manager, force=True):
        """Server-side apply of ``obj`` (its metadata names it) as ``field_manager``."""
        md = obj["metadata"]
        query = {"fieldManager": field_manager}
        if force:
            query["force"] = "true"
        return self._call("PATCH", res.path(md.get("namespace"), md["name"]), query, body=obj,
                          content_type="application/apply-patch+yaml")

    def replace(self, res, obj, namespace=None, subresource=None):
        md = obj["metadata"]
        return self._call("PUT", res.path(namespace or md.get("namespace"), md["name"],
                                          subresource), body=obj)

    def delete(self, res, name, namespace=None, propagation=None):
        body = {"propagationPolicy": propagation} if propagation else None
        try:
            return self._call("DELETE", res.path(namespace, name), body=body)
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    def exists(self, res, refresh=False):
        """Whether the API serves this resource (discovery, cached)."""
        key = (res.group, res.version, res.plural)
        if not refresh and self._exists.get(key):
            return True
        try:
            doc = self._call("GET", res.base())
            ok = any(r.get("name") == res.plural for r in doc.get("resources") or [])
        except ApiError:
            ok = False
        self._exists[key] = ok
        return ok

    def ensure_namespace(self, name):
        if self.get_or_none(NAMESPACES, name) is None:
            try:
                self.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                                         "metadata": {"name": name}})
            except ApiError as exc:
                if exc.status != 409:
                    raise

    def event(self, involved, etype, reason, message, component="gpusim"):
        """Record a core/v1 Event about `involved` (a dict with kind/name/namespace/uid)."""
        md = involved.get("metadata") or {}
        ns = md.get("namespace") or "default"
        ts = now_iso()
        obj = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "%s.%s" % (md.get("name", "x"), uuid.uuid4().hex[:16]),
                         "namespace": ns},
            "involvedObject": {"apiVersion": involved.get("apiVersion", "v1"),
                               "kind": involved.get("kind", "Node"), "name": md.get("name"),
                               "namespace": md.get("namespace"), "uid": md.get("uid")},
            "reason": reason, "message": (message or "")[:1024], "type": etype,
            "source": {"component": component}, "reportingComponent": component,
            "reportingInstance": component, "firstTimestamp": ts, "lastTimestamp": ts,
            "count": 1,
        }
        try:
            self.create(EVENTS, obj, ns)
        except ApiError as exc:
            log.debug("event not recorded: %s", exc)


def _selectors(label_selector, field_selector):
    """The query parameters of the selectors that are set."""
    q = {"labelSelector": label_selector, "fieldSelector": field_selector}
    return {k: v for k, v in q.items() if v}


def is_transient(exc):
    """A failure worth sending the same call again for: no connection (status 0 or a
    transport error), too many requests (429) or a server error (5xx)."""
    if isinstance(exc, ApiError):
        return exc.status in (0, 429) or (exc.status or 0) >= 500
    return isinstance(exc, (urllib3.exceptions.HTTPError, OSError))


def retry_conflicts(fn, attempts=5, delay=0.2):
    for i in range(attempts):
        try:
            return fn()
        except ApiError as exc:
            if exc.status not in (409, 429, 500, 503) or i == attempts - 1:
                raise
            time.sleep(delay * (i + 1))
