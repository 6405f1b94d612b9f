# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""OlmInstall against an in-memory API with a tiny OLM: the flows the virtual cluster cannot
produce on demand (a CatalogSource that is not READY, a CSV that fails for good, an upgrade
InstallPlan racing the pinned one)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.ops import olm as olm_cluster
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.ops.olm_fakes import (
    NEWER, NS, PINNED, Store, install)


def test_manual_install_approves_only_the_pinned_plan():
    store = Store()
    result = install(store)
    assert result['csv'] == PINNED and result['csv_phase'] == 'Succeeded' and result['version'] == '25.10.1'
    assert result['approved_install_plans'] == ['install-1'] and result['install_plan'] == 'install-1'
    assert result['alm_examples'] == [{'kind': 'ClusterPolicy', 'spec': {'a': 1}}]
    assert result['related_images'] == [{'name': 'driver', 'image': 'r/driver@sha256:1'}]
    # OLM then offers the channel head: it is held, never approved
    store.tick()
    again = install(store)
    assert again['changed'] is False and again['actions'] == []
    assert again['held_install_plans'] == [{'name': 'install-2', 'csvs': [NEWER]}]
    assert store.objects[('installplans', NS, 'install-2')]['spec']['approved'] is False


def test_catalog_not_ready_fails_before_any_write():
    store = Store(catalog_state='TRANSIENT_FAILURE')
    with pytest.raises(olm_cluster.InputError, match=r'not READY \(connectionState.lastObservedState: '
                                                     r'TRANSIENT_FAILURE\) after 5s.*nothing was changed'):
        install(store)
    assert store.writes == []


def test_catalog_that_becomes_ready_is_waited_for():
    store = Store(catalog_state=['CONNECTING', 'CONNECTING', 'READY'])
    assert install(store)['csv'] == PINNED


def test_missing_catalog_lists_the_others():
    store = Store()
    with pytest.raises(olm_cluster.InputError, match=r'CatalogSource mirror-gpu not found .*there: certified-operators'):
        install(store, source='mirror-gpu')
    assert store.writes == []


def test_unknown_package_channel_and_csv_fail_before_writing():
    store = Store()
    with pytest.raises(olm_cluster.InputError, match="no package 'gpu-operator'"):
        install(store, package='gpu-operator')
    with pytest.raises(olm_cluster.InputError, match="no channel 'v1.11'"):
        install(store, channel='v1.11')
    with pytest.raises(olm_cluster.InputError, match='has no CSV gpu-operator-certified.v1.0.0'):
        install(store, starting_csv='gpu-operator-certified.v1.0.0')
    with pytest.raises(olm_cluster.InputError, match='not AllNamespaces'):
        install(store, target_namespaces=[])
    assert store.writes == []


def test_without_package_api_a_refused_subscription_is_rolled_back():
    store = Store(package_api=False, resolve_error='no operators found in package gpu-operator')
    with pytest.raises(olm_cluster.InstallFailed) as info:
        install(store, package='gpu-operator')
    assert 'removed again what this run created: Subscription gpu-operator, OperatorGroup nvidia-gpu-operator, ' \
           'Namespace nvidia-gpu-operator' in str(info.value)
    assert NS not in store.namespaces
    assert not [k for k in store.objects if k[1] == NS]


def test_fatal_csv_failure_is_reported_with_its_reason():
    store = Store(csv_failure='UnsupportedOperatorGroup')
    with pytest.raises(olm_cluster.InstallFailed, match=r'CSV gpu-operator-certified.v25.10.1 is Failed '
                                                        r'\(UnsupportedOperatorGroup\): broken'):
        install(store)


def test_timeout_says_where_it_stopped():
    store = Store()
    with pytest.raises(olm_cluster.InstallFailed, match='timed out after 60s .*install-9 RequiresApproval .*not approved'):
        _stuck_install(store)


def _stuck_install(store):
    # a plan for some other CSV only: the pinned CSV never comes
    store.objects[('subscriptions', NS, 'gpu-operator-certified')] = {
        'metadata': {'name': 'gpu-operator-certified'},
        'spec': {'name': 'gpu-operator-certified', 'source': 'certified-operators',
                 'sourceNamespace': 'openshift-marketplace', 'installPlanApproval': 'Manual', 'channel': 'stable',
                 'startingCSV': PINNED},
        'status': {'currentCSV': NEWER, 'installPlanRef': {'name': 'install-9'}}}
    store.namespaces[NS] = {'metadata': {'name': NS}}
    store.objects[('operatorgroups', NS, NS)] = {'metadata': {'name': NS}, 'spec': {'targetNamespaces': [NS]}}
    store.objects[('installplans', NS, 'install-9')] = {
        'metadata': {'name': 'install-9', 'ownerReferences': [{'kind': 'Subscription', 'name': 'gpu-operator-certified'}]},
        'spec': {'approval': 'Manual', 'approved': False, 'clusterServiceVersionNames': [NEWER]},
        'status': {'phase': 'RequiresApproval'}}
    store.tick = lambda _s=0: None
    return install(store)


def test_check_mode_writes_nothing_and_predicts_the_pinned_csv():
    store = Store()
    result = install(store, check_mode=True, namespace_labels={'openshift.io/cluster-monitoring': 'true'})
    assert store.writes == []
    assert result['changed'] is True and result['csv'] == PINNED
    assert result['actions'][0] == 'create Namespace nvidia-gpu-operator'
    assert result['diff']['after']['subscription']['spec']['startingCSV'] == PINNED


def test_existing_subscription_is_patched_only_where_it_differs():
    store = Store()
    install(store)
    result = install(store, namespace_labels={'openshift.io/cluster-monitoring': 'true'},
                     config={'nodeSelector': {'node-role.kubernetes.io/infra': ''}})
    assert result['actions'] == ['label Namespace nvidia-gpu-operator openshift.io/cluster-monitoring=true',
                                 'update Subscription nvidia-gpu-operator/gpu-operator-certified: config']
    assert store.objects[('subscriptions', NS, 'gpu-operator-certified')]['spec']['channel'] == 'stable'


def test_two_operator_groups_fail_before_writing():
    store = Store()
    store.namespaces[NS] = {'metadata': {'name': NS}}
    for name in ('a', 'b'):
        store.objects[('operatorgroups', NS, name)] = {'metadata': {'name': name}, 'spec': {}}
    with pytest.raises(olm_cluster.InputError, match='has 2 OperatorGroups'):
        install(store)
    assert store.writes == []


def test_automatic_approval_approves_nothing_itself():
    store = Store()
    result = install(store, approval='Automatic', starting_csv=None)
    assert result['approved_install_plans'] == [] and result['csv'] == NEWER
