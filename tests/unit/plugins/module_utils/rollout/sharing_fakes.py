# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Sharing profiles, nodes and a fake connection for the sharing rollout, shared by the tests of
rollout/sharing*.py, rollout/inputs.py and the MIG-with-sharing tests."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.sharing_render import render_config
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.sharing_kind import RESTART_SELECTOR


LABEL = 'nvidia.com/device-plugin.config'


def ts(replicas, resource='nvidia.com/gpu'):
    return {'sharing': {'timeSlicing': {'resources': [{'name': resource, 'replicas': replicas}]}}}


def mps(replicas, rename=False):
    block = {'resources': [{'name': 'nvidia.com/gpu', 'replicas': replicas}]}
    if rename:
        block['renameByDefault'] = True
    return {'sharing': {'mps': block}}


PROFILES = {'ts-4': ts(4), 'ts-10': ts(10), 'mps-10': mps(10, rename=True), 'unshared': {},
            'mig-ts-2': ts(2, 'nvidia.com/mig-1g.5gb'), 'mps-20': mps(20)}


def render_profiles(profiles):
    """ConfigMap data without validation (the kind must cope with profiles invalid for a node)."""
    return dict((name, render_config(config)) for name, config in profiles.items())


def node(name='t4-0', product='Tesla-T4', count=1, label=None, extra=None, ann=None, allocatable=None,
         capacity=None, replicas='1', strategy='none'):
    labels = {'nvidia.com/gpu.product': product, 'nvidia.com/gpu.count': str(count),
              'nvidia.com/gpu.replicas': replicas, 'nvidia.com/gpu.sharing-strategy': strategy}
    if label is not None:
        labels[LABEL] = label
    labels.update(extra or {})
    alloc = allocatable if allocatable is not None else {'nvidia.com/gpu': str(count)}
    return {'metadata': {'name': name, 'labels': labels, 'annotations': ann or {}},
            'status': {'allocatable': alloc, 'capacity': capacity if capacity is not None else alloc}, 'spec': {}}


NODES = dict((n['metadata']['name'], n) for n in [
    node('t4-0', extra={'pool': 'inference', 'nvidia.com/gpu.present': 'true'}),
    node('l40s-0', 'NVIDIA-L40S', 4, extra={'pool': 'inference', 'nvidia.com/gpu.present': 'true'}),
    node('a100-0', 'NVIDIA-A100-SXM4-40GB', 8, extra={'pool': 'training', 'nvidia.com/gpu.present': 'true'})])


class _Resp(object):
    def __init__(self, obj):
        self.data = json.dumps(obj).encode()


class FakeApiException(Exception):
    def __init__(self, status):
        super(FakeApiException, self).__init__(status)
        self.status = status


class FakeConn(object):
    """Enough of CoreV1Api/CustomObjectsApi for the validation path; any write fails the test."""

    def __init__(self, nodes, cluster_policy, config_map=None):
        self.nodes, self.cluster_policy, self.config_map = nodes, cluster_policy, config_map
        self.core, self.custom, self.policy = self, self, self

    def list_cluster_custom_object(self, *args, **kwargs):
        return {'items': [self.cluster_policy] if self.cluster_policy else []}

    def get_cluster_custom_object(self, *args, **kwargs):
        return self.cluster_policy

    def list_pod_for_all_namespaces(self, **kwargs):
        return _Resp({'items': []})

    def list_node(self, **kwargs):
        return _Resp({'items': list(self.nodes.values())})

    def read_namespaced_config_map(self, name, namespace, **kwargs):
        if self.config_map is None:
            raise FakeApiException(404)
        return _Resp({'data': self.config_map})

    def get_namespaced_custom_object(self, *args, **kwargs):  # the rollout lock's Lease: there is none
        raise FakeApiException(404)

    def __getattr__(self, name):
        raise AssertionError('unexpected API call %s' % name)


def policy(name='dp', default='', strategy='single', enabled=True):
    return {'metadata': {'name': 'gpu-cluster-policy'}, 'spec': {
        'mig': {'strategy': strategy}, 'devicePlugin': {'enabled': enabled, 'config': {'name': name, 'default': default}}}}


PARAMS = {'operator_namespace': 'gpu-operator', 'cluster_policy': None, 'config_map': None, 'profiles': None,
          'default_profile': None, 'unshared_profile': None, 'mig_strategy': None, 'mig_catalog_overrides': None,
          'restart_pod_selector': RESTART_SELECTOR, 'max_unavailable': 1, 'drain': True, 'force': False,
          'drain_timeout': 300, 'state_timeout': 300, 'verify': True, 'verify_timeout': 180, 'poll_interval': 0.1}
