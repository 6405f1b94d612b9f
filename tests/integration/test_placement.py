"""gpuops.gpu.gpu_node_placement on the virtual GPU cluster: taints on nodes (KWOK) and MachineSet
templates (real machine.openshift.io schema), tolerations on the NodeFeatureDiscovery (real
nfd.openshift.io schema), the operator Subscription and the ClusterPolicy — and the REAL
gpu-operator rendering the daemonsets tolerations into its operand DaemonSets."""

import json

import pytest
from kubernetes import client

from ansible_run import changed_tasks, run_role
from conftest import wait_until
from policy_helpers import CP, ensure_cluster_policy
from role_cases import assert_failed, failures

GPU_NS = 'gpu-operator'
NFD_NS = 'openshift-nfd'
MACHINE_NS = 'openshift-machine-api'
OWNED = 'gpuops.gpu/owned-taints'
A100 = ['a100-0', 'a100-1']
GPU_TAINT = {'key': 'nvidia.com/gpu', 'effect': 'NoSchedule'}
DEDICATED = {'key': 'dedicated', 'value': 'gpu', 'effect': 'NoExecute'}
FOREIGN = {'key': 'example.com/maintenance', 'value': 'planned', 'effect': 'NoSchedule'}
GPU_TOL = {'key': 'nvidia.com/gpu', 'operator': 'Exists', 'effect': 'NoSchedule'}
DEDICATED_TOL = {'key': 'dedicated', 'operator': 'Exists', 'effect': 'NoExecute'}
MASTER_TOL = {'key': 'node-role.kubernetes.io/master', 'operator': 'Exists', 'effect': 'NoSchedule'}
G = {'nfd': ('nfd.openshift.io', 'v1', 'nodefeaturediscoveries'),
     'sub': ('operators.coreos.com', 'v1alpha1', 'subscriptions'),
     'ms': ('machine.openshift.io', 'v1beta1', 'machinesets'),
     'cp': CP}
BASE = {'gpu_node_placement_operator_namespace': GPU_NS,
        'gpu_node_placement_node_selector': 'gpuops.dev/node-group=a100',
        'gpu_node_placement_machineset_selector': 'gpuops.dev/accelerator=a100',
        'gpu_node_placement_taints': [GPU_TAINT, DEDICATED],
        'gpu_node_placement_tolerations': [MASTER_TOL]}


def namespaced(custom, key, namespace, name=None, body=None, patch=None):
    group, version, plural = G[key]
    if body is not None:
        return custom.create_namespaced_custom_object(group, version, namespace, plural, body)
    if patch is not None:
        return custom.patch_namespaced_custom_object(group, version, namespace, plural, name, patch)
    return custom.get_namespaced_custom_object(group, version, namespace, plural, name)


@pytest.fixture(scope='module', autouse=True)
def layers(core, custom):
    """The three layer objects as the install roles leave them, a foreign taint, a GPU MachineSet."""
    for ns in (NFD_NS, MACHINE_NS):
        core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns)))
    namespaced(custom, 'nfd', NFD_NS, body={
        'apiVersion': 'nfd.openshift.io/v1', 'kind': 'NodeFeatureDiscovery',
        'metadata': {'name': 'nfd-instance'},
        'spec': {'operand': {'servicePort': 12000}, 'workerConfig': {'configData': 'core:\n  sleepInterval: 60s\n'}}})
    namespaced(custom, 'sub', GPU_NS, body={
        'apiVersion': 'operators.coreos.com/v1alpha1', 'kind': 'Subscription',
        'metadata': {'name': 'gpu-operator-certified'},
        'spec': {'name': 'gpu-operator-certified', 'channel': 'v25.10', 'source': 'certified-operators',
                 'sourceNamespace': 'openshift-marketplace', 'installPlanApproval': 'Manual',
                 'config': {'tolerations': [MASTER_TOL]}}})
    for name, labels in (('gpu-a100', {'gpuops.dev/accelerator': 'a100'}), ('workers', {})):
        namespaced(custom, 'ms', MACHINE_NS, body={
            'apiVersion': 'machine.openshift.io/v1beta1', 'kind': 'MachineSet',
            'metadata': {'name': name, 'labels': labels},
            'spec': {'replicas': 0,
                     'selector': {'matchLabels': {'machine.openshift.io/cluster-api-machineset': name}},
                     'template': {'metadata': {'labels': {'machine.openshift.io/cluster-api-machineset': name}},
                                  'spec': {'providerSpec': {'value': {'instanceType': 'p4d.24xlarge'}},
                                           'taints': [FOREIGN]}}}})
    core.patch_node('a100-1', {'spec': {'taints': [FOREIGN]}})
    ensure_cluster_policy(custom)


def node_taints(core, name):
    """The node's taints (without the node.kubernetes.io/* ones controllers add, e.g. the cordon of the
    operator's driver upgrade controller) and our ownership annotation."""
    node = core.read_node(name)
    return [dict((k, v) for k, v in t.to_dict().items() if v is not None and k != 'time_added')
            for t in node.spec.taints or [] if not t.key.startswith('node.kubernetes.io/')], \
        (node.metadata.annotations or {}).get(OWNED)


def snapshot(core, custom):
    out = {}
    for name in A100 + ['h100-0']:
        out[name] = node_taints(core, name)
    out['nfd'] = namespaced(custom, 'nfd', NFD_NS, 'nfd-instance')['spec']
    out['sub'] = namespaced(custom, 'sub', GPU_NS, 'gpu-operator-certified')['spec']
    for ms in ('gpu-a100', 'workers'):
        obj = namespaced(custom, 'ms', MACHINE_NS, ms)
        out[ms] = (obj['spec']['template']['spec'].get('taints'), obj['metadata'].get('annotations'))
    out['cp'] = custom.get_cluster_custom_object(*G['cp'], 'gpu-cluster-policy')['spec']['daemonsets']
    return json.loads(json.dumps(out, default=str))


def test_check_mode_writes_nothing(testbed, core, custom):
    before = snapshot(core, custom)
    rc, results, raw = run_role(testbed.kubeconfig, 'gpu_node_placement', BASE, check=True, diff=True)
    assert rc == 0, raw[-3000:]
    assert snapshot(core, custom) == before


def test_bad_inputs_fail_before_writing(testbed, core, custom):
    cases = {
        'bad_effect': {'gpu_node_placement_taints': [{'key': 'nvidia.com/gpu', 'effect': 'NoSchedul'}]},
        'unknown_node': {'gpu_node_placement_nodes': ['a100-9']},
        'missing_layer_object': {'gpu_node_placement_nfd_namespace': 'no-nfd-here'},
        'foreign_conflict': {'gpu_node_placement_taints': [dict(FOREIGN, value='other')]},
    }
    before = snapshot(core, custom)
    found, raw = failures(testbed.kubeconfig, 'gpu_node_placement', BASE, cases)
    expected = {'bad_effect': 'effect must be one of', 'unknown_node': 'node a100-9 does not exist', 'missing_layer_object': 'no NodeFeatureDiscovery found',
                'foreign_conflict': 'not ours'}
    assert_failed(found, raw, expected, 'Check ')
    assert snapshot(core, custom) == before


def operand_pods(core, node):
    return [p for p in core.list_namespaced_pod(GPU_NS, field_selector='spec.nodeName=' + node).items
            if p.metadata.name.startswith('nvidia-device-plugin-daemonset') and p.status.phase == 'Running'
            and not p.metadata.deletion_timestamp]


def test_taints_and_tolerations_consistent_then_idempotent(testbed, core, custom, apps, namespace):
    # a pod that does not tolerate the NoExecute taint: the real taint manager evicts it
    core.create_namespaced_pod(namespace, client.V1Pod(
        metadata=client.V1ObjectMeta(name='victim'),
        spec=client.V1PodSpec(node_name='a100-0', containers=[client.V1Container(name='c', image='busybox')])))
    wait_until('device-plugin pod running on a100-0', lambda: operand_pods(core, 'a100-0'), 60, 1)
    rc, results, raw = run_role(testbed.kubeconfig, 'gpu_node_placement', BASE)
    assert rc == 0, raw[-3000:]
    # the operand DaemonSets tolerated the NoExecute taint before it was added: their pods survive
    assert operand_pods(core, 'a100-0')
    wait_until('the non-tolerating pod evicted by the NoExecute taint', lambda: not [
        p for p in core.list_namespaced_pod(namespace).items if not p.metadata.deletion_timestamp], 60, 1)
    # taints: ours added, the foreign one kept, ownership recorded, other nodes untouched
    assert node_taints(core, 'a100-0') == ([GPU_TAINT, DEDICATED], '["dedicated:NoExecute","nvidia.com/gpu:NoSchedule"]')
    assert node_taints(core, 'a100-1')[0] == [FOREIGN, GPU_TAINT, DEDICATED]
    assert node_taints(core, 'h100-0') == ([], None)
    ms = namespaced(custom, 'ms', MACHINE_NS, 'gpu-a100')
    assert ms['spec']['template']['spec']['taints'] == [FOREIGN, GPU_TAINT, DEDICATED]
    assert namespaced(custom, 'ms', MACHINE_NS, 'workers')['spec']['template']['spec']['taints'] == [FOREIGN]
    # the same tolerations on all three layers, existing ones kept, nvidia.com/gpu always there
    wanted = [MASTER_TOL, GPU_TOL, DEDICATED_TOL]
    nfd = namespaced(custom, 'nfd', NFD_NS, 'nfd-instance')['spec']['operand']['workerTolerations']
    sub = namespaced(custom, 'sub', GPU_NS, 'gpu-operator-certified')['spec']['config']['tolerations']
    cp = custom.get_cluster_custom_object(*G['cp'], 'gpu-cluster-policy')['spec']['daemonsets']['tolerations']

    def key(toleration):
        return json.dumps(toleration, sort_keys=True)
    assert sorted(map(key, nfd)) == sorted(map(key, sub)) == sorted(map(key, cp)) == sorted(map(key, wanted))

    def rendered():  # the real operator renders them into its operand DaemonSets
        ds = apps.read_namespaced_daemon_set('nvidia-device-plugin-daemonset', GPU_NS)
        tolerations = [dict((k, v) for k, v in t.to_dict().items() if v is not None)
                       for t in ds.spec.template.spec.tolerations or []]
        return all(t in tolerations for t in (GPU_TOL, DEDICATED_TOL))
    wait_until('device-plugin DaemonSet tolerating the GPU taints', rendered, 60, 1)

    # second run: no change
    before = snapshot(core, custom)
    rc, results, raw = run_role(testbed.kubeconfig, 'gpu_node_placement', BASE)
    assert rc == 0 and changed_tasks(results) == [], raw[-3000:]
    assert snapshot(core, custom) == before


def test_absent_keeps_foreign_taints_and_tolerations(testbed, core, custom):
    variables = dict(BASE, gpu_node_placement_state='absent')
    rc, results, raw = run_role(testbed.kubeconfig, 'gpu_node_placement', variables)
    assert rc == 0, raw[-3000:]
    assert node_taints(core, 'a100-0') == ([], None)
    assert node_taints(core, 'a100-1') == ([FOREIGN], None)
    ms = namespaced(custom, 'ms', MACHINE_NS, 'gpu-a100')
    assert ms['spec']['template']['spec']['taints'] == [FOREIGN]
    cp = custom.get_cluster_custom_object(*G['cp'], 'gpu-cluster-policy')['spec']['daemonsets']['tolerations']
    assert GPU_TOL in cp and DEDICATED_TOL in cp


# --- gpuops.gpu.openshift_ai on the same cluster: profiles tolerating the taints above ---------------------------
# AcceleratorProfile / HardwareProfile are stand-in CRDs of the testbed (tests/testbed/vcluster/standins.py).

AI_NS = 'redhat-ods-applications'
AI = {'accelerator': ('dashboard.opendatahub.io', 'v1', 'acceleratorprofiles'),
      'hardware': ('infrastructure.opendatahub.io', 'v1', 'hardwareprofiles')}
# the placement role's taints are what the profiles tolerate when openshift_ai_taints is not set
AI_BASE = {'openshift_ai_namespace': AI_NS, 'gpu_node_placement_taints': [GPU_TAINT, DEDICATED],
           'openshift_ai_kind': 'accelerator_profile'}
USER_PROFILE = {'apiVersion': 'dashboard.opendatahub.io/v1', 'kind': 'AcceleratorProfile',
                'metadata': {'name': 'team-a-gpu'},
                'spec': {'displayName': 'Team A', 'enabled': True, 'identifier': 'nvidia.com/gpu', 'tolerations': []}}


def profiles(custom, kind='accelerator'):
    items = custom.list_namespaced_custom_object(*AI[kind][:2], AI_NS, AI[kind][2])['items']
    return dict((p['metadata']['name'], p) for p in items)


def advertised(core):
    """GPU resources with a non-zero allocatable on some node, as the cluster reports them."""
    out = set()
    for node in core.list_node().items:
        out |= {k for k, v in (node.status.allocatable or {}).items()
                if (k in ('nvidia.com/gpu', 'nvidia.com/gpu.shared') or k.startswith('nvidia.com/mig-')) and int(v) > 0}
    return out


def test_openshift_ai_check_mode_and_bad_inputs_write_nothing(testbed, core, custom):
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=AI_NS)))
    custom.create_namespaced_custom_object(*AI['accelerator'][:2], AI_NS, AI['accelerator'][2], USER_PROFILE)
    rc, results, raw = run_role(testbed.kubeconfig, 'openshift_ai', AI_BASE, check=True, diff=True)
    assert rc == 0, raw[-3000:]
    assert 'create gpuops-gpu (nvidia.com/gpu)' in raw  # the plan is printed
    assert list(profiles(custom)) == ['team-a-gpu']
    cases = {'clash': {'openshift_ai_name_prefix': 'team-a'},
             'not_advertised': {'openshift_ai_resources': ['nvidia.com/mig-7g.80gb']}}
    found, raw = failures(testbed.kubeconfig, 'openshift_ai', AI_BASE, cases)
    assert_failed(found, raw, {'clash': 'is not managed by gpuops.gpu', 'not_advertised': 'no node advertises'},
                  'Check ')
    assert list(profiles(custom)) == ['team-a-gpu'] and not profiles(custom, 'hardware')


def test_openshift_ai_one_profile_per_resource_then_no_change(testbed, core, custom):
    rc, results, raw = run_role(testbed.kubeconfig, 'openshift_ai', AI_BASE)
    assert rc == 0, raw[-3000:]
    got = profiles(custom)
    ours = dict((n, p) for n, p in got.items() if n != 'team-a-gpu')
    resources = advertised(core)
    assert 'nvidia.com/gpu' in resources
    assert sorted(p['spec']['identifier'] for p in ours.values()) == sorted(resources)
    for profile in ours.values():
        assert profile['metadata']['labels'] == {'app.kubernetes.io/managed-by': 'gpuops.gpu'}
        assert profile['spec']['enabled'] is True
        assert profile['spec']['tolerations'] == [GPU_TOL, DEDICATED_TOL]
    assert got['team-a-gpu']['spec'] == USER_PROFILE['spec']
    # second run: no change
    rc, results, raw = run_role(testbed.kubeconfig, 'openshift_ai', AI_BASE)
    assert rc == 0 and changed_tasks(results) == [], raw[-3000:]
    assert profiles(custom) == got


def test_openshift_ai_hardware_profile_round_trip_and_absent_removes_only_ours(testbed, core, custom):
    """openshift_ai_kind left to auto: the cluster serves infrastructure.opendatahub.io/v1 HardwareProfile (as Open
    Data Hub / OpenShift AI 3 do), so HardwareProfiles are written, in v1."""
    hw = dict((k, v) for k, v in AI_BASE.items() if k != 'openshift_ai_kind')
    hw['openshift_ai_resources'] = ['nvidia.com/gpu']
    rc, results, raw = run_role(testbed.kubeconfig, 'openshift_ai', hw)
    assert rc == 0 and changed_tasks(results) == ['apply | Write the profiles'], raw[-3000:]
    rc, results, raw = run_role(testbed.kubeconfig, 'openshift_ai', hw)  # the API server's copy reads as unchanged
    assert rc == 0 and changed_tasks(results) == [], raw[-3000:]
    spec = profiles(custom, 'hardware')['gpuops-gpu']['spec']
    assert spec['identifiers'][0]['identifier'] == 'nvidia.com/gpu'
    assert spec['scheduling'] == {'type': 'Node', 'node': {'tolerations': [GPU_TOL, DEDICATED_TOL]}}
    for variables in (dict(AI_BASE, openshift_ai_state='absent'), dict(hw, openshift_ai_state='absent')):
        rc, results, raw = run_role(testbed.kubeconfig, 'openshift_ai', variables)
        assert rc == 0, raw[-3000:]
    assert list(profiles(custom)) == ['team-a-gpu'] and not profiles(custom, 'hardware')
