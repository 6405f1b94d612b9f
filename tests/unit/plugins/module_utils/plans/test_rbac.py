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
