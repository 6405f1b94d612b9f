# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""PolicyApply against an in-memory API: dry run before every write, no write when nothing
differs, the ready wait (settle after a change, 'ignored', timeout)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import json

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.common.merge import deep_merge
from ansible_collections.gpuops.gpu.plugins.module_utils.k8s.client import Connection
from ansible_collections.gpuops.gpu.plugins.module_utils.ops import cluster_policy as cpc
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.fakes import FakeClock

kubernetes = pytest.importorskip('kubernetes')
ApiException = kubernetes.client.rest.ApiException

SCHEMA = {'type': 'object', 'properties': {
    'mig': {'type': 'object', 'properties': {'strategy': {'type': 'string', 'enum': ['none', 'single', 'mixed']}}},
    'daemonsets': {'type': 'object', 'properties': {'tolerations': {'type': 'array', 'items': {'type': 'object'}},
                                                    'updateStrategy': {'type': 'string'}}},
    'driver': {'type': 'object', 'properties': {'enabled': {'type': 'boolean'}}},
    'operator': {'type': 'object', 'properties': {'defaultRuntime': {'type': 'string'}}},
}}
CRD = {'spec': {'versions': [{'name': 'v1', 'served': True,
                              'schema': {'openAPIV3Schema': {'properties': {'spec': SCHEMA}}}}]}}
ALM = [{'kind': 'ClusterPolicy', 'metadata': {'name': 'gpu-cluster-policy'},
        'spec': {'operator': {'defaultRuntime': 'crio'}, 'mig': {'strategy': 'single'},
                 'driver': {'enabled': True}}}]


class FakeCustom(object):
    def __init__(self, policies=(), crd=True, refuse=None, states=None):
        self.policies = dict((p['metadata']['name'], copy.deepcopy(p)) for p in policies)
        self.crd = crd
        self.refuse = refuse
        self.states = list(states or ['ready'])
        self.calls = []

    def list_cluster_custom_object(self, group, version, plural, **_kwargs):
        if not self.crd:
            raise ApiException(status=404, reason='Not Found')
        return {'items': [copy.deepcopy(p) for p in self.policies.values()]}

    def get_cluster_custom_object(self, group, version, plural, name, **_kwargs):
        if plural == 'customresourcedefinitions':
            return CRD
        policy = self.policies.get(name)
        if policy is None:
            raise ApiException(status=404, reason='Not Found')
        if len(self.states) > 1:
            self.states.pop(0)
        policy['status'] = {'state': self.states[0]}
        return copy.deepcopy(policy)

    def _refused(self):
        exc = ApiException(status=422, reason='Unprocessable Entity')
        exc.body = json.dumps({'message': self.refuse})
        return exc

    def create_cluster_custom_object(self, group, version, plural, body, **kwargs):
        self.calls.append(('create', kwargs.get('dry_run'), kwargs.get('field_validation')))
        if self.refuse:
            raise self._refused()
        if kwargs.get('dry_run') != 'All':
            self.policies[body['metadata']['name']] = copy.deepcopy(body)
        return copy.deepcopy(body)

    def patch_cluster_custom_object(self, group, version, plural, name, body, **kwargs):
        self.calls.append(('patch', kwargs.get('dry_run'), body))
        if self.refuse:
            raise self._refused()
        after = copy.deepcopy(self.policies[name])
        after['spec'] = deep_merge(after.get('spec') or {}, body['spec'])
        if kwargs.get('dry_run') != 'All':
            self.policies[name] = after
        return copy.deepcopy(after)

    def delete_cluster_custom_object(self, group, version, plural, name, **_kwargs):
        self.calls.append(('delete', None, name))
        self.policies.pop(name)


def params(**kw):
    base = {'name': None, 'alm_examples': None, 'base': None, 'overrides': {}, 'tolerations': [], 'replace': False,
            'state': 'present', 'wait': True, 'wait_timeout': 30, 'poll_interval': 1.0}
    base.update(kw)
    return base


def apply(custom, check_mode=False, **kw):
    clock = FakeClock()
    result = cpc.PolicyApply(Connection(custom=custom), params(**kw), check_mode, sleep=clock.sleep, clock=clock).run()
    return result, clock


def stored(name='gpu-cluster-policy', **spec):
    base = {'operator': {'defaultRuntime': 'crio'}, 'mig': {'strategy': 'mixed'}}
    return {'metadata': {'name': name}, 'spec': dict(base, **spec)}


def test_create_from_alm_examples_dry_runs_first_then_waits_to_settle():
    custom = FakeCustom(states=['notReady', 'notReady', 'ready'])
    result, clock = apply(custom, alm_examples=ALM, overrides={'mig': {'strategy': 'mixed'}},
                          tolerations=[{'key': 'dedicated', 'operator': 'Exists', 'effect': 'NoSchedule'}])
    assert [c[:2] for c in custom.calls] == [('create', 'All'), ('create', None)]
    assert all(c[2] == 'Strict' for c in custom.calls)
    assert result['created'] and result['state'] == 'ready' and result['name'] == 'gpu-cluster-policy'
    spec = custom.policies['gpu-cluster-policy']['spec']
    assert spec['mig'] == {'strategy': 'mixed'}
    assert spec['daemonsets']['tolerations'][-1] == {'key': 'nvidia.com/gpu', 'operator': 'Exists', 'effect': 'NoSchedule'}
    assert clock.now >= cpc.SETTLE_SECONDS


def test_no_change_makes_no_write_and_does_not_wait():
    custom = FakeCustom([stored()])
    result, clock = apply(custom, alm_examples=ALM, overrides={'mig': {'strategy': 'mixed'}})
    assert result['changed'] is False and custom.calls == [] and clock.now == 0
    assert result['diff']['before'] == result['diff']['after']


def test_existing_policy_keeps_fields_others_set():
    custom = FakeCustom([stored()])
    result, _clock = apply(custom, alm_examples=ALM, overrides={'driver': {'enabled': False}})
    assert result['patch'] == {'driver': {'enabled': False}}
    assert custom.policies['gpu-cluster-policy']['spec']['mig'] == {'strategy': 'mixed'}  # not back to single


def test_replace_makes_example_plus_overrides():
    custom = FakeCustom([stored(extra={'x': 1})])
    result, _clock = apply(custom, alm_examples=ALM, replace=True)
    assert custom.policies['gpu-cluster-policy']['spec'] == ALM[0]['spec']
    assert result['patch']['extra'] is None


def test_check_mode_only_dry_runs():
    custom = FakeCustom([stored()])
    result, _clock = apply(custom, check_mode=True, overrides={'mig': {'strategy': 'single'}})
    assert [c[:2] for c in custom.calls] == [('patch', 'All')]
    assert result['changed'] and result['spec']['mig'] == {'strategy': 'single'}
    assert result['diff']['before']['spec']['mig'] == {'strategy': 'mixed'}
    assert custom.policies['gpu-cluster-policy']['spec']['mig'] == {'strategy': 'mixed'}


def test_apiserver_refusal_in_the_dry_run_writes_nothing():
    custom = FakeCustom([stored()], refuse='spec.driver.enabled: Invalid value: "string"')
    with pytest.raises(cpc.InputError, match=r'refuses this change .*Invalid value.*nothing was changed'):
        apply(custom, overrides={'driver': {'enabled': False}})
    assert [c[:2] for c in custom.calls] == [('patch', 'All')]


def test_schema_errors_fail_before_any_request_that_writes():
    custom = FakeCustom([stored()])
    with pytest.raises(cpc.InputError, match="unknown field 'migg'; did you mean 'mig'"):
        apply(custom, overrides={'migg': {'strategy': 'mixed'}})
    assert custom.calls == []


def test_a_second_cluster_policy_is_refused():
    custom = FakeCustom([stored(name='cluster-policy')])
    with pytest.raises(cpc.InputError, match='ClusterPolicy cluster-policy already exists'):
        apply(custom, name='gpu-cluster-policy', alm_examples=ALM)


def test_patched_changes_the_one_picked_among_several_and_removes_fields():
    custom = FakeCustom([stored(name='a'), stored(name='b')])
    change = {'mig': {'strategy': 'single'}, 'operator': {'defaultRuntime': None}}  # None: remove the field
    with pytest.raises(cpc.InputError, match='ClusterPolicy b already exists'):
        apply(custom, name='a', overrides=change)  # present: never beside another one
    result, clock = apply(custom, name='a', state='patched', overrides=change, wait=False)
    assert [c[:2] for c in custom.calls] == [('patch', 'All'), ('patch', None)]
    assert custom.calls[-1][2] == {'spec': change}
    assert result['changed'] and not result['created'] and clock.now == 0
    assert custom.policies['a']['spec'] == {'operator': {}, 'mig': {'strategy': 'single'}}
    assert custom.policies['b']['spec'] == stored()['spec']
    assert result['diff']['before']['spec']['operator'] == {'defaultRuntime': 'crio'}
    assert result['diff']['after']['spec']['operator'] == {}
    result, _clock = apply(custom, name='a', state='patched', overrides=change, wait=False)
    assert result['changed'] is False and len(custom.calls) == 2  # the second run writes nothing


@pytest.mark.parametrize('check_mode', [False, True])
def test_patched_never_creates(check_mode):
    custom = FakeCustom([stored(name='b')])
    with pytest.raises(cpc.InputError, match=r'ClusterPolicy a not found \(state patched .*nothing was changed'):
        apply(custom, check_mode=check_mode, name='a', state='patched', overrides={'mig': {'strategy': 'single'}})
    assert custom.calls == [] and sorted(custom.policies) == ['b']


def test_missing_crd():
    with pytest.raises(cpc.InputError, match='not served: install the GPU operator first'):
        apply(FakeCustom(crd=False), alm_examples=ALM)
    result, _clock = apply(FakeCustom(crd=False), check_mode=True, alm_examples=ALM)
    assert result['created'] and any('not served yet' in w for w in result['warnings'])


def test_ignored_and_timeout():
    with pytest.raises(cpc.NotReady, match='ignored by the GPU operator'):
        apply(FakeCustom([stored()], states=['ignored']), overrides={'mig': {'strategy': 'none'}})
    with pytest.raises(cpc.NotReady, match=r'not ready after 30s \(state notReady\)'):
        apply(FakeCustom([stored()], states=['notReady']), overrides={'mig': {'strategy': 'none'}})


def test_absent():
    custom = FakeCustom([stored()])
    result, _clock = apply(custom, state='absent')
    assert result['changed'] and custom.policies == {}
    result, _clock = apply(custom, state='absent')
    assert result['changed'] is False


class DriverSchemaCustom(FakeCustom):
    """A CRD whose driver and gds fields include the ones NVIDIA's cross-field rules are about."""

    def get_cluster_custom_object(self, group, version, plural, name, **kwargs):
        if plural == 'customresourcedefinitions':
            schema = {'type': 'object', 'properties': {
                'mig': SCHEMA['properties']['mig'],
                'driver': {'type': 'object', 'properties': {
                    'enabled': {'type': 'boolean'}, 'usePrecompiled': {'type': 'boolean'},
                    'version': {'type': 'string'}, 'kernelModuleType': {'type': 'string'}}},
                'gds': {'type': 'object', 'properties': {'enabled': {'type': 'boolean'},
                                                         'version': {'type': 'string'}}}}}
            return {'spec': {'versions': [{'name': 'v1', 'served': True,
                                           'schema': {'openAPIV3Schema': {'properties': {'spec': schema}}}}]}}
        return FakeCustom.get_cluster_custom_object(self, group, version, plural, name, **kwargs)


def test_driver_rules_fail_before_any_write_with_the_stored_fields_counted():
    # the stored policy has a recent GDS version: enabling GDS without the open modules is refused
    custom = DriverSchemaCustom([stored(gds={'version': '2.20.5'})])
    with pytest.raises(cpc.InputError, match='nothing was changed; the GPU operator would refuse this ClusterPolicy: '
                                             r'spec.gds.enabled: GPUDirect Storage 2.20.5 works only with the open'):
        apply(custom, alm_examples=ALM, overrides={'gds': {'enabled': True}})
    with pytest.raises(cpc.InputError, match='usePrecompiled needs spec.driver.version'):
        apply(custom, alm_examples=ALM, overrides={'driver': {'usePrecompiled': True}})
    assert custom.calls == []
    result, _clock = apply(custom, alm_examples=ALM, overrides={'gds': {'enabled': True},
                                                                'driver': {'kernelModuleType': 'open'}})
    assert result['changed'] and custom.policies['gpu-cluster-policy']['spec']['gds'] == {
        'version': '2.20.5', 'enabled': True}
    # a create is checked too
    with pytest.raises(cpc.InputError, match='usePrecompiled needs'):
        apply(DriverSchemaCustom(), alm_examples=ALM, overrides={'driver': {'usePrecompiled': True}})
