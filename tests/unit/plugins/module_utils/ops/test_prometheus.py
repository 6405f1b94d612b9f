# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""ops/prometheus.py against HTTP servers on loopback (through ansible's open_url, as the module runs it): what a
Prometheus answers, and every way a URL can be wrong - it does not answer, it is not Prometheus, it refuses the
credentials or the query, its certificate is not trusted - each one InputError that names the URL, never the
token."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import base64
import socket
import subprocess

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.common.errors import InputError
from ansible_collections.gpuops.gpu.plugins.module_utils.ops import prometheus
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.ops import prometheus_fakes
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.ops.prometheus_fakes import (
    TOKEN, VECTOR, closed_port, prometheus_api)

server = prometheus_fakes.server  # the fixture


def params(url, **kw):
    out = dict((k, None) for k in prometheus.OPTIONS)
    out.update(prometheus_url=url, prometheus_validate_certs=True, prometheus_timeout=5)
    out.update(kw)
    return out


def test_an_instant_query_with_a_bearer_token(server):
    s = server({'/prefix/api/v1/query': prometheus_api})
    answer = prometheus.query(params(s.url + '/prefix/', prometheus_token=TOKEN), 'max by (Hostname) (x)')
    assert answer == VECTOR
    [(path, query, headers)] = s.seen
    assert (path, query) == ('/prefix/api/v1/query', {'query': 'max by (Hostname) (x)'})
    assert headers['Authorization'] == 'Bearer ' + TOKEN


def test_basic_authentication(server):
    s = server({'/api/v1/query': prometheus_api})
    prometheus.query(params(s.url, prometheus_username='ops', prometheus_password='pw'), 'max by (Hostname) (x)')
    assert s.seen[0][2]['Authorization'] == 'Basic ' + base64.b64encode(b'ops:pw').decode()


@pytest.mark.parametrize('routes, words', [
    ({}, r'not the Prometheus HTTP API: GET /api/v1/query answered HTTP 404'),
    ({'/api/v1/query': lambda q, h: (200, 'text/html', '<html>console</html>')},
     r'not the Prometheus HTTP API: GET /api/v1/query answered HTTP 200 without its JSON'),
    ({'/api/v1/query': lambda q, h: (200, 'application/json', '{"kind": "Status"}')}, r'without its JSON'),
    ({'/api/v1/query': lambda q, h: (401, 'text/plain', 'Unauthorized')},
     r'refused the credentials \(HTTP 401\): give prometheus_token'),
    ({'/api/v1/query': lambda q, h: (403, 'text/plain', 'Forbidden')}, r'refused the credentials \(HTTP 403\)'),
])
def test_a_server_that_is_not_prometheus_or_refuses_us_is_named(server, routes, words):
    s = server(routes)
    with pytest.raises(InputError, match=words) as info:
        prometheus.query(params(s.url, prometheus_token=TOKEN), 'max by (Hostname) (x)')
    assert str(info.value).startswith('prometheus_url %s: ' % s.url) and 'nothing was changed' in str(info.value)
    assert TOKEN not in str(info.value)


def test_a_query_prometheus_refuses_is_its_error(server):
    s = server({'/api/v1/query': prometheus_api})
    with pytest.raises(InputError, match=r'Prometheus refused the query \(HTTP 400, bad_data: invalid parameter'):
        prometheus.query(params(s.url), 'sum(')


def test_a_url_that_does_not_answer():
    url = 'http://127.0.0.1:%d' % closed_port()
    with pytest.raises(InputError, match=r'prometheus_url %s: does not answer \(.*refused' % url):
        prometheus.query(params(url), 'up')
    with pytest.raises(InputError, match=r'does not answer'):
        prometheus.query(params('http://prometheus.invalid:9090'), 'up')


def test_a_server_that_accepts_but_never_answers_times_out():
    sock = socket.socket()
    sock.bind(('127.0.0.1', 0))
    sock.listen(1)
    try:
        with pytest.raises(InputError, match='does not answer: no answer within prometheus_timeout'):
            prometheus.query(params('http://127.0.0.1:%d' % sock.getsockname()[1], prometheus_timeout=1), 'up')
    finally:
        sock.close()


@pytest.fixture(scope='module')
def certificate(tmp_path_factory):
    """A self-signed certificate for 127.0.0.1 (openssl CLI): (cert file, key file)."""
    folder = tmp_path_factory.mktemp('tls')
    cert, key = str(folder / 'tls.crt'), str(folder / 'tls.key')
    subprocess.run(['openssl', 'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes',
                    '-days', '1', '-subj', '/CN=prometheus', '-addext', 'subjectAltName=IP:127.0.0.1',
                    '-keyout', key, '-out', cert], check=True, capture_output=True)
    return cert, key


def test_tls_needs_the_ca_that_signed_the_certificate(server, certificate):
    s = server({'/api/v1/query': prometheus_api}, tls=certificate)
    with pytest.raises(InputError, match='its TLS certificate is not trusted .*prometheus_ca_cert'):
        prometheus.query(params(s.url), 'max by (Hostname) (x)')
    assert prometheus.query(params(s.url, prometheus_ca_cert=certificate[0]), 'max by (Hostname) (x)') == VECTOR
    assert prometheus.query(params(s.url, prometheus_validate_certs=False), 'max by (Hostname) (x)') == VECTOR


@pytest.mark.parametrize('kw, words', [
    ({'prometheus_url': 'prometheus:9090'}, 'must be an http:// or https:// URL'),
    ({'prometheus_url': 'ftp://p'}, 'must be an http:// or https:// URL'),
    ({'prometheus_url': 'http://p/api/v1/query?query=up'}, 'without a query or fragment'),
    ({'prometheus_token': 't', 'prometheus_username': 'u'}, 'not both'),
    ({'prometheus_timeout': 0}, 'prometheus_timeout must be between 1 and 300'),
])
def test_option_errors_before_anything_is_asked(kw, words):
    given = params('http://p:9090', **kw)
    assert any(words in e for e in prometheus.url_errors(given)), prometheus.url_errors(given)
    assert prometheus.url_errors(params(None)) == [] and prometheus.url_errors(params('https://p:9091/x')) == []
