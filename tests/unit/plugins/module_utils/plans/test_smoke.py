# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU smoke test: cases from the fleet, Job manifests, how a case ends, the runner with a fake API."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.gpu.plugins.filter.smoke import FilterModule as SmokeFilters
from ansible_collections.gpuops.gpu.plugins.module_utils.plans import smoke as S
from ansible_collections.gpuops.gpu.plugins.module_utils.k8s.client import Connection
from ansible_collections.gpuops.gpu.plugins.module_utils.ops.smoke import SmokeRunner
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.fakes import FakeClock
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.plans.smoke_fakes import (
    FLEET, FakeCluster, FakeResponse, node, smoke_settings)


def by_key(cases):
    return dict(((c['resource'], c['product'], c['node']), c) for c in cases)


def test_cases_per_product():
    cases = S.plan_cases(FLEET)
    keys = [(c['resource'], c['product']) for c in cases]
    assert keys == [
        ('nvidia.com/gpu', 'NVIDIA-A100-SXM4-40GB-MIG-1g.5gb'), ('nvidia.com/gpu', 'NVIDIA-H100-80GB-HBM3'),
        ('nvidia.com/gpu', 'NVIDIA-L4'), ('nvidia.com/gpu', 'NVIDIA-L40S'), ('nvidia.com/gpu', 'Tesla-T4-SHARED'),
        ('nvidia.com/gpu.shared', 'NVIDIA-RTX-A6000'),
        ('nvidia.com/mig-1g.5gb', 'NVIDIA-A100-SXM4-40GB'), ('nvidia.com/mig-3g.20gb', 'NVIDIA-A100-SXM4-40GB')]
    assert [c['id'] for c in cases] == list(range(len(cases)))
    k = by_key(cases)
    h100 = k[('nvidia.com/gpu', 'NVIDIA-H100-80GB-HBM3', None)]
    assert h100['status'] == S.PLANNED and h100['schedulable_nodes'] == ['h100-0'] and h100['free'] == 8
    assert h100['allocatable'] == 16 and h100['nodes'] == ['h100-0', 'h100-1']
    l4 = k[('nvidia.com/gpu', 'NVIDIA-L4', None)]
    assert l4['status'] == S.NO_CAPACITY and '0 allocatable' in l4['reason']
    assert 'cordoned: t4-0' in k[('nvidia.com/gpu', 'Tesla-T4-SHARED', None)]['reason']
    assert 'requested by pods' in k[('nvidia.com/gpu', 'NVIDIA-L40S', None)]['reason']
    assert 'not Ready: rtx-0' in k[('nvidia.com/gpu.shared', 'NVIDIA-RTX-A6000', None)]['reason']
    assert k[('nvidia.com/mig-3g.20gb', 'NVIDIA-A100-SXM4-40GB', None)]['status'] == S.PLANNED


def test_cases_per_resource_and_node_and_filters():
    cases = S.plan_cases(FLEET, group_by='resource')
    gpu = by_key(cases)[('nvidia.com/gpu', None, None)]
    assert gpu['allocatable'] == 80 and gpu['schedulable_nodes'] == ['a100-1', 'h100-0']
    per_node = S.plan_cases(FLEET, group_by='node', resources=['nvidia.com/gpu', 'nvidia.com/mig-7g.40gb'])
    assert [c['node'] for c in per_node if c['resource'] == 'nvidia.com/gpu'] == [
        'a100-1', 'h100-0', 'h100-1', 'l4-0', 'l40s-0', 't4-0']
    missing = by_key(per_node)[('nvidia.com/mig-7g.40gb', None, None)]
    assert missing['status'] == S.NOT_ADVERTISED
    assert all(c['resource'] != 'nvidia.com/gpu' for c in S.plan_cases(FLEET, exclude_resources=['nvidia.com/gpu']))
    with pytest.raises(ValueError):
        S.plan_cases(FLEET, group_by='zone')


def test_free_unknown_without_pods():
    fleet = [dict(node('h100-0', 'H100', {'nvidia.com/gpu': 8}), free=None)]
    case = S.plan_cases(fleet)[0]
    assert case['status'] == S.PLANNED and case['free'] == 8


def test_job_manifest():
    case = dict(S.plan_cases(FLEET)[6])  # mig-1g.5gb on the A100 product
    job = S.job_manifest(case, 'smoke', 'registry.example.com/cuda-sample:vectoradd', 'run-1',
                         tolerations=[{'key': 'nvidia.com/gpu', 'operator': 'Exists', 'effect': 'NoSchedule'}],
                         image_pull_secrets=['mirror'], command=['/bin/sh'], args=['-c', 'nvidia-smi -L'],
                         node_selector={'pool': 'a'}, active_deadline_seconds=120)
    name = job['metadata']['name']
    assert len(name) <= 52 and name.startswith('gpuops-smoke-6-mig-1g-5gb')
    assert job['metadata']['labels'][S.RUN_LABEL] == 'run-1'
    assert job['metadata']['annotations'][S.ANN_RESOURCE] == 'nvidia.com/mig-1g.5gb'
    spec = job['spec']
    assert spec['backoffLimit'] == 0 and spec['activeDeadlineSeconds'] == 120
    pod = spec['template']['spec']
    assert pod['restartPolicy'] == 'Never'
    assert pod['containers'][0]['resources'] == {'limits': {'nvidia.com/mig-1g.5gb': 1}}
    assert pod['containers'][0]['image'] == 'registry.example.com/cuda-sample:vectoradd'
    assert pod['containers'][0]['command'] == ['/bin/sh'] and pod['containers'][0]['args'] == ['-c', 'nvidia-smi -L']
    assert pod['containers'][0]['securityContext'] == S.DEFAULT_SECURITY_CONTEXT
    assert pod['imagePullSecrets'] == [{'name': 'mirror'}] and pod['nodeSelector'] == {'pool': 'a'}
    term = pod['affinity']['nodeAffinity']['requiredDuringSchedulingIgnoredDuringExecution']['nodeSelectorTerms'][0]
    assert term == {'matchExpressions': [{'key': S.LABEL_PRODUCT, 'operator': 'In', 'values': ['NVIDIA-A100-SXM4-40GB']}]}
    by_node = dict(case, node='a100-0', product=None)
    term = S.affinity(by_node)['nodeAffinity']['requiredDuringSchedulingIgnoredDuringExecution']['nodeSelectorTerms'][0]
    assert term == {'matchFields': [{'key': 'metadata.name', 'operator': 'In', 'values': ['a100-0']}]}
    assert S.affinity(dict(case, node=None, product=None)) is None


def test_job_names_are_unique_and_short():
    cases = S.plan_cases(FLEET, group_by='node')
    names = [S.job_name(dict(c, product='X' * 80)) for c in cases]
    assert len(set(names)) == len(names) and all(len(n) <= 52 for n in names)


def pod(phase, node='h100-0', waiting=None, scheduled=None, terminated=None, created='2026-01-01T00:00:00Z'):
    status = {'phase': phase}
    if waiting or terminated:
        state = {'waiting': {'reason': waiting, 'message': 'm'}} if waiting else {'terminated': terminated}
        status['containerStatuses'] = [{'state': state}]
    if scheduled:
        status['conditions'] = [{'type': 'PodScheduled', 'status': 'False', 'reason': 'Unschedulable',
                                 'message': scheduled}]
    return {'metadata': {'name': 'p-' + phase.lower(), 'creationTimestamp': created},
            'spec': {'nodeName': node if not scheduled else None}, 'status': status}


def job(condition=None, reason=None):
    conditions = [{'type': condition, 'status': 'True', 'reason': reason}] if condition else []
    return {'status': {'conditions': conditions}}


@pytest.mark.parametrize('j,pods,kwargs,expected', [
    (job('Complete'), [pod('Succeeded')], {}, (S.PASSED, 'completed', 'h100-0')),
    (job('Failed', 'DeadlineExceeded'), [pod('Running')], {}, (S.FAILED, 'DeadlineExceeded', 'h100-0')),
    (job('Failed', 'BackoffLimitExceeded'), [pod('Failed', terminated={'exitCode': 1, 'reason': 'Error'})], {},
     (S.FAILED, 'BackoffLimitExceeded: Error exit code 1', 'h100-0')),
    (job(), [], {}, (None, 'no pod yet', None)),
    (job(), [pod('Running')], {}, (None, 'Running', 'h100-0')),
    (job(), [pod('Running')], {'wait_for': 'running'}, (S.PASSED, 'running (not waited for completion)', 'h100-0')),
    (job(), [pod('Pending', scheduled='0/7 nodes are available')], {}, (None, 'Pending Unschedulable', None)),
    (job(), [pod('Pending', scheduled='0/7 nodes are available')], {'stuck': True},
     (S.UNSCHEDULABLE, '0/7 nodes are available', None)),
    (job(), [pod('Pending', waiting='ImagePullBackOff')], {'stuck': True}, (S.FAILED, 'ImagePullBackOff m', 'h100-0')),
    (job(), [pod('Succeeded')], {}, (S.PASSED, 'completed', 'h100-0')),
])
def test_classify(j, pods, kwargs, expected):
    assert S.classify(j, pods, **kwargs) == expected


def test_check_log_and_table():
    assert S.check_log('Test PASSED\n', 'Test PASSED') == (S.PASSED, "output has 'Test PASSED'")
    assert S.check_log('FAILED\n', 'Test PASSED') == (S.FAILED, "output lacks 'Test PASSED'")
    assert S.check_log('', 'Test PASSED')[0] == S.FAILED  # an empty log was read: it lacks the text
    assert S.check_log(None, 'Test PASSED') == (S.NOT_CHECKED, 'output not checked: the log could not be read')
    assert S.check_log(None, 'Test PASSED', 'no kubelet') == (
        S.NOT_CHECKED, 'output not checked: the log could not be read (no kubelet)')
    assert S.check_log('x', '') == (S.PASSED, '') and S.check_log(None, '') == (S.PASSED, '')
    cases = S.plan_cases(FLEET)
    cases[0].update(status=S.PASSED, ran_on='a100-1', seconds=3.2, detail='completed')
    text = S.table(cases)
    lines = text.splitlines()
    assert lines[0].split()[:3] == ['RESOURCE', 'PRODUCT', 'NODES']
    assert 'PASSED' in lines[1] and 'a100-1' in lines[1]
    assert 'NO-CAPACITY' in text and 'cordoned: t4-0' in text
    assert lines[-1].startswith('8 cases: ') and 'no-capacity 4' in lines[-1]


# --- the runner with a fake API -----------------------------------------------------------------


def run(cluster, **kwargs):
    clock = FakeClock()
    cases = [c for c in S.plan_cases(FLEET) if c['status'] == S.PLANNED]
    manifests = [S.job_manifest(c, 'smoke', 'img', 'r1') for c in cases]
    runner = SmokeRunner(Connection(core=cluster, batch=cluster), 'smoke', 'r1', clock=clock, sleep=clock.sleep,
                         poll_interval=1, **kwargs)
    runner.run(cases, manifests)
    return cases, runner


def test_runner_passes_checks_logs_and_cleans_up():
    cluster = FakeCluster()
    cases, runner = run(cluster, expect_output='Test PASSED')
    assert len(cases) == 4 and [c['status'] for c in cases] == [S.PASSED] * 4
    assert all("output has 'Test PASSED'" in c['detail'] for c in cases)
    assert all('Test PASSED' in c['log'] and c['ran_on'] == 'h100-0' for c in cases)
    assert cluster.jobs == {} and len(cluster.deleted) == 4 and runner.warnings == []


def test_runner_without_logs_failed_jobs_create_errors_and_timeouts():
    cases, _r = run(FakeCluster(logs=False), expect_output='Test PASSED')
    assert all(c['status'] == S.NOT_CHECKED and c['log'] is None for c in cases)
    assert all(c['detail'] == 'completed; output not checked: the log could not be read (502 Error: no kubelet)' for c in cases)
    cases, _r = run(FakeCluster(logs=False))  # nothing to check: an unread log does not matter
    assert all(c['status'] == S.PASSED and c['detail'] == 'completed' for c in cases)
    cases, _r = run(FakeCluster(outcome='Failed', pod_phase='Failed'))
    assert all(c['status'] == S.FAILED for c in cases)
    first = S.job_manifest([c for c in S.plan_cases(FLEET) if c['status'] == S.PLANNED][0], 'smoke', 'img', 'r1')
    cases, _r = run(FakeCluster(fail_create=(first['metadata']['name'],)))
    assert cases[0]['status'] == S.ERROR and 'exceeded quota' in cases[0]['detail']
    assert [c['status'] for c in cases[1:]] == [S.PASSED] * 3
    cluster = FakeCluster(polls=10 ** 6)
    cases, runner = run(cluster, timeout=5, cleanup_timeout=0)
    assert all(c['status'] == S.TIMEOUT and 'not finished after 5s' in c['detail'] for c in cases)
    assert cluster.jobs == {}


def test_runner_output_mismatch_fails_and_no_cleanup_keeps_jobs():
    class Wrong(FakeCluster):
        def read_namespaced_pod_log(self, *args, **kwargs):
            return FakeResponse('Test FAILED\n')
    cluster = Wrong()
    cases, _r = run(cluster, expect_output='Test PASSED', cleanup=False)
    assert all(c['status'] == S.FAILED and "lacks 'Test PASSED'" in c['detail'] for c in cases)
    assert len(cluster.jobs) == 4


def test_runner_reports_why_the_job_has_no_pod():
    class Forbidden(FakeCluster):
        def list_namespaced_pod(self, *args, **kwargs):
            return FakeResponse({'items': []})

        def list_namespaced_event(self, namespace, field_selector=None, _preload_content=False):
            name = field_selector.rsplit('=', 1)[1]
            return FakeResponse({'items': [
                {'type': 'Normal', 'reason': 'Other', 'message': 'x', 'lastTimestamp': '2026-01-01T00:00:09Z'},
                {'type': 'Warning', 'reason': 'FailedCreate', 'lastTimestamp': '2026-01-01T00:00:01Z',
                 'message': 'Error creating: pods "%s-x" is forbidden: violates PodSecurity' % name}]})
    cases, _r = run(Forbidden(polls=10 ** 6), stuck_timeout=3, timeout=30)
    assert all(c['status'] == S.ERROR and c['detail'].startswith('FailedCreate: Error creating') for c in cases)
    assert all(c['seconds'] == 3 for c in cases)


# --- the role's settings (smoke_test_input_errors) ----------------------------------------------


def test_role_settings_valid():
    assert S.input_errors(smoke_settings()) == []
    assert S.input_errors(smoke_settings(resources=['nvidia.com/gpu', 'nvidia.com/mig-1g.10gb', 'nvidia.com/gpu.shared'],
                                         timeout='30', poll_interval='0.5')) == []


@pytest.mark.parametrize('extra, fragment', [
    ({'image': ''}, 'smoke_test_image must not be empty'),
    ({'image': '  '}, 'smoke_test_image must not be empty'),
    ({'image': 'cuda sample'}, 'smoke_test_image cuda sample is not an image reference'),
    ({'image': 'https://nvcr.io/nvidia/cuda'}, 'is not an image reference'),
    ({'namespace': 'Smoke_Test'}, 'smoke_test_namespace Smoke_Test is not a valid namespace name'),
    ({'namespace': 'a.b'}, 'is not a valid namespace name'),
    ({'namespace': 'x' * 64}, 'is not a valid namespace name'),
    ({'timeout': 0}, 'smoke_test_timeout must be at least 1 second'),
    ({'stuck_timeout': 'never'}, 'smoke_test_stuck_timeout must be at least 1 second'),
    ({'poll_interval': 0}, 'smoke_test_poll_interval must be greater than 0'),
    ({'resources': ['nvidia.com/gpu'], 'exclude_resources': ['nvidia.com/gpu']},
     'smoke_test_resources and smoke_test_exclude_resources both name nvidia.com/gpu'),
    ({'resources': ['amd.com/gpu', 'nvidia.com/mig-']}, 'amd.com/gpu, nvidia.com/mig- is not an NVIDIA GPU resource'),
])
def test_role_setting_errors(extra, fragment):
    errors = S.input_errors(smoke_settings(**extra))
    assert len(errors) == 1 and fragment in errors[0], errors


def test_smoke_filter():
    smoke_filter = SmokeFilters().filters()['smoke_test_input_errors']
    assert smoke_filter(smoke_settings(namespace='A')) == [
        'smoke_test_namespace A is not a valid namespace name (lowercase letters, digits and -, at most 63)']
    with pytest.raises(AnsibleFilterError):
        smoke_filter('image')


def test_failures_of_a_result():
    result = {'cases': [{'resource': 'nvidia.com/gpu', 'status': 'passed'},
                        {'resource': 'nvidia.com/mig-1g.5gb', 'node': 'n2', 'status': 'timeout'},
                        {'resource': 'nvidia.com/gpu.shared', 'status': 'failed'},
                        {'resource': 'nvidia.com/mig-2g.10gb', 'status': 'no-capacity', 'reason': 'cordoned'}],
              'fill_cases': [{'resource': 'nvidia.com/gpu', 'node': 'n1', 'status': 'failed'}],
              'load_cases': [{'resource': 'nvidia.com/gpu', 'node': 'n3', 'status': 'error'}]}
    assert S.failures(result) == ['nvidia.com/mig-1g.5gb n2 timeout', 'nvidia.com/gpu.shared failed',
                                  'nvidia.com/gpu n1 failed', 'nvidia.com/gpu n3 error']
    assert S.failures(result, on_error=False, on_no_capacity=True) == ['nvidia.com/mig-2g.10gb: cordoned']
    assert S.failures({'cases': [], 'fill_cases': [], 'load_cases': []}, on_no_capacity=True) == []
    unread = {'cases': [{'resource': 'nvidia.com/gpu', 'status': 'not-checked'}]}
    assert S.failures(unread) == ['nvidia.com/gpu not-checked']
    assert S.failures(unread, accept_unread_logs=True) == []
    failures = SmokeFilters().filters()['smoke_test_failures']
    assert failures(result, False, False) == []
    assert failures(unread, True, False, True) == [] and failures(unread, True, False) != []
    with pytest.raises(AnsibleFilterError, match='registered result'):
        failures(['x'])
