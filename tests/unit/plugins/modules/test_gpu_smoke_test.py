# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_smoke_test main(): check mode plan, runs with a fake cluster, failure rules."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu.plugins.modules import gpu_smoke_test
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.plans.test_smoke import FLEET, FakeCluster


@pytest.fixture
def smoke(run_module, monkeypatch):
    """gpu_smoke_test through the module harness (conftest.py): ``cluster`` answers the core and the
    batch API calls; no real sleeps."""
    monkeypatch.setattr('time.sleep', lambda seconds: None)

    def run(args, cluster, check=False):
        return run_module(gpu_smoke_test, dict({'poll_interval': 0.01}, **args), check=check, core=cluster,
                          batch=cluster)
    return run


def test_check_mode_plans_and_creates_nothing(smoke):
    cluster = FakeCluster()
    code, result = smoke({'nodes': FLEET}, cluster, check=True)
    assert code == 0 and result['changed'] is False
    assert result['summary'] == {'planned': 4, 'no-capacity': 4}
    assert all(c['job'] for c in result['cases'] if c['status'] == 'planned')
    assert cluster.jobs == {} and cluster.lists == 0
    assert 'PLANNED' in result['table']


def test_run_passes_and_reports_no_capacity(smoke):
    cluster = FakeCluster()
    code, result = smoke({'nodes': FLEET, 'expect_output': 'Test PASSED'}, cluster)
    assert code == 0, result.get('msg')
    assert result['changed'] is False
    assert result['summary'] == {'passed': 4, 'no-capacity': 4}
    assert cluster.jobs == {}
    code, result = smoke({'nodes': FLEET, 'fail_on_no_capacity': True}, FakeCluster())
    assert code == 1 and 'no schedulable capacity' in result['msg'] and 'cordoned: t4-0' in result['msg']


def test_failures_fail_the_module_unless_told_not_to(smoke):
    code, result = smoke({'nodes': FLEET}, FakeCluster(outcome='Failed', pod_phase='Failed'))
    assert code == 1 and result['msg'].startswith('GPU smoke test: 4 of 8 cases did not pass')
    assert result['summary']['failed'] == 4
    code, result = smoke({'nodes': FLEET, 'fail_on_error': False}, FakeCluster(outcome='Failed', pod_phase='Failed'))
    assert code == 0 and result['summary']['failed'] == 4


def test_no_gpu_resource_and_bad_numbers(smoke):
    code, result = smoke({'nodes': []}, FakeCluster())
    assert code == 1 and 'no GPU resource to test' in result['msg']
    code, result = smoke({'nodes': FLEET, 'timeout': 0}, FakeCluster())
    assert code == 1 and result['msg'] == 'timeout must be at least 1, got 0'
    code, result = smoke({'nodes': FLEET, 'group_by': 'zone'}, FakeCluster())
    assert code == 1 and 'group_by' in result['msg']
