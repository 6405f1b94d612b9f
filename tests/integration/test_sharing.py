"""gpuops.gpu.sharing (role) and gpuops.gpu.sharing_rollout (module) on the virtual GPU cluster: the real
apiserver and gpu-operator (which rolls its DaemonSets when devicePlugin.config changes), KWOK nodes and
the simulated device plugin / GFD (tests/testbed/gpusim), which - like the real one - only reads a changed
ConfigMap when its pod restarts.

The tests build on each other (one cluster for the module, in file order): cluster-wide time-slicing,
then per node group (time-slicing 10 on A100, unshared H100, MPS renamed on L40S), a second run and a
check-mode run that change nothing, bad inputs that fail before any write, a profile content change that
restarts the plugin, then MIG strategy mixed with time-sliced MIG devices."""

import pytest
import yaml
from kubernetes import client

from ansible_run import include, run_play, run_role, task_results
from conftest import create_namespace, gpu_pod, wait_until
from policy_helpers import CP, ensure_cluster_policy
from role_cases import assert_failed, failure_block, failures

NS = 'gpu-operator'
CM = 'gpuops-device-plugin-config'
POLICY = 'gpu-cluster-policy'
LABEL = 'nvidia.com/device-plugin.config'
HASH = 'gpuops.gpu/device-plugin-config-hash'
GPU_NODES = ['a100-0', 'a100-1', 'h100-0', 'h100-1', 'l40s-0', 't4-0']
DP_APP = 'app=nvidia-device-plugin-daemonset'


def ts(replicas, resource='nvidia.com/gpu'):
    return {'sharing': {'timeSlicing': {'resources': [{'name': resource, 'replicas': replicas}]}}}


MPS_10_RENAMED = {'version': 'v1', 'sharing': {'mps': {'renameByDefault': True, 'resources': [
    {'name': 'nvidia.com/gpu', 'replicas': 10}]}}}
PROFILES = {'inference': ts(4), 'a100-ts-10': ts(10), 'mps-10': MPS_10_RENAMED, 'unshared': {}}
BASE = {'sharing_operator_namespace': NS, 'sharing_poll_interval': 0.3, 'sharing_state_timeout': 60,
        'sharing_verify_timeout': 60, 'sharing_max_unavailable': '50%'}
CLUSTER_WIDE = dict(BASE, sharing_profiles=PROFILES, sharing_default_profile='inference')
PER_GROUP = dict(CLUSTER_WIDE, sharing_assignments=[
    {'selector': {'gpuops.dev/node-group': 'a100'}, 'profile': 'a100-ts-10'},
    {'label_selector': 'gpuops.dev/node-group=h100', 'profile': 'none'},
    {'nodes': ['l40s-0'], 'profile': 'mps-10'}])


# ------------------------------------------------------------------------------------------ helpers

@pytest.fixture(scope='module', autouse=True)
def operator_ready(testbed, core, custom):
    """The operator's ClusterPolicy, reconciled to ready, and GFD labels on every GPU node."""
    ensure_cluster_policy(custom, POLICY)
    wait_until('GFD labels', lambda: all(labels(core, n).get('nvidia.com/gpu.replicas') for n in GPU_NODES), 120)
    wait_until('device-plugin pods', lambda: len(dp_pods(core)) == len(GPU_NODES), 120)


def labels(core, name):
    return core.read_node(name).metadata.labels or {}


def alloc(core, name):
    return dict((k, v) for k, v in (core.read_node(name).status.allocatable or {}).items() if k.startswith('nvidia.com/'))


def dp_pods(core):
    return dict((p.spec.node_name, p.metadata.uid) for p in core.list_namespaced_pod(NS, label_selector=DP_APP).items
                if p.status.phase == 'Running' and not p.metadata.deletion_timestamp)


def plugin_rolled_out(apps):
    """The operator rolled its device-plugin DaemonSet to the current devicePlugin.config everywhere."""
    ds = apps.read_namespaced_daemon_set('nvidia-device-plugin-daemonset', NS).status
    return (ds.desired_number_scheduled == len(GPU_NODES) and ds.updated_number_scheduled == ds.desired_number_scheduled
            and ds.number_available == ds.desired_number_scheduled)


def snapshot(core, custom):
    """What a failed run must not have changed: the ConfigMap, the ClusterPolicy spec, the nodes' sharing state."""
    try:
        cm = core.read_namespaced_config_map(CM, NS).metadata.resource_version
    except client.ApiException:
        cm = None
    policy = custom.get_cluster_custom_object(*CP, POLICY)
    nodes = {}
    for node in core.list_node().items:
        ann = node.metadata.annotations or {}
        nodes[node.metadata.name] = ((node.metadata.labels or {}).get(LABEL), ann.get(HASH), bool(node.spec.unschedulable),
                                     sorted(k for k in ann if k.startswith('gpuops.gpu/rollout')))
    return cm, policy['metadata']['generation'], nodes


def assert_clean(core):
    for name in GPU_NODES:
        node = core.read_node(name)
        assert not node.spec.unschedulable, '%s left cordoned' % name
        assert not [k for k in (node.metadata.annotations or {}) if k.startswith('gpuops.gpu/rollout')], name


# ------------------------------------------------------------------------------------------ tests

def test_cluster_wide_time_slicing(testbed, core, custom, apps):
    rc, results, raw = run_role(testbed.kubeconfig, 'sharing', CLUSTER_WIDE)
    assert rc == 0, raw[-4000:]
    rollout = results['Roll the sharing profiles out to the node groups']
    assert rollout['changed'] is True and sorted(rollout['assignments']) == GPU_NODES
    assert set(rollout['assignments'].values()) == {'default'}
    spec = custom.get_cluster_custom_object(*CP, POLICY)['spec']['devicePlugin']
    assert spec['config'] == {'name': CM, 'default': 'inference'}
    assert spec['mps'] == {'root': '/run/nvidia/mps'}
    assert alloc(core, 't4-0') == {'nvidia.com/gpu': '4'}       # 1 T4 x replicas 4
    assert alloc(core, 'a100-0') == {'nvidia.com/gpu': '32'}    # 8 A100 x 4
    t4 = labels(core, 't4-0')
    assert LABEL not in t4  # follows devicePlugin.config.default
    assert t4['nvidia.com/gpu.replicas'] == '4' and t4['nvidia.com/gpu.sharing-strategy'] == 'time-slicing'
    assert t4['nvidia.com/gpu.product'] == 'Tesla-T4-SHARED'
    assert core.read_node('t4-0').metadata.annotations.get(HASH)
    assert_clean(core)
    wait_until('the operator to roll the device-plugin DaemonSet', lambda: plugin_rolled_out(apps), 120)


def test_per_node_group_time_slicing_mps_and_unshared(testbed, core):
    rc, results, raw = run_role(testbed.kubeconfig, 'sharing', PER_GROUP, diff=True)
    assert rc == 0, raw[-4000:]
    rollout = results['Roll the sharing profiles out to the node groups']
    assert rollout['assignments'] == {'a100-0': 'a100-ts-10', 'a100-1': 'a100-ts-10', 'h100-0': 'none',
                                      'h100-1': 'none', 'l40s-0': 'mps-10', 't4-0': 'default'}
    assert rollout['diff']['after']['a100-0'] == {LABEL: 'a100-ts-10', 'allocatable': {'nvidia.com/gpu': 80}}
    assert 't4-0' not in rollout['diff']['after']  # already at the default
    for name in ('a100-0', 'a100-1'):
        assert alloc(core, name) == {'nvidia.com/gpu': '80'}   # 8 x replicas 10
        assert labels(core, name)[LABEL] == 'a100-ts-10'
        assert labels(core, name)['nvidia.com/gpu.replicas'] == '10'
    for name in ('h100-0', 'h100-1'):
        # the default shares GPUs, so "none" is the unshared profile, not a removed label
        assert labels(core, name)[LABEL] == 'unshared'
        assert alloc(core, name) == {'nvidia.com/gpu': '8'}
        assert labels(core, name)['nvidia.com/gpu.sharing-strategy'] == 'none'
    l40s = labels(core, 'l40s-0')
    assert alloc(core, 'l40s-0') == {'nvidia.com/gpu.shared': '40'}  # MPS, renameByDefault
    assert l40s['nvidia.com/gpu.sharing-strategy'] == 'mps' and l40s['nvidia.com/gpu.replicas'] == '10'
    assert l40s['nvidia.com/gpu.product'] == 'NVIDIA-L40S'  # renamed resources get no -SHARED
    assert alloc(core, 't4-0') == {'nvidia.com/gpu': '4'}
    assert_clean(core)


def test_smoke_fill_on_the_mps_node(testbed, core):
    """The smoke test's fill of an MPS-shared resource: l40s-0 advertises 4 GPUs x 10 MPS replicas as
    nvidia.com/gpu.shared (the real device plugin refuses MPS with MIG strategy mixed, so the smoke test's own
    cluster has no MPS node); the real scheduler binds exactly 40 fill pods of 1 unit and leaves 1 Pending."""
    assert labels(core, 'l40s-0')['nvidia.com/mps.capable'] == 'true'   # GFD's label for an MPS-shared node
    rc, results, raw = run_role(testbed.kubeconfig, 'smoke_test', {
        'smoke_test_fill': True, 'smoke_test_label_selector': 'kubernetes.io/hostname=l40s-0',
        'smoke_test_poll_interval': 0.5, 'smoke_test_timeout': 120, 'smoke_test_stuck_timeout': 30})
    assert rc == 0, raw[-4000:]
    result = results['Run a workload on every GPU resource']
    assert [(c['resource'], c['status']) for c in result['cases']] == [('nvidia.com/gpu.shared', 'passed')]
    case, = result['fill_cases']
    assert (case['node'], case['resource'], case['sharing'], case['replicas']) == (
        'l40s-0', 'nvidia.com/gpu.shared', 'mps', 10)
    assert (case['status'], case['detail']) == ('passed', '40 bound, 1 Pending (Unschedulable); expected 40 and 1')
    assert core.list_pod_for_all_namespaces(label_selector='app.kubernetes.io/name=gpuops-smoke-test').items == []


def test_second_run_and_check_mode_change_nothing(testbed, core, custom):
    before = snapshot(core, custom)
    check = include('sharing', name='check', check_mode=True)
    rc, _results, raw = run_role(testbed.kubeconfig, 'sharing', PER_GROUP, extra_tasks=[check])
    assert rc == 0, raw[-4000:]
    results = task_results(raw)
    assert len(results) > 12, [name for name, _r in results]  # both runs went through every task
    assert [name for name, r in results if r.get('changed')] == [], raw[-3000:]
    rollouts = [r for name, r in results if name == 'apply | Roll the sharing profiles out to the node groups']
    assert len(rollouts) == 2 and all(r['batches'] == [] for r in rollouts), [name for name, _r in results]
    assert snapshot(core, custom) == before


def test_check_mode_plans_a_content_change_and_writes_nothing(testbed, core, custom):
    before, pods = snapshot(core, custom), dp_pods(core)
    changed = dict(PER_GROUP, sharing_profiles=dict(PROFILES, inference=ts(6)))
    rc, results, raw = run_role(testbed.kubeconfig, 'sharing', changed, check=True)
    assert rc == 0, raw[-4000:]
    assert results['Write the device-plugin ConfigMap (one key per profile)']['changed'] is True
    plan = results['Roll the sharing profiles out to the node groups']['plan']
    entries = dict((e['node'], e) for batch in plan for e in batch['nodes'])
    assert sorted(entries) == ['t4-0'], entries  # only the node following the changed default
    assert entries['t4-0']['restart_device_plugin'] is True
    assert entries['t4-0']['expected_allocatable'] == {'nvidia.com/gpu': 6}
    assert snapshot(core, custom) == before and dp_pods(core) == pods
    assert yaml.safe_load(core.read_namespaced_config_map(CM, NS).data['inference']) == dict(ts(4), version='v1')


BAD = [
    ({'sharing_profiles': dict(PROFILES, bad=ts(1))}, 'Check the inputs', 'replicas'),
    ({'sharing_profiles': dict(PROFILES, both={'sharing': {
        'timeSlicing': ts(4)['sharing']['timeSlicing'], 'mps': MPS_10_RENAMED['sharing']['mps']}})},
     'Check the inputs', 'either sharing.timeSlicing or sharing.mps'),
    ({'sharing_assignments': [{'nodes': ['t4-0'], 'profile': 'no-such-profile'}]}, 'Check the node assignments',
     "'no-such-profile' is not a key"),
    ({'sharing_assignments': [{'label_selector': 'gpuops.dev/pool=nothing', 'profile': 'inference'}]},
     'Check the node assignments', 'matches no node'),
    ({'sharing_profiles': dict(PROFILES, none={})}, 'Check the inputs', 'reserved'),
    ({'sharing_default_profile': 'missing'}, 'Check the inputs', "default profile 'missing'"),
    ({'sharing_profiles': dict(PROFILES, **{'mps-60': {'sharing': {'mps': {'resources': [
        {'name': 'nvidia.com/gpu', 'replicas': 60}]}}}}),
      'sharing_assignments': [{'nodes': ['l40s-0'], 'profile': 'mps-60'}]}, 'Check the inputs', 'MPS limit of 48'),
    ({'sharing_profiles': dict((k, v) for k, v in PROFILES.items() if k != 'mps-10'), 'sharing_default_profile': '',
      'sharing_assignments': PER_GROUP['sharing_assignments'][:1]}, 'Check the node assignments',
     'l40s-0 is labelled nvidia.com/device-plugin.config=mps-10'),
    ({'sharing_profiles': {'inference': ts(4), 'a100-ts-10': ts(10)}}, 'Check the node assignments',
     'add an unshared profile'),
    # What NVIDIA's device plugin would crash-loop on, or take as a typo: refused before any write.
    ({'sharing_profiles': dict(PROFILES, huge=ts(10 ** 12))}, 'Check the inputs', 'is more than 256'),
    ({'sharing_profiles': dict(PROFILES, bad={'sharing': {'timeSlicing': {'resources': [
        {'name': 'nvidia.com/gpu', 'replicas': 4, 'rename': None}]}}})}, 'Check the inputs', 'rename is empty (null)'),
    ({'sharing_profiles': dict(PROFILES, bad={'sharing': {'timeSlicing': {'resources': [
        {'name': 'nvidia.com/gpu', 'replicas': 4, 'devices': None}]}}})}, 'Check the inputs', 'devices is empty (null)'),
    ({'sharing_profiles': dict(PROFILES, bad={'sharing': {'timeSlicing': None}})}, 'Check the inputs',
     'sharing.timeSlicing is empty (null)'),
]


def test_bad_inputs_fail_before_any_write(testbed, core, custom):
    before = snapshot(core, custom)
    got, raw = failures(testbed.kubeconfig, 'sharing', PER_GROUP, dict(
        ('bad-%d' % index, variables) for index, (variables, _t, _f) in enumerate(BAD)))
    for index, (_v, task, fragment) in enumerate(BAD):
        assert_failed(got, raw, {'bad-%d' % index: fragment}, task)
    assert snapshot(core, custom) == before


def test_content_change_restarts_the_plugin_and_changes_capacity(testbed, core):
    ns = 'sharing-it'
    create_namespace(core, ns)
    core.create_namespaced_pod(ns, gpu_pod('inference', 't4-0'))
    wait_until('GPU pod running', lambda: core.read_namespaced_pod('inference', ns).status.phase == 'Running', 60)
    pods = dp_pods(core)
    # inference profile 4 -> 6 replicas; the MPS profile goes away and the L40S group becomes unshared
    variables = dict(PER_GROUP, sharing_profiles=dict(((k, v) for k, v in PROFILES.items() if k != 'mps-10'),
                                                      inference=ts(6)),
                     sharing_assignments=PER_GROUP['sharing_assignments'][:2] + [{'nodes': ['l40s-0'], 'profile': ''}])
    rc, results, raw = run_role(testbed.kubeconfig, 'sharing', variables)
    assert rc == 0, raw[-4000:]
    nodes = dict((n['node'], n) for n in results['Roll the sharing profiles out to the node groups']['nodes'])
    assert sorted(nodes) == ['l40s-0', 't4-0'], nodes
    assert nodes['t4-0']['evicted'] == [ns + '/inference']
    assert any('nvidia-device-plugin-daemonset' in p for p in nodes['t4-0']['restarted'])
    assert alloc(core, 't4-0') == {'nvidia.com/gpu': '6'}
    assert labels(core, 't4-0')['nvidia.com/gpu.replicas'] == '6'
    assert alloc(core, 'l40s-0') == {'nvidia.com/gpu': '4'}
    assert labels(core, 'l40s-0')[LABEL] == 'unshared'
    after = dp_pods(core)
    assert after['t4-0'] != pods['t4-0'] and after['l40s-0'] != pods['l40s-0']
    assert all(after[n] == pods[n] for n in ('a100-0', 'a100-1', 'h100-0', 'h100-1'))  # content unchanged there
    assert 'mps-10' not in core.read_namespaced_config_map(CM, NS).data
    assert not [p for p in core.list_namespaced_pod(ns).items if p.metadata.name == 'inference']
    assert_clean(core)
    core.delete_namespace(ns)


def test_time_slicing_of_mig_devices_with_strategy_mixed(testbed, core, custom):
    custom.patch_cluster_custom_object(*CP, POLICY, {'spec': {'mig': {'strategy': 'mixed'}}})
    wait_until('GFD reporting MIG strategy mixed',
               lambda: all(labels(core, n).get('nvidia.com/mig.strategy') == 'mixed' for n in GPU_NODES), 120)
    profiles = dict(((k, v) for k, v in PROFILES.items() if k != 'mps-10'), inference=ts(6),
                    **{'mig-1g-ts-2': ts(2, 'nvidia.com/mig-1g.5gb')})
    variables = dict(PER_GROUP, sharing_profiles=profiles, sharing_assignments=[
        {'nodes': ['a100-0'], 'profile': 'mig-1g-ts-2'}, {'nodes': ['a100-1'], 'profile': 'a100-ts-10'},
        {'label_selector': 'gpuops.dev/node-group in (h100,l40s)', 'profile': 'none'}])
    mig = {'name': 'mig', 'gpuops.gpu.mig_rollout': {
        'assignments': [{'nodes': ['a100-0'], 'config': 'all-1g.5gb'}], 'operator_namespace': NS,
        'poll_interval': 0.3, 'state_timeout': 60, 'verify_timeout': 60}}
    mps_mixed = failure_block('sharing', 'mps-mixed', dict(variables, sharing_profiles=dict(
        profiles, **{'mps-10': MPS_10_RENAMED})))
    rc, results, raw = run_play(testbed.kubeconfig, [mig, mps_mixed, include('sharing', variables)])
    assert rc == 0, raw[-4000:]
    assert results['mig']['changed'] is True
    got = results['record mps-mixed']['ansible_facts']['__cases']
    assert_failed(got, raw, {'mps-mixed': 'mixed'}, 'Check the inputs')
    assert 'mps-10' in got['mps-mixed']['msg'], got
    assert alloc(core, 'a100-0') == {'nvidia.com/mig-1g.5gb': '112'}  # 8 GPUs x 7 x 1g.5gb x replicas 2
    a100 = labels(core, 'a100-0')
    assert a100['nvidia.com/mig-1g.5gb.replicas'] == '2'
    assert a100['nvidia.com/mig-1g.5gb.sharing-strategy'] == 'time-slicing'
    assert alloc(core, 'a100-1') == {'nvidia.com/gpu': '80'}
    assert alloc(core, 't4-0') == {'nvidia.com/gpu': '6'}
    assert_clean(core)
