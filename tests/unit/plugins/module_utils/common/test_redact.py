# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests for module_utils.common.redact: secret-looking values out of objects and log text, the
structure and the references to secrets kept."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.common.redact import REDACTED, redact, redact_text, secret_name

PLANTED = 'pl4nted-S3CRET-value'


@pytest.mark.parametrize('name', [
    'SOME_TOKEN', 'NGC_API_KEY', 'AWS_SECRET_ACCESS_KEY', 'password', 'DB_PASSWD', 'apiKey', 'credentials',
    'auth', 'auths', 'client_configuration_token.tok', 'example.com/api-token', 'gpuops.dev/registry-password',
])
def test_secret_names(name):
    assert secret_name(name)


@pytest.mark.parametrize('name', [
    'key', 'keys', 'topologyKey', 'matchLabelKeys', 'serviceAccountToken', 'secretName', 'configMapName',
    'secretKeyRef', 'imagePullSecrets', 'tokenPath', 'keyFile',
    'name', 'value', 'nvidia.com/gpu.product', 'gridd.conf', 'app', None, 3,
])
def test_names_that_are_not_secrets(name):
    assert not secret_name(name)


@pytest.mark.parametrize('text', [
    'Authorization: Bearer %s' % PLANTED,
    'GET /api using bearer %s' % PLANTED,
    'Authorization: Basic %s' % PLANTED,
    'token=%s next=1' % PLANTED,
    'password: "%s"' % PLANTED,
    "{'password': '%s'}" % PLANTED,
    'AWS_SECRET_ACCESS_KEY=%s' % PLANTED,
    'level=error msg="login" registry_token=%s' % PLANTED,
    'https://admin:%s@registry.example.com/v2/' % PLANTED,
    json.dumps({'auths': {'registry.example.com': {'auth': PLANTED, 'password': PLANTED}}}),
    json.dumps([{'name': 'SOME_TOKEN', 'value': PLANTED}]),
    'env:\n- name: NGC_API_KEY\n  value: %s\n' % PLANTED,
    'auths:\n  registry.example.com:\n    auth: %s\n' % PLANTED,
    '-----BEGIN RSA PRIVATE KEY-----\n%s\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----' % PLANTED,
])
def test_text_secrets_are_removed(text):
    out = redact_text(text)
    assert PLANTED not in out, out
    assert REDACTED in out


def test_jwt_anywhere_in_text_is_removed():
    jwt = 'eyJhbGciOiJSUzI1NiIsImtpZCI6IjEifQ.eyJzdWIiOiJzeXN0ZW06c2EifQ.c2lnbmF0dXJlLXBhcnQ'
    assert redact_text('token in a log line %s end' % jwt) == 'token in a log line %s end' % REDACTED


@pytest.mark.parametrize('text', [
    'level=info msg="applied MIG config" node=a100-0 config=all-1g.5gb',
    'key: nvidia.com/gpu\noperator: Exists\neffect: NoSchedule',
    'secretName: licensing-config',
    'version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n',
    'I1124 10:00:00.000000 1 main.go:42] Starting device plugin, auth is disabled',
    '',
])
def test_ordinary_text_is_kept(text):
    assert redact_text(text) == text


def test_objects_keep_structure_and_references():
    pod = {'metadata': {'name': 'p', 'annotations': {'example.com/api-token': PLANTED, 'note': 'x'}},
           'spec': {'automountServiceAccountToken': False,
                    'imagePullSecrets': [{'name': 'pull-secret'}],
                    'tolerations': [{'key': 'nvidia.com/gpu', 'operator': 'Exists'}],
                    'containers': [{'name': 'c', 'env': [
                        {'name': 'SOME_TOKEN', 'value': PLANTED},
                        {'name': 'NVIDIA_VISIBLE_DEVICES', 'value': 'all'},
                        {'name': 'FROM_SECRET', 'valueFrom': {'secretKeyRef': {'name': 's', 'key': 'k'}}}]}]}}
    out = redact(pod)
    assert PLANTED not in json.dumps(out)
    assert out['metadata']['annotations'] == {'example.com/api-token': REDACTED, 'note': 'x'}
    env = out['spec']['containers'][0]['env']
    assert env[0] == {'name': 'SOME_TOKEN', 'value': REDACTED}
    assert env[1:] == pod['spec']['containers'][0]['env'][1:]
    for key in ('automountServiceAccountToken', 'imagePullSecrets', 'tolerations'):
        assert out['spec'][key] == pod['spec'][key]
    assert pod['spec']['containers'][0]['env'][0]['value'] == PLANTED, 'the input is not changed'


def test_vgpu_licensing_config_map():
    cm = {'kind': 'ConfigMap', 'metadata': {'name': 'licensing-config'},
          'data': {'client_configuration_token.tok': PLANTED, 'gridd.conf': 'FeatureType=1\nServerAddress=nls.example\n'}}
    out = redact(cm)
    assert out['data'] == {'client_configuration_token.tok': REDACTED, 'gridd.conf': cm['data']['gridd.conf']}


def test_whole_values_under_secret_names_and_strings_everywhere():
    data = {'auths': {'r.example.com': {'auth': PLANTED}}, 'list': ['x', 'Bearer %s' % PLANTED],
            'count': 3, 'flag': True, 'none': None, 'password': ''}
    out = redact(data)
    assert out == {'auths': REDACTED, 'list': ['x', 'Bearer ' + REDACTED], 'count': 3, 'flag': True,
                   'none': None, 'password': ''}


def test_redaction_is_stable():
    text = 'token=%s Authorization: Bearer %s' % (PLANTED, PLANTED)
    once = redact_text(text)
    assert redact_text(once) == once
