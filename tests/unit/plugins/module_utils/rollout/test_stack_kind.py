# -*- coding: utf-8 -*-
"""The stack kind (rollout/stack_kind.py): device plugin <-> DRA driver, decided from the node and its slices."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.module_utils.rollout import stack_kind as sk

DP, DRA_L = sk.DP_LABEL, sk.DRA_LABEL


def node(name='t4-0', labels=None, allocatable=None):
    base = {'nvidia.com/gpu.present': 'true', 'nvidia.com/gpu.count': '2', 'nvidia.com/gpu.product': 'Tesla-T4'}
    base.update(labels or {})
    return {'metadata': {'name': name, 'labels': dict((k, v) for k, v in base.items() if v is not None)},
            'status': {'allocatable': allocatable if allocatable is not None else {'nvidia.com/gpu': '2'}}}


def a_slice(name, devices, generation=1):
    return {'spec': {'driver': 'gpu.nvidia.com', 'nodeName': name, 'pool': {'name': name, 'generation': generation},
                     'devices': [{'name': 'gpu-%d' % i} for i in range(devices)]}}


def kind(slices=None):
    return sk.StackKind(lambda name: [s for s in slices or [] if s['spec']['nodeName'] == name])


ON_DRA = {DP: 'false', DRA_L: 'true'}


def test_unknown_stack_is_an_input_error():
    assert sk.stack_errors(['dra', 'device-plugin']) == []
    (error,) = sk.stack_errors(['dra', 'DRA'])
    assert "assignments[1].stack: 'DRA'" in error
    assert 'is not a GPU stack' in kind().validate(node(), 'cdi')[0]


def test_a_node_without_gpus_is_refused():
    (error,) = kind().validate(node(labels={'nvidia.com/gpu.count': None}), 'dra')
    assert 'has no GPUs' in error
    assert kind().validate(node(labels={'nvidia.com/gpu.count': '0'}), 'dra')
    assert kind().validate(node(), 'dra') == []


def test_a_mig_change_under_way_is_refused():
    busy = node(labels={'nvidia.com/mig.config': 'all-1g.5gb', 'nvidia.com/mig.config.state': 'pending'})
    assert 'finish it first' in kind().validate(busy, 'dra')[0]


def test_label_patches():
    assert kind().label_patch('dra') == {DP: 'false', DRA_L: 'true'}
    assert kind().label_patch('device-plugin') == {DP: 'true', DRA_L: None}
    assert kind().needs_label(node(), 'dra')
    assert not kind().needs_label(node(labels=ON_DRA), 'dra')
    assert kind().needs_label(node(labels=ON_DRA), 'device-plugin')
    assert not kind().needs_label(node(labels={DP: 'true'}), 'device-plugin')


def test_current_stack():
    assert sk.current_stack(node()) == 'device-plugin'
    assert sk.current_stack(node(labels=ON_DRA)) == 'dra'
    assert sk.current_stack(node(labels={DP: 'false'})) == 'mixed'


def test_to_dra_waits_for_the_plugin_to_leave_then_for_every_device():
    n = node(labels=ON_DRA)
    assert kind([a_slice('t4-0', 2)]).progress(n, 'dra') == ('wait', 'the device plugin still advertises nvidia.com/gpu=2')
    gone = node(labels=ON_DRA, allocatable={'nvidia.com/gpu': '0'})
    verdict, detail = kind([a_slice('t4-0', 1)]).progress(gone, 'dra')
    assert verdict == 'wait' and 'lists 1 of 2 device(s)' in detail
    assert kind([a_slice('t4-0', 2)]).progress(gone, 'dra')[0] == 'done'
    assert kind([a_slice('t4-0', 2)]).at_target(gone, 'dra')
    assert not kind([a_slice('t4-1', 2)]).at_target(gone, 'dra')  # another node's slice does not count
    assert kind().expected_allocatable(gone, 'dra') == {}


def test_mig_devices_count_when_mig_is_on():
    mig = node(labels=dict(ON_DRA, **{'nvidia.com/mig-1g.5gb.count': '14'}), allocatable={})
    assert sk.expected_devices(mig) == 14
    assert kind([a_slice('t4-0', 13)]).progress(mig, 'dra')[0] == 'wait'
    assert kind([a_slice('t4-0', 14)]).progress(mig, 'dra')[0] == 'done'


def test_back_to_the_device_plugin_waits_for_the_slices_to_go_and_the_resources_to_return():
    n = node(labels={DP: 'true'}, allocatable={})
    verdict, detail = kind([a_slice('t4-0', 2)]).progress(n, 'device-plugin')
    assert verdict == 'wait' and 'still publishes 2' in detail
    assert kind().progress(n, 'device-plugin')[0] == 'wait'
    back = node(labels={DP: 'true'})
    assert kind().progress(back, 'device-plugin')[0] == 'done'
    assert kind().expected_allocatable(back, 'device-plugin') == {'nvidia.com/gpu': 2}
    assert kind().expected_allocatable(n, 'device-plugin') == {'nvidia.com/gpu': 2}


def test_labels_changed_by_someone_else_fail_the_node():
    assert kind().progress(node(labels={DP: 'true'}), 'dra')[0] == 'failed'


def test_describe():
    out = kind([a_slice('t4-0', 1)]).describe(node(), 'dra')
    assert out['stack_from'] == 'device-plugin' and out['dra_devices'] == 1 and out['expected_devices'] == 2
    assert out['allocatable'] == {'nvidia.com/gpu': 2}


def pod(name, node_name, limits, init=None):
    spec = {'nodeName': node_name, 'containers': [{'name': 'c', 'resources': {'limits': limits}}]}
    if init:
        spec['initContainers'] = [{'name': 'i', 'resources': {'limits': init}}]
    return {'metadata': {'name': name, 'namespace': 'ml'}, 'spec': spec}


def test_pod_gpu_requests():
    assert sk.pod_gpu_requests(pod('a', 'n', {'nvidia.com/gpu': '1', 'cpu': '2'})) == {'nvidia.com/gpu': 1}
    assert sk.pod_gpu_requests(pod('a', 'n', {'cpu': '2'})) == {}
    assert sk.pod_gpu_requests(pod('a', 'n', {'nvidia.com/gpu': '1'}, init={'nvidia.com/gpu': '2'})) == \
        {'nvidia.com/gpu': 2}


CLASS = {'metadata': {'name': 'gpu.nvidia.com'}, 'spec': {'extendedResourceName': 'nvidia.com/gpu'}}


def test_workload_plan_schedulable_with_an_extended_resource_class():
    pods = [pod('infer', 't4-0', {'nvidia.com/gpu': '1'}), pod('mig', 't4-0', {'nvidia.com/mig-1g.5gb': '1'}),
            pod('cpu', 't4-0', {'cpu': '1'}), pod('other', 't4-9', {'nvidia.com/gpu': '1'})]
    (group,) = sk.workload_plan([{'group': 'pool=t4', 'stack': 'dra', 'nodes': ['t4-0']}], pods, [CLASS])
    assert [w['pod'] for w in group['workloads']] == ['ml/infer', 'ml/mig']
    infer, mig = group['workloads']
    assert infer['schedulable'] and infer['device_classes'] == ['gpu.nvidia.com']
    assert not mig['schedulable'] and 'nvidia.com/mig-1g.5gb' in mig['reason']
    assert group['unschedulable'] == 1


def test_workload_plan_without_a_class_nothing_schedules_on_dra():
    pods = [pod('infer', 't4-0', {'nvidia.com/gpu': '1'})]
    (group,) = sk.workload_plan([{'group': 'g', 'stack': 'dra', 'nodes': ['t4-0']}], pods, [])
    assert group['workloads'][0]['schedulable'] is False and group['unschedulable'] == 1
    (back,) = sk.workload_plan([{'group': 'g', 'stack': 'device-plugin', 'nodes': ['t4-0']}], pods, [])
    assert back['workloads'][0]['schedulable'] is True


def test_a_cutover_to_dra_needs_resource_slices_served():
    from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.dra_cutover import served_errors
    (error,) = served_errors(404, ['device-plugin', 'dra'])
    assert 'does not serve' in error and 'resource.k8s.io/v1' in error
    assert served_errors(404, ['device-plugin']) == []
    assert 'may not list' in served_errors(403, ['device-plugin'])[0]
    assert served_errors([], ['dra']) == []
