# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""plans/dra_driver.py: the DRA driver chart's values and the preflight; gpu/dra_gates.py: gates per release."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.dra import DRA_NODE_LABEL, FEATURE_GATES
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.dra_gates import gate_mapping, release_gates, release_minor
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.dra_driver import driver_plan

CONFIG = {'chart_ref': 'oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu', 'chart_repo_url': '',
          'chart_version': '0.4.1', 'release_name': 'dra-driver-nvidia-gpu', 'namespace': 'dra-driver-nvidia-gpu',
          'feature_gates': [], 'nodes': 'all', 'tolerations': [], 'values': {},
          'image': 'registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu:v0.4.1', 'claim_templates': []}
READS = {'kubernetes_version': 'v1.36.3', 'resource_v1_served': True,
         'openshift': False}


def plan(reads=None, mirror=None, **config):
    return driver_plan(dict(CONFIG, **config), dict(READS, **(reads or {})), mirror)


@pytest.mark.parametrize('version, minor', [('v25.3.2', 1), ('25.8.1', 2), ('v25.12.0', 3), ('0.4.1', 4),
                                            ('v0.5.0', 5), ('26.4.0', 4), ('latest', None), ('', None)])
def test_release_minor(version, minor):
    assert release_minor(version) == minor


def test_release_gates_per_release():
    assert release_gates('v25.3.2') == ('v25.3', ())
    release, gates = release_gates('v25.8.1')
    assert release == 'v25.8' and 'MPSSupport' in gates and 'DynamicMIG' not in gates and 'ContextualLogging' in gates
    assert 'DynamicMIG' in release_gates('v25.12.0')[1] and 'DeviceMetadata' not in release_gates('v25.12.0')[1]
    assert 'DeviceMetadata' in release_gates('0.4.1')[1] and 'ConsumableShares' not in release_gates('0.4.1')[1]
    assert set(FEATURE_GATES) <= set(release_gates('0.5.0')[1]) and release_gates('')[0].startswith('newer')


def test_gate_mapping_from_names_or_a_mapping():
    assert gate_mapping(['MPSSupport', 'DynamicMIG']) == ({'DynamicMIG': True, 'MPSSupport': True},
                                                          {'MPSSupport', 'DynamicMIG'}, [])
    assert gate_mapping({'MPSSupport': False, 'X': True}) == ({'MPSSupport': False, 'X': True}, {'X'}, [])
    assert gate_mapping({'MPSSupport': 'yes'})[2] and gate_mapping('MPSSupport')[2]


def test_default_values_leave_the_chart_defaults():
    out = plan()
    assert out['errors'] == [] and out['warnings'] == []
    image = {'repository': 'registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu', 'tag': 'v0.4.1'}
    assert out['helm_values'] == {'image': image}
    assert out['chart_ref'] == CONFIG['chart_ref'] and out['summary']['driver_release'] == 'v0.4'


def test_labelled_nodes_gates_tolerations_and_own_values_merged_last():
    out = plan(nodes='labelled', feature_gates={'MPSSupport': True, 'NVMLDeviceHealthCheck': False},
               tolerations=[{'key': 'dedicated', 'operator': 'Equal', 'value': 'gpu', 'effect': 'NoSchedule'}],
               values={'kubeletPlugin': {'priorityClassName': 'x'}, 'image': {'tag': 'v0.4.0'}})
    assert out['errors'] == []
    plugin = out['helm_values']['kubeletPlugin']
    assert plugin['nodeSelector'] == {DRA_NODE_LABEL: 'true'} and plugin['priorityClassName'] == 'x'
    assert {'key': 'nvidia.com/gpu', 'operator': 'Exists', 'effect': 'NoSchedule'} in plugin['tolerations']
    assert {'key': 'dedicated', 'operator': 'Equal', 'value': 'gpu', 'effect': 'NoSchedule'} in plugin['tolerations']
    assert out['helm_values']['featureGates'] == {'MPSSupport': True, 'NVMLDeviceHealthCheck': False}
    assert out['helm_values']['image']['tag'] == 'v0.4.0'


def test_a_gate_the_release_does_not_know_is_refused():
    out = plan(image='nvcr.io/nvidia/k8s-dra-driver-gpu:v25.12.0', chart_version='25.12.0',
               feature_gates=['MPSSupport', 'DeviceMetadata', 'NoSuchGate'])
    assert out['helm_values'] is None and len(out['errors']) == 2
    assert "the DRA driver v25.12 does not know the feature gate 'DeviceMetadata'" in out['errors'][0]
    assert "'NoSuchGate'" in out['errors'][1]
    assert plan(feature_gates=['DeviceMetadata', 'ContextualLogging'])['errors'] == []
    old = plan(image='nvcr.io/nvidia/k8s-dra-driver-gpu:v25.3.2', chart_version='25.3.2', feature_gates=['MPSSupport'])
    assert 'takes no feature gates' in old['errors'][0]


def test_a_template_share_with_its_gate_off_is_refused():
    templates = [{'name': 'mps-half', 'sharing': {'strategy': 'MPS'}},
                 {'name': 'ts', 'sharing': {'strategy': 'TimeSlicing'}}, {'name': 'whole'}]
    out = plan(claim_templates=templates, feature_gates=['TimeSlicingSettings'])
    assert len(out['errors']) == 1
    assert out['errors'][0].startswith('dra_claim_templates[0] (mps-half) asks for sharing with MPS')
    assert 'add MPSSupport to dra_driver_feature_gates' in out['errors'][0]
    assert plan(claim_templates=templates, feature_gates=['TimeSlicingSettings', 'MPSSupport'])['errors'] == []
    # v25.3 has no gates: sharing is not gated there
    assert plan(claim_templates=templates, image='nvcr.io/nvidia/k8s-dra-driver-gpu:v25.3.2',
                chart_version='25.3.2')['errors'] == []


def test_cluster_refusals_every_one_at_once():
    out = plan(reads={'kubernetes_version': 'v1.33.2', 'resource_v1_served': False, 'openshift': True,
                      'scheduler': {'spec': {'profileCustomizations': {}}}})
    assert len(out['errors']) == 3
    assert 'Kubernetes >= 1.34 needed' in out['errors'][0] and '1.33' in out['errors'][0]
    assert 'resource.k8s.io/v1' in out['errors'][1]
    assert 'dynamicResourceAllocation unset' in out['errors'][2] and 'oc patch scheduler cluster' in out['errors'][2]
    enabled = {'spec': {'profileCustomizations': {'dynamicResourceAllocation': 'Enabled'}}}
    assert plan(reads={'openshift': True, 'scheduler': enabled})['errors'] == []
    assert plan(reads={'openshift': True, 'scheduler': {},
                       'openshift_feature_gates': ['DynamicResourceAllocation']})['errors'] == []


def test_input_errors_all_at_once():
    out = plan(chart_ref='', namespace='default', release_name='Bad_Name', nodes='some', values=[1],
               tolerations=[{'operator': 'Bogus'}], image='nvcr.io/x@sha256:' + '0' * 64, feature_gates='MPSSupport')
    text = '\n'.join(out['errors'])
    for needle in ('dra_driver_chart_ref', "must not be 'default'", 'dra_driver_release_name', 'dra_driver_nodes',
                   'dra_driver_values', 'dra_driver_tolerations', 'no digest', 'list of names or a mapping'):
        assert needle in text
    assert out['helm_values'] is None


def test_air_gapped_image_chart_and_pull_secret_through_the_mirror():
    mirror = {'platform': 'kubernetes', 'repositories': [{'source': 'registry.k8s.io', 'mirror': 'mirror.lan:5000/k8s'}],
              'pull_secret': {'name': 'mirror-pull', 'namespace': 'dra-driver-nvidia-gpu'}}
    out = plan(mirror=mirror)
    assert out['chart_ref'] == 'oci://mirror.lan:5000/k8s/dra-driver-nvidia/charts/dra-driver-nvidia-gpu'
    image = {'repository': 'mirror.lan:5000/k8s/dra-driver-nvidia/dra-driver-nvidia-gpu', 'tag': 'v0.4.1'}
    assert out['helm_values']['image'] == image
    assert out['helm_values']['imagePullSecrets'] == [{'name': 'mirror-pull'}]


def test_an_image_of_another_release_than_the_chart_warns():
    assert 'not of the release' in plan(image='nvcr.io/nvidia/k8s-dra-driver-gpu:v25.12.0')['warnings'][0]


def test_values_diff_against_the_installed_release():
    first = plan()
    assert first['values_diff'] == {'before': None, 'after': first['helm_values']}
    assert first['summary']['installed'] is False
    same = plan(reads={'release': {'values': first['helm_values']}})
    assert same['values_diff'] is None and same['summary']['installed'] is True
    changed = plan(reads={'release': {'values': first['helm_values']}}, nodes='labelled')
    assert changed['values_diff']['before'] == first['helm_values']
    assert changed['values_diff']['after']['kubeletPlugin'] == {'nodeSelector': {'gpuops.gpu/dra-kubelet-plugin': 'true'}}
