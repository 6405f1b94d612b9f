# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""mirror_operands: the ClusterPolicy operands pointed at the mirror (Kubernetes platform)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy

from ansible_collections.gpuops.gpu.plugins.module_utils.plans.mirror_air_gap import public_registry_references
from ansible_collections.gpuops.gpu.plugins.module_utils.common.merge import deep_merge
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.mirror import csv_operand_images, mirror_plan
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.mirror_operands import OPERANDS, cluster_policy_mirror_patch
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.plans.mirror_data import CSV, DIGEST, MIRROR, POLICY, RULES


# --- Kubernetes: the ClusterPolicy ---------------------------------------------------------------

def test_operands_table_covers_the_crd_paths():
    paths = {'.'.join(p) for p, _env in OPERANDS}
    assert {'driver', 'driver.manager', 'toolkit', 'devicePlugin', 'dcgmExporter', 'dcgm', 'gfd', 'migManager',
            'nodeStatusExporter', 'validator', 'operator.initContainer', 'vgpuManager', 'vgpuManager.driverManager',
            'vgpuDeviceManager', 'vfioManager', 'vfioManager.driverManager', 'sandboxDevicePlugin', 'gds',
            'gdrcopy', 'kataManager', 'ccManager'} == paths


def test_helm_style_repositories_are_rewritten_and_secrets_merged():
    spec = {'driver': {'repository': 'nvcr.io/nvidia', 'image': 'driver', 'version': '550.54',
                       'imagePullSecrets': ['existing']},
            'toolkit': {'repository': 'nvcr.io/nvidia/k8s', 'image': 'container-toolkit', 'version': 'v1'},
            'devicePlugin': {'image': 'nvcr.io/nvidia/k8s-device-plugin@' + DIGEST},
            'gfd': {'repository': 'docker.io/library', 'image': 'gfd', 'version': '1'}}
    rules = RULES + [{'source': 'docker.io/library', 'mirror': MIRROR + '/hub'}]
    result = cluster_policy_mirror_patch(spec, rules, ['gpuops-mirror-pull', 'existing'])
    assert result['errors'] == []
    patch = result['patch']
    assert patch['driver'] == {'repository': MIRROR + '/nvidia', 'imagePullSecrets': ['existing', 'gpuops-mirror-pull']}
    assert patch['toolkit']['repository'] == MIRROR + '/nvidia/k8s'
    assert patch['devicePlugin']['image'] == MIRROR + '/nvidia/k8s-device-plugin@' + DIGEST
    assert patch['gfd']['repository'] == MIRROR + '/hub'
    merged = deep_merge(spec, patch)
    # a re-run changes nothing
    assert cluster_policy_mirror_patch(merged, rules, ['gpuops-mirror-pull', 'existing'])['patch'] == {}


def test_env_images_from_the_csv_and_unresolved_operands():
    images = csv_operand_images(CSV)
    result = cluster_policy_mirror_patch(POLICY['spec'], RULES, [], images)
    assert result['errors'] == []
    assert result['patch']['driver'] == {'image': MIRROR + '/nvidia/driver@' + DIGEST}
    assert result['patch']['validator'] == {'image': MIRROR + '/nvidia/gpu-operator:v25.10.1'}
    assert result['patch']['nodeStatusExporter'] == {'image': MIRROR + '/nvidia/gpu-operator:v25.10.1'}
    assert 'gds' not in result['patch'] and 'vgpuManager' not in result['patch']
    # devicePlugin from the env; driver.manager absent without DRIVER_MANAGER_IMAGE
    assert 'manager' not in result['patch']['driver']
    without = cluster_policy_mirror_patch(POLICY['spec'], RULES, [], {})
    assert without['patch'] == {}
    assert without['unresolved'] == ['driver (DRIVER_IMAGE)', 'devicePlugin (DEVICE_PLUGIN_IMAGE)',
                                     'validator (VALIDATOR_IMAGE)']  # disabled operands are not reported


def test_public_image_without_rule_is_an_error_private_is_left_alone():
    spec = {'driver': {'repository': 'quay.io/acme', 'image': 'driver', 'version': '1'},
            'toolkit': {'repository': 'registry.example.com:5000/private', 'image': 'tk', 'version': '1'},
            'gfd': {'image': 'ghcr.io/nvidia/gfd:1'}, 'dcgm': {'image': 'registry.example.com/x/dcgm:1'}}
    result = cluster_policy_mirror_patch(spec, RULES, [])
    assert sorted(e.split()[1] for e in result['errors']) == ['spec.driver.repository', 'spec.gfd.image']
    assert result['patch'] == {}


def test_kubernetes_plan():
    config = {'platform': 'kubernetes', 'registry': MIRROR, 'repositories': ['nvcr.io/nvidia'],
              'pull_secret_names': ['gpuops-mirror-pull']}
    plan = mirror_plan(config, {'cluster_policy': copy.deepcopy(POLICY), 'csv': CSV})
    assert plan['errors'] == [] and plan['objects'] == []
    assert plan['cluster_policy_patch']['devicePlugin'] == {
        'image': MIRROR + '/nvidia/k8s-device-plugin@' + DIGEST, 'imagePullSecrets': ['gpuops-mirror-pull']}
    assert plan['cluster_policy_effective']['metadata'] == {'name': 'gpu-cluster-policy'}
    assert public_registry_references([plan['cluster_policy_effective']], MIRROR) == []
    assert plan['public_references'] == []
    assert 'operators' not in plan['image_set_configuration']['mirror']
    missing = mirror_plan(config, {})
    assert any('no ClusterPolicy found' in e for e in missing['errors'])
    skipped = mirror_plan(dict(config, cluster_policy=False), {})
    assert skipped['errors'] == [] and skipped['cluster_policy_effective'] is None


def test_kubernetes_plan_flags_public_leftovers():
    policy = copy.deepcopy(POLICY)
    policy['spec']['dcgmExporter'] = {'repository': 'nvcr.io/nvidia/k8s', 'image': 'dcgm-exporter', 'version': '3',
                                      'args': ['--collectors', 'nvcr.io/nvidia/whatever']}
    plan = mirror_plan({'platform': 'kubernetes', 'registry': MIRROR, 'repositories': ['nvcr.io/nvidia']},
                       {'cluster_policy': policy})
    assert [r['path'] for r in plan['public_references']] == ['spec.dcgmExporter.args[1]']
