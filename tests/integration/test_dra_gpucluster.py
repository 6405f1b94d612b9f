"""gpuops.gpu.dra, part gpucluster: NVIDIA's DRA driver through the GPU operator's GPUCluster (nvidia.com/v1alpha1,
GPU operator >= 26.7) on the virtual GPU cluster. The operator binary of the testbed is v25.10.1, so the GPUCluster
CRD is the testbed's stand-in and gpusim plays the v26.7 operator's part (gpusim/gpucluster.py): the DRA stack's
node deploy labels, the status, the kubelet plugin that publishes ResourceSlices on the labelled nodes.

One cluster, in order: a ClusterPolicy present -> refused with every reason at once, nothing written; the
ClusterPolicy gone -> check mode writes nothing; the write -> the singleton as typed, GPU nodes get the DRA deploy
labels (the device plugin's swept, so it stops advertising nvidia.com/gpu), slices appear, status ready; a second
run changes nothing; the GPUCluster deleted -> the slices go."""

import os

import pytest

from ansible_run import changed_tasks, node_facts, run_role
from cluster_policy_example import clusterpolicy_example
from conftest import REPO, wait_until
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
    assert 'GPU operator v26.7 runs one of them' in raw and 'use the cutover window' in raw
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
