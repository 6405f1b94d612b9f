# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The rbac role's settings: names, access lists, ClusterRoles a run must apply, duplicates."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.gpu.plugins.filter.rbac import FilterModule
from ansible_collections.gpuops.gpu.plugins.module_utils.plans import rbac
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.rbac import input_errors, needed_cluster_roles

FILTERS = FilterModule().filters()


def account(name='gpuops-rollout', namespace='gpuops-automation', access=('rollout',), **extra):
    out = {'name': name, 'namespace': namespace, 'access': list(access), 'force': False, 'token_secret': False}
    out.update(extra)
    return out


def settings(accounts=(), **extra):
    out = {'state': 'present', 'cluster_roles': ['report', 'rollout', 'rollout-force', 'install'],
           'operator_namespace': 'nvidia-gpu-operator', 'service_accounts': list(accounts)}
    out.update(extra)
    return out


def test_valid():
    assert input_errors(settings()) == []
    assert input_errors(settings([account(), account('reader', access=['report']), account('a.b', force=True)])) == []


def test_needed_cluster_roles():
    assert needed_cluster_roles([account(force=True), account(access=['report', 'install'])]) == [
        'install', 'report', 'rollout', 'rollout-force']


@pytest.mark.parametrize('extra, accounts, message', [
    ({'operator_namespace': 'GPU'}, [], 'rbac_operator_namespace GPU is not a valid namespace name'),
    ({}, [account('Bad_Name')], 'rbac_service_accounts: name Bad_Name is not a valid ServiceAccount name'),
    ({}, [account('a..b')], 'rbac_service_accounts: name a..b is not a valid ServiceAccount name'),
    ({}, [account(namespace='a.b')], 'rbac_service_accounts: namespace a.b is not a valid namespace name'),
    ({}, [account(access=[])], 'rbac_service_accounts: gpuops-rollout has an empty access list'),
    ({'cluster_roles': ['report']}, [account(access=['install'])],
     'the ServiceAccounts are bound to ClusterRoles this run does not apply: install (add them to rbac_cluster_roles)'),
    ({'cluster_roles': ['rollout']}, [account(force=True)],
     'the ServiceAccounts are bound to ClusterRoles this run does not apply: rollout-force'),
    ({}, [account(), account('other'), account()], 'rbac_service_accounts: duplicate gpuops-automation/gpuops-rollout'),
])
def test_errors(extra, accounts, message):
    errors = input_errors(settings(accounts, **extra))
    assert len(errors) == 1 and errors[0].startswith(message), errors


def test_removal_needs_no_cluster_role():
    assert input_errors(settings([account(access=['install'])], state='absent', cluster_roles=[])) == []


def test_filter():
    assert FILTERS['rbac_input_errors'](settings()) == []
    with pytest.raises(AnsibleFilterError):
        FILTERS['rbac_input_errors']([])


def test_with_operator_namespace_fills_the_role_and_the_namespaced_binding_only():
    manifests = [
        {'kind': 'Role', 'metadata': {'name': 'gpuops-gpu-rollout'}},
        {'kind': 'ClusterRole', 'metadata': {'name': 'gpuops-gpu-rollout'}},
        {'kind': 'ValidatingAdmissionPolicyBinding', 'metadata': {'name': 'pods'}, 'spec': {'matchResources': {
            'namespaceSelector': {'matchLabels': {'kubernetes.io/metadata.name': rbac.OPERATOR_NAMESPACE}}}}},
        {'kind': 'ValidatingAdmissionPolicyBinding', 'metadata': {'name': 'nodes'}, 'spec': {'policyName': 'nodes'}},
    ]
    out = rbac.with_operator_namespace(manifests, 'gpu-operator')
    assert out[0]['metadata'] == {'name': 'gpuops-gpu-rollout', 'namespace': 'gpu-operator'}
    assert out[1] == manifests[1]
    assert out[2]['spec']['matchResources']['namespaceSelector']['matchLabels'] == {
        'kubernetes.io/metadata.name': 'gpu-operator'}
    assert out[3] == manifests[3]
    # the input is left as it was (the role reads the files once per run)
    assert manifests[2]['spec']['matchResources']['namespaceSelector']['matchLabels'][
        'kubernetes.io/metadata.name'] == rbac.OPERATOR_NAMESPACE
    assert 'namespace' not in manifests[0]['metadata']


def test_operator_namespace_must_be_where_the_operator_runs():
    policies = [{'metadata': {'name': 'gpu-cluster-policy'}, 'status': {'namespace': 'nvidia-gpu-operator'}}]
    settings = {'state': 'present', 'cluster_roles': ['rollout'], 'operator_namespace': 'gpu-operator',
                'service_accounts': [], 'cluster_policies': policies}
    [error] = input_errors(settings)
    assert 'runs in nvidia-gpu-operator' in error and 'set rbac_operator_namespace to nvidia-gpu-operator' in error
    assert input_errors(dict(settings, operator_namespace='nvidia-gpu-operator')) == []
    # no ClusterPolicy yet, or one the operator has not reconciled: nothing to compare with
    assert input_errors(dict(settings, cluster_policies=[{'metadata': {'name': 'p'}}])) == []
    # without the rollout ClusterRole, the namespace is not used
    assert input_errors(dict(settings, cluster_roles=['report'])) == []
