# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""plans/gpu_health_dra.py and the device-by-device quarantine of plans/gpu_health.py: which DRA devices are bad
(DCGM's XID on their GPU, or the driver's own taint), the DeviceTaintRules that take only them out of service, and
their removal on return."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json

from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import ANN_GPU_HEALTH
from ansible_collections.gpuops.gpu.plugins.module_utils.plans import gpu_health as gh
from ansible_collections.gpuops.gpu.plugins.module_utils.plans import gpu_health_dra as ghd

NOW = gh.epoch_of('2026-11-28T12:00:00Z')
NOW_ISO = '2026-11-28T12:00:00+00:00'


def device(name, uuid=None, parent=None, taints=None):
    attributes = {'type': {'string': 'mig' if parent else 'gpu'}}
    if uuid:
        attributes['uuid'] = {'string': uuid}
    if parent:
        attributes['parentUUID'] = {'string': parent}
    out = {'name': name, 'attributes': attributes}
    if taints:
        out['taints'] = taints
    return out


def slice_of(node, devices, generation=1):
    return {'metadata': {'name': '%s-gpu.nvidia.com' % node},
            'spec': {'driver': 'gpu.nvidia.com', 'nodeName': node, 'pool': {'name': node, 'generation': generation,
                                                                            'resourceSliceCount': 1},
                     'devices': devices}}


SLICES = [
    slice_of('a100-0', [device('gpu-0', 'GPU-a-0'), device('gpu-1-mig-1g5gb-19-0', 'MIG-a-1-0', parent='GPU-a-1'),
                        device('gpu-1-mig-1g5gb-19-1', 'MIG-a-1-1', parent='GPU-a-1'),
                        device('gpu-2', 'GPU-a-2', taints=[{'key': 'gpu.nvidia.com/xid', 'value': '48',
                                                           'effect': 'NoSchedule'}])]),
    slice_of('a100-0', [device('gpu-0', 'GPU-old')], generation=0),   # a stale generation: ignored
    slice_of('t4-0', [device('gpu-0', 'GPU-t-0', taints=[{'key': 'gpu.nvidia.com/unmonitored', 'effect': 'None'}])]),
]
XID = {'a100-0': [{'gpu': '1', 'uuid': 'GPU-a-1', 'xid': 79}]}


def node(name, alloc=8, annotations=None, unschedulable=False):
    return {'metadata': {'name': name, 'labels': {'nvidia.com/gpu.present': 'true'},
                         'annotations': dict(annotations or {})},
            'spec': {'unschedulable': True} if unschedulable else {},
            'status': {'capacity': {'nvidia.com/gpu': '8'}, 'allocatable': {'nvidia.com/gpu': str(alloc)}}}


def dra(rules=(), slices=None, effect='NoSchedule'):
    return {'slices': list(SLICES if slices is None else slices), 'rules': list(rules), 'effect': effect,
            'version': 'v1beta2'}


def run(nodes, policy='quarantine', xids=None, **kw):
    return gh.plan(nodes, [], policy, NOW, NOW_ISO, window_minutes=0, xids=XID if xids is None else xids, **kw)


def test_the_bad_devices_are_the_mig_devices_of_the_gpu_with_an_xid_and_those_the_driver_tainted():
    assert ghd.bad_devices(SLICES, 'a100-0', XID['a100-0']) == {
        'gpu-1-mig-1g5gb-19-0': 'DCGM: last XID 79 on GPU-a-1', 'gpu-1-mig-1g5gb-19-1': 'DCGM: last XID 79 on GPU-a-1',
        'gpu-2': 'DRA: tainted gpu.nvidia.com/xid=48:NoSchedule'}
    assert ghd.bad_devices(SLICES, 't4-0', []) == {}, 'an effect None only informs'
    assert ghd.tainted_reason(SLICES, 'a100-0') == (
        'DRA: device(s) tainted by the driver: gpu-2 gpu.nvidia.com/xid=48:NoSchedule')
    assert ghd.tainted_reason(SLICES, 't4-0') == ''


def test_a_rule_selects_one_device_of_the_nodes_pool_and_carries_our_taint():
    rule = ghd.rule('a100-0', 'gpu-2', 'DRA: tainted gpu.nvidia.com/xid=48:NoSchedule', 'NoExecute', 'v1beta2')
    assert rule['apiVersion'] == 'resource.k8s.io/v1beta2' and rule['kind'] == 'DeviceTaintRule'
    assert rule['metadata']['name'] == 'gpuops-gpu-health-a100-0-gpu-2'
    assert rule['metadata']['labels'][ghd.NODE_LABEL] == 'a100-0'
    assert rule['metadata']['labels']['app.kubernetes.io/managed-by'] == 'gpuops.gpu'
    assert rule['spec'] == {'deviceSelector': {'driver': 'gpu.nvidia.com', 'pool': 'a100-0', 'device': 'gpu-2'},
                            'taint': {'key': 'gpuops.gpu/gpu-unhealthy', 'value': 'dra-taint', 'effect': 'NoExecute'}}
    assert ghd.rule('n', 'gpu-0', 'DCGM: last XID 79 on GPU-x', 'NoSchedule', 'v1alpha3')['spec']['taint'][
        'value'] == 'xid-79'
    long_name = ghd.rule_name('n' * 200, 'Gpu_0-mig-' + 'x' * 100)
    assert len(long_name) <= 253 and long_name == long_name.lower() and '_' not in long_name
    assert long_name != ghd.rule_name('n' * 200, 'Gpu_0-mig-' + 'x' * 99 + 'y')


def test_rule_changes_write_what_is_missing_or_different_and_delete_what_is_no_longer_bad():
    bad = {'gpu-2': 'DCGM: last XID 79 on GPU-a-2'}
    write, delete = ghd.rule_changes('a100-0', bad, [], 'NoSchedule', 'v1beta2')
    assert [r['metadata']['name'] for r in write] == ['gpuops-gpu-health-a100-0-gpu-2'] and delete == []
    existing = write + [ghd.rule('a100-0', 'gpu-0', 'x', 'NoSchedule', 'v1beta2'),
                        ghd.rule('t4-0', 'gpu-0', 'x', 'NoSchedule', 'v1beta2'),
                        {'metadata': {'name': 'someone-elses', 'labels': {}}}]
    assert ghd.rule_changes('a100-0', bad, existing, 'NoSchedule', 'v1beta2') == (
        [], ['gpuops-gpu-health-a100-0-gpu-0'])
    assert len(ghd.rule_changes('a100-0', bad, existing, 'NoExecute', 'v1beta2')[0]) == 1, 'the effect changed'


def test_a_node_with_known_bad_devices_is_quarantined_device_by_device_without_a_cordon():
    result = run([node('a100-0'), node('t4-0')], dra=dra())
    assert result['unhealthy'] == ['a100-0'] and result['devices'] == ['a100-0']
    [action] = result['actions']
    assert action['mode'] == 'devices' and action['rules_delete'] == []
    assert [r['metadata']['name'] for r in action['rules_write']] == [
        'gpuops-gpu-health-a100-0-gpu-1-mig-1g5gb-19-0', 'gpuops-gpu-health-a100-0-gpu-1-mig-1g5gb-19-1',
        'gpuops-gpu-health-a100-0-gpu-2']
    assert 'DRA: device(s) tainted by the driver: gpu-2' in action['reason']
    assert action['after']['unschedulable'] is False and action['after']['device_rules'] == [
        r['metadata']['name'] for r in action['rules_write']]
    record = json.loads(action['after']['annotation'])
    assert record['mode'] == 'devices' and record['cordoned'] is False and record['devices'] == [
        'gpu-1-mig-1g5gb-19-0', 'gpu-1-mig-1g5gb-19-1', 'gpu-2']
    assert gh.node_patch(action) == {'metadata': {'annotations': {ANN_GPU_HEALTH: action['after']['annotation']}}}
    # applied: the record and the rules are there; the next run changes nothing
    done = node('a100-0', annotations={ANN_GPU_HEALTH: action['after']['annotation']})
    again = run([done], dra=dra(rules=action['rules_write']))
    assert [a['changed'] for a in again['actions']] == [False] and again['actions'][0]['rules_write'] == []


def test_nodes_whose_bad_devices_are_unknown_or_that_are_quarantined_whole_are_cordoned():
    short = run([node('t4-0', alloc=0)], xids={}, dra=dra())        # the device plugin lost it; no DCGM, no taint
    assert short['actions'][0].get('mode') is None and short['actions'][0]['after']['unschedulable'] is True
    whole = {ANN_GPU_HEALTH: json.dumps({'state': 'quarantined', 'reason': 'r', 'since': NOW_ISO, 'cordoned': True,
                                         'tainted': False})}
    kept = run([node('a100-0', annotations=whole, unschedulable=True)], dra=dra())
    assert kept['actions'][0].get('mode') is None and not kept['actions'][0]['changed']
    assert kept['devices'] == []


def test_the_return_deletes_the_nodes_rules_once_nothing_is_bad_and_never_uncordons():
    quarantined = run([node('a100-0')], dra=dra())['actions'][0]
    rules = quarantined['rules_write'] + [ghd.rule('t4-0', 'gpu-0', 'x', 'NoSchedule', 'v1beta2')]
    back = node('a100-0', annotations={ANN_GPU_HEALTH: quarantined['after']['annotation']})
    assert run([back], policy='return', dra=dra(rules=rules))['actions'] == [], 'XID and driver taint remain'
    repaired = [slice_of('a100-0', [device('gpu-0', 'GPU-a-0'), device('gpu-2', 'GPU-a-2')])]
    [action] = run([back], policy='return', xids={}, dra=dra(rules=rules, slices=repaired))['actions']
    assert action['mode'] == 'devices' and action['changed'] and action['rules_write'] == []
    assert action['rules_delete'] == sorted(r['metadata']['name'] for r in quarantined['rules_write'])
    assert action['after']['unschedulable'] is False and json.loads(action['after']['annotation'])['state'] == 'returned'
