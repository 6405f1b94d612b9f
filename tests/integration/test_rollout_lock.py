"""The rollout lock on the virtual GPU cluster: a coordination.k8s.io Lease taken by every
disruptive run. Two MIG rollouts at once on overlapping nodes, in two ansible-playbook processes: the
second fails at once naming the holder (lock_timeout 0), or waits and then applies; no node is left
cordoned and every node ends at a requested config. Check mode reports the lock without writing; a
stale lease (a killed run's) is taken over with a warning; the reset role refuses to start while
another run holds the lock.

The fence: a rollout frozen (SIGSTOP) past its lease while another run took the lock over writes nothing
to any node after it resumes, and fails naming the new holder; a Lease stamped a year ahead is taken over
with a warning; two rollouts given different operator_namespace values meet at one lock, in the namespace
the GPU operator reports in its ClusterPolicy."""

import datetime
import json
import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from kubernetes import client

from ansible_run import run_play, run_role
from conftest import create_namespace, read_lease, wait_until
from policy_helpers import ensure_cluster_policy

A100 = ['a100-0', 'a100-1']
LEASE = 'gpuops-gpu-rollout'
ANN = 'gpuops.gpu/'


@pytest.fixture(scope='module')
def coordination(api_client):
    return client.CoordinationV1Api(api_client)


@pytest.fixture(scope='module', autouse=True)
def gpu_nodes_ready(testbed, core):
    wait_until('GFD labels on %s' % A100,
               lambda: all((core.read_node(n).metadata.labels or {}).get('nvidia.com/gpu.product') for n in A100), 180)


def rollout_task(name, operator_ns, **args):
    args.setdefault('operator_namespace', operator_ns)
    args.setdefault('poll_interval', 0.3)
    args.setdefault('verify_timeout', 60)
    args.setdefault('state_timeout', 60)
    return {'name': name, 'gpuops.gpu.mig_rollout': args, 'ignore_errors': True}


def play(kubeconfig, *tasks, check=False):
    rc, results, raw = run_play(kubeconfig, list(tasks), check=check)
    for task in tasks:
        assert task['name'] in results, raw[-3000:]
    return results


def mig_config(core, name):
    labels = core.read_node(name).metadata.labels or {}
    return labels.get('nvidia.com/mig.config'), labels.get('nvidia.com/mig.config.state')


def assert_released_and_clean(core, coordination, ns):
    assert read_lease(coordination, ns) is None, 'the lease was not released'
    for name in A100:
        node = core.read_node(name)
        assert not node.spec.unschedulable, '%s left cordoned' % name
        assert not [k for k in (node.metadata.annotations or {}) if k.startswith(ANN + 'rollout')], name


def test_two_rollouts_at_once_one_fails_naming_the_holder_one_waits_and_applies(
        testbed, core, coordination, operator_ns):
    kc = testbed.kubeconfig
    first = rollout_task('first', operator_ns, assignments=[{'nodes': A100, 'config': 'all-1g.5gb'}])
    at_once = rollout_task('at once', operator_ns, assignments=[{'nodes': ['a100-1'], 'config': 'all-3g.20gb'}])
    waits = rollout_task('waits', operator_ns, assignments=[{'nodes': ['a100-1'], 'config': 'all-3g.20gb'}],
                         lock_timeout=120)
    with ThreadPoolExecutor(3) as pool:
        running = pool.submit(play, kc, first)
        wait_until('the first rollout holds the lock', lambda: read_lease(coordination, operator_ns), 60, 0.1)
        holder = read_lease(coordination, operator_ns)
        assert holder.metadata.annotations[ANN + 'lock-purpose'] == 'mig_rollout of 2 node(s)'
        assert holder.metadata.annotations[ANN + 'lock-nodes'] == 'a100-0,a100-1'
        started = time.monotonic()
        refused = pool.submit(play, kc, at_once).result()['at once']
        refused_after = time.monotonic() - started
        waited = pool.submit(play, kc, waits)
        first_result = running.result()['first']
        waited_result = waited.result()['waits']
    assert refused.get('failed') is True and refused['changed'] is False
    for part in ('holds the rollout lock', 'mig_rollout of 2 node(s)', 'on nodes a100-0,a100-1', 'since ',
                 holder.spec.holder_identity, 'lock_timeout'):
        assert part in refused['msg'], refused['msg']
    assert refused_after < 15, 'lock_timeout 0 must fail at once (%.1fs)' % refused_after
    assert first_result.get('failed') is not True, first_result.get('msg')
    assert waited_result.get('failed') is not True, waited_result.get('msg')
    assert waited_result['changed'] is True and [n['node'] for n in waited_result['nodes']] == ['a100-1']
    # each node at a config one of the runs asked for: a100-0 the first's, a100-1 the one that waited
    assert mig_config(core, 'a100-0') == ('all-1g.5gb', 'success')
    assert mig_config(core, 'a100-1') == ('all-3g.20gb', 'success')
    assert_released_and_clean(core, coordination, operator_ns)


def stamp(seconds_ago):
    return datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=seconds_ago)


def write_lease(coordination, ns, renewed_ago, duration, holder='killed-run-1'):
    body = client.V1Lease(
        metadata=client.V1ObjectMeta(name=LEASE, annotations={
            ANN + 'lock-purpose': 'sharing_rollout of 1 node(s)', ANN + 'lock-nodes': 'a100-0',
            ANN + 'lock-who': 'ci@old-runner pid 4242'}),
        spec=client.V1LeaseSpec(holder_identity=holder, lease_duration_seconds=duration,
                                acquire_time=stamp(renewed_ago + 5), renew_time=stamp(renewed_ago)))
    current = read_lease(coordination, ns)
    if current is None:
        return coordination.create_namespaced_lease(ns, body)
    body.metadata.resource_version = current.metadata.resource_version
    return coordination.replace_namespaced_lease(LEASE, ns, body)


def test_check_mode_reports_a_held_lock_without_writing_and_a_stale_lease_is_taken_over(
        testbed, core, coordination, operator_ns):
    kc = testbed.kubeconfig
    version = write_lease(coordination, operator_ns, renewed_ago=0, duration=600).metadata.resource_version
    # check mode (rollout and rollout_lock) and a lock_holder that does not hold it: nothing written
    plan = rollout_task('plan', operator_ns, assignments=[{'nodes': ['a100-0'], 'config': 'all-disabled'}])
    results = play(kc, dict(plan, check_mode=True),
                   {'name': 'lock check', 'check_mode': True, 'gpuops.gpu.rollout_lock': {
                       'operator_namespace': operator_ns}},
                   rollout_task('foreign holder', operator_ns, lock_holder='someone-else',
                                assignments=[{'nodes': ['a100-0'], 'config': 'all-disabled'}]))
    lock = results['plan']['lock']
    assert lock['state'] == 'held' and lock['who'] == 'ci@old-runner pid 4242', lock
    assert lock['holder'] == 'killed-run-1' and lock['lease'] == '%s/%s' % (operator_ns, LEASE)
    assert results['plan']['changed'] is True and results['plan'].get('failed') is not True
    assert 'held by ci@old-runner pid 4242' in results['lock check']['warnings'][0]
    assert results['foreign holder'].get('failed') is True
    assert 'lock_holder someone-else does not hold the rollout lock' in results['foreign holder']['msg']
    assert read_lease(coordination, operator_ns).metadata.resource_version == version
    assert mig_config(core, 'a100-0')[0] != 'all-disabled'
    # the same lease, not renewed for longer than its duration: a killed run's, taken over with a warning
    write_lease(coordination, operator_ns, renewed_ago=60, duration=30)
    result = play(kc, rollout_task('takeover', operator_ns,
                                   assignments=[{'nodes': ['a100-0'], 'config': 'all-disabled'}]))['takeover']
    assert result.get('failed') is not True, result.get('msg')
    warning = [w for w in result.get('warnings', []) if 'took over the stale rollout lock' in w]
    assert warning and 'ci@old-runner pid 4242' in warning[0] and 'killed-run-1' in warning[0], result.get('warnings')
    assert mig_config(core, 'a100-0') == ('all-disabled', 'success')
    assert_released_and_clean(core, coordination, operator_ns)


SIM_DELAY = 'gpusim.gpuops.dev/reconfigure-seconds'  # the simulated MIG manager's time for one node


def set_sim_delay(core, name, seconds):
    core.patch_node(name, {'metadata': {'annotations': {SIM_DELAY: None if seconds is None else str(seconds)}}})


def module_pid(async_dir):
    """The pid of the rollout module a running ansible-playbook started (its progress file names it)."""
    def pid():
        for name in os.listdir(async_dir):
            if name.startswith('gpuops-progress-') and name.endswith('.json'):
                try:
                    with open(os.path.join(async_dir, name)) as handle:
                        return json.load(handle).get('pid')
                except ValueError:  # being rewritten
                    return None
        return None
    return wait_until('the module\'s progress file in %s' % async_dir, pid, 60, 0.1)


def rollout_marks(core, name):
    """What a rollout writes on a node: its gpuops.gpu/ annotations, cordon and MIG config label."""
    node = core.read_node(name)
    return ({k: v for k, v in (node.metadata.annotations or {}).items() if k.startswith(ANN)},
            bool(node.spec.unschedulable), (node.metadata.labels or {}).get('nvidia.com/mig.config'))


def test_a_frozen_rollout_whose_lease_was_taken_over_writes_nothing_more(
        testbed, core, coordination, operator_ns, tmp_path):
    """SIGSTOP the module (its renewing thread and its workers) while its first node waits for the MIG
    manager, past its 10 s lease; another run takes the lock over; SIGCONT: the run's next write (the
    first node's uncordon) is preceded by a renewal that finds the lease taken, so it stops there."""
    kc = testbed.kubeconfig
    before = dict((n, mig_config(core, n)[0]) for n in A100)
    target = 'all-2g.10gb' if before['a100-0'] != 'all-2g.10gb' else 'all-3g.20gb'
    set_sim_delay(core, 'a100-0', 6)
    task = rollout_task('frozen', operator_ns, assignments=[{'nodes': A100, 'config': target}], max_unavailable=1,
                        lock_duration=10)
    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(run_play, kc, [task], extra_env={'ANSIBLE_ASYNC_DIR': str(tmp_path)})
        pid = module_pid(str(tmp_path))
        try:
            wait_until('a100-0 labelled (waiting for the MIG manager)',
                       lambda: rollout_marks(core, 'a100-0')[0].get(ANN + 'rollout-phase') == 'labelled', 60, 0.05)
            os.kill(pid, signal.SIGSTOP)
            ours = read_lease(coordination, operator_ns).spec.holder_identity
            wait_until('its lease expired', lambda: stamp(0) > read_lease(coordination, operator_ns).spec.renew_time
                       + datetime.timedelta(seconds=11), 30, 0.2)
            write_lease(coordination, operator_ns, renewed_ago=0, duration=600, holder='took-it-over')
            marks = dict((n, rollout_marks(core, n)) for n in A100)
            wait_until('the MIG manager done on a100-0 meanwhile',
                       lambda: mig_config(core, 'a100-0') == (target, 'success'), 60, 0.2)
        finally:
            os.kill(pid, signal.SIGCONT)
        rc, results, raw = running.result()
    result = results['frozen']
    try:
        assert result.get('failed') is True, raw[-3000:]
        for part in ('no longer held by this run', 'took-it-over', 'run again to resume'):
            assert part in result['msg'], result['msg']
        assert ours != 'took-it-over'
        after = dict((n, rollout_marks(core, n)) for n in A100)
        assert after == marks, 'a node was written after the takeover'
        assert marks['a100-0'][1] is True, 'a100-0 left cordoned, as its annotations say'
        assert not [k for k in marks['a100-1'][0] if k.startswith(ANN + 'rollout')], 'a100-1 never started'
        assert read_lease(coordination, operator_ns).spec.holder_identity == 'took-it-over'
    finally:
        coordination.delete_namespaced_lease(LEASE, operator_ns)
        set_sim_delay(core, 'a100-0', None)
    # the next run resumes the frozen run's node
    done = play(kc, rollout_task('resume', operator_ns, assignments=[{'nodes': A100, 'config': target}]))['resume']
    assert done.get('failed') is not True, done.get('msg')
    assert_released_and_clean(core, coordination, operator_ns)


def test_a_lease_stamped_a_year_ahead_is_taken_over_with_a_warning(testbed, core, coordination, operator_ns):
    kc = testbed.kubeconfig
    write_lease(coordination, operator_ns, renewed_ago=-365 * 86400, duration=600, holder='from-the-future')
    future = read_lease(coordination, operator_ns).spec.renew_time
    config = 'all-1g.5gb' if mig_config(core, 'a100-0')[0] != 'all-1g.5gb' else 'all-disabled'
    result = play(kc, rollout_task('future', operator_ns, assignments=[{'nodes': ['a100-0'], 'config': config}]))
    result = result['future']
    assert result.get('failed') is not True, result.get('msg')
    warning = [w for w in result.get('warnings', []) if 'took over the rollout lock' in w]
    assert warning, result.get('warnings')
    for part in ('from-the-future', 'ci@old-runner pid 4242', 'renewTime %s' % future.strftime('%Y-%m-%dT%H:%M:%S'),
                 'more than 15s ahead'):
        assert part in warning[0], warning[0]
    assert mig_config(core, 'a100-0') == (config, 'success')
    assert_released_and_clean(core, coordination, operator_ns)


def test_rollouts_given_other_operator_namespaces_share_the_operators_lock(
        testbed, core, custom, coordination, operator_ns):
    """The lock lives where the GPU operator says it runs (ClusterPolicy status.namespace): a second rollout
    that names another (existing) namespace as operator_namespace is refused while the first holds it."""
    kc = testbed.kubeconfig
    ensure_cluster_policy(custom)  # the real operator reconciles it and writes its namespace into the status
    policies = custom.list_cluster_custom_object('nvidia.com', 'v1', 'clusterpolicies')['items']
    assert [p['status'].get('namespace') for p in policies] == [operator_ns]
    elsewhere = 'gpuops-lock-elsewhere'
    create_namespace(core, elsewhere)
    configs = dict((n, 'all-1g.5gb' if mig_config(core, n)[0] != 'all-1g.5gb' else 'all-disabled') for n in A100)
    set_sim_delay(core, 'a100-0', 8)
    try:
        with ThreadPoolExecutor(1) as pool:
            first = pool.submit(play, kc, rollout_task('first', operator_ns, assignments=[
                {'nodes': ['a100-0'], 'config': configs['a100-0']}]))
            wait_until('the first rollout holds the lock', lambda: read_lease(coordination, operator_ns), 60, 0.1)
            second = play(kc, rollout_task('second', elsewhere, assignments=[
                {'nodes': ['a100-1'], 'config': configs['a100-1']}]))['second']
            first = first.result()['first']
        assert second.get('failed') is True and 'holds the rollout lock' in second['msg'], second.get('msg')
        assert 'Lease %s/%s' % (operator_ns, LEASE) in second['msg'] and 'mig_rollout of 1 node(s)' in second['msg']
        assert mig_config(core, 'a100-1')[0] != configs['a100-1'] and not core.read_node('a100-1').spec.unschedulable
        assert read_lease(coordination, elsewhere) is None
        assert first.get('failed') is not True, first.get('msg')
        assert mig_config(core, 'a100-0') == (configs['a100-0'], 'success')
        assert_released_and_clean(core, coordination, operator_ns)
    finally:
        set_sim_delay(core, 'a100-0', None)
        core.delete_namespace(elsewhere)


def test_the_reset_role_refuses_to_start_while_another_run_holds_the_lock(
        testbed, core, coordination, operator_ns):
    write_lease(coordination, operator_ns, renewed_ago=0, duration=600, holder='mig-run-7')
    try:
        before = dict((n, mig_config(core, n)) for n in A100)
        rc, results, raw = run_role(testbed.kubeconfig, 'reset', {
            'reset_operator_namespace': operator_ns, 'reset_nodes': A100, 'reset_hami': False,
            'reset_cluster_policy': False, 'reset_config_maps': False})
        assert rc != 0, raw[-2000:]
        taken = results['Take the rollout lock (no other GPU rollout, reset or HAMi removal at the same time)']
        assert taken.get('failed') is True and 'mig-run-7' in taken['msg'] and 'ci@old-runner' in taken['msg']
        assert dict((n, mig_config(core, n)) for n in A100) == before
        assert read_lease(coordination, operator_ns).spec.holder_identity == 'mig-run-7'
    finally:
        coordination.delete_namespaced_lease(LEASE, operator_ns)
