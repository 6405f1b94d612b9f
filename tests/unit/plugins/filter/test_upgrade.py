# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The upgrade filters: k8s_info loop results in, the plan out."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.gpu.plugins.filter.upgrade import FilterModule
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.plans.upgrade_data import (
    NEW, OLD, READY, csv, manifest, node, plan, sub)

FILTERS = FilterModule().filters()


def found(*objs, **kw):
    return dict({'resources': list(objs), 'api_found': True}, **kw)


def reads(**kw):
    other = dict(manifest(), metadata={'name': 'gpu-operator-certified', 'labels': {'catalog': 'mirror'}})
    out = {'operators': [{'name': 'gpu_operator', 'var_prefix': 'upgrade_gpu_operator', 'target': NEW,
                          'package': 'gpu-operator-certified', 'namespace': 'nvidia-gpu-operator',
                          'subscription_name': 'gpu-operator-certified'}],
           'subscriptions': [found(sub())], 'install_plans': [found(plan('install-new', [NEW]))],
           'operator_groups': [found()], 'csvs': [found(csv(OLD))],
           'package_manifests': [found(other, manifest())], 'cluster_policy': READY,
           'lock': {'lock': {'state': 'free'}}, 'nodes': [], 'driver_upgrade_policy': {}}
    out.update(kw)
    return out


def test_upgrade_plan_from_k8s_info_results():
    result = FILTERS['upgrade_plan'](reads())
    assert result['errors'] == [] and [u['install_plan'] for u in result['upgrades']] == ['install-new']
    held = {'state': 'held', 'holder': 'run-1', 'who': 'ops@bastion', 'purpose': 'mig_rollout of 2 nodes'}
    errors = FILTERS['upgrade_plan'](reads(lock={'lock': held, 'namespace': 'nvidia-gpu-operator'}))['errors']
    assert errors == ['the rollout lock (Lease gpuops-gpu-rollout) is held by ops@bastion (holder run-1) for '
                      'mig_rollout of 2 nodes; wait until that rollout ends']


def test_a_skipped_package_read_is_a_missing_package_api_and_a_missing_subscription_an_error():
    result = FILTERS['upgrade_plan'](reads(package_manifests=[{'skipped': True}], subscriptions=[found()]))
    assert 'Subscription nvidia-gpu-operator/gpu-operator-certified not found' in result['errors'][0]


def test_bad_input_is_a_filter_error():
    with pytest.raises(AnsibleFilterError, match='expects a mapping with the list operators'):
        FILTERS['upgrade_plan']([])
    with pytest.raises(AnsibleFilterError, match='expects a list of Node objects'):
        FILTERS['driver_upgrade_states']({})
    labelled = node('a', labels={'nvidia.com/gpu-driver-upgrade-state': 'upgrade-done'})
    assert FILTERS['driver_upgrade_states']([labelled]) == [{'node': 'a', 'state': 'upgrade-done'}]
