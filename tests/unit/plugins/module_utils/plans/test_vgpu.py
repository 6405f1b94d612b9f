# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.plans.vgpu import (
    driver_image_errors, gridd_settings_errors, gridd_settings_from_text, gridd_text_errors, guest_driver_branch,
    host_manager_branch, host_manager_errors, render_gridd_conf, vgpu_plan)

POLICY = {'metadata': {'name': 'gpu-cluster-policy'},
          'spec': {'driver': {'enabled': True, 'licensingConfig': {'nlsEnabled': True, 'secretName': ''},
                              'imagePullSecrets': ['mirror-pull']}}}
TOKEN = {'exists': True, 'isreg': True, 'size': 2048}


def config(**extra):
    out = {'secret_name': 'licensing-config', 'nls_enabled': True, 'gridd_settings': {}, 'feature_type': 1,
           'token_file': '/secrets/client_configuration_token.tok', 'driver_image': 'driver',
           'pull_secret_name': 'gpuops-vgpu-registry', 'operator_namespace': 'nvidia-gpu-operator'}
    out.update(extra)
    return out


def cluster(**extra):
    out = {'cluster_policies': [POLICY], 'namespace_exists': True, 'token': TOKEN}
    out.update(extra)
    return out


def test_render_gridd_conf_is_ordered_and_deterministic():
    text = render_gridd_conf({'ServerPort': 7070, 'Zeta': 'z', 'FeatureType': 1, 'EnableUI': False,
                              'ServerAddress': 'nls.example.com', 'Empty': ''})
    assert text.splitlines()[1:] == ['FeatureType=1', 'ServerAddress=nls.example.com', 'ServerPort=7070',
                                     'EnableUI=FALSE', 'Zeta=z']
    assert text.startswith('# ') and text.endswith('\n')
    assert render_gridd_conf({'FeatureType': 1}) == render_gridd_conf({'FeatureType': 1})


@pytest.mark.parametrize('settings, fragment', [
    ({'FeatureTyp': 1}, "did you mean 'FeatureType'"),
    ({'FeatureType': 3}, 'FeatureType must be one of 0 (unlicensed), 1 (NVIDIA vGPU)'),
    ({'FeatureType': True}, 'FeatureType must be one of'),
    ({'ServerPort': 'http'}, 'ServerPort must be a number'),
    ({'ServerAddress': 'a\nFeatureType=0'}, 'single line'),
    ({'ServerAddress': ['a']}, 'must be a string, number or boolean'),
    ({'bad key': 1}, 'is not a gridd.conf setting name'),
    ('FeatureType=1', 'must be a mapping'),
])
def test_gridd_settings_errors(settings, fragment):
    errors = gridd_settings_errors(settings)
    assert any(fragment in e for e in errors), errors


def test_gridd_settings_accepts_known_and_unrelated_keys():
    assert gridd_settings_errors({'FeatureType': '4', 'ServerAddress': 'x', 'CustomOption': 5}) == []
    assert gridd_settings_errors(None) == []


def test_gridd_text():
    text = '# comment\n\nFeatureType=1\n ServerAddress = nls.example.com \n'
    assert gridd_text_errors(text) == []
    assert gridd_settings_from_text(text) == {'FeatureType': '1', 'ServerAddress': 'nls.example.com'}
    assert gridd_text_errors('FeatureType 1\n') == ["vgpu_gridd_conf line 1 is not 'Key=Value' or a # comment"]
    assert gridd_text_errors(5)


def test_driver_image_errors():
    assert driver_image_errors('', 'driver', '') == []
    assert driver_image_errors('registry.example.com/nvidia', 'driver', '580.95.05') == []
    assert driver_image_errors('registry.example.com/nvidia', 'driver', 'sha256:' + 'a' * 64) == []
    assert any('vgpu_driver_version is required' in e for e in driver_image_errors('r.example.com/x', 'driver', ''))
    assert any('vgpu_driver_repository is required' in e for e in driver_image_errors('', 'driver', '1'))
    assert any('image name' in e for e in driver_image_errors('r.example.com/x', 'Driver:1', '1'))
    assert any('must be an image tag' in e for e in driver_image_errors('r.example.com/x', 'driver', 'v 1'))


def test_plan_nls_with_driver_image_and_registry():
    plan = vgpu_plan(config(driver_repository='registry.example.com:5000/vgpu/', driver_version='580.95.05-grid',
                            registry_credentials=True), cluster())
    assert plan['errors'] == [] and plan['warnings'] == []
    assert plan['registry_server'] == 'registry.example.com:5000'
    assert plan['cluster_policy_name'] == 'gpu-cluster-policy'
    assert plan['cluster_policy_patch'] == {'driver': {
        'licensingConfig': {'secretName': 'licensing-config', 'nlsEnabled': True},
        'repository': 'registry.example.com:5000/vgpu', 'image': 'driver', 'version': '580.95.05-grid',
        'imagePullSecrets': ['mirror-pull', 'gpuops-vgpu-registry']}}
    assert 'configMapName' not in plan['cluster_policy_patch']['driver']['licensingConfig']
    assert 'FeatureType=1' in plan['gridd_conf']


def test_plan_licensing_only_keeps_driver_image_and_secrets():
    plan = vgpu_plan(config(), cluster())
    assert plan['cluster_policy_patch'] == {'driver': {'licensingConfig': {'secretName': 'licensing-config',
                                                                           'nlsEnabled': True}}}
    policy = {'metadata': {'name': 'p'}, 'spec': {'driver': {'imagePullSecrets': ['gpuops-vgpu-registry']}}}
    plan = vgpu_plan(config(registry_credentials=True, registry_server='r.example.com'),
                     cluster(cluster_policies=[policy]))
    assert 'imagePullSecrets' not in plan['cluster_policy_patch']['driver']


def test_plan_clears_deprecated_config_map():
    policy = {'metadata': {'name': 'p'}, 'spec': {'driver': {'licensingConfig': {'configMapName': 'licensing-config'}}}}
    plan = vgpu_plan(config(), cluster(cluster_policies=[policy]))
    assert plan['cluster_policy_patch']['driver']['licensingConfig'] == {
        'secretName': 'licensing-config', 'nlsEnabled': True, 'configMapName': ''}
    assert 'deprecated' in plan['warnings'][0]


def test_plan_verbatim_gridd_conf():
    plan = vgpu_plan(config(gridd_conf='FeatureType=4', gridd_settings={}), cluster())
    assert plan['errors'] == [] and plan['gridd_conf'] == 'FeatureType=4\n'
    both = vgpu_plan(config(gridd_conf='FeatureType=4', gridd_settings={'ServerPort': 1}), cluster())
    assert any('not both' in e for e in both['errors'])


def test_plan_legacy_license_server():
    plan = vgpu_plan(config(nls_enabled=False, token_file='', gridd_settings={'ServerAddress': 'lic.example.com'}),
                     cluster(token={}))
    assert plan['errors'] == []
    assert plan['cluster_policy_patch']['driver']['licensingConfig']['nlsEnabled'] is False
    bad = vgpu_plan(config(nls_enabled=False, token_file=''), cluster(token={}))
    assert any('no ServerAddress' in e for e in bad['errors'])


@pytest.mark.parametrize('cfg, clu, fragment', [
    ({'token_file': ''}, {}, 'vgpu_token_file is required'),
    ({}, {'token': {'exists': False}}, 'does not exist on the Ansible controller'),
    ({}, {'token': {'exists': True, 'isreg': False}}, 'is not a regular file'),
    ({}, {'token': {'exists': True, 'isreg': True, 'size': 0}}, 'is empty'),
    ({}, {'namespace_exists': False}, 'namespace nvidia-gpu-operator does not exist'),
    ({}, {'cluster_policies': []}, 'exactly one ClusterPolicy is needed (found 0)'),
    ({}, {'cluster_policies': [POLICY, POLICY]}, 'found 2'),
    ({'registry_credentials': True}, {}, 'there is no registry'),
    ({'registry_credentials': True, 'registry_server': 'https://r'}, {}, 'scheme'),
    ({'secret_name': ''}, {}, 'vgpu_licensing_secret_name must not be empty'),
    ({'secret_name': 'Bad'}, {}, "vgpu_secret_name 'Bad'"),
    ({'nls_enabled': 'yes'}, {}, 'vgpu_nls_enabled must be true or false'),
    ({'gridd_settings': {'FeatureType': 9}}, {}, 'FeatureType must be one of'),
    ({'driver_repository': 'r.example.com/x'}, {}, 'vgpu_driver_version is required'),
])
def test_plan_errors(cfg, clu, fragment):
    plan = vgpu_plan(config(**cfg), cluster(**clu))
    assert any(fragment in e for e in plan['errors']), plan['errors']
    assert plan['cluster_policy_patch'] == {}


def test_plan_driver_disabled_and_driver_crd():
    policy = {'metadata': {'name': 'p'}, 'spec': {'driver': {'enabled': False}}}
    plan = vgpu_plan(config(), cluster(cluster_policies=[policy]))
    assert 'driver.enabled: false' in plan['errors'][0]
    policy = {'metadata': {'name': 'p'}, 'spec': {'driver': {'useNvidiaDriverCRD': True}}}
    plan = vgpu_plan(config(), cluster(cluster_policies=[policy]))
    assert plan['errors'] == [] and 'NVIDIADriver' in plan['warnings'][0]


# --- guest driver against the hosts' vGPU manager ------------------------------------------------

@pytest.mark.parametrize('value, branch', [
    ('17.3', 550), ('17', 550), ('16.8', 535), ('19.2', 580), ('550.90.05', 550), ('550.90', 550), ('R570', 570),
    (' 535.230.02 ', 535),
])
def test_host_manager_branch(value, branch):
    assert host_manager_branch(value) == (branch, None)


@pytest.mark.parametrize('value, message', [
    ('seventeen', 'must be the vGPU software release of the hosts'),
    ('17.3.1', 'must be the vGPU software release'),
    ('550.90.05.1', 'must be the vGPU software release'),
    ('R17', 'must be the vGPU software release'),
    ('17.3-beta', 'must be the vGPU software release'),
    (True, 'must be the vGPU software release'),
    ([17], 'must be the vGPU software release'),
    ('12.4', 'vGPU software release 12 is not one this collection knows (13 to 19)'),
])
def test_host_manager_branch_malformed(value, message):
    branch, error = host_manager_branch(value)
    assert branch is None and message in error


@pytest.mark.parametrize('version, branch', [
    ('580.95.05-grid', 580), ('550.90.07', 550), ('535.230.02-rhcos4.18', 535), ('550.90', 550),
    ('sha256:' + 'a' * 64, None), ('', None), ('latest', None), (None, None), ('55.1.2', None),
])
def test_guest_driver_branch(version, branch):
    assert guest_driver_branch(version) == branch


def test_host_manager_equal_branch_passes():
    assert host_manager_errors('17.3', '550.90.07-grid', 'vgpu_driver_version') == ([], [])
    assert host_manager_errors('550.90.05', '550.90.05', 'vgpu_driver_version') == ([], [])
    # a later release of the same branch is still the same branch
    assert host_manager_errors('550.54.10', '550.127.05', 'vgpu_driver_version') == ([], [])


def test_host_manager_older_guest_passes_previous_branch_and_warns_beyond():
    assert host_manager_errors('17.3', '535.230.02', 'vgpu_driver_version') == ([], [])
    errors, warnings = host_manager_errors('580.65.05', '535.230.02', 'vgpu_driver_version')
    assert errors == [] and 'more than one branch older' in warnings[0]


def test_host_manager_newer_guest_fails_naming_both_versions():
    errors, warnings = host_manager_errors('17.3', '580.95.05-grid', 'vgpu_driver_version')
    assert warnings == [] and len(errors) == 1
    assert '580.95.05-grid' in errors[0] and '17.3' in errors[0]
    assert 'branch R580' in errors[0] and 'branch R550' in errors[0] and 'R550 or older' in errors[0]
    # boundary: the first version of the next branch
    assert host_manager_errors('550.163.01', '570.86.10', 'vgpu_driver_version')[0]


def test_host_manager_unknown_guest_version_warns():
    assert host_manager_errors('', '580.95.05', 'vgpu_driver_version') == ([], [])
    assert host_manager_errors(None, '580.95.05', 'vgpu_driver_version') == ([], [])
    errors, warnings = host_manager_errors('17.3', '', 'vgpu_driver_version')
    assert errors == [] and 'was not checked' in warnings[0]
    errors, warnings = host_manager_errors('17.3', 'sha256:' + 'b' * 64, 'vgpu_driver_version')
    assert errors == [] and 'R550 or older' in warnings[0]
    errors, warnings = host_manager_errors('17.x', '550.90.07', 'vgpu_driver_version')
    assert 'must be the vGPU software release' in errors[0]


def test_plan_checks_host_manager_against_driver_version_before_writing():
    plan = vgpu_plan(config(driver_repository='registry.example.com/nvidia', driver_version='580.95.05-grid',
                            host_manager_version='17.3'), cluster())
    assert plan['cluster_policy_patch'] == {}
    assert any('newer than the vGPU manager 17.3' in e for e in plan['errors'])
    plan = vgpu_plan(config(driver_repository='registry.example.com/nvidia', driver_version='550.90.07',
                            host_manager_version='17.3'), cluster())
    assert plan['errors'] == [] and plan['cluster_policy_patch']['driver']['version'] == '550.90.07'


def test_plan_checks_host_manager_against_cluster_policy_driver_version():
    policy = {'metadata': {'name': 'gpu-cluster-policy'},
              'spec': {'driver': {'enabled': True, 'version': '570.124.06'}}}
    plan = vgpu_plan(config(host_manager_version='550.90.05'), cluster(cluster_policies=[policy]))
    assert any('driver.version of ClusterPolicy gpu-cluster-policy' in e and '570.124.06' in e
               for e in plan['errors'])
    plan = vgpu_plan(config(host_manager_version='18.1'), cluster(cluster_policies=[policy]))
    assert plan['errors'] == []
    plan = vgpu_plan(config(host_manager_version='17.3'), cluster())  # POLICY has no driver.version
    assert plan['errors'] == [] and any('was not checked' in w for w in plan['warnings'])
