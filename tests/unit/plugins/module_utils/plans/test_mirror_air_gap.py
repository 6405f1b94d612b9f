# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The air-gap check: public registry references left in Kubernetes objects."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.module_utils.plans.mirror_air_gap import public_registry_references

DIGEST = 'sha256:' + 'ab' * 32
MIRROR = 'mirror.example.com:8443'


def _policy(**spec):
    return {'apiVersion': 'nvidia.com/v1', 'kind': 'ClusterPolicy', 'metadata': {'name': 'gpu-cluster-policy'},
            'spec': spec}


def test_public_references_finds_images_repositories_and_text():
    objects = [
        _policy(driver={'repository': 'nvcr.io/nvidia', 'image': 'driver', 'version': '550'},
                toolkit={'image': 'nvcr.io/nvidia/k8s/container-toolkit@' + DIGEST},
                devicePlugin={'repository': 'nvidia', 'image': 'k8s-device-plugin', 'version': '1'},
                gfd={'image': 'nvidia/gfd:1'},
                validator={'repository': MIRROR + '/nvidia', 'image': 'validator', 'version': '1'}),
        {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'cm', 'namespace': 'ns'},
         'data': {'script': 'skopeo copy docker://quay.io/foo/bar:1 dir:/x', 'fine': 'see ' + MIRROR + '/x'}},
        {'apiVersion': 'operators.coreos.com/v1alpha1', 'kind': 'CatalogSource',
         'metadata': {'name': 'cs', 'namespace': 'openshift-marketplace'},
         'spec': {'image': 'registry.redhat.io/redhat/redhat-operator-index:v4.18'}},
    ]
    found = public_registry_references(objects, MIRROR)
    paths = sorted((f['object'], f['path'], f['registry']) for f in found)
    assert paths == [
        ('CatalogSource openshift-marketplace/cs', 'spec.image', 'registry.redhat.io'),
        ('ClusterPolicy gpu-cluster-policy', 'spec.devicePlugin.repository', 'docker.io'),
        ('ClusterPolicy gpu-cluster-policy', 'spec.driver.repository', 'nvcr.io'),
        ('ClusterPolicy gpu-cluster-policy', 'spec.gfd.image', 'docker.io'),
        ('ClusterPolicy gpu-cluster-policy', 'spec.toolkit.image', 'nvcr.io'),
        ('ConfigMap ns/cm', 'data.script', 'quay.io'),
    ]


def test_public_references_exemptions():
    objects = [
        {'kind': 'ImageDigestMirrorSet', 'metadata': {'name': 'm'},
         'spec': {'imageDigestMirrors': [{'source': 'nvcr.io/nvidia', 'mirrors': [MIRROR + '/nvidia']}]}},
        {'kind': 'ImageTagMirrorSet', 'metadata': {'name': 'm'},
         'spec': {'imageTagMirrors': [{'source': 'nvcr.io/nvidia', 'mirrors': [MIRROR + '/nvidia']}]}},
        {'kind': 'ImageContentSourcePolicy', 'metadata': {'name': 'm'},
         'spec': {'repositoryDigestMirrors': [{'source': 'quay.io/x', 'mirrors': [MIRROR + '/x']}]}},
        {'kind': 'Secret', 'metadata': {'name': 's'}, 'data': {'x': 'nvcr.io/nvidia'}},
        _policy(driver={'repository': MIRROR + '/nvidia', 'image': 'driver', 'version': '550'},
                licensing={'secretName': 'licensing-config'}),
    ]
    assert public_registry_references(objects, MIRROR) == []
    # a mirror rule pointing at a public registry is still caught
    bad = {'kind': 'ImageDigestMirrorSet', 'metadata': {'name': 'm'},
           'spec': {'imageDigestMirrors': [{'source': 'nvcr.io/nvidia', 'mirrors': ['quay.io/nvidia']}]}}
    assert [f['registry'] for f in public_registry_references([bad], MIRROR)] == ['quay.io']


def test_public_references_mirror_on_a_public_host_is_allowed():
    obj = _policy(driver={'image': 'quay.io/acme-mirror/nvidia/driver:1'})
    assert public_registry_references([obj], 'quay.io/acme-mirror') == []
    assert public_registry_references([obj], ['quay.io/other']) != []
    assert public_registry_references([obj], None) != []


def test_public_references_with_custom_list():
    obj = _policy(driver={'image': 'artifactory.corp/nvidia/driver:1'})
    assert public_registry_references([obj], None, ['corp']) != []
    assert public_registry_references([obj, 'not an object'], None) == []
