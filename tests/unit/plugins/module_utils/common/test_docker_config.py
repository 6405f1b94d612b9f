# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Pull-secret documents: credentials merged into a .dockerconfigjson without losing entries."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import base64
import json

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.common.docker_config import (
    credential_errors, docker_auth, docker_config_registries, merge_docker_config)

MIRROR = 'mirror.example.com:8443'


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
                     'appears twice', "unknown key 'token'", 'must be a mapping'):
        assert fragment in text
    assert credential_errors(None) == []
    assert credential_errors('x') == ['credentials must be a list, got string']
    assert credential_errors([{'registry': MIRROR, 'auth': 'abc'}]) == []
