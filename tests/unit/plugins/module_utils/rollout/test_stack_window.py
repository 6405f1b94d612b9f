# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU operator v26.7 change window, pure part: where the cluster stands, the saved ClusterPolicy, the
refusals and the steps."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import base64
import json

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.rollout import stack_window as sw

POLICY = {'apiVersion': 'nvidia.com/v1', 'kind': 'ClusterPolicy',
          'metadata': {'name': 'gpu-cluster-policy', 'uid': 'u1', 'resourceVersion': '42', 'generation': 3,
                       'labels': {'team': 'platform'},
                       'annotations': {'note': 'keep', 'kubectl.kubernetes.io/last-applied-configuration': '{}'}},
          'spec': {'driver': {'enabled': False}, 'devicePlugin': {'config': {'name': 'dp', 'default': 'any'}}},
          'status': {'state': 'ready', 'namespace': 'nvidia-gpu-operator'}}
GPUCLUSTER = {'apiVersion': 'nvidia.com/v1alpha1', 'kind': 'GPUCluster', 'metadata': {'name': 'gpu-cluster'},
              'spec': {'draDriver': {}}}
READS = {'policies': [POLICY], 'gpuclusters': [], 'slices_served': True, 'saved': None, 'saved_error': None}


def reads(**changes):
    return dict(READS, **changes)


@pytest.mark.parametrize('policies, gpuclusters, stack', [
    ([POLICY], [], 'device-plugin'),
    ([], [GPUCLUSTER], 'dra'),
    ([POLICY], [GPUCLUSTER], 'both'),
    ([], [], 'none'),
    ([], [dict(GPUCLUSTER, metadata={'name': 'gpu-cluster', 'deletionTimestamp': 'x'})], 'none'),
])
def test_where_the_cluster_stands(policies, gpuclusters, stack):
    assert sw.cluster_stack(policies, gpuclusters) == stack


def test_the_saved_copy_is_a_secret_that_restores_it_exactly():
    secret = sw.saved_secret(POLICY, 'gpu-operator')
    assert secret['kind'] == 'Secret' and secret['metadata'] == {
        'name': sw.SAVED_NAME, 'namespace': 'gpu-operator', 'labels': {'app.kubernetes.io/managed-by': 'gpuops.gpu'}}
    assert 'gpu-cluster-policy' not in json.dumps(secret)  # encoded, as Secret data is
    saved, error = sw.read_saved(secret)
    assert error is None
    assert saved == {'apiVersion': 'nvidia.com/v1', 'kind': 'ClusterPolicy',
                     'metadata': {'name': 'gpu-cluster-policy', 'labels': {'team': 'platform'},
                                  'annotations': {'note': 'keep'}},
                     'spec': POLICY['spec']}


def _encoded(text):
    return base64.b64encode(text.encode('utf-8')).decode('ascii')


@pytest.mark.parametrize('data, words', [
    ({sw.SAVED_KEY: _encoded('{not json')}, 'has no readable clusterpolicy.json'),
    ({sw.SAVED_KEY: '%%% not base64'}, 'has no readable clusterpolicy.json'),
    ({sw.SAVED_KEY: _encoded(json.dumps({'kind': 'ConfigMap', 'metadata': {'name': 'x'}}))},
     'does not hold a ClusterPolicy'),
])
def test_a_damaged_saved_copy_is_named(data, words):
    saved, error = sw.read_saved({'data': data})
    assert saved is None and words in error
    assert sw.read_saved(None) == (None, None)


@pytest.mark.parametrize('driver, deploys', [
    ({}, True), ({'enabled': True}, True), ({'enabled': False}, False), ({'useNvidiaDriverCRD': True}, False)])
def test_a_cluster_policy_that_deploys_the_driver(driver, deploys):
    assert sw.deploys_driver({'spec': {'driver': driver}}) is deploys


def test_to_dra_every_refusal_at_once():
    errors = sw.window_errors('dra', reads(gpuclusters=None, slices_served=False, policies=[
        dict(POLICY, spec={}), dict(POLICY, metadata={'name': 'second'})]), {'kind': 'GPUCluster', 'metadata': {}})
    assert len(errors) == 5, errors
    for words in ('serves no GPUCluster (nvidia.com/v1alpha1)', 'ClusterPolicies gpu-cluster-policy, second',
                  'does not serve resource.k8s.io/v1', 'ClusterPolicy gpu-cluster-policy deploys the GPU driver',
                  'gpucluster must be the GPUCluster to create'):
        assert any(words in e for e in errors), words


def test_to_dra_ready():
    assert sw.window_errors('dra', READS, GPUCLUSTER) == []


def test_back_needs_a_cluster_policy_or_its_copy():
    assert 'nothing to restore' in sw.window_errors('device-plugin', reads(policies=[]), None)[0]
    assert sw.window_errors('device-plugin', reads(policies=[], saved_error='damaged'), None) == ['damaged']
    assert sw.window_errors('device-plugin', reads(policies=[], saved=POLICY), None) == []
    assert sw.window_errors('device-plugin', READS, None) == []
    assert "'gpu' is not a GPU stack" in sw.window_errors('gpu', READS, None)[0]


def test_the_steps_in_order():
    to_dra = sw.steps('dra', 'cp', None, ['a', 'b'], [['a'], ['b']], 'ns')
    assert [s.split(' ')[0] for s in to_dra] == ['save', 'cordon', 'delete', 'create', 'wait']
    back = sw.steps('device-plugin', None, 'cp', ['a'], [['a']], 'ns')
    assert [s.split(' ')[0] for s in back] == ['cordon', 'delete', 'restore', 'wait']
    assert sw.steps('dra', None, None, [], [], 'ns') == [
        'create or update GPUCluster gpu-cluster (the operator labels the GPU nodes for the DRA driver)']
    assert sw.needs_switch('dra', [POLICY], []) and not sw.needs_switch('dra', [], [GPUCLUSTER])
