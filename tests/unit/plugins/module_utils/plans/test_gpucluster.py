# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.plans.dra_resources import role_labels
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.gpucluster import (
    gpucluster_plan, kubernetes_version)


def kubelet(name, version):
    return {'metadata': {'name': name}, 'status': {'nodeInfo': {'kubeletVersion': version}}}


READS = {'crd_served': True, 'resource_v1_served': True, 'nodes': [kubelet('a100-0', 'v1.36.3')],
         'cluster_policies': [], 'existing': []}


def reads(**changes):
    out = dict(READS)
    out.update(changes)
    return out


def test_the_singleton_from_typed_inputs():
    config = {'driver_repository': 'registry.example.com/nvidia', 'driver_image': 'dra-driver-nvidia-gpu',
              'driver_version': 'v0.5.0', 'feature_gates': ['MPSSupport', 'NVMLDeviceHealthCheck'],
              'kubelet_plugin': {'env': {'LOG_LEVEL': '4'}, 'resources': {'limits': {'memory': '512Mi'}},
                                 'healthcheck': {'enabled': True, 'port': 51516}},
              'compute_domains': False, 'dcgm': True, 'dcgm_exporter': False}
    plan = gpucluster_plan(config, READS)
    assert plan['errors'] == []
    assert plan['definition'] == {
        'apiVersion': 'nvidia.com/v1alpha1', 'kind': 'GPUCluster',
        'metadata': {'name': 'gpu-cluster', 'labels': role_labels()},
        'spec': {'draDriver': {'repository': 'registry.example.com/nvidia', 'image': 'dra-driver-nvidia-gpu',
                               'version': 'v0.5.0',
                               'featureGates': {'MPSSupport': True, 'NVMLDeviceHealthCheck': True},
                               'gpus': {'kubeletPlugin': {'env': [{'name': 'LOG_LEVEL', 'value': '4'}],
                                                          'resources': {'limits': {'memory': '512Mi'}},
                                                          'healthcheck': {'enabled': True, 'port': 51516}}},
                               'computeDomains': {'enabled': False}},
                 'dcgm': {'enabled': True}, 'dcgmExporter': {'enabled': False}}}
    assert plan['summary'] == {'name': 'gpu-cluster', 'exists': False, 'state': None,
                               'feature_gates': {'MPSSupport': True, 'NVMLDeviceHealthCheck': True}}


def test_defaults_leave_the_image_to_the_operator():
    plan = gpucluster_plan({}, reads(existing=[{'metadata': {'name': 'gpu-cluster'}, 'status': {'state': 'ready'}}]))
    assert plan['definition']['spec'] == {'draDriver': {'computeDomains': {'enabled': False}},
                                          'dcgm': {'enabled': False}, 'dcgmExporter': {'enabled': True}}
    assert plan['summary']['exists'] is True and plan['summary']['state'] == 'ready'


def test_a_gate_mapping_keeps_gates_turned_off():
    plan = gpucluster_plan({'feature_gates': {'MPSSupport': False, 'DynamicMIG': True}}, READS)
    assert plan['definition']['spec']['draDriver']['featureGates'] == {'MPSSupport': False, 'DynamicMIG': True}


@pytest.mark.parametrize('changes, words', [
    ({'crd_served': False}, 'GPU operator >= 26.7 needed'),
    ({'cluster_policies': [{'metadata': {'name': 'cluster-policy'}}]},
     'ClusterPolicy cluster-policy exists: GPU operator v26.7 runs one of them'),
    ({'nodes': [kubelet('new', 'v1.34.0'), kubelet('b', 'v1.33.5'), kubelet('a', None)]},
     'Kubernetes >= 1.34 needed on the GPU nodes for DRA through the GPU operator (the kubelet runs the driver\'s '
     'plugin through resource.k8s.io/v1); older: a (unknown), b (v1.33.5)'),
    ({'resource_v1_served': False}, 'does not serve resource.k8s.io/v1'),
])
def test_each_cluster_refusal_is_one_sentence(changes, words):
    plan = gpucluster_plan({}, reads(**changes))
    assert plan['definition'] is None
    assert len(plan['errors']) == 1 and words in plan['errors'][0], plan['errors']


def test_the_cluster_policy_refusal_points_to_the_window():
    policies = [{'metadata': {'name': 'b'}}, {'metadata': {'name': 'a'}}]
    plan = gpucluster_plan({}, reads(cluster_policies=policies))
    assert 'ClusterPolicy a, b exists' in plan['errors'][0] and 'dra_parts [window]' in plan['errors'][0]
    window = gpucluster_plan({'parts': ['window']}, reads(cluster_policies=policies))
    assert window['errors'] == [] and window['definition']['metadata']['name'] == 'gpu-cluster'


@pytest.mark.parametrize('parts, words', [
    (['driver', 'gpucluster'], "'driver' and 'gpucluster': with a GPUCluster the GPU operator deploys"),
    (['driver', 'window'], "'driver' and 'window': with a GPUCluster the GPU operator deploys"),
    (['cutover', 'window'], "'cutover' and 'window': the node-group cutover moves nodes to the standalone"),
    (['gpucluster', 'window'], "'gpucluster' and 'window': the window writes the GPUCluster itself"),
])
def test_parts_that_cannot_run_with_a_gpucluster(parts, words):
    plan = gpucluster_plan({'parts': parts}, READS)
    assert len(plan['errors']) == 1 and words in plan['errors'][0], plan['errors']


def test_every_input_error_at_once():
    config = {'feature_gates': ['MPSSupprt'], 'driver_image': 'nvcr.io/nvidia/dra:v1', 'dcgm': 'yes',
              'kubelet_plugin': {'env': {'A': 1}, 'resources': {'limits': {'memory': 'lots'}},
                                 'healthcheck': {'port': 70000}, 'nodeSelector': {}},
              'driver_version': 5, 'bogus': 1}
    plan = gpucluster_plan(config, reads(crd_served=False))
    text = '\n'.join(plan['errors'])
    assert plan['definition'] is None
    for words in ("unknown key 'bogus'", "unknown DRA driver feature gate 'MPSSupprt'", 'MPSSupport',
                  'must be an image name', 'dra_gpucluster_dcgm must be true or false',
                  'dra_gpucluster_kubelet_plugin.env.A must be a string',
                  "dra_gpucluster_kubelet_plugin.resources.limits.memory: 'lots' is not a quantity",
                  'dra_gpucluster_kubelet_plugin.healthcheck.port must be a port number',
                  "unknown key 'nodeSelector'", 'dra_gpucluster_driver_version must be a string',
                  'GPU operator >= 26.7 needed'):
        assert words in text, words


def test_gates_are_those_of_the_driver_release():
    plan = gpucluster_plan({'driver_version': 'v25.8.1', 'feature_gates': ['MPSSupport', 'DynamicMIG']}, READS)
    assert len(plan['errors']) == 1 and "unknown DRA driver feature gate 'DynamicMIG': the driver v25.8" in \
        plan['errors'][0]
    assert gpucluster_plan({'driver_version': 'v25.12.0', 'feature_gates': ['DynamicMIG']}, READS)['errors'] == []


def test_not_beside_the_standalone_driver_chart():
    helm = {'meta.helm.sh/release-name': 'nvidia-dra-driver-gpu', 'meta.helm.sh/release-namespace': 'dra'}
    classes = [{'metadata': {'name': 'gpu.nvidia.com', 'annotations': helm}},
               {'metadata': {'name': 'mig.nvidia.com', 'annotations': helm}},
               {'metadata': {'name': 'team-a.example.com', 'annotations': dict(helm, **{
                   'meta.helm.sh/release-name': 'other'})}}]
    plan = gpucluster_plan({}, reads(device_classes=classes))
    assert len(plan['errors']) == 1, plan['errors']
    assert "chart is installed (Helm release dra/nvidia-dra-driver-gpu, which owns" in plan['errors'][0]
    operator_made = [{'metadata': {'name': 'gpu.nvidia.com'}}]
    assert gpucluster_plan({}, reads(device_classes=operator_made))['errors'] == []


def test_with_the_resources_part():
    assert gpucluster_plan({'parts': ['resources', 'gpucluster']}, READS)['errors'] == []


def test_feature_gates_of_the_wrong_type():
    plan = gpucluster_plan({'feature_gates': {'MPSSupport': 'on'}}, READS)
    assert plan['errors'] == ['dra_driver_feature_gates: feature gate MPSSupport must be true or false, got string']


@pytest.mark.parametrize('version, expected', [
    ('v1.36.3', (1, 36)), ('v1.30.0-eks-1234', (1, 30)), ('1.35', (1, 35)), ('x', None), (None, None)])
def test_kubernetes_version(version, expected):
    assert kubernetes_version(version) == expected
