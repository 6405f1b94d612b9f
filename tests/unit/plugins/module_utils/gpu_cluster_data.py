# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Real-looking Node and Pod objects (as the API returns them, decoded JSON) for unit tests.

Labels follow what GFD/NFD/mig-manager write (docs/facts.md#gpu-feature-discovery-labels, #mig-manager):
* a100-0: A100-40GB, MIG strategy single, all-1g.5gb applied (56 MIG devices, product suffix)
* h100-0: H100-80GB, MIG strategy mixed, reconfiguration pending, cordoned, operands paused
* t4-0: T4, time-slicing replicas 4 (product -SHARED suffix)
* l40s-0: L40S, MPS replicas 10 renamed to nvidia.com/gpu.shared (no -SHARED suffix), NotReady
* plain-0: GPUs only in capacity (no GFD labels yet)
* cpu-0: no GPU at all
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import json

GPU_TAINT = {'key': 'nvidia.com/gpu', 'value': 'present', 'effect': 'NoSchedule'}
GPU_TOLERATION = {'key': 'nvidia.com/gpu', 'operator': 'Exists', 'effect': 'NoSchedule'}


def node(name, labels=None, allocatable=None, unschedulable=False, ready=True, taints=None):
    resources = {'cpu': '96', 'memory': '1056561300Ki', 'pods': '250', 'ephemeral-storage': '2Ti'}
    resources.update(allocatable or {})
    obj = {
        'apiVersion': 'v1',
        'kind': 'Node',
        'metadata': {
            'name': name,
            'uid': 'uid-' + name,
            'resourceVersion': '1001',
            'labels': dict({'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux',
                            'node-role.kubernetes.io/worker': ''}, **(labels or {})),
            'annotations': {'node.alpha.kubernetes.io/ttl': '0'},
        },
        'spec': {'providerID': 'kwok://' + name},
        'status': {
            'capacity': copy.deepcopy(resources),
            'allocatable': copy.deepcopy(resources),
            'conditions': [
                {'type': 'MemoryPressure', 'status': 'False'},
                {'type': 'Ready', 'status': 'True' if ready else 'Unknown',
                 'reason': 'KubeletReady' if ready else 'NodeStatusUnknown'},
            ],
            'nodeInfo': {'kubeletVersion': 'v1.36.3', 'containerRuntimeVersion': 'containerd://1.7.27'},
        },
    }
    if unschedulable:
        obj['spec']['unschedulable'] = True
    if taints:
        obj['spec']['taints'] = taints
    return obj


A100 = node('a100-0', labels={
    'feature.node.kubernetes.io/pci-10de.present': 'true',
    'nvidia.com/gpu.present': 'true',
    'nvidia.com/gpu.product': 'NVIDIA-A100-SXM4-40GB-MIG-1g.5gb',
    'nvidia.com/gpu.count': '56',
    'nvidia.com/gpu.memory': '4864',
    'nvidia.com/gpu.replicas': '1',
    'nvidia.com/gpu.sharing-strategy': 'none',
    'nvidia.com/gpu.family': 'ampere',
    'nvidia.com/gpu.slices.gi': '1',
    'nvidia.com/mig.capable': 'true',
    'nvidia.com/mig.strategy': 'single',
    'nvidia.com/mig.config': 'all-1g.5gb',
    'nvidia.com/mig.config.state': 'success',
    'nvidia.com/mps.capable': 'false',
    'nvidia.com/gpu.deploy.device-plugin': 'true',
    'nvidia.com/gpu.deploy.mig-manager': 'true',
    'gpuops.dev/pool': 'training',
}, allocatable={'nvidia.com/gpu': '56'})

H100 = node('h100-0', labels={
    'feature.node.kubernetes.io/pci-10de.present': 'true',
    'nvidia.com/gpu.present': 'true',
    'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3',
    'nvidia.com/gpu.count': '8',
    'nvidia.com/gpu.memory': '81559',
    'nvidia.com/gpu.replicas': '1',
    'nvidia.com/gpu.sharing-strategy': 'none',
    'nvidia.com/mig-1g.10gb.count': '14',
    'nvidia.com/mig-1g.10gb.product': 'NVIDIA-H100-80GB-HBM3-MIG-1g.10gb',
    'nvidia.com/mig-1g.10gb.memory': '9856',
    'nvidia.com/mig-3g.40gb.count': '2',
    'nvidia.com/mig-3g.40gb.slices.ci': '3',
    'nvidia.com/mig.capable': 'true',
    'nvidia.com/mig.strategy': 'mixed',
    'nvidia.com/mig.config': 'all-balanced',
    'nvidia.com/mig.config.state': 'pending',
    'nvidia.com/gpu.deploy.device-plugin': 'paused-for-mig-change',
    'nvidia.com/gpu.deploy.gpu-feature-discovery': 'paused-for-mig-change',
    'nvidia.com/gpu.deploy.mig-manager': 'true',
    'gpuops.dev/pool': 'training',
}, allocatable={'nvidia.com/gpu': '4', 'nvidia.com/mig-1g.10gb': '14', 'nvidia.com/mig-3g.40gb': '2'},
    unschedulable=True, taints=[GPU_TAINT, {'key': 'node.kubernetes.io/unschedulable', 'effect': 'NoSchedule'}])

T4 = node('t4-0', labels={
    'nvidia.com/gpu.present': 'true',
    'nvidia.com/gpu.product': 'Tesla-T4-SHARED',
    'nvidia.com/gpu.count': '1',
    'nvidia.com/gpu.memory': '15360',
    'nvidia.com/gpu.replicas': '4',
    'nvidia.com/gpu.sharing-strategy': 'time-slicing',
    'nvidia.com/mig.capable': 'false',
    'nvidia.com/device-plugin.config': 'ts-4',
    'gpuops.dev/pool': 'inference',
}, allocatable={'nvidia.com/gpu': '4'}, taints=[GPU_TAINT])

L40S = node('l40s-0', labels={
    'nvidia.com/gpu.present': 'true',
    'nvidia.com/gpu.product': 'NVIDIA-L40S',
    'nvidia.com/gpu.count': '4',
    'nvidia.com/gpu.memory': '46068',
    'nvidia.com/gpu.replicas': '10',
    'nvidia.com/gpu.sharing-strategy': 'mps',
    'nvidia.com/mig.capable': 'false',
    'nvidia.com/mps.capable': 'true',
    'nvidia.com/device-plugin.config': 'mps-10',
}, allocatable={'nvidia.com/gpu.shared': '40'}, ready=False)

PLAIN = node('plain-0', allocatable={'nvidia.com/gpu': '2'})

CPU = node('cpu-0', labels={'gpuops.dev/pool': 'general'})

NODES = [T4, CPU, A100, L40S, H100, PLAIN]


def pod(name, node_name, namespace='team-a', phase='Running', containers=None, init=None, owner=None):
    obj = {
        'apiVersion': 'v1',
        'kind': 'Pod',
        'metadata': {'name': name, 'namespace': namespace, 'uid': 'uid-' + name,
                     'labels': {'app': name.rsplit('-', 1)[0]}},
        'spec': {
            'containers': containers or [{'name': 'main', 'image': 'example/app:1'}],
            'restartPolicy': 'Never',
            'schedulerName': 'default-scheduler',
            'tolerations': [GPU_TOLERATION],
        },
        'status': {'phase': phase},
    }
    if node_name:
        obj['spec']['nodeName'] = node_name
    if init:
        obj['spec']['initContainers'] = init
    if owner:
        obj['metadata']['ownerReferences'] = [{'apiVersion': 'apps/v1', 'kind': owner, 'name': 'owner',
                                               'uid': 'uid-owner', 'controller': True}]
    return obj


def ctr(name='main', limits=None, requests=None, restart_policy=None):
    resources = {}
    if limits:
        resources['limits'] = dict(limits)
    if requests:
        resources['requests'] = dict(requests)
    obj = {'name': name, 'image': 'nvidia/cuda:12.4.1-base-ubi9', 'resources': resources}
    if restart_policy:
        obj['restartPolicy'] = restart_policy
    return obj


GPU = 'nvidia.com/gpu'
MIG_1G = 'nvidia.com/mig-1g.10gb'
MIG_3G = 'nvidia.com/mig-3g.40gb'

PODS = [
    # a100-0: limits-only (request defaults to the limit), 2 + 1 from a Job pod with cpu too
    pod('train-0', 'a100-0', containers=[ctr(limits={GPU: '2', 'cpu': '4'})], owner='ReplicaSet'),
    pod('train-1', 'a100-0', namespace='team-b', phase='Pending',
        containers=[ctr(limits={GPU: '1'}, requests={GPU: '1', 'memory': '8Gi'})], owner='Job'),
    # a DaemonSet pod requesting a GPU counts in `requested`, not in `gpu_pods`
    pod('probe-x7k2p', 'a100-0', namespace='gpu-operator', containers=[ctr(limits={GPU: '1'})],
        owner='DaemonSet'),
    # terminal pods hold nothing
    pod('done-0', 'a100-0', phase='Succeeded', containers=[ctr(limits={GPU: '4'})]),
    pod('crashed-0', 'a100-0', phase='Failed', containers=[ctr(limits={GPU: '4'})]),
    # a pod without GPU
    pod('web-0', 'a100-0', containers=[ctr(requests={'cpu': '1'})], owner='ReplicaSet'),
    # h100-0 mixed: init container peaks at 3 mig-1g, containers use 1 mig-1g + 1 mig-3g
    pod('mixed-0', 'h100-0', init=[ctr('fetch', limits={MIG_1G: '3'})],
        containers=[ctr(limits={MIG_1G: '1'}), ctr('side', limits={MIG_3G: '1'})]),
    # t4-0: two shared replicas
    pod('infer-0', 't4-0', namespace='serving', containers=[ctr(limits={GPU: '1'})], owner='ReplicaSet'),
    pod('infer-1', 't4-0', namespace='serving', containers=[ctr(limits={GPU: '1'})], owner='ReplicaSet'),
    # l40s-0: MPS renamed resource
    pod('mps-0', 'l40s-0', namespace='serving', containers=[ctr(limits={'nvidia.com/gpu.shared': '3'})]),
    # unscheduled pod: on no node
    pod('waiting-0', None, phase='Pending', containers=[ctr(limits={GPU: '8'})]),
    # a GPU pod on the CPU node (impossible in practice, ignored because the node is not a GPU node)
    pod('odd-0', 'cpu-0', containers=[ctr(limits={GPU: '1'})]),
]


# ------------------------------------------------------------------ a fake CoreV1Api

class FakeResponse(object):
    """What CoreV1Api returns with _preload_content=False: an object with raw ``data``."""

    def __init__(self, obj):
        self.data = json.dumps(obj).encode('utf-8')


class FakeApiError(Exception):
    """Shaped like kubernetes.client.ApiException."""

    def __init__(self, status, reason, message=None):
        super(FakeApiError, self).__init__('(%s) Reason: %s' % (status, reason))
        self.status = status
        self.reason = reason
        self.body = json.dumps({'kind': 'Status', 'message': message}) if message else None


def _field(obj, path):
    for part in path.split('.'):
        obj = (obj or {}).get(part)
    return obj or ''


def _matches_fields(obj, selector):
    for term in filter(None, (selector or '').split(',')):
        if '!=' in term:
            path, value = term.split('!=', 1)
            if _field(obj, path) == value:
                return False
        else:
            path, value = term.split('=', 1)
            if _field(obj, path) != value:
                return False
    return True


def _matches_labels(obj, selector):
    labels = (obj.get('metadata') or {}).get('labels') or {}
    for term in filter(None, (selector or '').split(',')):
        if '=' in term:
            key, value = term.split('=', 1)
            if labels.get(key) != value:
                return False
        elif term not in labels:
            return False
    return True


class FakeCore(object):
    """list_node / list_pod_for_all_namespaces over in-memory objects, with label and field
    selectors, limit/continue paging, request recording and injected failures. Any other API
    method (read_node, ...) does not exist, so a per-node GET fails the test."""

    def __init__(self, nodes, pods, fail=None):
        self.nodes = nodes
        self.pods = pods
        self.fail = fail or {}     # {(kind, request number for that kind): exception}
        self.calls = []

    def _list(self, kind, items, kwargs):
        self.calls.append((kind, dict(kwargs)))
        number = len([c for c in self.calls if c[0] == kind])
        if (kind, number) in self.fail:
            raise self.fail[(kind, number)]
        assert kwargs.pop('_preload_content') is False
        matched = [copy.deepcopy(i) for i in items if _matches_labels(i, kwargs.get('label_selector'))
                   and _matches_fields(i, kwargs.get('field_selector'))]
        start = int(kwargs.get('_continue') or 0)
        limit = kwargs.get('limit') or len(matched) or 1
        page = matched[start:start + limit]
        meta = {'resourceVersion': '4242'}
        if start + limit < len(matched):
            meta['continue'] = str(start + limit)
        return FakeResponse({'kind': kind, 'apiVersion': 'v1', 'metadata': meta, 'items': page})

    def list_node(self, **kwargs):
        return self._list('NodeList', self.nodes, kwargs)

    def list_pod_for_all_namespaces(self, **kwargs):
        return self._list('PodList', self.pods, kwargs)


class FakeDra(object):
    """CustomObjectsApi.list_cluster_custom_object over ResourceSlices and ResourceClaims of resource.k8s.io/v1
    (field selectors and paging as FakeCore); ``slices=None``: the API is not served (404); ``fail`` as FakeCore's,
    keyed by plural."""

    def __init__(self, slices=None, claims=None, fail=None):
        self.items = {'resourceslices': slices, 'resourceclaims': claims or []}
        self.fail = fail or {}
        self.calls = []

    def list_cluster_custom_object(self, group, version, plural, **kwargs):
        self.calls.append((plural, dict(kwargs)))
        number = len([c for c in self.calls if c[0] == plural])
        if (plural, number) in self.fail:
            raise self.fail[(plural, number)]
        assert (group, version) == ('resource.k8s.io', 'v1') and kwargs.pop('_preload_content') is False
        if self.items['resourceslices'] is None:
            raise FakeApiError(404, 'Not Found', 'the server could not find the requested resource')
        matched = [copy.deepcopy(i) for i in self.items[plural] if _matches_fields(i, kwargs.get('field_selector'))]
        start = int(kwargs.get('_continue') or 0)
        limit = kwargs.get('limit') or len(matched) or 1
        meta = {'continue': str(start + limit)} if start + limit < len(matched) else {}
        return FakeResponse({'kind': 'List', 'metadata': meta, 'items': matched[start:start + limit]})


NO_DRA = FakeDra()  # a cluster that does not serve resource.k8s.io/v1
