# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.plans.dra_resources import resources_plan, role_labels

NAMESPACES = ['team-a', 'team-b', 'ml-1', 'ml-2']
SELECTED = {'team=ml': ['ml-1', 'ml-2']}
OURS = role_labels()
GATES = ['TimeSlicingSettings', 'MPSSupport']
CHART = [{'metadata': {'name': 'gpu.nvidia.com'}, 'spec': {'extendedResourceName': 'nvidia.com/gpu'}},
         {'metadata': {'name': 'mig.nvidia.com'}, 'spec': {}}]


def obj(name, namespace=None, labels=None):
    meta = {'name': name, 'labels': labels or {}}
    if namespace:
        meta['namespace'] = namespace
    return {'metadata': meta, 'spec': {}}


def plan(classes=(), templates=(), quotas=(), gates=tuple(GATES), existing=None, served=True):
    inputs = {'device_classes': list(classes), 'claim_templates': list(templates), 'quotas': list(quotas),
              'feature_gates': gates}
    return resources_plan(inputs, NAMESPACES, SELECTED, dict({'device_classes': CHART}, **(existing or {})), served)


def good(**kwargs):
    result = plan(**kwargs)
    assert result['errors'] == []
    return result


def one_error(**kwargs):
    result = plan(**kwargs)
    assert len(result['errors']) == 1, result['errors']
    assert all(result[key] == [] for key in ('device_classes', 'claim_templates', 'quotas', 'delete'))
    return result['errors'][0]


def request_of(template):
    return template['spec']['spec']['devices']['requests'][0]


# --- what is written ------------------------------------------------------------------------------------

def test_a_device_class_per_product_with_its_labels():
    result = good(classes=[{'name': 'h100.example.com', 'product_name': 'NVIDIA H100 80GB HBM3',
                            'extended_resource_name': 'example.com/h100', 'labels': {'team': 'ml'},
                            'annotations': {'owner': 'platform'}}])
    cls = result['device_classes'][0]
    assert cls['apiVersion'] == 'resource.k8s.io/v1' and cls['kind'] == 'DeviceClass'
    assert cls['metadata'] == {'name': 'h100.example.com', 'annotations': {'owner': 'platform'},
                               'labels': {'team': 'ml', 'app.kubernetes.io/managed-by': 'gpuops.gpu',
                                          'gpuops.gpu/role': 'dra'}}
    assert cls['spec']['extendedResourceName'] == 'example.com/h100'
    assert cls['spec']['selectors'] == [{'cel': {'expression': (
        "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].productName == "
        "'NVIDIA H100 80GB HBM3'")}}]
    assert 'config' not in cls['spec']
    assert result['summary']['device_classes'] == ['h100.example.com']


def test_a_sharing_mode_class_carries_the_driver_config():
    cls = good(classes=[{'name': 'mig-mps', 'mig_profile': '3g.40gb', 'sharing': {'strategy': 'MPS'}}])
    config = cls['device_classes'][0]['spec']['config']
    assert config == [{'opaque': {'driver': 'gpu.nvidia.com', 'parameters': {
        'apiVersion': 'resource.nvidia.com/v1beta1', 'kind': 'MigDeviceConfig',
        'sharing': {'strategy': 'MPS', 'mpsConfig': {}}}}}]


def test_templates_per_namespace():
    result = good(templates=[
        {'name': 'one-gpu', 'namespaces': ['team-a', 'team-b'], 'device_class': 'gpu.nvidia.com'},
        {'name': 'all', 'namespace_selector': 'team=ml', 'device_class': 'gpu.nvidia.com', 'allocation_mode': 'All'},
        {'name': 'mig', 'namespace': 'team-a', 'device_class': 'mig.nvidia.com', 'mig_profile': '1g.10gb',
         'sharing': {'strategy': 'TimeSlicing'}},
        {'name': 'ts', 'namespace': 'team-a', 'device_class': 'gpu.nvidia.com', 'count': 2,
         'sharing': {'strategy': 'TimeSlicing', 'interval': 'Medium'}}])
    names = result['summary']['claim_templates']
    assert names == ['team-a/one-gpu', 'team-b/one-gpu', 'ml-1/all', 'ml-2/all', 'team-a/mig', 'team-a/ts']
    first = result['claim_templates'][0]
    assert first['kind'] == 'ResourceClaimTemplate' and first['metadata']['namespace'] == 'team-a'
    assert request_of(first) == {'name': 'gpu', 'exactly': {'deviceClassName': 'gpu.nvidia.com',
                                                            'allocationMode': 'ExactCount', 'count': 1}}
    assert request_of(result['claim_templates'][2])['exactly'] == {'deviceClassName': 'gpu.nvidia.com',
                                                                   'allocationMode': 'All'}
    mig = result['claim_templates'][4]['spec']['spec']['devices']
    assert mig['requests'][0]['exactly']['selectors'][0]['cel']['expression'].endswith(
        "device.attributes['gpu.nvidia.com'].profile == '1g.10gb'")
    assert mig['config'][0]['requests'] == ['gpu']
    assert mig['config'][0]['opaque']['parameters']['kind'] == 'MigDeviceConfig'
    ts = result['claim_templates'][5]['spec']['spec']['devices']
    assert request_of(result['claim_templates'][5])['exactly']['count'] == 2
    assert ts['config'][0]['opaque']['parameters']['sharing'] == {
        'strategy': 'TimeSlicing', 'timeSlicingConfig': {'interval': 'Medium'}}


def test_a_template_of_a_mig_class_of_the_inputs_gets_mig_config():
    result = good(classes=[{'name': 'small', 'mig_profile': '1g.10gb'}],
                  templates=[{'name': 't', 'namespace': 'team-a', 'device_class': 'small',
                              'sharing': {'strategy': 'MPS'}}])
    assert result['claim_templates'][0]['spec']['spec']['devices']['config'][0]['opaque']['parameters']['kind'] == \
        'MigDeviceConfig'


def test_quotas_on_devices_per_class():
    result = good(classes=[{'name': 'h100'}], quotas=[
        {'namespace_selector': 'team=ml', 'devices': {'h100': 4, 'mig.nvidia.com': 0}},
        {'name': 'a', 'namespace': 'team-a', 'devices': {'gpu.nvidia.com': 2}, 'labels': {'team': 'a'}}])
    assert result['summary']['quotas'] == ['ml-1/gpu-dra-quota', 'ml-2/gpu-dra-quota', 'team-a/a']
    quota = result['quotas'][0]
    assert quota['spec'] == {'hard': {'h100.deviceclass.resource.k8s.io/devices': '4',
                                      'mig.nvidia.com.deviceclass.resource.k8s.io/devices': '0'}}
    assert result['quotas'][2]['metadata']['labels'] == dict(OURS, team='a')


# --- ownership and removal ------------------------------------------------------------------------------

def test_removed_entries_are_deleted_only_when_the_role_wrote_them():
    existing = {'device_classes': CHART + [obj('old', labels=OURS), obj('user'), obj('quotas-role', labels={
        'app.kubernetes.io/managed-by': 'gpuops.gpu'})],
        'claim_templates': [obj('old', 'team-a', OURS), obj('keep', 'team-a', OURS), obj('mine', 'team-b')],
        'quotas': [obj('gpu-quota', 'team-a', {'app.kubernetes.io/managed-by': 'gpuops.gpu'}),
                   obj('gpu-dra-quota', 'team-b', OURS)]}
    result = good(templates=[{'name': 'keep', 'namespace': 'team-a', 'device_class': 'gpu.nvidia.com'}],
                  existing=existing)
    assert result['delete'] == [
        {'api_version': 'v1', 'kind': 'ResourceQuota', 'namespace': 'team-b', 'name': 'gpu-dra-quota'},
        {'api_version': 'resource.k8s.io/v1', 'kind': 'ResourceClaimTemplate', 'namespace': 'team-a', 'name': 'old'},
        {'api_version': 'resource.k8s.io/v1', 'kind': 'DeviceClass', 'namespace': None, 'name': 'old'}]
    assert result['summary']['deleted'] == ['ResourceQuota team-b/gpu-dra-quota', 'ResourceClaimTemplate team-a/old',
                                            'DeviceClass old']


def test_a_template_whose_spec_changed_is_replaced_and_dry_run_under_a_name_of_its_own():
    wanted = good(templates=[T])['claim_templates'][0]
    same = dict(wanted, spec={'spec': dict(wanted['spec']['spec'], metadata={})})  # as the API server reads it back
    old = dict(wanted, spec={'spec': {'devices': {'requests': [{'name': 'gpu', 'exactly': {
        'deviceClassName': 'gpu.nvidia.com', 'allocationMode': 'ExactCount', 'count': 2}}]}}})
    assert good(templates=[T], existing={'claim_templates': [same]})['replace'] == []
    result = good(classes=[{'name': 'c'}], templates=[T, dict(T, name='u')], existing={'claim_templates': [old]})
    assert result['replace'] == [{'api_version': 'resource.k8s.io/v1', 'kind': 'ResourceClaimTemplate',
                                  'namespace': 'team-a', 'name': 't'}]
    assert result['summary']['replaced'] == ['ResourceClaimTemplate team-a/t']
    assert [m['metadata']['name'] for m in result['dry_run']] == ['c', 't-gpuops-check', 'u']
    assert result['dry_run'][1]['spec'] == result['claim_templates'][0]['spec']
    assert result['claim_templates'][0]['metadata']['name'] == 't'


def test_no_entry_and_nothing_written_is_nothing_to_do():
    result = good()
    assert result['delete'] == [] and result['device_classes'] == []


@pytest.mark.parametrize('existing, kind', [
    ({'device_classes': CHART + [obj('h100')]}, 'DeviceClass h100'),
    ({'device_classes': CHART + [obj('h100', labels={'app.kubernetes.io/managed-by': 'gpuops.gpu'})]},
     'DeviceClass h100'),
])
def test_an_object_the_role_did_not_write_is_never_overwritten(existing, kind):
    message = one_error(classes=[{'name': 'h100'}], existing=existing)
    assert message == ('%s exists and was not written by the dra role (labels app.kubernetes.io/managed-by='
                       'gpuops.gpu, gpuops.gpu/role=dra); pick another name or remove it first' % kind)


def test_foreign_template_and_quota_names_are_refused():
    existing = {'claim_templates': [obj('t', 'team-a')], 'quotas': [obj('gpu-dra-quota', 'team-a')]}
    result = plan(templates=[{'name': 't', 'namespace': 'team-a', 'device_class': 'gpu.nvidia.com'}],
                  quotas=[{'namespace': 'team-a', 'devices': {'gpu.nvidia.com': 1}}], existing=existing)
    found = [e.split(' exists')[0] for e in result['errors']]
    assert found == ['ResourceClaimTemplate team-a/t', 'ResourceQuota team-a/gpu-dra-quota']


def test_a_class_the_role_is_removing_cannot_be_named():
    existing = {'device_classes': CHART + [obj('going', labels=OURS)]}
    message = one_error(templates=[{'name': 't', 'namespace': 'team-a', 'device_class': 'going'}], existing=existing)
    assert "device_class 'going' is neither a DeviceClass in the cluster nor in dra_device_classes" in message


def test_a_class_of_the_cluster_can_be_named():
    existing = {'device_classes': CHART + [obj('user-own')]}
    good(templates=[{'name': 't', 'namespace': 'team-a', 'device_class': 'user-own'}],
         quotas=[{'namespace': 'team-a', 'devices': {'user-own': 1}}], existing=existing)


def test_resource_api_not_served():
    message = one_error(classes=[{'name': 'x'}], served=False)
    assert message.startswith('resource.k8s.io/v1 is not served by this cluster: DRA needs Kubernetes 1.34')
    assert plan(served=False)['errors'] == []


def test_an_extended_resource_name_another_class_serves_is_a_warning():
    result = good(classes=[{'name': 'mine', 'extended_resource_name': 'nvidia.com/gpu'}])
    assert result['warnings'] == ["DeviceClass 'gpu.nvidia.com' in the cluster already serves nvidia.com/gpu; of two "
                                  "classes with the same extended resource name the one created later serves the "
                                  "pods' requests (now: 'mine')"]


# --- every bad input, its own message ---------------------------------------------------------------------

T = {'name': 't', 'namespace': 'team-a', 'device_class': 'gpu.nvidia.com'}


@pytest.mark.parametrize('kwargs, message', [
    ({'classes': ['x']}, 'dra_device_classes[0] must be a mapping, got string'),
    ({'classes': [{'name': 'X_Y'}]}, "dra_device_classes[0] 'X_Y': name 'X_Y' must be a lowercase DNS subdomain"),
    ({'classes': [{'name': 'a', 'colour': 'red'}]}, "dra_device_classes[0] 'a': unknown key 'colour'"),
    ({'classes': [{'name': 'a', 'type': 'vfio'}]}, "dra_device_classes[0] 'a'.type must be one of gpu, mig"),
    ({'classes': [{'name': 'a', 'extended_resource_name': 'gpu'}]},
     "dra_device_classes[0] 'a'.extended_resource_name must be a resource name with a domain"),
    ({'classes': [{'name': 'a', 'extended_resource_name': 'kubernetes.io/gpu'}]},
     'the domain may not be kubernetes.io nor start with requests.'),
    ({'classes': [{'name': 'a', 'sharing': {'strategy': 'MPS'}}], 'gates': []},
     "dra_device_classes[0] 'a'.sharing: sharing with MPS needs the DRA driver feature gate MPSSupport"),
    ({'classes': [{'name': 'a', 'labels': {'gpuops.gpu/role': 'mine'}}]},
     "dra_device_classes[0] 'a'.labels: gpuops.gpu/role is set by the role (dra) and cannot be overridden"),
    ({'classes': [{'name': 'a', 'labels': {'app.kubernetes.io/managed-by': 'me'}}]},
     'app.kubernetes.io/managed-by is set by the role (gpuops.gpu) and cannot be overridden'),
    ({'classes': [{'name': 'a'}, {'name': 'a'}]}, "dra_device_classes: DeviceClass 'a' is declared twice"),
    ({'classes': [{'name': 'a', 'extended_resource_name': 'x.io/g'}, {'name': 'b', 'extended_resource_name': 'x.io/g'}]},
     "extended_resource_name x.io/g is set on both 'a' and 'b'"),
    ({'templates': [dict(T, device_class='gpu.nvidia.co')]},
     "dra_claim_templates[0] 't'.device_class 'gpu.nvidia.co' is neither a DeviceClass in the cluster nor in "
     "dra_device_classes; did you mean 'gpu.nvidia.com'?"),
    ({'templates': [dict(T, device_class=None)]}, "dra_claim_templates[0] 't'.device_class is required"),
    ({'templates': [dict(T, count=0)]}, "dra_claim_templates[0] 't'.count must be a whole number of devices, at least 1"),
    ({'templates': [dict(T, allocation_mode='Some')]}, "'t'.allocation_mode must be one of ExactCount, All"),
    ({'templates': [dict(T, allocation_mode='All', count=2)]}, 'count applies to allocation_mode ExactCount only'),
    ({'templates': [dict(T, memory_min='big')]}, "dra_claim_templates[0] 't'.memory_min must be a positive quantity"),
    ({'templates': [dict(T, sharing={'strategy': 'MPS'})], 'gates': {'MPSSupport': False}},
     "dra_claim_templates[0] 't'.sharing: sharing with MPS needs the DRA driver feature gate MPSSupport, which is off"),
    ({'templates': [dict(T, sharing={'strategy': 'TimeSlicing'})], 'gates': None},
     'needs the DRA driver feature gate TimeSlicingSettings'),
    ({'templates': [dict(T, count=2, sharing={'strategy': 'MPS', 'per_device_pinned_memory_limit': {3: '1Gi'}})]},
     'device index 3 is not among the 2 device(s) the request allocates'),
    ({'templates': [dict(T, namespace='nope')]}, "dra_claim_templates[0] 't': namespace 'nope' not found"),
    ({'templates': [dict(T, namespace=None)]}, 'set namespace, namespaces or namespace_selector'),
    ({'templates': [dict(T, name=None)]}, "dra_claim_templates[0]: name None must be a lowercase DNS subdomain"),
    ({'templates': [dict(T, namespace_selector='team=none')]}, "namespace_selector 'team=none' was not resolved"),
    ({'quotas': [{'namespace': 'team-a'}]}, 'dra_quotas[0].devices must be a non-empty mapping of DeviceClass name'),
    ({'quotas': [{'namespace': 'team-a', 'devices': {'h200': 1}}]},
     "dra_quotas[0].devices: DeviceClass 'h200' is neither in the cluster nor in dra_device_classes"),
    ({'quotas': [{'namespace': 'team-a', 'devices': {'gpu.nvidia.com': -1}}]},
     'dra_quotas[0].devices[gpu.nvidia.com] must be a whole number of devices (0 or more), got -1'),
    ({'quotas': [{'namespace': 'team-a', 'devices': {'gpu.nvidia.com': 1}, 'hard': {}}]},
     "dra_quotas[0]: unknown key 'hard'"),
    ({'quotas': [{'name': 'q', 'namespace': 'gone', 'devices': {'gpu.nvidia.com': 1}}]},
     "dra_quotas[0] 'q': namespace 'gone' not found; create it first"),
    ({'quotas': [{'name': 'Q', 'namespace': 'team-a', 'devices': {'gpu.nvidia.com': 1}}]},
     "dra_quotas[0] 'Q': name 'Q' must be a lowercase DNS subdomain"),
    ({'quotas': [{'namespace': 'team-a', 'devices': {'gpu.nvidia.com': 1}},
                 {'namespace': 'team-a', 'devices': {'gpu.nvidia.com': 2}}]},
     'team-a/gpu-dra-quota is also set by'),
    ({'gates': 'MPSSupport'}, 'dra_driver_feature_gates: the driver feature gates must be a list of names'),
])
def test_each_bad_input_has_its_own_message(kwargs, message):
    error = one_error(**kwargs)
    assert message in error, error


def test_inputs_that_are_not_lists_or_a_mapping():
    result = resources_plan({'device_classes': 'h100', 'extra': 1}, NAMESPACES)
    assert result['errors'] == ["inputs: unknown key 'extra' (known keys: device_classes, claim_templates, quotas, "
                                "feature_gates)", 'dra_device_classes must be a list of mappings, got string']
    assert resources_plan(None, NAMESPACES)['errors'] == ['the inputs must be a mapping, got null']


def test_every_error_at_once_and_nothing_to_write():
    result = plan(classes=[{'name': 'a', 'type': 'x'}], templates=[dict(T, device_class='none')],
                  quotas=[{'namespace': 'team-a', 'devices': {}}])
    assert len(result['errors']) == 3
    assert result['summary'] == {'device_classes': [], 'claim_templates': [], 'quotas': [], 'deleted': [],
                                 'replaced': [], 'warnings': []}
    assert result['dry_run'] == [] and result['replace'] == []
