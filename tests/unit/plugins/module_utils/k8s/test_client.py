# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one connection: raw JSON calls, one request counter (shared with pooled copies, thread-safe),
404 as None, opened only when first used."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import threading

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.k8s import client
from ansible_collections.gpuops.gpu.plugins.module_utils.common.errors import ApiError


class Resp(object):
    def __init__(self, obj):
        self.data = json.dumps(obj).encode() if obj is not None else b''


class Missing(Exception):
    status = 404


class Core(object):
    def __init__(self):
        self.kwargs = []

    def read_node(self, name, **kwargs):
        self.kwargs.append(kwargs)
        if name == 'gone':
            raise Missing(name)
        if name == 'denied':
            raise OSError('denied')
        return Resp({'metadata': {'name': name}})

    def delete_node(self, name, **kwargs):
        return Resp(None)


def test_calls_are_raw_json_and_counted():
    core = Core()
    conn = client.Connection(core=core)
    assert conn.call(core.read_node, 'n1') == {'metadata': {'name': 'n1'}}
    assert core.kwargs == [{'_preload_content': False}]
    assert conn.call(core.delete_node, 'n1') == {}
    assert conn.call_or_none(core.read_node, 'gone') is None
    with pytest.raises(OSError):
        conn.call_or_none(core.read_node, 'denied')
    assert isinstance(conn.request(core.read_node, 'n2'), Resp)
    assert conn.requests == 5


def test_decode():
    assert client.decode({'a': 1}) == {'a': 1} and client.decode(None) == {} and client.decode([1]) == [1]
    assert client.decode(b'{"a": 1}') == {'a': 1} and client.decode('') == {}


def test_decode_pauses_the_garbage_collector_and_leaves_it_as_it_was(monkeypatch):
    import gc
    seen, real = [], json.loads
    monkeypatch.setattr(client.json, 'loads', lambda text: seen.append(gc.isenabled()) or real(text))
    assert gc.isenabled()
    assert client.decode(b'{"a": 1}') == {'a': 1} and seen == [False] and gc.isenabled()
    gc.disable()
    try:
        client.decode(b'{}')
        assert not gc.isenabled()  # paused by someone else: left paused
    finally:
        gc.enable()
    monkeypatch.setattr(client.json, 'loads', lambda text: real('{'))
    with pytest.raises(ValueError):
        client.decode(b'{')
    assert gc.isenabled()


def test_counter_is_thread_safe_and_shared_by_copies():
    core = Core()
    conn = client.Connection(core=core)
    same = conn.pooled(64)  # nothing to widen without a kubernetes.core client: the same connection
    assert same is conn
    threads = [threading.Thread(target=lambda: [conn.call(core.read_node, 'n') for _i in range(200)])
               for _t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert conn.requests == 1600


def test_unknown_api_objects_are_refused():
    with pytest.raises(TypeError, match='storage'):
        client.Connection(storage=object())


def test_a_module_connection_opens_on_first_use(monkeypatch):
    opened = []

    class Api(object):
        def __init__(self, api_client):
            self.api_client = api_client

    class Kube(object):  # what kubernetes.core's get_api_client returns: .client (dynamic) .client (ApiClient)
        def __init__(self):
            self.client = type('Dynamic', (), {'client': 'api-client'})()

    def get_api_client(module):
        opened.append(module)
        return Kube()
    for name in ('CoreV1Api', 'CustomObjectsApi', 'PolicyV1Api', 'BatchV1Api'):
        monkeypatch.setattr(client, name, Api)
    monkeypatch.setattr(client, 'get_api_client', get_api_client)
    conn = client.connect('the-module')
    assert opened == [] and conn.requests == 0
    assert conn.core.api_client == 'api-client' and opened == ['the-module']
    assert conn.custom.api_client == 'api-client' and opened == ['the-module']
    conn.open()
    assert opened == ['the-module']


def test_a_connection_that_cannot_open_is_an_api_error(monkeypatch):
    def refuse(module):
        raise ValueError('no kubeconfig')
    monkeypatch.setattr(client, 'get_api_client', refuse)
    conn = client.connect('m')
    with pytest.raises(ApiError, match='Could not connect to the Kubernetes API: no kubeconfig'):
        conn.core.list_node()


def test_a_connection_from_settings_opens_on_first_use_from_a_fresh_configuration(monkeypatch):
    """Connection(auth=...): kubernetes.core's options as a dict (the inventory plugin), unset ones left to the
    K8S_AUTH_* environment; the client's process-wide default configuration (the last kubeconfig loaded) is
    dropped first, so a second cluster never inherits the first one's CA or client certificate."""
    import kubernetes

    opened = []

    class Kube(object):
        def __init__(self):
            self.client = type('Dynamic', (), {'client': 'api-client'})()

    def get_api_client(**auth):
        opened.append((auth, kubernetes.client.Configuration.get_default_copy().ssl_ca_cert))
        return Kube()
    for name in ('CoreV1Api', 'CustomObjectsApi', 'PolicyV1Api', 'BatchV1Api'):
        monkeypatch.setattr(client, name, lambda api_client: api_client)
    monkeypatch.setattr(client, 'get_api_client', get_api_client)
    first = kubernetes.client.Configuration()
    first.ssl_ca_cert = '/first/ca.crt'
    kubernetes.client.Configuration.set_default(first)
    try:
        conn = client.Connection(auth={'host': 'https://b:6443', 'api_key': 't', 'kubeconfig': None})
        assert opened == [] and conn.timeout == client.request_timeout()
        assert conn.core == 'api-client'
        assert opened == [({'host': 'https://b:6443', 'api_key': 't'}, None)]
        conn.open()
        assert len(opened) == 1
    finally:
        kubernetes.client.Configuration.set_default(None)


def test_request_timeout_follows_api_timeout_within_bounds():
    assert client.request_timeout() == (client.CONNECT_TIMEOUT, client.READ_TIMEOUT)
    assert client.request_timeout(20) == (5.0, 5.0)
    assert client.request_timeout(300) == (5.0, 30.0)  # one hung request costs seconds, not minutes
    assert client.request_timeout(0) == (2.0, 2.0) and client.request_timeout(6) == (2.0, 2.0)


def test_every_call_carries_the_timeout_unless_it_names_its_own():
    core = Core()
    conn = client.Connection(core=core, timeout=(1, 2))
    conn.call(core.read_node, 'n1')
    conn.request(core.read_node, 'n1', _request_timeout=(1, 99))
    assert core.kwargs == [{'_preload_content': False, '_request_timeout': (1, 2)},
                           {'_preload_content': False, '_request_timeout': (1, 99)}]


class _Module(object):
    params = {'api_timeout': 40}


def test_a_module_connection_derives_its_timeout_from_api_timeout():
    assert client.Connection(module=_Module()).timeout == (5.0, 10.0)
    assert client.Connection(module=type('M', (), {'params': {}})()).timeout == (5.0, 30.0)


def test_transport_words_drop_the_connection_object():
    class Refused(OSError):
        def __str__(self):
            return '<urllib3.connection.HTTPSConnection object at 0x7f>: Failed to establish a new connection: ' \
                   '[Errno 111] Connection refused'

    class MaxRetries(Exception):
        reason = Refused()
    assert client.transport_words(MaxRetries('pool: max retries')) == \
        'Failed to establish a new connection: [Errno 111] Connection refused'
    assert client.transport_words(OSError()) == 'OSError'


def test_a_hung_apiserver_costs_one_read_timeout(tmp_path):
    """A real kubernetes client against a socket that accepts and never answers (a SIGSTOPped
    apiserver): the request ends after the read timeout, and urllib3 does not retry it."""
    import socket
    import time
    kubernetes = pytest.importorskip('kubernetes')
    server = socket.socket()
    server.bind(('127.0.0.1', 0))
    server.listen(8)
    try:
        config = kubernetes.client.Configuration()
        config.host = 'http://127.0.0.1:%d' % server.getsockname()[1]
        api_client = kubernetes.client.ApiClient(config)
        client.bound(api_client, (1, 0.5))
        client.bound(api_client, (1, 0.5))  # bound twice (a cached client): still one wrapper
        core = kubernetes.client.CoreV1Api(api_client)
        started = time.monotonic()
        with pytest.raises(client.TRANSPORT_ERRORS) as info:
            core.read_node('n1', _preload_content=False)
        assert 'Read timed out' in client.transport_words(info.value)
        assert time.monotonic() - started < 1.4  # not 4 x 0.5 s (urllib3's default 3 retries)
    finally:
        server.close()


def test_a_large_answer_is_frozen_a_small_one_is_not(monkeypatch):
    frozen = []
    monkeypatch.setattr(client.gc, 'freeze', lambda: frozen.append(1))
    assert client.decode(b'{"a": 1}') == {'a': 1} and frozen == []
    big = json.dumps({'items': ['x' * 100] * (client.FREEZE_BYTES // 100)}).encode()
    assert len(client.decode(big)['items']) == client.FREEZE_BYTES // 100 and frozen == [1]


class _Configured(object):
    """kubernetes.core's client as Connection.open leaves it: client.client.client.configuration.host."""

    def __init__(self, host):
        config = type('Configuration', (), {'host': host})()
        self.client = type('Dynamic', (), {'client': type('ApiClient', (), {'configuration': config})()})()


def test_cluster_name_is_the_context_asked_for_else_the_api_servers_host(monkeypatch):
    monkeypatch.delenv('K8S_AUTH_CONTEXT', raising=False)
    assert client.Connection(auth={'context': 'prod-a', 'host': 'https://api.x:6443'}).cluster_name() == 'prod-a'
    module = type('Module', (), {'params': {'context': 'prod-b'}})()
    assert client.Connection(module=module).cluster_name() == 'prod-b'
    monkeypatch.setenv('K8S_AUTH_CONTEXT', 'prod-c')
    assert client.Connection(auth={'host': 'https://api.x:6443'}).cluster_name() == 'prod-c'
    monkeypatch.delenv('K8S_AUTH_CONTEXT')
    conn = client.Connection(auth={'host': 'https://api.x:6443'})
    assert conn.cluster_name() == '', 'not connected yet: no request is made for a name'
    conn.__dict__['client'] = _Configured('https://api.prod.example:6443/')
    assert conn.cluster_name() == 'api.prod.example:6443'
    assert client.Connection().cluster_name() == ''
