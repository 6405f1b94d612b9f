# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Driver upgrade of one NVIDIADriver pool (pure): which pods are the pool's, the selection errors, the plan and
the patch split between the ClusterPolicy and the NVIDIADriver."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy

from ansible_collections.gpuops.gpu.plugins.module_utils.plans import driver_pools as dp
from ansible_collections.gpuops.gpu.plugins.module_utils.plans import driver_upgrade as du

from .test_driver_upgrade import POLICY, gpu_pod, node

OLD, NEW = 'nvcr.io/nvidia/driver:570.172.08-rhcos4.18', 'nvcr.io/nvidia/driver:580.95.05-rhcos4.18'


def daemonset(name, pool):
    return {'metadata': {'name': name, 'labels': {'app.kubernetes.io/component': 'nvidia-driver'},
                         'ownerReferences': [{'kind': 'NVIDIADriver', 'name': pool}]}}


def pool_driver_pod(node_name, ds, image=OLD):
    return {'metadata': {'name': '%s-%s' % (ds, node_name), 'namespace': 'gpu-operator',
                         'labels': {'app': ds, 'app.kubernetes.io/component': 'nvidia-driver'},
                         'ownerReferences': [{'kind': 'DaemonSet', 'name': ds}]},
            'spec': {'nodeName': node_name, 'containers': [{'name': 'nvidia-driver-ctr', 'image': image}]},
            'status': {'phase': 'Running', 'containerStatuses': [{'name': 'nvidia-driver-ctr', 'ready': True}]}}


def nvidia_driver(name, version='570.172.08'):
    return {'metadata': {'name': name}, 'spec': {'driverType': 'gpu', 'repository': 'nvcr.io/nvidia', 'image': 'driver',
                                                 'version': version, 'nodeSelector': {'gpuops.dev/pool': name}}}


def crd_policy():
    policy = copy.deepcopy(POLICY)
    policy['spec']['driver']['useNvidiaDriverCRD'] = True
    policy['spec']['driver']['version'] = '550.0.0'  # not what the pools run: the pools' own versions count
    return policy


def pools_request(version='580.95.05', policy=None, **target):
    """Two pools: inference (inf-0, inf-1) and training (train-0, train-1), a GPU pod on inf-0."""
    nodes = [node(n) for n in ('inf-0', 'inf-1', 'train-0', 'train-1')]
    pods = [pool_driver_pod('inf-0', 'ds-inf'), pool_driver_pod('inf-1', 'ds-inf'),
            pool_driver_pod('train-0', 'ds-train'), pool_driver_pod('train-1', 'ds-train'), gpu_pod('serve', 'inf-0')]
    return {'cluster_policy': crd_policy(), 'nodes': nodes, 'pods': pods, 'pdbs': [],
            'nvidia_drivers': [nvidia_driver('inference'), nvidia_driver('training')],
            'daemonsets': [daemonset('ds-inf', 'inference'), daemonset('ds-train', 'training')],
            'target': dict({'version': version}, **target), 'policy': policy if policy is not None else {}}


def test_the_pool_pods_are_those_of_the_daemonsets_its_nvidia_driver_owns():
    request = pools_request()
    names = [p['metadata']['name'] for p in dp.pool_pods(request['pods'], request['daemonsets'], 'training')]
    assert names == ['ds-train-train-0', 'ds-train-train-1', 'serve']  # the workloads stay: their evictions count
    assert dp.pool_pods(request['pods'], request['daemonsets'], 'nope') == [request['pods'][-1]]


def test_one_pool_is_planned_and_its_target_goes_to_its_nvidia_driver():
    result = dp.plan(pools_request(policy={'max_unavailable': 1}), 'inference')
    assert result['errors'] == [] and result['changes']
    assert result['upgrade'] == ['inf-0', 'inf-1'] and result['target_image'] == [NEW]
    assert [(n['node'], n['from'], n['to']) for n in result['nodes']] == [
        ('inf-0', '570.172.08', '580.95.05'), ('inf-1', '570.172.08', '580.95.05')]
    assert result['driver_patch'] == {'version': '580.95.05'}  # repository and image are the NVIDIADriver's already
    assert result['patch'] == {'driver': {'upgradePolicy': {'maxUnavailable': 1}}}
    assert result['batches'][0]['nodes'][0]['pods_to_evict'] == ['team-a/serve']
    assert dp.plan_lines(result)[-2:] == ['ClusterPolicy: set driver.upgradePolicy.maxUnavailable=1',
                                          'NVIDIADriver inference: set spec.version=580.95.05']
    # the pool at its target already: nothing to do, nothing written
    request = pools_request()
    request['nvidia_drivers'][0]['spec']['version'] = '580.95.05'
    for pod in request['pods'][:2]:
        pod['spec']['containers'][0]['image'] = NEW
    done = dp.plan(request, 'inference')
    assert done['errors'] == [] and not done['changes'] and done['driver_patch'] == {} and done['upgrade'] == []


def test_the_operator_counts_max_unavailable_on_every_pool():
    # 4 managed nodes: 25% is 1 node; max_parallel_upgrades 3 is fine for 4 nodes though the pool has 2
    result = dp.plan(pools_request(policy={'max_parallel_upgrades': 3}), 'training')
    assert result['errors'] == [] and result['batch_size'] == 1
    result = dp.plan(pools_request(policy={'max_parallel_upgrades': 3, 'max_unavailable': '100%'}), 'training')
    assert result['batch_size'] == 3 and [len(b['nodes']) for b in result['batches']] == [2]
    result = dp.plan(pools_request(policy={'max_parallel_upgrades': 5}), 'training')
    assert any('max_parallel_upgrades' in e or 'maxParallelUpgrades' in e for e in result['errors']), result['errors']


def test_the_pool_must_be_named_and_exist_and_only_with_nvidia_drivers():
    errors = dp.plan(pools_request(), None)['errors']
    assert errors == ['ClusterPolicy gpu-cluster-policy has driver.useNvidiaDriverCRD: true, so the drivers are '
                      'NVIDIADriver objects, one per pool: give driver_pool, the NVIDIADriver to upgrade (one pool at '
                      'a time): inference, training']
    assert dp.plan(pools_request(), 'gpu')['errors'] == [
        'driver_pool gpu: no NVIDIADriver of that name; the cluster has inference, training']
    plain = dict(pools_request(), cluster_policy=copy.deepcopy(POLICY))
    assert 'does not deploy the driver from NVIDIADriver objects' in dp.plan(plain, 'inference')['errors'][0]
    assert dp.plan(dict(pools_request(), cluster_policy=None), 'inference')['errors'] == [
        'no ClusterPolicy found: install the GPU operator and its ClusterPolicy first']
    # a bad target is still refused with the pool's plan
    assert any('is not an image tag' in e for e in dp.plan(pools_request(version='5 8 0'), 'inference')['errors'])


def test_the_patch_is_split_between_the_cluster_policy_and_the_nvidia_driver():
    assert dp.split_patch({'driver': {'version': 'v', 'image': 'i', 'upgradePolicy': {'autoUpgrade': True}}}) == (
        {'driver': {'upgradePolicy': {'autoUpgrade': True}}}, {'version': 'v', 'image': 'i'})
    assert dp.split_patch({}) == ({}, {})
    assert du.is_driver_pod(pool_driver_pod('a', 'ds')) and not du.is_driver_pod(gpu_pod('a', 'n'))
