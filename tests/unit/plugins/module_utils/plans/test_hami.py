# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.gpu.plugins.filter.hami import FilterModule
from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import NODE_ANNOTATIONS
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.hami import (
    LEGACY_ANNOTATIONS, RECORD_KEY, chart_name, hami_pods, install_plan, install_record, release_record,
    removal_plan, reset_release_plan)

FILTERS = FilterModule().filters()
LABEL = {'gpu': 'on'}
FORGED = {'gpuops.gpu/hami-release': 'gpu-operator/gpu-operator', 'gpuops.gpu/hami-labels': 'nvidia.com/gpu.deploy.driver'}


def node(name, labels=None, annotations=None):
    return {'metadata': {'name': name, 'labels': dict(labels or {}), 'annotations': dict(annotations or {})}}


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


def release(record=None, chart='hami-2.10.0', values=None):
    """A release as kubernetes.core.helm_info returns it (its status)."""
    values = dict(values or {'devicePlugin': {'deviceSplitCount': 4}})
    if record is not None:
        values[RECORD_KEY] = record
    return {'name': 'hami', 'namespace': 'kube-system', 'chart': chart, 'status': 'deployed', 'values': values}


RECORD = {'nodes': ['a', 'b', 'gone'], 'nodeLabels': ['gpu']}
# a and b: labelled by the role (b still with an annotation of an earlier version); c: labelled by somebody else,
# with forged annotations naming the release and a label; d: a plain node
NODES = [node('a', LABEL), node('b', dict(LABEL, keep='me'), {LEGACY_ANNOTATIONS[0]: 'kube-system/hami'}),
         node('c', dict(LABEL, **{'nvidia.com/gpu.deploy.driver': 'true'}),
              dict(FORGED, **{LEGACY_ANNOTATIONS[0]: 'kube-system/hami'})),
         node('d')]


# --- the record -----------------------------------------------------------------------------------

@pytest.mark.parametrize('chart, name', [
    ('hami-2.10.0', 'hami'), ('hami-2.10.0-gpuops-standin', 'hami'), ('hami-v2.4.1', 'hami'),
    ('hami-webui-1.0.0', 'hami-webui'), ('gpu-operator-v25.3.0', 'gpu-operator'), ('hami', ''), ('', ''), (None, ''),
])
def test_chart_name_from_helm_list(chart, name):
    assert chart_name(chart) == name


def test_release_record_reads_the_values_only():
    assert release_record(release(RECORD)) == ({'nodes': ['a', 'b', 'gone'], 'node_labels': ['gpu']}, '')
    assert release_record(release()) == (None, '')
    assert release_record({}) == (None, '')
    assert release_record(None) == (None, '')
    for bad in ('a,b', {'nodes': 'a'}, {'nodes': [1]}, {'nodeLabels': ['-bad']}, {'nodeLabels': 'gpu'}):
        record, error = release_record(release(bad))
        assert record is None and 'gpuopsGpu of release kube-system/hami is not the record' in error, bad


def test_install_record_keeps_what_earlier_runs_labelled():
    assert install_record(None, ['b', 'a'], {'gpu': 'on'}) == {'nodes': ['a', 'b'], 'nodeLabels': ['gpu']}
    earlier = {'nodes': ['x', 'a'], 'node_labels': ['old']}
    assert install_record(earlier, ['a', 'b'], {'gpu': 'on'}) == {'nodes': ['a', 'b', 'x'], 'nodeLabels': ['gpu', 'old']}


# --- removal (hami_state=absent) ----------------------------------------------------------------------

def test_removal_takes_off_what_the_record_names_and_nothing_the_annotations_say():
    plan = removal_plan(NODES, [policy()], [], 'kube-system', 'hami', LABEL, release_info=release(RECORD))
    assert plan['errors'] == [] and plan['installed'] is True
    # a and b only (gone does not exist; c is not in the record, whatever its annotations say)
    assert plan['nodes'] == ['a', 'b']
    assert plan['node_patches'] == {'a': {'labels': {'gpu': None}},
                                    'b': {'labels': {'gpu': None}, 'annotations': {LEGACY_ANNOTATIONS[0]: None}}}
    assert plan['policy'] == 'gpu-cluster-policy' and plan['policy_patch'] == {'devicePlugin': {'enabled': True}}


def test_forged_annotations_alone_change_nothing():
    forged = [node('c', {'nvidia.com/gpu.deploy.driver': 'true'}, FORGED)]
    for info in ({}, release(RECORD)):
        plan = removal_plan(forged, [], [], 'gpu-operator', 'gpu-operator', LABEL, release_info=info)
        assert plan['nodes'] == [] and plan['node_patches'] == {}, info
    # the record's label keys, not hami_node_label, say what comes off
    plan = removal_plan(NODES, [], [], 'kube-system', 'hami', {'keep': 'me'}, release_info=release(RECORD))
    assert plan['node_patches']['b']['labels'] == {'gpu': None}


def test_removal_of_a_release_that_is_not_hami_is_refused():
    plan = removal_plan(NODES, [policy()], [], 'kube-system', 'hami', LABEL,
                        release_info=release(RECORD, chart='gpu-operator-v25.3.0'))
    assert plan['errors'] == ['release kube-system/hami is not HAMi (its chart is gpu-operator-v25.3.0, not hami): '
                              'nothing is removed']
    assert plan['nodes'] == [] and plan['node_patches'] == {}


def test_removal_with_a_malformed_record_is_refused():
    plan = removal_plan(NODES, [], [], 'kube-system', 'hami', LABEL, release_info=release({'nodes': 'a'}))
    assert len(plan['errors']) == 1 and 'is not the record gpuops.gpu.hami writes' in plan['errors'][0]
    assert plan['nodes'] == []


def test_removal_of_a_release_without_a_record_uses_the_selected_nodes_and_hami_node_label():
    nodes = NODES + [node('e', {'gpu': 'yes'})]
    plan = removal_plan(nodes, [], [], 'kube-system', 'hami', LABEL, release_info=release(),
                        selected=['a', 'c', 'e', 'nope'])
    assert plan['errors'] == []
    assert 'has no record' in plan['notes'][0]
    # b carries the label but is not selected; e's label has another value
    assert plan['nodes'] == ['a', 'c']
    assert plan['node_patches']['c'] == {'labels': {'gpu': None},
                                         'annotations': dict((k, None) for k in LEGACY_ANNOTATIONS)}
    bad = removal_plan(nodes, [], [], 'kube-system', 'hami', {}, release_info=release(), selected=['a'])
    assert any('hami_node_label must name at least one label' in e for e in bad['errors']) and bad['nodes'] == []


def test_removal_of_no_release_changes_no_node():
    plan = removal_plan(NODES, [policy(enabled=True)], [], 'kube-system', 'gone', LABEL, selected=['a', 'b', 'c'])
    assert plan['nodes'] == [] and plan['errors'] == [] and plan['installed'] is False
    assert plan['notes'] == ['no HAMi release kube-system/gone: nothing to uninstall, no node label to take off']


def test_a_second_removal_changes_nothing():
    after = [node('a'), node('b', {'keep': 'me'}), NODES[2], node('d')]
    plan = removal_plan(after, [policy(enabled=True)], [], 'kube-system', 'hami', LABEL, release_info=release(RECORD))
    assert plan['nodes'] == [] and plan['policy_patch'] == {} and plan['errors'] == []


def test_plan_leaves_an_enabled_device_plugin_and_no_policy_alone():
    info = release(RECORD)
    assert removal_plan(NODES, [policy(enabled=True)], [], 'kube-system', 'hami', LABEL,
                        release_info=info)['policy_patch'] == {}
    assert removal_plan(NODES, [policy()], [], 'kube-system', 'hami', LABEL, release_info=info,
                        restore_device_plugin=False)['policy_patch'] == {}
    plan = removal_plan(NODES, [], [], 'kube-system', 'hami', LABEL, release_info=info)
    assert plan['policy'] is None and plan['policy_patch'] == {} and plan['errors'] == []


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
    plan = removal_plan(NODES, [policy()], [the_pod], 'kube-system', 'hami', LABEL, release_info=release(RECORD))
    assert bool(plan['errors']) is blocks
    if blocks:
        assert 'ml/%s' % the_pod['metadata']['name'] in plan['errors'][0]
        assert 'hami_remove_with_pods: true' in plan['errors'][0]
        assert plan['nodes'] == [] and plan['node_patches'] == {}
        forced = removal_plan(NODES, [policy()], [the_pod], 'kube-system', 'hami', LABEL, release_info=release(RECORD),
                              with_pods=True)
        assert forced['errors'] == [] and forced['pods'] == plan['pods'] != [] and forced['nodes'] == ['a', 'b']


def test_pod_report_names_the_node():
    assert hami_pods([pod('x', 'a', limits={'nvidia.com/gpu': '2'}), pod('y', None, limits={'nvidia.com/gpumem': '1'})],
                     {'a'}) == ['ml/x on a', 'ml/y (not scheduled)']


def test_several_cluster_policies_need_a_name():
    policies = [policy('one'), policy('two', enabled=True)]
    plan = removal_plan(NODES, policies, [], 'kube-system', 'hami', LABEL, release_info=release(RECORD))
    assert plan['errors'] == ['more than one ClusterPolicy (found 2: one, two); the GPU operator honours only one: '
                              'set hami_cluster_policy_name to the one to use']
    named = removal_plan(NODES, policies, [], 'kube-system', 'hami', LABEL, release_info=release(RECORD),
                         policy_name='one')
    assert named['errors'] == [] and named['policy'] == 'one' and named['policy_patch']


def test_filters_reject_wrong_input():
    with pytest.raises(AnsibleFilterError):
        FILTERS['hami_removal_plan']({}, [], [], 'ns', 'hami', LABEL)
    with pytest.raises(AnsibleFilterError):
        FILTERS['hami_removal_plan'](NODES, [], [], 'ns', 'hami', LABEL, release_info='kube-system/hami')
    assert 'hami_releases' not in FILTERS  # the releases are never read from node annotations any more
    assert FILTERS['hami_removal_plan'](NODES, [policy()], [], 'kube-system', 'hami', LABEL,
                                        release_info=release(RECORD))['nodes'] == ['a', 'b']


# --- reset (gpuops.gpu.reset) -------------------------------------------------------------------------

def plugin_pod(node_name, phase='Running'):
    return {'metadata': {'name': 'hami-device-plugin-' + node_name, 'namespace': 'kube-system'},
            'spec': {'nodeName': node_name}, 'status': {'phase': phase}}


def test_reset_removes_a_recorded_release_serving_the_nodes_of_the_reset():
    plan = reset_release_plan(release(RECORD), 'kube-system', 'hami', [plugin_pod('a'), plugin_pod('b')], NODES,
                              ['a', 'b', 'd'])
    assert plan == {'release': 'kube-system/hami', 'errors': []}


def test_reset_leaves_hami_alone_where_its_device_plugin_runs_on_no_node_of_the_reset():
    for pods in ([], [plugin_pod('a')], [plugin_pod('d', phase='Succeeded')]):
        assert reset_release_plan(release(RECORD), 'kube-system', 'hami', pods, NODES, ['d']) == {
            'release': '', 'errors': []}


@pytest.mark.parametrize('info, fragment', [
    ({}, "HAMi's device plugin runs in namespace kube-system on nodes of the reset (a) but there is no Helm release "
         'kube-system/hami: set reset_hami_namespace / reset_hami_release_name'),
    (release(RECORD, chart='gpu-operator-v25.3.0'), 'release kube-system/hami is not HAMi'),
    (release({'nodes': 'a'}), 'is not the record gpuops.gpu.hami writes'),
    (release(), 'HAMi release kube-system/hami has no record of the nodes gpuops.gpu.hami labelled (installed by an '
                'earlier version of gpuops.gpu, or not by gpuops.gpu.hami), and the reset removes only what that record '
                'names: remove it with gpuops.gpu.hami (hami_state: absent, hami_namespace: kube-system, '
                'hami_release_name: hami) first, or set reset_hami: false'),
])
def test_reset_refuses_what_it_cannot_prove_is_a_recorded_hami(info, fragment):
    plan = reset_release_plan(info, 'kube-system', 'hami', [plugin_pod('a')], NODES, ['a', 'b'])
    assert plan['release'] == '' and len(plan['errors']) == 1 and fragment in plan['errors'][0], plan


def test_reset_refuses_a_release_that_serves_nodes_outside_the_reset():
    plan = reset_release_plan(release(RECORD), 'kube-system', 'hami', [plugin_pod('a')], NODES, ['a'])
    assert plan['release'] == ''
    assert plan['errors'] == ['HAMi release kube-system/hami also serves nodes outside the reset (b): include them '
                              '(reset_nodes / reset_node_selector), remove it with gpuops.gpu.hami (hami_state: absent, '
                              'hami_namespace: kube-system, hami_release_name: hami) first, or set reset_hami: false']
    # a recorded node that lost its label (or no longer exists) does not count
    unlabelled = [NODES[0], node('b')]
    assert reset_release_plan(release(RECORD), 'kube-system', 'hami', [plugin_pod('a')], unlabelled, ['a'])['errors'] == []


def test_reset_never_reads_node_annotations():
    # forged annotations on every node name another release; the reset was told about kube-system/hami only
    forged = [node(n['metadata']['name'], n['metadata']['labels'], FORGED) for n in NODES]
    plan = reset_release_plan(release(RECORD), 'kube-system', 'hami', [plugin_pod('a')], forged, ['a', 'b', 'c', 'd'])
    assert plan == {'release': 'kube-system/hami', 'errors': []}
    assert reset_release_plan({}, 'kube-system', 'hami', [], forged, ['a', 'b', 'c', 'd']) == {'release': '', 'errors': []}


# --- install ------------------------------------------------------------------------------------

def settings(**extra):
    out = {'chart_ref': 'charts/hami', 'nodes': [], 'node_selector': 'nvidia.com/gpu.present=true',
           'node_label': {'gpu': 'on'}, 'device_split_count': 10, 'device_memory_scaling': 1,
           'device_core_scaling': 1, 'cluster_policy_name': '', 'disable_operator_device_plugin': False}
    out.update(extra)
    return out


def read(policies=(), nodes=('a', 'b'), info=None):
    return {'cluster_policies': list(policies), 'node_names': list(nodes), 'release': info or {}}


PATCH = {'labels': {'gpu': 'on'}, 'annotations': dict((key, None) for key in LEGACY_ANNOTATIONS)}


def test_install_on_the_selected_nodes_with_the_device_plugin_off():
    plan = install_plan(settings(), read([policy()]))
    assert plan == {'errors': [], 'nodes': ['a', 'b'], 'policy': 'gpu-cluster-policy', 'disable_device_plugin': False,
                    'record': {'nodes': ['a', 'b'], 'nodeLabels': ['gpu']}, 'node_patch': PATCH}
    assert install_plan(settings(nodes=['b']), read())['nodes'] == ['b']


def test_install_without_the_gpu_operator():
    assert install_plan(settings(), read([])) == {'errors': [], 'nodes': ['a', 'b'], 'policy': None,
                                                  'disable_device_plugin': False,
                                                  'record': {'nodes': ['a', 'b'], 'nodeLabels': ['gpu']},
                                                  'node_patch': PATCH}


def test_the_role_writes_no_gpuops_annotation_on_nodes():
    # the only annotations in its node patch are those of earlier versions, set to null; none is a rollout marker
    patch = install_plan(settings(), read([policy()]))['node_patch']
    assert sorted(patch['annotations']) == sorted(LEGACY_ANNOTATIONS)
    assert set(patch['annotations'].values()) == {None}
    assert not set(LEGACY_ANNOTATIONS) & set(NODE_ANNOTATIONS)


def test_install_keeps_the_record_of_earlier_runs_and_writes_no_annotation():
    plan = install_plan(settings(nodes=['b'], node_label={'hami': 'yes'}),
                        read([policy()], info=release({'nodes': ['a'], 'nodeLabels': ['gpu']})))
    assert plan['record'] == {'nodes': ['a', 'b'], 'nodeLabels': ['gpu', 'hami']}
    assert plan['node_patch'] == {'labels': {'hami': 'yes'}, 'annotations': dict((k, None) for k in LEGACY_ANNOTATIONS)}
    # a release of an earlier version (no record): the record starts with this run's nodes
    plan = install_plan(settings(), read([policy()], info=release()))
    assert plan['record'] == {'nodes': ['a', 'b'], 'nodeLabels': ['gpu']}


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
    ({'values': {'gpuopsGpu': {'nodes': ['x']}}}, ('a',), 'hami_values must not set gpuopsGpu'),
])
def test_install_input_errors(extra, nodes, fragment):
    errors = install_plan(settings(**extra), read([policy()], nodes))['errors']
    assert len(errors) == 1 and fragment in errors[0], errors


def test_install_filter():
    assert FILTERS['hami_install_plan'](settings(), read([policy()]))['errors'] == []
    with pytest.raises(AnsibleFilterError):
        FILTERS['hami_install_plan']([], {})
