# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.gpu.plugins.filter.reset import FilterModule
from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import managed_by_labels
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.reset import (
    needs_mig_reset, needs_sharing_reset, reset_pending, reset_plan)

MANAGED = managed_by_labels()
FILTERS = FilterModule().filters()


def node(name, labels=None, annotations=None, gpu=True, unschedulable=False):
    base = {'nvidia.com/gpu.present': 'true', 'nvidia.com/gpu.replicas': '1',
            'nvidia.com/gpu.sharing-strategy': 'none'} if gpu else {}
    base.update(labels or {})
    return {'metadata': {'name': name, 'labels': base, 'annotations': annotations or {}},
            'spec': {'unschedulable': unschedulable}}


def policy(mig_cm=None, dp_cm=None, dp_default=None, dp_enabled=None):
    spec = {'migManager': {'enabled': True}, 'devicePlugin': {}}
    if mig_cm is not None:
        spec['migManager']['config'] = {'name': mig_cm, 'default': 'all-disabled'}
    if dp_cm is not None or dp_default is not None:
        spec['devicePlugin']['config'] = {'name': dp_cm or '', 'default': dp_default or ''}
    if dp_enabled is not None:
        spec['devicePlugin']['enabled'] = dp_enabled
    return {'metadata': {'name': 'gpu-cluster-policy'}, 'spec': spec}


def cm(name, managed=True):
    return {'metadata': {'name': name, 'labels': dict(MANAGED) if managed else {}}}


MIG = {'nvidia.com/mig.config': 'all-1g.5gb', 'nvidia.com/mig.config.state': 'success'}
SHARED = {'nvidia.com/device-plugin.config': 'ts4', 'nvidia.com/gpu.replicas': '4',
          'nvidia.com/gpu.sharing-strategy': 'time-slicing'}
FLEET = [node('a', MIG), node('b', {'nvidia.com/mig.config': 'all-disabled', 'nvidia.com/mig.config.state': 'success'}),
         node('c', SHARED), node('d'), node('cpu', gpu=False)]


def test_node_predicates():
    assert needs_mig_reset(node('x', MIG))
    assert not needs_mig_reset(node('x', {'nvidia.com/mig.config': 'all-disabled', 'nvidia.com/mig.config.state': 'success'}))
    assert needs_mig_reset(node('x', {'nvidia.com/mig.config': 'all-disabled', 'nvidia.com/mig.config.state': 'failed'}))
    assert needs_mig_reset(node('x', annotations={'gpuops.gpu/rollout-target': 'nvidia.com/mig.config=all-1g.5gb'}))
    assert not needs_mig_reset(node('x'))
    assert needs_sharing_reset(node('x', SHARED))
    assert needs_sharing_reset(node('x', {'nvidia.com/gpu.replicas': '2'}))
    assert needs_sharing_reset(node('x', annotations={'gpuops.gpu/rollout-target': 'nvidia.com/device-plugin.config=x'}))
    assert not needs_sharing_reset(node('x'))


def test_full_reset_plan():
    plan = reset_plan(FLEET, [policy('gpuops-mig', 'gpuops-dp')], [cm('gpuops-mig'), cm('gpuops-dp', managed=False)],
                      scope=['a', 'b', 'c', 'd'])
    assert plan['errors'] == []
    assert plan['mig_nodes'] == ['a'] and plan['sharing_nodes'] == ['c'] and plan['run_sharing'] is True
    assert plan['policy'] == 'gpu-cluster-policy'
    assert plan['policy_patch'] == {'migManager': {'config': None}, 'devicePlugin': {'config': None}}
    assert plan['default_patch'] == {}
    assert plan['config_maps_delete'] == ['gpuops-mig'] and plan['config_maps_kept'] == ['gpuops-dp']
    assert any('gpuops-dp' in n and 'left in place' in n for n in plan['notes'])
    assert plan['label_cleanup'] == ['c']


def test_default_mig_config_map_and_no_config_need_no_patch():
    plan = reset_plan([node('b')], [policy('default-mig-parted-config')], [], scope=['b'])
    assert plan['policy_patch'] == {} and plan['mig_nodes'] == [] and plan['config_maps_delete'] == []


def test_sharing_default_is_cleared_before_the_rollout():
    plan = reset_plan([node('c', SHARED)], [policy(dp_cm='dp', dp_default='ts4')], [cm('dp')], scope=['c'])
    assert plan['default_patch'] == {'devicePlugin': {'config': {'default': ''}}}
    assert plan['run_sharing'] is True


def test_disabled_device_plugin_or_missing_config_map_only_removes_labels():
    plan = reset_plan([node('c', SHARED)], [policy(dp_cm='dp', dp_enabled=False)], [cm('dp')], scope=['c'])
    assert plan['run_sharing'] is False and plan['label_cleanup'] == ['c'] and 'devicePlugin.enabled=false' in plan['notes'][0]
    plan = reset_plan([node('c', SHARED)], [policy(dp_cm='dp')], [], scope=['c'])
    assert plan['run_sharing'] is False and 'does not exist' in plan['notes'][0]


def test_no_cluster_policy():
    plan = reset_plan(FLEET, [], [], scope=['a', 'c'])
    assert plan['errors'] == [] and plan['policy'] is None and plan['policy_patch'] == {}
    assert plan['mig_nodes'] == ['a'] and plan['run_sharing'] is False and plan['label_cleanup'] == ['c']


def test_options_turn_parts_off():
    plan = reset_plan(FLEET, [policy('gpuops-mig', 'dp')], [cm('gpuops-mig'), cm('dp')], scope=['a', 'c'],
                      options={'sharing': False, 'cluster_policy': False})
    assert plan['mig_nodes'] == ['a'] and plan['sharing_nodes'] == [] and plan['policy_patch'] == {}
    assert plan['config_maps_delete'] == [] and plan['label_cleanup'] == []


def test_partial_reset_refuses_to_strip_configs_other_nodes_use():
    plan = reset_plan(FLEET, [policy('gpuops-mig', 'dp')], [cm('gpuops-mig'), cm('dp')], scope=['a'])
    assert plan['mig_nodes'] == [] and plan['policy_patch'] == {}
    assert 'c (nvidia.com/device-plugin.config=ts4)' in plan['errors'][0]
    plan = reset_plan(FLEET, [policy('gpuops-mig', 'dp')], [cm('gpuops-mig'), cm('dp')], scope=['a'],
                      options={'cluster_policy': False})
    assert plan['errors'] == [] and plan['mig_nodes'] == ['a']


def test_errors():
    assert 'not found: zz' in reset_plan(FLEET, [], [], scope=['a'], wanted=['a', 'zz'])['errors'][0]
    two = [policy(), dict(policy(), metadata={'name': 'other'})]
    assert 'more than one ClusterPolicy' in reset_plan(FLEET, two, [])['errors'][0]
    assert 'must be a list' in reset_plan(FLEET, 'x', [])['errors'][0]


def hami(release_info, plugin_nodes):
    """What the reset role hands the plan about the HAMi release kube-system/hami."""
    return {'namespace': 'kube-system', 'release': 'hami', 'release_info': release_info,
            'plugin_pods': [{'metadata': {'name': 'hami-device-plugin-' + n}, 'spec': {'nodeName': n},
                             'status': {'phase': 'Running'}} for n in plugin_nodes]}


HAMI = {'name': 'hami', 'namespace': 'kube-system', 'chart': 'hami-2.10.0',
        'values': {'gpuopsGpu': {'nodes': ['c', 'd'], 'nodeLabels': ['gpu']}}}
HAMI_FLEET = [node('a', MIG), node('c', dict(SHARED, gpu='on')), node('d', {'gpu': 'on'}, annotations={
    # forged: they must not matter
    'gpuops.gpu/hami-release': 'gpu-operator/gpu-operator', 'gpuops.gpu/hami-labels': 'nvidia.com/mig.config'})]


def test_hami_release_from_its_record():
    plan = reset_plan(HAMI_FLEET, [policy(dp_enabled=False)], [], scope=['a', 'c', 'd'], hami=hami(HAMI, ['c', 'd']))
    assert plan['errors'] == [] and plan['hami_release'] == 'kube-system/hami'
    # HAMi left alone: not asked (hami=None), or its device plugin runs on no node of the reset
    assert reset_plan(HAMI_FLEET, [], [], scope=['a', 'c', 'd'])['hami_release'] == ''
    plan = reset_plan(HAMI_FLEET, [], [], scope=['a'], hami=hami({}, ['c', 'd']))
    assert plan['errors'] == [] and plan['hami_release'] == ''


def test_hami_errors_stop_the_whole_reset():
    # a release of an earlier version (no record), and one that also serves a node outside the reset
    for info, scope, fragment in ((dict(HAMI, values={}), ['a', 'c', 'd'], 'has no record'),
                                  (HAMI, ['a', 'c'], 'also serves nodes outside the reset (d)')):
        plan = reset_plan(HAMI_FLEET, [policy('gpuops-mig')], [cm('gpuops-mig')], scope=scope,
                          hami=hami(info, ['c', 'd']))
        assert len(plan['errors']) == 1 and fragment in plan['errors'][0], plan['errors']
        assert plan['hami_release'] == '' and plan['mig_nodes'] == [] and plan['policy_patch'] == {}
    with pytest.raises(AnsibleFilterError):
        FILTERS['gpu_reset_plan'](HAMI_FLEET, [], hami='kube-system/hami')
    assert FILTERS['gpu_reset_plan'](HAMI_FLEET, [], scope=['c', 'd'],
                                     hami=hami(HAMI, ['c']))['hami_release'] == 'kube-system/hami'


def test_pending():
    plan = reset_plan(FLEET, [policy('gpuops-mig', 'dp')], [cm('gpuops-mig'), cm('dp')], scope=['a', 'b', 'c', 'd'])
    pending = reset_pending(FLEET, plan)
    assert [p.split(':')[0] for p in pending] == ['a', 'c', 'c']
    done = [node('a', {'nvidia.com/mig.config': 'all-disabled', 'nvidia.com/mig.config.state': 'success'}), node('c'),
            node('d', annotations={'gpuops.gpu/cordoned-by-rollout': 'true'})]
    assert reset_pending(done, plan) == ['d: still cordoned by a gpuops.gpu rollout']


def test_filters():
    assert sorted(FILTERS) == ['gpu_reset_pending', 'gpu_reset_plan']
    plan = FILTERS['gpu_reset_plan'](FLEET, [], scope=['a'])
    assert plan['mig_nodes'] == ['a'] and FILTERS['gpu_reset_pending'](FLEET, plan)
    with pytest.raises(AnsibleFilterError):
        FILTERS['gpu_reset_plan']('nodes', [])
    with pytest.raises(AnsibleFilterError):
        FILTERS['gpu_reset_pending'](FLEET, 'plan')


def test_mig_rollback_with_the_device_plugin_off_and_no_hami_removal_is_refused_before_writing():
    """HAMi (or an admin) switched the operator's device plugin off: a MIG rollback could never be verified (no GPU
    would be advertised) and would leave the nodes cordoned, unless this reset removes HAMi, which switches it back."""
    mig_node = node('m', {'nvidia.com/mig.config': 'all-1g.10gb', 'nvidia.com/mig.config.state': 'success'})
    plan = reset_plan([mig_node], [policy(dp_enabled=False)], [], scope=['m'])
    [error] = plan['errors']
    assert 'device plugin is switched off' in error and 'reset_hami_namespace' in error
    assert plan['mig_nodes'] == [] and plan['policy_patch'] == {}, 'nothing is written'
    assert reset_plan([mig_node], [policy()], [], scope=['m'])['errors'] == []
    assert reset_plan([mig_node], [policy(dp_enabled=False)], [], scope=['m'], options={'mig': False})['errors'] == []
