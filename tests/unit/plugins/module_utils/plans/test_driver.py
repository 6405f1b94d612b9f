# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Typed driver settings, NVIDIA's cross-field driver rules and the NVIDIADriver pools (pure)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.gpu.plugins.filter.driver import FilterModule
from ansible_collections.gpuops.gpu.plugins.module_utils.plans import driver as dp
from ansible_collections.gpuops.gpu.plugins.module_utils.plans import install

FILTERS = FilterModule().filters()

# a fragment shaped like the NVIDIADriver CRD's spec schema (gpu-operator api/nvidia/v1alpha1)
SCHEMA = {'type': 'object', 'properties': {
    'driverType': {'type': 'string', 'enum': ['gpu', 'vgpu', 'vgpu-host-manager']},
    'kernelModuleType': {'type': 'string', 'enum': ['auto', 'open', 'proprietary']},
    'usePrecompiled': {'type': 'boolean'},
    'version': {'type': 'string'}, 'repository': {'type': 'string'}, 'image': {'type': 'string'},
    'nodeSelector': {'type': 'object', 'additionalProperties': {'type': 'string'}},
    'rdma': {'type': 'object', 'properties': {'enabled': {'type': 'boolean'}, 'useHostMofed': {'type': 'boolean'}}},
    'gds': {'type': 'object', 'properties': {'enabled': {'type': 'boolean'}, 'version': {'type': 'string'}}},
    'priorityClassName': {'type': 'string'},
}}
CRD = {'spec': {'versions': [{'name': 'v1alpha1', 'served': True,
                              'schema': {'openAPIV3Schema': {'properties': {'spec': SCHEMA}}}}]}}


def node(name, **labels):
    return {'metadata': {'name': name, 'labels': dict(labels, **{'nvidia.com/gpu.present': 'true'})}}


NODES = [node('a100-0', pool='a100'), node('a100-1', pool='a100'), node('h100-0', pool='h100'), node('cpu-0')]
NODES[3]['metadata']['labels'] = {}


# --- typed settings -> ClusterPolicy ------------------------------------------------------------

def test_driver_overrides_map_every_setting_and_skip_unset_ones():
    settings = {'version': '570.172.08', 'repository': 'mirror.example.com/nvidia', 'image': 'driver',
                'kernel_module_type': 'open', 'use_precompiled': False, 'rdma_enabled': True,
                'rdma_use_host_mofed': True, 'gds_enabled': True, 'use_ocp_driver_toolkit': True}
    assert dp.driver_overrides(settings) == {
        'driver': {'version': '570.172.08', 'repository': 'mirror.example.com/nvidia', 'image': 'driver',
                   'kernelModuleType': 'open', 'usePrecompiled': False,
                   'rdma': {'enabled': True, 'useHostMofed': True}},
        'gds': {'enabled': True},
        'operator': {'use_ocp_driver_toolkit': True}}
    assert dp.driver_overrides({'version': '', 'gds_enabled': None, 'pools': []}) == {}
    assert dp.driver_overrides({'pools': [{'name': 'a'}]}) == {'driver': {'useNvidiaDriverCRD': True}}


def test_the_filter_takes_the_role_variables():
    assert FILTERS['gpu_driver_overrides']({'gpu_operator_driver_version': '580.95.05',
                                            'gpu_operator_driver_kernel_module_type': 'proprietary',
                                            'gpu_operator_mig_strategy': 'mixed'}) == \
        {'driver': {'version': '580.95.05', 'kernelModuleType': 'proprietary'}}
    with pytest.raises(AnsibleFilterError):
        FILTERS['gpu_driver_overrides']('x')


@pytest.mark.parametrize('variables, message', [
    ({'gpu_operator_driver_kernel_module_type': 'opne'}, 'kernel_module_type must be one of auto, open, proprietary'),
    ({'gpu_operator_driver_gds_enabled': 'yes'}, 'gpu_operator_driver_gds_enabled must be true or false'),
    ({'gpu_operator_driver_version': '570 beta'}, 'must be an image tag or digest'),
    ({'gpu_operator_driver_image': 'nvcr.io/nvidia/driver'}, 'must be an image name only'),
    ({'gpu_operator_driver_pools': [{'node_selector': {'pool': 'a'}}]}, 'pools[0].name is required'),
    ({'gpu_operator_driver_pools': [{'name': 'A_1'}]}, "pools[0].name 'A_1' must be a lowercase DNS name"),
    ({'gpu_operator_driver_pools': [{'name': 'a', 'nodeSelector': {}}]}, "unknown key 'nodeSelector'; did you mean"),
    ({'gpu_operator_driver_pools': [{'name': 'a', 'node_selector': {'pool': 5}}]}, 'node_selector.pool must be a string'),
    ({'gpu_operator_driver_pools': [{'name': 'a'}, {'name': 'a'}]}, 'pool names must be unique'),
    ({'gpu_operator_driver_use_precompiled': True}, 'usePrecompiled needs'),
    ({'gpu_operator_driver_use_precompiled': True, 'gpu_operator_driver_version': '570',
      'gpu_operator_driver_gds_enabled': True}, 'GPUDirect Storage is not supported with precompiled drivers'),
    ({'gpu_operator_driver_gds_enabled': True, 'gpu_operator_cluster_policy_overrides': {'gds': {'version': '2.20.5'}}},
     'GPUDirect Storage 2.20.5 works only with the open kernel modules'),
])
def test_role_input_errors(variables, message):
    base = {'gpu_operator_namespace': 'gpu-operator', 'gpu_operator_install_method': 'olm'}
    errors = install.role_input_errors(dict(base, **variables), 'gpu_operator')
    assert any(message in e for e in errors), errors


def test_valid_settings_pass_the_role_checks():
    variables = {'gpu_operator_namespace': 'gpu-operator', 'gpu_operator_install_method': 'olm',
                 'gpu_operator_driver_version': '570', 'gpu_operator_driver_use_precompiled': True,
                 'gpu_operator_driver_kernel_module_type': 'open', 'gpu_operator_driver_rdma_enabled': True,
                 'gpu_operator_driver_pools': [{'name': 'a100', 'node_selector': {'pool': 'a100'}}]}
    assert install.role_input_errors(variables, 'gpu_operator') == []


# --- NVIDIA's rules ---------------------------------------------------------------------------

@pytest.mark.parametrize('spec, expected', [
    ({'driver': {'usePrecompiled': True, 'version': '570'}}, []),
    ({'driver': {'usePrecompiled': True}}, ['spec.driver.usePrecompiled needs spec.driver.version']),
    ({'driver': {'usePrecompiled': True, 'version': '570'}, 'gdrcopy': {'enabled': True}},
     ['spec.gdrcopy.enabled: GDRCopy is not supported with precompiled drivers']),
    ({'gds': {'enabled': True, 'version': 'v2.17.5'}}, ['works only with the open kernel modules']),
    ({'gds': {'enabled': True, 'version': 'sha256:abc'}, 'driver': {'kernelModuleType': 'proprietary'}},
     ['(it is proprietary)']),
    ({'gds': {'enabled': True, 'version': '2.17.5'}, 'driver': {'kernelModuleType': 'open'}}, []),
    ({'gds': {'enabled': True, 'version': '2.16.1'}}, []),    # older GDS also with the proprietary modules
    ({'gds': {'enabled': False, 'version': '2.20.5'}}, []),
])
def test_cluster_policy_rules(spec, expected):
    errors = dp.driver_rule_errors(spec)
    assert len(errors) == len(expected) and all(e in m for e, m in zip(expected, errors)), errors


def test_gds_version_compare():
    assert not dp.gds_needs_open('') and not dp.gds_needs_open('2.17.4')
    assert dp.gds_needs_open('2.17.5') and dp.gds_needs_open('v2.26.6') and dp.gds_needs_open('2.18')


# --- pools ------------------------------------------------------------------------------------

POOLS = [{'name': 'a100', 'node_selector': {'pool': 'a100'}, 'kernel_module_type': 'open'},
         {'name': 'h100', 'node_selector': {'pool': 'h100'}, 'version': '580.95.05', 'spec': {
             'priorityClassName': 'system-node-critical', 'version': 'ignored'}}]


def test_pool_documents_inherit_the_role_settings():
    plan = dp.pool_plan(POOLS, {'version': '570.172.08', 'kernel_module_type': 'proprietary', 'gds_enabled': False},
                        NODES, [], CRD)
    assert plan['errors'] == []
    a100, h100 = plan['documents']
    assert a100 == {'apiVersion': 'nvidia.com/v1alpha1', 'kind': 'NVIDIADriver',
                    'metadata': {'name': 'a100', 'labels': {'app.kubernetes.io/managed-by': 'gpuops.gpu'}},
                    'spec': {'driverType': 'gpu', 'version': '570.172.08', 'kernelModuleType': 'open',
                             'gds': {'enabled': False}, 'nodeSelector': {'pool': 'a100'}}}
    # the typed version wins over the raw spec's
    assert h100['spec']['version'] == '580.95.05' and h100['spec']['priorityClassName'] == 'system-node-critical'
    assert h100['spec']['kernelModuleType'] == 'proprietary'


def test_pool_without_selector_is_every_gpu_node_and_overlaps():
    plan = dp.pool_plan([{'name': 'all'}, POOLS[0]], {}, NODES, [], CRD)
    assert plan['documents'][0]['spec']['nodeSelector'] == {'nvidia.com/gpu.present': 'true'}
    assert plan['errors'] == [
        "gpu_operator_driver_pools: node a100-0 is selected by pool 'all' and pool 'a100'; the node selectors of "
        "the NVIDIADrivers must not overlap (each GPU node gets its driver from exactly one)",
        "gpu_operator_driver_pools: node a100-1 is selected by pool 'all' and pool 'a100'; the node selectors of "
        "the NVIDIADrivers must not overlap (each GPU node gets its driver from exactly one)"]


def test_overlap_with_an_nvidiadriver_that_is_not_a_pool_and_immutable_fields():
    existing = [{'metadata': {'name': 'default'}, 'spec': {'nodeSelector': {'pool': 'h100'}}},
                {'metadata': {'name': 'a100'}, 'spec': {'usePrecompiled': True, 'driverType': 'gpu'}}]
    pools = [dict(POOLS[0], use_precompiled=False), POOLS[1]]
    errors = dp.pool_plan(pools, {}, NODES, existing, CRD)['errors']
    assert len(errors) == 2, errors
    assert "spec.usePrecompiled cannot change on an existing NVIDIADriver (it is True)" in errors[0]
    assert "node h100-0 is selected by pool 'h100' and NVIDIADriver 'default'" in errors[1]


MANAGED = {'app.kubernetes.io/managed-by': 'gpuops.gpu'}


def test_nvidiadrivers_of_removed_pools_are_deleted_but_never_a_users_own():
    existing = [{'metadata': {'name': 'a100', 'labels': dict(MANAGED)}, 'spec': {'nodeSelector': {'pool': 'a100'}}},
                {'metadata': {'name': 'old-h100', 'labels': dict(MANAGED)}, 'spec': {'nodeSelector': {'pool': 'h100'}}},
                {'metadata': {'name': 'users-own', 'labels': {'team': 'ml'}}, 'spec': {'nodeSelector': {'pool': 'x'}}},
                {'metadata': {'name': 'unlabelled'}, 'spec': {'nodeSelector': {'pool': 'y'}}},
                {'metadata': {'name': 'other-tool', 'labels': {'app.kubernetes.io/managed-by': 'helm'}},
                 'spec': {'nodeSelector': {'pool': 'z'}}}]
    plan = dp.pool_plan(POOLS, {}, NODES, existing, CRD)
    # pool h100 now selects the nodes old-h100 selected: no overlap, old-h100 goes first
    assert plan['errors'] == [] and plan['deletions'] == ['old-h100']
    assert [d['metadata']['name'] for d in plan['documents']] == ['a100', 'h100']
    # every pool removed: every NVIDIADriver gpuops.gpu created goes, and only those
    assert dp.pool_plan([], {}, NODES, existing, CRD) == {'documents': [], 'deletions': ['a100', 'old-h100'],
                                                          'errors': []}
    # the filter with no pools at all (the role plans the deletions on every run)
    plan = FILTERS['gpu_driver_pool_plan']({'gpu_operator_driver_pools': []}, NODES, existing, {})
    assert plan == {'documents': [], 'deletions': ['a100', 'old-h100'], 'errors': []}
    # nothing of ours left: nothing to delete; a user's NVIDIADriver still counts in the overlap check
    assert dp.pool_plan([], {}, NODES, existing[2:], CRD)['deletions'] == []
    errors = dp.pool_plan([{'name': 'x', 'node_selector': {'pool': 'a100'}}], {}, NODES,
                          [dict(existing[2], spec={'nodeSelector': {'pool': 'a100'}})], CRD)['errors']
    assert "node a100-0 is selected by pool 'x' and NVIDIADriver 'users-own'" in errors[0], errors


def test_pools_checked_against_the_schema_and_the_rules():
    pools = [{'name': 'a', 'node_selector': {'pool': 'a100'}, 'use_precompiled': True,
              'spec': {'priorityClass': 'x', 'gds': {'enabled': True}}}]
    errors = dp.pool_plan(pools, {}, NODES, [], CRD)['errors']
    assert any("gpu_operator_driver_pools[0] (a) spec: unknown field 'priorityClass'; did you mean "
               "'priorityClassName'?" in e for e in errors), errors
    assert any('gpu_operator_driver_pools[0] (a) spec.usePrecompiled needs gpu_operator_driver_pools[0] (a) '
               'spec.version' in e for e in errors), errors
    assert any('GPUDirect Storage is not supported with precompiled drivers' in e for e in errors), errors
    # no CRD (the API is not served yet): no schema errors, the rules still apply
    errors = dp.pool_plan(pools, {}, NODES, [], None)['errors']
    assert not any('unknown field' in e for e in errors) and len(errors) == 2


def test_bad_pools_give_no_documents_and_the_filter():
    assert dp.pool_plan([{'name': 'a', 'node_selector': 'pool=a'}])['documents'] == []
    plan = FILTERS['gpu_driver_pool_plan']({'gpu_operator_driver_pools': POOLS[:1],
                                            'gpu_operator_driver_version': '570.172.08'}, NODES, [], {})
    assert plan['errors'] == [] and plan['documents'][0]['spec']['version'] == '570.172.08'
    with pytest.raises(AnsibleFilterError):
        FILTERS['gpu_driver_pool_plan']([])
