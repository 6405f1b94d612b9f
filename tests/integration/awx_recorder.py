"""A recording stand-in for AWX's REST API on loopback, enough for the awx.awx modules to create objects as on a
fresh AWX: what awx.awx's module_utils/controller_api.py asks for (version headers on every answer, lists filtered
by name or other fields with ``count``/``next``/``results``, ``or__id``/``or__name`` look-ups, objects with ``id``,
``url`` and ``related`` links, POST to create, PATCH to update, association lists under ``<object>/<name>/``
answering 204, a workflow node's ``create_approval_template``, ``unified_job_templates`` across the template kinds).
Every request is recorded with its decoded JSON body.

    with AwxRecorder() as awx:                 # a random free port on 127.0.0.1, stopped on exit
                                               # (prefix='/api/controller/v2/': AAP 2.5's API behind its gateway)
        awx.seed('organizations', name='Default')
        ... awx.url ...
        awx.requests                           # [{'method', 'path', 'query', 'body'}], in order
        awx.find('job_templates', 'gpuops.gpu mirror')
"""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

VERSION = '24.6.1'
PREFIX = '/api/v2/'
# the kinds a unified job template may be, by the type name AWX gives them
UNIFIED = {'job_templates': 'job_template', 'workflow_job_templates': 'workflow_job_template',
           'workflow_approval_templates': 'workflow_approval', 'projects': 'project',
           'inventory_sources': 'inventory_source'}
RELATED = ('credentials', 'survey_spec', 'labels', 'instance_groups', 'notification_templates_started',
           'notification_templates_success', 'notification_templates_error', 'notification_templates_approvals',
           'success_nodes', 'failure_nodes', 'always_nodes', 'workflow_nodes', 'galaxy_credentials',
           'input_sources', 'schedules')


class AwxRecorder:
    """An in-memory AWX API: ``objects[kind] -> [dict]``, ``links[(url, name)] -> [id]``, ``specs[url]``."""

    def __init__(self, prefix=PREFIX):
        self.prefix = prefix
        self.objects = {}
        self.links = {}
        self.specs = {}
        self.requests = []
        self.seeded = set()
        self._ids = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(('127.0.0.1', 0), _handler(self))
        self.url = 'http://127.0.0.1:%d' % self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)

    # ------------------------------------------------------------------ the store

    def seed(self, collection, **fields):
        """An object that exists before the run (AWX's own, or one the test does not create)."""
        obj = self._create(collection, fields)
        self.seeded.add(obj['id'])
        return obj

    def find(self, kind, name):
        """The object of ``kind`` named ``name`` (None when there is none)."""
        return next((o for o in self.objects.get(kind, []) if o.get('name') == name), None)

    def by_id(self, kind, ident):
        return next((o for o in self.objects.get(kind, []) if o['id'] == ident), None)

    def linked(self, obj, name):
        """The ids associated with ``obj`` under ``name`` (credentials, success_nodes, ...)."""
        return list(self.links.get((obj['url'], name), []))

    def _create(self, kind, fields):
        self._ids += 1
        url = '%s%s/%d/' % (self.prefix, kind, self._ids)
        obj = dict(fields, id=self._ids, url=url, type=UNIFIED.get(kind, kind.rstrip('s')), summary_fields={})
        if kind == 'projects':
            obj.setdefault('scm_revision', '')  # no update runs: awx.awx.project finds no current_update to wait on
        obj['related'] = dict((name, url + name + '/') for name in RELATED)
        self.objects.setdefault(kind, []).append(obj)
        return obj

    def _list(self, kind, query):
        kinds = list(UNIFIED) if kind == 'unified_job_templates' else [kind]
        found = [o for k in kinds for o in self.objects.get(k, []) if _matches(o, query)]
        return {'count': len(found), 'next': None, 'previous': None, 'results': found}

    # ------------------------------------------------------------------ the routes

    def answer(self, method, path, query, body):
        """(status, JSON answer) of one request."""
        with self._lock:
            self.requests.append({'method': method, 'path': path, 'query': query, 'body': body})
            if path in ('/api/', self.prefix, self.prefix + 'ping/', self.prefix + 'config/'):
                return 200, {'current_version': self.prefix, 'version': VERSION, 'ha': False}
            if path == self.prefix + 'me/':
                return 200, {'count': 1, 'next': None, 'previous': None,
                             'results': [{'id': 1, 'username': 'admin', 'is_superuser': True}]}
            parts = path[len(self.prefix):].strip('/').split('/') if path.startswith(self.prefix) else []
            if len(parts) == 1:
                return self._on_list(method, parts[0], query, body)
            if len(parts) == 2 and parts[1].isdigit():
                return self._on_object(method, parts[0], int(parts[1]), body)
            if len(parts) == 3 and parts[1].isdigit():
                return self._on_related(method, parts[0], int(parts[1]), parts[2], body)
            return 404, {'detail': 'Not found.'}

    def _on_list(self, method, kind, query, body):
        if method == 'GET':
            return 200, self._list(kind, query)
        if method == 'POST':
            return 201, self._create(kind, body or {})
        return 405, {'detail': 'Method not allowed.'}

    def _on_object(self, method, kind, ident, body):
        obj = self.by_id(kind, ident)
        if obj is None:
            return 404, {'detail': 'Not found.'}
        if method in ('PATCH', 'PUT'):
            obj.update(body or {})
        elif method == 'DELETE':
            self.objects[kind].remove(obj)
            return 204, None
        return 200, obj

    def _on_related(self, method, kind, ident, name, body):
        obj = self.by_id(kind, ident)
        if obj is None:
            return 404, {'detail': 'Not found.'}
        if name == 'survey_spec':
            if method == 'GET':
                return 200, self.specs.get(obj['url'], {})
            self.specs[obj['url']] = body if method == 'POST' else {}
            return 200, {}
        if name == 'create_approval_template' and method == 'POST':
            approval = self._create('workflow_approval_templates', body or {})
            obj['unified_job_template'] = approval['id']
            obj['related']['unified_job_template'] = approval['url']
            return 201, approval
        ids = self.links.setdefault((obj['url'], name), [])
        if method == 'GET':
            return 200, {'count': len(ids), 'next': None, 'previous': None, 'results': [{'id': i} for i in ids]}
        if method == 'POST':
            if body.get('disassociate'):
                ids.remove(body['id'])
            elif body['id'] not in ids:
                ids.append(body['id'])
            return 204, None
        return 405, {'detail': 'Method not allowed.'}


def _matches(obj, query):
    """AWX's list filters as the modules use them: field=value, and or__<field>=value alternatives."""
    alternatives = [(k[4:], v) for k, v in query.items() if k.startswith('or__')]
    if alternatives and not any(str(obj.get(k)) == v for k, v in alternatives):
        return False
    return all(str(obj.get(k)) == v for k, v in query.items() if not k.startswith('or__') and k != 'page_size')


def _handler(recorder):
    class Handler(BaseHTTPRequestHandler):
        def _serve(self):
            split = urlsplit(self.path)
            length = int(self.headers.get('Content-Length') or 0)
            raw = self.rfile.read(length) if length else b''
            body = json.loads(raw) if raw else None
            status, answer = recorder.answer(self.command, split.path, dict(parse_qsl(split.query)), body)
            data = b'' if answer is None else json.dumps(answer).encode()
            self.send_response(status)
            self.send_header('Content-Type', 'application/json')
            self.send_header('X-API-Product-Name', 'AWX')
            self.send_header('X-API-Product-Version', VERSION)
            self.send_header('Content-Length', str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = do_HEAD = _serve

        def log_message(self, *args):  # quiet
            return

    return Handler
