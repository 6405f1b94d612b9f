# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""mirror_plan: the role's inputs, the image lists and the air-gap check; role_errors: what stops the role."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.gpu.plugins.filter.mirror import FilterModule
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.mirror import (
    ca_bundle_errors, csv_operand_images, image_set_configuration, mirror_plan, related_images, role_errors)
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.plans.mirror_data import CSV, DIGEST, PEM, openshift


# --- helpers ---------------------------------------------------------------------------------

def test_ca_bundle_errors():
    assert ca_bundle_errors(PEM) == [] and ca_bundle_errors('') == []
    assert 'PEM certificate' in ca_bundle_errors('/etc/pki/ca.pem')[0]
    assert 'PEM text' in ca_bundle_errors(['x'])[0]


def test_related_images_and_operand_images():
    assert related_images(CSV) == ['nvcr.io/nvidia/driver@' + DIGEST, 'nvcr.io/nvidia/driver@sha256:' + 'ef' * 32,
                                   'nvcr.io/nvidia/gpu-operator:v25.10.1',
                                   'nvcr.io/nvidia/k8s-device-plugin@' + DIGEST]
    assert sorted(csv_operand_images(CSV)) == ['DEVICE_PLUGIN_IMAGE', 'DRIVER_IMAGE', 'VALIDATOR_IMAGE']
    assert related_images(None) == [] and csv_operand_images('x') == {}


def test_image_set_configuration():
    doc = image_set_configuration(['b', 'a', 'a', ''], [{'catalog': 'c', 'packages': [{'name': 'p'}]}])
    assert doc == {'apiVersion': 'mirror.openshift.io/v2alpha1', 'kind': 'ImageSetConfiguration',
                   'mirror': {'operators': [{'catalog': 'c', 'packages': [{'name': 'p'}]}],
                              'additionalImages': [{'name': 'a'}, {'name': 'b'}]}}
    assert image_set_configuration([])['mirror'] == {}


# --- the plan --------------------------------------------------------------------------------

@pytest.mark.parametrize('extra, fragment', [
    ({'platform': 'okd'}, 'mirror_platform must be openshift or kubernetes'),
    ({'registry': ''}, 'mirror_registry must be a non-empty string'),
    ({'registry': 'https://m.example.com'}, 'scheme'),
    ({'repositories': []}, 'mirror_repositories is empty'),
    ({'repositories': ['nvidia']}, 'mirror_repositories[0].source'),
    ({'source_policy': 'Never'}, 'mirror_source_policy must be'),
    ({'mirror_set_name': 'Bad'}, "mirror_mirror_set_name 'Bad'"),
    ({'ca_bundle': '/path/ca.pem'}, 'PEM certificate'),
    ({'operand_images': {'driver': 'x'}}, "mirror_operand_images key 'driver'"),
    ({'operand_images': {'DRIVER_IMAGE': 'Not An Image'}}, 'mirror_operand_images.DRIVER_IMAGE'),
    ({'operand_images': ['x']}, 'must be a mapping'),
    ({'pull_secret_names': ['Bad_Secret']}, "mirror_pull_secret_name 'Bad_Secret'"),
    ({'catalog_sources': 'x'}, 'mirror_catalog_sources must be a list'),
])
def test_plan_input_errors(extra, fragment):
    plan = mirror_plan(openshift(**extra))
    assert any(fragment in e for e in plan['errors']), plan['errors']


def test_air_gap_check_catches_a_public_mirror_target():
    plan = mirror_plan(openshift(repositories=[{'source': 'nvcr.io/nvidia', 'mirror': 'quay.io/acme/nvidia'},
                                               'registry.redhat.io'], catalog_sources=[]))
    assert plan['errors'] == []
    # the mirror prefixes are allowed by construction, the check looks at them as mirrors
    assert plan['public_references'] == []
    plan = mirror_plan(openshift(catalog_sources=[{'name': 'a', 'image': 'quay.io/x/index:1'}]))
    assert [r['registry'] for r in plan['public_references']] == ['quay.io']
    plan = mirror_plan(openshift(catalog_sources=[{'name': 'a', 'image': 'quay.io/x/index:1'}], air_gapped=False))
    assert plan['public_references'] == []


def test_role_errors_say_what_the_role_found():
    checks = {'cluster_policy_errors': ['two ClusterPolicies'], 'username': True, 'password': False,
              'ca_file': '/ca.pem', 'csv_file': '/csv.yaml', 'files': {'/ca.pem': False, '/csv.yaml': True},
              'platform': 'openshift', 'pull_secret_found': False, 'image_list_path': '/list.txt',
              'image_list_format': 'list', 'additional_images': []}
    assert role_errors({'errors': ['from the plan'], 'related_images': []}, checks) == [
        'from the plan', 'two ClusterPolicies',
        'set both mirror_registry_username and mirror_registry_password, or neither',
        'mirror_ca_file /ca.pem does not exist on the controller',
        'openshift-config/pull-secret not found: is this OpenShift? (use mirror_platform: kubernetes otherwise)',
        'mirror_image_list_path is set but there is no image to list: give mirror_csv_file or install the GPU '
        'operator first (its CSV relatedImages), or mirror_additional_images']
    kubernetes = {'platform': 'kubernetes', 'operator_namespace': 'gpu-operator', 'namespace_found': False}
    assert role_errors({'errors': []}, kubernetes) == [
        'namespace gpu-operator does not exist: install the GPU operator first or set mirror_operator_namespace']
    assert role_errors({'errors': [], 'related_images': ['nvcr.io/nvidia/driver:1']},
                       dict(kubernetes, namespace_found=True, image_list_path='/l', image_list_format='list')) == []
    assert FilterModule().filters()['mirror_input_errors']({'errors': []}, {'platform': 'openshift'}) == []
    with pytest.raises(AnsibleFilterError, match='mirror_input_errors'):
        FilterModule().filters()['mirror_input_errors']([], {})
