# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A small DRA fleet and a fake DRA cluster for the smoke test through DRA, shared by the tests of plans/smoke_dra*.py,
ops/smoke_dra.py and the gpu_smoke_test module.

* ``t4-0``, ``t4-1``: one whole T4 each (DRA only); ``t4-1``'s is allocated to ``team/busy``.
* ``a100-0``: three MIG 1g.5gb devices of one A100 and one whole A100 (DRA), and nvidia.com/gpu: 8 from a device
  plugin (both stacks).
* ``cordoned-0``: one T4, cordoned.
Classes: the driver chart's ``gpu.nvidia.com`` (extendedResourceName nvidia.com/gpu) and ``mig.nvidia.com``, the
dra role's ``t4.example.com`` (extendedResourceName example.com/t4), the cluster's own ``own.example.com``.
Templates: the dra role's ``one-t4`` in team-a and team-b (one spec), ``two-migs`` in team-a.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import json

from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.gpu.dra_data import claim, gpu, mig, rslice
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.plans.smoke_fakes import FakeApiError, FakeResponse

T4 = 'Tesla T4'
ROLE = {'app.kubernetes.io/managed-by': 'gpuops.gpu', 'gpuops.gpu/role': 'dra'}
TYPE = "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == '%s'"


def device_class(name, expression=None, extended=None, labels=None, created='2026-01-01T00:00:00Z'):
    spec = {'selectors': [{'cel': {'expression': expression}}] if expression else []}
    if extended:
        spec['extendedResourceName'] = extended
    return {'apiVersion': 'resource.k8s.io/v1', 'kind': 'DeviceClass',
            'metadata': {'name': name, 'labels': dict(labels or {}), 'creationTimestamp': created}, 'spec': spec}


def template(namespace, name, device_class_name, count=1, labels=None, mode=None):
    """A ResourceClaimTemplate of one request; ``labels`` None: the dra role's."""
    labels = ROLE if labels is None else labels
    exactly = {'deviceClassName': device_class_name, 'count': count}
    if mode:
        exactly = {'deviceClassName': device_class_name, 'allocationMode': mode}
    return {'apiVersion': 'resource.k8s.io/v1', 'kind': 'ResourceClaimTemplate',
            'metadata': {'namespace': namespace, 'name': name, 'labels': dict(labels or {})},
            'spec': {'spec': {'devices': {'requests': [{'name': 'gpu', 'exactly': exactly}]}}}}


CLASSES = [
    device_class('gpu.nvidia.com', TYPE % 'gpu', 'nvidia.com/gpu'),
    device_class('mig.nvidia.com', TYPE % 'mig'),
    device_class('t4.example.com', TYPE % 'gpu' + " && device.attributes['gpu.nvidia.com'].productName == 'Tesla T4'",
                 'example.com/t4', ROLE),
    device_class('own.example.com', "device.driver == 'gpu.nvidia.com'"),
]
TEMPLATES = [template('team-a', 'one-t4', 't4.example.com'), template('team-b', 'one-t4', 't4.example.com'),
             template('team-a', 'two-migs', 'mig.nvidia.com', count=2),
             template('team-c', 'mine', 'own.example.com', labels={})]
SLICES = [
    rslice('t4-0', [gpu(0, 'GPU-t0', T4, '15Gi')]),
    rslice('t4-1', [gpu(0, 'GPU-t1', T4, '15Gi')]),
    rslice('a100-0', [gpu(0, 'GPU-a0')] + [mig(1, 'GPU-a1', '1g.5gb', 19, s, 'MIG-%d' % s, 4864) for s in (0, 1, 2)]),
    rslice('cordoned-0', [gpu(0, 'GPU-c0', T4, '15Gi')]),
]
CLAIMS = [claim('team', 'busy', [('gpu.nvidia.com', 't4-1', 'gpu-0', 'gpu')])]


def fleet_node(name, allocatable=None, unschedulable=False, ready=True, taints=None):
    """A node as gpuops.gpu.gpu_nodes_info lists it (the keys the DRA plan reads)."""
    return {'name': name, 'allocatable': dict(allocatable or {}), 'capacity': dict(allocatable or {}),
            'free': dict(allocatable or {}), 'unschedulable': unschedulable, 'ready': ready, 'taints': taints or [],
            'product_label': None}


NODES = [fleet_node('t4-0'), fleet_node('t4-1'), fleet_node('a100-0', {'nvidia.com/gpu': 8}),
         fleet_node('cordoned-0', unschedulable=True)]


def _selected(items, label_selector):
    if not label_selector:
        return list(items)
    key, value = label_selector.split('=')
    return [i for i in items if (i['metadata'].get('labels') or {}).get(key) == value]


class FakeDra(object):
    """The custom-objects API of a DRA cluster with a fake scheduler: a pod created with a claim (its own, or made from
    a template) gets a free device of the claim's class on one of its affinity nodes, else stays Pending
    (Unschedulable) and is tried again once devices are freed (``retry``); a Job gets one such pod at once, which
    completes at the next list of the Jobs. ``served=False``: resource.k8s.io is not
    served; ``forbidden``: 403 on every list; ``fail_create``: plurals whose creation fails."""

    def __init__(self, served=True, forbidden=False, fail_create=(), served_ext=True, retry=True):
        self.objects = {'deviceclasses': copy.deepcopy(CLASSES), 'resourceclaimtemplates': copy.deepcopy(TEMPLATES),
                        'resourceslices': copy.deepcopy(SLICES), 'resourceclaims': copy.deepcopy(CLAIMS)}
        self.served, self.forbidden, self.fail_create, self.served_ext = served, forbidden, fail_create, served_ext
        self.retry = retry
        self.jobs, self.pods, self.created, self.deleted, self.calls = {}, {}, [], [], []

    # -- custom objects
    def list_cluster_custom_object(self, group, version, plural, label_selector=None, field_selector=None,
                                   _preload_content=False, **kwargs):
        self.calls.append(('list', plural))
        if not self.served:
            raise FakeApiError(404, 'the server could not find the requested resource')
        if self.forbidden:
            raise FakeApiError(403, 'forbidden')
        return FakeResponse({'metadata': {}, 'items': _selected(self.objects[plural], label_selector)})

    def list_namespaced_custom_object(self, group, version, namespace, plural, label_selector=None,
                                      _preload_content=False, **kwargs):
        items = [o for o in self.objects[plural] if o['metadata'].get('namespace') == namespace]
        return FakeResponse({'items': _selected(items, label_selector)})

    def create_namespaced_custom_object(self, group, version, namespace, plural, body, _preload_content=False):
        if plural in self.fail_create:
            raise FakeApiError(403, 'forbidden: %s' % plural)
        body = copy.deepcopy(body)
        body['metadata']['namespace'] = namespace
        self.objects[plural].append(body)
        self.created.append((plural, body['metadata']['name']))

    def delete_namespaced_custom_object(self, group, version, namespace, plural, name, _preload_content=False,
                                        **kwargs):
        self.deleted.append((plural, name))
        self.objects[plural] = [o for o in self.objects[plural]
                                if (o['metadata'].get('namespace'), o['metadata']['name']) != (namespace, name)]

    # -- scheduling
    def _free(self, device_class_name, nodes):
        taken = set((r['pool'], r['device']) for c in self.objects['resourceclaims']
                    for r in ((c.get('status') or {}).get('allocation') or {}).get('devices', {}).get('results', []))
        want = 'mig' if device_class_name == 'mig.nvidia.com' else 'gpu'
        for item in self.objects['resourceslices']:
            node = item['spec']['nodeName']
            for device in item['spec']['devices']:
                if (node in nodes and (node, device['name']) not in taken
                        and device['attributes']['type']['string'] == want):
                    return node, device['name']
        return None

    def _schedule(self, pod, namespace, again=False):
        spec = pod['spec']
        if again:
            pod.pop('status')
            self._drop_claims_of(pod['metadata']['name'])
        terms = (((spec.get('affinity') or {}).get('nodeAffinity') or {}).get(
            'requiredDuringSchedulingIgnoredDuringExecution') or {}).get('nodeSelectorTerms') or []
        nodes = [t['matchFields'][0]['values'][0] for t in terms] or ['t4-0', 't4-1', 'a100-0']
        status = {'phase': 'Pending'}
        ref = (spec.get('resourceClaims') or [{}])[0]
        if ref.get('resourceClaimTemplateName'):
            source = next(o for o in self.objects['resourceclaimtemplates'] if o['metadata']['name'] == ref[
                'resourceClaimTemplateName'])
            claim_name = pod['metadata']['name'] + '-gpu-x1'
            made = {'metadata': {'name': claim_name, 'namespace': namespace,
                                 'labels': dict(source['spec']['metadata']['labels']),
                                 'ownerReferences': [{'name': pod['metadata']['name']}]},
                    'spec': copy.deepcopy(source['spec']['spec'])}
            self.objects['resourceclaims'].append(made)
            status['resourceClaimStatuses'] = [{'name': 'gpu', 'resourceClaimName': claim_name}]
        elif ref.get('resourceClaimName'):
            claim_name = ref['resourceClaimName']
        else:  # an extended resource served through a DeviceClass
            if not self.served_ext:
                return self._unschedulable(pod, status, 'Insufficient example.com/t4')
            claim_name = pod['metadata']['name'] + '-extended-resources-x1'
            self.objects['resourceclaims'].append({'metadata': {'name': claim_name, 'namespace': namespace,
                                                                'ownerReferences': [{'name': pod['metadata']['name']}]},
                                                   'spec': {'devices': {'requests': [{'name': 'r', 'exactly': {
                                                       'deviceClassName': 'gpu.nvidia.com'}}]}}})
            status['extendedResourceClaimStatus'] = {'resourceClaimName': claim_name}
        the_claim = next(c for c in self.objects['resourceclaims'] if c['metadata']['name'] == claim_name)
        found = self._free(the_claim['spec']['devices']['requests'][0]['exactly']['deviceClassName'], nodes)
        if found is None:
            return self._unschedulable(pod, status, '0/4 nodes are available: 2 cannot allocate all claims.')
        the_claim['status'] = {'allocation': {'devices': {'results': [
            {'driver': 'gpu.nvidia.com', 'pool': found[0], 'device': found[1], 'request': 'gpu'}]}}}
        spec['nodeName'] = found[0]
        status['phase'] = 'Running'
        pod['status'] = status
        return pod

    @staticmethod
    def _unschedulable(pod, status, message):
        status['conditions'] = [{'type': 'PodScheduled', 'status': 'False', 'reason': 'Unschedulable',
                                 'message': message}]
        pod['status'] = status
        return pod

    # -- core and batch
    def create_namespaced_pod(self, namespace, body, _preload_content=False):
        pod = copy.deepcopy(body)
        pod['metadata']['creationTimestamp'] = '2026-01-01T00:00:00Z'
        self.pods[pod['metadata']['name']] = self._schedule(pod, namespace)
        self.created.append(('pods', pod['metadata']['name']))

    def create_namespaced_job(self, namespace, body, _preload_content=False):
        self.jobs[body['metadata']['name']] = body
        template = copy.deepcopy(body['spec']['template'])
        pod = {'metadata': dict(template['metadata'], name=body['metadata']['name'] + '-abcde',
                                labels=dict(template['metadata']['labels'],
                                            **{'batch.kubernetes.io/job-name': body['metadata']['name']})),
               'spec': template['spec']}
        self.create_namespaced_pod(namespace, pod)

    def list_namespaced_job(self, namespace, label_selector=None, _preload_content=False):
        """A Job's running pod completes (the claims made for it go, as the resourceclaim controller deletes them);
        then the Pending pods are scheduled again on the devices freed."""
        items = []
        for name, body in self.jobs.items():
            pod = self.pods.get(name + '-abcde') or {}
            if pod.get('status', {}).get('phase') == 'Running':
                pod['status']['phase'] = 'Succeeded'
                self._drop_claims_of(pod['metadata']['name'])
            items.append({'metadata': dict(body['metadata']), 'status': {'conditions': [
                {'type': 'Complete', 'status': 'True'}] if pod.get('status', {}).get('phase') == 'Succeeded' else []}})
        for pod in self.pods.values():
            if pod['status']['phase'] == 'Pending' and self.retry:
                self._schedule(pod, namespace, again=True)
        return FakeResponse({'items': _selected(items, label_selector)})

    def _drop_claims_of(self, pod_name):
        self.objects['resourceclaims'] = [c for c in self.objects['resourceclaims'] if pod_name not in [
            o.get('name') for o in c['metadata'].get('ownerReferences') or []]]

    def delete_namespaced_job(self, name, namespace, **kwargs):
        self.deleted.append(('jobs', name))
        self.jobs.pop(name, None)
        self.delete_namespaced_pod(name + '-abcde', namespace)

    def list_namespaced_pod(self, namespace, label_selector=None, _preload_content=False):
        return FakeResponse({'items': _selected(list(self.pods.values()), label_selector)})

    def delete_namespaced_pod(self, name, namespace, **kwargs):
        if self.pods.pop(name, None) is not None:
            self.deleted.append(('pods', name))
        self._drop_claims_of(name)  # the resourceclaim controller: claims made for the pod go with it

    def read_namespaced_pod_log(self, name, namespace, tail_lines=None, _preload_content=False):
        return FakeResponse('[Vector addition of 50000 elements]\nTest PASSED\nDone\n')

    def list_namespaced_event(self, namespace, field_selector=None, _preload_content=False):
        return FakeResponse({'items': []})

    def left(self, namespace='gpuops-smoke-test'):
        """What the run left in its namespace."""
        mine = [(p, o['metadata']['name']) for p, items in self.objects.items() for o in items
                if o['metadata'].get('namespace') == namespace]
        return sorted(mine + [('jobs', n) for n in self.jobs] + [('pods', n) for n in self.pods])


def dumps(value):
    return json.dumps(value, sort_keys=True)
