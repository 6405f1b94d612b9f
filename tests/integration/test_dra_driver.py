"""gpuops.gpu.dra, part driver: NVIDIA's standalone DRA driver chart installed with kubernetes.core.helm on the
virtual GPU cluster. NVIDIA's chart is not available here, so the chart is dra_helpers' stand-in (same name, the
kubelet-plugin DaemonSet and values keys of the upstream chart) given as a local chart_ref; gpusim's kubelet plugin
publishes ResourceSlices where the DaemonSet's pods run.

One cluster (configs/dra.yaml: a100-0, t4-0, t4-1, cpu-0), in order: bad setups refused with their message and
nothing written; check mode writes nothing; labelled mode -> the DaemonSet selects gpuops.gpu/dra-kubelet-plugin and
slices appear only on the labelled node; a second run changes nothing; all mode -> every NVIDIA node gets slices."""

import os

import pytest

from ansible_run import changed_tasks, run_role
from conftest import REPO, wait_until
from dra_helpers import CHART_NAME, PLUGIN_LABEL, slices, wait_pools, write_chart
from role_cases import assert_failed, failures

TESTBED_CONFIG = os.path.join(REPO, 'tests', 'testbed', 'configs', 'dra.yaml')
NAMESPACE = 'gpuops-dra-driver'
RELEASE = 'dra-driver'
NODE_LABEL = 'gpuops.gpu/dra-kubelet-plugin'
INSTALL = 'driver_apply | Install or upgrade NVIDIA\'s DRA driver chart'
GPU_NODES = ['a100-0', 't4-0', 't4-1']


@pytest.fixture(scope='module')
def variables(helm, tmp_path_factory):
    chart = write_chart(tmp_path_factory.mktemp('chart'))
    return {'dra_parts': ['driver'], 'dra_driver_chart_ref': chart, 'dra_driver_chart_version': '',
            'dra_driver_release_name': RELEASE, 'dra_driver_namespace': NAMESPACE, 'dra_driver_helm_binary': helm,
            # the stand-in is v25.12.0's chart: its gates are the ones checked
            'dra_driver_image': 'nvcr.io/nvidia/k8s-dra-driver-gpu:v25.12.0',
            'dra_driver_feature_gates': ['MPSSupport'], 'dra_driver_nodes': 'labelled'}


def releases(core):
    return sorted(s.metadata.labels.get('name') for s in core.list_namespaced_secret(
        NAMESPACE, label_selector='owner=helm').items) if namespaces(core) else []


def namespaces(core):
    return [n.metadata.name for n in core.list_namespace().items if n.metadata.name == NAMESPACE]


def daemonset(apps):
    items = apps.list_namespaced_daemon_set(NAMESPACE).items
    return items[0] if items else None


def test_bad_setups_are_refused_before_any_write(testbed, core, custom, variables):
    mps = {'name': 'mps-half', 'namespace': 'team-a', 'device_class': 'gpu.nvidia.com',
           'sharing': {'strategy': 'MPS', 'active_thread_percentage': 50}}
    got, raw = failures(testbed.kubeconfig, 'dra', variables, {
        'unknown_gate': {'dra_driver_feature_gates': ['MPSSupport', 'DeviceMetadata']},
        'mps_gate_off': {'dra_driver_feature_gates': ['TimeSlicingSettings'], 'dra_claim_templates': [mps]}})
    assert_failed(got, raw, {
        'unknown_gate': "the DRA driver v25.12 does not know the feature gate 'DeviceMetadata'",
        'mps_gate_off': 'dra_claim_templates[0] (mps-half) asks for sharing with MPS'}, task='driver_preflight | Check')
    assert 'add MPSSupport to dra_driver_feature_gates' in got['mps_gate_off']['msg']
    assert namespaces(core) == [] and slices(custom) == {}


def test_check_mode_writes_nothing(testbed, core, custom, variables):
    rc, results, raw = run_role(testbed.kubeconfig, 'dra', variables, check=True, diff=True)
    assert rc == 0, raw[-3000:]
    assert INSTALL in changed_tasks(results)
    diff = [r['msg'] for name, r in results.items() if name.endswith("Show the change of the release's values (--diff)")]
    assert diff and diff[0]['before'] is None
    assert diff[0]['after']['kubeletPlugin'] == {'nodeSelector': {NODE_LABEL: 'true'}}
    assert diff[0]['after']['featureGates'] == {'MPSSupport': True}
    assert namespaces(core) == [] and slices(custom) == {}


def test_labelled_mode_places_the_plugin_on_labelled_nodes_only(testbed, core, apps, custom, variables):
    wait_until("NFD's PCI label on the GPU nodes", lambda: all(
        (core.read_node(n).metadata.labels or {}).get('feature.node.kubernetes.io/pci-10de.present') == 'true'
        for n in GPU_NODES), 60)
    core.patch_node('t4-0', {'metadata': {'labels': {NODE_LABEL: 'true'}}})
    rc, results, raw = run_role(testbed.kubeconfig, 'dra', variables)
    assert rc == 0, raw[-3000:]
    assert INSTALL in changed_tasks(results)
    assert releases(core) == [RELEASE]
    ds = daemonset(apps)
    assert ds.metadata.name == CHART_NAME + '-kubelet-plugin'
    assert ds.spec.template.spec.node_selector == {NODE_LABEL: 'true'}
    assert ds.spec.template.spec.containers[0].image == 'nvcr.io/nvidia/k8s-dra-driver-gpu:v25.12.0'
    pools = wait_pools(custom, ['t4-0'], 60)
    assert len(pools['t4-0'][0]['spec']['devices']) == 1
    pods = core.list_namespaced_pod(NAMESPACE, label_selector=PLUGIN_LABEL).items
    assert sorted(p.spec.node_name for p in pods) == ['t4-0']


def test_a_second_run_changes_nothing(testbed, variables):
    rc, results, raw = run_role(testbed.kubeconfig, 'dra', variables)
    assert rc == 0, raw[-3000:]
    assert changed_tasks(results) == []


def test_all_mode_places_the_plugin_on_every_nvidia_node(testbed, apps, custom, variables):
    rc, results, raw = run_role(testbed.kubeconfig, 'dra', dict(variables, dra_driver_nodes='all'))
    assert rc == 0, raw[-3000:]
    assert INSTALL in changed_tasks(results)
    assert not daemonset(apps).spec.template.spec.node_selector
    pools = wait_pools(custom, GPU_NODES, 60)               # not cpu-0: the chart's NFD affinity
    assert len(pools['a100-0'][0]['spec']['devices']) == 8
