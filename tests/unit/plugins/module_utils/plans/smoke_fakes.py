# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A fake cluster for the smoke test runners (Jobs, pods, logs) and the fleet they test, shared by the tests of
plans/smoke*.py, ops/smoke.py and the gpu_smoke_test module."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json


def node(name, product, alloc, free=None, capacity=None, unschedulable=False, ready=True):
    return {'name': name, 'product_label': product, 'allocatable': dict(alloc),
            'capacity': dict(capacity if capacity is not None else alloc),
            'free': dict(free if free is not None else alloc), 'unschedulable': unschedulable, 'ready': ready}


FLEET = [
    node('a100-0', 'NVIDIA-A100-SXM4-40GB', {'nvidia.com/mig-1g.5gb': 14, 'nvidia.com/mig-3g.20gb': 4}),
    node('a100-1', 'NVIDIA-A100-SXM4-40GB-MIG-1g.5gb', {'nvidia.com/gpu': 56}, free={'nvidia.com/gpu': 50}),
    node('h100-0', 'NVIDIA-H100-80GB-HBM3', {'nvidia.com/gpu': 8}),
    node('h100-1', 'NVIDIA-H100-80GB-HBM3', {'nvidia.com/gpu': 8}, free={'nvidia.com/gpu': 0}),
    node('t4-0', 'Tesla-T4-SHARED', {'nvidia.com/gpu': 4}, unschedulable=True),
    node('l40s-0', 'NVIDIA-L40S', {'nvidia.com/gpu': 4}, free={'nvidia.com/gpu': 0}),
    node('l4-0', 'NVIDIA-L4', {'nvidia.com/gpu': 0}, capacity={'nvidia.com/gpu': 1}),
    node('rtx-0', 'NVIDIA-RTX-A6000', {'nvidia.com/gpu.shared': 8}, ready=False),
]


class FakeResponse(object):
    def __init__(self, data):
        self.data = json.dumps(data).encode() if not isinstance(data, str) else data.encode()


class FakeApiError(Exception):
    def __init__(self, status, message='boom'):
        super(FakeApiError, self).__init__(message)
        self.status = status
        self.reason = 'Error'
        self.body = json.dumps({'message': message})


class FakeCluster(object):
    """Jobs complete after `polls` list calls; pods carry the job-name label; logs optional."""

    def __init__(self, outcome='Complete', polls=1, logs=True, fail_create=(), pod_phase='Succeeded'):
        self.jobs = {}
        self.outcome = outcome
        self.polls = polls
        self.logs = logs
        self.fail_create = fail_create
        self.pod_phase = pod_phase
        self.deleted = []
        self.lists = 0

    # batch
    def create_namespaced_job(self, namespace, body, _preload_content=False):
        if body['metadata']['name'] in self.fail_create:
            raise FakeApiError(403, 'exceeded quota')
        self.jobs[body['metadata']['name']] = body

    def list_namespaced_job(self, namespace, label_selector=None, _preload_content=False):
        self.lists += 1
        items = []
        for name, body in self.jobs.items():
            conditions = [{'type': self.outcome, 'status': 'True', 'reason': 'x'}] if self.lists > self.polls else []
            items.append({'metadata': {'name': name}, 'status': {'conditions': conditions}})
        return FakeResponse({'items': items})

    def delete_namespaced_job(self, name, namespace, **kwargs):
        self.deleted.append(name)
        self.jobs.pop(name, None)

    # core
    def list_namespaced_pod(self, namespace, label_selector=None, _preload_content=False):
        phase = self.pod_phase if self.lists > self.polls else 'Running'
        return FakeResponse({'items': [
            {'metadata': {'name': name + '-abcde', 'labels': {'batch.kubernetes.io/job-name': name},
                          'creationTimestamp': '2026-01-01T00:00:00Z'},
             'spec': {'nodeName': 'h100-0'}, 'status': {'phase': phase}} for name in self.jobs]})

    def read_namespaced_pod_log(self, name, namespace, tail_lines=None, _preload_content=False):
        if not self.logs:
            raise FakeApiError(502, 'no kubelet')
        return FakeResponse('[Vector addition of 50000 elements]\nTest PASSED\nDone\n')


def smoke_settings(**extra):
    out = {'image': 'nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0-ubuntu22.04', 'namespace': 'gpuops-smoke-test',
           'timeout': 300, 'stuck_timeout': 120, 'poll_interval': 2, 'resources': [], 'exclude_resources': []}
    out.update(extra)
    return out


def shared(name, resource='nvidia.com/gpu', alloc=4, free=None, sharing='time-slicing', replicas=4, **extra):
    out = {'name': name, 'product_label': 'Tesla-T4-SHARED', 'sharing_strategy': sharing, 'replicas': replicas,
           'allocatable': {resource: alloc}, 'capacity': {resource: alloc},
           'free': {resource: alloc if free is None else free}, 'unschedulable': False, 'ready': True}
    out.update(extra)
    return out


class FakeScheduler(object):
    """Binds created pods to their node while it has units left (``units`` per node), the rest Unschedulable;
    ``leak`` binds one pod too many per node."""

    def __init__(self, units, leak=False, fail_create=False):
        self.units = dict(units)
        self.leak = leak
        self.fail_create = fail_create
        self.pods = {}
        self.deleted = []
        self.deleted_bound = []

    def create_namespaced_pod(self, namespace, body, _preload_content=False):
        if self.fail_create:
            raise FakeApiError(403, 'forbidden: unable to validate against any security context constraint')
        node = body['spec']['affinity']['nodeAffinity']['requiredDuringSchedulingIgnoredDuringExecution'][
            'nodeSelectorTerms'][0]['matchFields'][0]['values'][0]
        used = sum(1 for p in self.pods.values() if p['spec'].get('nodeName') == node)
        pod = {'metadata': dict(body['metadata']), 'spec': {}, 'status': {'phase': 'Pending'}}
        if used < self.units.get(node, 0) + (1 if self.leak else 0):
            pod['spec']['nodeName'] = node
            pod['status']['phase'] = 'Running'
        else:
            pod['status']['conditions'] = [{'type': 'PodScheduled', 'status': 'False', 'reason': 'Unschedulable'}]
        self.pods[body['metadata']['name']] = pod

    def list_namespaced_pod(self, namespace, label_selector=None, _preload_content=False):
        key, value = label_selector.split('=')
        return FakeResponse({'items': [p for p in self.pods.values() if p['metadata']['labels'].get(key) == value]})

    def delete_namespaced_pod(self, name, namespace, **kwargs):
        self.deleted.append(name)
        self.deleted_bound.append(bool(self.pods.pop(name)['spec'].get('nodeName')))
