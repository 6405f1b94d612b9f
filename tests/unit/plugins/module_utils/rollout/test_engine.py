# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The rollout engine against an in-memory API: assignments and selectors, batches, drain with a
blocking PodDisruptionBudget, resume from annotations, API outages, check mode, request counting."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

pytest.importorskip('kubernetes')

from ansible_collections.gpuops.gpu.plugins.module_utils.common.errors import RolloutFailed  # noqa: E402
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout import node as rn  # noqa: E402
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.inputs import check_inputs, resolve_assignments  # noqa: E402
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.rollout.fake_api import LABEL, FakeApi, api_error, gpu_pod, node  # noqa: E402
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.rollout.fake_api import rollout


def labelled(name, **labels):
    return node(name, labels=labels)


NODES = dict((n['metadata']['name'], n) for n in [
    labelled('a1', pool='train'), labelled('a2', pool='train'), labelled('b1', pool='infer', zone='z1'),
    labelled('t1')])


class TestResolveAssignments(object):
    def test_names_and_selectors(self):
        out, errors = resolve_assignments([{'label_selector': 'pool=train', 'config': 'seven'},
                                           {'nodes': ['b1'], 'config': 'balanced'}], NODES, 'config')
        assert errors == [] and out == {'a1': 'seven', 'a2': 'seven', 'b1': 'balanced'}

    def test_dict_selector(self):
        out, errors = resolve_assignments([{'selector': {'pool': 'infer', 'zone': 'z1'}, 'config': 'x'}], NODES, 'config')
        assert out == {'b1': 'x'} and errors == []

    def test_conflict_is_an_error(self):
        _out, errors = resolve_assignments([{'label_selector': 'pool=train', 'config': 'seven'},
                                            {'nodes': ['a1'], 'config': 'balanced'}], NODES, 'config')
        assert errors == ["node a1 is assigned both 'seven' and 'balanced'"]

    def test_missing_node_and_empty_selector(self):
        _out, errors = resolve_assignments([{'nodes': ['zz'], 'config': 'a'},
                                            {'label_selector': 'pool=none', 'config': 'a'},
                                            {'config': 'a'}, {'nodes': ['a1']}], NODES, 'config')
        assert errors == ['assignments[0]: node(s) not found: zz',
                          "assignments[1]: label selector 'pool=none' matches no node",
                          'assignments[2]: give nodes or a label_selector/selector',
                          'assignments[3]: config is required']

    @pytest.mark.parametrize('selector,expected', [
        ('pool=train', ['a1', 'a2']), ('pool==train', ['a1', 'a2']), ('pool!=train', ['b1', 't1']),
        ('pool', ['a1', 'a2', 'b1']), ('!pool', ['t1']), ('pool in (infer,train)', ['a1', 'a2', 'b1']),
        ('pool=train,zone', []), ('zone,pool=infer', ['b1']),
        # the cases the engine's own parser used to decide differently from the apiserver: notin also
        # holds without the label, and blanks around operators are allowed
        ('pool notin (train)', ['b1', 't1']), ('pool  notin(train,infer)', ['t1']), ('pool = train', ['a1', 'a2']),
    ])
    def test_selectors_are_kubernetes_label_selectors(self, selector, expected):
        out, errors = resolve_assignments([{'label_selector': selector, 'config': 'x'}], NODES, 'config')
        assert sorted(out) == expected
        assert errors == ([] if expected else ["assignments[0]: label selector '%s' matches no node" % selector])

    def test_bad_selector_is_reported_with_its_assignment(self):
        _out, errors = resolve_assignments([{'label_selector': 'a=b=c', 'config': 'x'}], NODES, 'config')
        assert len(errors) == 1 and errors[0].startswith('assignments[0]: ') and "'a=b=c'" in errors[0]


def test_check_inputs_collects_max_unavailable():
    with pytest.raises(Exception, match=r'nothing was changed; fix these first: bad \| max_unavailable'):
        check_inputs(['bad'], {'max_unavailable': '0%'}, 3)
    check_inputs([], {'max_unavailable': 1}, 0)


def test_batches_cordon_evict_label_uncordon():
    api = FakeApi([node('n1'), node('n2'), node('n3')], pods=[gpu_pod('train-1', 'n1')])
    conn, engine, nodes = rollout(api, max_unavailable=2)
    result = engine.run({'n1': 'v2', 'n2': 'v2', 'n3': 'v2'}, nodes)
    assert result['batches'] == [['n1', 'n2'], ['n3']] and result['changed'] is True
    assert [(s['node'], s['phase'], s['evicted']) for s in result['nodes']] == [
        ('n1', 'done', ['ml/train-1']), ('n2', 'done', []), ('n3', 'done', [])]
    for name in ('n1', 'n2', 'n3'):
        stored = api.nodes[name]
        assert stored['metadata']['labels'][LABEL] == 'v2'
        assert not stored['spec'].get('unschedulable')
        assert not set(stored['metadata']['annotations']) & set(rn.MARKERS)
    assert api.evicted == ['ml/train-1']
    assert ('n1', 'GpuopsEvict') in api.events and ('n3', 'GpuopsDone') in api.events
    assert conn.requests >= 1 + 3 * 4 and engine.warnings == []


def test_nodes_at_target_are_not_touched_and_check_mode_writes_nothing():
    api = FakeApi([node('n1', labels={LABEL: 'v2'}), node('n2')], pods=[gpu_pod('p', 'n2')])
    conn, engine, nodes = rollout(api, check_mode=True)
    result = engine.run({'n1': 'v2', 'n2': 'v2'}, nodes)
    assert result['batches'] == [['n2']]
    assert result['plan'] == [{'batch': 1, 'nodes': [{'node': 'n2', 'from': None, 'to': 'v2', 'resume': False,
                                                      'pods_to_evict': ['ml/p'], 'blocking_pdbs': []}]}]
    assert api.patches == [] and api.evicted == []


def test_pdb_blocked_eviction_fails_the_node_and_stops_the_rollout():
    api = FakeApi([node('n1'), node('n2')], pods=[gpu_pod('guarded', 'n1')], blocked=['guarded'])
    _conn, engine, nodes = rollout(api, drain_timeout=0)
    with pytest.raises(RolloutFailed, match=r'eviction of ml/guarded blocked by a PodDisruptionBudget') as info:
        engine.run({'n1': 'v2', 'n2': 'v2'}, nodes)
    assert info.value.result['untouched'] == ['n2']
    stored = api.nodes['n1']
    assert stored['spec']['unschedulable'] is True
    assert stored['metadata']['annotations'][rn.ANN_PHASE] == 'failed'
    assert LABEL not in stored['metadata']['labels'] and api.nodes['n2']['spec'] == {}


def test_force_deletes_past_the_pdb_with_a_warning():
    api = FakeApi([node('n1')], pods=[gpu_pod('guarded', 'n1')], blocked=['guarded'])
    _conn, engine, nodes = rollout(api, drain_timeout=0, force=True)
    result = engine.run({'n1': 'v2'}, nodes)
    assert result['nodes'][0]['phase'] == 'done' and api.deleted == ['ml/guarded']
    assert engine.warnings == ['force: deleted ml/guarded on n1 past its PodDisruptionBudget']


def test_a_killed_run_is_resumed_and_only_a_node_it_cordoned_is_uncordoned():
    left = {rn.ANN_TARGET: LABEL + '=v2', rn.ANN_PHASE: 'labelled', rn.ANN_CORDONED: 'true'}
    api = FakeApi([node('n1', labels={LABEL: 'v2'}, annotations=left, unschedulable=True),
                   node('n2', labels={LABEL: 'v2'}, unschedulable=True)])
    _conn, engine, nodes = rollout(api)
    result = engine.run({}, nodes)  # not assigned any more: still finished
    assert result['batches'] == [['n1']] and result['nodes'][0]['phase'] == 'done'
    assert api.nodes['n1']['spec']['unschedulable'] is False
    assert api.nodes['n2']['spec']['unschedulable'] is True


def test_an_api_outage_is_waited_out():
    api = FakeApi([node('n1')])
    api.failures['read_node'] = [api_error(503, 'Service Unavailable'), OSError('connection refused')]
    api.failures['patch_node'] = [api_error(409, 'Conflict')]
    _conn, engine, nodes = rollout(api)
    result = engine.run({'n1': 'v2'}, nodes)
    assert result['nodes'][0]['phase'] == 'done' and api.failures == {
        'read_node': [], 'patch_node': []}


def test_an_outage_longer_than_api_timeout_stops_with_the_state_kept():
    api = FakeApi([node('n1')])
    api.failures['read_node'] = [api_error(503) for _i in range(1000)]
    _conn, engine, nodes = rollout(api, api_timeout=0)
    with pytest.raises(RolloutFailed, match='did not answer for 0s') as info:
        engine.run({'n1': 'v2'}, nodes)
    assert [s['phase'] for s in info.value.result['nodes']] == ['cordon']


def test_a_forbidden_write_fails_the_node():
    api = FakeApi([node('n1')])
    api.failures['patch_node'] = [api_error(403, 'Forbidden')]
    _conn, engine, nodes = rollout(api)
    with pytest.raises(RolloutFailed, match=r'node n1: patch node failed: HTTP 403 Forbidden \(during cordon\)'):
        engine.run({'n1': 'v2'}, nodes)


class _Counting(FakeApi):
    """Records how many nodes this rollout has cordoned at each moment, and the order nodes are cordoned in."""

    def __init__(self, *args, **kwargs):
        FakeApi.__init__(self, *args, **kwargs)
        self.most_down = 0
        self.cordoned = []

    def patch_node(self, name, body, **kwargs):
        resp = FakeApi.patch_node(self, name, body, **kwargs)
        if (body.get('spec') or {}).get('unschedulable') is True:
            self.cordoned.append(name)
        self.most_down = max(self.most_down, sum(1 for n in self.nodes.values() if n['spec'].get('unschedulable')))
        return resp


def test_rolling_window_changes_every_node_never_more_than_max_unavailable_at_once():
    api = _Counting([node('n%d' % i) for i in range(1, 8)])
    conn, engine, nodes = rollout(api, max_unavailable=2, window='rolling')
    result = engine.run(dict(('n%d' % i, 'v2') for i in range(1, 8)), nodes)
    assert result['window'] == 2 and result['batches'] == [['n1', 'n2'], ['n3', 'n4'], ['n5', 'n6'], ['n7']]
    assert [s['node'] for s in result['nodes']] == ['n%d' % i for i in range(1, 8)]
    assert all(s['phase'] == 'done' for s in result['nodes']) and result['changed'] is True
    assert api.cordoned == ['n%d' % i for i in range(1, 8)] and api.most_down == 2
    assert all(not n['spec'].get('unschedulable') and n['metadata']['labels'][LABEL] == 'v2'
               for n in api.nodes.values())


def test_rolling_window_starts_no_node_after_a_failure_and_finishes_those_started():
    api = _Counting([node('n1'), node('n2'), node('n3'), node('n4')], pods=[gpu_pod('guarded', 'n1')],
                    blocked=['guarded'])
    _conn, engine, nodes = rollout(api, max_unavailable=2, window='rolling', drain_timeout=0)
    with pytest.raises(RolloutFailed, match=r'No node was started after the failure') as info:
        engine.run({'n1': 'v2', 'n2': 'v2', 'n3': 'v2', 'n4': 'v2'}, nodes)
    result = info.value.result
    assert [(s['node'], s['phase']) for s in result['nodes']] == [('n1', 'failed'), ('n2', 'done')]
    assert result['untouched'] == ['n3', 'n4'] and api.cordoned == ['n1', 'n2']
    assert api.nodes['n1']['spec']['unschedulable'] is True and api.nodes['n3']['spec'] == {}


def test_rolling_window_counts_nodes_already_cordoned_as_down():
    api = _Counting([node('n1', unschedulable=True), node('n2'), node('n3'),
                     node('x', labels={LABEL: 'v1'}, unschedulable=True)])
    _conn, engine, nodes = rollout(api, max_unavailable=2, window='rolling')
    result = engine.run({'n1': 'v2', 'n2': 'v2', 'n3': 'v2', 'x': 'v1'}, nodes)
    # x (cordoned, not changing) uses one of the two: one node at a time; n1 was down already and goes first
    assert result['window'] == 1 and [s['node'] for s in result['nodes']] == ['n1', 'n2', 'n3']
    assert api.most_down == 3 and api.nodes['n1']['spec']['unschedulable'] is True
