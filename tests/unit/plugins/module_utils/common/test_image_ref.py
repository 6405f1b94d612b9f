# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.common.image_ref import (
    ImageRefError, default_mirror, host_errors, image_name, is_public_host, mirror_reference, mirror_set_entries,
    normalize_image, normalize_repositories, parse_image, repository_errors)

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
    ([{'source': 'nvcr.io/nvidia', 'mirorr': 'x'}], MIRROR, "unknown key 'mirorr'; did you mean 'mirror'?"),
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
