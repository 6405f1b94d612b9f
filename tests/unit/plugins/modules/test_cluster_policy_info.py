# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""cluster_policy_info: which ClusterPolicy a role works on, the errors that stop it (none, several, a
wrong name), the API not served yet, check mode, one request."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.plans.cluster_policy import select_policy
from ansible_collections.gpuops.gpu.plugins.modules import cluster_policy_info

kubernetes = pytest.importorskip('kubernetes')
ApiException = kubernetes.client.rest.ApiException


def policy(name, namespace='gpu-operator', state='ready'):
    return {'apiVersion': 'nvidia.com/v1', 'kind': 'ClusterPolicy', 'metadata': {'name': name},
            'spec': {'mig': {'strategy': 'single'}}, 'status': {'namespace': namespace, 'state': state}}


class FakeCustom(object):
    """Lists ClusterPolicies; ``served=False``: the CRD is not there (404); ``fail``: any other error."""

    def __init__(self, policies=(), served=True, fail=None):
        self.policies = list(policies)
        self.served = served
        self.fail = fail
        self.calls = []

    def list_cluster_custom_object(self, group, version, plural, **_kwargs):
        self.calls.append((group, version, plural))
        if self.fail:
            raise ApiException(status=self.fail, reason='Forbidden')
        if not self.served:
            raise ApiException(status=404, reason='Not Found')
        return {'items': copy.deepcopy(self.policies)}


def test_the_only_one(run_module):
    custom = FakeCustom([policy('gpu-cluster-policy')])
    code, result = run_module(cluster_policy_info, {}, custom=custom)
    assert code == 0
    assert result['changed'] is False
    assert result['name'] == 'gpu-cluster-policy'
    assert result['cluster_policy']['spec'] == {'mig': {'strategy': 'single'}}
    assert result['namespace'] == 'gpu-operator' and result['state'] == 'ready'
    assert result['errors'] == [] and result['api_found'] is True
    assert custom.calls == [('nvidia.com', 'v1', 'clusterpolicies')] and result['api_requests'] == 1
    # the effective settings, with the operator's defaults for what the ClusterPolicy leaves unset
    assert result['mig_strategy'] == 'single' and result['mig_config_map'] == 'default-mig-parted-config'
    assert result['device_plugin_config'] == {'name': '', 'default': ''}


def test_effective_settings_of_the_chosen_one(run_module):
    chosen = policy('b')
    chosen['spec'] = {'mig': {'strategy': 'mixed'}, 'migManager': {'config': {'name': 'gpuops-mig-parted-config'}},
                      'devicePlugin': {'config': {'name': 'gpuops-device-plugin-config', 'default': 'ts-2'}}}
    code, result = run_module(cluster_policy_info, {'name': 'b', 'mig_strategy': 'none'},
                              custom=FakeCustom([policy('a'), chosen]))
    assert code == 1 and 'mig_strategy' in result['msg']  # the info module takes no override
    code, result = run_module(cluster_policy_info, {'name': 'b'}, custom=FakeCustom([policy('a'), chosen]))
    assert code == 0
    assert result['mig_strategy'] == 'mixed' and result['mig_config_map'] == 'gpuops-mig-parted-config'
    assert result['device_plugin_config'] == {'name': 'gpuops-device-plugin-config', 'default': 'ts-2'}


def test_by_name_among_several(run_module):
    custom = FakeCustom([policy('a', state='ignored'), policy('b', namespace='nvidia-gpu-operator')])
    code, result = run_module(cluster_policy_info, {'name': 'b'}, check=True, custom=custom)
    assert code == 0
    assert result['name'] == 'b' and result['namespace'] == 'nvidia-gpu-operator'
    assert [p['metadata']['name'] for p in result['cluster_policies']] == ['b']
    assert result['errors'] == []


def test_several_without_a_name_is_an_error(run_module):
    custom = FakeCustom([policy('b'), policy('a')])
    code, result = run_module(cluster_policy_info, {'name_option': 'mig_cluster_policy_name', 'required': False},
                              custom=custom)
    assert code == 0
    assert result['cluster_policy'] is None and result['name'] == ''
    assert len(result['cluster_policies']) == 2
    assert result['mig_strategy'] == 'single' and result['device_plugin_config'] == {'name': '', 'default': ''}
    assert result['errors'] == ['more than one ClusterPolicy (found 2: a, b); the GPU operator honours only one: '
                                'set mig_cluster_policy_name to the one to use']


def test_none_is_an_error_only_when_required(run_module):
    code, result = run_module(cluster_policy_info, {}, custom=FakeCustom())
    assert code == 0 and result['cluster_policy'] is None
    assert result['errors'] == ['exactly one ClusterPolicy is needed (found 0); install the GPU operator first']
    code, result = run_module(cluster_policy_info, {'required': False}, custom=FakeCustom())
    assert code == 0 and result['errors'] == [] and result['cluster_policy'] is None


def test_a_wrong_name(run_module):
    code, result = run_module(cluster_policy_info, {'name': 'not-there', 'name_option': 'monitoring_cluster_policy_name'},
                              custom=FakeCustom([policy('gpu-cluster-policy')]))
    assert code == 0
    assert result['errors'] == ['exactly one ClusterPolicy is needed (found 0); there is no ClusterPolicy named '
                                'not-there: set monitoring_cluster_policy_name to an existing one, or leave it '
                                'empty for the only one']


def test_api_not_served_yet(run_module):
    code, result = run_module(cluster_policy_info, {'required': False}, custom=FakeCustom(served=False))
    assert code == 0
    assert result['api_found'] is False and result['cluster_policies'] == [] and result['errors'] == []


def test_api_error_fails_cleanly(run_module):
    code, result = run_module(cluster_policy_info, {}, custom=FakeCustom(fail=403))
    assert code == 1 and result['failed'] is True and result['changed'] is False
    assert result['msg'].startswith('Kubernetes API error: ')


@pytest.mark.parametrize('policies, name, required, chosen, errors', [
    ([], '', False, None, 0),
    ([policy('a')], 'a', True, 'a', 0),
    ([policy('a')], 'b', False, None, 0),
    ([policy('a'), policy('b')], '', False, None, 1),
    ([policy('a'), policy('b')], 'a', True, 'a', 0),
    (['not a policy', policy('a')], '', True, 'a', 0),
])
def test_select_policy(policies, name, required, chosen, errors):
    selected, matching, problems = select_policy(policies, name, required)
    assert ((selected or {}).get('metadata') or {}).get('name') == chosen
    assert len(problems) == errors
    assert all(isinstance(p, dict) for p in matching)
