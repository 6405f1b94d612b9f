# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""mirror_openshift: CatalogSources, mirror sets, the registry CA (through mirror_plan)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.plans.mirror import mirror_plan
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.mirror_openshift import ca_config_map_key, openshift_minor
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.plans.mirror_data import CSV, DIGEST, MIRROR, PEM, kinds, openshift


@pytest.mark.parametrize('value, expected', [('4.18.3', '4.18'), ('v4.16', '4.16'), ('4.20', '4.20'),
                                             ('', None), (None, None), ('four', None)])
def test_openshift_minor(value, expected):
    assert openshift_minor(value) == expected


def test_ca_config_map_key():
    assert ca_config_map_key('mirror.example.com:8443/gpu') == 'mirror.example.com..8443'
    assert ca_config_map_key('mirror.example.com') == 'mirror.example.com'


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
