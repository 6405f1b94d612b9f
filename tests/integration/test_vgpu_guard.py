"""The vGPU guard of gpuops.gpu.mig_rollout and gpuops.gpu.sharing_rollout on the virtual GPU cluster: nodes
that carry an NVIDIA vGPU label (nvidia.com/vgpu.present=true, set by GFD on a vGPU guest;
nvidia.com/gpu.workload.config=vm-vgpu, the operator's vGPU host) are refused before any write, with the
nodes and the label named, and changed when allow_vgpu_nodes is set.

"Before any write" is checked on what a write would change — every label, annotation, cordon and taint of
every node (node_facts; a node's resourceVersion also moves with the KWOK heartbeats), the device-plugin
ConfigMap's resourceVersion and the ClusterPolicy's generation."""

import pytest

from ansible_run import facts_diff, node_facts, run_play
from conftest import wait_until
from policy_helpers import CP, POLICY_NAME, enable_time_slicing, ensure_cluster_policy, wait_quiet

NS = 'gpu-operator'
CM = 'gpuops-device-plugin-config'
GUEST, HOST = 'a100-0', 'a100-1'
VGPU = {GUEST: ('nvidia.com/vgpu.present', 'true'), HOST: ('nvidia.com/gpu.workload.config', 'vm-vgpu')}
COMMON = {'operator_namespace': NS, 'poll_interval': 0.3, 'state_timeout': 90, 'verify_timeout': 90,
          'max_unavailable': 2}


def labels(core, name):
    return core.read_node(name).metadata.labels or {}


@pytest.fixture(scope='module', autouse=True)
def vgpu_nodes(testbed, core, custom):
    """A ClusterPolicy, a device-plugin ConfigMap with one time-slicing profile 'ts' (no node on it yet),
    and the two A100 nodes labelled as a vGPU guest and a vGPU host."""
    ensure_cluster_policy(custom)
    wait_until('GFD labels', lambda: all(labels(core, n).get('nvidia.com/gpu.product') for n in VGPU), 180)
    enable_time_slicing(core, custom, NS, [], replicas=4, cm_name=CM, key='ts')
    for name, (key, value) in VGPU.items():
        core.patch_node(name, {'metadata': {'labels': {key: value}}})
    wait_quiet(core)


def rollout(kubeconfig, module, check=False, **args):
    task = {'name': 'rollout', 'gpuops.gpu.' + module: dict(COMMON, **args), 'register': 'r',
            'ignore_errors': True}
    rc, results, raw = run_play(kubeconfig, [task], check=check)
    assert 'rollout' in results, raw[-3000:]
    return results['rollout']


def snapshot(core, custom):
    return (node_facts(core), core.read_namespaced_config_map(CM, NS).metadata.resource_version,
            custom.get_cluster_custom_object(*CP, POLICY_NAME)['metadata']['generation'])


def assert_refused(res, change):
    assert res.get('failed') is True and res.get('changed') is False, res
    msg = res['msg']
    assert 'nothing was changed' in msg, msg
    for name, (key, value) in VGPU.items():
        assert '%s refused on vGPU node(s) %s (label %s=%s)' % (change, name, key, value) in msg, msg
    assert 'allow_vgpu_nodes: true' in msg, msg


ASSIGN_MIG = [{'nodes': sorted(VGPU), 'config': 'all-1g.5gb'}]
ASSIGN_SHARING = [{'nodes': sorted(VGPU), 'profile': 'ts'}]


@pytest.mark.parametrize('module, assignments, change', [
    ('mig_rollout', ASSIGN_MIG, 'MIG'), ('sharing_rollout', ASSIGN_SHARING, 'GPU sharing')])
def test_vgpu_nodes_refused_before_any_write(testbed, core, custom, module, assignments, change):
    before = snapshot(core, custom)
    for check in (True, False):
        assert_refused(rollout(testbed.kubeconfig, module, check=check, assignments=assignments), change)
    after = snapshot(core, custom)
    assert facts_diff(before[0], after[0]) == []
    assert after[1:] == before[1:]


def test_allowed_vgpu_nodes_are_changed_and_then_at_target(testbed, core):
    res = rollout(testbed.kubeconfig, 'mig_rollout', assignments=[{'nodes': [GUEST], 'config': 'all-1g.5gb'}],
                  allow_vgpu_nodes=True)
    assert res.get('failed') is not True, res.get('msg')
    assert res['changed'] is True
    assert labels(core, GUEST).get('nvidia.com/mig.config.state') == 'success'

    res = rollout(testbed.kubeconfig, 'sharing_rollout', assignments=[{'nodes': [HOST], 'profile': 'ts'}],
                  allow_vgpu_nodes=True)
    assert res.get('failed') is not True, res.get('msg')
    assert res['changed'] is True
    assert labels(core, HOST).get('nvidia.com/device-plugin.config') == 'ts'

    # nodes already at their target are never refused: a re-run without the option changes nothing
    for module, assignments in (('mig_rollout', [{'nodes': [GUEST], 'config': 'all-1g.5gb'}]),
                                ('sharing_rollout', [{'nodes': [HOST], 'profile': 'ts'}])):
        res = rollout(testbed.kubeconfig, module, assignments=assignments)
        assert res.get('failed') is not True, res.get('msg')
        assert res['changed'] is False, res
    for name in VGPU:
        assert not core.read_node(name).spec.unschedulable, '%s left cordoned' % name
