"""gpuops.gpu.smoke_test on the virtual GPU cluster: real Jobs scheduled by the real scheduler onto KWOK GPU nodes
whose full, time-sliced and MIG (mixed strategy) resources come from the simulated device plugin / MIG manager
driven by the real gpu-operator; KWOK's pod-complete stage finishes the pods of Jobs, and the pod logs (what the
CUDA vectorAdd sample prints on the allocated device, written by gpusim) come through the API server's pods/log
from KWOK's kubelet server."""

import pytest

from ansible_run import changed_tasks, run_role
from cluster_policy_example import clusterpolicy_example
from conftest import wait_until
from policy_helpers import CP
from role_cases import assert_failed, failures

OP_NS = 'gpu-operator'
NS = 'gpuops-smoke-test'
SHARING = 'version: v1\nsharing:\n  timeSlicing:\n    resources:\n      - name: nvidia.com/gpu\n        replicas: 4\n'
FAST = {'smoke_test_poll_interval': 0.5, 'smoke_test_timeout': 120, 'smoke_test_stuck_timeout': 30}
RUN_TASK = 'Run a workload on every GPU resource'
SCC_TASK = "Bind the SCC to the test pods' ServiceAccount for the run"
# the fill test, load Jobs (their pods complete through KWOK's pod-complete stage) and an SCC binding
DEEP = {'smoke_test_fill': True, 'smoke_test_load': True, 'smoke_test_load_image': 'registry.example.com/gpu-burn:1',
        'smoke_test_load_args': ['{duration}'], 'smoke_test_load_duration': 5, 'smoke_test_scc': 'privileged'}
LOADED = {'a100-1', 'h100-0', 'h100-1', 't4-0'}
INJECT = 'gpusim.gpuops.dev/inject'
# what the CUDA vectorAdd sample prints when its result is right (docs/facts.md)
VECTORADD = ['[Vector addition of 50000 elements]', 'Copy input data from the host memory to the CUDA device',
             'CUDA kernel launch with 196 blocks of 256 threads',
             'Copy output data from the CUDA device to the host memory', 'Test PASSED', 'Done']


@pytest.fixture(scope='module', autouse=True)
def gpu_fleet(core, custom):
    """Full GPUs (H100, A100), MIG mixed strategy on a100-0 (all-balanced), time-slicing x4 on t4-0, and the
    L40S node cordoned (a resource without schedulable capacity)."""
    policy = clusterpolicy_example()
    policy['spec']['mig'] = {'strategy': 'mixed'}
    policy['spec']['devicePlugin']['config'] = {'name': 'smoke-sharing', 'default': ''}
    core.create_namespaced_config_map(OP_NS, {'metadata': {'name': 'smoke-sharing'}, 'data': {'ts-4': SHARING}})
    custom.create_cluster_custom_object(*CP, policy)
    core.patch_node('t4-0', {'metadata': {'labels': {'nvidia.com/device-plugin.config': 'ts-4'}}})
    core.patch_node('a100-0', {'metadata': {'labels': {'nvidia.com/mig.config': 'all-balanced'}}})
    core.patch_node('l40s-0', {'spec': {'unschedulable': True}})

    def ready():
        nodes = {n.metadata.name: n for n in core.list_node().items}
        return ('nvidia.com/mig-1g.5gb' in (nodes['a100-0'].status.allocatable or {})
                and nodes['t4-0'].metadata.labels.get('nvidia.com/gpu.product') == 'Tesla-T4-SHARED'
                and (nodes['t4-0'].status.allocatable or {}).get('nvidia.com/gpu') == '4'
                and (nodes['h100-0'].status.allocatable or {}).get('nvidia.com/gpu') == '8')
    wait_until('MIG devices on a100-0, time-slicing on t4-0, GPUs on h100-0', ready, 180, 1)


def smoke_objects(core, batch):
    """The Jobs and pods of the smoke test anywhere in the cluster, and whether its namespace exists."""
    selector = 'app.kubernetes.io/name=gpuops-smoke-test'
    jobs = [j.metadata.name for j in batch.list_job_for_all_namespaces(label_selector=selector).items]
    pods = [p.metadata.name for p in core.list_pod_for_all_namespaces(label_selector=selector).items]
    return jobs, pods, NS in [n.metadata.name for n in core.list_namespace().items]


def test_bad_inputs_fail_before_writing(testbed, core, batch):
    cases = {
        'empty-image': {'smoke_test_image': ''},
        'not-a-gpu-resource': {'smoke_test_resources': ['amd.com/gpu']},
        'bad-namespace': {'smoke_test_namespace': 'Smoke_Test'},
        'bad-toleration': {'smoke_test_tolerations': [{'key': 'dedicated', 'operator': 'Maybe'}]},
        'load-without-image': {'smoke_test_load': True, 'smoke_test_scc': 'privileged'},
    }
    got, raw = failures(testbed.kubeconfig, 'smoke_test', FAST, cases)
    expected = {'empty-image': 'smoke_test_image must not be empty',
                'not-a-gpu-resource': 'amd.com/gpu is not an NVIDIA GPU resource',
                'bad-namespace': 'Smoke_Test is not a valid namespace name',
                'bad-toleration': 'operator must be Exists or Equal',
                'load-without-image': 'smoke_test_load_image must be set with smoke_test_load'}
    assert_failed(got, raw, expected, ('Check the inputs before writing anything',
                                       'Validate the tolerations (nvidia.com/gpu is always kept)'))
    assert smoke_objects(core, batch) == ([], [], False)


def test_check_mode_plans_and_writes_nothing(testbed, core, batch):
    rc, results, raw = run_role(testbed.kubeconfig, 'smoke_test', dict(FAST, **DEEP), check=True)
    assert rc == 0, raw[-3000:]
    statuses = {(c['resource'], c['product']): c['status'] for c in results[RUN_TASK]['cases']}
    assert statuses[('nvidia.com/gpu', 'NVIDIA-H100-80GB-HBM3')] == 'planned'
    assert statuses[('nvidia.com/gpu', 'NVIDIA-L40S')] == 'no-capacity'
    fill = results[RUN_TASK]['fill_cases']
    assert [(c['node'], c['sharing'], c['status'], len(c['pods'])) for c in fill] == [('t4-0', 'time-slicing', 'planned', 5)]
    assert {c['node'] for c in results[RUN_TASK]['load_cases'] if c['status'] == 'planned'} == LOADED
    assert smoke_objects(core, batch) == ([], [], False)


def test_every_gpu_resource_runs_then_idempotent(testbed, core, batch):
    rc, results, raw = run_role(testbed.kubeconfig, 'smoke_test', FAST)
    assert rc == 0, raw[-4000:]
    assert results['Create the smoke test namespace']['changed'] is True
    cases = {(c['resource'], c['product']): c for c in results[RUN_TASK]['cases']}
    passed = {('nvidia.com/gpu', 'NVIDIA-A100-SXM4-40GB'): ['a100-1'],
              ('nvidia.com/gpu', 'NVIDIA-H100-80GB-HBM3'): ['h100-0', 'h100-1'],
              ('nvidia.com/gpu', 'Tesla-T4-SHARED'): ['t4-0'],
              ('nvidia.com/mig-1g.5gb', 'NVIDIA-A100-SXM4-40GB'): ['a100-0'],
              ('nvidia.com/mig-2g.10gb', 'NVIDIA-A100-SXM4-40GB'): ['a100-0'],
              ('nvidia.com/mig-3g.20gb', 'NVIDIA-A100-SXM4-40GB'): ['a100-0']}
    for key, nodes in passed.items():
        assert cases[key]['status'] == 'passed', cases[key]
        assert cases[key]['ran_on'] in nodes, cases[key]
        # the log read back through the API server (pods/log), checked for the expected text
        assert cases[key]['detail'] == "completed; output has 'Test PASSED'", cases[key]
        assert cases[key]['log'].splitlines() == VECTORADD, cases[key]
    l40s = cases[('nvidia.com/gpu', 'NVIDIA-L40S')]
    assert (l40s['status'], l40s['reason']) == ('no-capacity', 'cordoned: l40s-0')
    table = '\n'.join(results['Show the GPU smoke test results']['msg'])
    assert 'NO-CAPACITY' in table and 'cordoned: l40s-0' in table and '7 cases: no-capacity 1, passed 6' in table
    # the Jobs really ran in the apiserver: their events (and the scheduler's) outlive them
    events = core.list_namespaced_event(NS).items
    created = {e.involved_object.name for e in events if e.involved_object.kind == 'Job' and e.reason == 'SuccessfulCreate'}
    assert created == {c['job'] for c in cases.values() if c['status'] == 'passed'}
    scheduled = {e.involved_object.name: e.message for e in events if e.reason == 'Scheduled'}
    for case in cases.values():
        if case['status'] == 'passed':
            assert scheduled[case['pod']].endswith('to %s' % case['ran_on'])
    assert smoke_objects(core, batch)[:2] == ([], [])

    rc, results, raw = run_role(testbed.kubeconfig, 'smoke_test', FAST)
    assert rc == 0, raw[-4000:]
    assert changed_tasks(results) == [], changed_tasks(results)
    assert smoke_objects(core, batch) == ([], [], True)


def test_fill_load_and_scc(testbed, core, batch, rbac):
    """t4-0 advertises 4 time-sliced replicas: 5 fill pods go to the real scheduler, which binds exactly 4 and
    leaves exactly 1 Pending (Unschedulable); then one load Job per node; the SCC RoleBinding lives only for the
    run."""
    rc, results, raw = run_role(testbed.kubeconfig, 'smoke_test', dict(FAST, **DEEP))
    assert rc == 0, raw[-4000:]
    result = results[RUN_TASK]
    fill = result['fill_cases']
    assert len(fill) == 1, fill
    case = fill[0]
    assert (case['node'], case['resource'], case['sharing'], case['replicas']) == ('t4-0', 'nvidia.com/gpu', 'time-slicing', 4)
    assert case['status'] == 'passed', case
    assert case['detail'] == '4 bound, 1 Pending (Unschedulable); expected 4 and 1'
    # the scheduler's own word, read back from the apiserver: 4 fill pods Scheduled on t4-0, 1 FailedScheduling
    events = [e for e in core.list_namespaced_event(NS).items if e.involved_object.name.startswith('gpuops-fill-')]
    scheduled = {e.involved_object.name for e in events if e.reason == 'Scheduled' and e.message.endswith('to t4-0')}
    failed = {e.involved_object.name for e in events if e.reason == 'FailedScheduling'}
    assert len(scheduled) == 4 and len(failed) == 1 and not scheduled & failed, events
    assert 'Insufficient nvidia.com/gpu' in [e.message for e in events if e.reason == 'FailedScheduling'][0]
    load = {c['node']: c for c in result['load_cases']}
    assert {n for n, c in load.items() if c['status'] == 'passed'} == LOADED, load
    assert load['l40s-0']['status'] == 'no-capacity'
    assert all(c['job'].startswith('gpuops-load-') for n, c in load.items() if n in LOADED)
    table = '\n'.join(results['Show the GPU smoke test results']['msg'])
    assert 'Fill test' in table and 'time-slicing' in table and 'Load (registry.example.com/gpu-burn:1, 5s)' in table
    binding = results[SCC_TASK]['result']
    assert binding['roleRef']['name'] == 'system:openshift:scc:privileged'
    assert binding['subjects'] == [{'kind': 'ServiceAccount', 'name': 'default', 'namespace': NS}]
    assert [b.metadata.name for b in rbac.list_namespaced_role_binding(NS).items] == []
    assert smoke_objects(core, batch)[:2] == ([], [])
    assert [t for t in changed_tasks(results) if t != 'prepare | Create the smoke test namespace'] == []


def test_wrong_output_fails_and_an_unread_log_fails_unless_accepted(testbed, core):
    """gpusim makes the vectorAdd sample on a100-1 print a failed result check (the pod still completes) and writes
    no log for the pod on t4-0 (the API server's log request fails): the first is FAILED, the second NOT-CHECKED,
    and both fail the role; with smoke_test_accept_unread_logs the NOT-CHECKED case alone no longer fails it."""
    core.patch_node('a100-1', {'metadata': {'annotations': {INJECT: 'workload-wrong-output'}}})
    core.patch_node('t4-0', {'metadata': {'annotations': {INJECT: 'workload-no-log'}}})
    try:
        rc, results, raw = run_role(testbed.kubeconfig, 'smoke_test', FAST)
        assert rc != 0, raw[-3000:]
        cases = {(c['resource'], c['product']): c for c in results[RUN_TASK]['cases']}
        wrong = cases[('nvidia.com/gpu', 'NVIDIA-A100-SXM4-40GB')]
        assert (wrong['status'], wrong['detail']) == ('failed', "completed; output lacks 'Test PASSED'"), wrong
        assert wrong['log'].splitlines()[-1] == 'Result verification failed at element 0!', wrong
        unread = cases[('nvidia.com/gpu', 'Tesla-T4-SHARED')]
        assert unread['status'] == 'not-checked' and unread['log'] is None, unread
        assert unread['detail'].startswith('completed; output not checked: the log could not be read ('), unread
        assert 'no logs found for container "smoke"' in unread['detail'], unread  # kwok's answer, via the API server
        assert sorted(c['status'] for c in cases.values()).count('passed') == 4
        assert results['Check the GPU smoke test results']['msg'] == ['nvidia.com/gpu failed', 'nvidia.com/gpu not-checked']

        rc, results, raw = run_role(testbed.kubeconfig, 'smoke_test', dict(
            FAST, smoke_test_accept_unread_logs=True, smoke_test_label_selector='kubernetes.io/hostname=t4-0'))
        assert rc == 0, raw[-3000:]
        assert [c['status'] for c in results[RUN_TASK]['cases']] == ['not-checked']
        assert 'NOT-CHECKED' in '\n'.join(results['Show the GPU smoke test results']['msg'])
    finally:
        for node in ('a100-1', 't4-0'):
            core.patch_node(node, {'metadata': {'annotations': {INJECT: None}}})
