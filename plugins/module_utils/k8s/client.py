# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one connection to the Kubernetes API of a module run, with its one request counter.

It reuses kubernetes.core's API client unchanged, so the ``K8S_AUTH_*`` environment (AWX/AAP
credentials), kubeconfig files or dicts, contexts, tokens and in-cluster configuration behave
exactly as they do for ``kubernetes.core.k8s``.

Calls go through ``Connection.call`` (one request, counted, answered as plain JSON: dicts and
lists, never client model objects, which is also the fast way for large lists) or
``Connection.request`` (counted, the raw response: streams, logs). Callers never count requests
themselves; ``Connection.requests`` is the module's ``api_requests``.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import json
import threading

from ansible_collections.gpuops.gpu.plugins.module_utils.k8s.errors import ApiError, status_of

try:
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client
except ImportError:  # pragma: no cover - reported by k8s.runner.gpu_module
    get_api_client = None

try:
    from kubernetes.client import ApiClient, BatchV1Api, CoreV1Api, CustomObjectsApi, PolicyV1Api
except ImportError:  # pragma: no cover - AnsibleK8SModule reports missing kubernetes
    ApiClient = BatchV1Api = CoreV1Api = CustomObjectsApi = PolicyV1Api = None

APIS = ('core', 'custom', 'policy', 'batch', 'dynamic')


def decode(response):
    """A raw (``_preload_content=False``) response as JSON data; data that is already decoded
    (a dict, a list) is returned as it is, an empty body is {}."""
    data = response.data if hasattr(response, 'data') else response
    if isinstance(data, (bytes, str)):
        return json.loads(data) if data else {}
    return {} if data is None else data


class _Counter(object):
    """Requests made, shared by a connection and its pooled copies (thread-safe)."""

    def __init__(self):
        self.value = 0
        self.lock = threading.Lock()

    def add(self):
        with self.lock:
            self.value += 1


class Connection(object):
    """API objects over one kubernetes.core client (one connection pool) and one request counter.

    ``Connection(module=module)`` opens the client on first use of an API object (so a run that
    needs no request, e.g. a check-mode plan, needs no reachable cluster); ``Connection(core=...,
    custom=..., ...)`` wraps given API objects (tests, or anything with the same methods).
    ``core`` is a CoreV1Api, ``custom`` CustomObjectsApi, ``policy`` PolicyV1Api, ``batch``
    BatchV1Api, ``dynamic`` kubernetes.core's dynamic client.
    """

    def __init__(self, module=None, **apis):
        unknown = set(apis) - set(APIS)
        if unknown:
            raise TypeError('unknown API objects: %s' % ', '.join(sorted(unknown)))
        self._module = module
        self._counter = _Counter()
        self.client = None
        if module is None:
            for name in APIS:
                setattr(self, name, apis.get(name))

    def __getattr__(self, name):
        """The API objects of a connection not opened yet: open it now."""
        if name in APIS and self.__dict__.get('_module') is not None:
            self.open()
            return self.__dict__[name]
        raise AttributeError(name)

    def open(self):
        """Connect now (a no-op when connected or wrapping given API objects). Raises ApiError."""
        module = self.__dict__.get('_module')
        if module is None:
            return
        try:
            self.client = get_api_client(module=module)
        except Exception as exc:  # kubernetes.core raises several types for bad auth/config
            raise ApiError('Could not connect to the Kubernetes API: %s' % exc)
        self._module = None
        self._typed(self.client.client.client)
        self.dynamic = self.client.client

    def _typed(self, api_client):
        self.core = CoreV1Api(api_client)
        self.custom = CustomObjectsApi(api_client)
        self.policy = PolicyV1Api(api_client)
        self.batch = BatchV1Api(api_client)

    @property
    def requests(self):
        """API requests made through this connection and its pooled copies."""
        return self._counter.value

    def request(self, fn, *args, **kwargs):
        """One counted request of a kubernetes.client API method, answered raw (not decoded)."""
        self._counter.add()
        kwargs['_preload_content'] = False
        return fn(*args, **kwargs)

    def call(self, fn, *args, **kwargs):
        """One counted request, its answer as JSON data (dicts and lists)."""
        self._counter.add()
        kwargs['_preload_content'] = False
        return decode(fn(*args, **kwargs))

    def call_or_none(self, fn, *args, **kwargs):
        """``call``, but None when the object is not there (HTTP 404)."""
        try:
            return self.call(fn, *args, **kwargs)
        except Exception as exc:  # ApiException: anything else than 404 goes on up
            if status_of(exc) == 404:
                return None
            raise

    def pooled(self, size):
        """This connection, or a copy with room for ``size`` concurrent requests (same
        configuration and headers, its own connection pool, the same request counter)."""
        self.open()
        if self.client is None:
            return self
        api_client = self.client.client.client
        config = api_client.configuration
        if (config.connection_pool_maxsize or 0) >= size:
            return self
        config = copy.copy(config)
        config.connection_pool_maxsize = size
        wide = ApiClient(config)
        wide.default_headers.update(api_client.default_headers)
        clone = copy.copy(self)
        clone._typed(wide)
        return clone


def connect(module):
    """The connection of a module run (opened on first use; see Connection)."""
    return Connection(module=module)
