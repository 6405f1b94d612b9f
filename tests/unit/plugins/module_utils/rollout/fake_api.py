# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""An in-memory Kubernetes API for the rollout engine's unit tests (nodes, pods, evictions with
PodDisruptionBudget refusals, Events, injected failures), answering raw JSON like the real client
called with ``_preload_content=False``, and a minimal target *kind* with a configurable label."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import json

from kubernetes.client.rest import ApiException
from ansible_collections.gpuops.gpu.plugins.module_utils.k8s.client import Connection
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.engine import NodeRollout
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.inputs import rollout_argument_spec

LABEL = 'example.com/config'


class Resp(object):
    def __init__(self, obj):
        self.data = json.dumps(obj).encode()


def api_error(status, reason='Error'):
    return ApiException(status=status, reason=reason)


def merge(dst, patch):
    """JSON merge patch (None deletes)."""
    for key, value in patch.items():
        if value is None:
            dst.pop(key, None)
        elif isinstance(value, dict):
            merge(dst.setdefault(key, {}), value)
        else:
            dst[key] = copy.deepcopy(value)


def node(name, labels=None, annotations=None, unschedulable=False):
    return {'metadata': {'name': name, 'uid': 'uid-' + name, 'labels': dict(labels or {}),
                         'annotations': dict(annotations or {})},
            'spec': {'unschedulable': True} if unschedulable else {}, 'status': {'allocatable': {}}}


def gpu_pod(name, node_name, namespace='ml'):
    return {'metadata': {'name': name, 'namespace': namespace, 'uid': 'uid-' + name, 'labels': {'app': name}},
            'spec': {'nodeName': node_name, 'containers': [{'name': 'c', 'resources': {
                'limits': {'nvidia.com/gpu': '1'}}}]},
            'status': {'phase': 'Running'}}


class FakeApi(object):
    """CoreV1Api and PolicyV1Api in one, with CustomObjectsApi's ClusterPolicy and Lease calls and ConfigMap
    reads (``config_maps``, written only by the test). ``blocked``: pod names whose eviction a PDB refuses (429);
    ``failures``: {method name: [exceptions to raise on the next calls]}."""

    def __init__(self, nodes, pods=(), blocked=()):
        self.nodes = dict((n['metadata']['name'], copy.deepcopy(n)) for n in nodes)
        self.pods = [copy.deepcopy(p) for p in pods]
        self.blocked = set(blocked)
        self.failures = {}
        self.patches = []
        self.events = []
        self.evicted = []
        self.deleted = []
        self.leases = {}
        self.policies = []  # ClusterPolicies (where the rollout lock lives: their status.namespace)
        self.config_maps = {}  # (namespace, name) -> ConfigMap, read only

    def writes(self):
        """Every write this API took (node patches, Events, evictions, pod deletions, Leases): [] when none."""
        return self.patches + self.events + self.evicted + self.deleted + sorted(self.leases)

    def _fail(self, method):
        pending = self.failures.get(method)
        if pending:
            raise pending.pop(0)

    def list_node(self, **kwargs):
        assert kwargs.pop('_preload_content') is False
        assert 'watch' not in kwargs  # no resourceVersion is listed, so no watch is started
        return Resp({'metadata': {}, 'items': list(self.nodes.values())})

    def read_node(self, name, **kwargs):
        self._fail('read_node')
        return Resp(self.nodes[name])

    def patch_node(self, name, body, **kwargs):
        self._fail('patch_node')
        self.patches.append((name, copy.deepcopy(body)))
        merge(self.nodes[name], body)
        return Resp(self.nodes[name])

    def list_pod_for_all_namespaces(self, field_selector=None, **kwargs):
        pods = self.pods
        if field_selector and field_selector.startswith('spec.nodeName='):
            pods = [p for p in pods if p['spec']['nodeName'] == field_selector.split('=', 1)[1]]
        return Resp({'items': pods})

    def list_pod_disruption_budget_for_all_namespaces(self, **kwargs):
        return Resp({'items': []})

    def create_namespaced_pod_eviction(self, name, namespace, body, **kwargs):
        if name in self.blocked:
            raise api_error(429, 'Too Many Requests')
        self.evicted.append('%s/%s' % (namespace, name))
        self.pods = [p for p in self.pods if p['metadata']['name'] != name]
        return Resp({})

    def delete_namespaced_pod(self, name, namespace, **kwargs):
        if not any(p['metadata']['name'] == name for p in self.pods):
            raise api_error(404, 'Not Found')
        self.deleted.append('%s/%s' % (namespace, name))
        self.pods = [p for p in self.pods if p['metadata']['name'] != name]
        return Resp({'metadata': {'name': name}})

    def create_namespaced_event(self, namespace, body, **kwargs):
        self.events.append((body['involvedObject']['name'], body['reason']))
        return Resp(body)

    def list_cluster_custom_object(self, group, version, plural, **kwargs):
        assert plural == 'clusterpolicies'
        return Resp({'items': copy.deepcopy(self.policies)})

    def get_cluster_custom_object(self, group, version, plural, name, **kwargs):
        assert plural == 'clusterpolicies'
        found = [p for p in self.policies if p['metadata']['name'] == name]
        if not found:
            raise api_error(404, 'Not Found')
        return Resp(found[0])

    def read_namespace(self, name, **kwargs):
        """Namespaces are there with a fixed UID (``uid-ns-<name>``), except those in ``missing_namespaces``."""
        if name in getattr(self, 'missing_namespaces', ()):
            raise api_error(404, 'Not Found')
        return Resp({'metadata': {'name': name, 'uid': 'uid-ns-' + name}})

    def read_namespaced_config_map(self, name, namespace, **kwargs):
        if (namespace, name) not in self.config_maps:
            raise api_error(404, 'Not Found')
        return Resp(self.config_maps[(namespace, name)])

    # the rollout lock's Lease (CustomObjectsApi), one object per (namespace, name)
    def get_namespaced_custom_object(self, group, version, namespace, plural, name, **kwargs):
        lease = self.leases.get((namespace, name))
        if lease is None:
            raise api_error(404, 'Not Found')
        return Resp(lease)

    def create_namespaced_custom_object(self, group, version, namespace, plural, body, **kwargs):
        key = (namespace, body['metadata']['name'])
        if key in self.leases:
            raise api_error(409, 'Conflict')
        self.leases[key] = dict(copy.deepcopy(body), metadata=dict(body['metadata'], resourceVersion='1'))
        return Resp(self.leases[key])

    def replace_namespaced_custom_object(self, group, version, namespace, plural, name, body, **kwargs):
        current = self.leases.get((namespace, name))
        if current is None:
            raise api_error(404, 'Not Found')
        version_given = (body.get('metadata') or {}).get('resourceVersion')
        if version_given and version_given != current['metadata'].get('resourceVersion'):
            raise api_error(409, 'Conflict')
        stored = copy.deepcopy(body)
        stored.setdefault('metadata', {})['resourceVersion'] = str(int(current['metadata']['resourceVersion']) + 1)
        self.leases[(namespace, name)] = stored
        return Resp(stored)

    def delete_namespaced_custom_object(self, group, version, namespace, plural, name, body=None, **kwargs):
        current = self.leases.get((namespace, name))
        if current is None:
            raise api_error(404, 'Not Found')
        wanted = ((body or {}).get('preconditions') or {}).get('resourceVersion')
        if wanted and wanted != current['metadata'].get('resourceVersion'):
            raise api_error(409, 'Conflict')  # the apiserver's answer to a failed precondition
        del self.leases[(namespace, name)]
        return Resp({})


class FakeKind(object):
    """A label-driven change that is reached as soon as the label is set."""

    label = LABEL
    name = 'fake'

    @staticmethod
    def labels(node):
        return (node.get('metadata') or {}).get('labels') or {}

    def at_target(self, node, value):
        return self.labels(node).get(LABEL) == value

    def needs_label(self, node, value):
        return self.labels(node).get(LABEL) != value

    def label_patch(self, value):
        return {LABEL: value}

    def clear_patch(self):
        return {LABEL: None}

    def progress(self, node, value):
        if self.labels(node).get(LABEL) == value:
            return 'done', 'set'
        return 'wait', 'not yet'

    def expected_allocatable(self, node, value):
        return {}


def opts(**kw):
    base = dict((k, v['default']) for k, v in rollout_argument_spec('config').items() if 'default' in v)
    base.update(poll_interval=0.01, state_timeout=5, reboot_timeout=5, retry_stuck=False, check_mode=False)
    base.update(kw)
    return base


def rollout(api, **kw):
    conn = Connection(core=api, policy=api, custom=api)
    engine = NodeRollout(conn, FakeKind(), opts(**kw))
    nodes = dict((n['metadata']['name'], n) for n in engine.list_nodes())
    return conn, engine, nodes
