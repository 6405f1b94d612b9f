"""The gpuops.gpu.mig role on the virtual GPU cluster, with the real gpu-operator reconciling the
ClusterPolicy NVIDIA ships as its OLM example: custom configs → ConfigMap → ClusterPolicy → rollout."""


import pytest
import yaml

from ansible_run import changed_tasks, facts_diff, node_facts, run_role
from conftest import gpu_pod, wait_until
from policy_helpers import CP, ensure_cluster_policy

NS = 'gpu-operator'
CM = 'gpuops-mig-parted-config'
VARS = {
    'mig_operator_namespace': NS,
    'mig_strategy': 'mixed',
    'mig_custom_configs': {
        'a100-3g-2x1g': [{'devices': 'all', 'mig-enabled': True,
                          'mig-devices': {'3g.20gb': 1, '2g.10gb': 1, '1g.5gb': 2}}],
        'a100-per-index': [{'devices': [0, 1, 2, 3], 'mig-enabled': True, 'mig-devices': {'1g.5gb': 7}},
                           {'devices': [4, 5, 6, 7], 'mig-enabled': False}],
    },
    'mig_assignments': [{'nodes': ['a100-0'], 'config': 'a100-3g-2x1g'},
                        {'nodes': ['a100-1'], 'config': 'a100-per-index'},
                        {'selector': {'gpuops.dev/node-group': 'h100'}, 'config': 'all-1g.10gb'}],
    'mig_poll_interval': 0.3,
    'mig_verify_timeout': 60,
    'mig_state_timeout': 60,
}
HAND_ON = 'Hand the plan on to the approval and the apply job (set_stats gpuops_plan)'
APPROVED = {}  # the plan the check-mode run handed on (an AWX workflow's plan job), approved as it is


@pytest.fixture(scope='module', autouse=True)
def cluster_policy(core, custom):
    ensure_cluster_policy(custom)
    wait_until('GFD labels on the MIG nodes', lambda: all((core.read_node(n).metadata.labels or {}).get(
        'nvidia.com/gpu.product') for n in ('a100-0', 'a100-1', 'h100-0', 'h100-1')), 180, 1)


def snapshot(core, custom):
    nodes = node_facts(core)
    cms = dict((c.metadata.name, c.metadata.resource_version) for c in core.list_namespaced_config_map(NS).items)
    policy = custom.get_cluster_custom_object(*CP, 'gpu-cluster-policy')
    return nodes, cms, policy['spec']


def test_check_mode_writes_nothing(testbed, core, custom):
    before = snapshot(core, custom)
    rc, results, raw = run_role(testbed.kubeconfig, 'mig', VARS, check=True)
    assert rc == 0, raw[-3000:]
    assert results['Roll the MIG configs out to the node groups']['changed'] is True
    plan = results['Roll the MIG configs out to the node groups']['plan']
    assert sorted(e['node'] for b in plan for e in b['nodes']) == ['a100-0', 'a100-1', 'h100-0', 'h100-1']
    after = snapshot(core, custom)
    assert facts_diff(before[0], after[0]) == []
    assert after[1:] == before[1:]
    handed = results[HAND_ON]['ansible_stats']['data']['gpuops_plan']
    assert handed['kind'] == 'mig' and handed['cluster']['uid'] == core.read_namespace('kube-system').metadata.uid
    assert [[n['node'] for n in b['nodes']] for b in handed['changes']['batches']] == [
        [e['node'] for e in b['nodes']] for b in plan]
    APPROVED['mig'] = handed


def test_an_apply_of_another_plan_or_on_another_cluster_writes_nothing(testbed, core, custom):
    """The apply job of a workflow refuses, before any write, a plan that is not the approved one and a cluster
    that is not the workflow's, saying what differs."""
    before = snapshot(core, custom)
    fewer = dict(VARS, mig_assignments=VARS['mig_assignments'][:1], gpuops_plan=APPROVED['mig'])
    rc, _results, raw = run_role(testbed.kubeconfig, 'mig', fewer)
    assert rc != 0 and 'the mig plan changed since it was approved' in raw, raw[-3000:]
    approved, now = raw.split('Approved: ')[1].split('Now: ')[:2]
    assert 'h100-0' in approved and 'h100-0' not in now.split('\n')[0]
    elsewhere = dict(VARS, gpuops_plan=APPROVED['mig'], gpuops_cluster={'uid': 'uid-of-another-cluster'})
    rc, _results, raw = run_role(testbed.kubeconfig, 'mig', elsewhere)
    assert rc != 0 and "inventory (gpuops_cluster) names uid-of-another-cluster; nothing was changed" in raw, raw[-3000:]
    after = snapshot(core, custom)
    assert facts_diff(before[0], after[0]) == [] and after[1:] == before[1:]


def test_role_applies_then_is_idempotent(testbed, core, custom):
    """The approved plan of the check-mode run is applied (the workflow's apply job)."""
    rc, results, raw = run_role(testbed.kubeconfig, 'mig', dict(VARS, gpuops_plan=APPROVED['mig']), diff=True)
    assert rc == 0, raw[-3000:]
    cm = core.read_namespaced_config_map(CM, NS)
    document = yaml.safe_load(cm.data['config.yaml'])
    assert set(VARS['mig_custom_configs']) <= set(document['mig-configs'])
    assert 'all-disabled' in document['mig-configs'] and 'all-1g.10gb' in document['mig-configs']
    spec = custom.get_cluster_custom_object(*CP, 'gpu-cluster-policy')['spec']
    assert spec['mig']['strategy'] == 'mixed'
    assert spec['migManager']['config'] == {'name': CM, 'default': 'all-disabled'}
    alloc = dict((n, core.read_node(n).status.allocatable) for n in ('a100-0', 'a100-1', 'h100-0'))
    assert alloc['a100-0']['nvidia.com/mig-3g.20gb'] == '8' and alloc['a100-0']['nvidia.com/mig-1g.5gb'] == '16'
    assert alloc['a100-1']['nvidia.com/mig-1g.5gb'] == '28' and alloc['a100-1']['nvidia.com/gpu'] == '4'
    assert alloc['h100-0']['nvidia.com/mig-1g.10gb'] == '56'
    rc, again, raw = run_role(testbed.kubeconfig, 'mig', VARS)
    assert rc == 0, raw[-3000:]
    assert changed_tasks(again) == [], changed_tasks(again)


def test_back_to_all_disabled(testbed, core):
    variables = dict(VARS, mig_assignments=[{'label_selector': 'gpuops.dev/pool=training', 'config': 'all-disabled'}])
    rc, _results, raw = run_role(testbed.kubeconfig, 'mig', variables)
    assert rc == 0, raw[-3000:]
    for name in ('a100-0', 'a100-1', 'h100-0', 'h100-1'):
        node = core.read_node(name)
        assert node.metadata.labels['nvidia.com/mig.config'] == 'all-disabled'
        assert node.status.allocatable['nvidia.com/gpu'] == '8'
        assert not node.spec.unschedulable


@pytest.mark.parametrize('override,fragment', [
    ({'mig_custom_configs': {'bad': [{'devices': 'all', 'mig-enabled': True, 'mig-devices': {'9g.99gb': 1}}]},
      'mig_assignments': [{'nodes': ['a100-0'], 'config': 'bad'}]}, '9g.99gb'),
    ({'mig_custom_configs': {'bad': [{'devices': 'all', 'mig-enabled': 'yes please'}]}}, 'mig-enabled'),
    ({'mig_strategy': 'diagonal'}, 'diagonal'),
    ({'mig_assignments': [{'nodes': ['a100-0'], 'config': 'a100-3g-2x1g'}], 'mig_strategy': 'single'}, 'single'),
    ({'mig_cluster_policy_name': 'nope'}, 'ClusterPolicy'),
])
def test_bad_input_fails_before_writing(testbed, core, custom, override, fragment):
    before = snapshot(core, custom)
    rc, _results, raw = run_role(testbed.kubeconfig, 'mig', dict(VARS, **override))
    assert rc != 0
    assert fragment in raw, raw[-3000:]
    after = snapshot(core, custom)
    assert facts_diff(before[0], after[0]) == []
    assert after[1:] == before[1:]


# ---------------------------------------------------------------------------
# MIG from demand (mig_demand): plan, show, fail before writing when unmeetable, roll out
# ---------------------------------------------------------------------------

DEMAND_VARS = {
    'mig_operator_namespace': NS,
    'mig_strategy': 'mixed',
    'mig_poll_interval': 0.3,
    'mig_verify_timeout': 60,
    'mig_state_timeout': 60,
}
PLAN_TASK = 'demand | Show the plan (node, from -> to, capacity delta, pods affected)'


def pending_pod(name, limits):
    """A pod the scheduler places (no nodeName), asking for ``limits``."""
    return {'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': name},
            'spec': {'terminationGracePeriodSeconds': 0,
                     'tolerations': [{'key': 'nvidia.com/gpu', 'operator': 'Exists', 'effect': 'NoSchedule'}],
                     'containers': [{'name': 'cuda', 'image': 'nvcr.io/nvidia/cuda:12.4.0-base-ubi9',
                                     'resources': {'limits': limits}}]}}


def unschedulable(core, namespace, name):
    conditions = core.read_namespaced_pod(name, namespace).status.conditions or []
    return any(c.type == 'PodScheduled' and c.reason == 'Unschedulable' for c in conditions)


def test_demand_unmeetable_fails_before_writing(testbed, core, custom):
    before = snapshot(core, custom)
    demand = '{"nvidia.com/mig-3g.40gb": 500}'        # JSON text, as an AWX survey answers
    rc, _results, raw = run_role(testbed.kubeconfig, 'mig', dict(DEMAND_VARS, mig_demand=demand))
    assert rc != 0
    assert 'the demand cannot be met by this pool; nothing was changed' in raw, raw[-3000:]
    assert 'nvidia.com/mig-3g.40gb: ' in raw and 'short (demand 500, the best plan gives 32)' in raw, raw[-3000:]
    after = snapshot(core, custom)
    assert facts_diff(before[0], after[0]) == []
    assert after[1:] == before[1:]


def test_pending_pods_run_after_one_demand_run(testbed, core, custom, namespace):
    core.create_namespaced_pod(namespace, gpu_pod('busy', 'a100-0'))     # a running GPU pod on a node that stays
    wait_until('the running GPU pod', lambda: core.read_namespaced_pod('busy', namespace).status.phase == 'Running', 60)
    busy_uid = core.read_namespaced_pod('busy', namespace).metadata.uid
    names = ['infer-%d' % i for i in range(3)]
    for name in names:
        core.create_namespaced_pod(namespace, pending_pod(name, {'nvidia.com/mig-3g.40gb': '1'}))
    wait_until('the MIG pods to be pending', lambda: all(unschedulable(core, namespace, n) for n in names), 60)
    variables = dict(DEMAND_VARS, mig_demand_from_pending=True)        # the demand: running + Pending pods

    before = snapshot(core, custom)
    rc, results, raw = run_role(testbed.kubeconfig, 'mig', variables, check=True)
    assert rc == 0, raw[-3000:]
    assert any('-> all-3g.40gb' in line for line in results[PLAN_TASK]['msg']), results[PLAN_TASK]['msg']
    shown = results['demand | Show the demand']['msg']
    assert shown['pending pods'] == ['%s/%s' % (namespace, n) for n in names], shown
    assert shown['demand']['nvidia.com/mig-3g.40gb'] == 3 and shown['demand']['nvidia.com/gpu'] >= 1, shown
    assert facts_diff(before[0], snapshot(core, custom)[0]) == [], 'check mode wrote to the nodes'

    rc, results, raw = run_role(testbed.kubeconfig, 'mig', variables)
    assert rc == 0, raw[-3000:]

    def all_running():
        return all(core.read_namespaced_pod(n, namespace).status.phase == 'Running' for n in names)
    wait_until('the MIG pods to run', all_running, 120, 1)
    configs = dict((n, core.read_node(n).metadata.labels.get('nvidia.com/mig.config'))
                   for n in ('a100-0', 'a100-1', 'h100-0', 'h100-1'))
    assert list(configs.values()).count('all-3g.40gb') == 1, configs    # the fewest changes: one H100 node
    assert core.read_namespaced_pod('busy', namespace).metadata.uid == busy_uid, 'a pod on an untouched node moved'

    rc, again, raw = run_role(testbed.kubeconfig, 'mig', variables)
    assert rc == 0, raw[-3000:]
    assert changed_tasks(again) == [], changed_tasks(again)
    assert any('no node changes' in line for line in again[PLAN_TASK]['msg']), again[PLAN_TASK]['msg']


def test_demand_from_resource_quotas_in_check_mode(testbed, core, custom, namespace):
    """mig_demand_quota_namespaces: the namespace's requests.nvidia.com/mig-3g.40gb hard limit is the demand."""
    have = sum(int((n.status.allocatable or {}).get('nvidia.com/mig-3g.40gb', 0)) for n in core.list_node().items)
    wanted = have + 1                                  # more than the pool advertises: a node must change
    core.create_namespaced_resource_quota(namespace, {
        'apiVersion': 'v1', 'kind': 'ResourceQuota', 'metadata': {'name': 'mig'},
        'spec': {'hard': {'requests.nvidia.com/mig-3g.40gb': str(wanted), 'requests.cpu': '4'}}})
    before = snapshot(core, custom)
    rc, results, raw = run_role(testbed.kubeconfig, 'mig', dict(DEMAND_VARS, mig_demand_quota_namespaces=[namespace]),
                                check=True)
    assert rc == 0, raw[-3000:]
    shown = results['demand | Show the demand']['msg']
    assert shown['demand'] == {'nvidia.com/mig-3g.40gb': wanted} and shown['quotas'] == [namespace + '/mig'], shown
    rows = results[PLAN_TASK]['msg']
    assert any(r.startswith('h100-') and 'mig-3g.40gb:+' in r for r in rows), rows
    assert not any(r.startswith('a100-') for r in rows), rows
    after = snapshot(core, custom)
    assert facts_diff(before[0], after[0]) == [], 'check mode wrote to the nodes'
    assert after[1:] == before[1:]
