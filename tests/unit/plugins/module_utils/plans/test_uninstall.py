# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The uninstall planner: inputs, the GPU-workload refusal, the order, and ownership (never user objects)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu.plugins.filter.uninstall import FilterModule
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.uninstall import olm_removal, uninstall_plan

MANAGED = {'app.kubernetes.io/managed-by': 'gpuops.gpu'}
INPUTS = {'force': False, 'nfd': True, 'gpu_operator_install_method': 'olm',
          'gpu_operator_namespace': 'nvidia-gpu-operator', 'gpu_operator_olm_package': 'gpu-operator-certified',
          'gpu_operator_helm_release_name': 'gpu-operator', 'nfd_install_method': 'olm', 'nfd_namespace': 'openshift-nfd',
          'nfd_olm_package': 'nfd', 'nfd_helm_release_name': 'node-feature-discovery'}


def obj(name, namespace=None, labels=None, **extra):
    meta = {'name': name, 'labels': labels or {}}
    if namespace:
        meta['namespace'] = namespace
    out = {'metadata': meta}
    out.update(extra)
    return out


def pod(name, resources=None, phase='Running', daemonset=False, node='a100-0'):
    meta = {'name': name, 'namespace': 'ml'}
    if daemonset:
        meta['ownerReferences'] = [{'kind': 'DaemonSet', 'name': 'x'}]
    return {'metadata': meta, 'spec': {'nodeName': node, 'containers': [
        {'name': 'c', 'resources': {'limits': resources or {}}}]}, 'status': {'phase': phase}}


FOUND = {
    'pods': [pod('cpu-only', {'cpu': '1'}), pod('done', {'nvidia.com/gpu': 1}, phase='Succeeded'),
             pod('plugin', {'nvidia.com/gpu': 1}, daemonset=True)],
    'cluster_policies': [obj('gpu-cluster-policy', labels=MANAGED)],
    'nvidia_drivers': [obj('pool-a')],
    'nfd_instances': [obj('nfd-instance', 'openshift-nfd', MANAGED, apiVersion='nfd.openshift.io/v1')],
    'namespaces': [obj('nvidia-gpu-operator', labels=MANAGED), obj('openshift-nfd')],
    'config_maps': [obj('mig-parted', 'nvidia-gpu-operator', MANAGED), obj('sharing', 'openshift-nfd', MANAGED)],
}


def test_order_and_ownership():
    plan = uninstall_plan(INPUTS, FOUND)
    assert plan['errors'] == [] and plan['workloads'] == []
    assert [s['step'] for s in plan['steps']] == ['custom_resources', 'gpu_operator', 'nfd_instances', 'nfd',
                                                  'config_maps', 'namespaces']
    # NVIDIADriver before ClusterPolicy
    assert [o['kind'] for o in plan['steps'][0]['objects']] == ['NVIDIADriver', 'ClusterPolicy']
    assert plan['steps'][1]['package'] == 'gpu-operator-certified' and plan['steps'][3]['package'] == 'nfd'
    # the user's openshift-nfd namespace stays; the gpuops one goes with its ConfigMaps
    assert plan['namespaces'] == ['nvidia-gpu-operator']
    assert [c['name'] for c in plan['config_maps']] == ['sharing']
    assert plan['kept'] == ['Namespace openshift-nfd: not created by gpuops.gpu '
                            '(no label app.kubernetes.io/managed-by=gpuops.gpu)']
    assert plan['summary'][0] == 'custom resources: NVIDIADriver pool-a, ClusterPolicy gpu-cluster-policy'


def test_unmarked_config_maps_and_namespaces_out_of_scope_are_never_deleted():
    found = dict(FOUND, namespaces=[obj('default', labels=MANAGED)],
                 config_maps=[obj('user', 'openshift-nfd'), obj('x', 'default', MANAGED)])
    plan = uninstall_plan(INPUTS, found)
    assert plan['namespaces'] == [] and plan['config_maps'] == []


def test_gpu_pods_refuse_unless_forced():
    found = dict(FOUND, pods=FOUND['pods'] + [pod('train', {'nvidia.com/mig-1g.10gb': 2}),
                                              pod('pending', {'nvidia.com/gpu': 1}, phase='Pending', node=None)])
    plan = uninstall_plan(INPUTS, found)
    assert plan['workloads'] == ['ml/pending (not scheduled) (nvidia.com/gpu)',
                                 'ml/train on a100-0 (nvidia.com/mig-1g.10gb)']
    assert len(plan['errors']) == 1 and 'uninstall_force: true' in plan['errors'][0]
    assert 'ml/train on a100-0' in plan['errors'][0]
    forced = uninstall_plan(dict(INPUTS, force=True), found)
    assert forced['errors'] == [] and forced['workloads'] == plan['workloads']


def test_helm_and_without_nfd():
    plan = uninstall_plan(dict(INPUTS, gpu_operator_install_method='helm', nfd=False), FOUND)
    assert [s['step'] for s in plan['steps']] == ['custom_resources', 'gpu_operator', 'config_maps', 'namespaces']
    assert plan['steps'][1]['release'] == 'gpu-operator' and plan['nfd_instances'] == []
    assert 'Helm release nvidia-gpu-operator/gpu-operator' in plan['summary'][1]
    assert plan['config_maps'] == []  # openshift-nfd is out of scope without NFD


def test_nothing_found_plans_no_deletes():
    plan = uninstall_plan(INPUTS, {})
    assert plan['errors'] == [] and all(s['objects'] == [] for s in plan['steps'])


@pytest.mark.parametrize('key, value, needle', [
    ('gpu_operator_install_method', 'operatorhub', "uninstall_gpu_operator_install_method must be olm or helm"),
    ('nfd_namespace', 'Open_NFD', "uninstall_nfd_namespace 'Open_NFD' is not a valid namespace name"),
    ('gpu_operator_olm_package', '', "uninstall_gpu_operator_olm_package '' is not a valid object name"),
    ('force', 'yes', 'uninstall_force must be true or false, got str'),
])
def test_bad_inputs(key, value, needle):
    plan = uninstall_plan(dict(INPUTS, **{key: value}), FOUND)
    assert any(needle in e for e in plan['errors']), plan['errors']
    assert plan['steps'] == []


def test_filter_is_the_planner():
    f = FilterModule().filters()['uninstall_plan']
    assert f(INPUTS, FOUND) == uninstall_plan(INPUTS, FOUND)
    assert f(INPUTS)['errors'] == []
    with pytest.raises(Exception, match='expects the mapping'):
        f(['x'])


def test_olm_removal_takes_installed_and_current_csv_and_only_a_gpuops_operator_group():
    sub = obj('gpu-operator-certified', status={'installedCSV': 'a.v1', 'currentCSV': 'a.v2'})
    plan = olm_removal(sub, [sub], [obj('og', labels=MANAGED)], ['a.v1', 'a.v2', 'b.v1'])
    assert plan == {'subscription': 'gpu-operator-certified', 'csvs': ['a.v1', 'a.v2'], 'operator_group': 'og',
                    'notes': []}
    plan = olm_removal(sub, [sub], [obj('og')], ['a.v1'])
    assert plan['csvs'] == ['a.v1'] and plan['operator_group'] is None and 'not created by' in plan['notes'][0]
    assert olm_removal(None, [], [], []) == {'subscription': None, 'csvs': [], 'operator_group': None, 'notes': []}
