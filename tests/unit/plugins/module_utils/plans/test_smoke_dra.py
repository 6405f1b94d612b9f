# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""plans/smoke_dra.py: what the smoke test through DRA tests, the devices each class can still get, the cases, the
fill test plan and the input errors."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.tolerations import GPU_TOLERATION
from ansible_collections.gpuops.gpu.plugins.module_utils.plans import smoke as S
from ansible_collections.gpuops.gpu.plugins.module_utils.plans import smoke_dra as D
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.smoke_fill import SKIPPED
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.gpu.dra_data import claim, gpu, rslice
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.plans.smoke_dra_fakes import (
    CLAIMS, CLASSES, NODES, SLICES, TEMPLATES, TYPE, device_class, fleet_node, template)
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.plans.smoke_fakes import smoke_settings


def plan(**kwargs):
    args = dict(classes=CLASSES, templates=TEMPLATES, slices=SLICES, claims=CLAIMS, nodes=NODES,
                tolerations=[GPU_TOLERATION])
    args.update(kwargs)
    return D.plan(**args)


def by_key(cases):
    return dict(((c['kind'], c['resource']), c) for c in cases)


def test_by_default_the_dra_roles_objects_and_the_drivers_classes():
    classes, groups, errors = D.select_objects(CLASSES, TEMPLATES)
    assert errors == []
    assert [c['metadata']['name'] for c in classes] == ['gpu.nvidia.com', 'mig.nvidia.com', 't4.example.com']
    # one-t4 lives in two namespaces with one spec: one case; the cluster's own template is not the role's
    assert [(g['name'], g['namespaces']) for g in groups] == [
        ('one-t4', ['team-a', 'team-b']), ('two-migs', ['team-a'])]


def test_named_objects_only_and_every_missing_one_at_once():
    classes, groups, errors = D.select_objects(CLASSES, TEMPLATES, ['own.example.com'], ['team-c/mine'])
    assert errors == [] and [c['metadata']['name'] for c in classes] == ['own.example.com']
    assert [g['name'] for g in groups] == ['mine']
    broken = TEMPLATES + [template('team-a', 'typo', 't4.example.co')]
    _classes, _groups, errors = D.select_objects(CLASSES, broken, ['t4.example.co'], ['team-a/one-t5', 'team-a/typo'])
    assert errors == [
        'device_classes: DeviceClass t4.example.co does not exist; did you mean t4.example.com?',
        'claim_templates: ResourceClaimTemplate team-a/one-t5 does not exist; did you mean team-a/one-t4?',
        'ResourceClaimTemplate team-a/typo asks for DeviceClass t4.example.co, which does not exist (its pods could '
        'never be scheduled); did you mean t4.example.com?']
    # a template of the dra role naming a class that is gone is refused by default too
    gone = [c for c in CLASSES if c['metadata']['name'] != 'mig.nvidia.com']
    assert D.select_objects(gone, TEMPLATES)[2] == [
        'ResourceClaimTemplate team-a/two-migs asks for DeviceClass mig.nvidia.com, which does not exist (its pods '
        'could never be scheduled); did you mean gpu.nvidia.com?']
    assert D.select_objects([], [])[2][0].startswith('nothing to test through DRA')
    empty = template('team-a', 'empty', 'x')
    empty['spec']['spec']['devices']['requests'] = []
    assert D.select_objects(CLASSES, [empty], wanted_templates=['team-a/empty'])[2] == [
        'ResourceClaimTemplate team-a/empty requests no device']


def test_devices_usable_free_and_countable():
    tainted = [fleet_node('t4-0', taints=[{'key': 'dedicated', 'value': 'x', 'effect': 'NoSchedule'}]),
               fleet_node('t4-1', ready=False), fleet_node('a100-0', taints=[
                   {'key': 'nvidia.com/gpu', 'effect': 'NoSchedule'}, {'key': 'soft', 'effect': 'PreferNoSchedule'}])]
    shared = rslice('a100-0', [dict(gpu(5, 'GPU-a5'), consumesCounters=[{'counterSet': 'x'}]),
                               dict(gpu(6, 'GPU-a6'), taints=[{'key': 'broken', 'effect': 'NoExecute'}])], generation=9)
    got = dict(((d['node'], d['name']), (d['allocated'], d['blocked'], d['countable']))
               for d in D.devices(SLICES + [shared], CLAIMS, tainted, [GPU_TOLERATION]))
    assert got == {('t4-0', 'gpu-0'): (False, 'taint dedicated', True),
                   ('t4-1', 'gpu-0'): (True, 'not Ready', True),
                   ('a100-0', 'gpu-5'): (False, None, False),   # only the newest generation of a pool counts
                   ('a100-0', 'gpu-6'): (False, 'device taint broken', True),
                   ('cordoned-0', 'gpu-0'): (False, 'not selected', True)}


def test_cases_with_their_free_devices_and_nodes():
    cases = by_key(plan()['cases'])
    assert list(cases) == [('class', 'gpu.nvidia.com'), ('class', 'mig.nvidia.com'), ('class', 't4.example.com'),
                           ('template', 'team-a/one-t4'), ('template', 'team-a/two-migs'),
                           ('extended-resource', 'example.com/t4'), ('extended-resource', 'nvidia.com/gpu')]
    got = dict((k, (c['status'], c.get('free'), c['nodes'])) for k, c in cases.items())
    assert got == {
        # t4-1's T4 is allocated, cordoned-0's is on a cordoned node
        ('class', 'gpu.nvidia.com'): (S.PLANNED, 2, ['a100-0', 't4-0']),
        ('class', 'mig.nvidia.com'): (S.PLANNED, 3, ['a100-0']),
        ('class', 't4.example.com'): (S.PLANNED, 1, ['t4-0']),
        ('template', 'team-a/one-t4'): (S.PLANNED, None, ['t4-0']),
        ('template', 'team-a/two-migs'): (S.PLANNED, None, ['a100-0']),
        ('extended-resource', 'example.com/t4'): (S.PLANNED, 1, ['t4-0']),
        # a100-0 advertises nvidia.com/gpu through its device plugin, which would serve the pod there
        ('extended-resource', 'nvidia.com/gpu'): (S.PLANNED, 2, ['t4-0'])}
    t4 = cases[('class', 't4.example.com')]
    assert (t4['devices'], t4['allocated'], t4['countable']) == (3, 1, True)
    assert t4['claim_spec'] == D.class_claim_spec('t4.example.com')
    assert [c['id'] for c in cases.values()] == list(range(7))


def test_no_capacity_is_reported_with_the_reason():
    nodes = [fleet_node('t4-0', unschedulable=True), fleet_node('t4-1'), fleet_node('a100-0', {'nvidia.com/gpu': 8}),
             fleet_node('cordoned-0', unschedulable=True)]
    busy = CLAIMS + [claim('x', 'm%d' % s, [('gpu.nvidia.com', 'a100-0', 'gpu-1-mig-1g5gb-19-%d' % s, 'gpu')])
                     for s in (0, 1)]
    h100 = TYPE % 'gpu' + " && device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100 80GB HBM3'"
    classes = CLASSES + [device_class('h100.example.com', h100, labels={
        'gpuops.gpu/role': 'dra', 'app.kubernetes.io/managed-by': 'gpuops.gpu'})]
    cases = by_key(plan(classes=classes, nodes=nodes, claims=busy)['cases'])
    reasons = dict((k, c['reason']) for k, c in cases.items() if c['status'] == S.NO_CAPACITY)
    assert reasons == {
        ('class', 'h100.example.com'): 'no published device matches DeviceClass h100.example.com',
        ('class', 't4.example.com'): 'every free device of DeviceClass t4.example.com is on a node the test cannot '
                                     'use: cordoned-0 (cordoned), t4-0 (cordoned)',
        ('template', 'team-a/one-t4'): 'no node has free devices for every request of the template',
        ('template', 'team-a/two-migs'): 'no node has free devices for every request of the template',
        ('extended-resource', 'example.com/t4'): 'every free device of DeviceClass t4.example.com is on a node the '
                                                 'test cannot use: cordoned-0 (cordoned), t4-0 (cordoned)',
        ('extended-resource', 'nvidia.com/gpu'): 'every node with a free device of gpu.nvidia.com advertises '
                                                 'nvidia.com/gpu itself (a device plugin serves it there): a100-0'}
    assert cases[('class', 'mig.nvidia.com')]['free'] == 1
    every = [claim('x', 't%d' % i, [('gpu.nvidia.com', node, 'gpu-0', 'gpu')])
             for i, node in enumerate(['t4-0', 'cordoned-0'])]
    t4 = by_key(plan(claims=CLAIMS + every)['cases'])[('class', 't4.example.com')]
    assert t4['reason'] == 'every device of DeviceClass t4.example.com is allocated (3)'


def test_template_requests_all_first_available_and_several_requests():
    spec = {'devices': {'requests': [
        {'name': 'a', 'exactly': {'deviceClassName': 'mig.nvidia.com', 'count': 2}},
        {'name': 'b', 'firstAvailable': [{'name': 'h', 'deviceClassName': 'gpu.nvidia.com', 'selectors': [
            {'cel': {'expression': "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100 80GB HBM3'"}}]},
            {'name': 'any', 'deviceClassName': 'gpu.nvidia.com'}]}]}}
    several = template('team-a', 'several', 'x')
    several['spec']['spec'] = spec
    every_mig = template('team-a', 'all-migs', 'mig.nvidia.com', mode='All')
    too_many = template('team-a', 'four-migs', 'mig.nvidia.com', count=4)
    cases = by_key(plan(templates=[several, every_mig, too_many], wanted_templates=[
        'team-a/several', 'team-a/all-migs', 'team-a/four-migs'])['cases'])
    assert cases[('template', 'team-a/several')]['nodes'] == ['a100-0']
    assert cases[('template', 'team-a/several')]['device_class'] == 'mig.nvidia.com, gpu.nvidia.com'
    assert cases[('template', 'team-a/all-migs')]['nodes'] == ['a100-0']
    assert cases[('template', 'team-a/four-migs')]['status'] == S.NO_CAPACITY
    busy = CLAIMS + [claim('x', 'm', [('gpu.nvidia.com', 'a100-0', 'gpu-1-mig-1g5gb-19-0', 'gpu')])]
    cases = by_key(plan(templates=[every_mig], claims=busy, wanted_templates=['team-a/all-migs'])['cases'])
    assert cases[('template', 'team-a/all-migs')]['status'] == S.NO_CAPACITY  # All needs every matching device free


def test_a_selector_not_understood_is_not_counted_but_still_run():
    odd = device_class('odd.example.com', "device.attributes['gpu.nvidia.com'].productName.lowerAscii() == 'x'")
    result = plan(classes=CLASSES + [odd], wanted_classes=['odd.example.com'], fill=True)
    (case,) = result['cases']
    assert case['status'] == S.PLANNED and case['countable'] is False
    assert case['reason'].startswith('free devices not counted: selector not understood (the method lowerAscii is '
                                     'not understood)')
    assert case['nodes'] == ['a100-0', 't4-0', 't4-1']  # every node with a usable device: the scheduler decides
    (fill,) = result['fill_cases']
    assert fill['status'] == SKIPPED and fill['reason'] == case['reason']
    failing = device_class('prof.example.com', "device.attributes['gpu.nvidia.com'].profile == '1g.5gb'")
    (case,) = plan(classes=CLASSES + [failing], wanted_classes=['prof.example.com'])['cases']
    assert case['reason'] == 'free devices not counted: the selector fails on t4-0/gpu-0 (a missing attribute?)'


def test_the_fill_plan_per_class():
    fills = dict((c['device_class'], c) for c in plan(fill=True, fill_extra=2)['fill_cases'])
    assert list(fills) == ['gpu.nvidia.com', 'mig.nvidia.com', 't4.example.com']
    t4 = fills['t4.example.com']
    assert (t4['kind'], t4['nodes'], t4['devices'], t4['in_use'], t4['expect_running'], t4['expect_pending'],
            t4['status']) == ('dra-fill', ['t4-0'], 3, 1, 1, 2, S.PLANNED)
    assert fills['mig.nvidia.com']['expect_running'] == 3
    many = [rslice('big-%d' % i, [gpu(g, 'GPU-%d-%d' % (i, g)) for g in range(8)]) for i in range(16)]
    nodes = [fleet_node('big-%d' % i) for i in range(16)]
    (fill,) = plan(slices=many, nodes=nodes, claims=[], wanted_classes=['gpu.nvidia.com'], fill=True)['fill_cases']
    assert (fill['status'], fill['reason']) == (SKIPPED, '129 claims needed, more than 128')
    none = plan(claims=[claim('x', 'y', [('gpu.nvidia.com', 'a100-0', 'gpu-1-mig-1g5gb-19-%d' % s, 'gpu')])
                        for s in range(3)] + CLAIMS, wanted_classes=['mig.nvidia.com'], fill=True)['fill_cases']
    assert none[0]['status'] == S.NO_CAPACITY
    assert plan()['fill_cases'] == []


def test_extended_resources_can_be_left_out_and_the_newer_class_serves_a_name():
    kinds = [c['kind'] for c in plan(extended_resources=False)['cases']]
    assert 'extended-resource' not in kinds
    newer = device_class('t4-too.example.com', TYPE % 'gpu', 'example.com/t4', created='2026-06-01T00:00:00Z',
                         labels={'gpuops.gpu/role': 'dra', 'app.kubernetes.io/managed-by': 'gpuops.gpu'})
    cases = by_key(plan(classes=CLASSES + [newer])['cases'])
    assert cases[('extended-resource', 'example.com/t4')]['device_class'] == 't4-too.example.com'


@pytest.mark.parametrize('extra, message', [
    ({'mode': 'auto'}, 'smoke_test_mode must be one of device-plugin, dra, both, got auto'),
    ({'mode': 'dra', 'device_classes': ['Bad_Class']}, 'smoke_test_device_classes: Bad_Class is not a DeviceClass name'),
    ({'mode': 'dra', 'claim_templates': ['one-t4', 'a/b/c']},
     'smoke_test_claim_templates: one-t4, a/b/c are not <namespace>/<name> of a ResourceClaimTemplate'),
    ({'mode': 'device-plugin', 'claim_templates': ['team-a/one-t4']},
     'smoke_test_claim_templates is used only with smoke_test_mode dra or both'),
    ({'mode': 'dra', 'device_classes': 'gpu.nvidia.com'}, 'smoke_test_device_classes must be a list'),
    ({'mode': 'dra', 'load': True, 'load_image': 'registry.example.com/burn:1', 'load_duration': 5,
      'load_resources': ['nvidia.com/gpu']},
     'smoke_test_load runs on the resources the device plugin advertises: use it with smoke_test_mode both or '
     'device-plugin'),
])
def test_role_settings(extra, message):
    assert message in D.input_errors(smoke_settings(**extra))


def test_valid_dra_settings_and_the_plain_checks_still_apply():
    assert D.input_errors(smoke_settings(mode='both', device_classes=['gpu.nvidia.com'],
                                         claim_templates=['team-a/one-t4'])) == []
    assert D.input_errors(smoke_settings()) == []
    assert D.input_errors(smoke_settings(mode='dra', image='')) == [
        'smoke_test_image must not be empty (set it to the workload image, or its mirror)']
