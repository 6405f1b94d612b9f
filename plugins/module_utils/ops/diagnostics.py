# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The cluster reads behind ``gpuops.gpu.gpu_diagnostics`` and the one archive it writes.

Read-only: GET and LIST calls only (ClusterPolicies, NVIDIADrivers, nodes, the operator namespace's
pods and their logs, events, the ConfigMaps the ClusterPolicy names, the rollout lock's Lease); never a
Secret. An item that cannot be read (absent CRD, HTTP 403, no kubelet answering for a log) is noted in
``summary.txt`` and in the warnings; the archive is written anyway. Everything goes through
``plans/diagnostics.py`` (what to keep) and ``common/redact.py`` (secrets out) before it is written,
so no unredacted value reaches the archive, the module result or the log.

The archive (``dest``, a gzip-compressed tar, mode 0600) is written to a temporary file next to it and
renamed, so a reader never sees half an archive. See docs/diagnostics.md.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import io
import json
import os
import tarfile
import tempfile
import time

from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import (
    CLUSTER_POLICY, LEASE, LOCK_LEASE_NAME, NVIDIA_DRIVER)
from ansible_collections.gpuops.gpu.plugins.module_utils.common.redact import redact_text
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import node as gpu_node
from ansible_collections.gpuops.gpu.plugins.module_utils.k8s.client import TRANSPORT_ERRORS
from ansible_collections.gpuops.gpu.plugins.module_utils.common.errors import InputError, api_error_message, status_of
from ansible_collections.gpuops.gpu.plugins.module_utils.ops.inventory import Lister
from ansible_collections.gpuops.gpu.plugins.module_utils.plans import diagnostics as plan

try:
    import yaml
except ImportError:  # pragma: no cover - PyYAML comes with ansible-core
    yaml = None

LOG_LIMIT_BYTES = 4 * 1024 * 1024  # the most one container log may add to the archive


def to_text(data):
    """Data as YAML (JSON when PyYAML is missing)."""
    if yaml is None:  # pragma: no cover
        return json.dumps(data, indent=2, sort_keys=False, default=str) + '\n'
    return yaml.safe_dump(data, default_flow_style=False, sort_keys=False, allow_unicode=True)


def _reason(exc):
    """Why a read failed, in one line; re-raises what is not an API or transport error (a bug)."""
    if status_of(exc) is None and not isinstance(exc, TRANSPORT_ERRORS):
        raise exc
    return api_error_message(exc) if status_of(exc) is not None else 'API not reachable: %s' % exc


class Collector(object):
    """The archive's files ({path: text}) and the summary's items, as they are read."""

    def __init__(self, conn):
        self.conn = conn
        self.lister = Lister(conn)
        self.files = {}
        self.items = []
        self.warnings = []

    def add(self, path, what, text, status='collected'):
        self.files[path] = text
        self.items.append({'path': path, 'what': what, 'status': status, 'redacted': plan.redactions(text)})

    def missing(self, path, what, status, warn=False):
        self.items.append({'path': path, 'what': what, 'status': status, 'redacted': 0})
        if warn:
            self.warnings.append('%s (%s) not collected: %s' % (what, path, status))

    def read(self, path, what, fn, *args, **kwargs):
        """``fn(*args)`` through the connection; None (noted as missing) when it fails or is absent."""
        try:
            data = self.conn.call(fn, *args, **kwargs)
        except Exception as exc:  # ApiException, transport errors; a bug re-raises in _reason
            status = status_of(exc)
            self.missing(path, what, 'not found' if status == 404 else 'not collected: %s' % _reason(exc),
                         warn=status != 404)
            return None
        return data


def _custom_lists(c):
    """ClusterPolicies and NVIDIADrivers (an absent CRD is noted, not an error)."""
    policies = []
    for path, what, ref in (('clusterpolicies.yaml', 'ClusterPolicies (spec and status)', CLUSTER_POLICY),
                            ('nvidiadrivers.yaml', 'NVIDIADrivers (spec and status)', NVIDIA_DRIVER)):
        data = c.read(path, what, c.conn.custom.list_cluster_custom_object, *ref)
        if data is None:
            continue
        items = data.get('items') or []
        c.add(path, '%s: %d' % (what, len(items)), to_text([plan.clean(i) for i in items]))
        if ref is CLUSTER_POLICY:
            policies = items
    return policies


def _nodes(c, label_selector):
    """The GPU nodes (names), their records in nodes.yaml."""
    kwargs = {'label_selector': label_selector} if label_selector else {}
    try:
        nodes = c.lister.list(c.conn.core.list_node, 'nodes', **kwargs)
    except Exception as exc:  # ApiError from the lister
        c.missing('nodes.yaml', 'GPU nodes', 'not collected: %s' % exc, warn=True)
        return []
    gpu = [n for n in nodes if gpu_node.is_gpu_node(n)]
    c.add('nodes.yaml', 'GPU nodes (labels, annotations, taints, capacity, allocatable, conditions): %d' % len(gpu),
          to_text([plan.node_record(n) for n in gpu]))
    return sorted(n['metadata']['name'] for n in gpu)


def _pods(c, namespace):
    """The operator namespace's pods (pods.yaml); [] when they cannot be read."""
    try:
        pods = c.lister.list(c.conn.core.list_namespaced_pod, 'pods in %s' % namespace, namespace=namespace)
    except Exception as exc:  # ApiError from the lister
        c.missing('pods.yaml', 'pods of %s' % namespace, 'not collected: %s' % exc, warn=True)
        return []
    c.add('pods.yaml', 'pods of %s (spec and status): %d' % (namespace, len(pods)),
          to_text([plan.clean(p) for p in pods]))
    return pods


def _logs(c, namespace, pods, params):
    """The last ``log_lines`` lines of each container of the chosen operator and operand pods."""
    targets = plan.log_targets(pods, params['max_log_pods'])
    for target in targets:
        path = plan.log_path(target)
        previous = ' (previous instance)' if target['previous'] else ''
        what = 'log of %s container %s%s' % (target['pod'], target['container'], previous)
        try:
            response = c.conn.request(c.conn.core.read_namespaced_pod_log, target['pod'], namespace,
                                      container=target['container'], tail_lines=params['log_lines'],
                                      timestamps=True, previous=target['previous'], limit_bytes=LOG_LIMIT_BYTES)
            raw = response.data if hasattr(response, 'data') else response
        except Exception as exc:  # ApiException, transport errors; a bug re-raises in _reason
            c.missing(path, what, 'not collected: %s' % _reason(exc))
            continue
        text = raw.decode('utf-8', 'replace') if isinstance(raw, bytes) else str(raw or '')
        c.add(path, what, redact_text(text))
    seen = set(plan.component_of(p) for p in pods)
    for component, app in plan.COMPONENTS:
        if component not in seen:
            c.missing('logs/%s/' % component, 'logs of %s (pods labelled app=%s)' % (component, app),
                      'no such pod in %s' % namespace)
    return len(targets)


def _events(c, namespace, node_names, limit):
    """Events of the operator namespace and of the GPU nodes (events.yaml)."""
    ns_events = c.read('events.yaml', 'events of %s' % namespace, c.conn.core.list_namespaced_event, namespace)
    node_events = c.read('events.yaml', 'events of the GPU nodes', c.conn.core.list_event_for_all_namespaces,
                         field_selector='involvedObject.kind=Node')
    if ns_events is None and node_events is None:
        return
    events = plan.select_events((ns_events or {}).get('items') or [], (node_events or {}).get('items') or [],
                                node_names, limit)
    c.add('events.yaml', 'events of %s and of the GPU nodes, oldest first (the last %d): %d'
          % (namespace, limit, len(events)), to_text(events))


def _config_maps(c, namespace, policies):
    """The ConfigMaps the ClusterPolicies name (configmaps/<name>.yaml)."""
    refs = plan.config_map_refs(policies)
    for purpose, name in refs:
        path = 'configmaps/%s.yaml' % name
        what = '%s ConfigMap %s/%s' % (purpose, namespace, name)
        data = c.read(path, what, c.conn.core.read_namespaced_config_map, name, namespace)
        if data is not None:
            c.add(path, what, to_text(plan.clean(data)))
    if not refs:
        c.missing('configmaps/', 'ConfigMaps the ClusterPolicy names', 'none named')


def _lease(c, namespace):
    """The rollout lock's Lease (lease.yaml); absent when no rollout holds or held it."""
    what = 'rollout lock Lease %s/%s' % (namespace, LOCK_LEASE_NAME)
    group, version, plural = LEASE
    data = c.read('lease.yaml', what, c.conn.custom.get_namespaced_custom_object, group, version, namespace, plural,
                  LOCK_LEASE_NAME)
    if data is not None:
        c.add('lease.yaml', what, to_text(plan.clean(data)))


def collect(conn, params, now=None):
    """Read everything; returns the Collector (files, items, warnings), summary.txt included."""
    namespace = params['operator_namespace']
    c = Collector(conn)
    policies = _custom_lists(c)
    node_names = _nodes(c, params.get('label_selector'))
    pods = _pods(c, namespace)
    logs = _logs(c, namespace, pods, params)
    _events(c, namespace, node_names, params['event_limit'])
    _config_maps(c, namespace, policies)
    _lease(c, namespace)
    header = ['gpuops.gpu diagnostics',
              'generated: %s' % time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(now)),
              'operator namespace: %s' % namespace,
              'GPU nodes: %d%s' % (len(node_names), ' (label selector %s)' % params['label_selector']
                                   if params.get('label_selector') else ''),
              'logs: %d container(s), the last %d lines each, at most %d pod(s) per component'
              % (logs, params['log_lines'], params['max_log_pods'])]
    c.files['summary.txt'] = plan.summary_text(header, c.items)
    return c


def write_archive(dest, files):
    """Write ``files`` ({path: text}) as a gzip-compressed tar under one top directory, atomically,
    mode 0600; creates the parent directory."""
    dest = os.path.abspath(os.path.expanduser(dest))
    parent = os.path.dirname(dest)
    if not os.path.isdir(parent):
        os.makedirs(parent, 0o755)
    top = plan.top_directory(dest)
    handle, tmp = tempfile.mkstemp(prefix='.gpuops-diagnostics-', dir=parent)
    try:
        with os.fdopen(handle, 'wb') as raw, tarfile.open(fileobj=raw, mode='w:gz') as tar:
            for path in ['summary.txt'] + sorted(p for p in files if p != 'summary.txt'):
                data = files[path].encode('utf-8')
                info = tarfile.TarInfo('%s/%s' % (top, path))
                info.size, info.mode, info.mtime = len(data), 0o600, int(time.time())
                tar.addfile(info, io.BytesIO(data))
        os.chmod(tmp, 0o600)
        os.replace(tmp, dest)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return dest


def run(conn, params, check_mode=False):
    """``gpuops.gpu.gpu_diagnostics``: collect, write the archive (in check mode too: it is local and the
    cluster is only read), return where it is and what it holds. Never changes the cluster."""
    errors = plan.input_errors(params)
    if errors:
        raise InputError('; '.join(errors), result={'changed': False})
    collector = collect(conn, params)
    try:
        path = write_archive(params['dest'], collector.files)
    except (IOError, OSError) as exc:
        raise InputError('Could not write the archive %s: %s (set dest to a writable path)' % (params['dest'], exc),
                         result={'changed': False})
    top = plan.top_directory(path)
    return {'changed': False, 'path': path, 'files': ['%s/%s' % (top, p) for p in sorted(collector.files)],
            'contents': collector.items, 'redacted': sum(i['redacted'] for i in collector.items),
            'warnings': collector.warnings, 'api_requests': conn.requests}
