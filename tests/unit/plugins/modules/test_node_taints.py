# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""node_taints: planning, ownership, conflicts, 409 retries and check mode, with a fake dynamic client."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import json

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.ops import taints as taints_cluster
from ansible_collections.gpuops.gpu.plugins.modules import node_taints

OWNED = 'gpuops.gpu/owned-taints'
GPU = {'key': 'nvidia.com/gpu', 'effect': 'NoSchedule'}
FOREIGN = {'key': 'node.kubernetes.io/unreachable', 'effect': 'NoExecute'}


class NotFound(Exception):
    pass


class Conflict(Exception):
    pass


class FakeResource(object):
    def __init__(self, store, kind):
        self.store = store
        self.kind = kind

    def _items(self, namespace):
        return [o for (k, ns, _n), o in sorted(self.store.objects.items()) if k == self.kind and ns == namespace]

    def get(self, name=None, namespace=None, label_selector=None):
        if name:
            key = (self.kind, namespace, name)
            if key not in self.store.objects:
                raise NotFound(name)
            return copy.deepcopy(self.store.objects[key])
        want = dict(p.split('=', 1) for p in label_selector.split(','))
        return {'items': [copy.deepcopy(o) for o in self._items(namespace)
                          if all((o['metadata'].get('labels') or {}).get(k) == v for k, v in want.items())]}

    def patch(self, body, name, namespace=None, content_type=None):
        assert content_type == 'application/merge-patch+json'
        obj = self.store.objects[(self.kind, namespace, name)]
        if self.store.conflicts:
            self.store.conflicts -= 1
            obj['metadata']['resourceVersion'] = str(int(obj['metadata']['resourceVersion']) + 1)
            obj['spec'].setdefault('taints', []).append({'key': 'racer', 'effect': 'NoSchedule'})
        if body['metadata']['resourceVersion'] != obj['metadata']['resourceVersion']:
            raise Conflict(name)
        self.store.patches.append((self.kind, name, copy.deepcopy(body)))
        annotations = obj['metadata'].setdefault('annotations', {})
        for key, value in body['metadata']['annotations'].items():
            if value is None:
                annotations.pop(key, None)
            else:
                annotations[key] = value
        target, source = obj, body
        path = taints_cluster.KINDS[self.kind][1]
        for part in path[:-1]:
            target = target.setdefault(part, {})
            source = source[part]
        if source[path[-1]] is None:
            target.pop(path[-1], None)
        else:
            target[path[-1]] = source[path[-1]]
        obj['metadata']['resourceVersion'] = str(int(obj['metadata']['resourceVersion']) + 1)
        return obj


class FakeResources(object):
    def __init__(self, store):
        self.store = store

    def get(self, api_version, kind):
        if kind == 'MachineSet' and not self.store.machine_api:
            raise NotFound('machine api')
        return FakeResource(self.store, kind)


class FakeStore(object):
    def __init__(self, objects, machine_api=True):
        self.objects = dict(((o['kind'], o['metadata'].get('namespace'), o['metadata']['name']), copy.deepcopy(o))
                            for o in objects)
        self.patches = []
        self.conflicts = 0
        self.machine_api = machine_api
        self.resources = FakeResources(self)


def node(name, taints=None, labels=None, owned=None):
    md = {'name': name, 'resourceVersion': '1', 'labels': labels or {}}
    if owned is not None:
        md['annotations'] = {OWNED: json.dumps(owned)}
    return {'kind': 'Node', 'metadata': md, 'spec': {'taints': taints} if taints is not None else {}}


def machineset(name, taints=None, labels=None):
    return {'kind': 'MachineSet', 'metadata': {'name': name, 'namespace': 'openshift-machine-api', 'resourceVersion': '7',
                                               'labels': labels or {}},
            'spec': {'template': {'spec': {'taints': taints} if taints is not None else {}}}}


@pytest.fixture(autouse=True)
def api_errors(monkeypatch):
    monkeypatch.setattr(taints_cluster, 'NotFoundError', NotFound)
    monkeypatch.setattr(taints_cluster, 'ConflictError', Conflict)


@pytest.fixture
def run_taints(run_module):
    """node_taints through the module harness (conftest.py), ``store`` as the dynamic client."""
    return lambda args, store, check=False, diff=False: run_module(node_taints, args, check, diff, dynamic=store)


def taints_of(store, name):
    return store.objects[('Node', None, name)]['spec'].get('taints')


def test_adds_keeps_foreign_and_records_ownership(run_taints):
    store = FakeStore([node('gpu-0', [FOREIGN], {'gpu': 'true'}), node('gpu-1', None, {'gpu': 'true'}),
                       node('cpu-0')])
    rc, out = run_taints({'label_selector': 'gpu=true', 'taints': [GPU]}, store, diff=True)
    assert rc == 0 and out['changed']
    assert out['changed_objects'] == ['Node/gpu-0', 'Node/gpu-1']
    assert taints_of(store, 'gpu-0') == [FOREIGN, GPU] and taints_of(store, 'gpu-1') == [GPU]
    assert store.objects[('Node', None, 'gpu-0')]['metadata']['annotations'][OWNED] == '["nvidia.com/gpu:NoSchedule"]'
    assert 'taints' not in store.objects[('Node', None, 'cpu-0')]['spec']
    assert out['diff']['before']['Node/gpu-0'] == [FOREIGN]
    assert out['diff']['after']['Node/gpu-0'] == [FOREIGN, GPU]
    # second run: no change
    rc, out = run_taints({'label_selector': 'gpu=true', 'taints': [GPU]}, store)
    assert rc == 0 and not out['changed'] and len(store.patches) == 2


def test_check_mode_writes_nothing(run_taints):
    store = FakeStore([node('gpu-0', [])])
    rc, out = run_taints({'nodes': ['gpu-0'], 'taints': [GPU]}, store, check=True)
    assert rc == 0 and out['changed'] and out['objects'][0]['added'] == ['nvidia.com/gpu:NoSchedule']
    assert store.patches == [] and taints_of(store, 'gpu-0') == []


def test_absent_removes_only_owned(run_taints):
    store = FakeStore([node('gpu-0', [FOREIGN, GPU], owned=['nvidia.com/gpu:NoSchedule']),
                       node('gpu-1', [GPU])])
    rc, out = run_taints({'nodes': ['gpu-0', 'gpu-1'], 'taints': [GPU], 'state': 'absent'}, store)
    assert rc == 0 and out['changed_objects'] == ['Node/gpu-0']
    assert taints_of(store, 'gpu-0') == [FOREIGN] and taints_of(store, 'gpu-1') == [GPU]
    assert OWNED not in store.objects[('Node', None, 'gpu-0')]['metadata']['annotations']
    assert out['objects'][1]['kept'] == ['nvidia.com/gpu:NoSchedule']


@pytest.mark.parametrize('args, fragment', [
    ({'nodes': ['gpu-0', 'nope'], 'taints': [GPU]}, 'node nope does not exist'),
    ({'label_selector': 'pool=none', 'taints': [GPU]}, "matches no node"),
    ({'nodes': ['gpu-0'], 'taints': [{'key': 'a', 'effect': 'Never'}]}, 'effect must be one of'),
    ({'taints': [GPU]}, 'select something to taint'),
    ({'nodes': ['gpu-0'], 'taints': [GPU], 'remove': ['a:Bad']}, 'remove[0] effect'),
    ({'nodes': ['gpu-0', 'gpu-1'], 'taints': [{'key': 'dedicated', 'value': 'gpu', 'effect': 'NoSchedule'}]},
     'taint conflicts, nothing changed'),
    ({'machinesets': ['missing'], 'taints': [GPU]}, 'MachineSet openshift-machine-api/missing does not exist'),
])
def test_bad_input_fails_before_any_write(run_taints, args, fragment):
    store = FakeStore([node('gpu-0', []), node('gpu-1', [{'key': 'dedicated', 'value': 'ml', 'effect': 'NoSchedule'}])])
    rc, out = run_taints(args, store)
    assert rc == 1 and fragment in out['msg'] and not out['changed']
    assert store.patches == []


def test_selector_without_match_allowed(run_taints):
    store = FakeStore([node('gpu-0', [])])
    rc, out = run_taints({'label_selector': 'pool=none', 'taints': [GPU], 'require_match': False}, store)
    assert rc == 0 and not out['changed'] and out['objects'] == []


def test_no_machine_api(run_taints):
    store = FakeStore([], machine_api=False)
    rc, out = run_taints({'machineset_selector': 'gpu=true', 'taints': [GPU]}, store)
    assert rc == 1 and 'not served' in out['msg']


def test_machineset_template(run_taints):
    store = FakeStore([machineset('gpu-a100', labels={'gpu': 'true'}), machineset('cpu')])
    rc, out = run_taints({'machineset_selector': 'gpu=true', 'taints': [GPU]}, store)
    assert rc == 0 and out['changed_objects'] == ['MachineSet/gpu-a100']
    obj = store.objects[('MachineSet', 'openshift-machine-api', 'gpu-a100')]
    assert obj['spec']['template']['spec']['taints'] == [GPU]
    assert out['objects'][0]['namespace'] == 'openshift-machine-api'


def test_conflict_is_replanned_and_keeps_the_concurrent_taint(run_taints):
    store = FakeStore([node('gpu-0', [])])
    store.conflicts = 1
    rc, out = run_taints({'nodes': ['gpu-0'], 'taints': [GPU]}, store)
    assert rc == 0 and out['changed']
    assert taints_of(store, 'gpu-0') == [{'key': 'racer', 'effect': 'NoSchedule'}, GPU]


def test_endless_conflicts_give_up(run_taints):
    store = FakeStore([node('gpu-0', [])])
    store.conflicts = 100
    rc, out = run_taints({'nodes': ['gpu-0'], 'taints': [GPU], 'conflict_retries': 2}, store)
    assert rc == 1 and 'kept changing concurrently (3 conflicts)' in out['msg']
