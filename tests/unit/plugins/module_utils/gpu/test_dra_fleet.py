# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu/dra_fleet.py: the stack of each node and its DRA devices, allocated or free, on a mixed fleet (dra_data.py);
and how the fleet table and report show them."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import csv
import io

from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import dra_fleet
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import fleet as fleet_table
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import fleet_report
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import node as gpu_node
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.gpu.dra_data import (
    A100, CLAIMS, H100, MPS, NODES, SLICES, TIME_SLICING)


def fleet(slices=None, claims=None, only_gpu_nodes=True):
    """(infos, dra facts) of the mixed fleet (or of these slices and claims), as ops/inventory.py reads it."""
    slices = SLICES if slices is None else slices
    claims = CLAIMS if claims is None else claims
    selected = gpu_node.select_nodes(copy.deepcopy(NODES), only_gpu_nodes=only_gpu_nodes,
                                     gpu_names=dra_fleet.dra_node_names(slices))[0]
    infos = gpu_node.fleet_info(selected, [])
    return infos, dra_fleet.annotate(infos, copy.deepcopy(slices), copy.deepcopy(claims))


def by_name(infos):
    return dict((info['name'], info) for info in infos)


def test_only_the_newest_generation_of_each_pool_of_the_driver_counts():
    current, stale = dra_fleet.current_slices(SLICES)
    assert sorted(s['metadata']['name'] for s in current) == ['bare-0-gpu-5', 'both-0-gpu-1', 'dra-0-gpu-2']
    assert stale == 1
    devices = dra_fleet.devices_by_node(current)
    assert 'gpu-7' not in [d['name'] for d in devices['dra-0']]  # the stale slice's device


def test_stack_of_every_node():
    infos, facts = fleet(only_gpu_nodes=False)
    assert dict((i['name'], i['stack']) for i in infos) == {
        'dp-0': 'device-plugin', 'dra-0': 'dra', 'both-0': 'both', 'bare-0': 'dra', 'cpu-0': 'none'}
    assert facts == {'served': True, 'driver': 'gpu.nvidia.com', 'slices': 3, 'stale_slices': 1, 'claims': 4,
                     'unknown_allocations': ['gone-0/gpu-3']}


def test_a_node_with_a_slice_is_a_gpu_node_without_gpu_labels():
    infos, _facts = fleet()
    assert [i['name'] for i in infos] == ['bare-0', 'both-0', 'dp-0', 'dra-0']  # cpu-0 left out
    bare = by_name(infos)['bare-0']
    assert (bare['gpu_node'], bare['product'], bare['stack']) == (True, None, 'dra')
    assert [(d['name'], d['product'], d['memory_mib'], d['allocated']) for d in bare['dra_devices']] == [
        ('gpu-0', H100, 81920, False)]


def test_a_device_plugin_that_advertises_nothing_is_not_a_stack():
    info = {'name': 'n', 'capacity': {'nvidia.com/gpu': 0, 'nvidia.com/mig-1g.5gb': 0}}
    assert dra_fleet.node_stack(info, False) == 'none'
    assert dra_fleet.node_stack(dict(info, capacity={'nvidia.com/mig-1g.5gb': 7}), False) == 'device-plugin'
    assert dra_fleet.node_stack(dict(info, capacity={'nvidia.com/gpu.shared': 4}), True) == 'both'


def test_devices_allocated_and_free_with_claims_pods_and_sharing():
    infos, _facts = fleet()
    devices = dict((d['name'], d) for d in by_name(infos)['dra-0']['dra_devices'])
    assert sorted(devices) == ['gpu-0', 'gpu-1-mig-1g5gb-19-0', 'gpu-1-mig-1g5gb-19-1', 'gpu-1-mig-3g20gb-9-4']
    whole = devices['gpu-0']
    assert (whole['type'], whole['product'], whole['profile'], whole['memory_mib']) == ('gpu', A100, None, 40960)
    assert (whole['allocated'], whole['claims'], whole['pods']) == (True, ['team-a/train'], ['team-a/train-0'])
    assert whole['sharing'] == TIME_SLICING  # the claim's config, not the class's MPS
    taken = devices['gpu-1-mig-1g5gb-19-0']
    assert (taken['type'], taken['profile'], taken['parent'], taken['parent_uuid'], taken['memory_mib']) == (
        'mig', '1g.5gb', 'gpu-1', 'GPU-a1', 4864)
    assert (taken['claims'], taken['pods'], taken['sharing']) == (
        ['team-b/mig'], ['team-b/notebook-0', 'team-b/notebook-1'], MPS)  # MigDeviceConfig, not GpuConfig
    free = devices['gpu-1-mig-3g20gb-9-4']
    assert (free['allocated'], free['claims'], free['pods'], free['sharing']) == (False, [], [], None)
    both = by_name(infos)['both-0']['dra_devices']
    assert [(d['name'], d['allocated'], d['claims'], d['sharing']) for d in both] == [
        ('gpu-0', False, [], None), ('gpu-1', True, ['team-c/both'], None)]


def test_a_device_shared_by_several_claims_lists_them_all():
    claims = CLAIMS + [copy.deepcopy(CLAIMS[0])]
    claims[-1]['metadata']['name'] = 'train-2'
    infos, facts = fleet(claims=claims)
    whole = by_name(infos)['dra-0']['dra_devices'][0]
    assert whole['claims'] == ['team-a/train', 'team-a/train-2'] and facts['claims'] == 5


def test_sharing_precedence_follows_the_driver():
    gpu_all = {'source': 'FromClass', 'opaque': {'driver': 'gpu.nvidia.com', 'parameters': {
        'kind': 'GpuConfig', 'sharing': MPS}}}
    named = {'source': 'FromClass', 'requests': ['r'], 'opaque': {'driver': 'gpu.nvidia.com', 'parameters': {
        'kind': 'GpuConfig', 'sharing': TIME_SLICING}}}
    assert dra_fleet.applied_sharing([gpu_all, named], 'r', 'gpu') == TIME_SLICING
    assert dra_fleet.applied_sharing([named, gpu_all], 'r', 'gpu') == MPS  # later wins
    assert dra_fleet.applied_sharing([named, gpu_all], 'other', 'mig') is None
    assert dra_fleet.applied_sharing([], 'r', 'gpu') is None


def test_counts_per_product_and_profile_and_the_summary():
    infos, _facts = fleet()
    assert by_name(infos)['dra-0']['dra_counts'] == {
        A100: {'total': 1, 'allocated': 1, 'free': 0},
        A100 + ' MIG 1g.5gb': {'total': 2, 'allocated': 1, 'free': 1},
        A100 + ' MIG 3g.20gb': {'total': 1, 'allocated': 0, 'free': 1}}
    summary = dra_fleet.summary(infos)
    assert summary['stacks'] == {'device-plugin': 1, 'dra': 2, 'both': 1}
    assert summary['dra_devices'] == {
        A100: {'total': 3, 'allocated': 2, 'free': 1}, H100: {'total': 1, 'allocated': 0, 'free': 1},
        A100 + ' MIG 1g.5gb': {'total': 2, 'allocated': 1, 'free': 1},
        A100 + ' MIG 3g.20gb': {'total': 1, 'allocated': 0, 'free': 1}}
    assert summary['gpu_nodes'] == 4 and summary['allocatable'] == {'nvidia.com/gpu': 10}


def test_dra_not_served():
    infos = gpu_node.fleet_info(gpu_node.select_nodes(copy.deepcopy(NODES))[0], [])
    assert dra_fleet.annotate(infos) == {'served': False}
    assert [(i['name'], i['stack'], i['dra_devices'], i['dra_counts']) for i in infos] == [
        ('both-0', 'device-plugin', [], {}), ('dp-0', 'device-plugin', [], {}), ('dra-0', 'none', [], {})]
    assert dra_fleet.summary(infos)['stacks'] == {'device-plugin': 2, 'none': 1}


def test_attributes_bare_or_qualified_and_memory():
    device = {'attributes': {'gpu.nvidia.com/productName': {'string': 'X'}, 'type': {'string': 'gpu'},
                             'driverVersion': {'version': '580.95.5'}}, 'capacity': {'memory': {'value': 'bad'}}}
    assert (dra_fleet.attribute(device, 'productName'), dra_fleet.attribute(device, 'type')) == ('X', 'gpu')
    assert (dra_fleet.attribute(device, 'driverVersion'), dra_fleet.attribute(device, 'uuid')) == ('580.95.5', None)
    assert dra_fleet.memory_mib(device) is None and dra_fleet.memory_mib({}) is None


def test_fleet_table_shows_the_stack_and_the_dra_devices():
    infos, _facts = fleet()
    text = fleet_table.render(infos, dra_fleet.summary(infos))
    rows = dict((line.split()[0], line) for line in text.split('\n')[1:5])
    header = text.split('\n', 1)[0]
    stack, dra = header.index('STACK'), header.index('DRA USED/ALL')
    assert dict((n, r[stack:].split()[0]) for n, r in rows.items()) == {
        'bare-0': 'dra', 'both-0': 'both', 'dp-0': 'device-plugin', 'dra-0': 'dra'}
    assert rows['dra-0'][dra:].split()[:3] == ['gpu:1/1', 'mig-1g.5gb:1/2', 'mig-3g.20gb:0/1']
    assert rows['dp-0'][dra:].split()[0] == '-'
    totals = ('stacks: both x1, device-plugin x1, dra x2; DRA devices allocated: NVIDIA A100-SXM4-40GB 2/3, '
              'NVIDIA A100-SXM4-40GB MIG 1g.5gb 1/2, NVIDIA A100-SXM4-40GB MIG 3g.20gb 0/1, NVIDIA H100 80GB HBM3 0/1')
    assert text.rsplit('\n', 1)[-1] == totals
    assert fleet_table.sharing_words(TIME_SLICING) == 'TimeSlicing interval=Long'
    assert fleet_table.sharing_words(MPS) == 'MPS defaultActiveThreadPercentage=50'
    assert fleet_table.sharing_words(None) == '-'


def test_fleet_report_csv_json_html_and_capacity():
    infos, facts = fleet()
    out = fleet_report.render({'nodes': infos, 'summary': dra_fleet.summary(infos), 'dra': facts})
    rows = list(csv.reader(io.StringIO(out['csv'])))
    stack = rows[0].index('STACK')
    assert [r[stack] for r in rows[1:]] == ['dra', 'both', 'device-plugin', 'dra']
    assert '<section id="dra"><h2>DRA devices</h2><table id="dra-devices">' in out['html']
    assert ('<tr class="allocated"><td>dra-0</td><td>gpu-0</td><td>gpu</td><td>NVIDIA A100-SXM4-40GB</td><td>-</td>'
            '<td class="num">40960</td><td>allocated</td><td>team-a/train</td><td>team-a/train-0</td>'
            '<td>TimeSlicing interval=Long</td></tr>') in out['html']
    assert out['html'].count('<tr class="free">') == 4 and out['html'].count('<tr class="allocated">') == 3
    capacity = dict(((r['product'], r['resource']), r['after']) for r in fleet_report.capacity_rows(infos))
    assert capacity[('NVIDIA-A100-SXM4-40GB', 'dra/mig-1g.5gb')] == 2
    # a DRA-only node's devices under the product as GFD spells it, so one product is one row of the chart
    assert capacity[(H100.replace(' ', '-'), 'dra/gpu')] == 1 and (H100, 'dra/gpu') not in capacity
    assert capacity[('NVIDIA-A100-SXM4-40GB', 'gpu')] == 10
    assert '"stack": "both"' in out['json']


def test_fleet_report_without_dra_devices_has_no_dra_section():
    infos, _facts = fleet(slices=[])
    assert 'id="dra"' not in fleet_report.render({'nodes': infos})['html']
