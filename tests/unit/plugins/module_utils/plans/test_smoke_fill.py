# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU smoke test, deeper validation: the fill test of shared resources, load Jobs, the new role settings."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.plans import smoke as S
from ansible_collections.gpuops.gpu.plugins.module_utils.plans import smoke_fill as F
from ansible_collections.gpuops.gpu.plugins.module_utils.k8s.client import Connection
from ansible_collections.gpuops.gpu.plugins.module_utils.ops.smoke import FillRunner
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.fakes import FakeClock
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.plans.smoke_fakes import (
    FakeScheduler, shared, smoke_settings)


FLEET = [
    shared('t4-0'),
    shared('t4-1', free=1),
    shared('a10-0', resource='nvidia.com/gpu.shared', alloc=8, sharing='mps', replicas=8),
    shared('t4-2', unschedulable=True),
    shared('t4-3', free=0),
    shared('h100-0', alloc=8, sharing='none', replicas=1),
    shared('a100-0', resource='nvidia.com/mig-1g.5gb', alloc=7),
    shared('big-0', alloc=160, replicas=20),
]


def test_plan_fill_per_node_and_shared_resource():
    cases = F.plan_fill(FLEET, extra=2)
    got = dict((c['node'], (c['resource'], c['sharing'], c['expect_running'], c['expect_pending'], c['status']))
               for c in cases)
    assert got == {
        'a10-0': ('nvidia.com/gpu.shared', 'mps', 8, 2, S.PLANNED),
        'big-0': ('nvidia.com/gpu', 'time-slicing', 160, 2, F.SKIPPED),
        't4-0': ('nvidia.com/gpu', 'time-slicing', 4, 2, S.PLANNED),
        't4-1': ('nvidia.com/gpu', 'time-slicing', 1, 2, S.PLANNED),
        't4-2': ('nvidia.com/gpu', 'time-slicing', 4, 2, S.NO_CAPACITY),
        't4-3': ('nvidia.com/gpu', 'time-slicing', 0, 2, S.NO_CAPACITY),
    }
    by_node = dict((c['node'], c) for c in cases)
    assert by_node['t4-1']['in_use'] == 3 and by_node['t4-1']['allocatable'] == 4
    assert by_node['t4-2']['reason'] == 'cordoned'
    assert 'requested by pods' in by_node['t4-3']['reason']
    assert [c['id'] for c in cases] == list(range(len(cases)))
    # unshared (h100-0) and MIG resources (a100-0) are not filled; resource filters apply
    assert F.plan_fill(FLEET, resources=['nvidia.com/gpu.shared'])[0]['node'] == 'a10-0'
    assert [c['node'] for c in F.plan_fill(FLEET, exclude_resources=['nvidia.com/gpu'])] == ['a10-0']
    assert F.plan_fill([shared('x', sharing='time-slicing', replicas=1)]) == []


def test_fill_pods_request_one_unit_each_pinned_to_the_node():
    case = [c for c in F.plan_fill(FLEET) if c['node'] == 'a10-0'][0]
    pods = F.fill_pod_manifests(case, 'smoke', 'img', 'r1-fill', tolerations=[{'key': 'nvidia.com/gpu',
                                                                              'operator': 'Exists'}])
    assert len(pods) == 9 and len(set(p['metadata']['name'] for p in pods)) == 9
    pod = pods[0]
    assert pod['kind'] == 'Pod' and pod['metadata']['name'].startswith('gpuops-fill-')
    assert pod['metadata']['labels'][F.FILL_LABEL] == str(case['id'])
    assert pod['metadata']['labels'][S.RUN_LABEL] == 'r1-fill'
    assert pod['metadata']['annotations'][F.ANN_SHARING] == 'mps'
    spec = pod['spec']
    assert spec['containers'][0]['resources'] == {'limits': {'nvidia.com/gpu.shared': 1}}
    assert spec['containers'][0]['command'] == ['sleep', '3600']
    assert 'hostIPC' not in spec and spec['restartPolicy'] == 'Never'
    term = spec['affinity']['nodeAffinity']['requiredDuringSchedulingIgnoredDuringExecution']['nodeSelectorTerms'][0]
    assert term == {'matchFields': [{'key': 'metadata.name', 'operator': 'In', 'values': ['a10-0']}]}
    assert all(len(p['metadata']['name']) <= 63 for p in pods)


def fill_pod(node=None, phase='Pending', unschedulable=False):
    pod = {'metadata': {'name': 'p'}, 'spec': {}, 'status': {'phase': phase}}
    if node:
        pod['spec']['nodeName'] = node
    if unschedulable:
        pod['status']['conditions'] = [{'type': 'PodScheduled', 'status': 'False', 'reason': 'Unschedulable',
                                        'message': '0/9 nodes are available: 1 Insufficient nvidia.com/gpu.'}]
    return pod


CASE = {'expect_running': 2, 'expect_pending': 1}


@pytest.mark.parametrize('pods, stuck, expected', [
    ([fill_pod('n', 'Running')] * 2 + [fill_pod(unschedulable=True)], False,
     (S.PASSED, '2 bound, 1 Pending (Unschedulable); expected 2 and 1')),
    ([fill_pod('n', 'Pending'), fill_pod('n', 'Running'), fill_pod(unschedulable=True)], False, S.PASSED),
    ([fill_pod('n', 'Running'), fill_pod(), fill_pod()], False, None),
    ([fill_pod('n', 'Running'), fill_pod(), fill_pod()], True, S.FAILED),
    ([fill_pod('n', 'Running')] * 3, False, S.FAILED),
    ([fill_pod('n', 'Running')] * 2 + [fill_pod(unschedulable=True)] * 2, True, S.FAILED),
])
def test_classify_fill(pods, stuck, expected):
    status, detail = F.classify_fill(CASE, pods, stuck=stuck)
    if isinstance(expected, tuple):
        assert (status, detail) == expected
    else:
        assert status == expected, detail


def test_classify_fill_explains_pods_that_ended():
    pods = [fill_pod('n', 'Succeeded'), fill_pod('n', 'Running'), fill_pod('n', 'Running')]
    status, detail = F.classify_fill(CASE, pods)
    assert status == S.FAILED and 'smoke_test_fill_command' in detail and '1 fill pods ended' in detail
    status, detail = F.classify_fill(CASE, [fill_pod('n', 'Running')] * 3)
    assert 'took more pods than it advertises' in detail


def test_fill_table():
    cases = F.plan_fill(FLEET)
    cases[0].update(status=S.PASSED, detail='8 bound, 1 Pending (Unschedulable); expected 8 and 1')
    lines = F.fill_table(cases).splitlines()
    assert lines[0].split()[:4] == ['NODE', 'RESOURCE', 'SHARING', 'ALLOC']
    assert lines[1].split()[:3] == ['a10-0', 'gpu.shared', 'mps'] and 'PASSED' in lines[1]
    assert F.fill_table([]) == 'no time-sliced or MPS-shared resource to fill'


# --- the fill runner against a fake scheduler -----------------------------------------------------


def fill_run(cluster, nodes, **kwargs):
    clock = FakeClock()
    cases = [c for c in F.plan_fill(nodes) if c['status'] == S.PLANNED]
    manifests = [F.fill_pod_manifests(c, 'smoke', 'img', 'r1-fill') for c in cases]
    runner = FillRunner(Connection(core=cluster), 'smoke', 'r1-fill', clock=clock, sleep=clock.sleep,
                        poll_interval=1, **kwargs)
    runner.run(cases, manifests)
    return cases, runner


def test_fill_runner_passes_and_cleans_up():
    cluster = FakeScheduler({'t4-0': 4, 'a10-0': 8})
    cases, runner = fill_run(cluster, [FLEET[0], FLEET[2]])
    assert [(c['node'], c['status']) for c in cases] == [('a10-0', S.PASSED), ('t4-0', S.PASSED)]
    assert cases[1]['detail'] == '4 bound, 1 Pending (Unschedulable); expected 4 and 1'
    assert cluster.pods == {} and len(cluster.deleted) == 14 and runner.warnings == []
    # the Pending pods go first: none of them may take a unit a deleted pod frees
    assert cluster.deleted_bound == [False] * 2 + [True] * 12


def test_fill_runner_fails_when_the_node_takes_too_many_or_too_few():
    cases, _r = fill_run(FakeScheduler({'t4-0': 4}, leak=True), [FLEET[0]])
    assert cases[0]['status'] == S.FAILED and cases[0]['detail'].startswith('5 bound, 0 Pending')
    cluster = FakeScheduler({'t4-0': 2})
    cases, _r = fill_run(cluster, [FLEET[0]], stuck_timeout=3)
    assert cases[0]['status'] == S.FAILED and cases[0]['detail'].startswith('2 bound, 3 Pending')
    assert cases[0]['seconds'] == 3 and cluster.pods == {}


def test_fill_runner_create_error():
    cluster = FakeScheduler({'t4-0': 4}, fail_create=True)
    cases, _r = fill_run(cluster, [FLEET[0]])
    assert cases[0]['status'] == S.ERROR and 'security context constraint' in cases[0]['detail']


# --- load Jobs and the role settings -------------------------------------------------------------

def test_plan_load_and_duration():
    nodes = [shared('t4-0'), shared('h100-0', alloc=8, sharing='none', replicas=1)]
    cases = S.plan_load(nodes)
    assert [(c['resource'], c['node'], c['status']) for c in cases] == [
        ('nvidia.com/gpu', 'h100-0', S.PLANNED), ('nvidia.com/gpu', 't4-0', S.PLANNED)]
    assert S.with_duration(['--duration', '{duration}', 'x'], 90) == ['--duration', '90', 'x']
    manifest = S.job_manifest(cases[0], 'smoke', 'burn', 'r1-load', args=['{duration}'], prefix='gpuops-load')
    assert manifest['metadata']['name'].startswith('gpuops-load-0-') and manifest['spec']['backoffLimit'] == 0


def test_new_role_settings_valid():
    assert S.input_errors(smoke_settings(fill=True, fill_extra='2', fill_command=['sleep', '600'], load=True,
                                         load_image='registry.example.com/gpu-burn:1', load_duration='60',
                                         load_resources=['nvidia.com/gpu'], scc='privileged')) == []
    assert S.input_errors(smoke_settings(load=False, load_image='', scc='')) == []


@pytest.mark.parametrize('extra, fragment', [
    ({'fill_extra': 0}, 'smoke_test_fill_extra must be a whole number from 1 to 16'),
    ({'fill_extra': 17}, 'smoke_test_fill_extra must be a whole number from 1 to 16'),
    ({'fill': True, 'fill_extra': 1, 'fill_command': []}, 'smoke_test_fill_command must not be empty'),
    ({'load': True, 'load_image': '', 'load_duration': 60, 'load_resources': ['nvidia.com/gpu']},
     'smoke_test_load_image must be set with smoke_test_load'),
    ({'load': True, 'load_image': 'gpu burn', 'load_duration': 60, 'load_resources': ['nvidia.com/gpu']},
     'smoke_test_load_image gpu burn is not an image reference'),
    ({'load': True, 'load_image': 'burn', 'load_duration': 0, 'load_resources': ['nvidia.com/gpu']},
     'smoke_test_load_duration must be at least 1 second'),
    ({'load': True, 'load_image': 'burn', 'load_duration': 5, 'load_resources': []},
     'smoke_test_load_resources must name at least one GPU resource'),
    ({'load': True, 'load_image': 'burn', 'load_duration': 5, 'load_resources': ['amd.com/gpu']},
     'smoke_test_load_resources: amd.com/gpu is not an NVIDIA GPU resource'),
    ({'scc': 'Privileged!'}, 'smoke_test_scc Privileged! is not a SecurityContextConstraints name'),
])
def test_new_role_setting_errors(extra, fragment):
    errors = S.input_errors(smoke_settings(**extra))
    assert len(errors) == 1 and fragment in errors[0], errors
