# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A mixed fleet in DRA terms, shared by the tests of gpu/dra_fleet.py, the fleet table and report, and ops/inventory.py.

ResourceSlices and ResourceClaims of resource.k8s.io/v1 shaped as NVIDIA's DRA driver publishes and the scheduler
allocates them (docs/facts.md, "Dynamic Resource Allocation"):

* ``dp-0``: the device plugin's node (nvidia.com/gpu: 8), no slice.
* ``dra-0``: DRA only, pool generation 2 with one whole A100 (``gpu-0``) and three static MIG devices of ``gpu-1``;
  an older generation-1 slice of the same pool (``gpu-7``) is stale.
* ``both-0``: nvidia.com/gpu: 2 and a slice with two GPUs.
* ``bare-0``: no GPU label, no GPU capacity, a slice with one H100: a GPU node through DRA alone.
* ``cpu-0``: nothing.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

A100 = 'NVIDIA A100-SXM4-40GB'
H100 = 'NVIDIA H100 80GB HBM3'
ATTRS = {'brand': {'string': 'Nvidia'}, 'architecture': {'string': 'Ampere'},
         'cudaComputeCapability': {'version': '8.0.0'}, 'driverVersion': {'version': '580.95.5'},
         'cudaDriverVersion': {'version': '13.0.0'}}


def gpu(minor, uuid, product=A100, memory='40Gi'):
    attributes = dict(ATTRS, type={'string': 'gpu'}, uuid={'string': uuid}, productName={'string': product})
    return {'name': 'gpu-%d' % minor, 'attributes': attributes, 'capacity': {'memory': {'value': memory}}}


def mig(parent_minor, parent_uuid, profile, profile_id, start, uuid, memory_mib):
    attributes = dict(ATTRS, type={'string': 'mig'}, uuid={'string': uuid}, parentUUID={'string': parent_uuid},
                      profile={'string': profile}, productName={'string': A100})
    name = 'gpu-%d-mig-%s-%d-%d' % (parent_minor, profile.replace('.', ''), profile_id, start)
    capacity = {'memory': {'value': str(memory_mib * 1048576)}, 'multiprocessors': {'value': '14'}}
    return {'name': name, 'attributes': attributes, 'capacity': capacity}


def rslice(node, devices, generation=1, driver='gpu.nvidia.com', name=None):
    return {'apiVersion': 'resource.k8s.io/v1', 'kind': 'ResourceSlice',
            'metadata': {'name': name or '%s-%s-%d' % (node, driver.split('.')[0], generation)},
            'spec': {'driver': driver, 'nodeName': node, 'devices': devices,
                     'pool': {'name': node, 'generation': generation, 'resourceSliceCount': 1}}}


SLICES = [
    rslice('dra-0', [gpu(0, 'GPU-a0'), mig(1, 'GPU-a1', '1g.5gb', 19, 0, 'MIG-1', 4864),
                     mig(1, 'GPU-a1', '1g.5gb', 19, 1, 'MIG-2', 4864),
                     mig(1, 'GPU-a1', '3g.20gb', 9, 4, 'MIG-3', 19968)], generation=2),
    rslice('dra-0', [gpu(7, 'GPU-old')], generation=1),
    rslice('both-0', [gpu(0, 'GPU-b0'), gpu(1, 'GPU-b1')]),
    rslice('bare-0', [gpu(0, 'GPU-h0', H100, '80Gi')], generation=5),
    rslice('dp-0', [{'name': 'nic-0'}], driver='net.example.com'),
]


def opaque(kind, sharing, requests=None, source='FromClaim', driver='gpu.nvidia.com'):
    config = {'source': source, 'opaque': {'driver': driver, 'parameters': {
        'apiVersion': 'resource.nvidia.com/v1beta1', 'kind': kind, 'sharing': sharing}}}
    if requests is not None:
        config['requests'] = requests
    return config


def claim(namespace, name, results, configs=(), pods=()):
    status = {'allocation': {'devices': {'results': [dict(driver=d, pool=p, device=v, request=r)
                                                     for d, p, v, r in results], 'config': list(configs)}},
              'reservedFor': [{'resource': 'pods', 'name': pod, 'uid': 'u-' + pod} for pod in pods]}
    return {'apiVersion': 'resource.k8s.io/v1', 'kind': 'ResourceClaim',
            'metadata': {'namespace': namespace, 'name': name}, 'spec': {'devices': {'requests': []}},
            'status': status}


TIME_SLICING = {'strategy': 'TimeSlicing', 'timeSlicingConfig': {'interval': 'Long'}}
MPS = {'strategy': 'MPS', 'mpsConfig': {'defaultActiveThreadPercentage': 50}}

CLAIMS = [
    # the claim's own config wins over the class's one for the same device
    claim('team-a', 'train', [('gpu.nvidia.com', 'dra-0', 'gpu-0', 'gpu')],
          [opaque('GpuConfig', TIME_SLICING, ['gpu']), opaque('GpuConfig', MPS, source='FromClass')], ['train-0']),
    # a GpuConfig without requests does not apply to a MIG device; the MigDeviceConfig does
    claim('team-b', 'mig', [('gpu.nvidia.com', 'dra-0', 'gpu-1-mig-1g5gb-19-0', 'mig')],
          [opaque('MigDeviceConfig', MPS, source='FromClass'), opaque('GpuConfig', TIME_SLICING),
           opaque('GpuConfig', TIME_SLICING, ['mig'], driver='other.example.com')], ['notebook-0', 'notebook-1']),
    claim('team-c', 'both', [('gpu.nvidia.com', 'both-0', 'gpu-1', 'gpu'),
                             ('net.example.com', 'dp-0', 'nic-0', 'nic')]),
    # allocated on a device no current slice lists
    claim('team-c', 'lost', [('gpu.nvidia.com', 'gone-0', 'gpu-3', 'gpu')]),
    {'metadata': {'namespace': 'team-d', 'name': 'pending'}, 'spec': {}, 'status': {}},
]


def node(name, capacity=None, labels=None):
    status = {'capacity': dict(capacity or {}, cpu='8'), 'allocatable': dict(capacity or {}, cpu='8'),
              'conditions': [{'type': 'Ready', 'status': 'True'}]}
    return {'metadata': {'name': name, 'labels': dict(labels or {}, **{'kubernetes.io/os': 'linux'})},
            'spec': {}, 'status': status}


GPU_LABELS = {'nvidia.com/gpu.present': 'true', 'nvidia.com/gpu.product': 'NVIDIA-A100-SXM4-40GB'}
NODES = [
    node('dp-0', {'nvidia.com/gpu': '8'}, GPU_LABELS),
    node('dra-0', None, GPU_LABELS),
    node('both-0', {'nvidia.com/gpu': '2'}, GPU_LABELS),
    node('bare-0'),
    node('cpu-0'),
]
