# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_smoke_test main(): check mode plan, runs with a fake cluster, failure rules."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json

import pytest

from ansible.module_utils import _internal, basic
from ansible.module_utils.common import warnings as module_warnings
from ansible.module_utils.common.text.converters import to_bytes

from ansible_collections.gpuops.gpu.plugins.modules import gpu_smoke_test
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.plans.test_smoke import FLEET, FakeCluster

try:
    from ansible.module_utils.testing import patch_module_args
except ImportError:  # ansible-core < 2.19
    patch_module_args = None


@pytest.fixture(autouse=True)
def fresh_warnings(monkeypatch):
    if hasattr(_internal, 'is_controller'):
        monkeypatch.setattr(_internal, 'is_controller', False)
    getattr(module_warnings, '_global_warnings').clear()
    yield
    getattr(module_warnings, '_global_warnings').clear()


class FakeConnection(object):
    def __init__(self, cluster):
        self.core = cluster
        self.core.api_client = None


def run_module(monkeypatch, capsys, args, cluster):
    monkeypatch.setattr(gpu_smoke_test, 'connect', lambda module: FakeConnection(cluster))
    monkeypatch.setattr(gpu_smoke_test, 'BatchV1Api', lambda api_client: cluster)
    monkeypatch.setattr('time.sleep', lambda seconds: None)
    args = dict({'poll_interval': 0.01}, **args)
    if patch_module_args is not None:
        with patch_module_args(args):
            with pytest.raises(SystemExit) as exit_info:
                gpu_smoke_test.main()
    else:
        monkeypatch.setattr(basic, '_ANSIBLE_ARGS', to_bytes(json.dumps({'ANSIBLE_MODULE_ARGS': args})))
        with pytest.raises(SystemExit) as exit_info:
            gpu_smoke_test.main()
    return exit_info.value.code, json.loads(capsys.readouterr().out)


def test_check_mode_plans_and_creates_nothing(monkeypatch, capsys):
    cluster = FakeCluster()
    code, result = run_module(monkeypatch, capsys, {'nodes': FLEET, '_ansible_check_mode': True}, cluster)
    assert code == 0 and result['changed'] is False
    assert result['summary'] == {'planned': 4, 'no-capacity': 4}
    assert all(c['job'] for c in result['cases'] if c['status'] == 'planned')
    assert cluster.jobs == {} and cluster.lists == 0
    assert 'PLANNED' in result['table']


def test_run_passes_and_reports_no_capacity(monkeypatch, capsys):
    cluster = FakeCluster()
    code, result = run_module(monkeypatch, capsys, {'nodes': FLEET, 'expect_output': 'Test PASSED'}, cluster)
    assert code == 0, result.get('msg')
    assert result['changed'] is False
    assert result['summary'] == {'passed': 4, 'no-capacity': 4}
    assert cluster.jobs == {}
    code, result = run_module(monkeypatch, capsys, {'nodes': FLEET, 'fail_on_no_capacity': True}, FakeCluster())
    assert code == 1 and 'no schedulable capacity' in result['msg'] and 'cordoned: t4-0' in result['msg']


def test_failures_fail_the_module_unless_told_not_to(monkeypatch, capsys):
    code, result = run_module(monkeypatch, capsys, {'nodes': FLEET}, FakeCluster(outcome='Failed', pod_phase='Failed'))
    assert code == 1 and result['msg'].startswith('GPU smoke test: 4 of 8 cases did not pass')
    assert result['summary']['failed'] == 4
    code, result = run_module(monkeypatch, capsys, {'nodes': FLEET, 'fail_on_error': False},
                              FakeCluster(outcome='Failed', pod_phase='Failed'))
    assert code == 0 and result['summary']['failed'] == 4


def test_no_gpu_resource_and_bad_numbers(monkeypatch, capsys):
    code, result = run_module(monkeypatch, capsys, {'nodes': []}, FakeCluster())
    assert code == 1 and 'no GPU resource to test' in result['msg']
    code, result = run_module(monkeypatch, capsys, {'nodes': FLEET, 'timeout': 0}, FakeCluster())
    assert code == 1 and result['msg'] == 'timeout must be at least 1, got 0'
    code, result = run_module(monkeypatch, capsys, {'nodes': FLEET, 'group_by': 'zone'}, FakeCluster())
    assert code == 1 and 'group_by' in result['msg']
