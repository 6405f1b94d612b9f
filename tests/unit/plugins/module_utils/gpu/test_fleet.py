# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.gpu.plugins.filter.fleet import FilterModule
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import fleet as fleet_table
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import node as gpu_node
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.gpu_cluster_data import NODES, PODS
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.gpu.fleet_data import (
    INFOS, SUMMARY, TABLE)

FILTERS = FilterModule().filters()


FOOTER = '''\
5 nodes; products: NVIDIA-A100-SXM4-40GB x1, NVIDIA-H100-80GB-HBM3 x1, NVIDIA-L40S x1, Tesla-T4 x1, unknown x1
allocatable: gpu:66 gpu.shared:40 mig-1g.10gb:14 mig-3g.40gb:2; requested: gpu:6 gpu.shared:3 mig-1g.10gb:3 mig-3g.40gb:1; \
free: gpu:60 gpu.shared:37 mig-1g.10gb:11 mig-3g.40gb:1
GPU pods: 6; cordoned: 1; not ready: 1; MIG states: pending x1, success x1; sharing: mps x1, none x3, time-slicing x1'''


def test_compact_resources_order_and_prefix():
    assert fleet_table.compact_resources({
        'nvidia.com/mig-3g.40gb': 2, 'nvidia.com/gpu.shared': 40, 'nvidia.com/mig-1g.10gb': 14,
        'nvidia.com/gpu': 8}) == 'gpu:8 gpu.shared:40 mig-1g.10gb:14 mig-3g.40gb:2'
    assert fleet_table.compact_resources({}) == '-'
    assert fleet_table.compact_resources(None) == '-'
    assert fleet_table.compact_resources({'example.com/fpga': 1}) == 'example.com/fpga:1'


@pytest.mark.parametrize('node, cell', [
    ({'mig_strategy': 'single', 'mig_config': 'all-1g.5gb', 'mig_state': 'success'}, 'single/all-1g.5gb/success'),
    ({'mig_strategy': None, 'mig_config': 'all-disabled', 'mig_state': 'success'}, '-/all-disabled/success'),
    ({'mig_strategy': 'mixed', 'mig_config': None, 'mig_state': None}, 'mixed/-/-'),
    ({'mig_strategy': 'single', 'mig_capable': True}, 'single/-/-'),
    # GFD writes mig.strategy on every GPU node: a T4 shows no MIG
    ({'mig_strategy': 'single', 'mig_capable': False}, '-'),
    ({'mig_strategy': 'single', 'mig_capable': False, 'mig_state': 'failed'}, 'single/-/failed'),
    ({}, '-'),
])
def test_mig_cell(node, cell):
    assert fleet_table.mig_cell(node) == cell


@pytest.mark.parametrize('node, cell', [
    ({'sharing_strategy': 'time-slicing', 'replicas': 4}, 'time-slicing/4'),
    ({'sharing_strategy': 'mps', 'replicas': 10}, 'mps/10'),
    ({'sharing_strategy': 'none', 'replicas': 1}, '-'),
    ({}, '-'),
])
def test_sharing_cell(node, cell):
    assert fleet_table.sharing_cell(node) == cell


def test_render_exact_table_with_summary():
    assert fleet_table.render(INFOS, SUMMARY) == TABLE + '\n\n' + FOOTER


def test_render_accepts_the_whole_module_result():
    result = {'changed': False, 'nodes': INFOS, 'summary': SUMMARY, 'not_found': [], 'api_requests': 2}
    assert fleet_table.render(result) == TABLE + '\n\n' + FOOTER
    # an explicit summary wins over the result's
    other = dict(SUMMARY, unschedulable=0)
    assert 'cordoned: 0;' in fleet_table.render(result, other)


def test_render_without_summary_and_no_trailing_spaces():
    text = fleet_table.render(INFOS)
    assert text == TABLE
    lines = text.split('\n')
    assert all(line == line.rstrip() for line in lines)
    # fixed width: every column starts at the same offset on every line
    col = lines[0].index('ALLOCATABLE')
    assert [line[col:].split()[0] for line in lines[1:]] == [
        'gpu:56', 'gpu:4', 'gpu.shared:40', 'gpu:2', 'gpu:4']


def test_render_pods_not_read():
    infos = gpu_node.fleet_info(gpu_node.select_nodes(NODES)[0], None)
    lines = fleet_table.render(infos, gpu_node.fleet_summary(infos)).split('\n')
    assert lines[1].split() == ['a100-0', 'NVIDIA-A100-SXM4-40GB', '56', 'single/all-1g.5gb/success', '-', '-', '-',
                                'gpu:56', 'n/a', 'n/a', '-', '-', 'yes', 'no']
    assert 'requested: n/a; free: n/a' in lines[-2]
    assert lines[-1].startswith('GPU pods: n/a; cordoned: 1;')


def test_render_empty_and_partial_nodes():
    assert fleet_table.render([]) == ('NODE  PRODUCT  GPUS  MIG  SHARING  DRIVER  CUDA  ALLOCATABLE  REQUESTED  PODS  '
                                      'STACK  DRA USED/ALL  READY  CORDONED\n(no GPU nodes)')
    assert fleet_table.render([{'name': 'x'}]).split('\n')[1].split() == \
        ['x', '-', '-', '-', '-', '-', '-', 'n/a', 'n/a', 'n/a', '-', '-', 'yes', 'no']


def test_driver_and_cuda_columns_from_either_label_generation():
    by_name = dict((info['name'], info) for info in INFOS)
    assert (by_name['a100-0']['driver_version'], by_name['a100-0']['cuda_version']) == ('570.172.08', '12.8')
    assert (by_name['h100-0']['driver_version'], by_name['h100-0']['cuda_version']) == ('580.95.05', '13.0')
    assert (by_name['t4-0']['driver_version'], by_name['t4-0']['cuda_version']) == (None, None)
    # the newer labels win; parts alone (no .full) are joined
    assert gpu_node.driver_version({'nvidia.com/cuda.driver-version.major': '570',
                                    'nvidia.com/cuda.driver-version.minor': '86',
                                    'nvidia.com/cuda.driver-version.revision': '15',
                                    'nvidia.com/cuda.driver.major': '1'}) == '570.86.15'
    lines = fleet_table.render(INFOS).split('\n')
    col = lines[0].index('DRIVER')
    assert [line[col:].split()[0] for line in lines[1:]] == ['570.172.08', '580.95.05', '-', '-', '-']


def test_summary_singular_and_non_gpu_nodes():
    infos = gpu_node.fleet_info(gpu_node.select_nodes(NODES, only_gpu_nodes=False)[0], PODS)
    assert fleet_table.summary_lines(gpu_node.fleet_summary(infos))[0].startswith('6 nodes (5 with GPUs); ')
    assert fleet_table.summary_lines(gpu_node.fleet_summary(INFOS[:1]))[0] == \
        '1 node; products: NVIDIA-A100-SXM4-40GB x1'


@pytest.mark.parametrize('data, summary, message', [
    ('nodes', None, 'expected a list of nodes, got string'),
    ({'changed': False}, None, 'expected the node list or a gpu_nodes_info result'),
    (['a100-0'], None, 'every node must be a dict'),
    ([], ['x'], 'summary must be a dict, got list'),
])
def test_bad_input(data, summary, message):
    with pytest.raises(ValueError, match=message):
        fleet_table.render(data, summary)
    with pytest.raises(AnsibleFilterError, match='gpu_fleet_table: ' + message):
        FILTERS['gpu_fleet_table'](data, summary=summary)


def test_filter_plugin():
    assert sorted(FILTERS) == ['gpu_fleet_report', 'gpu_fleet_table']
    assert FILTERS['gpu_fleet_table'](INFOS, summary=SUMMARY) == TABLE + '\n\n' + FOOTER
