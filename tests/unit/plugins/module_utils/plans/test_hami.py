# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.gpu.plugins.filter.hami import FilterModule
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.hami import (
    ANN_LABELS, ANN_RELEASE, hami_pods, install_plan, marked_releases, removal_plan)

FILTERS = FilterModule().filters()
LABEL = {'gpu': 'on'}


def node(name, release=None):
    annotations = {ANN_RELEASE: release} if release else {}
    return {'metadata': {'name': name, 'labels': {'gpu': 'on'} if release else {}, 'annotations': annotations}}


def pod(name, node_name=None, limits=None, requests=None, phase='Running', daemonset=False, init=False):
    container = {'name': 'c', 'resources': {'limits': limits or {}, 'requests': requests or {}}}
    spec = {'initContainers' if init else 'containers': [container]}
    if node_name:
        spec['nodeName'] = node_name
    meta = {'name': name, 'namespace': 'ml'}
    if daemonset:
        meta['ownerReferences'] = [{'kind': 'DaemonSet', 'name': 'ds'}]
    return {'metadata': meta, 'spec': spec, 'status': {'phase': phase}}


def policy(name='gpu-cluster-policy', enabled=False):
    return {'metadata': {'name': name}, 'spec': {'devicePlugin': {'enabled': enabled}}}


NODES = [node('a', 'kube-system/hami'), node('b', 'kube-system/hami'), node('c', 'other/hami'), node('d')]


def test_marked_releases_groups_nodes_by_release():
    assert marked_releases(NODES) == {'kube-system/hami': ['a', 'b'], 'other/hami': ['c']}
    assert marked_releases([]) == {}
    assert FILTERS['hami_releases'](NODES) == marked_releases(NODES)


def test_plan_unlabels_only_the_release_nodes_and_restores_the_device_plugin():
    plan = removal_plan(NODES, [policy()], [], 'kube-system', 'hami', LABEL)
    assert plan['nodes'] == ['a', 'b']
    assert plan['node_patch'] == {'labels': {'gpu': None}, 'annotations': {ANN_RELEASE: None, ANN_LABELS: None}}
    assert plan['policy'] == 'gpu-cluster-policy'
    assert plan['policy_patch'] == {'devicePlugin': {'enabled': True}}
    assert plan['errors'] == [] and plan['pods'] == []


def test_plan_leaves_an_enabled_device_plugin_and_no_policy_alone():
    assert removal_plan(NODES, [policy(enabled=True)], [], 'kube-system', 'hami', LABEL)['policy_patch'] == {}
    assert removal_plan(NODES, [policy()], [], 'kube-system', 'hami', LABEL,
                        restore_device_plugin=False)['policy_patch'] == {}
    plan = removal_plan(NODES, [], [], 'kube-system', 'hami', LABEL)
    assert plan['policy'] is None and plan['policy_patch'] == {} and plan['errors'] == []


def test_plan_for_a_release_with_no_marked_node_changes_no_node():
    plan = removal_plan(NODES, [policy(enabled=True)], [], 'kube-system', 'gone', LABEL)
    assert plan['nodes'] == [] and plan['errors'] == []


@pytest.mark.parametrize('the_pod,blocks', [
    (pod('mem', 'd', limits={'nvidia.com/gpumem': '3000'}), True),            # HAMi resource, any node
    (pod('pct', None, limits={'nvidia.com/gpumem-percentage': '50'}), True),  # even not scheduled
    (pod('cores', 'd', requests={'nvidia.com/gpucores': '30'}, init=True), True),
    (pod('gpu-on-hami', 'a', limits={'nvidia.com/gpu': '1'}), True),         # GPU on a HAMi node
    (pod('gpu-elsewhere', 'd', limits={'nvidia.com/gpu': '1'}), False),      # GPU, not a HAMi node
    (pod('cpu-on-hami', 'a', limits={'cpu': '1'}), False),
    (pod('done', 'a', limits={'nvidia.com/gpumem': '3000'}, phase='Succeeded'), False),
    (pod('failed', 'a', limits={'nvidia.com/gpu': '1'}, phase='Failed'), False),
    (pod('ds', 'a', limits={'nvidia.com/gpu': '1'}, daemonset=True), False),
])
def test_pods_using_hami(the_pod, blocks):
    assert bool(hami_pods([the_pod], {'a', 'b'})) is blocks
    plan = removal_plan(NODES, [policy()], [the_pod], 'kube-system', 'hami', LABEL)
    assert bool(plan['errors']) is blocks
    if blocks:
        assert 'ml/%s' % the_pod['metadata']['name'] in plan['errors'][0]
        assert 'hami_remove_with_pods: true' in plan['errors'][0]
        forced = removal_plan(NODES, [policy()], [the_pod], 'kube-system', 'hami', LABEL, with_pods=True)
        assert forced['errors'] == [] and forced['pods'] == plan['pods'] != []


def test_pod_report_names_the_node():
    assert hami_pods([pod('x', 'a', limits={'nvidia.com/gpu': '2'}), pod('y', None, limits={'nvidia.com/gpumem': '1'})],
                     {'a'}) == ['ml/x on a', 'ml/y (not scheduled)']


def test_several_cluster_policies_need_a_name():
    policies = [policy('one'), policy('two', enabled=True)]
    plan = removal_plan(NODES, policies, [], 'kube-system', 'hami', LABEL)
    assert plan['errors'] == ['more than one ClusterPolicy (found 2: one, two); the GPU operator honours only one: '
                              'set hami_cluster_policy_name to the one to use']
    named = removal_plan(NODES, policies, [], 'kube-system', 'hami', LABEL, policy_name='one')
    assert named['errors'] == [] and named['policy'] == 'one' and named['policy_patch']


@pytest.mark.parametrize('label', [{}, None, 'gpu=on'])
def test_node_label_must_name_labels(label):
    plan = removal_plan(NODES, [], [], 'kube-system', 'hami', label)
    assert any('hami_node_label must name at least one label' in e for e in plan['errors'])


def test_labels_recorded_on_the_nodes_are_removed_too():
    nodes = [node('a', 'kube-system/hami'), node('b', 'kube-system/hami'), node('c', 'other/hami')]
    nodes[0]['metadata']['annotations'][ANN_LABELS] = 'hami.io/node,gpu'
    nodes[2]['metadata']['annotations'][ANN_LABELS] = 'elsewhere'
    plan = removal_plan(nodes, [], [], 'kube-system', 'hami', {})
    assert plan['errors'] == []
    assert plan['node_patch']['labels'] == {'gpu': None, 'hami.io/node': None}
    assert removal_plan(nodes, [], [], 'kube-system', 'hami', {'x': 'y'})['node_patch']['labels'] == {
        'gpu': None, 'hami.io/node': None, 'x': None}


def test_filters_reject_wrong_input():
    with pytest.raises(AnsibleFilterError):
        FILTERS['hami_removal_plan']({}, [], [], 'ns', 'hami', LABEL)
    with pytest.raises(AnsibleFilterError):
        FILTERS['hami_releases']('nodes')
    assert FILTERS['hami_removal_plan'](NODES, [policy()], [], 'kube-system', 'hami', LABEL)['nodes'] == ['a', 'b']


# --- install ------------------------------------------------------------------------------------

def settings(**extra):
    out = {'chart_ref': 'charts/hami', 'nodes': [], 'node_selector': 'nvidia.com/gpu.present=true',
           'node_label': {'gpu': 'on'}, 'device_split_count': 10, 'device_memory_scaling': 1,
           'device_core_scaling': 1, 'cluster_policy_name': '', 'disable_operator_device_plugin': False}
    out.update(extra)
    return out


def read(policies=(), nodes=('a', 'b')):
    return {'cluster_policies': list(policies), 'node_names': list(nodes)}


def test_install_on_the_selected_nodes_with_the_device_plugin_off():
    plan = install_plan(settings(), read([policy()]))
    assert plan == {'errors': [], 'nodes': ['a', 'b'], 'policy': 'gpu-cluster-policy', 'disable_device_plugin': False}
    assert install_plan(settings(nodes=['b']), read())['nodes'] == ['b']


def test_install_without_the_gpu_operator():
    assert install_plan(settings(), read([])) == {'errors': [], 'nodes': ['a', 'b'], 'policy': None,
                                                  'disable_device_plugin': False}


def test_operator_device_plugin_on_refused_unless_the_role_may_switch_it_off():
    plan = install_plan(settings(), read([policy(enabled=True)]))
    assert len(plan['errors']) == 1
    assert "device plugin is still enabled in ClusterPolicy gpu-cluster-policy" in plan['errors'][0]
    assert 'hami_disable_operator_device_plugin: true' in plan['errors'][0]
    unset = {'metadata': {'name': 'p'}, 'spec': {}}
    assert install_plan(settings(), read([unset]))['errors']
    plan = install_plan(settings(disable_operator_device_plugin=True), read([policy(enabled=True)]))
    assert plan['errors'] == [] and plan['disable_device_plugin'] is True


def test_several_cluster_policies_at_install():
    plan = install_plan(settings(), read([policy('one'), policy('two')]))
    assert plan['errors'] == ['more than one ClusterPolicy (found 2: one, two); the GPU operator honours only one: '
                              'set hami_cluster_policy_name to the one to use']
    plan = install_plan(settings(cluster_policy_name='two'), read([policy('one'), policy('two')]))
    assert plan['errors'] == [] and plan['policy'] == 'two'


@pytest.mark.parametrize('extra, nodes, fragment', [
    ({'chart_ref': ''}, ('a',), 'hami_chart_ref is empty'),
    ({'nodes': ['a', 'nope-1']}, ('a',), 'hami_nodes: node(s) not found: nope-1'),
    ({}, (), 'no node matches hami_node_selector nvidia.com/gpu.present=true'),
    ({'device_split_count': 0}, ('a',), 'hami_device_split_count must be at least 1'),
    ({'device_split_count': 'many'}, ('a',), 'hami_device_split_count must be at least 1'),
    ({'device_memory_scaling': 0}, ('a',), 'hami_device_memory_scaling must be greater than 0'),
    ({'device_core_scaling': -1.5}, ('a',), 'hami_device_core_scaling must be greater than 0'),
    ({'node_label': {}}, ('a',), 'hami_node_label must name at least one label'),
    ({'node_label': 'gpu=on'}, ('a',), 'hami_node_label must be a mapping'),
    ({'node_label': {'-bad': 'on'}}, ('a',), 'hami_node_label: invalid label key(s): -bad'),
    ({'node_label': {'Example.com/gpu': 'on'}}, ('a',), 'invalid label key(s): Example.com/gpu'),
    ({'node_label': {'gpu': 'o n'}}, ('a',), 'hami_node_label: invalid label value(s)'),
    ({'node_label': {'gpu': True}}, ('a',), 'hami_node_label values must be strings'),
])
def test_install_input_errors(extra, nodes, fragment):
    errors = install_plan(settings(**extra), read([policy()], nodes))['errors']
    assert len(errors) == 1 and fragment in errors[0], errors


def test_install_filter():
    assert FILTERS['hami_install_plan'](settings(), read([policy()]))['errors'] == []
    with pytest.raises(AnsibleFilterError):
        FILTERS['hami_install_plan']([], {})
