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

Every request is bounded on the client side: ``Connection.timeout`` is a (connect, read) pair
(seconds) derived from the module's ``api_timeout`` when it has one (``request_timeout``), set on
every request that does not name its own ``_request_timeout`` (also the dynamic client's, which
shares the API client), and a read that times out is not retried by urllib3: one hung request
(a stopped apiserver that still accepts connections) costs one read timeout, not four.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import gc
import json
import os
import threading

from ansible_collections.gpuops.gpu.plugins.module_utils.common.errors import ApiError, status_of

try:
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client
except ImportError:  # pragma: no cover - reported by k8s.runner.gpu_module
    get_api_client = None

try:
    from kubernetes.client import ApiClient, AppsV1Api, BatchV1Api, Configuration, CoreV1Api, CustomObjectsApi, PolicyV1Api
except ImportError:  # pragma: no cover - AnsibleK8SModule reports missing kubernetes
    ApiClient = AppsV1Api = BatchV1Api = Configuration = CoreV1Api = CustomObjectsApi = PolicyV1Api = None

try:
    from urllib3.exceptions import HTTPError as _Urllib3Error, ReadTimeoutError
    from urllib3.util.retry import Retry
    TRANSPORT_ERRORS = (_Urllib3Error, ConnectionError, OSError)
except ImportError:  # pragma: no cover - comes with the kubernetes library
    ReadTimeoutError = Retry = None
    TRANSPORT_ERRORS = (ConnectionError, OSError)

APIS = ('core', 'apps', 'custom', 'policy', 'batch', 'dynamic')
CONNECT_TIMEOUT = 5.0   # seconds to open a connection
READ_TIMEOUT = 30.0     # the most one request waits for the apiserver's next bytes
MIN_READ_TIMEOUT = 2.0
FREEZE_BYTES = 1 << 20  # a decoded answer this large is kept away from the garbage collector (loads)


def transport_words(exc):
    """One line for a request that got no HTTP answer (refused, reset, timed out): the last
    attempt's error, without the connection object urllib3 puts first."""
    reason = getattr(exc, 'reason', None)  # urllib3's MaxRetryError: the last attempt's error
    if isinstance(reason, Exception):
        exc = reason
    text = ' '.join(str(exc).split())
    if text.startswith('<') and '>: ' in text:
        text = text.split('>: ', 1)[1]
    return text or type(exc).__name__


def request_timeout(api_timeout=None):
    """(connect, read) seconds for one request: a quarter of ``api_timeout`` (the time the module
    waits out an unresponsive API), between MIN_READ_TIMEOUT and READ_TIMEOUT; without an
    ``api_timeout``, (CONNECT_TIMEOUT, READ_TIMEOUT)."""
    if api_timeout is None:
        return (CONNECT_TIMEOUT, READ_TIMEOUT)
    read = min(READ_TIMEOUT, max(MIN_READ_TIMEOUT, float(api_timeout) / 4))
    return (min(CONNECT_TIMEOUT, read), read)


if Retry is not None:
    class _NoReadRetry(Retry):
        """urllib3's default retries, except that a read timeout is final."""

        def increment(self, method=None, url=None, response=None, error=None, _pool=None, _stacktrace=None):
            if isinstance(error, ReadTimeoutError):
                raise error
            return super(_NoReadRetry, self).increment(method, url, response, error, _pool, _stacktrace)
else:  # pragma: no cover
    _NoReadRetry = None


def bound(api_client, timeout):
    """Give every request of a kubernetes ``ApiClient`` the ``timeout`` unless it names its own, and
    stop urllib3 from retrying a read that timed out (its pools, present and future)."""
    rest = getattr(api_client, 'rest_client', None)
    if rest is None:  # not a kubernetes ApiClient (tests)
        return
    if getattr(rest, 'gpuops_timeout', None) is None:
        plain = rest.request

        def request(method, url, *args, **kwargs):
            if not kwargs.get('_request_timeout'):
                kwargs['_request_timeout'] = rest.gpuops_timeout
            return plain(method, url, *args, **kwargs)
        rest.request = request
    rest.gpuops_timeout = timeout
    manager = getattr(rest, 'pool_manager', None)
    if manager is not None and _NoReadRetry is not None:
        retries = _NoReadRetry(total=3, connect=1, redirect=3)  # refused: at once; no answer: no retry
        manager.connection_pool_kw['retries'] = retries
        for key in list(manager.pools.keys()):
            pool = manager.pools.get(key)
            if pool is not None:
                pool.retries = retries


def decode(response):
    """A raw (``_preload_content=False``) response as JSON data; data that is already decoded
    (a dict, a list) is returned as it is, an empty body is {}."""
    data = response.data if hasattr(response, 'data') else response
    if isinstance(data, (bytes, str)):
        return loads(data) if data else {}
    return {} if data is None else data


def loads(text):
    """``json.loads`` with the cyclic garbage collector paused, and a large answer frozen.

    A list of 5000 nodes is about 45 MB of JSON and millions of objects: the collections their
    allocation triggers cost four times the decoding itself, and while the list is alive every later
    full collection walks it again, which tripled the time of the per-node checks that follow
    (bench/fleet_scale_bench.py, docs/performance.md). Decoded JSON holds no reference cycles, so the
    collector has nothing to find in it: it is paused while decoding (whoever paused it resumes it;
    threads may decode at once), and an answer of FREEZE_BYTES or more is moved out of its reach
    with ``gc.freeze`` (its objects are still freed when no longer referenced)."""
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        data = json.loads(text)
    finally:
        if paused:
            gc.enable()
    if len(text) >= FREEZE_BYTES:
        gc.freeze()
    return data


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
    needs no request, e.g. a check-mode plan, needs no reachable cluster); ``Connection(auth=...)``
    does the same from kubernetes.core's connection options given as a dict (``kubeconfig``,
    ``context``, ``host``, ``api_key``, ...; what it leaves out comes from the ``K8S_AUTH_*``
    environment, as for a module): a plugin that is not a module; ``Connection(core=...,
    custom=..., ...)`` wraps given API objects (tests, or anything with the same methods).
    ``core`` is a CoreV1Api, ``apps`` AppsV1Api, ``custom`` CustomObjectsApi, ``policy`` PolicyV1Api, ``batch``
    BatchV1Api, ``dynamic`` kubernetes.core's dynamic client.
    """

    def __init__(self, module=None, timeout=None, auth=None, **apis):
        unknown = set(apis) - set(APIS)
        if unknown:
            raise TypeError('unknown API objects: %s' % ', '.join(sorted(unknown)))
        self._module = module
        self._auth = None if auth is None else dict((k, v) for k, v in auth.items() if v is not None)
        self._counter = _Counter()
        self.client = None
        # the kubeconfig context asked for (option, auth dict or kubernetes.core's environment variable)
        self.context = ((getattr(module, 'params', None) or {}).get('context') or (auth or {}).get('context')
                        or os.environ.get('K8S_AUTH_CONTEXT') or '') if module is not None or auth else ''
        self.timeout = timeout  # (connect, read) of every request; None: the client's (unbounded)
        if module is not None and timeout is None:
            self.timeout = request_timeout((getattr(module, 'params', None) or {}).get('api_timeout'))
        if self._auth is not None and timeout is None:
            self.timeout = request_timeout()
        if module is None and auth is None:
            for name in APIS:
                setattr(self, name, apis.get(name))

    def __getattr__(self, name):
        """The API objects of a connection not opened yet: open it now."""
        if name in APIS and (self.__dict__.get('_module') is not None or self.__dict__.get('_auth') is not None):
            self.open()
            return self.__dict__[name]
        raise AttributeError(name)

    def open(self):
        """Connect now (a no-op when connected or wrapping given API objects). Raises ApiError."""
        module, auth = self.__dict__.get('_module'), self.__dict__.get('_auth')
        if module is None and auth is None:
            return
        if module is None and Configuration is not None:
            # kubernetes.core starts from the client's process-wide default configuration, which the
            # last kubeconfig loaded set: a second cluster in one process must not inherit the first's
            # CA or client certificate
            Configuration.set_default(None)
        try:
            self.client = get_api_client(module=module) if module is not None else get_api_client(**auth)
        except Exception as exc:  # kubernetes.core raises several types for bad auth/config
            raise ApiError('Could not connect to the Kubernetes API: %s' % exc)
        self._module = self._auth = None
        bound(self.client.client.client, self.timeout)
        self._typed(self.client.client.client)
        self.dynamic = self.client.client

    def _typed(self, api_client):
        self.core = CoreV1Api(api_client)
        self.apps = AppsV1Api(api_client)
        self.custom = CustomObjectsApi(api_client)
        self.policy = PolicyV1Api(api_client)
        self.batch = BatchV1Api(api_client)

    def cluster_name(self):
        """What names the cluster in progress lines, known without a request: the kubeconfig context asked for,
        else the API server's host (``host:port``) once connected; '' when neither is known."""
        if self.context:
            return self.context
        return self.server().split('://', 1)[-1].split('/', 1)[0]

    def server(self):
        """The API server's URL this connection talks to once connected (the kubeconfig's or O(host)); ''
        before."""
        api_client = getattr(getattr(self.__dict__.get('client'), 'client', None), 'client', None)
        return getattr(getattr(api_client, 'configuration', None), 'host', None) or ''

    @property
    def requests(self):
        """API requests made through this connection and its pooled copies."""
        return self._counter.value

    def _kwargs(self, kwargs):
        self._counter.add()
        kwargs['_preload_content'] = False
        if self.timeout is not None and not kwargs.get('_request_timeout'):
            kwargs['_request_timeout'] = self.timeout
        return kwargs

    def request(self, fn, *args, **kwargs):
        """One counted request of a kubernetes.client API method, answered raw (not decoded);
        ``_request_timeout`` defaults to ``timeout``."""
        return fn(*args, **self._kwargs(kwargs))

    def call(self, fn, *args, **kwargs):
        """One counted request, its answer as JSON data (dicts and lists); ``_request_timeout``
        defaults to ``timeout``."""
        return decode(fn(*args, **self._kwargs(kwargs)))

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
        bound(wide, self.timeout)
        clone = copy.copy(self)
        clone._typed(wide)
        return clone


def connect(module):
    """The connection of a module run (opened on first use; see Connection)."""
    return Connection(module=module)
