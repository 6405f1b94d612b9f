# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_inventory against a fake CoreV1Api: which LIST calls are made, never a call per node."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.k8s.client import Connection, decode
from ansible_collections.gpuops.gpu.plugins.module_utils.ops import inventory as gpu_inventory

from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import node as gpu_node
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.gpu_cluster_data import (
    GPU, NO_DRA, NODES, PODS, T4, FakeApiError, FakeCore, FakeDra, ctr, pod,
)
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import dra_fleet

ACTIVE = 'status.phase!=Succeeded,status.phase!=Failed'


def selectors(core):
    return [(kind, kw.get('label_selector'), kw.get('field_selector')) for kind, kw in core.calls]


def test_default_is_one_node_list_and_one_pod_list():
    core = FakeCore(NODES, PODS)
    result = gpu_inventory.gather(Connection(core=core, custom=NO_DRA))
    assert selectors(core) == [('NodeList', None, None), ('PodList', None, 'spec.nodeName!=,' + ACTIVE)]
    assert all(kw['limit'] == 500 and '_continue' not in kw for _kind, kw in core.calls)
    assert result['api_requests'] == 3  # and the one ResourceSlice list that finds DRA not served
    assert result['dra'] == {'served': False}
    assert [n['name'] for n in result['nodes']] == ['a100-0', 'h100-0', 'l40s-0', 'plain-0', 't4-0']
    # the API server dropped the terminal pods; the result equals the pure computation
    expected = gpu_node.fleet_info(gpu_node.select_nodes(NODES)[0], PODS)
    dra_fleet.annotate(expected)
    assert result['nodes'] == expected
    assert result['summary'] == dra_fleet.summary(expected)
    assert [n['stack'] for n in expected] == ['device-plugin'] * 5
    assert result['summary']['requested'] == {GPU: 6, 'nvidia.com/mig-1g.10gb': 3,
                                              'nvidia.com/mig-3g.40gb': 1, 'nvidia.com/gpu.shared': 3}
    assert (result['not_found'], result['not_gpu']) == ([], [])


def _fleet(size):
    nodes, pods = [], []
    for i in range(size):
        n = copy.deepcopy(T4)
        n['metadata']['name'] = 't4-%03d' % i
        nodes.append(n)
        pods.append(pod('infer-%03d' % i, n['metadata']['name'], containers=[ctr(limits={GPU: '1'})]))
    return nodes, pods


@pytest.mark.parametrize('size', [1, 50, 499])
def test_requests_do_not_grow_with_node_count(size):
    nodes, pods = _fleet(size)
    core = FakeCore(nodes, pods)
    result = gpu_inventory.gather(Connection(core=core, custom=NO_DRA))
    assert result['api_requests'] == len(core.calls) + 1 == 3
    assert result['summary']['requested'] == {GPU: size}
    assert result['summary']['nodes'] == size


def test_large_lists_are_paged():
    nodes, pods = _fleet(250)
    core = FakeCore(nodes, pods)
    result = gpu_inventory.gather(Connection(core=core, custom=NO_DRA), page_size=100)
    assert [(kind, kw.get('_continue')) for kind, kw in core.calls] == [
        ('NodeList', None), ('NodeList', '100'), ('NodeList', '200'),
        ('PodList', None), ('PodList', '100'), ('PodList', '200')]
    assert result['api_requests'] == 7
    assert result['summary']['nodes'] == 250
    assert result['summary']['requested'] == {GPU: 250}
    assert result['summary']['gpu_pods'] == 250


def test_expired_continue_token_restarts_unpaged():
    nodes, pods = _fleet(250)
    core = FakeCore(nodes, pods, fail={('PodList', 2): FakeApiError(410, 'Gone', 'The provided continue parameter is too old')})
    result = gpu_inventory.gather(Connection(core=core, custom=NO_DRA), page_size=100)
    pod_calls = [kw for kind, kw in core.calls if kind == 'PodList']
    assert [(kw.get('limit'), kw.get('_continue')) for kw in pod_calls] == [(100, None), (100, '100'), (None, None)]
    assert result['summary']['requested'] == {GPU: 250}


def test_label_selector_goes_to_the_api_server():
    core = FakeCore(NODES, PODS)
    result = gpu_inventory.gather(Connection(core=core, custom=NO_DRA), label_selector='gpuops.dev/pool=training')
    assert selectors(core)[0] == ('NodeList', 'gpuops.dev/pool=training', None)
    assert [n['name'] for n in result['nodes']] == ['a100-0', 'h100-0']


def test_one_named_node_narrows_both_lists():
    core = FakeCore(NODES, PODS)
    result = gpu_inventory.gather(Connection(core=core, custom=NO_DRA), names=['t4-0'])
    assert selectors(core) == [('NodeList', None, 'metadata.name=t4-0'),
                               ('PodList', None, 'spec.nodeName=t4-0,' + ACTIVE)]
    assert [n['name'] for n in result['nodes']] == ['t4-0']
    assert result['nodes'][0]['gpu_pods'] == ['serving/infer-0', 'serving/infer-1']


def test_several_names_one_list_each():
    core = FakeCore(NODES, PODS)
    result = gpu_inventory.gather(Connection(core=core, custom=NO_DRA), names=['t4-0', 'h100-0', 'cpu-0', 'gone-0'])
    assert selectors(core) == [('NodeList', None, None), ('PodList', None, 'spec.nodeName!=,' + ACTIVE)]
    assert [n['name'] for n in result['nodes']] == ['h100-0', 't4-0']
    assert (result['not_found'], result['not_gpu']) == (['gone-0'], ['cpu-0'])


def test_no_selected_node_means_no_pod_list():
    core = FakeCore(NODES, PODS)
    result = gpu_inventory.gather(Connection(core=core, custom=NO_DRA), names=['cpu-0'])
    assert [kind for kind, _kw in core.calls] == ['NodeList']
    assert (result['nodes'], result['not_gpu'], result['api_requests']) == ([], ['cpu-0'], 2)
    assert result['summary']['nodes'] == 0


def test_include_pods_false_reads_no_pod():
    core = FakeCore(NODES, PODS)
    result = gpu_inventory.gather(Connection(core=core, custom=NO_DRA), include_pods=False)
    assert [kind for kind, _kw in core.calls] == ['NodeList']
    assert result['nodes'][0]['requested'] is None
    assert result['summary']['requested'] is None
    assert result['summary']['allocatable'][GPU] == 66


def test_only_gpu_nodes_false():
    result = gpu_inventory.gather(Connection(custom=NO_DRA, core=FakeCore(NODES, PODS)), only_gpu_nodes=False)
    assert [(n['name'], n['gpu_node']) for n in result['nodes']][:2] == [('a100-0', True), ('cpu-0', False)]
    assert (result['summary']['nodes'], result['summary']['gpu_nodes']) == (6, 5)


@pytest.mark.parametrize('fail, message', [
    ({('NodeList', 1): FakeApiError(403, 'Forbidden',
                                    'nodes is forbidden: User "system:serviceaccount:awx:runner" cannot list '
                                    'resource "nodes" in API group "" at the cluster scope')},
     'Could not list nodes: 403 Forbidden: nodes is forbidden: User "system:serviceaccount:awx:runner"'),
    ({('PodList', 1): FakeApiError(500, 'Internal Server Error')}, 'Could not list pods: 500 Internal Server Error$'),
    ({('NodeList', 1): OSError('connection refused')}, 'Could not list nodes: connection refused'),
])
def test_errors_name_the_list_and_the_reason(fail, message):
    with pytest.raises(gpu_inventory.InventoryError, match=message):
        gpu_inventory.gather(Connection(custom=NO_DRA, core=FakeCore(NODES, PODS, fail=fail)))


def test_response_decoding():
    assert decode({'items': []}) == {'items': []}
    assert decode(type('R', (), {'data': '{"items": [1]}'})()) == {'items': [1]}
    assert decode(type('R', (), {'data': b''})()) == {}
    lister = gpu_inventory.Lister(Connection(core=None))
    with pytest.raises(gpu_inventory.InventoryError, match='unexpected API response type: int'):
        lister.list(lambda **kwargs: 7, 'nodes')


def test_api_error_message():
    assert gpu_inventory.api_error_message(FakeApiError(401, 'Unauthorized')) == '401 Unauthorized'
    err = FakeApiError(404, 'Not Found')
    err.body = 'not json'
    assert gpu_inventory.api_error_message(err) == '404 Not Found'
    assert gpu_inventory.api_error_message(ValueError('boom')) == 'boom'


@pytest.mark.parametrize('include_pods', [True, False])
def test_gpu_node_records_for_the_inventory_plugin(include_pods):
    core = FakeCore(NODES, PODS)
    records = gpu_inventory.gpu_node_records(Connection(core=core, custom=NO_DRA), label_selector='gpuops.dev/pool',
                                             include_pods=include_pods,
                                             label_keys=['gpuops.dev/pool', 'kubernetes.io/os', 'absent/key'])
    assert selectors(core) == [('NodeList', 'gpuops.dev/pool', None)] + (
        [('PodList', None, 'spec.nodeName!=,' + ACTIVE)] if include_pods else [])
    # l40s-0 and plain-0 have no pool label (the server-side selector), cpu-0 has no GPU
    assert [r['name'] for r in records] == ['a100-0', 'h100-0', 't4-0']
    assert records[0]['labels'] == {'gpuops.dev/pool': 'training', 'kubernetes.io/os': 'linux'}
    assert records[0]['requested'] == ({GPU: 4} if include_pods else None)
    pooled = [n for n in NODES if 'gpuops.dev/pool' in n['metadata']['labels']]
    stripped = [dict((k, v) for k, v in r.items() if k != 'labels') for r in records]
    expected = gpu_node.fleet_info(gpu_node.select_nodes(pooled)[0], PODS if include_pods else None)
    dra_fleet.annotate(expected)
    assert stripped == expected


def test_dra_served_two_more_lists_and_the_dra_view():
    from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.gpu import dra_data
    core = FakeCore(dra_data.NODES, [])
    custom = FakeDra(dra_data.SLICES, dra_data.CLAIMS)
    result = gpu_inventory.gather(Connection(core=core, custom=custom), page_size=2)
    # slices of NVIDIA's driver only, selected by the API server; claims of every namespace; both paged
    assert [(plural, kw.get('field_selector'), kw.get('_continue')) for plural, kw in custom.calls] == [
        ('resourceslices', 'spec.driver=gpu.nvidia.com', None), ('resourceslices', 'spec.driver=gpu.nvidia.com', '2'),
        ('resourceclaims', None, None), ('resourceclaims', None, '2'), ('resourceclaims', None, '4')]
    assert [(n['name'], n['stack']) for n in result['nodes']] == [
        ('bare-0', 'dra'), ('both-0', 'both'), ('dp-0', 'device-plugin'), ('dra-0', 'dra')]
    assert result['dra']['served'] is True and result['dra']['stale_slices'] == 1
    assert result['summary']['stacks'] == {'device-plugin': 1, 'dra': 2, 'both': 1}
    assert result['api_requests'] == 3 + 1 + 5  # nodes, pods, DRA
    records = gpu_inventory.gpu_node_records(Connection(core=core, custom=FakeDra(dra_data.SLICES, dra_data.CLAIMS)))
    assert [(r['name'], r['stack'], len(r['dra_devices'])) for r in records] == [
        ('bare-0', 'dra', 1), ('both-0', 'both', 2), ('dp-0', 'device-plugin', 0), ('dra-0', 'dra', 4)]


@pytest.mark.parametrize('plural', ['resourceslices', 'resourceclaims'])
def test_dra_forbidden_is_a_warning_not_a_failure(plural):
    custom = FakeDra([], [], fail={(plural, 1): FakeApiError(403, 'Forbidden', 'resourceslices is forbidden')})
    result = gpu_inventory.run(Connection(core=FakeCore(NODES, PODS), custom=custom),
                               {'label_selector': None, 'names': None, 'include_pods': True, 'only_gpu_nodes': True})
    assert result['dra'] == {'served': True, 'readable': False, 'reason': 'the account may not list ResourceSlices '
                             'and ResourceClaims (resource.k8s.io): the DRA view is left out'}
    assert result['warnings'] == [result['dra']['reason'] + '.']
    assert [n['stack'] for n in result['nodes']] == ['device-plugin'] * 5


def test_dra_other_errors_fail():
    custom = FakeDra([], [], fail={('resourceclaims', 1): FakeApiError(500, 'Internal Server Error')})
    with pytest.raises(gpu_inventory.InventoryError, match='Could not list ResourceClaims: 500 Internal Server Error'):
        gpu_inventory.gather(Connection(core=FakeCore(NODES, PODS), custom=custom))
