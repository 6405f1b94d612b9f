"""gpuops.gpu.reset on the virtual GPU cluster: after a MIG change (gpuops.gpu.mig role, custom
mig-parted ConfigMap) and time-slicing (device-plugin ConfigMap not created by gpuops.gpu), the reset
drains and rolls the nodes back to all-disabled / unshared through mig_rollout and sharing_rollout,
removes the ClusterPolicy's custom configs, deletes only the ConfigMap gpuops.gpu created, leaves
quotas unless asked; idempotency, check mode, bad input."""

import pytest
from kubernetes import client

from ansible_run import changed_tasks, run_role
from conftest import create_namespace, gpu_pod, wait_until
from policy_helpers import enable_time_slicing, ensure_cluster_policy, get_policy, node_writes, wait_quiet

MIG_NODES = ['a100-0', 'h100-0']
SHARED_NODES = ['t4-0', 'l40s-0']
GPU_NODES = ['a100-0', 'a100-1', 'h100-0', 'h100-1', 't4-0', 'l40s-0']
MIG_CM = 'gpuops-mig-parted-config'
DP_CM = 'team-device-plugin-config'  # created by "someone else": never deleted
MANAGED = {'app.kubernetes.io/managed-by': 'gpuops.gpu'}
WORKLOAD_NS = 'reset-it'


def labels(core, name):
    return core.read_node(name).metadata.labels or {}


@pytest.fixture(scope='module')
def reset_vars(operator_ns):
    return {'reset_operator_namespace': operator_ns, 'reset_max_unavailable': 2, 'reset_poll_interval': 0.3,
            'reset_state_timeout': 90, 'reset_verify_timeout': 90}


def snapshot(core, custom, operator_ns):
    return {'policy': get_policy(custom)['spec'], 'nodes': node_writes(core),
            'config_maps': dict((c.metadata.name, c.metadata.resource_version)
                                for c in core.list_namespaced_config_map(operator_ns).items),
            'quotas': sorted((q.metadata.namespace, q.metadata.name, q.metadata.resource_version)
                             for q in core.list_resource_quota_for_all_namespaces().items)}


@pytest.fixture(scope='module', autouse=True)
def configured(testbed, core, custom, operator_ns):
    """MIG through the gpuops.gpu.mig role, time-slicing by hand, a GPU pod, quotas."""
    ensure_cluster_policy(custom)
    wait_until('GFD labels', lambda: all(labels(core, n).get('nvidia.com/gpu.product') for n in GPU_NODES), 120)
    rc, results, raw = run_role(testbed.kubeconfig, 'mig', {
        'mig_operator_namespace': operator_ns, 'mig_strategy': 'mixed', 'mig_max_unavailable': 2,
        'mig_poll_interval': 0.3, 'mig_custom_configs': {'two-3g': [
            {'devices': 'all', 'mig-enabled': True, 'mig-devices': {'3g.20gb': 2}}]},
        'mig_assignments': [{'nodes': ['a100-0'], 'config': 'two-3g'}, {'nodes': ['h100-0'], 'config': 'all-1g.10gb'}]})
    assert rc == 0, raw[-3000:]
    assert labels(core, 'a100-0')['nvidia.com/mig.config'] == 'two-3g'
    assert get_policy(custom)['spec']['migManager']['config']['name'] == MIG_CM
    enable_time_slicing(core, custom, operator_ns, SHARED_NODES, replicas=4, cm_name=DP_CM, labels={})
    create_namespace(core, WORKLOAD_NS)
    core.create_namespaced_pod(WORKLOAD_NS, gpu_pod('trainer', 'a100-0', {'nvidia.com/mig-3g.20gb': '1'}))
    wait_until('GPU pod', lambda: core.read_namespaced_pod('trainer', WORKLOAD_NS).status.phase == 'Running', 60)
    for name, meta in (('gpu-quota', MANAGED), ('foreign', {})):
        core.create_namespaced_resource_quota(WORKLOAD_NS, client.V1ResourceQuota(
            metadata=client.V1ObjectMeta(name=name, labels=meta),
            spec=client.V1ResourceQuotaSpec(hard={'requests.nvidia.com/gpu': '4'})))
    wait_quiet(core)
    yield
    core.delete_namespace(WORKLOAD_NS)


# ---------------------------------------------------------------------------------------- tests

BAD = [
    ({'reset_nodes': ['a100-0', 'nope-7']}, 'node(s) not found: nope-7'),
    ({'reset_nodes': ['a100-0']}, 'GPU nodes outside the reset still use: h100-0 (nvidia.com/mig.config=all-1g.10gb)'),
    ({'reset_max_unavailable': '0%'}, 'max_unavailable'),
    ({'reset_operator_namespace': 'elsewhere'}, 'not found'),
]


@pytest.mark.parametrize('extra,fragment', BAD)
def test_bad_input_fails_before_writing(testbed, core, custom, operator_ns, reset_vars, extra, fragment):
    before = snapshot(core, custom, operator_ns)
    rc, results, raw = run_role(testbed.kubeconfig, 'reset', dict(reset_vars, **extra))
    assert rc != 0
    assert fragment in raw, raw[-3000:]
    assert snapshot(core, custom, operator_ns) == before


def test_check_mode_writes_nothing(testbed, core, custom, operator_ns, reset_vars):
    before = snapshot(core, custom, operator_ns)
    rc, results, raw = run_role(testbed.kubeconfig, 'reset', reset_vars, check=True)
    assert rc == 0, raw[-3000:]
    changed = changed_tasks(results)
    assert 'apply | Roll the MIG nodes back to all-disabled' in changed and 'apply | Roll the shared nodes back to unshared' in changed
    assert 'apply | Remove the custom configs from the ClusterPolicy' in changed
    assert snapshot(core, custom, operator_ns) == before


def test_reset_returns_the_fleet_to_all_disabled_and_unshared(testbed, core, custom, operator_ns, reset_vars):
    rc, results, raw = run_role(testbed.kubeconfig, 'reset', reset_vars)
    assert rc == 0, raw[-4000:]
    for name in GPU_NODES:
        node = core.read_node(name)
        lab = node.metadata.labels
        assert lab.get('nvidia.com/mig.config', 'all-disabled') == 'all-disabled', (name, lab)
        if 'nvidia.com/mig.config' in lab:
            assert lab['nvidia.com/mig.config.state'] == 'success', name
        assert 'nvidia.com/device-plugin.config' not in lab, name
        assert lab.get('nvidia.com/gpu.replicas') == '1' and lab.get('nvidia.com/gpu.sharing-strategy') == 'none', name
        assert not node.spec.unschedulable, '%s left cordoned' % name
        assert not [k for k in node.metadata.annotations or {} if k.startswith('gpuops.gpu/rollout')], name
    assert core.read_node('a100-0').status.allocatable['nvidia.com/gpu'] == '8'
    assert core.read_node('t4-0').status.allocatable['nvidia.com/gpu'] == '1'
    # the GPU pod was evicted (drained) before a100-0 was relabelled
    assert not [p for p in core.list_namespaced_pod(WORKLOAD_NS).items if p.metadata.name == 'trainer']
    spec = get_policy(custom)['spec']
    assert 'config' not in spec['migManager'] and 'config' not in spec['devicePlugin'], spec
    cms = [c.metadata.name for c in core.list_namespaced_config_map(operator_ns).items]
    assert MIG_CM not in cms  # created by gpuops.gpu: deleted
    assert DP_CM in cms  # not ours: left in place, with a note
    assert any(DP_CM in n and 'left in place' in n for n in results['Show what is left in place']['msg'])
    assert sorted(q.metadata.name for q in core.list_namespaced_resource_quota(WORKLOAD_NS).items) == [
        'foreign', 'gpu-quota']

    before = snapshot(core, custom, operator_ns)
    rc, results, raw = run_role(testbed.kubeconfig, 'reset', reset_vars)
    assert rc == 0, raw[-3000:]
    assert changed_tasks(results) == [], changed_tasks(results)
    assert snapshot(core, custom, operator_ns) == before
    rc, results, raw = run_role(testbed.kubeconfig, 'reset', reset_vars, check=True)
    assert rc == 0 and changed_tasks(results) == [], raw[-3000:]


def test_reset_quotas_deletes_only_gpuops_quotas(testbed, core, reset_vars):
    rc, results, raw = run_role(testbed.kubeconfig, 'reset', dict(reset_vars, reset_quotas=True))
    assert rc == 0, raw[-3000:]
    assert changed_tasks(results) == ['apply | Delete the gpuops.gpu ResourceQuotas']
    assert [q.metadata.name for q in core.list_namespaced_resource_quota(WORKLOAD_NS).items] == ['foreign']
    rc, results, raw = run_role(testbed.kubeconfig, 'reset', dict(reset_vars, reset_quotas=True))
    assert rc == 0 and changed_tasks(results) == [], raw[-3000:]
