# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.plans.mirror import (
    OPERANDS, ca_bundle_errors, ca_config_map_key, cluster_policy_mirror_patch, csv_operand_images, deep_merge,
    image_set_configuration, mirror_plan, openshift_minor, related_images)
from ansible_collections.gpuops.gpu.plugins.module_utils.common.image_ref import public_registry_references

MIRROR = 'mirror.example.com:8443'
DIGEST = 'sha256:' + 'cd' * 32
PEM = '-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----\n'
RULES = [{'source': 'nvcr.io/nvidia', 'mirror': MIRROR + '/nvidia'}]

# A CSV shaped like NVIDIA's bundle (install.spec.deployments env + relatedImages), small.
CSV = {
    'apiVersion': 'operators.coreos.com/v1alpha1', 'kind': 'ClusterServiceVersion',
    'metadata': {'name': 'gpu-operator-certified.v25.10.1'},
    'spec': {
        'relatedImages': [{'name': 'driver-image', 'image': 'nvcr.io/nvidia/driver@' + DIGEST},
                          {'name': 'gpu-operator-image', 'image': 'nvcr.io/nvidia/gpu-operator:v25.10.1'}],
        'install': {'strategy': 'deployment', 'spec': {'deployments': [{'name': 'gpu-operator', 'spec': {
            'template': {'spec': {'containers': [{
                'name': 'gpu-operator', 'image': 'nvcr.io/nvidia/gpu-operator:v25.10.1',
                'env': [{'name': 'OPERATOR_NAMESPACE', 'valueFrom': {'fieldRef': {'fieldPath': 'x'}}},
                        {'name': 'DRIVER_IMAGE', 'value': 'nvcr.io/nvidia/driver@' + DIGEST},
                        {'name': 'DRIVER_IMAGE-570', 'value': 'nvcr.io/nvidia/driver@sha256:' + 'ef' * 32},
                        {'name': 'DEVICE_PLUGIN_IMAGE', 'value': 'nvcr.io/nvidia/k8s-device-plugin@' + DIGEST},
                        {'name': 'VALIDATOR_IMAGE', 'value': 'nvcr.io/nvidia/gpu-operator:v25.10.1'}]}]}}}}]}},
    },
}
POLICY = {'apiVersion': 'nvidia.com/v1', 'kind': 'ClusterPolicy', 'metadata': {'name': 'gpu-cluster-policy'},
          'spec': {'driver': {'enabled': True, 'licensingConfig': {'nlsEnabled': True}},
                   'devicePlugin': {'enabled': True}, 'validator': {'plugin': {'env': []}},
                   'vgpuManager': {'enabled': False}, 'gds': {'enabled': False}}}


def openshift(**extra):
    config = {'platform': 'openshift', 'registry': MIRROR,
              'repositories': ['nvcr.io/nvidia', 'registry.redhat.io'], 'openshift_version': '4.18'}
    config.update(extra)
    return config


def kinds(plan):
    return [(o['kind'], o['metadata']['name']) for o in plan['objects']]


# --- helpers ---------------------------------------------------------------------------------

@pytest.mark.parametrize('value, expected', [('4.18.3', '4.18'), ('v4.16', '4.16'), ('4.20', '4.20'),
                                             ('', None), (None, None), ('four', None)])
def test_openshift_minor(value, expected):
    assert openshift_minor(value) == expected


def test_ca_key_and_bundle_errors():
    assert ca_config_map_key('mirror.example.com:8443/gpu') == 'mirror.example.com..8443'
    assert ca_config_map_key('mirror.example.com') == 'mirror.example.com'
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


def test_deep_merge_is_rfc7386():
    assert deep_merge({'a': {'b': 1, 'c': 2}, 'd': [1]}, {'a': {'b': None, 'e': 3}, 'd': [2]}) == \
        {'a': {'c': 2, 'e': 3}, 'd': [2]}


# --- OpenShift ---------------------------------------------------------------------------------

def test_openshift_plan_default_objects():
    plan = mirror_plan(openshift(), {'csv': CSV})
    assert plan['errors'] == [] and plan['warnings'] == []
    assert kinds(plan) == [('CatalogSource', 'redhat-operators-mirror'),
                           ('CatalogSource', 'certified-operators-mirror'),
                           ('ImageDigestMirrorSet', 'gpuops-mirror'), ('ImageTagMirrorSet', 'gpuops-mirror'),
                           ('OperatorHub', 'cluster')]
    sources = {c['name']: c for c in plan['catalog_sources']}
    assert sources['certified-operators-mirror']['image'] == MIRROR + '/redhat/certified-operator-index:v4.18'
    assert sources['certified-operators-mirror']['source_image'] == \
        'registry.redhat.io/redhat/certified-operator-index:v4.18'
    assert plan['objects'][0]['metadata']['namespace'] == 'openshift-marketplace'
    assert plan['objects'][0]['spec']['sourceType'] == 'grpc'
    idms = plan['objects'][2]['spec']['imageDigestMirrors']
    assert idms == [{'source': 'nvcr.io/nvidia', 'mirrors': [MIRROR + '/nvidia']},
                    {'source': 'registry.redhat.io', 'mirrors': [MIRROR]}]
    assert plan['objects'][4]['spec'] == {'disableAllDefaultSources': True}
    assert plan['public_references'] == []
    isc = plan['image_set_configuration']['mirror']
    assert [o['catalog'] for o in isc['operators']] == ['registry.redhat.io/redhat/redhat-operator-index:v4.18',
                                                        'registry.redhat.io/redhat/certified-operator-index:v4.18']
    assert isc['operators'][1]['packages'] == [{'name': 'gpu-operator-certified'}]
    assert {'name': 'nvcr.io/nvidia/driver@' + DIGEST} in isc['additionalImages']


def test_openshift_icsp_policy_and_toggles():
    plan = mirror_plan(openshift(use_icsp=True, source_policy='NeverContactSource', disable_default_sources=False,
                                 catalog_sources=[]))
    assert kinds(plan) == [('ImageContentSourcePolicy', 'gpuops-mirror')]
    assert plan['objects'][0]['apiVersion'] == 'operator.openshift.io/v1alpha1'
    assert 'mirrorSourcePolicy' not in plan['objects'][0]['spec']['repositoryDigestMirrors'][0]
    assert plan['warnings']
    plan = mirror_plan(openshift(image_tag_mirror_set=False, source_policy='NeverContactSource', catalog_sources=[]))
    assert kinds(plan) == [('ImageDigestMirrorSet', 'gpuops-mirror'), ('OperatorHub', 'cluster')]
    assert plan['objects'][0]['spec']['imageDigestMirrors'][0]['mirrorSourcePolicy'] == 'NeverContactSource'


def test_openshift_version_from_cluster_version():
    version = {'status': {'desired': {'version': '4.16.12'}}}
    plan = mirror_plan(openshift(openshift_version=''), {'cluster_version': version})
    assert plan['errors'] == [] and plan['openshift_version'] == '4.16'
    assert plan['catalog_sources'][0]['image'].endswith(':v4.16')
    plan = mirror_plan(openshift(openshift_version=''), {})
    assert any('mirror_openshift_version' in e for e in plan['errors'])


def test_catalog_source_forms():
    catalogs = [{'name': 'a', 'image': MIRROR + '/my/index:1', 'poll_interval': '30m', 'publisher': 'me'},
                {'name': 'b', 'source_image': 'registry.redhat.io/redhat/community-operator-index:v4.18',
                 'namespace': 'custom'}]
    plan = mirror_plan(openshift(catalog_sources=catalogs))
    assert plan['errors'] == []
    first, second = plan['objects'][:2]
    assert first['spec'] == {'sourceType': 'grpc', 'image': MIRROR + '/my/index:1', 'displayName': 'a',
                             'publisher': 'me', 'updateStrategy': {'registryPoll': {'interval': '30m'}}}
    assert second['metadata']['namespace'] == 'custom'
    assert second['spec']['image'] == MIRROR + '/redhat/community-operator-index:v4.18'
    assert catalogs[1] == {'name': 'b', 'source_image': 'registry.redhat.io/redhat/community-operator-index:v4.18',
                           'namespace': 'custom'}  # input not modified


@pytest.mark.parametrize('catalog, fragment', [
    ({'name': 'Bad_Name', 'index': 'x'}, 'lowercase DNS label'),
    ({'name': 'a'}, 'needs exactly one of index'),
    ({'name': 'a', 'index': 'x', 'image': MIRROR + '/x:1'}, 'needs exactly one of index'),
    ({'name': 'a', 'source_image': 'quay.io/x/index:1'}, 'no mirror_repositories entry covers'),
    ({'name': 'a', 'image': 'NOT AN IMAGE'}, 'mirror_catalog_sources[0].image'),
    ({'name': 'a', 'index': 'x', 'poll_interval': 'often'}, 'must be a duration'),
    ({'name': 'a', 'index': 'x', 'pakages': ['nfd']}, "unknown key 'pakages'; did you mean 'packages'"),
    ('a', 'must be a mapping'),
])
def test_catalog_source_errors(catalog, fragment):
    plan = mirror_plan(openshift(catalog_sources=[catalog]))
    assert any(fragment in e for e in plan['errors']), plan['errors']


def test_catalog_names_unique():
    plan = mirror_plan(openshift(catalog_sources=[{'name': 'a', 'index': 'x'}, {'name': 'a', 'index': 'y'}]))
    assert any('used twice' in e for e in plan['errors'])


def test_ca_new_config_map_and_image_config():
    plan = mirror_plan(openshift(catalog_sources=[], ca_bundle=PEM, ca_config_map_name='my-ca'))
    cm, image = plan['objects'][-2:]
    assert cm['metadata'] == {'name': 'my-ca', 'namespace': 'openshift-config',
                              'labels': {'app.kubernetes.io/managed-by': 'gpuops.gpu'}}
    assert cm['data'] == {'mirror.example.com..8443': PEM}
    assert image == {'apiVersion': 'config.openshift.io/v1', 'kind': 'Image', 'metadata': {'name': 'cluster'},
                     'spec': {'additionalTrustedCA': {'name': 'my-ca'}}}


def test_ca_added_to_the_config_map_already_trusted():
    image_config = {'spec': {'additionalTrustedCA': {'name': 'corp-cas'}}}
    plan = mirror_plan(openshift(catalog_sources=[], ca_bundle=PEM), {'image_config': image_config})
    cm, image = plan['objects'][-2:]
    assert cm['metadata'] == {'name': 'corp-cas', 'namespace': 'openshift-config'}  # no label on theirs
    assert image['spec']['additionalTrustedCA']['name'] == 'corp-cas'
    assert any('corp-cas' in w for w in plan['warnings'])


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
