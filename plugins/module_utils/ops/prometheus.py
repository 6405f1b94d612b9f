# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""One instant query to the Prometheus HTTP API (``GET <url>/api/v1/query``), with the connection options a
kubernetes.core user knows: a bearer token (``prometheus_token``, e.g. a service account's for OpenShift's
thanos-querier) or ``prometheus_username``/``prometheus_password``, ``prometheus_validate_certs``,
``prometheus_ca_cert``, ``prometheus_client_cert``/``prometheus_client_key``, ``prometheus_timeout`` seconds.

Every way it can go wrong is one InputError sentence that names the URL (never the token or the password) and
says what to fix: a URL that does not answer (refused, unknown host, timeout), a TLS certificate not trusted, the
credentials refused, a server that is not Prometheus (another HTTP status, not its JSON), a query Prometheus
refused. The caller queries before any write, so a bad URL stops the run with nothing changed.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import socket

from ansible.module_utils.six.moves.urllib.error import HTTPError, URLError
from ansible.module_utils.six.moves.urllib.parse import urlencode, urlparse
from ansible.module_utils.urls import ConnectionError as UrlsConnectionError, SSLValidationError, open_url

from ansible_collections.gpuops.gpu.plugins.module_utils.common.errors import InputError

try:
    import ssl
    SSL_ERRORS = (ssl.SSLError, ssl.CertificateError)
except ImportError:  # pragma: no cover - Python without ssl
    SSL_ERRORS = ()

OPTIONS = ('prometheus_url', 'prometheus_token', 'prometheus_username', 'prometheus_password',
           'prometheus_validate_certs', 'prometheus_ca_cert', 'prometheus_client_cert', 'prometheus_client_key',
           'prometheus_timeout')


def url_errors(params):
    """Why the Prometheus options cannot work, before anything is asked (empty when they can)."""
    url = params.get('prometheus_url')
    if not url:
        return []
    parsed = urlparse(url)
    errors = []
    if parsed.scheme not in ('http', 'https') or not parsed.netloc:
        errors.append('prometheus_url must be an http:// or https:// URL of the Prometheus server (for example '
                      'https://thanos-querier.openshift-monitoring.svc:9091), not %r' % url)
    if parsed.query or parsed.fragment:
        errors.append('prometheus_url is the server\'s base URL, without a query or fragment: %r' % url)
    if params.get('prometheus_token') and params.get('prometheus_username'):
        errors.append('give prometheus_token or prometheus_username/prometheus_password, not both')
    if not 1 <= (params.get('prometheus_timeout') or 0) <= 300:
        errors.append('prometheus_timeout must be between 1 and 300 seconds, not %s' % params.get('prometheus_timeout'))
    return errors


def _request(params, promql):
    url = params['prometheus_url'].rstrip('/') + '/api/v1/query?' + urlencode({'query': promql})
    headers = {'Accept': 'application/json'}
    if params.get('prometheus_token'):
        headers['Authorization'] = 'Bearer %s' % params['prometheus_token']
    return open_url(url, method='GET', headers=headers, timeout=params.get('prometheus_timeout') or 10,
                    validate_certs=params.get('prometheus_validate_certs', True),
                    ca_path=params.get('prometheus_ca_cert'), client_cert=params.get('prometheus_client_cert'),
                    client_key=params.get('prometheus_client_key'), url_username=params.get('prometheus_username'),
                    url_password=params.get('prometheus_password'),
                    force_basic_auth=bool(params.get('prometheus_username')), use_netrc=False,
                    follow_redirects='safe')


def _fail(url, words):
    return InputError('prometheus_url %s: %s; nothing was changed' % (url, words))


def _http_error(url, exc):
    body = _read(exc)
    if exc.code in (401, 403):
        return _fail(url, 'the server refused the credentials (HTTP %s): give prometheus_token (a bearer token that may '
                          'query it) or prometheus_username and prometheus_password' % exc.code)
    answer = _json(body)
    if isinstance(answer, dict) and answer.get('status') == 'error':
        return _fail(url, 'Prometheus refused the query (HTTP %s, %s: %s)'
                          % (exc.code, answer.get('errorType'), answer.get('error')))
    return _fail(url, 'not the Prometheus HTTP API: GET /api/v1/query answered HTTP %s %s (give the base URL of a '
                      'Prometheus or Thanos querier)' % (exc.code, getattr(exc, 'reason', '') or ''))


def _read(resp):
    try:
        return resp.read()
    except Exception:  # an error response without a body
        return b''


def _json(body):
    try:
        return json.loads(body.decode('utf-8') if isinstance(body, bytes) else body)
    except (ValueError, UnicodeDecodeError, AttributeError):
        return None


def _transport_error(url, exc):
    reason = getattr(exc, 'reason', exc)
    if isinstance(exc, SSLValidationError) or isinstance(reason, SSL_ERRORS) or 'CERTIFICATE_VERIFY_FAILED' in str(reason):
        return _fail(url, 'its TLS certificate is not trusted (%s): give the CA that signed it as prometheus_ca_cert '
                          '(or set prometheus_validate_certs false)' % reason)
    if isinstance(reason, (socket.timeout, TimeoutError)) or 'timed out' in str(reason):
        return _fail(url, 'does not answer: no answer within prometheus_timeout')
    return _fail(url, 'does not answer (%s): check the URL, and that this host can reach it' % reason)


def query(params, promql):
    """The JSON answer (a dict with status "success") of one instant query; InputError otherwise."""
    url = params['prometheus_url']
    try:
        resp = _request(params, promql)
        body = resp.read()
    except HTTPError as exc:
        raise _http_error(url, exc)
    except (URLError, UrlsConnectionError, socket.error, socket.timeout, TimeoutError) + SSL_ERRORS as exc:
        raise _transport_error(url, exc)
    answer = _json(body)
    if not isinstance(answer, dict) or answer.get('status') not in ('success', 'error'):
        raise _fail(url, 'not the Prometheus HTTP API: GET /api/v1/query answered HTTP 200 without its JSON (status, '
                         'data): give the base URL of a Prometheus or Thanos querier, not a page or an exporter')
    if answer['status'] != 'success':
        raise _fail(url, 'Prometheus refused the query (%s: %s)' % (answer.get('errorType'), answer.get('error')))
    return answer
