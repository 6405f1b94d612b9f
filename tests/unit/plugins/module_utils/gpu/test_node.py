# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import node as gpu_node
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.gpu_cluster_data import (
    A100, CPU, GPU, H100, L40S, MIG_1G, MIG_3G, NODES, PLAIN, PODS, T4, ctr, pod,
)

SHARED = 'nvidia.com/gpu.shared'


# ------------------------------------------------------------------ pod requests

def test_limits_only_request_defaults_to_limit():
    assert gpu_node.pod_gpu_requests(pod('p', 'n', containers=[ctr(limits={GPU: '2', 'cpu': '4'})])) == {GPU: 2}


def test_request_wins_over_limit_and_non_gpu_resources_are_ignored():
    p = pod('p', 'n', containers=[ctr(limits={GPU: '2'}, requests={GPU: '1', 'memory': '8Gi'}),
                                  ctr('cpu', requests={'cpu': '500m'})])
    assert gpu_node.pod_gpu_requests(p) == {GPU: 1}


def test_containers_add_up_and_json_ints_are_accepted():
    p = pod('p', 'n', containers=[ctr('a', limits={MIG_1G: 1}), ctr('b', limits={MIG_1G: '2', MIG_3G: '1'})])
    assert gpu_node.pod_gpu_requests(p) == {MIG_1G: 3, MIG_3G: 1}


def test_init_containers_count_by_their_peak():
    p = pod('p', 'n', init=[ctr('i1', limits={GPU: '3'}), ctr('i2', limits={GPU: '1'})],
            containers=[ctr(limits={GPU: '2'})])
    assert gpu_node.pod_gpu_requests(p) == {GPU: 3}
    p = pod('p', 'n', init=[ctr('i1', limits={GPU: '1'})], containers=[ctr(limits={GPU: '2'})])
    assert gpu_node.pod_gpu_requests(p) == {GPU: 2}
    p = pod('p', 'n', init=[ctr('i1', limits={MIG_1G: '2'})], containers=[ctr(limits={GPU: '1'})])
    assert gpu_node.pod_gpu_requests(p) == {GPU: 1, MIG_1G: 2}


def test_sidecar_init_containers_add_to_the_app_containers():
    # sidecar (restartPolicy: Always) 1, then a regular init 2 that runs next to the sidecar: 3
    p = pod('p', 'n', init=[ctr('side', limits={GPU: '1'}, restart_policy='Always'),
                            ctr('prep', limits={GPU: '2'})],
            containers=[ctr(limits={GPU: '1'})])
    assert gpu_node.pod_gpu_requests(p) == {GPU: 3}
    # a regular init before the sidecar does not see it; app 2 + sidecar 1 = 3 wins
    p = pod('p', 'n', init=[ctr('prep', limits={GPU: '1'}),
                            ctr('side', limits={GPU: '1'}, restart_policy='Always')],
            containers=[ctr(limits={GPU: '2'})])
    assert gpu_node.pod_gpu_requests(p) == {GPU: 3}


def test_zero_and_garbage_quantities():
    assert gpu_node.pod_gpu_requests(pod('p', 'n', containers=[ctr(limits={GPU: '0'})])) == {}
    assert gpu_node.pod_gpu_requests(pod('p', 'n', containers=[ctr(limits={GPU: '1k'})])) == {}
    assert gpu_node.pod_gpu_requests({'metadata': {'name': 'x'}}) == {}


def test_gpu_pods_are_active_non_daemonset_gpu_pods():
    names = sorted(p['metadata']['name'] for p in gpu_node.gpu_pods(PODS))
    assert names == ['infer-0', 'infer-1', 'mixed-0', 'mps-0', 'odd-0', 'train-0', 'train-1', 'waiting-0']


# ------------------------------------------------------------------ labels

@pytest.mark.parametrize('label, base', [
    ('NVIDIA-A100-SXM4-40GB-MIG-1g.5gb', 'NVIDIA-A100-SXM4-40GB'),
    ('NVIDIA-A100-SXM4-40GB-MIG-1g.5gb-SHARED', 'NVIDIA-A100-SXM4-40GB'),
    ('Tesla-T4-SHARED', 'Tesla-T4'),
    ('NVIDIA-A100-SXM4-40GB-MIG-INVALID', 'NVIDIA-A100-SXM4-40GB'),
    ('NVIDIA-L40S', 'NVIDIA-L40S'),
    (None, None),
])
def test_base_product(label, base):
    assert gpu_node.base_product(label) == base


@pytest.mark.parametrize('labels, devices', [
    ({'nvidia.com/gpu.product': 'NVIDIA-A100-SXM4-40GB-MIG-1g.5gb', 'nvidia.com/gpu.count': '56'}, {'1g.5gb': 56}),
    ({'nvidia.com/gpu.product': 'NVIDIA-A100-SXM4-40GB-MIG-2g.10gb-SHARED', 'nvidia.com/gpu.count': '24'},
     {'2g.10gb': 24}),
    ({'nvidia.com/gpu.product': 'NVIDIA-A100-SXM4-40GB-MIG-INVALID', 'nvidia.com/gpu.count': '0'}, {}),
    ({'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3', 'nvidia.com/gpu.count': '8',
      'nvidia.com/mig-1g.10gb.count': '14', 'nvidia.com/mig-1g.10gb.memory': '9856',
      'nvidia.com/mig-1g.10gb+me.count': '0', 'nvidia.com/mig-1g.10gb.me.count': '1',
      'nvidia.com/mig.capable': 'true'}, {'1g.10gb': 14, '1g.10gb.me': 1}),
    ({'nvidia.com/gpu.product': 'Tesla-T4', 'nvidia.com/gpu.count': '1'}, {}),
    ({}, {}),
])
def test_mig_devices(labels, devices):
    assert gpu_node.mig_devices(labels) == devices


def test_is_gpu_node():
    assert [gpu_node.is_gpu_node(n) for n in NODES] == [True, False, True, True, True, True]
    assert not gpu_node.is_gpu_node({'metadata': {'name': 'bare'}})


# ------------------------------------------------------------------ one node

def test_node_gpu_info_mig_single_with_pods():
    info = gpu_node.node_gpu_info(A100, PODS)
    assert info == {
        'name': 'a100-0',
        'gpu_node': True,
        'product': 'NVIDIA-A100-SXM4-40GB',
        'product_label': 'NVIDIA-A100-SXM4-40GB-MIG-1g.5gb',
        'count': 56,
        'memory_mib': 4864,
        'mig_capable': True,
        'mig_strategy': 'single',
        'mig_config': 'all-1g.5gb',
        'mig_state': 'success',
        'mig_devices': {'1g.5gb': 56},
        'sharing_strategy': 'none',
        'replicas': 1,
        'device_plugin_config': None,
        'driver_version': None,   # no GFD driver labels on this node
        'cuda_version': None,
        'deploy': {'device-plugin': 'true', 'mig-manager': 'true'},
        'paused_for_mig_change': [],
        'capacity': {GPU: 56},
        'allocatable': {GPU: 56},
        # train-0 2 (limits only) + train-1 1 (Pending but bound) + DaemonSet probe 1;
        # Succeeded/Failed pods hold nothing
        'requested': {GPU: 4},
        'free': {GPU: 52},
        'gpu_pods': ['team-a/train-0', 'team-b/train-1'],
        'unschedulable': False,
        'ready': True,
        'taints': [],
    }


def test_node_gpu_info_mig_mixed_pending_cordoned():
    info = gpu_node.node_gpu_info(H100, PODS)
    assert info['product'] == 'NVIDIA-H100-80GB-HBM3'
    assert info['count'] == 8
    assert info['mig_strategy'] == 'mixed'
    assert info['mig_state'] == 'pending'
    assert info['mig_devices'] == {'1g.10gb': 14, '3g.40gb': 2}
    assert info['allocatable'] == {GPU: 4, MIG_1G: 14, MIG_3G: 2}
    assert info['requested'] == {MIG_1G: 3, MIG_3G: 1}   # init peak 3 beats the app's 1
    assert info['free'] == {GPU: 4, MIG_1G: 11, MIG_3G: 1}
    assert info['gpu_pods'] == ['team-a/mixed-0']
    assert info['paused_for_mig_change'] == ['device-plugin', 'gpu-feature-discovery']
    assert info['unschedulable'] is True
    assert [t['key'] for t in info['taints']] == ['nvidia.com/gpu', 'node.kubernetes.io/unschedulable']


def test_node_gpu_info_time_slicing_and_mps():
    t4 = gpu_node.node_gpu_info(T4, PODS)
    assert (t4['product'], t4['sharing_strategy'], t4['replicas'], t4['device_plugin_config']) == \
        ('Tesla-T4', 'time-slicing', 4, 'ts-4')
    assert (t4['allocatable'], t4['requested'], t4['free']) == ({GPU: 4}, {GPU: 2}, {GPU: 2})
    assert t4['gpu_pods'] == ['serving/infer-0', 'serving/infer-1']
    assert t4['mig_capable'] is False and t4['mig_strategy'] is None and t4['mig_devices'] == {}
    l40s = gpu_node.node_gpu_info(L40S, PODS)
    assert (l40s['product'], l40s['sharing_strategy'], l40s['replicas']) == ('NVIDIA-L40S', 'mps', 10)
    assert (l40s['allocatable'], l40s['requested'], l40s['free']) == ({SHARED: 40}, {SHARED: 3}, {SHARED: 37})
    assert l40s['ready'] is False


def test_node_gpu_info_unlabelled_and_without_pods():
    info = gpu_node.node_gpu_info(PLAIN)
    assert (info['product'], info['count'], info['memory_mib'], info['sharing_strategy'], info['replicas']) == \
        (None, None, None, 'none', 1)
    assert (info['allocatable'], info['requested'], info['free'], info['gpu_pods']) == ({GPU: 2}, {}, {GPU: 2}, [])


def test_free_goes_negative_when_pods_hold_more_than_advertised():
    shrunk = copy.deepcopy(T4)
    shrunk['status']['allocatable'][GPU] = '1'
    assert gpu_node.node_gpu_info(shrunk, PODS)['free'] == {GPU: -1}


# ------------------------------------------------------------------ the fleet

def test_select_nodes():
    selected, not_found, not_gpu = gpu_node.select_nodes(NODES)
    assert [n['metadata']['name'] for n in selected] == ['t4-0', 'a100-0', 'l40s-0', 'h100-0', 'plain-0']
    assert (not_found, not_gpu) == ([], [])
    selected, not_found, not_gpu = gpu_node.select_nodes(NODES, names=['t4-0', 'cpu-0', 'nope'])
    assert ([n['metadata']['name'] for n in selected], not_found, not_gpu) == (['t4-0'], ['nope'], ['cpu-0'])
    selected, not_found, not_gpu = gpu_node.select_nodes(NODES, names=['cpu-0'], only_gpu_nodes=False)
    assert ([n['metadata']['name'] for n in selected], not_found, not_gpu) == (['cpu-0'], [], [])
    assert len(gpu_node.select_nodes(NODES, only_gpu_nodes=False)[0]) == 6


def test_pods_by_node_drops_unscheduled_pods():
    grouped = gpu_node.pods_by_node(PODS)
    assert sorted(grouped) == ['a100-0', 'cpu-0', 'h100-0', 'l40s-0', 't4-0']
    assert len(grouped['a100-0']) == 6


def test_fleet_info_and_summary():
    infos = gpu_node.fleet_info(gpu_node.select_nodes(NODES)[0], PODS)
    assert [i['name'] for i in infos] == ['a100-0', 'h100-0', 'l40s-0', 'plain-0', 't4-0']
    assert infos[0] == gpu_node.node_gpu_info(A100, PODS)
    assert gpu_node.fleet_summary(infos) == {
        'nodes': 5,
        'gpu_nodes': 5,
        'products': {'NVIDIA-A100-SXM4-40GB': 1, 'NVIDIA-H100-80GB-HBM3': 1, 'NVIDIA-L40S': 1,
                     'Tesla-T4': 1, 'unknown': 1},
        'capacity': {GPU: 66, MIG_1G: 14, MIG_3G: 2, SHARED: 40},
        'allocatable': {GPU: 66, MIG_1G: 14, MIG_3G: 2, SHARED: 40},
        'requested': {GPU: 6, MIG_1G: 3, MIG_3G: 1, SHARED: 3},
        'free': {GPU: 60, MIG_1G: 11, MIG_3G: 1, SHARED: 37},
        'gpu_pods': 6,
        'mig_strategies': {'single': 1, 'mixed': 1},
        'mig_states': {'success': 1, 'pending': 1},
        'sharing': {'none': 3, 'time-slicing': 1, 'mps': 1},
        'unschedulable': 1,
        'not_ready': 1,
    }


def test_fleet_without_pods_reports_unknown_not_zero():
    infos = gpu_node.fleet_info(gpu_node.select_nodes(NODES)[0], None)
    assert all(i['requested'] is None and i['free'] is None and i['gpu_pods'] is None for i in infos)
    summary = gpu_node.fleet_summary(infos)
    assert (summary['requested'], summary['free'], summary['gpu_pods']) == (None, None, None)
    assert summary['allocatable'][GPU] == 66


def test_fleet_with_non_gpu_nodes():
    infos = gpu_node.fleet_info(gpu_node.select_nodes(NODES, only_gpu_nodes=False)[0], PODS)
    cpu = [i for i in infos if i['name'] == 'cpu-0'][0]
    assert (cpu['gpu_node'], cpu['product'], cpu['allocatable']) == (False, None, {})
    assert cpu['requested'] == {GPU: 1}   # what is bound there is still reported
    summary = gpu_node.fleet_summary(infos)
    assert (summary['nodes'], summary['gpu_nodes']) == (6, 5)
    assert 'unknown' in summary['products'] and sum(summary['products'].values()) == 5
    assert summary['sharing'] == {'none': 3, 'time-slicing': 1, 'mps': 1}


def test_empty_fleet():
    assert gpu_node.fleet_info([], []) == []
    summary = gpu_node.fleet_summary([])
    assert (summary['nodes'], summary['allocatable'], summary['requested'], summary['gpu_pods']) == (0, {}, {}, 0)


def test_cpu_node_is_unchanged_by_reading():
    before = copy.deepcopy(CPU)
    gpu_node.node_gpu_info(CPU, PODS)
    assert CPU == before


# ------------------------------------------------------------------ vGPU nodes

VGPU_NODES = {
    'guest': {'metadata': {'name': 'guest', 'labels': {'nvidia.com/vgpu.present': 'true'}}},
    'guest2': {'metadata': {'name': 'guest2', 'labels': {'nvidia.com/vgpu.present': 'true'}}},
    'host': {'metadata': {'name': 'host', 'labels': {'nvidia.com/gpu.workload.config': 'vm-vgpu'}}},
    'not-vgpu': {'metadata': {'name': 'not-vgpu', 'labels': {'nvidia.com/vgpu.present': 'false'}}},
    'container': {'metadata': {'name': 'container', 'labels': {'nvidia.com/gpu.workload.config': 'container'}}},
    'passthrough': {'metadata': {'name': 'passthrough',
                                 'labels': {'nvidia.com/gpu.workload.config': 'vm-passthrough'}}},
    'bare': {'metadata': {'name': 'bare'}},
}


@pytest.mark.parametrize('name, expected', [
    ('guest', 'nvidia.com/vgpu.present=true'), ('host', 'nvidia.com/gpu.workload.config=vm-vgpu'),
    ('not-vgpu', None), ('container', None), ('passthrough', None), ('bare', None)])
def test_vgpu_label(name, expected):
    assert gpu_node.vgpu_label(VGPU_NODES[name]) == expected


def test_vgpu_errors_name_every_node_grouped_by_label():
    errors = gpu_node.vgpu_errors(VGPU_NODES, ['host', 'guest2', 'bare', 'guest', 'not-vgpu'], 'MIG')
    assert len(errors) == 2
    host, guest = errors  # sorted by label
    assert guest.startswith('MIG refused on vGPU node(s) guest, guest2 (label nvidia.com/vgpu.present=true)')
    assert host.startswith('MIG refused on vGPU node(s) host (label nvidia.com/gpu.workload.config=vm-vgpu)')
    assert all('allow_vgpu_nodes: true' in e for e in errors)


def test_vgpu_errors_none_without_vgpu_nodes():
    assert gpu_node.vgpu_errors(VGPU_NODES, ['not-vgpu', 'container', 'passthrough', 'bare'], 'GPU sharing') == []
    assert gpu_node.vgpu_errors(VGPU_NODES, [], 'MIG') == []
