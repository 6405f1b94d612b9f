# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""HTTP(S) servers on loopback that answer like Prometheus (or not), for the tests of ops/prometheus.py and of
the gpu_health module's DCGM path: ``server`` (a pytest fixture making them), ``closed_port``."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import socket
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pytest

VECTOR = {'status': 'success', 'data': {'resultType': 'vector', 'result': [
    {'metric': {'Hostname': 'a100-0', 'gpu': '0', 'UUID': 'GPU-1'}, 'value': [1795887489.4, '79']}]}}
TOKEN = 's3cr3t-token'


class Server(object):
    """A loopback HTTP(S) server whose answer to GET ``path`` is ``routes[path](query, headers)`` ->
    (status, content type, body); ``seen`` keeps every request's (path, query, headers)."""

    def __init__(self, routes, tls=None):
        self.routes, self.seen = routes, []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                url = urlparse(self.path)
                query = dict((k, v[0]) for k, v in parse_qs(url.query).items())
                server.seen.append((url.path, query, dict(self.headers)))
                status, ctype, body = server.routes.get(url.path, lambda q, h: (404, 'text/plain', '404 page'))(
                    query, self.headers)
                body = body if isinstance(body, bytes) else body.encode()
                self.send_response(status)
                self.send_header('Content-Type', ctype)
                self.send_header('Content-Length', str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        if tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.url = '%s://127.0.0.1:%d' % ('https' if tls else 'http', self.httpd.server_address[1])
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def prometheus_api(query, headers):
    if not query.get('query', '').startswith('max by'):
        return 400, 'application/json', json.dumps({'status': 'error', 'errorType': 'bad_data',
                                                    'error': 'invalid parameter "query": 1:1: parse error'})
    return 200, 'application/json', json.dumps(VECTOR)


@pytest.fixture
def server(request):
    made = []

    def make(routes, tls=None):
        made.append(Server(routes, tls))
        return made[-1]
    yield make
    for s in made:
        s.close()


def closed_port():
    sock = socket.socket()
    sock.bind(('127.0.0.1', 0))
    port = sock.getsockname()[1]
    sock.close()
    return port
