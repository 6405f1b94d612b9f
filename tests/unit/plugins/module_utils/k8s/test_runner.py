# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""How every module ends (k8s.runner.run_module): results, diff, warnings, and each kind of error."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.common import errors
from ansible_collections.gpuops.gpu.plugins.module_utils.k8s import client, runner

kubernetes = pytest.importorskip('kubernetes')


class Exited(Exception):
    pass


class FakeModule(object):
    def __init__(self, params=None, check_mode=False, diff=False):
        self.params = params or {}
        self.check_mode = check_mode
        self._diff = diff
        self.warnings = []
        self.exit = None

    def warn(self, msg):
        self.warnings.append(msg)

    def exit_json(self, **kwargs):
        self.exit = ('exit', kwargs)
        raise Exited()

    def fail_json(self, **kwargs):
        self.exit = ('fail', kwargs)
        raise Exited()


@pytest.fixture
def opened(monkeypatch):
    """Connections handed out, with whether they were opened before ``run``."""
    handed = []

    class Conn(client.Connection):
        def open(self):
            self.was_opened = True

    def connect(module):
        conn = Conn(core=object())
        conn.was_opened = False
        handed.append(conn)
        return conn
    monkeypatch.setattr(client, 'connect', connect)
    return handed


def end(run, **module_kwargs):
    module = FakeModule(**module_kwargs)
    with pytest.raises(Exited):
        runner.run_module(module, run)
    return module


def test_result_diff_only_under_diff_and_warnings_as_warnings(opened):
    def run(conn, params, check_mode):
        assert conn is opened[-1] and conn.was_opened and params == {'x': 1} and check_mode is True
        return {'changed': True, 'diff': {'before': 1}, 'warnings': ['careful']}
    module = end(run, params={'x': 1}, check_mode=True)
    assert module.exit == ('exit', {'changed': True}) and module.warnings == ['careful']
    module = end(run, params={'x': 1}, check_mode=True, diff=True)
    assert module.exit == ('exit', {'changed': True, 'diff': {'before': 1}})


def test_lazy_does_not_open(opened):
    module = FakeModule()
    with pytest.raises(Exited):
        runner.run_module(module, lambda conn, params, check_mode: {'changed': False}, lazy=True)
    assert opened[0].was_opened is False and module.exit == ('exit', {'changed': False})


def test_input_error_fails_unchanged(opened):
    def run(conn, params, check_mode):
        raise errors.InputError('bad input')
    assert end(run).exit == ('fail', {'msg': 'bad input', 'changed': False})


def test_partial_failures_carry_their_result(opened):
    def run(conn, params, check_mode):
        raise errors.RolloutFailed('stopped', {'nodes': ['n1'], 'diff': {'x': 1}, 'warnings': ['w']})
    module = end(run, diff=True)
    assert module.exit == ('fail', {'msg': 'stopped', 'nodes': ['n1'], 'changed': True})
    assert module.warnings == ['w']

    def run_unchanged(conn, params, check_mode):
        raise errors.CheckFailed('2 of 4 cases did not pass', {'changed': False, 'cases': []})
    assert end(run_unchanged).exit == ('fail', {'msg': '2 of 4 cases did not pass', 'changed': False, 'cases': []})


def test_api_errors_fail_cleanly(opened):
    def run(conn, params, check_mode):
        exc = kubernetes.client.rest.ApiException(status=403, reason='Forbidden')
        exc.body = '{"message": "nodes is forbidden"}'
        raise exc
    assert end(run).exit == ('fail', {'msg': 'Kubernetes API error: 403 Forbidden: nodes is forbidden',
                                      'changed': False})


def test_an_api_that_does_not_answer_fails_in_one_line(opened):
    import urllib3

    def run(conn, params, check_mode):
        raise urllib3.exceptions.ReadTimeoutError(None, '/api/v1/nodes', 'Read timed out. (read timeout=5.0)')
    assert end(run).exit == ('fail', {'msg': 'Could not reach the Kubernetes API: None: Read timed out. '
                                             '(read timeout=5.0)', 'changed': False})


def test_other_errors_are_not_hidden(opened):
    def run(conn, params, check_mode):
        raise KeyError('bug')
    with pytest.raises(KeyError):
        runner.run_module(FakeModule(), run)


def test_argument_spec_adds_the_connection_options():
    spec = runner.argument_spec(name=dict(type='str'))
    assert spec['name'] == {'type': 'str'}
    assert 'kubeconfig' in spec and 'context' in spec


def test_dynamic_client_errors_fail_with_their_summary(opened):
    class DynamicError(kubernetes.client.rest.ApiException):  # as kubernetes.dynamic's DynamicApiError
        def summary(self):
            return {'status': 422, 'message': 'spec.taints: Invalid value'}

    def run(conn, params, check_mode):
        raise DynamicError(status=422, reason='Unprocessable Entity')
    assert end(run).exit == ('fail', {'msg': 'Kubernetes API error: {"status": 422, "message": "spec.taints: Invalid value"}',
                                      'changed': False})
