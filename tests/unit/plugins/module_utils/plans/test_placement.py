# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.plans.placement import (
    OWNED_ANNOTATION, daemonsets_not_ready_for, identity, owned_annotation_value, owned_taints, placement_plan,
    placement_tolerations, plan_taints, remove_spec_errors)

GPU_TAINT = {'key': 'nvidia.com/gpu', 'effect': 'NoSchedule'}
DEDICATED = {'key': 'dedicated', 'value': 'gpu', 'effect': 'NoExecute'}
FOREIGN = {'key': 'node.kubernetes.io/unreachable', 'effect': 'NoExecute', 'timeAdded': '2026-01-01T00:00:00Z'}
GPU_TOL = {'key': 'nvidia.com/gpu', 'operator': 'Exists', 'effect': 'NoSchedule'}
DEDICATED_TOL = {'key': 'dedicated', 'operator': 'Exists', 'effect': 'NoExecute'}


def test_owned_annotation_round_trip():
    assert owned_taints({OWNED_ANNOTATION: owned_annotation_value(['b:NoSchedule', 'a:NoExecute'])}) == \
        ['a:NoExecute', 'b:NoSchedule']
    assert owned_annotation_value([]) is None
    assert owned_taints({OWNED_ANNOTATION: 'garbage'}) == [] and owned_taints({OWNED_ANNOTATION: '{}'}) == []
    assert owned_taints(None) == []


def test_add_to_a_node_with_foreign_taints():
    result = plan_taints([FOREIGN], [], [GPU_TAINT, DEDICATED])
    assert result['taints'] == [FOREIGN, GPU_TAINT, DEDICATED]
    assert result['added'] == ['nvidia.com/gpu:NoSchedule', 'dedicated:NoExecute']
    assert result['owned'] == ['dedicated:NoExecute', 'nvidia.com/gpu:NoSchedule'] and result['changed']


def test_second_run_is_a_no_op():
    first = plan_taints([FOREIGN], [], [GPU_TAINT, DEDICATED])
    again = plan_taints(first['taints'], first['owned'], [GPU_TAINT, DEDICATED])
    assert not again['changed'] and again['taints'] == first['taints']


def test_owned_taint_value_update_and_shrink():
    current = [FOREIGN, {'key': 'dedicated', 'value': 'old', 'effect': 'NoExecute'}, GPU_TAINT]
    result = plan_taints(current, ['dedicated:NoExecute', 'nvidia.com/gpu:NoSchedule'], [DEDICATED])
    assert result['updated'] == ['dedicated:NoExecute'] and result['removed'] == ['nvidia.com/gpu:NoSchedule']
    assert result['taints'] == [FOREIGN, DEDICATED] and result['owned'] == ['dedicated:NoExecute']


def test_foreign_same_value_is_adopted_other_value_conflicts():
    adopted = plan_taints([dict(GPU_TAINT)], [], [GPU_TAINT])
    assert adopted['adopted'] == ['nvidia.com/gpu:NoSchedule'] and adopted['changed']
    assert adopted['taints'] == [GPU_TAINT] and adopted['owned'] == ['nvidia.com/gpu:NoSchedule']
    conflict = plan_taints([{'key': 'dedicated', 'value': 'ml', 'effect': 'NoExecute'}], [], [DEDICATED])
    assert conflict['conflicts'] and "'ml'" in conflict['conflicts'][0]
    replaced = plan_taints([{'key': 'dedicated', 'value': 'ml', 'effect': 'NoExecute'}], [], [DEDICATED],
                           remove=['dedicated:NoExecute'])
    assert not replaced['conflicts'] and replaced['taints'] == [DEDICATED]
    assert replaced['owned'] == ['dedicated:NoExecute']


def test_absent_removes_only_ours():
    current = [FOREIGN, GPU_TAINT, DEDICATED]
    result = plan_taints(current, ['nvidia.com/gpu:NoSchedule'], [GPU_TAINT, DEDICATED], state='absent')
    assert result['removed'] == ['nvidia.com/gpu:NoSchedule'] and result['kept'] == ['dedicated:NoExecute']
    assert result['taints'] == [FOREIGN, DEDICATED] and result['owned'] == []
    again = plan_taints(result['taints'], result['owned'], [GPU_TAINT, DEDICATED], state='absent')
    assert not again['changed']


def test_remove_foreign_on_request():
    result = plan_taints([FOREIGN, GPU_TAINT], [], [], state='absent', remove=['node.kubernetes.io/unreachable'])
    assert result['removed'] == ['node.kubernetes.io/unreachable:NoExecute'] and result['taints'] == [GPU_TAINT]
    keeps_ours = plan_taints([GPU_TAINT], ['nvidia.com/gpu:NoSchedule'], [GPU_TAINT], remove=['nvidia.com/gpu'])
    assert not keeps_ours['changed']


def test_vanished_owned_identity_is_forgotten():
    result = plan_taints([FOREIGN], ['gone:NoSchedule'], [])
    assert result['owned'] == [] and result['changed'] and result['taints'] == [FOREIGN]


def test_remove_spec_errors():
    assert remove_spec_errors(['dedicated', 'nvidia.com/gpu:NoSchedule']) == []
    assert remove_spec_errors(None) == []
    assert 'must be a list' in remove_spec_errors('x')[0]
    assert 'effect must be one of' in remove_spec_errors(['dedicated:NoScheduled'])[0]
    assert remove_spec_errors(['Bad Key'])
    assert remove_spec_errors([''])


def test_identity():
    assert identity(GPU_TAINT) == 'nvidia.com/gpu:NoSchedule'


def test_placement_tolerations():
    assert placement_tolerations([DEDICATED]) == [DEDICATED_TOL, GPU_TOL]
    assert placement_tolerations([DEDICATED], match_value=True)[0] == {
        'key': 'dedicated', 'operator': 'Equal', 'value': 'gpu', 'effect': 'NoExecute'}
    with pytest.raises(ValueError):
        placement_tolerations([{'key': 'x', 'effect': 'Nope'}])


NFD = {'metadata': {'name': 'nfd-instance', 'namespace': 'openshift-nfd'}, 'spec': {'operand': {'servicePort': 12000}}}
SUB = {'metadata': {'name': 'gpu-operator-certified', 'namespace': 'nvidia-gpu-operator'},
       'spec': {'name': 'gpu-operator-certified', 'config': {'tolerations': [
           {'key': 'node-role.kubernetes.io/master', 'operator': 'Exists', 'effect': 'NoSchedule'}]}}}
CP = {'metadata': {'name': 'gpu-cluster-policy'}, 'spec': {'daemonsets': {'tolerations': [
    {'key': 'team', 'operator': 'Equal', 'value': 'a', 'effect': 'NoSchedule'}]}}}
CLUSTER = {'nfd': [NFD], 'subscriptions': [SUB], 'cluster_policies': [CP]}


def test_placement_plan_three_layers_keep_existing_and_gpu():
    plan = placement_plan({'taints': [GPU_TAINT, DEDICATED]}, CLUSTER)
    assert plan['errors'] == []
    assert plan['tolerations'] == [GPU_TOL, DEDICATED_TOL]
    by_layer = {p['layer']: p for p in plan['patches']}
    assert by_layer['nfd']['definition'] == {
        'apiVersion': 'nfd.openshift.io/v1', 'kind': 'NodeFeatureDiscovery',
        'metadata': {'name': 'nfd-instance', 'namespace': 'openshift-nfd'},
        'spec': {'operand': {'workerTolerations': [GPU_TOL, DEDICATED_TOL]}}}
    assert by_layer['subscription']['after'][0]['key'] == 'node-role.kubernetes.io/master'
    assert by_layer['subscription']['definition']['spec'] == {'config': {'tolerations': by_layer['subscription']['after']}}
    assert by_layer['cluster_policy']['after'] == CP['spec']['daemonsets']['tolerations'] + [GPU_TOL, DEDICATED_TOL]
    assert by_layer['cluster_policy']['definition']['metadata'] == {'name': 'gpu-cluster-policy'}
    assert all(p['changed'] for p in plan['patches'])


def test_placement_plan_no_change_when_already_tolerated():
    cp = {'metadata': {'name': 'p'}, 'spec': {'daemonsets': {'tolerations': [GPU_TOL]}}}
    plan = placement_plan({'taints': [GPU_TAINT], 'layers': ['cluster_policy']}, {'cluster_policies': [cp]})
    assert plan['errors'] == [] and not plan['patches'][0]['changed']


def test_placement_plan_absent_adds_only_extra():
    plan = placement_plan({'taints': [DEDICATED], 'state': 'absent', 'layers': ['cluster_policy'],
                           'tolerations': [{'key': 'x', 'operator': 'Exists'}]}, {'cluster_policies': [CP]})
    assert plan['tolerations'] == [{'key': 'x', 'operator': 'Exists'}, GPU_TOL]


@pytest.mark.parametrize('config, cluster, fragment', [
    ({'taints': [{'key': 'nvidia.com/gpu', 'effect': 'NoSchedul'}]}, CLUSTER,
     'gpu_node_placement_taints[0].effect must be one of'),
    ({'taints': [GPU_TAINT, GPU_TAINT]}, CLUSTER, 'duplicates'),
    ({'taints': [GPU_TAINT], 'tolerations': [{'key': 'a', 'operator': 'Exists', 'value': 'b'}]}, CLUSTER,
     'operator Exists must not set value'),
    ({'taints': [GPU_TAINT], 'remove': ['a:Never']}, CLUSTER, 'gpu_node_placement_remove[0] effect'),
    ({'taints': [GPU_TAINT], 'state': 'gone'}, CLUSTER, 'gpu_node_placement_state must be'),
    ({'taints': [GPU_TAINT], 'layers': ['clusterpolicy']}, CLUSTER,
     "unknown layer 'clusterpolicy'; did you mean 'cluster_policy'"),
    ({'taints': [GPU_TAINT], 'layers': 'nfd'}, CLUSTER, 'must be a list'),
    ({'taints': [GPU_TAINT]}, {'nfd': [NFD], 'cluster_policies': [CP]}, 'no Subscription found'),
    ({'taints': [GPU_TAINT]}, {}, 'no NodeFeatureDiscovery found'),
    ({'taints': [GPU_TAINT], 'layers': ['cluster_policy']},
     {'cluster_policies': [{'metadata': {'name': 'p'}, 'spec': {'daemonsets': {'tolerations': [{'operator': 'Equal'}]}}}]},
     'has invalid tolerations'),
])
def test_placement_plan_errors(config, cluster, fragment):
    plan = placement_plan(config, cluster)
    assert any(fragment in e for e in plan['errors']), plan['errors']
    assert not plan['patches'] or plan['errors']


def _ds(name, tolerations, generation=2, observed=2, desired=3, updated=3, owner='ClusterPolicy'):
    return {'metadata': {'name': name, 'namespace': 'gpu-operator', 'generation': generation,
                         'ownerReferences': [{'kind': owner, 'name': 'gpu-cluster-policy'}] if owner else []},
            'spec': {'template': {'spec': {'tolerations': tolerations}}},
            'status': {'observedGeneration': observed, 'desiredNumberScheduled': desired,
                       'updatedNumberScheduled': updated}}


def test_daemonsets_not_ready_for():
    ready = _ds('ready', [GPU_TOL, DEDICATED_TOL])
    untolerated = _ds('untolerated', [GPU_TOL])
    rolling = _ds('rolling', [GPU_TOL, DEDICATED_TOL], updated=1)
    stale = _ds('stale', [GPU_TOL, DEDICATED_TOL], generation=3, observed=2)
    foreign = _ds('foreign', [], owner=None)
    daemonsets = [ready, untolerated, rolling, stale, foreign]
    assert daemonsets_not_ready_for(daemonsets, [DEDICATED], 'ClusterPolicy') == [
        'gpu-operator/untolerated', 'gpu-operator/rolling', 'gpu-operator/stale']
    assert 'gpu-operator/foreign' in daemonsets_not_ready_for(daemonsets, [DEDICATED])
    assert daemonsets_not_ready_for([ready], [DEDICATED, GPU_TAINT]) == []
    assert daemonsets_not_ready_for(None, [DEDICATED]) == []
    on_delete = _ds('driver', [GPU_TOL, DEDICATED_TOL], updated=0)
    on_delete['spec']['updateStrategy'] = {'type': 'OnDelete'}
    assert daemonsets_not_ready_for([on_delete], [DEDICATED]) == []
