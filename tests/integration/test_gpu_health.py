"""GPU nodes that go bad, on the small virtual GPU cluster (an A100 node, a T4 node): the simulated device plugin
marks one of a100-0's GPUs unhealthy (gpusim.gpuops.dev/unhealthy-gpus: allocatable drops below capacity, an
XidCriticalError Event), and the gpu_health role takes exactly that node out of service (check mode plans it,
apply cordons it, records the reason and moves its GPU pod off; t4-0 and its pod stay as they are; a second run
changes nothing), then, after the simulated repair, returns it to service. Nothing else on any node changes.
While another run (a MIG rollout) holds the rollout lock, the quarantine is refused before any write, naming that
run and its purpose; check mode still plans and reports the lock; the lock is released after the apply."""

import datetime
import json
import os

from kubernetes import client

from ansible_run import changed_tasks, facts_diff, node_facts, run_role
from conftest import REPO, create_namespace, gpu_pod, wait_until

TESTBED_CONFIG = os.path.join(REPO, 'tests', 'testbed', 'configs', 'tiny.yaml')
BAD, GOOD = 'a100-0', 't4-0'
UNHEALTHY = 'gpusim.gpuops.dev/unhealthy-gpus'
ANN = 'gpuops.gpu/gpu-health'
TASK = 'Find the GPU nodes with unhealthy GPUs and apply the policy'
GPU = 'nvidia.com/gpu'
LEASE = 'gpuops-gpu-rollout'


def allocatable(core, name):
    return (core.read_node(name).status.allocatable or {}).get(GPU)


def pods(core, ns):
    return sorted((p.metadata.name, p.spec.node_name) for p in core.list_namespaced_pod(ns).items
                  if not p.metadata.deletion_timestamp)


def health(testbed, policy, check=False, fails=False, **variables):
    """(the module's result, every task's result) of one run of the role."""
    variables.update(gpu_health_policy=policy,
                     gpu_health_operator_namespace=testbed.config['cluster'].get('operator_namespace'))
    rc, results, raw = run_role(testbed.kubeconfig, 'gpu_health', variables, check=check, diff=True)
    assert (rc != 0) == fails, raw[-4000:]
    return results[TASK], results


def hold_lock(coordination, ns, holder):
    """Another run (a MIG rollout on both nodes) holds the rollout lock now, for ten minutes."""
    now = datetime.datetime.now(datetime.timezone.utc)
    return coordination.create_namespaced_lease(ns, client.V1Lease(
        metadata=client.V1ObjectMeta(name=LEASE, annotations={
            'gpuops.gpu/lock-purpose': 'mig_rollout of 2 node(s)', 'gpuops.gpu/lock-nodes': '%s,%s' % (BAD, GOOD),
            'gpuops.gpu/lock-who': 'ops@ctl pid 7'}),
        spec=client.V1LeaseSpec(holder_identity=holder, lease_duration_seconds=600, acquire_time=now,
                                renew_time=now)))


def lease_of(coordination, ns):
    try:
        return coordination.read_namespaced_lease(LEASE, ns)
    except client.exceptions.ApiException as exc:
        if exc.status == 404:
            return None
        raise


def other_changes(core, before):
    """What differs on the nodes from ``before``, once it is one line (our record on the returned node)."""
    diff = facts_diff(before, node_facts(core))
    return diff if len(diff) == 1 else None


def test_unhealthy_gpu_node_is_quarantined_then_returned_and_nothing_else_changes(testbed, core, api_client,
                                                                                 operator_ns):
    coordination = client.CoordinationV1Api(api_client)
    wait_until('GPUs advertised', lambda: allocatable(core, BAD) == '8' and allocatable(core, GOOD) == '1', 120)
    ns = create_namespace(core, 'gpu-health-it')
    core.create_namespaced_pod(ns, gpu_pod('train', BAD))
    core.create_namespaced_pod(ns, gpu_pod('serve', GOOD))
    wait_until('pods running', lambda: all(p.status.phase == 'Running' for p in core.list_namespaced_pod(ns).items)
               and len(core.list_namespaced_pod(ns).items) == 2, 60)
    before = node_facts(core)
    core.patch_node(BAD, {'metadata': {'annotations': {UNHEALTHY: '1'}}})
    wait_until('one GPU of %s unhealthy' % BAD, lambda: allocatable(core, BAD) == '7', 30, 0.2)

    plan = health(testbed, 'quarantine', check=True)[0]
    assert plan['unhealthy'] == [BAD] and plan['changed']
    [action] = plan['actions']
    assert (action['node'], action['action'], action['would_evict']) == (BAD, 'quarantine', [ns + '/train'])
    assert 'nvidia.com/gpu allocatable 7 < capacity 8' in action['reason']
    assert sorted(plan['diff']['after']) == [BAD] and plan['diff']['after'][BAD]['unschedulable'] is True
    assert plan['lock']['state'] == 'free' and plan['lock']['lease'] == '%s/%s' % (operator_ns, LEASE)
    assert facts_diff(before, node_facts(core)) == [], 'check mode wrote'

    # a MIG rollout holds the rollout lock: refused before any write, naming it; check mode still plans
    version = hold_lock(coordination, operator_ns, 'mig-run-7').metadata.resource_version
    try:
        refused = health(testbed, 'quarantine', fails=True)[0]
        for words in ('holds the rollout lock', 'mig_rollout of 2 node(s)', 'ops@ctl pid 7', 'mig-run-7',
                      'nothing was changed'):
            assert words in refused['msg'], refused['msg']
        assert refused['changed'] is False and facts_diff(before, node_facts(core)) == []
        held = health(testbed, 'quarantine', check=True)[0]
        assert held['lock']['state'] == 'held' and held['unhealthy'] == [BAD]
        assert lease_of(coordination, operator_ns).metadata.resource_version == version, 'the lock was written'
    finally:
        coordination.delete_namespaced_lease(LEASE, operator_ns)

    applied = health(testbed, 'quarantine')[0]
    assert applied['changed'] and applied['evicted'] == {BAD: [ns + '/train']}
    assert pods(core, ns) == [('serve', GOOD)]
    assert lease_of(coordination, operator_ns) is None, 'the rollout lock was not released'
    record = json.loads(core.read_node(BAD).metadata.annotations[ANN])
    assert record['state'] == 'quarantined' and record['cordoned'] is True and record['since']
    assert 'nvidia.com/gpu allocatable 7 < capacity 8' in record['reason']
    # the cordon, our record, and the taint Kubernetes' node lifecycle controller puts on every cordoned node
    assert sorted(facts_diff(before, node_facts(core))) == [
        "%s annotation %s: None -> %r" % (BAD, ANN, core.read_node(BAD).metadata.annotations[ANN]),
        "%s taints: [] -> [('node.kubernetes.io/unschedulable', None, 'NoSchedule')]" % BAD,
        '%s unschedulable: False -> True' % BAD]

    again, results = health(testbed, 'quarantine')
    assert not again['changed'] and changed_tasks(results) == [], again
    early = health(testbed, 'return')[0]
    assert early['actions'] == [] and not early['changed'], 'returned while still broken'

    core.patch_node(BAD, {'metadata': {'annotations': {UNHEALTHY: None}}})   # the repair
    wait_until('%s repaired' % BAD, lambda: allocatable(core, BAD) == '8', 30, 0.2)
    back = health(testbed, 'return')[0]
    assert [(a['node'], a['action']) for a in back['actions']] == [(BAD, 'return')] and back['changed']
    assert not core.read_node(BAD).spec.unschedulable
    assert json.loads(core.read_node(BAD).metadata.annotations[ANN])['state'] == 'returned'
    # the XID Event of the failure is older than the return: a new quarantine run leaves the node alone
    after, results = health(testbed, 'quarantine')
    assert after['unhealthy'] == [] and not after['changed'] and changed_tasks(results) == []
    diff = wait_until('the unschedulable taint gone', lambda: other_changes(core, before), 30, 0.2)
    assert diff[0].startswith('%s annotation %s: None -> ' % (BAD, ANN)), diff
    assert pods(core, ns) == [('serve', GOOD)]
    core.delete_namespace(ns)
