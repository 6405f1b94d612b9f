"""gpuops.gpu.quotas on the virtual GPU cluster: ResourceQuotas on GPU resources per namespace and
per label-selected namespaces, normalisation of bare keys, the time-slicing warning (replicas from
the simulated GPU feature discovery), idempotency, check mode, bad input, removal."""

import pytest
from kubernetes import client

from ansible_run import changed_tasks, run_role
from conftest import create_namespace
from policy_helpers import enable_time_slicing, ensure_cluster_policy

TEAM = 'gpuops-it/team'
NAMESPACES = {'qa-a': {}, 'qa-ml-1': {TEAM: 'ml'}, 'qa-ml-2': {TEAM: 'ml'}, 'qa-foreign': {}}
MANAGED = 'app.kubernetes.io/managed-by'

QUOTAS = [
    {'namespace': 'qa-a', 'hard': {'nvidia.com/gpu': 4, 'requests.nvidia.com/mig-1g.5gb': 14, 'requests.cpu': '64'}},
    {'name': 'hami', 'namespace_selector': TEAM + '=ml',
     'hard': {'requests.nvidia.com/gpumem': 40000, 'limits.nvidia.com/gpumem': 40000,
              'requests.nvidia.com/gpucores': 200, 'requests.nvidia.com/gpu.shared': 8}},
]


@pytest.fixture(scope='module', autouse=True)
def namespaces(core):
    for name, labels in NAMESPACES.items():
        create_namespace(core, name, labels)
    # a quota gpuops.gpu did not create: never touched
    core.create_namespaced_resource_quota('qa-foreign', client.V1ResourceQuota(
        metadata=client.V1ObjectMeta(name='gpu-quota'), spec=client.V1ResourceQuotaSpec(hard={'pods': '10'})))
    yield
    for name in NAMESPACES:
        core.delete_namespace(name)


def quotas(core):
    return dict(((q.metadata.namespace, q.metadata.name), q) for q in core.list_resource_quota_for_all_namespaces().items)


def versions(core):
    """What a write by the role would change (the quota controller keeps updating status, and with it
    resourceVersion, on its own)."""
    return dict((k, (q.spec.hard, q.spec.scopes, q.metadata.labels, q.metadata.annotations))
                for k, q in quotas(core).items())


# ---------------------------------------------------------------------------------------- tests

def test_check_mode_writes_nothing(testbed, core):
    before = versions(core)
    rc, results, raw = run_role(testbed.kubeconfig, 'quotas', {'quotas_resource_quotas': QUOTAS}, check=True)
    assert rc == 0, raw[-3000:]
    assert results['Write the ResourceQuotas']['changed'] is True
    assert versions(core) == before


def test_quotas_written_normalised_then_idempotent(testbed, core):
    rc, results, raw = run_role(testbed.kubeconfig, 'quotas', {'quotas_resource_quotas': QUOTAS})
    assert rc == 0, raw[-3000:]
    have = quotas(core)
    qa = have[('qa-a', 'gpu-quota')]
    assert qa.spec.hard == {'requests.nvidia.com/gpu': '4', 'requests.nvidia.com/mig-1g.5gb': '14',
                            'requests.cpu': '64'}
    assert qa.metadata.labels[MANAGED] == 'gpuops.gpu'
    for ns in ('qa-ml-1', 'qa-ml-2'):
        assert have[(ns, 'hami')].spec.hard == {
            'requests.nvidia.com/gpumem': '40k', 'limits.nvidia.com/gpumem': '40k',
            'requests.nvidia.com/gpucores': '200', 'requests.nvidia.com/gpu.shared': '8'}
    notes = results['Show what was normalised or left alone']['msg']
    assert any('nvidia.com/gpu normalised to requests.nvidia.com/gpu' in n for n in notes), notes
    assert any('hami-scheduler' in n for n in notes), notes
    assert have[('qa-foreign', 'gpu-quota')].spec.hard == {'pods': '10'}
    before = versions(core)
    rc, results, raw = run_role(testbed.kubeconfig, 'quotas', {'quotas_resource_quotas': QUOTAS})
    assert rc == 0, raw[-3000:]
    assert changed_tasks(results) == [], changed_tasks(results)
    assert versions(core) == before
    rc, results, raw = run_role(testbed.kubeconfig, 'quotas', {'quotas_resource_quotas': QUOTAS}, check=True)
    assert rc == 0 and changed_tasks(results) == [], raw[-3000:]


def test_the_normalised_quota_is_enforced(core):
    pod = client.V1Pod(metadata=client.V1ObjectMeta(name='too-many-gpus'), spec=client.V1PodSpec(
        containers=[client.V1Container(name='c', image='cuda', resources=client.V1ResourceRequirements(
            requests={'cpu': '1'}, limits={'nvidia.com/gpu': '5'}))]))
    with pytest.raises(client.ApiException) as exc:
        core.create_namespaced_pod('qa-a', pod)
    assert exc.value.status == 403 and 'exceeded quota' in exc.value.body


# more bad quota input is covered by tests/unit/plugins/module_utils/plans/test_quota.py (pure, no cluster)
BAD = [
    ([{'namespace': 'qa-a', 'hard': {'limits.nvidia.com/gpu': 4}}], {}, 'use requests.nvidia.com/gpu'),
    ([{'namespace': 'qa-missing', 'hard': {'requests.nvidia.com/gpu': 1}}], {}, "namespace 'qa-missing' not found"),
    ([{'namespace_selector': TEAM + '=nobody', 'hard': {'requests.nvidia.com/gpu': 1}}], {}, 'matches no namespace'),
    ([{'namespace': 'qa-foreign', 'hard': {'requests.nvidia.com/gpu': 1}}], {}, 'not created by gpuops.gpu'),
    ([{'namespace': 'qa-a', 'hard': {'nvidia.com/gpu': 1}}], {'quotas_normalise': False}, 'never enforced'),
    # a good entry next to a bad one: nothing at all is written
    ([{'namespace': 'qa-a', 'name': 'extra', 'hard': {'requests.nvidia.com/gpu': 1}},
      {'namespace': 'qa-a', 'hard': {'requests.nvidia.com/gpu': 1}, 'scopes': ['Gpus']}], {}, 'unknown scope'),
]


@pytest.mark.parametrize('entries,extra,fragment', BAD)
def test_bad_input_fails_before_writing(testbed, core, entries, extra, fragment):
    before = versions(core)
    rc, results, raw = run_role(testbed.kubeconfig, 'quotas', dict(extra, quotas_resource_quotas=entries))
    assert rc != 0
    assert fragment in raw, raw[-3000:]
    assert versions(core) == before


def test_time_slicing_warning(testbed, core, custom):
    ensure_cluster_policy(custom)
    enable_time_slicing(core, custom, testbed.config['cluster']['operator_namespace'], ['a100-0', 'a100-1'], 4)
    rc, results, raw = run_role(testbed.kubeconfig, 'quotas', {'quotas_resource_quotas': QUOTAS})
    assert rc == 0, raw[-3000:]
    warning = results['Warn that time-slicing changes what the GPU quotas mean']['msg']
    assert any('requests.nvidia.com/gpu: 4 with nvidia.com/gpu shared 4 ways' in w and 'equivalent of 1 physical' in w
               for w in warning), warning
    assert any('requests.nvidia.com/gpu.shared: 8' in w for w in warning), warning
    assert changed_tasks(results) == []


def test_absent_removes_only_gpuops_quotas(testbed, core):
    absent = {'quotas_state': 'absent', 'quotas_resource_quotas': [
        {'namespaces': ['qa-a', 'qa-foreign']}, {'name': 'hami', 'namespace_selector': TEAM + '=ml'}]}
    before = versions(core)
    rc, results, raw = run_role(testbed.kubeconfig, 'quotas', absent, check=True)
    assert rc == 0 and results['Delete the ResourceQuotas']['changed'] is True, raw[-3000:]
    assert versions(core) == before
    rc, results, raw = run_role(testbed.kubeconfig, 'quotas', absent)
    assert rc == 0, raw[-3000:]
    assert any('left in place' in n for n in results['Show what was normalised or left alone']['msg'])
    assert sorted(quotas(core)) == [('qa-foreign', 'gpu-quota')]
    rc, results, raw = run_role(testbed.kubeconfig, 'quotas', absent)
    assert rc == 0 and changed_tasks(results) == [], raw[-3000:]
