# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""An in-memory API with a minimal OLM that advances one step per poll, shared by the tests of ops/olm.py and
ops/olm_remove.py."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import pytest
from ansible_collections.gpuops.gpu.plugins.module_utils.common.merge import deep_merge
from ansible_collections.gpuops.gpu.plugins.module_utils.k8s.client import Connection
from ansible_collections.gpuops.gpu.plugins.module_utils.ops import olm as olm_cluster
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.fakes import FakeClock


kubernetes = pytest.importorskip('kubernetes')


ApiException = kubernetes.client.rest.ApiException


PINNED = 'gpu-operator-certified.v25.10.1'


NEWER = 'gpu-operator-certified.v26.7.0'


NS = 'nvidia-gpu-operator'


def not_found():
    return ApiException(status=404, reason='Not Found')


class FakeCore(object):
    def __init__(self, store):
        self.store = store

    def read_namespace(self, name, **_kwargs):
        if name not in self.store.namespaces:
            raise not_found()
        return copy.deepcopy(self.store.namespaces[name])

    def create_namespace(self, body, **_kwargs):
        self.store.writes.append(('create', 'Namespace', body['metadata']['name']))
        self.store.namespaces[body['metadata']['name']] = body

    def patch_namespace(self, name, body, **_kwargs):
        self.store.writes.append(('patch', 'Namespace', name))
        self.store.namespaces[name]['metadata'].setdefault('labels', {}).update(body['metadata']['labels'])

    def delete_namespace(self, name, **_kwargs):
        self.store.writes.append(('delete', 'Namespace', name))
        self.store.namespaces.pop(name, None)


class FakeCustom(object):
    def __init__(self, store):
        self.store = store

    def _key(self, plural, namespace, name):
        return (plural, namespace, name)

    def get_namespaced_custom_object(self, group, version, namespace, plural, name, **_kwargs):
        obj = self.store.objects.get((plural, namespace, name))
        if obj is None:
            raise not_found()
        return copy.deepcopy(obj)

    def list_namespaced_custom_object(self, group, version, namespace, plural, label_selector=None, **_kwargs):
        if plural == 'packagemanifests' and not self.store.package_api:
            raise not_found()
        items = [copy.deepcopy(o) for (p, ns, _n), o in sorted(self.store.objects.items()) if p == plural and ns == namespace]
        if label_selector:
            key, value = label_selector.split('=')
            items = [o for o in items if (o['metadata'].get('labels') or {}).get(key) == value]
        return {'items': items}

    def create_namespaced_custom_object(self, group, version, namespace, plural, body, **_kwargs):
        self.store.writes.append(('create', plural, body['metadata']['name']))
        obj = copy.deepcopy(body)
        obj['metadata']['namespace'] = namespace
        self.store.objects[(plural, namespace, body['metadata']['name'])] = obj
        return copy.deepcopy(obj)

    def patch_namespaced_custom_object(self, group, version, namespace, plural, name, body, **_kwargs):
        self.store.writes.append(('patch', plural, name))
        self.store.objects[(plural, namespace, name)] = deep_merge(self.store.objects[(plural, namespace, name)], body)
        return copy.deepcopy(self.store.objects[(plural, namespace, name)])

    def delete_namespaced_custom_object(self, group, version, namespace, plural, name, **_kwargs):
        self.store.writes.append(('delete', plural, name))
        self.store.objects.pop((plural, namespace, name), None)


class Store(object):
    """The API's objects plus a minimal OLM that advances one step per poll."""

    def __init__(self, catalog_state='READY', package_api=True, csv_failure=None, resolve_error=None):
        self.namespaces = {'openshift-marketplace': {'metadata': {'name': 'openshift-marketplace'}}}
        self.objects = {}
        self.writes = []
        self.package_api = package_api
        self.csv_failure = csv_failure
        self.resolve_error = resolve_error
        self.catalog_states = list(catalog_state) if isinstance(catalog_state, list) else [catalog_state]
        self.objects[('catalogsources', 'openshift-marketplace', 'certified-operators')] = {
            'metadata': {'name': 'certified-operators'},
            'status': {'connectionState': {'lastObservedState': self.catalog_states[0]}}}
        self.objects[('packagemanifests', 'openshift-marketplace', 'gpu-operator-certified')] = {
            'metadata': {'name': 'gpu-operator-certified', 'labels': {'catalog': 'certified-operators'}},
            'status': {'packageName': 'gpu-operator-certified', 'defaultChannel': 'stable',
                       'channels': [{'name': 'stable', 'currentCSV': NEWER,
                                     'entries': [{'name': NEWER}, {'name': PINNED}],
                                     'currentCSVDesc': {'installModes': [
                                         {'type': 'OwnNamespace', 'supported': True},
                                         {'type': 'AllNamespaces', 'supported': False}]}}]}}
        self.steps = 0

    def conn(self):
        return Connection(core=FakeCore(self), custom=FakeCustom(self))

    def tick(self, _seconds=0):
        """One OLM step (called instead of sleeping)."""
        self.steps += 1
        if len(self.catalog_states) > 1:
            self.catalog_states.pop(0)
            self.objects[('catalogsources', 'openshift-marketplace', 'certified-operators')]['status'][
                'connectionState']['lastObservedState'] = self.catalog_states[0]
        sub = next((o for (p, ns, _n), o in sorted(self.objects.items()) if p == 'subscriptions' and ns == NS), None)
        if sub is None:
            return
        status = sub.setdefault('status', {})
        if self.resolve_error:
            status['conditions'] = [{'type': 'ResolutionFailed', 'status': 'True', 'message': self.resolve_error}]
            return
        installed = status.get('installedCSV')
        target = NEWER if installed else (sub['spec'].get('startingCSV') or NEWER)
        plans = [o for (p, ns, _n), o in self.objects.items() if p == 'installplans' and ns == NS]
        plan = next((p for p in plans if target in p['spec']['clusterServiceVersionNames']), None)
        if installed == target:
            return
        if plan is None:
            name = 'install-%d' % (len(plans) + 1)
            manual = sub['spec']['installPlanApproval'] == 'Manual'
            self.objects[('installplans', NS, name)] = {
                'metadata': {'name': name, 'ownerReferences': [{'kind': 'Subscription', 'name': 'gpu-operator-certified'}]},
                'spec': {'approval': sub['spec']['installPlanApproval'], 'approved': not manual,
                         'clusterServiceVersionNames': [target]},
                'status': {'phase': 'RequiresApproval' if manual else 'Installing'}}
            status.update({'currentCSV': target, 'installPlanRef': {'name': name}})
            return
        if plan['spec']['approved'] and plan['status']['phase'] != 'Complete':
            plan['status']['phase'] = 'Complete'
            status.update({'installedCSV': target, 'currentCSV': target})
            phase = {'phase': 'Failed', 'reason': self.csv_failure, 'message': 'broken'} if self.csv_failure \
                else {'phase': 'Succeeded'}
            self.objects[('clusterserviceversions', NS, target)] = {
                'metadata': {'name': target, 'annotations': {'alm-examples': '[{"kind": "ClusterPolicy", "spec": {"a": 1}}]'}},
                'spec': {'version': target.split('.v', 1)[1],
                         'relatedImages': [{'name': 'driver', 'image': 'r/driver@sha256:1'}]},
                'status': phase}


def params(**kw):
    base = {'package': 'gpu-operator-certified', 'namespace': NS, 'channel': 'stable', 'source': 'certified-operators',
            'source_namespace': 'openshift-marketplace', 'starting_csv': PINNED, 'approval': 'Manual',
            'subscription_name': None, 'create_namespace': True, 'namespace_labels': {}, 'operator_group_name': None,
            'target_namespaces': None, 'config': None, 'wait': True, 'wait_timeout': 60, 'catalog_timeout': 5,
            'poll_interval': 1.0}
    base.update(kw)
    return base


def Clock(store):
    """The fake clock; each pause is one OLM step of ``store``."""
    return FakeClock(on_sleep=lambda _clock: store.tick())


def install(store, check_mode=False, **kw):
    clock = Clock(store)
    return olm_cluster.OlmInstall(store.conn(), params(**kw), check_mode, sleep=clock.sleep, clock=clock).run()
