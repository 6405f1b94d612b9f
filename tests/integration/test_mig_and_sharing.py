"""MIG and GPU sharing on the same node, on the virtual GPU cluster (the real apiserver and gpu-operator, KWOK
nodes, the simulated MIG manager, device plugin and GFD of tests/testbed/gpusim, whose plugin applies both the
MIG layout and the time-slicing profile).

Both orders: a sharing rollout, then a MIG rollout on the time-sliced node (its 56 MIG devices are advertised
4 times: 224); a MIG rollout, then a sharing rollout on the MIG node. Each ends with the node uncordoned, at
both targets, with the allocatable the two together give, and a re-run of both changes nothing. Then a
MIG rollout that fails on a time-sliced node: a sharing rollout refuses that node and keeps the MIG markers,
and the MIG rollout, run again, resumes and finishes it. MIG strategy single (the ClusterPolicy's)."""

import pytest

from ansible_run import facts_diff, include, node_facts, run_play
from conftest import wait_until
from policy_helpers import CP, ensure_cluster_policy

NS = 'gpu-operator'
POLICY = 'gpu-cluster-policy'
DP = 'nvidia.com/device-plugin.config'
MIG = 'nvidia.com/mig.config'
A100 = ['a100-0', 'a100-1']
ANN_PREFIX = 'gpuops.gpu/'
TS4 = {'sharing': {'timeSlicing': {'resources': [{'name': 'nvidia.com/gpu', 'replicas': 4}]}}}
SHARING_ROLE = {'sharing_operator_namespace': NS, 'sharing_poll_interval': 0.3, 'sharing_state_timeout': 60,
                'sharing_verify_timeout': 60, 'sharing_profiles': {'ts-4': TS4, 'unshared': {}},
                'sharing_assignments': [{'nodes': ['a100-0'], 'profile': 'ts-4'}]}


def labels(core, name):
    return core.read_node(name).metadata.labels or {}


def alloc(core, name):
    return dict((k, v) for k, v in (core.read_node(name).status.allocatable or {}).items()
                if k.startswith('nvidia.com/') and v != '0')


def markers(core, name):
    return dict((k, v) for k, v in (core.read_node(name).metadata.annotations or {}).items()
                if k.startswith(ANN_PREFIX) and 'rollout' in k)


def module(kubeconfig, name, **args):
    """One gpuops.gpu.<name> task (ignore_errors); its result."""
    args.update(operator_namespace=NS, poll_interval=0.3, state_timeout=60, verify_timeout=60)
    task = {'name': name, 'gpuops.gpu.' + name: args, 'register': 'r', 'ignore_errors': True}
    _rc, results, raw = run_play(kubeconfig, [task])
    assert name in results, raw[-3000:]
    return results[name]


def mig(kubeconfig, node, config):
    return module(kubeconfig, 'mig_rollout', assignments=[{'nodes': [node], 'config': config}])


def share(kubeconfig, node, profile):
    return module(kubeconfig, 'sharing_rollout', assignments=[{'nodes': [node], 'profile': profile}])


def assert_at(core, name, config, profile, allocatable):
    node = core.read_node(name)
    assert not node.spec.unschedulable, '%s left cordoned' % name
    assert markers(core, name) == {}, name
    lab = node.metadata.labels
    assert (lab.get(MIG), lab.get('nvidia.com/mig.config.state'), lab.get(DP)) == (config, 'success', profile)
    assert alloc(core, name) == allocatable


def assert_rerun_changes_nothing(kubeconfig, core, name, config, profile):
    before = node_facts(core, [name])
    for res in (mig(kubeconfig, name, config), share(kubeconfig, name, profile)):
        assert res.get('failed') is not True and res['changed'] is False and res['batches'] == [], res
    assert facts_diff(before, node_facts(core, [name])) == []


@pytest.fixture(scope='module', autouse=True)
def operator_ready(testbed, core, custom):
    """The operator's ClusterPolicy with MIG strategy single, reconciled, and GFD labels on the A100 nodes."""
    ensure_cluster_policy(custom, POLICY)
    custom.patch_cluster_custom_object(*CP, POLICY, {'spec': {'mig': {'strategy': 'single'}}})
    wait_until('GFD reporting MIG strategy single',
               lambda: all(labels(core, n).get('nvidia.com/mig.strategy') == 'single' for n in A100), 120)


# ------------------------------------------------------------------------------------------ tests

def test_sharing_then_mig_on_the_same_node(testbed, core):
    rc, _results, raw = run_play(testbed.kubeconfig, [include('sharing', SHARING_ROLE)])
    assert rc == 0, raw[-4000:]
    assert alloc(core, 'a100-0') == {'nvidia.com/gpu': '32'}  # 8 A100 x replicas 4
    res = mig(testbed.kubeconfig, 'a100-0', 'all-1g.5gb')
    assert res.get('failed') is not True, res.get('msg')
    assert res['changed'] is True
    assert_at(core, 'a100-0', 'all-1g.5gb', 'ts-4', {'nvidia.com/gpu': '224'})  # 8 x 7 MIG devices x 4
    assert labels(core, 'a100-0')['nvidia.com/gpu.replicas'] == '4'
    assert_rerun_changes_nothing(testbed.kubeconfig, core, 'a100-0', 'all-1g.5gb', 'ts-4')


def test_mig_then_sharing_on_the_same_node(testbed, core):
    res = mig(testbed.kubeconfig, 'a100-1', 'all-3g.20gb')
    assert res.get('failed') is not True, res.get('msg')
    assert alloc(core, 'a100-1') == {'nvidia.com/gpu': '16'}  # 8 x 2 MIG devices
    res = share(testbed.kubeconfig, 'a100-1', 'ts-4')
    assert res.get('failed') is not True, res.get('msg')
    assert res['changed'] is True
    assert_at(core, 'a100-1', 'all-3g.20gb', 'ts-4', {'nvidia.com/gpu': '64'})
    assert_rerun_changes_nothing(testbed.kubeconfig, core, 'a100-1', 'all-3g.20gb', 'ts-4')


def test_sharing_keeps_the_markers_of_a_failed_mig_rollout(testbed, core):
    core.patch_node('a100-1', {'metadata': {'annotations': {'gpusim.gpuops.dev/inject': 'fail'}}})
    try:
        res = mig(testbed.kubeconfig, 'a100-1', 'all-1g.5gb')
        assert res.get('failed') is True and 'node a100-1' in res['msg'], res
        held = markers(core, 'a100-1')
        assert held[ANN_PREFIX + 'rollout-phase'] == 'failed' and core.read_node('a100-1').spec.unschedulable
        res = share(testbed.kubeconfig, 'a100-1', 'unshared')
        assert res.get('failed') is True and res['changed'] is False, res
        assert 'held by an unfinished gpuops.gpu.mig_rollout' in res['msg'] and 'phase failed' in res['msg'], res
        assert markers(core, 'a100-1') == held and core.read_node('a100-1').spec.unschedulable
        assert labels(core, 'a100-1')[DP] == 'ts-4'
    finally:
        core.patch_node('a100-1', {'metadata': {'annotations': {'gpusim.gpuops.dev/inject': None}}})
    res = mig(testbed.kubeconfig, 'a100-1', 'all-1g.5gb')
    assert res.get('failed') is not True, res.get('msg')
    assert_at(core, 'a100-1', 'all-1g.5gb', 'ts-4', {'nvidia.com/gpu': '224'})
    assert_rerun_changes_nothing(testbed.kubeconfig, core, 'a100-1', 'all-1g.5gb', 'ts-4')
