# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The inventory plugin's pure part: host and group names, host and group variables, connection checks."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import inventory_groups as ig
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import node as gpu_node
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.gpu_cluster_data import NODES, PODS

POOL = 'gpuops.dev/pool'


def infos(nodes=None, label_keys=(POOL,)):
    """What ops/inventory.py gpu_node_records returns for ``nodes`` (pure part)."""
    nodes = gpu_node.select_nodes(nodes or NODES)[0]
    labels = dict((n['metadata']['name'], n['metadata']['labels']) for n in nodes)
    out = gpu_node.fleet_info(nodes, PODS)
    for info in out:
        info['labels'] = dict((k, labels[info['name']][k]) for k in label_keys if k in labels[info['name']])
    return out


def cluster(name, nodes=None, server='https://api.%s.example.com:6443'):
    return {'name': name, 'server': server % name if '%s' in server else server,
            'settings': {'gpuops_context': name}, 'nodes': infos(nodes)}


# ------------------------------------------------------------------ names

@pytest.mark.parametrize('value, expected', [
    ('NVIDIA-H100-80GB-HBM3', 'nvidia_h100_80gb_hbm3'),
    ('all-1g.5gb', 'all_1g_5gb'),
    ('time-slicing', 'time_slicing'),
    ('Team A / GPU@prod!', 'team_a_gpu_prod'),
    ('--x--', 'x'),
    ('a__b', 'a__b'),
    ('', 'unknown'),
    ('./-', 'unknown'),
    ('Ünïcode-GPU', 'n_code_gpu'),
    (8, '8'),
])
def test_safe_name(value, expected):
    assert ig.safe_name(value) == expected


def test_group_names_never_start_with_a_digit_and_hold_only_safe_characters():
    for value in ('8g.80gb', '1', '-', 'A100 (SXM4)'):
        name = ig.group_name('mig_config', value)
        assert name.startswith('mig_config_') and all(c.isalnum() and c.islower() or c.isdigit() or c == '_'
                                                      for c in name), name


@pytest.mark.parametrize('server, expected', [
    ('https://api.prod.example.com:6443', 'api_prod_example_com_6443'),
    ('https://127.0.0.1:36443/', '127_0_0_1_36443'),
    ('HTTP://Lab:8080', 'lab_8080'),
    ('', 'unknown'),
    (None, 'unknown'),
])
def test_cluster_name_from_server(server, expected):
    assert ig.cluster_name_from_server(server) == expected


def test_host_names_are_node_names_with_one_cluster_and_prefixed_with_several():
    assert ig.node_host_name('prod', 'gpu-a100-0.example.com', False) == 'gpu-a100-0.example.com'
    assert ig.node_host_name('prod', 'gpu-a100-0.example.com', True) == 'prod_gpu-a100-0.example.com'


# ------------------------------------------------------------------ one cluster

def test_one_cluster_hosts_groups_and_variables():
    built = ig.build_inventory([cluster('prod')])
    assert sorted(built['hosts']) == ['a100-0', 'h100-0', 'l40s-0', 'plain-0', 't4-0']  # cpu-0 has no GPU
    groups = built['groups']
    assert groups['gpu_nodes'] == sorted(built['hosts'])
    assert groups['cluster_prod'] == groups['gpu_nodes']
    assert groups['product_nvidia_a100_sxm4_40gb'] == ['a100-0']  # the -MIG-1g.5gb suffix is not the product
    assert groups['product_tesla_t4'] == ['t4-0']  # nor is -SHARED
    assert groups['product_unknown'] == ['plain-0']
    assert groups['mig_config_all_1g_5gb'] == ['a100-0']
    assert groups['mig_config_all_balanced'] == ['h100-0']
    assert groups['mig_state_success'] == ['a100-0'] and groups['mig_state_pending'] == ['h100-0']
    assert groups['sharing_time_slicing'] == ['t4-0'] and groups['sharing_mps'] == ['l40s-0']
    assert groups['sharing_none'] == ['a100-0', 'h100-0', 'plain-0']
    assert groups['pool_training'] == ['a100-0', 'h100-0'] and groups['pool_inference'] == ['t4-0']
    assert 'pool_general' not in groups  # cpu-0 is not a GPU node
    assert groups['cordoned'] == ['h100-0']
    assert groups['not_ready'] == ['l40s-0'] and 'l40s-0' not in groups['ready']
    assert 'gpu_clusters' not in groups
    assert list(groups) == sorted(groups)


def test_node_host_variables():
    host = ig.build_inventory([cluster('prod')])['hosts']['a100-0']
    assert host['gpuops_cluster'] == 'prod' and host['gpuops_node_name'] == 'a100-0'
    assert host['gpuops_product'] == 'NVIDIA-A100-SXM4-40GB'
    assert host['gpuops_product_label'] == 'NVIDIA-A100-SXM4-40GB-MIG-1g.5gb'
    assert host['gpuops_gpu_count'] == 56
    assert (host['gpuops_mig_strategy'], host['gpuops_mig_config'], host['gpuops_mig_state']) == \
        ('single', 'all-1g.5gb', 'success')
    assert host['gpuops_allocatable'] == {'nvidia.com/gpu': 56}
    assert host['gpuops_requested'] == {'nvidia.com/gpu': 4}  # 2 + 1 + the DaemonSet pod's 1
    assert host['gpuops_free'] == {'nvidia.com/gpu': 52}
    assert host['gpuops_gpu_pods'] == ['team-a/train-0', 'team-b/train-1']
    assert (host['gpuops_sharing'], host['gpuops_cordoned'], host['gpuops_ready']) == ('none', False, True)
    assert host['gpuops_pool'] == 'training' and host['gpuops_labels'] == {POOL: 'training'}
    assert all(key.startswith('gpuops_') for key in host)
    t4 = ig.build_inventory([cluster('prod')])['hosts']['t4-0']
    assert (t4['gpuops_sharing'], t4['gpuops_sharing_replicas']) == ('time-slicing', 4)


def test_chosen_labels_and_another_pool_label():
    nodes = copy.deepcopy(NODES)
    for node in nodes:
        node['metadata']['labels']['topology.kubernetes.io/zone'] = 'zone-' + node['metadata']['name'][0]
    data = [{'name': 'prod', 'server': 'https://x', 'nodes': infos(nodes, ('topology.kubernetes.io/zone',))}]
    built = ig.build_inventory(data, pool_label='topology.kubernetes.io/zone')
    assert built['hosts']['t4-0']['gpuops_labels'] == {'topology.kubernetes.io/zone': 'zone-t'}
    assert built['hosts']['t4-0']['gpuops_pool'] == 'zone-t'
    assert built['groups']['pool_zone_t'] == ['t4-0']
    assert not [g for g in built['groups'] if g in ('pool_training', 'pool_inference')]


def test_cluster_group_variables_hold_no_secret():
    built = ig.build_inventory([cluster('prod')])
    assert built['group_vars'] == {'cluster_prod': {'gpuops_cluster': 'prod', 'gpuops_context': 'prod',
                                                    'gpuops_cluster_server': 'https://api.prod.example.com:6443'}}
    assert ig.public_settings({'kubeconfig': '/k', 'context': 'c', 'host': 'https://h', 'api_key': 'sEcReT',
                               'password': 'pw', 'username': 'u', 'ca_cert': '/ca.crt', 'validate_certs': False}) == {
        'gpuops_kubeconfig': '/k', 'gpuops_context': 'c', 'gpuops_k8s_host': 'https://h',
        'gpuops_k8s_ca_cert': '/ca.crt', 'gpuops_k8s_validate_certs': False}
    assert ig.public_settings({'kubeconfig': {'users': [{'user': {'token': 'sEcReT'}}]}}) == {}


def test_cluster_hosts():
    built = ig.build_inventory([cluster('prod')], cluster_hosts=True)
    assert built['groups']['gpu_clusters'] == ['prod']
    assert 'prod' in built['groups']['cluster_prod'] and 'prod' not in built['groups']['gpu_nodes']
    summary = built['hosts']['prod']['gpuops_fleet_summary']
    assert summary['gpu_nodes'] == 5 and summary['unschedulable'] == 1 and summary['not_ready'] == 1
    assert built['hosts']['prod']['gpuops_cluster_server'] == 'https://api.prod.example.com:6443'


def test_an_empty_cluster_still_has_its_group_variables():
    built = ig.build_inventory([{'name': 'empty', 'server': 'https://e', 'nodes': []}])
    assert built['hosts'] == {} and built['groups'] == {}
    assert built['group_vars']['cluster_empty']['gpuops_cluster'] == 'empty'


# ------------------------------------------------------------------ several clusters

def test_several_clusters_prefix_hosts_and_share_feature_groups():
    built = ig.build_inventory([cluster('prod'), cluster('lab', NODES[:3])], cluster_hosts=True)
    assert 'prod_a100-0' in built['hosts'] and 'lab_a100-0' in built['hosts'] and 'a100-0' not in built['hosts']
    assert built['groups']['product_nvidia_a100_sxm4_40gb'] == ['lab_a100-0', 'prod_a100-0']
    assert built['groups']['cluster_lab'] == ['lab', 'lab_a100-0', 'lab_t4-0']
    assert built['groups']['gpu_clusters'] == ['lab', 'prod']
    assert built['hosts']['lab_t4-0']['gpuops_cluster'] == 'lab'
    assert built['hosts']['lab_t4-0']['gpuops_node_name'] == 't4-0'
    assert sorted(built['group_vars']) == ['cluster_lab', 'cluster_prod']


def test_clashing_host_names_are_an_error_naming_both():
    # cluster "a_b" node "c" and cluster "a" node "b_c" are both "a_b_c"
    one = copy.deepcopy(NODES[0])  # t4-0
    one['metadata']['name'] = 'c'
    two = copy.deepcopy(NODES[0])
    two['metadata']['name'] = 'b_c'
    with pytest.raises(ig.InventoryNameError) as err:
        ig.build_inventory([cluster('a_b', [one]), cluster('a', [two])])
    assert 'a_b_c (node c of cluster a_b, node b_c of cluster a)' in str(err.value)
    # a node named like its cluster's host
    node = copy.deepcopy(NODES[0])
    node['metadata']['name'] = 'prod'
    with pytest.raises(ig.InventoryNameError, match='prod .cluster prod, node prod of cluster prod.'):
        ig.build_inventory([cluster('prod', [node])], cluster_hosts=True)
    assert 'prod' in ig.build_inventory([cluster('prod', [node])])['hosts']


# ------------------------------------------------------------------ connections

def test_valid_connections():
    assert ig.connection_errors([{'name': 'prod', 'kubeconfig': '/k', 'context': 'c'},
                                 {'name': 'lab.site-2', 'host': 'https://h', 'api_key': 't', 'validate_certs': False,
                                  'kubeconfig': {'clusters': []}, 'label_selector': 'a=b'}]) == []


def test_every_connection_error_at_once():
    errors = ig.connection_errors([
        {'kubeconfig': '/k'},
        {'name': 'prod', 'contxt': 'c'},
        {'name': 'bad name!'},
        {'name': 'prod', 'validate_certs': 'no'},
        'prod',
    ])
    assert errors == [
        'connections[0].name is required: a name for the cluster (hosts become <name>_<node>)',
        "connections[1]: unknown key 'contxt'; did you mean 'context'? (known keys: kubeconfig, context, host, "
        'api_key, username, password, client_cert, client_key, ca_cert, validate_certs, proxy, no_proxy, name, '
        'label_selector)',
        "connections[2].name 'bad name!' must start with a letter or digit and hold only letters, digits, '_', '.' "
        "and '-'",
        "connections[3].validate_certs must be true or false, got string 'no'",
        'connections[4] must be a mapping, got string',
    ]


def test_duplicate_connection_names():
    assert ig.connection_errors([{'name': 'prod'}, {'name': 'lab'}, {'name': 'prod'}]) == [
        "connections: the name 'prod' is used by entries 0, 2; each cluster needs its own name"]
    assert ig.connection_errors({'name': 'prod'}) == ['connections must be a list, got mapping']


def test_groups_and_variables_per_stack():
    from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import dra_fleet
    from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.gpu import dra_data
    nodes = gpu_node.select_nodes(copy.deepcopy(dra_data.NODES), gpu_names=dra_fleet.dra_node_names(dra_data.SLICES))[0]
    infos = gpu_node.fleet_info(nodes, [])
    dra_fleet.annotate(infos, dra_data.SLICES, dra_data.CLAIMS)
    built = ig.build_inventory([{'name': 'prod', 'server': 'https://api.prod:6443', 'nodes': infos}], cluster_hosts=True)
    assert dict((g, h) for g, h in built['groups'].items() if g.startswith('gpu_stack_')) == {
        'gpu_stack_both': ['both-0'], 'gpu_stack_device_plugin': ['dp-0'], 'gpu_stack_dra': ['bare-0', 'dra-0']}
    dra_host = built['hosts']['dra-0']
    assert dra_host['gpuops_stack'] == 'dra'
    assert [d['name'] for d in dra_host['gpuops_dra_devices'] if d['allocated']] == ['gpu-0', 'gpu-1-mig-1g5gb-19-0']
    assert dra_host['gpuops_dra_counts'][dra_data.A100] == {'total': 1, 'allocated': 1, 'free': 0}
    assert built['hosts']['prod']['gpuops_fleet_summary']['stacks'] == {'both': 1, 'device-plugin': 1, 'dra': 2}
