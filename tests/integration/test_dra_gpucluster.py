"""gpuops.gpu.dra, part gpucluster: NVIDIA's DRA driver through the GPU operator's GPUCluster (nvidia.com/v1alpha1,
GPU operator >= 26.7) on the virtual GPU cluster. The operator binary of the testbed is v25.10.1, so the GPUCluster
CRD is the testbed's stand-in and gpusim plays the v26.7 operator's part (gpusim/gpucluster.py): the DRA stack's
node deploy labels, the status, the kubelet plugin that publishes ResourceSlices on the labelled nodes.

One cluster, in order: a ClusterPolicy present -> refused with every reason at once, nothing written; the
ClusterPolicy gone -> check mode writes nothing; the write -> the singleton as typed, GPU nodes get the DRA deploy
labels (the device plugin's swept, so it stops advertising nvidia.com/gpu), slices appear, status ready; a second
run changes nothing; the GPUCluster deleted -> the slices go.

Then the change window of a running fleet (part window, gpuops.gpu.dra_window) on the same cluster: a ClusterPolicy
that deploys the driver is refused with nothing written; check mode plans the steps and the workload that moves,
writing nothing; the window saves the ClusterPolicy, drains every GPU node, swaps the ClusterPolicy for the
GPUCluster, waits for every node's slice and uncordons; a second run changes nothing; the way back restores the
ClusterPolicy exactly and the device plugin serves every node again. The test bed plays the v26.7 operator's node
labelling for the ClusterPolicy too (configs/dra.yaml simulation.clusterpolicy_node_labels)."""

import base64
import json
import os

import pytest
from kubernetes import client

from ansible_run import changed_tasks, node_facts, run_play, run_role
from cluster_policy_example import clusterpolicy_example
from conftest import REPO, create_namespace, gpu_pod, wait_until
from dra_helpers import slices, wait_pools
from policy_helpers import wait_quiet

# an A100 node, two T4 nodes, a CPU node, no operator binary: the simulated device plugin and GFD run without a
# ClusterPolicy and follow the deploy labels while a ClusterPolicy or a GPUCluster exists
TESTBED_CONFIG = os.path.join(REPO, 'tests', 'testbed', 'configs', 'dra.yaml')
GPU_NODES = ['a100-0', 't4-0', 't4-1']
GROUP, VERSION, PLURAL, NAME = 'nvidia.com', 'v1alpha1', 'gpuclusters', 'gpu-cluster'
DEPLOY = 'nvidia.com/gpu.deploy.'
DRA_LABELS = [DEPLOY + k for k in ('driver', 'dra-driver', 'dra-validator', 'dcgm-dra', 'dcgm-exporter-dra')]
VARIABLES = {'dra_parts': ['gpucluster'], 'dra_driver_feature_gates': ['MPSSupport'],
             'dra_gpucluster_driver_repository': 'registry.example.com/nvidia',
             'dra_gpucluster_driver_image': 'dra-driver-nvidia-gpu', 'dra_gpucluster_driver_version': 'v0.5.0',
             'dra_gpucluster_kubelet_plugin': {'env': {'LOG_VERBOSITY': '4'}}}


def gpuclusters(custom):
    return custom.list_cluster_custom_object(GROUP, VERSION, PLURAL)['items']


@pytest.fixture(scope='module')
def policy(custom, core):
    """A ClusterPolicy (NVIDIA's OLM example) and a device-plugin deploy label on a100-0 (what an operator that ran
    a ClusterPolicy leaves), for the refusal; the test after it deletes the ClusterPolicy."""
    core.patch_node('a100-0', {'metadata': {'labels': {DEPLOY + 'device-plugin': 'true'}}})
    created = custom.create_cluster_custom_object(GROUP, 'v1', 'clusterpolicies', clusterpolicy_example())
    wait_quiet(core)  # the simulated device plugins follow the deploy labels now
    return created


def test_refused_while_a_cluster_policy_exists_with_every_reason(testbed, custom, core, policy):
    before = node_facts(core)
    variables = dict(VARIABLES, dra_driver_feature_gates=['MPSSupport', 'NoSuchGate'])
    rc, _results, raw = run_role(testbed.kubeconfig, 'dra', variables)
    assert rc != 0
    assert 'GPU operator v26.7 runs one of them' in raw and 'dra_parts [window]' in raw
    assert "unknown DRA driver feature gate 'NoSuchGate'" in raw
    assert gpuclusters(custom) == []
    assert node_facts(core) == before and slices(custom) == {}


def test_check_mode_writes_nothing(testbed, custom, core, policy):
    custom.delete_cluster_custom_object(GROUP, 'v1', 'clusterpolicies', policy['metadata']['name'])
    wait_until('ClusterPolicy gone', lambda: not custom.list_cluster_custom_object(
        GROUP, 'v1', 'clusterpolicies')['items'])
    wait_quiet(core)
    before = node_facts(core)
    rc, results, raw = run_role(testbed.kubeconfig, 'dra', VARIABLES, check=True, diff=True)
    assert rc == 0, raw[-3000:]
    assert 'gpucluster_apply | Write the GPUCluster' in changed_tasks(results)
    assert gpuclusters(custom) == [] and node_facts(core) == before


def test_the_gpucluster_brings_dra_labels_and_slices(testbed, custom, core):
    rc, results, raw = run_role(testbed.kubeconfig, 'dra', VARIABLES)
    assert rc == 0, raw[-3000:]
    assert 'gpucluster_apply | Write the GPUCluster' in changed_tasks(results)
    items = gpuclusters(custom)
    assert [i['metadata']['name'] for i in items] == [NAME]
    driver = items[0]['spec']['draDriver']
    assert (driver['repository'], driver['image'], driver['version']) == (
        'registry.example.com/nvidia', 'dra-driver-nvidia-gpu', 'v0.5.0')
    assert driver['featureGates'] == {'MPSSupport': True}
    assert driver['gpus']['kubeletPlugin']['env'] == [{'name': 'LOG_VERBOSITY', 'value': '4'}]
    assert items[0]['metadata']['labels']['app.kubernetes.io/managed-by'] == 'gpuops.gpu'

    def labelled():
        nodes = {n.metadata.name: n.metadata.labels or {} for n in core.list_node().items}
        return all(nodes[n].get(k) == 'true' for n in GPU_NODES for k in DRA_LABELS) and nodes
    nodes = wait_until('DRA deploy labels on the GPU nodes', labelled, 30)
    assert DEPLOY + 'device-plugin' not in nodes['a100-0']
    # the GPUCluster runs no device plugin: the swept label stops the simulated one
    wait_until('no nvidia.com/gpu advertised on a100-0', lambda: core.read_node(
        'a100-0').status.allocatable.get('nvidia.com/gpu') == '0', 30)
    assert not any(k.startswith(DEPLOY) for k in nodes['cpu-0'])
    pools = wait_pools(custom, GPU_NODES, 60)
    assert len(pools['a100-0'][0]['spec']['devices']) == 8
    wait_until('GPUCluster ready', lambda: (gpuclusters(custom)[0].get('status') or {}).get('state') == 'ready', 30)


def test_a_second_run_changes_nothing(testbed, custom):
    rc, results, raw = run_role(testbed.kubeconfig, 'dra', VARIABLES)
    assert rc == 0, raw[-3000:]
    assert changed_tasks(results) == []


def test_deleting_the_gpucluster_takes_its_slices(testbed, custom):
    custom.delete_cluster_custom_object(GROUP, VERSION, PLURAL, NAME)
    wait_until('the DRA pools gone', lambda: slices(custom) == {}, 60)


# ---------------------------------------------------------------------------------------------- the change window
OPERATOR_NAMESPACE = 'dra-window-it'
SAVED = 'gpuops-gpu-saved-clusterpolicy'
WINDOW = dict(VARIABLES, dra_parts=['window'], dra_cutover_max_unavailable=2, dra_cutover_state_timeout=120,
              dra_cutover_operator_namespace=OPERATOR_NAMESPACE)


def window_view(custom, core):
    """What the window may change: the ClusterPolicies, the GPUClusters, the saved copy, the GPU nodes."""
    policies = custom.list_cluster_custom_object(GROUP, 'v1', 'clusterpolicies')['items']
    saved = [c.metadata.name for c in core.list_namespaced_secret(OPERATOR_NAMESPACE).items
             if c.metadata.name == SAVED]
    nodes = dict((n.metadata.name, (bool(n.spec.unschedulable), sorted(
        k for k in (n.metadata.annotations or {}) if k.startswith('gpuops.gpu/'))))
        for n in core.list_node().items if n.metadata.name in GPU_NODES)
    return {'policies': [p['metadata']['name'] for p in policies], 'gpuclusters': [
        g['metadata']['name'] for g in gpuclusters(custom)], 'saved': saved, 'nodes': nodes}


def saved_policy(core):
    """The ClusterPolicy the window saved (a Secret: its data is base64)."""
    data = core.read_namespaced_secret(SAVED, OPERATOR_NAMESPACE).data['clusterpolicy.json']
    return json.loads(base64.b64decode(data))


def gpu_allocatable(core, name):
    return (core.read_node(name).status.allocatable or {}).get('nvidia.com/gpu')


@pytest.fixture(scope='module')
def running_fleet(custom, core):
    """A ClusterPolicy (NVIDIA's example: it deploys the driver) with a label and an annotation of its own, the
    device plugin serving every GPU node again, and a one-GPU workload on t4-0."""
    policy = clusterpolicy_example()
    policy['metadata'].update(labels={'team': 'platform'}, annotations={'gpuops.dev/owner': 'platform'})
    custom.create_cluster_custom_object(GROUP, 'v1', 'clusterpolicies', policy)
    wait_until('the device plugin serves every GPU node', lambda: all(
        gpu_allocatable(core, n) not in (None, '0') for n in GPU_NODES) and slices(custom) == {}, 60)
    create_namespace(core, OPERATOR_NAMESPACE)
    create_namespace(core, 'dra-window-work')
    core.create_namespaced_pod('dra-window-work', gpu_pod('infer', 't4-0'))
    wait_until('the workload Running', lambda: core.read_namespaced_pod(
        'infer', 'dra-window-work').status.phase == 'Running', 60)
    return policy


def test_window_refuses_a_cluster_policy_that_deploys_the_driver(testbed, custom, core, running_fleet):
    before = window_view(custom, core)
    rc, _results, raw = run_role(testbed.kubeconfig, 'dra', WINDOW)
    assert rc != 0
    assert 'ClusterPolicy gpu-cluster-policy deploys the GPU driver (spec.driver.enabled is not false)' in raw
    assert window_view(custom, core) == before


def test_window_check_mode_plans_and_writes_nothing(testbed, custom, core, running_fleet):
    custom.patch_cluster_custom_object(GROUP, 'v1', 'clusterpolicies', 'gpu-cluster-policy',
                                       {'spec': {'driver': {'enabled': False}}})
    before = window_view(custom, core)
    rc, results, raw = run_role(testbed.kubeconfig, 'dra', WINDOW, check=True, diff=True)
    assert rc == 0, raw[-3000:]
    plan = results['window_preflight | Plan the window and check the cluster and every GPU node before any write '
                   '(check mode)']
    assert [s.split(' ')[0] for s in plan['steps']] == ['save', 'cordon', 'delete', 'create', 'wait']
    assert plan['stack_from'] == 'device-plugin' and sorted(sum(plan['batches'], [])) == sorted(GPU_NODES)
    evicted = dict((e['node'], e['pods_to_evict']) for batch in plan['plan'] for e in batch['nodes'])
    assert evicted['t4-0'] == ['dra-window-work/infer'] and evicted['a100-0'] == []
    workloads = plan['groups'][0]['workloads']
    assert [w['pod'] for w in workloads] == ['dra-window-work/infer']
    assert window_view(custom, core) == before


def test_window_refuses_a_gpucluster_the_api_server_refuses_before_any_write(testbed, custom, core, running_fleet):
    """The module run directly with a GPUCluster the CRD's schema refuses: the server-side dry run fails before the
    ClusterPolicy is saved or any node is cordoned."""
    before = window_view(custom, core)
    task = {'name': 'window', 'gpuops.gpu.dra_window': {
        'stack': 'dra', 'operator_namespace': OPERATOR_NAMESPACE, 'poll_interval': 0.5,
        'gpucluster': {'apiVersion': 'nvidia.com/v1alpha1', 'kind': 'GPUCluster', 'metadata': {'name': NAME},
                       'spec': {'draDriver': {'noSuchField': True}}}}}
    rc, _results, raw = run_play(testbed.kubeconfig, [task])
    assert rc != 0
    assert 'nothing was changed: the API server refuses GPUCluster gpu-cluster (server-side dry run)' in raw
    assert window_view(custom, core) == before


def test_window_stops_before_the_switch_when_a_node_cannot_be_drained(testbed, custom, core, running_fleet):
    """A PodDisruptionBudget keeps the workload on t4-0: the first batch (a100-0, t4-0) is cordoned, t4-0 is held
    with the reason, t4-1 is never touched, and the ClusterPolicy stays: nothing was switched."""
    policy = client.PolicyV1Api(core.api_client)
    policy.create_namespaced_pod_disruption_budget('dra-window-work', {
        'metadata': {'name': 'infer'}, 'spec': {'minAvailable': 1, 'selector': {'matchLabels': {'app': 'infer'}}}})
    try:
        rc, _results, raw = run_role(testbed.kubeconfig, 'dra', dict(WINDOW, dra_cutover_drain_timeout=3))
    finally:
        policy.delete_namespaced_pod_disruption_budget('infer', 'dra-window-work')
    assert rc != 0
    assert 'could not drain t4-0; the switch was not made' in raw
    view = window_view(custom, core)
    assert view['policies'] == ['gpu-cluster-policy'] and view['gpuclusters'] == []
    assert view['nodes']['t4-1'] == (False, []) and view['nodes']['a100-0'][0] is True
    held = core.read_node('t4-0')
    assert held.spec.unschedulable and 'PodDisruptionBudget' in held.metadata.annotations['gpuops.gpu/rollout-reason']
    assert slices(custom) == {}


def test_window_moves_the_fleet_to_dra(testbed, custom, core, running_fleet):
    """The next run resumes the held nodes (the budget is gone) and moves the whole fleet."""
    stored = custom.get_cluster_custom_object(GROUP, 'v1', 'clusterpolicies', 'gpu-cluster-policy')
    rc, results, raw = run_role(testbed.kubeconfig, 'dra', WINDOW)
    assert rc == 0, raw[-3000:]
    assert 'window_apply | Move the whole cluster in one change window to dra' in changed_tasks(results)
    view = window_view(custom, core)
    assert view['policies'] == [] and view['gpuclusters'] == [NAME] and view['saved'] == [SAVED]
    assert view['nodes'] == dict((n, (False, [])) for n in GPU_NODES)  # uncordoned, no markers left
    saved = saved_policy(core)
    assert saved['spec'] == stored['spec'] and saved['metadata']['labels'] == {'team': 'platform'}
    pools = wait_pools(custom, GPU_NODES, 5)  # the window waited for them
    assert len(pools['a100-0'][0]['spec']['devices']) == 8
    assert all(gpu_allocatable(core, n) == '0' for n in GPU_NODES)
    assert 'infer' not in [p.metadata.name for p in core.list_namespaced_pod('dra-window-work').items]


def test_window_second_run_changes_nothing(testbed, custom, core, running_fleet):
    before = window_view(custom, core)
    rc, results, raw = run_role(testbed.kubeconfig, 'dra', WINDOW)
    assert rc == 0, raw[-3000:]
    assert changed_tasks(results) == []
    assert window_view(custom, core) == before


def test_window_back_restores_the_cluster_policy_exactly(testbed, custom, core, running_fleet):
    saved = saved_policy(core)
    rc, results, raw = run_role(testbed.kubeconfig, 'dra', dict(WINDOW, dra_cutover_stack='device-plugin'))
    assert rc == 0, raw[-3000:]
    view = window_view(custom, core)
    assert view['policies'] == ['gpu-cluster-policy'] and view['gpuclusters'] == []
    assert view['nodes'] == dict((n, (False, [])) for n in GPU_NODES)
    restored = custom.get_cluster_custom_object(GROUP, 'v1', 'clusterpolicies', 'gpu-cluster-policy')
    assert restored['spec'] == saved['spec'] and restored['spec']['driver']['enabled'] is False
    assert restored['metadata']['labels'] == {'team': 'platform'}
    assert restored['metadata']['annotations'] == {'gpuops.dev/owner': 'platform'}
    assert slices(custom) == {}
    assert all(gpu_allocatable(core, n) not in (None, '0') for n in GPU_NODES)
    rc, results, raw = run_role(testbed.kubeconfig, 'dra', dict(WINDOW, dra_cutover_stack='device-plugin'))
    assert rc == 0 and changed_tasks(results) == [], raw[-3000:]
