# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""ClusterPolicy merge logic (pure): base, overrides, tolerations that keep nvidia.com/gpu, patches."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.common.merge import deep_merge, replace_patch
from ansible_collections.gpuops.gpu.plugins.module_utils.plans import cluster_policy as cp

GPU = {'key': 'nvidia.com/gpu', 'operator': 'Exists', 'effect': 'NoSchedule'}
DEDICATED = {'key': 'dedicated', 'operator': 'Equal', 'value': 'gpu', 'effect': 'NoSchedule'}
EXAMPLE = {'kind': 'ClusterPolicy', 'metadata': {'name': 'gpu-cluster-policy'},
           'spec': {'operator': {'defaultRuntime': 'crio'}, 'mig': {'strategy': 'single'},
                    'daemonsets': {'updateStrategy': 'RollingUpdate', 'rollingUpdate': {'maxUnavailable': '1'}},
                    'devicePlugin': {'enabled': True, 'config': {'name': '', 'default': ''}},
                    'validator': {'plugin': {'env': []}}}}
ALM = [{'kind': 'NVIDIADriver', 'spec': {}}, EXAMPLE]

# A fragment shaped like the ClusterPolicy CRD's spec schema.
SCHEMA = {'type': 'object', 'properties': {
    'mig': {'type': 'object', 'properties': {'strategy': {'type': 'string', 'enum': ['none', 'single', 'mixed']}}},
    'devicePlugin': {'type': 'object', 'properties': {
        'enabled': {'type': 'boolean'}, 'config': {'type': 'object', 'properties': {
            'name': {'type': 'string'}, 'default': {'type': 'string'}}},
        'env': {'type': 'array', 'items': {'type': 'object', 'required': ['name'], 'properties': {
            'name': {'type': 'string'}, 'value': {'type': 'string'}}}}}},
    'daemonsets': {'type': 'object', 'properties': {
        'rollingUpdate': {'type': 'object', 'properties': {'maxUnavailable': {'type': 'string'}}},
        'priorityClassName': {'type': 'string'},
        'labels': {'type': 'object', 'additionalProperties': {'type': 'string'}},
        'tolerations': {'type': 'array', 'items': {'type': 'object', 'properties': {
            'key': {'type': 'string'}, 'operator': {'type': 'string'}, 'value': {'type': 'string'},
            'effect': {'type': 'string'}, 'tolerationSeconds': {'type': 'integer', 'format': 'int64'}}}}}},
    'driver': {'type': 'object', 'properties': {
        'enabled': {'type': 'boolean'},
        'upgradePolicy': {'type': 'object', 'properties': {
            'maxUnavailable': {'x-kubernetes-int-or-string': True, 'anyOf': [{'type': 'integer'}, {'type': 'string'}]}}},
        'manager': {'type': 'object', 'x-kubernetes-preserve-unknown-fields': True}}},
}}


# --- base -----------------------------------------------------------------------------------

def test_base_is_the_cluster_policy_of_the_alm_examples():
    name, spec = cp.base_policy(ALM)
    assert name == 'gpu-cluster-policy' and spec == EXAMPLE['spec']
    spec['mig']['strategy'] = 'mixed'
    assert EXAMPLE['spec']['mig']['strategy'] == 'single'  # a copy


def test_base_from_object_spec_or_defaults():
    assert cp.base_policy(base={'metadata': {'name': 'x'}, 'spec': {'a': {}}}) == ('x', {'a': {}})
    assert cp.base_policy(base={'mig': {'strategy': 'none'}}) == (None, {'mig': {'strategy': 'none'}})
    name, spec = cp.base_policy()
    assert name is None and spec == cp.DEFAULT_SPEC and spec is not cp.DEFAULT_SPEC


def test_defaults_have_the_fields_the_crd_requires_and_tolerate_gpu():
    required = ['daemonsets', 'dcgm', 'dcgmExporter', 'devicePlugin', 'driver', 'gfd', 'nodeStatusExporter',
                'operator', 'toolkit']
    assert all(key in cp.DEFAULT_SPEC for key in required)
    assert cp.DEFAULT_SPEC['operator']['defaultRuntime']
    assert GPU in cp.DEFAULT_SPEC['daemonsets']['tolerations']


@pytest.mark.parametrize('alm, needle', [
    ([{'kind': 'NVIDIADriver'}], 'has no ClusterPolicy (kinds: NVIDIADriver)'),
    ([{'kind': 'ClusterPolicy', 'spec': {}}], 'has no spec'),
    ('[{"kind": "ClusterPolicy"}]', 'must be the list'),
])
def test_bad_bases(alm, needle):
    with pytest.raises(cp.PolicyError) as info:
        cp.base_policy(alm)
    assert needle in str(info.value)


def test_desired_spec_from_example_with_overrides():
    spec = cp.desired_spec(EXAMPLE['spec'], {'mig': {'strategy': 'mixed'}, 'dcgmExporter': {'enabled': True}})
    assert spec['mig'] == {'strategy': 'mixed'} and spec['dcgmExporter'] == {'enabled': True}
    assert spec['devicePlugin'] == EXAMPLE['spec']['devicePlugin']
    assert 'tolerations' not in spec['daemonsets']  # nothing asked: the operator's own default applies


def test_user_tolerations_never_lose_nvidia_gpu():
    spec = cp.desired_spec(EXAMPLE['spec'], tolerations=[DEDICATED])
    assert spec['daemonsets']['tolerations'] == [DEDICATED, GPU]
    spec = cp.desired_spec(EXAMPLE['spec'], {'daemonsets': {'tolerations': [DEDICATED]}})
    assert spec['daemonsets']['tolerations'] == [DEDICATED, GPU]
    assert spec['daemonsets']['updateStrategy'] == 'RollingUpdate'


def test_tolerations_are_deduplicated_across_sources():
    spec = cp.desired_spec(cp.DEFAULT_SPEC, {'daemonsets': {'tolerations': [DEDICATED, GPU]}}, [DEDICATED])
    assert spec['daemonsets']['tolerations'] == [GPU, DEDICATED]


def test_invalid_toleration_raises():
    with pytest.raises(ValueError, match='Exists must not set value'):
        cp.desired_spec(EXAMPLE['spec'], tolerations=[{'key': 'a', 'operator': 'Exists', 'value': 'b'}])


# --- patches --------------------------------------------------------------------------------

def existing(**changes):
    spec = copy.deepcopy(EXAMPLE['spec'])
    spec['mig']['strategy'] = 'mixed'                       # set by the mig role
    spec['devicePlugin']['config'] = {'name': 'sharing', 'default': 'none'}  # set by the sharing role
    spec.update(changes)
    return spec


def test_patch_leaves_fields_the_user_did_not_mention():
    assert cp.patch_for_existing(existing(), {}) == {}
    assert cp.patch_for_existing(existing(), {'dcgmExporter': {'serviceMonitor': {'enabled': True}}}) == {
        'dcgmExporter': {'serviceMonitor': {'enabled': True}}}


def test_patch_contains_only_differing_leaves():
    patch = cp.patch_for_existing(existing(), {'mig': {'strategy': 'mixed'},
                                               'devicePlugin': {'enabled': True, 'config': {'default': 'ts-4'}}})
    assert patch == {'devicePlugin': {'config': {'default': 'ts-4'}}}


def test_null_override_removes_an_existing_field_only():
    assert cp.patch_for_existing(existing(), {'validator': None, 'gds': None}) == {'validator': None}


def test_patch_merges_tolerations_with_the_stored_ones():
    current = existing(daemonsets={'tolerations': [GPU, {'key': 'x', 'operator': 'Exists', 'effect': 'NoExecute'}]})
    patch = cp.patch_for_existing(current, tolerations=[DEDICATED])
    assert patch == {'daemonsets': {'tolerations': current['daemonsets']['tolerations'] + [DEDICATED]}}
    assert cp.patch_for_existing(deep_merge(current, patch), tolerations=[DEDICATED]) == {}


def test_patch_repairs_a_list_without_nvidia_gpu():
    current = existing(daemonsets={'tolerations': [DEDICATED]})
    assert cp.gpu_toleration_missing(current)
    assert cp.patch_for_existing(current) == {'daemonsets': {'tolerations': [DEDICATED, GPU]}}
    assert not cp.gpu_toleration_missing(existing())   # empty list: the operator default tolerates it


def test_gpu_toleration_covered_by_a_wildcard():
    assert not cp.gpu_toleration_missing({'daemonsets': {'tolerations': [{'operator': 'Exists'}]}})
    assert cp.gpu_toleration_missing({'daemonsets': {'tolerations': [{'key': 'nvidia.com/gpu', 'operator': 'Exists',
                                                                      'effect': 'NoExecute'}]}})


def test_replace_patch_makes_the_spec_exact():
    wanted = cp.desired_spec(EXAMPLE['spec'], {'gfd': {'enabled': True}})
    patch = replace_patch(existing(gds={'enabled': False}), wanted)
    assert patch['gds'] is None and patch['mig'] == {'strategy': 'single'}
    assert patch['devicePlugin'] == {'config': {'name': '', 'default': ''}}
    assert deep_merge(existing(gds={'enabled': False}), patch) == wanted
    assert replace_patch(wanted, wanted) == {}


# --- validation -----------------------------------------------------------------------------

@pytest.mark.parametrize('overrides, tolerations, needle', [
    ('mixed', None, 'overrides must be a mapping'),
    ({'mig': 'mixed'}, None, "overrides.mig must be a mapping (ClusterPolicy spec.mig is an object), got string 'mixed'"),
    ({'mig': {'strategy': 'Mixed'}}, None, 'overrides.mig.strategy must be one of none, single, mixed'),
    ({'daemonsets': {'tolerations': [{'key': 'a', 'operator': 'Exists', 'value': 'b'}]}}, None,
     'overrides.daemonsets.tolerations[0]: operator Exists must not set value'),
    ({}, [{'key': 'a', 'operator': 'Equals'}], "tolerations[0].operator must be Exists or Equal"),
])
def test_input_errors_without_schema(overrides, tolerations, needle):
    errors = cp.input_errors(overrides, tolerations)
    assert any(needle in e for e in errors), errors


def test_input_errors_with_schema_checks_types_enums_and_unknown_fields():
    errors = cp.input_errors({'mig': {'strategy': 5}, 'devicePlugn': {'enabled': True},
                              'driver': {'enabled': 'yes', 'upgradePolicy': {'maxUnavailable': '25%'}}},
                             [{'key': 'a', 'operator': 'Exists', 'tolerationSeconds': '60', 'effect': 'NoExecute'}],
                             SCHEMA)
    text = ' | '.join(errors)
    assert "overrides: unknown field 'devicePlugn'; did you mean 'devicePlugin'?" in text
    assert 'overrides.driver.enabled must be true or false, got string' in text
    assert 'overrides.mig.strategy must be a string (quote it in YAML), got integer 5' in text
    assert 'spec.daemonsets.tolerations[0].tolerationSeconds must be an integer' in text
    assert 'maxUnavailable' not in text  # int-or-string


def test_schema_accepts_valid_values_and_open_objects():
    good = {'mig': {'strategy': 'mixed'},
            'driver': {'upgradePolicy': {'maxUnavailable': 1}, 'manager': {'anything': {'goes': 1}}},
            'daemonsets': {'labels': {'team': 'ml'}, 'tolerations': [GPU]},
            'devicePlugin': {'env': [{'name': 'A', 'value': 'b'}]}}
    assert cp.schema_errors(good, SCHEMA) == []
    assert cp.schema_errors({'daemonsets': {'labels': {'team': 1}}}, SCHEMA) == [
        'spec.daemonsets.labels.team must be a string (quote it in YAML), got integer 1']
    assert cp.schema_errors({'mig': {'strategy': 'all'}}, SCHEMA) == [
        "spec.mig.strategy must be one of none, single, mixed, got 'all'"]


def test_spec_schema_from_crd():
    crd = {'spec': {'versions': [{'name': 'v1', 'served': True, 'schema': {'openAPIV3Schema': {
        'properties': {'spec': SCHEMA}}}}]}}
    assert cp.spec_schema(crd) is SCHEMA
    assert cp.spec_schema({}) is None


# --- status ---------------------------------------------------------------------------------

def test_status_helpers():
    assert cp.policy_state({'status': {'state': 'notReady'}}) == 'notReady'
    assert cp.policy_state(None) == ''
    policy = {'status': {'conditions': [{'type': 'Ready', 'status': 'False', 'reason': 'OperandNotReady',
                                         'message': 'ClusterPolicy is not ready, states not ready: [state-driver]'}]}}
    assert cp.not_ready_reason(policy) == 'OperandNotReady: ClusterPolicy is not ready, states not ready: [state-driver]'
    assert cp.not_ready_reason({'status': {'conditions': [{'type': 'Ready', 'status': 'True'}]}}) == ''


def test_only_one_cluster_policy():
    policies = [{'metadata': {'name': 'cluster-policy'}}]
    assert 'ClusterPolicy cluster-policy already exists' in cp.other_policy_error(policies, 'gpu-cluster-policy')
    assert cp.other_policy_error(policies, 'cluster-policy') is None


@pytest.mark.parametrize('spec, override, expected', [
    # nothing set (or no ClusterPolicy at all): the operator's defaults
    (None, None, ('single', '', '', 'default-mig-parted-config')),
    ({}, None, ('single', '', '', 'default-mig-parted-config')),
    ({'mig': None, 'devicePlugin': {'config': None}, 'migManager': {'config': {'name': ''}}}, None,
     ('single', '', '', 'default-mig-parted-config')),
    # what the ClusterPolicy sets
    ({'mig': {'strategy': 'mixed'}, 'devicePlugin': {'enabled': True, 'config': {'name': 'dp', 'default': 'ts-4'}},
      'migManager': {'config': {'name': 'gpuops-mig-parted-config'}}}, None,
     ('mixed', 'dp', 'ts-4', 'gpuops-mig-parted-config')),
    (EXAMPLE['spec'], None, ('single', '', '', 'default-mig-parted-config')),
    # an explicit strategy wins over the ClusterPolicy's; an empty one does not
    ({'mig': {'strategy': 'mixed'}}, 'single', ('single', '', '', 'default-mig-parted-config')),
    ({'mig': {'strategy': 'mixed'}}, '', ('mixed', '', '', 'default-mig-parted-config')),
    ({'devicePlugin': {'config': {'name': 'dp'}}}, 'none', ('none', 'dp', '', 'default-mig-parted-config')),
])
def test_policy_settings(spec, override, expected):
    settings = cp.policy_settings(spec, override)
    assert sorted(settings) == ['device_plugin_config', 'mig_config_map', 'mig_strategy']
    assert (settings['mig_strategy'], settings['device_plugin_config']['name'],
            settings['device_plugin_config']['default'], settings['mig_config_map']) == expected
    assert sorted(settings['device_plugin_config']) == ['default', 'name']
