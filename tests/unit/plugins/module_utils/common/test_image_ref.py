# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import base64
import json

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.common.image_ref import (
    ImageRefError, credential_errors, default_mirror, docker_auth, docker_config_registries, host_errors,
    image_name, is_public_host, merge_docker_config, mirror_reference, mirror_set_entries, normalize_image,
    normalize_repositories, parse_image, public_registry_references, repository_errors)

DIGEST = 'sha256:' + 'ab' * 32
MIRROR = 'mirror.example.com:8443'
RULES = [{'source': 'nvcr.io/nvidia', 'mirror': MIRROR + '/nvidia'},
         {'source': 'nvcr.io/nvidia/k8s', 'mirror': MIRROR + '/k8s-special'},
         {'source': 'registry.redhat.io', 'mirror': MIRROR},
         {'source': 'docker.io/library', 'mirror': MIRROR + '/hub'}]


# --- parsing ---------------------------------------------------------------------------------

@pytest.mark.parametrize('ref, expected', [
    ('nvcr.io/nvidia/driver:550.54', ('nvcr.io', 'nvidia/driver', '550.54', None, True)),
    ('nvcr.io/nvidia/driver@' + DIGEST, ('nvcr.io', 'nvidia/driver', None, DIGEST, True)),
    ('nvcr.io/nvidia/driver:550@' + DIGEST, ('nvcr.io', 'nvidia/driver', '550', DIGEST, True)),
    ('nvidia/cuda:12.4', ('docker.io', 'nvidia/cuda', '12.4', None, False)),
    ('busybox', ('docker.io', 'library/busybox', None, None, False)),
    ('localhost/foo', ('localhost', 'foo', None, None, True)),
    ('registry.example.com:5000/a/b/c:v1', ('registry.example.com:5000', 'a/b/c', 'v1', None, True)),
])
def test_parse_image(ref, expected):
    parsed = parse_image(ref)
    assert (parsed['registry'], parsed['path'], parsed['tag'], parsed['digest'],
            parsed['explicit_registry']) == expected


@pytest.mark.parametrize('ref', ['', None, 'nvcr.io/NVIDIA/driver', 'nvcr.io/nvidia/driver@sha256:xyz',
                                 'a b', 'nvcr.io/nvidia/driver:bad tag', 'nvcr.io/nvidia/driver:-x', 42])
def test_parse_image_refuses(ref):
    with pytest.raises(ImageRefError):
        parse_image(ref)


def test_normalize_and_name():
    assert normalize_image('nvidia/cuda:12') == 'docker.io/nvidia/cuda:12'
    assert normalize_image('busybox@' + DIGEST) == 'docker.io/library/busybox@' + DIGEST
    assert image_name('nvcr.io/nvidia/driver:1') == 'nvcr.io/nvidia/driver'


@pytest.mark.parametrize('host, ok', [('mirror.example.com', True), ('mirror.example.com:8443', True),
                                      ('localhost', True), ('10.0.0.1:5000', True), ('Mirror.example.com', False),
                                      ('mirror_example.com', False), ('m.example.com:99999', False), ('', False)])
def test_host_errors(host, ok):
    assert (host_errors(host) == []) is ok


def test_repository_errors():
    assert repository_errors('nvcr.io/nvidia') == []
    assert repository_errors('registry.redhat.io') == []
    assert repository_errors('mirror.example.com:8443/a/b') == []
    assert 'scheme' in repository_errors('https://nvcr.io/nvidia')[0]
    assert 'without tag or digest' in repository_errors('nvcr.io/nvidia/driver:550')[0]
    assert 'without tag or digest' in repository_errors('nvcr.io/nvidia/driver@' + DIGEST)[0]
    assert 'must start with a registry host' in repository_errors('nvidia/driver')[0]
    assert repository_errors('', 'mirror_registry')[0].startswith('mirror_registry must be a non-empty')
    assert repository_errors(None)
    assert 'white space' in repository_errors('nvcr.io/ nvidia')[0]
    assert 'path component' in repository_errors('nvcr.io/NVIDIA')[0]


def test_public_hosts_and_subdomains():
    for host in ('nvcr.io', 'quay.io', 'cdn.quay.io', 'us.gcr.io', 'registry-1.docker.io', 'docker.io',
                 'registry.connect.redhat.com', 'ghcr.io', 'registry.k8s.io', 'europe-docker.pkg.dev',
                 'nvcr.io:443'):
        assert is_public_host(host), host
    for host in ('mirror.example.com', 'artifactory.corp', 'nvcr.io.example.com', 'quay.example.com', 'localhost'):
        assert not is_public_host(host), host
    assert is_public_host('mirror.example.com', ['example.com'])


# --- mirroring -------------------------------------------------------------------------------

@pytest.mark.parametrize('ref, expected', [
    ('nvcr.io/nvidia/driver@' + DIGEST, MIRROR + '/nvidia/driver@' + DIGEST),
    ('nvcr.io/nvidia/driver:550', MIRROR + '/nvidia/driver:550'),
    ('nvcr.io/nvidia', MIRROR + '/nvidia'),
    ('nvcr.io/nvidia/k8s/dcgm-exporter:3', MIRROR + '/k8s-special/dcgm-exporter:3'),  # longest source wins
    ('registry.redhat.io/redhat/certified-operator-index:v4.18', MIRROR + '/redhat/certified-operator-index:v4.18'),
    ('busybox:1', MIRROR + '/hub/busybox:1'),
    ('nvcr.io/nvidiax/foo', None),  # whole components only
    ('quay.io/foo/bar', None),
    ('', None),
])
def test_mirror_reference(ref, expected):
    assert mirror_reference(ref, RULES) == expected


def test_default_mirror_layouts():
    assert default_mirror('nvcr.io/nvidia', MIRROR) == MIRROR + '/nvidia'
    assert default_mirror('registry.redhat.io', MIRROR) == MIRROR
    assert default_mirror('nvcr.io/nvidia', MIRROR + '/', keep_source_host=True) == MIRROR + '/nvcr.io/nvidia'


def test_normalize_repositories():
    rules, errors = normalize_repositories(
        ['nvcr.io/nvidia', {'source': 'ghcr.io/nvidia/', 'mirror': MIRROR + '/ghcr/nvidia/'}], MIRROR)
    assert errors == []
    assert rules == [{'source': 'nvcr.io/nvidia', 'mirror': MIRROR + '/nvidia'},
                     {'source': 'ghcr.io/nvidia', 'mirror': MIRROR + '/ghcr/nvidia'}]


@pytest.mark.parametrize('repos, registry, fragment', [
    ('nvcr.io', MIRROR, 'must be a list'),
    ([42], MIRROR, 'must be a source repository or a mapping'),
    ([{'source': 'nvcr.io/nvidia', 'mirorr': 'x'}], MIRROR, "unknown key(s) mirorr"),
    (['nvidia'], MIRROR, 'must start with a registry host'),
    (['nvcr.io/nvidia', 'nvcr.io/nvidia/'], MIRROR, 'already mapped'),
    (['nvcr.io/nvidia'], None, 'mirror is needed'),
    ([{'source': 'nvcr.io/nvidia', 'mirror': 'nvcr.io/nvidia/mirror'}], MIRROR, 'inside its own source'),
    ([{'source': 'nvcr.io/nvidia', 'mirror': 'https://m.example.com'}], MIRROR, 'scheme'),
])
def test_normalize_repositories_errors(repos, registry, fragment):
    _rules, errors = normalize_repositories(repos, registry)
    assert any(fragment in e for e in errors), errors


def test_mirror_set_entries_sorted_with_policy():
    entries = mirror_set_entries([{'source': 'b.io/x', 'mirror': 'm.io/x'}, {'source': 'a.io/y', 'mirror': 'm.io/y'}],
                                 'NeverContactSource')
    assert [e['source'] for e in entries] == ['a.io/y', 'b.io/x']
    assert entries[0] == {'source': 'a.io/y', 'mirrors': ['m.io/y'], 'mirrorSourcePolicy': 'NeverContactSource'}
    assert 'mirrorSourcePolicy' not in mirror_set_entries([{'source': 'a.io', 'mirror': 'm.io'}])[0]


# --- the air-gap check -----------------------------------------------------------------------

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


# --- pull secrets ----------------------------------------------------------------------------

def _b64(doc):
    return base64.b64encode(json.dumps(doc).encode()).decode()


def _decode(data):
    return json.loads(base64.b64decode(data))


def test_docker_auth():
    assert base64.b64decode(docker_auth('user', 'p:w')).decode() == 'user:p:w'


def test_merge_keeps_existing_entries_and_adds_new():
    existing = _b64({'auths': {'quay.io': {'auth': 'xx', 'email': 'a@b'}, 'cloud.openshift.com': {'auth': 'yy'}}})
    result = merge_docker_config(existing, [{'registry': MIRROR, 'username': 'u', 'password': 'p'}])
    assert result['changed'] and result['added'] == [MIRROR] and result['updated'] == []
    doc = _decode(result['data'])
    assert list(doc['auths']) == ['quay.io', 'cloud.openshift.com', MIRROR]
    assert doc['auths']['quay.io'] == {'auth': 'xx', 'email': 'a@b'}
    assert doc['auths'][MIRROR] == {'auth': docker_auth('u', 'p')}


def test_merge_is_idempotent_whatever_the_formatting():
    existing = base64.b64encode(json.dumps({'auths': {MIRROR: {'auth': docker_auth('u', 'p')}}},
                                           indent=4).encode()).decode()
    result = merge_docker_config(existing, [{'registry': MIRROR, 'username': 'u', 'password': 'p'}])
    assert result == {'changed': False, 'data': existing, 'added': [], 'updated': []}


def test_merge_updates_changed_password_keeping_other_fields():
    existing = _b64({'auths': {MIRROR: {'auth': docker_auth('u', 'old'), 'email': 'ops@example.com',
                                        'username': 'u', 'password': 'old'}}})
    result = merge_docker_config(existing, [{'registry': MIRROR, 'username': 'u', 'password': 'new'}])
    assert result['updated'] == [MIRROR]
    assert _decode(result['data'])['auths'][MIRROR] == {'auth': docker_auth('u', 'new'), 'email': 'ops@example.com'}


def test_merge_into_empty_and_with_auth_entries():
    result = merge_docker_config('', [{'registry': MIRROR, 'auth': 'abc'}])
    assert result['changed'] and _decode(result['data']) == {'auths': {MIRROR: {'auth': 'abc'}}}
    assert docker_config_registries(result['data']) == [MIRROR]


@pytest.mark.parametrize('existing', ['not-base64!', base64.b64encode(b'not json').decode(),
                                      _b64({'auths': []}), _b64(['x'])])
def test_merge_refuses_unreadable_existing_without_leaking(existing):
    with pytest.raises(ValueError) as info:
        merge_docker_config(existing, [{'registry': MIRROR, 'username': 'u', 'password': 'SECRET'}])
    assert 'SECRET' not in str(info.value)


def test_credential_errors_never_contain_the_password():
    entries = [{'registry': 'https://m.example.com', 'username': 'u:x', 'password': 'SECRET'},
               {'registry': MIRROR, 'username': '', 'password': ''},
               {'registry': MIRROR, 'username': 'u', 'password': 'SECRET', 'token': 1}, 'x']
    errors = credential_errors(entries)
    assert errors and not any('SECRET' in e for e in errors)
    text = ' '.join(errors)
    for fragment in ('scheme', "must not contain ':'", 'username is required', 'password is required',
                     'appears twice', 'unknown key(s) token', 'must be a mapping'):
        assert fragment in text
    assert credential_errors(None) == []
    assert credential_errors('x') == ['credentials must be a list, got string']
    assert credential_errors([{'registry': MIRROR, 'auth': 'abc'}]) == []
