"""plans/gpu_health.py: which GPU nodes are unhealthy, and what quarantine / return do to them."""

import json

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import ANN_GPU_HEALTH
from ansible_collections.gpuops.gpu.plugins.module_utils.plans import gpu_health as gh

NOW = gh.epoch_of('2026-11-28T12:00:00Z')
NOW_ISO = '2026-11-28T12:00:00+00:00'


def node(name, cap=8, alloc=8, labels=None, annotations=None, unschedulable=False, taints=None, res='nvidia.com/gpu'):
    spec = {}
    if unschedulable:
        spec['unschedulable'] = True
    if taints:
        spec['taints'] = taints
    return {'metadata': {'name': name, 'labels': dict({'nvidia.com/gpu.present': 'true'}, **(labels or {})),
                         'annotations': dict(annotations or {})},
            'spec': spec, 'status': {'capacity': {res: str(cap), 'cpu': '8'}, 'allocatable': {res: str(alloc), 'cpu': '8'}}}


def event(name, reason='XidCriticalError', at='2026-11-28T11:50:00Z', message='XidCriticalError: Xid=79 on Device=GPU-1'):
    return {'involvedObject': {'kind': 'Node', 'name': name}, 'reason': reason, 'lastTimestamp': at, 'message': message}


def quarantined(name, cordoned=True, tainted=False, **kw):
    rec = {'state': 'quarantined', 'reason': 'r', 'since': '2026-11-28T11:00:00+00:00', 'cordoned': cordoned,
           'tainted': tainted}
    return node(name, annotations={ANN_GPU_HEALTH: json.dumps(rec)}, unschedulable=True, **kw)


def run(nodes, events=(), policy='quarantine', **kw):
    return gh.plan(nodes, list(events), policy, NOW, NOW_ISO, **kw)


def test_quarantine_plans_exactly_the_node_with_lost_devices():
    result = run([node('good'), node('bad', alloc=7), {'metadata': {'name': 'cpu'}, 'status': {}}])
    assert result['unhealthy'] == ['bad']
    [action] = result['actions']
    assert action['node'] == 'bad' and action['action'] == 'quarantine' and action['changed']
    assert action['reason'] == 'nvidia.com/gpu allocatable 7 < capacity 8'
    rec = json.loads(action['after']['annotation'])
    assert rec == {'state': 'quarantined', 'reason': action['reason'], 'since': NOW_ISO, 'cordoned': True,
                   'tainted': False}
    assert gh.node_patch(action) == {'metadata': {'annotations': {ANN_GPU_HEALTH: action['after']['annotation']}},
                                     'spec': {'unschedulable': True}}


def test_mig_resource_loss_counts():
    result = run([node('mig', cap=7, alloc=6, res='nvidia.com/mig-1g.5gb')])
    assert result['unhealthy'] == ['mig']
    assert 'nvidia.com/mig-1g.5gb allocatable 6 < capacity 7' in result['actions'][0]['reason']


def test_recent_xid_event_counts_old_or_other_events_do_not():
    events = [event('a'), event('b', at='2026-11-28T10:00:00Z'), event('c', reason='Other'),
              dict(event('d'), involvedObject={'kind': 'Pod', 'name': 'd'})]
    result = run([node(n) for n in 'abcd'], events, window_minutes=60)
    assert result['unhealthy'] == ['a']
    assert 'XidCriticalError: Xid=79' in result['actions'][0]['reason']
    assert run([node('a')], events, window_minutes=0)['unhealthy'] == []


def test_nodes_whose_plugin_does_not_serve_are_skipped():
    nodes = [node('mig', alloc=0, labels={'nvidia.com/mig.config.state': 'pending'}),
             node('paused', alloc=0, labels={'nvidia.com/gpu.deploy.device-plugin': 'paused-for-mig-change'}),
             node('rollout', alloc=0, annotations={'gpuops.gpu/rollout-phase': 'cordoned'})]
    result = run(nodes)
    assert result['actions'] == [] and result['unhealthy'] == []
    assert sorted(result['skipped']) == ['mig', 'paused', 'rollout']


def test_already_quarantined_node_is_unchanged_and_a_cordoned_node_is_not_marked_as_ours():
    result = run([quarantined('q', alloc=7)])
    assert [a['changed'] for a in result['actions']] == [False]
    result = run([node('admin', alloc=7, unschedulable=True)])
    assert json.loads(result['actions'][0]['after']['annotation'])['cordoned'] is False
    assert 'spec' not in gh.node_patch(result['actions'][0])


def test_taint_is_added_and_removed_on_return():
    result = run([node('bad', alloc=7, taints=[{'key': 'other', 'effect': 'NoSchedule'}])], taint=True)
    after = result['actions'][0]['after']
    assert after['taints'] == [{'key': 'other', 'effect': 'NoSchedule'}, gh.TAINT]
    repaired = quarantined('bad', tainted=True, taints=after['taints'])
    back = run([repaired], policy='return')['actions'][0]
    assert back['after']['taints'] == [{'key': 'other', 'effect': 'NoSchedule'}]
    assert back['after']['unschedulable'] is False
    assert gh.node_patch(back)['spec'] == {'unschedulable': None, 'taints': [{'key': 'other', 'effect': 'NoSchedule'}]}


def test_return_only_repaired_nodes_we_quarantined():
    nodes = [quarantined('fixed'), quarantined('broken', alloc=7), node('foreign', unschedulable=True),
             quarantined('admin-cordoned', cordoned=False)]
    result = run(nodes, policy='return')
    assert [(a['node'], a['action']) for a in result['actions']] == [('admin-cordoned', 'return'), ('fixed', 'return')]
    fixed = result['actions'][1]
    assert fixed['after']['unschedulable'] is False
    assert json.loads(fixed['after']['annotation']) == {'state': 'returned', 'since': NOW_ISO, 'reason': 'r'}
    assert result['actions'][0]['after']['unschedulable'] is True     # someone else cordoned it: stays cordoned


def test_events_before_the_return_are_not_counted_again():
    rec = {'state': 'returned', 'since': '2026-11-28T11:55:00+00:00', 'reason': 'r'}
    returned = node('a', annotations={ANN_GPU_HEALTH: json.dumps(rec)})
    assert run([returned], [event('a', at='2026-11-28T11:50:00Z')])['unhealthy'] == []
    assert run([returned], [event('a', at='2026-11-28T11:58:00Z')])['unhealthy'] == ['a']


def test_max_nodes_refuses_a_fleet_wide_cause():
    with pytest.raises(ValueError, match='3 GPU nodes would be quarantined .* more than max_nodes 2'):
        run([node(n, alloc=0) for n in 'abc'], max_nodes=2)
    assert len(run([node(n, alloc=0) for n in 'abc'], max_nodes=3)['actions']) == 3


@pytest.mark.parametrize('kwargs, words', [
    ({'policy': 'heal'}, 'policy must be one of quarantine, return'),
    ({'window_minutes': -1}, 'window_minutes must be a whole number >= 0'),
    ({'event_reasons': ['']}, 'event_reasons must be a list'),
    ({'max_nodes': -2}, 'max_nodes must be a whole number >= 0'),
])
def test_bad_input_is_refused(kwargs, words):
    args = dict({'policy': 'quarantine'}, **kwargs)
    policy = args.pop('policy')
    with pytest.raises(ValueError, match=words):
        run([node('a')], policy=policy, **args)


def test_epoch_of_and_record_tolerate_garbage():
    assert gh.epoch_of('nonsense') is None and gh.epoch_of('1970-01-01T00:01:00.5Z') == 60
    assert gh.record(node('a', annotations={ANN_GPU_HEALTH: '{'})) == {}
    assert gh.record(node('a', annotations={ANN_GPU_HEALTH: '[1]'})) == {}


def answer(*series):
    """A Prometheus HTTP API answer to gh.xid_query(): (node, gpu, xid) per series."""
    return {'status': 'success', 'data': {'resultType': 'vector', 'result': [
        {'metric': {'Hostname': n, 'gpu': str(g), 'UUID': 'GPU-%s-%s' % (n, g)}, 'value': [1795887489.4, str(x)]}
        for n, g, x in series]}}


def test_the_xid_query_asks_the_last_xid_per_gpu_by_node_under_either_spelling_of_the_label():
    assert gh.xid_query() == ('max by (Hostname, gpu, UUID) (label_replace(DCGM_FI_DEV_XID_ERRORS, "Hostname", "$1", '
                              '"hostname", "(.+)"))')
    assert gh.xid_query('node').startswith('max by (node, gpu, UUID) (')


def test_xids_count_unless_0_or_an_application_xid_and_every_node_with_series_is_reporting():
    found, reporting = gh.xids_by_node(answer(('a', 0, 79), ('a', 1, 0), ('b', 0, 13), ('c', 3, 48), ('c', 1, 94)))
    assert found == {'a': [{'gpu': '0', 'uuid': 'GPU-a-0', 'xid': 79}],
                     'c': [{'gpu': '1', 'uuid': 'GPU-c-1', 'xid': 94}, {'gpu': '3', 'uuid': 'GPU-c-3', 'xid': 48}]}
    assert reporting == {'a', 'b', 'c'}
    assert gh.xids_by_node(answer(('b', 0, 13)), ignored_xids=[])[0] == {'b': [{'gpu': '0', 'uuid': 'GPU-b-0',
                                                                                'xid': 13}]}
    relabelled = {'status': 'success', 'data': {'resultType': 'vector', 'result': [
        {'metric': {'node': 'a', 'gpu': '0'}, 'value': [0, '79']}, {'metric': {'gpu': '1'}, 'value': [0, '79']}]}}
    assert gh.xids_by_node(relabelled, 'node') == ({'a': [{'gpu': '0', 'uuid': '', 'xid': 79}]}, {'a'})


@pytest.mark.parametrize('bad', [
    None, '<html>', {'status': 'error'}, {'status': 'success'},
    {'status': 'success', 'data': {'resultType': 'matrix', 'result': []}},
])
def test_an_answer_that_is_not_prometheus_is_refused(bad):
    with pytest.raises(ValueError):
        gh.xids_by_node(bad)


def test_a_gpu_reporting_an_xid_quarantines_its_node_alone_and_its_return_waits_until_it_is_clear():
    found, _reporting = gh.xids_by_node(answer(('bad', 2, 79), ('good', 0, 0)))
    result = run([node('good'), node('bad')], xids=found)
    assert result['unhealthy'] == ['bad']
    assert result['actions'][0]['reason'] == 'DCGM: GPU 2 (GPU-bad-2) last XID 79'
    assert [n['xids'] for n in result['nodes']] == [[{'gpu': '2', 'uuid': 'GPU-bad-2', 'xid': 79}], []]
    back = run([quarantined('bad')], policy='return', xids=found)
    assert back['actions'] == [], 'returned while DCGM still reports the XID'
    back = run([quarantined('bad')], policy='return', xids={})
    assert back['actions'][0]['reason'] == 'allocatable equals capacity again and no GPU reports an XID'
    assert run([quarantined('bad')], policy='return')['actions'][0]['reason'] == 'allocatable equals capacity again'


def test_ignored_xids_must_be_codes():
    assert gh.input_errors('quarantine', 60, ['XidCriticalError'], 5, [13, 'x']) == [
        "ignored_xids must be a list of XID codes (whole numbers > 0), not [13, 'x']"]
    assert gh.input_errors('quarantine', 60, ['XidCriticalError'], 5, []) == []
