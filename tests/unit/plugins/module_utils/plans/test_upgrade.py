# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Upgrade decisions (pure): versions, catalog and InstallPlan checks, quiet cluster, driver upgrade policy."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.common.lease import format_time, lease_state
from ansible_collections.gpuops.gpu.plugins.module_utils.plans import upgrade
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.plans.upgrade_data import (
    MID, NEW, NOW, NS, OLD, READY, csv, manifest, node, plan, sub)


def op(target=NEW, **kw):
    out = {'name': 'gpu_operator', 'var_prefix': 'upgrade_gpu_operator', 'target': target,
           'package': 'gpu-operator-certified', 'namespace': NS, 'subscription_name': 'gpu-operator-certified',
           'subscription': sub(), 'csvs': [csv()], 'manifest': manifest(), 'package_api': True,
           'install_plans': [plan('install-old', [OLD], True, 'Complete'), plan('install-new', [NEW])],
           'operator_groups': [{'metadata': {'name': NS}, 'spec': {'targetNamespaces': [NS]}}]}
    out.update(kw)
    return out


def request(*ops, **kw):
    out = {'operators': list(ops) or [op()], 'cluster_policy': copy.deepcopy(READY), 'lock': None,
           'nodes': [], 'driver_upgrade_policy': {}}
    out.update(kw)
    return out


# --- versions -----------------------------------------------------------------------------------

@pytest.mark.parametrize('a, b, expected', [
    ('26.7.0', '25.10.1', 1), ('25.10.1', '25.9.9', 1), ('26.7.0', '26.7.0', 0), ('v26.3.3', '26.7.0', -1),
    ('4.18.0-202510211040', '4.18.0-202509100907', 1), ('4.18.0-202509100907', '4.18.0', 1),
    ('4.19.0', '4.18.0-202509100907', 1),
])
def test_compare_versions(a, b, expected):
    assert upgrade.compare_versions(a, b) == expected


def test_csv_version_prefers_the_catalog_entry():
    assert upgrade.csv_version_of(NEW) == '26.7.0'
    assert upgrade.csv_version_of('nfd.4.18.0-202509100907') == '4.18.0-202509100907'
    assert upgrade.csv_version_of('x.v1', [{'name': 'x.v1', 'version': '1.2.3'}]) == '1.2.3'


# --- one operator -------------------------------------------------------------------------------

def test_upgrade_approves_exactly_the_targets_install_plan():
    result = upgrade.upgrade_plan(request(op(install_plans=[
        plan('install-old', [OLD], True, 'Complete'), plan('install-other', [MID]), plan('install-new', [NEW])])))
    assert result['errors'] == []
    (only,) = result['upgrades']
    assert only['install_plan'] == 'install-new' and only['from'] == OLD and only['to'] == NEW
    assert only['from_version'] == '25.10.1' and only['to_version'] == '26.7.0'
    assert only['module_params'] == {
        'package': 'gpu-operator-certified', 'namespace': NS, 'subscription_name': 'gpu-operator-certified',
        'channel': 'stable', 'source': 'certified-operators', 'source_namespace': 'openshift-marketplace',
        'starting_csv': NEW, 'approval': 'Manual', 'create_namespace': False, 'target_namespaces': [NS]}
    assert result['changes'] is True
    assert result['actions'] == [
        'gpu_operator: approve InstallPlan %s/install-new to go from %s to %s' % (NS, OLD, NEW)]


def test_at_the_target_nothing_to_do():
    at = op(subscription=sub(installed=NEW), csvs=[csv(NEW)], install_plans=[plan('install-new', [NEW], True,
                                                                                  'Complete')])
    result = upgrade.upgrade_plan(request(at))
    assert result['errors'] == [] and result['upgrades'] == [] and result['changes'] is False
    assert result['actions'] == ['gpu_operator: at %s already, nothing to do' % NEW]


@pytest.mark.parametrize('case, changes, needle', [
    ('not in the catalog', {'target': 'gpu-operator-certified.v99.1.0'},
     'the target gpu-operator-certified.v99.1.0 is not in the catalog: channel stable of package '
     'gpu-operator-certified has no CSV gpu-operator-certified.v99.1.0'),
    ('no package in the catalog', {'manifest': None},
     'catalog openshift-marketplace/certified-operators has no package gpu-operator-certified'),
    ('older', {'target': OLD, 'subscription': sub(installed=NEW), 'csvs': [csv(NEW)]},
     'is not newer than the installed %s (26.7.0); OLM does not downgrade' % NEW),
    ('installed CSV failed', {'csvs': [csv(phase='Failed', reason='InstallCheckFailed')]},
     'the installed CSV %s is Failed (InstallCheckFailed), not Succeeded' % OLD),
    ('no Subscription', {'subscription': None},
     'Subscription nvidia-gpu-operator/gpu-operator-certified not found; install the operator first'),
    ('Automatic approval', {'subscription': sub(approval='Automatic')}, 'has Automatic InstallPlan approval'),
    ('OLM offers another CSV', {'target': MID},
     'OLM offers no InstallPlan for %s (unapproved InstallPlans: install-new for %s)' % (MID, NEW)),
])
def test_an_upgrade_that_cannot_go_ahead_plans_nothing(case, changes, needle):
    result = upgrade.upgrade_plan(request(op(**changes)))
    assert result['upgrades'] == [] and result['changes'] is False, case
    assert any(needle in e for e in result['errors']), (case, result['errors'])


def test_without_the_package_api_the_offered_plan_decides_with_a_warning():
    result = upgrade.upgrade_plan(request(op(package_api=False, manifest=None)))
    assert result['errors'] == [] and result['upgrades'][0]['install_plan'] == 'install-new'
    assert 'PackageManifest API is not served' in result['warnings'][0]


def test_an_approved_plan_still_installing_is_waited_for():
    result = upgrade.upgrade_plan(request(op(install_plans=[plan('install-new', [NEW], True, 'Installing')])))
    assert result['errors'] == [] and result['upgrades'][0]['install_plan'] == 'install-new'


# --- the cluster must be quiet ------------------------------------------------------------------

def lock(renewed, holder='run-1', duration=60):
    """The lock's state as gpuops.gpu.rollout_lock reads it (lease_state of the Lease) at NOW."""
    lease = {'metadata': {'annotations': {'gpuops.gpu/lock-purpose': 'mig_rollout of 2 nodes'}},
             'spec': {'holderIdentity': holder, 'leaseDurationSeconds': duration,
                      'acquireTime': format_time(renewed), 'renewTime': format_time(renewed)}}
    return lease_state(lease, None, NOW)


def test_a_held_rollout_lock_stops_the_upgrade_a_stale_one_does_not():
    held = upgrade.upgrade_plan(request(lock=lock(NOW - 10)))
    assert held['upgrades'] == [] and 'the rollout lock (Lease gpuops-gpu-rollout) is held by' in held['errors'][0]
    assert 'mig_rollout of 2 nodes' in held['errors'][0]
    assert upgrade.upgrade_plan(request(lock=lock(NOW - 600)))['errors'] == []


def test_nodes_in_a_rollout_or_a_mig_change_stop_the_upgrade():
    nodes = [node('a100-1', labels={'nvidia.com/mig.config.state': 'pending'}),
             node('a100-0', annotations={'gpuops.gpu/rollout-target': 'mig=all-1g.5gb',
                                         'gpuops.gpu/rollout-phase': 'failed'}),
             node('h100-0', labels={'nvidia.com/mig.config.state': 'success'})]
    errors = upgrade.upgrade_plan(request(nodes=nodes))['errors']
    assert errors == [
        'node a100-0 is in a rollout (gpuops.gpu/rollout-target mig=all-1g.5gb, phase failed); finish it by '
        're-running that rollout, or run the reset role',
        'node a100-1 is applying a MIG config (nvidia.com/mig.config.state=pending); wait until it is success']


def test_the_cluster_policy_must_be_ready():
    policy = copy.deepcopy(READY)
    policy['state'] = 'notReady'
    errors = upgrade.upgrade_plan(request(cluster_policy=policy))['errors']
    assert errors == ['ClusterPolicy gpu-cluster-policy is notReady, not ready; an upgrade starts from a working GPU '
                      'stack only: fix it first']
    missing = {'cluster_policy': None, 'errors': [], 'state': ''}
    assert 'no single ClusterPolicy to check' in upgrade.upgrade_plan(request(cluster_policy=missing))['errors'][0]
    nfd_only = dict(op(), name='nfd')
    assert upgrade.upgrade_plan(request(nfd_only, cluster_policy=missing))['errors'] == []
    # nothing for OLM to do (a driver upgrade alone, resumed while the driver DaemonSet keeps the policy notReady)
    assert upgrade.upgrade_plan(request(cluster_policy=policy, operators=[]))['errors'] == []


# --- driver.upgradePolicy -----------------------------------------------------------------------

def test_driver_upgrade_policy_in_the_crd_field_names():
    patch, errors = upgrade.driver_upgrade_policy({
        'auto_upgrade': True, 'max_parallel_upgrades': 2, 'max_unavailable': '25%', 'wait_for_completion': None,
        'drain': {'enable': True, 'force': False, 'timeout_seconds': 300, 'delete_empty_dir': True,
                  'pod_selector': None},
        'pod_deletion': {'force': True, 'timeout_seconds': 60, 'delete_empty_dir': None}})
    assert errors == []
    assert patch == {'driver': {'upgradePolicy': {
        'autoUpgrade': True, 'maxParallelUpgrades': 2, 'maxUnavailable': '25%',
        'drain': {'enable': True, 'force': False, 'timeoutSeconds': 300, 'deleteEmptyDir': True},
        'podDeletion': {'force': True, 'timeoutSeconds': 60}}}}
    assert upgrade.driver_upgrade_policy({'max_unavailable': '3'})[0] == {
        'driver': {'upgradePolicy': {'maxUnavailable': 3}}}
    assert upgrade.driver_upgrade_policy({'auto_upgrade': None, 'drain': None}) == ({}, [])
    assert upgrade.driver_upgrade_policy({}) == ({}, [])


def test_driver_upgrade_policy_errors_all_at_once():
    patch, errors = upgrade.driver_upgrade_policy({
        'auto_upgrade': 'yes', 'max_unavailable': 'a lot', 'max_paralel_upgrades': 2,
        'drain': {'timeout_seconds': -1, 'pod_selector': 'app in (', 'enabled': True}, 'pod_deletion': 'force'})
    assert patch == {}
    text = ' | '.join(errors)
    for needle in ('upgrade_driver_upgrade_policy.auto_upgrade must be true or false, got str',
                   "upgrade_driver_upgrade_policy.max_unavailable must be a node count like 2 or a percentage",
                   "unknown", "max_parallel_upgrades",
                   'upgrade_driver_upgrade_policy.drain.timeout_seconds must be a whole number of 0 or more, got -1',
                   'upgrade_driver_upgrade_policy.drain.pod_selector:',
                   'upgrade_driver_upgrade_policy.pod_deletion must be a mapping, got str'):
        assert needle in text, (needle, errors)
    planned = upgrade.upgrade_plan(request(driver_upgrade_policy={'max_unavailable': 2, 'auto_upgrade': False}))
    assert planned['actions'][-1] == ('ClusterPolicy: set driver.upgradePolicy {"autoUpgrade": false, '
                                      '"maxUnavailable": 2} (where it differs)')
    result = upgrade.upgrade_plan(request(driver_upgrade_policy={'auto_upgrade': 'yes'}))
    assert result['upgrades'] == [] and result['cluster_policy_patch'] == {}


def test_driver_upgrade_states_per_node():
    nodes = [node('b', labels={upgrade.LABEL_DRIVER_UPGRADE_STATE: 'upgrade-done'}), node('c'),
             node('a', labels={upgrade.LABEL_DRIVER_UPGRADE_STATE: 'drain-required'})]
    assert upgrade.driver_upgrade_states(nodes) == [{'node': 'a', 'state': 'drain-required'},
                                                    {'node': 'b', 'state': 'upgrade-done'}]
