# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_smoke_test main(): check mode plan, runs with a fake cluster, failure rules."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu.plugins.modules import gpu_smoke_test
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.plans.smoke_fakes import FLEET, FakeCluster
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.plans.smoke_fakes import FakeScheduler, shared

FILL_FLEET = [shared('t4-0'), shared('t4-1', free=1), shared('t4-2', unschedulable=True),
              shared('a10-0', resource='nvidia.com/gpu.shared', alloc=8, sharing='mps', replicas=8)]


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


def test_unread_logs_fail_unless_accepted(smoke):
    args = {'nodes': FLEET, 'expect_output': 'Test PASSED'}
    code, result = smoke(args, FakeCluster(logs=False))
    assert code == 1 and result['msg'].startswith('GPU smoke test: 4 of 8 cases did not pass')
    assert 'not-checked completed; output not checked: the log could not be read (502 Error: no kubelet)' in result['msg']
    code, result = smoke(dict(args, accept_unread_logs=True), FakeCluster(logs=False))
    assert code == 0 and result['summary'] == {'not-checked': 4, 'no-capacity': 4}
    assert 'NOT-CHECKED' in result['table']


def test_no_gpu_resource_and_bad_numbers(smoke):
    code, result = smoke({'nodes': []}, FakeCluster())
    assert code == 1 and 'no GPU resource to test' in result['msg']
    code, result = smoke({'nodes': FLEET, 'timeout': 0}, FakeCluster())
    assert code == 1 and result['msg'] == 'timeout must be at least 1, got 0'
    code, result = smoke({'nodes': FLEET, 'group_by': 'zone'}, FakeCluster())
    assert code == 1 and 'group_by' in result['msg']


class FillAndJobs(FakeCluster):
    """Jobs as FakeCluster; fill pods (run label ending -fill) through the fake scheduler."""

    def __init__(self, units, **kwargs):
        super(FillAndJobs, self).__init__(**kwargs)
        self.scheduler = FakeScheduler(units)
        self.create_namespaced_pod = self.scheduler.create_namespaced_pod
        self.delete_namespaced_pod = self.scheduler.delete_namespaced_pod

    def list_namespaced_pod(self, namespace, label_selector=None, _preload_content=False):
        if label_selector.endswith('-fill'):
            return self.scheduler.list_namespaced_pod(namespace, label_selector)
        return super(FillAndJobs, self).list_namespaced_pod(namespace, label_selector)


LOAD = {'image': 'registry.example.com/gpu-burn:1', 'args': ['{duration}'], 'duration': 30}


def test_fill_and_load_check_mode_plans_them(smoke):
    cluster = FillAndJobs({})
    code, result = smoke({'nodes': FILL_FLEET, 'fill': True, 'load': LOAD}, cluster, check=True)
    assert code == 0 and result['changed'] is False
    fill = dict((c['node'], c) for c in result['fill_cases'])
    assert fill['t4-0']['status'] == 'planned' and len(fill['t4-0']['pods']) == 5
    assert fill['a10-0']['sharing'] == 'mps'
    assert all(c['kind'] == 'load' and c['job'].startswith('gpuops-load-') for c in result['load_cases']
               if c['status'] == 'planned')
    assert 'Fill test' in result['table'] and 'Load (registry.example.com/gpu-burn:1, 30s)' in result['table']
    assert cluster.jobs == {} and cluster.scheduler.pods == {} and cluster.lists == 0


def test_fill_and_load_run(smoke):
    cluster = FillAndJobs({'t4-0': 4, 't4-1': 1, 'a10-0': 8})
    code, result = smoke({'nodes': FILL_FLEET, 'fill': True, 'load': LOAD}, cluster)
    assert code == 0, result.get('msg')
    statuses = dict((c['node'], c['status']) for c in result['fill_cases'])
    assert statuses == {'t4-0': 'passed', 't4-1': 'passed', 't4-2': 'no-capacity', 'a10-0': 'passed'}
    assert all(c['status'] == 'passed' for c in result['load_cases'] if c['node'] != 't4-2')
    assert cluster.jobs == {} and cluster.scheduler.pods == {}
    # t4-1 has 1 free unit (3 in use by other pods) but the node takes 4 more: a failed fill case fails the module
    cluster = FillAndJobs({'t4-0': 4, 't4-1': 4, 'a10-0': 8})
    code, result = smoke({'nodes': FILL_FLEET, 'fill': True}, cluster)
    assert code == 1 and 'fill test nvidia.com/gpu t4-1: failed 2 bound, 0 Pending' in result['msg']


def test_fill_options_checked(smoke):
    code, result = smoke({'nodes': FILL_FLEET, 'fill': True, 'fill_extra': 0}, FillAndJobs({}))
    assert code == 1 and result['msg'] == 'fill_extra must be from 1 to 16, got 0'
    code, result = smoke({'nodes': FILL_FLEET, 'load': dict(LOAD, duration=0)}, FillAndJobs({}))
    assert code == 1 and result['msg'] == 'load.duration must be at least 1, got 0'
