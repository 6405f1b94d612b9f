# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""olm_operator state=absent (ops/olm_remove.py) against the in-memory API of test_olm.py: install, then remove."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.ops import olm_remove
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.ops.olm_fakes import (
    NS, PINNED, Clock, Store, install, params)


def remove(store, check_mode=False, **kw):
    clock = Clock(store)
    return olm_remove.OlmRemove(store.conn(), params(**kw), check_mode, sleep=clock.sleep, clock=clock).run()


def installed():
    store = Store()
    install(store)
    store.writes = []
    return store


def test_install_marks_the_namespace_it_creates():
    store = installed()
    assert store.namespaces[NS]['metadata']['labels'] == {'app.kubernetes.io/managed-by': 'gpuops.gpu'}


def test_check_mode_plans_subscription_csv_and_operator_group_and_writes_nothing():
    store = installed()
    result = remove(store, check_mode=True)
    assert store.writes == []
    assert result['changed'] is True
    assert result['actions'] == ['delete Subscription %s/gpu-operator-certified' % NS,
                                 'delete ClusterServiceVersion %s/%s' % (NS, PINNED),
                                 'delete OperatorGroup %s/%s' % (NS, NS)]
    assert result['removed_csvs'] == [PINNED]
    assert result['diff']['before']['subscription']['spec']['startingCSV'] == PINNED
    assert result['diff']['after'] == {}


def test_remove_deletes_in_order_and_a_second_run_changes_nothing():
    store = installed()
    result = remove(store)
    assert store.writes == [('delete', 'subscriptions', 'gpu-operator-certified'),
                            ('delete', 'clusterserviceversions', PINNED), ('delete', 'operatorgroups', NS)]
    assert result['changed'] is True
    left = set(p for (p, ns, _n) in store.objects if ns == NS)
    assert not left & {'subscriptions', 'clusterserviceversions', 'operatorgroups'}
    store.writes = []
    again = remove(store)
    assert again['changed'] is False and again['actions'] == [] and store.writes == []


def test_user_operator_group_and_a_shared_one_are_kept():
    store = installed()
    og = store.objects[('operatorgroups', NS, NS)]
    og['metadata']['labels'] = {}
    result = remove(store, check_mode=True)
    assert not any('OperatorGroup' in a for a in result['actions'])
    assert 'not created by gpuops.gpu' in result['warnings'][0]
    og['metadata']['labels'] = {'app.kubernetes.io/managed-by': 'gpuops.gpu'}
    store.objects[('subscriptions', NS, 'other')] = {'metadata': {'name': 'other'}, 'spec': {'name': 'other'}}
    result = remove(store, check_mode=True)
    assert not any('OperatorGroup' in a for a in result['actions'])
    assert 'Subscription(s) other still use it' in result['warnings'][0]


def test_missing_namespace_is_nothing_to_do():
    store = Store()
    result = remove(store)
    assert result['changed'] is False and store.writes == []


def test_bad_input_and_a_subscription_of_another_package_fail_before_writing():
    store = installed()
    with pytest.raises(olm_remove.InputError, match="namespace 'Bad_NS' is not a valid namespace name"):
        remove(store, namespace='Bad_NS')
    with pytest.raises(olm_remove.InputError, match='is for package gpu-operator-certified, not nfd'):
        remove(store, package='nfd', subscription_name='gpu-operator-certified')
    assert store.writes == []


def test_objects_that_stay_fail_after_the_wait_timeout():
    store = installed()
    custom_delete = []

    conn = store.conn()
    conn.custom.delete_namespaced_custom_object = lambda *a, **k: custom_delete.append(a[-1])
    clock = Clock(store)
    runner = olm_remove.OlmRemove(conn, params(wait_timeout=5), False, sleep=clock.sleep, clock=clock)
    with pytest.raises(olm_remove.InstallFailed, match='still there after 5s'):
        runner.run()
    assert custom_delete == ['gpu-operator-certified', PINNED, NS]
