"""gpuops.gpu.mig_rollout on the virtual GPU cluster: the real apiserver, scheduler and controllers,
KWOK nodes and the simulated MIG manager / device plugin (tests/testbed/gpusim)."""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import pytest
import yaml
from kubernetes import client

from ansible_run import facts_diff, node_facts, run_play
from conftest import create_namespace, gpu_deployment, gpu_pod, wait_until

A100 = ['a100-0', 'a100-1']
MIG_NODES = ['a100-0', 'a100-1', 'h100-0', 'h100-1']
ANN_PREFIX = 'gpuops.gpu/'


def labels(core, name):
    return core.read_node(name).metadata.labels or {}


def rollout(kubeconfig, check=False, diff=False, **args):
    args.setdefault('operator_namespace', 'gpu-operator')
    args.setdefault('poll_interval', 0.3)
    args.setdefault('verify_timeout', 60)
    args.setdefault('state_timeout', 60)
    task = {'name': 'rollout', 'gpuops.gpu.mig_rollout': args, 'register': 'r', 'ignore_errors': True}
    rc, results, raw = run_play(kubeconfig, [task], check=check, diff=diff)
    assert 'rollout' in results, raw[-3000:]
    return results['rollout']


@pytest.fixture(scope='module', autouse=True)
def gpu_nodes_ready(testbed, core):
    """Wait until the simulated GFD has labelled every MIG node."""
    wait_until('GFD labels on %s' % MIG_NODES,
               lambda: all(labels(core, n).get('nvidia.com/gpu.product') for n in MIG_NODES), 180)


@pytest.fixture(scope='module')
def namespace(core):
    name = create_namespace(core, 'mig-it')
    yield name
    core.delete_namespace(name)


def assert_clean(core, names):
    for name in names:
        node = core.read_node(name)
        assert not node.spec.unschedulable, '%s left cordoned' % name
        assert not [k for k in (node.metadata.annotations or {}) if k.startswith(ANN_PREFIX + 'rollout')
                    or k == ANN_PREFIX + 'cordoned-by-rollout'], name


# ---------------------------------------------------------------------------------------- tests

def test_check_mode_returns_plan_and_writes_nothing(testbed, core):
    before = node_facts(core, A100)
    res = rollout(testbed.kubeconfig, check=True, assignments=[{'nodes': A100, 'config': 'all-1g.5gb'}],
                  max_unavailable=1)
    assert res.get('failed') is not True, res
    assert res['changed'] is True
    assert res['batches'] == [['a100-0'], ['a100-1']]
    assert [e['node'] for b in res['plan'] for e in b['nodes']] == A100
    assert facts_diff(before, node_facts(core, A100)) == []


TRAINING = [{'label_selector': 'gpuops.dev/pool=training,gpuops.dev/node-group=a100', 'config': 'all-1g.5gb'},
            {'selector': {'gpuops.dev/pool': 'training', 'gpuops.dev/node-group': 'h100'}, 'config': 'all-1g.10gb'}]


def test_single_rollout_then_idempotent(testbed, core):
    res = rollout(testbed.kubeconfig, diff=True, assignments=TRAINING, max_unavailable=2)
    assert res.get('failed') is not True, res.get('msg')
    assert res['changed'] is True
    assert sorted(res['assignments']) == MIG_NODES
    assert len(res['batches']) == 2 and all(len(b) <= 2 for b in res['batches'])
    for name in MIG_NODES:
        lab = labels(core, name)
        assert lab['nvidia.com/mig.config'] == ('all-1g.5gb' if name in A100 else 'all-1g.10gb')
        assert lab['nvidia.com/mig.config.state'] == 'success'
    alloc = core.read_node('a100-0').status.allocatable
    assert alloc.get('nvidia.com/gpu') == '56'  # single strategy: 8 GPUs x 7 x 1g.5gb
    expected_after = {'nvidia.com/mig.config': 'all-1g.10gb', 'nvidia.com/mig.config.state': 'success'}
    assert res['diff']['after']['h100-1'] == expected_after
    assert_clean(core, MIG_NODES)
    assert all(n['duration_s'] > 0 for n in res['nodes'])
    again = rollout(testbed.kubeconfig, assignments=TRAINING, max_unavailable=2)
    assert again.get('failed') is not True and again['changed'] is False, again
    assert again['batches'] == []


SIM_DELAY = 'gpusim.gpuops.dev/reconfigure-seconds'  # the simulated MIG manager's time for one node


def _delays(core, seconds):
    for name, value in seconds.items():
        core.patch_node(name, {'metadata': {'annotations': {SIM_DELAY: value}}})


def _span(node):
    """(cordoned, uncordoned) of a node result, as seconds."""
    from datetime import datetime
    return tuple(datetime.strptime(node['timeline'][k], '%Y-%m-%dT%H:%M:%S.%fZ').timestamp()
                 for k in ('cordoned', 'uncordoned'))


def test_rolling_window_starts_a_node_as_soon_as_one_finishes(testbed, core):
    """window: rolling with max_unavailable 2: while a100-0 takes 6 s, the three others go through the
    second place one after the other; never more than two nodes are cordoned at once."""
    _delays(core, {'a100-0': '6', 'a100-1': '0.5', 'h100-0': '0.5', 'h100-1': '0.5'})
    try:
        res = rollout(testbed.kubeconfig, assignments=[{'nodes': A100, 'config': 'all-2g.10gb'},
                                                       {'nodes': ['h100-0', 'h100-1'], 'config': 'all-2g.20gb'}],
                      max_unavailable=2, window='rolling')
        assert res.get('failed') is not True, res.get('msg')
        assert res['window'] == 2 and [n['node'] for n in res['nodes']] == MIG_NODES
        spans = dict((n['node'], _span(n)) for n in res['nodes'])
        assert spans['h100-1'][1] < spans['a100-0'][1], spans       # the last node finished before the slow one
        moments = sorted(t for span in spans.values() for t in span)
        assert max(sum(1 for a, b in spans.values() if a <= m < b) for m in moments) <= 2, spans
        assert labels(core, 'h100-1')['nvidia.com/mig.config'] == 'all-2g.20gb'
        assert_clean(core, MIG_NODES)
        _delays(core, dict((n, '0.5') for n in MIG_NODES))
        back = rollout(testbed.kubeconfig, assignments=TRAINING, max_unavailable=2, window='rolling')
        assert back.get('failed') is not True and back['changed'] is True, back.get('msg')
    finally:
        _delays(core, dict((n, None) for n in MIG_NODES))
    assert rollout(testbed.kubeconfig, assignments=TRAINING, max_unavailable=2, window='rolling')['changed'] is False


BAD_INPUTS = [
    ([{'nodes': ['a100-0'], 'config': 'no-such-config'}], {}, "'no-such-config'"),
    ([{'nodes': ['nope-9'], 'config': 'all-1g.5gb'}], {}, 'not found: nope-9'),
    ([{'label_selector': 'gpuops.dev/pool=nothing', 'config': 'all-1g.5gb'}], {}, 'matches no node'),
    ([{'nodes': ['t4-0'], 'config': 'all-1g.5gb'}], {}, 'not MIG capable'),
    ([{'nodes': ['a100-0'], 'config': 'all-1g.10gb'}, {'nodes': ['a100-0'], 'config': 'all-disabled'}], {},
     'assigned both'),
    ([{'nodes': ['a100-0'], 'config': 'all-balanced'}], {'mig_strategy': 'single'}, 'single'),
    ([{'nodes': ['a100-0'], 'config': 'all-1g.5gb'}], {'max_unavailable': '0%'}, 'max_unavailable'),
    ([{'nodes': ['a100-0'], 'config': 'all-1g.5gb'}], {'max_unavailable': 'lots'}, 'max_unavailable'),
    ([{'nodes': ['a100-0'], 'config': 'all-1g.5gb'}], {'config_map': 'missing-cm'}, 'not found'),
    ([{'nodes': ['a100-0'], 'config': 'x'}], {'config_document': {'version': 'v2', 'mig-configs': {}}}, 'version'),
    ([{'nodes': ['a100-0'], 'config': 'big'}], {'config_document': {'version': 'v1', 'mig-configs': {
        'big': [{'devices': 'all', 'mig-enabled': True, 'mig-devices': {'3g.20gb': 2, '1g.5gb': 1}}]}},
        'mig_strategy': 'mixed'}, 'a100-0'),
    ([{'nodes': ['a100-0'], 'config': 'bad-profile'}], {'config_document': {'version': 'v1', 'mig-configs': {
        'bad-profile': [{'devices': 'all', 'mig-enabled': True, 'mig-devices': {'2g.5gb': 1}}]}},
        'mig_strategy': 'mixed'}, '2g.5gb'),
    ([{'nodes': ['a100-0'], 'config': 'pl'}], {'config_document': {'version': 'v1', 'mig-configs': {
        'pl': [{'devices': 'all', 'mig-enabled': True, 'mig-devices': {'4g.20gb': 1, '2g.10gb': 1, '1g.5gb': 2}}]}},
        'mig_strategy': 'mixed'}, 'a100-0'),
    ([{'label_selector': 'a=b=c', 'config': 'all-1g.5gb'}], {}, 'cannot parse'),
    ([{'nodes': ['a100-0']}], {}, 'config'),
    ([{'nodes': ['cpu-0'], 'config': 'all-1g.5gb'}], {}, 'cpu-0'),
    ([{'nodes': ['h100-0'], 'config': 'all-1g.5gb'}], {}, "'all-1g.5gb'"),
    ([{'nodes': ['a100-0'], 'config': 'all-1g.5gb'}], {'cluster_policy': 'no-such-policy'}, 'no-such-policy'),
    ([{'nodes': ['a100-0'], 'config': 'm'}], {'config_document': {'version': 'v1', 'mig-configs': {
        'm': [{'devices': 'all', 'mig-enabled': False, 'mig-devices': {'1g.5gb': 1}}]}}}, 'mig-devices'),
    ([{'nodes': ['a100-0'], 'config': 'me'}], {'config_document': {'version': 'v1', 'mig-configs': {
        'me': [{'devices': 'all', 'mig-enabled': True, 'mig-devices': {'1g.5gb+me': 2}}]}},
        'mig_strategy': 'mixed'}, '+me'),
]


@pytest.mark.parametrize('assignments,extra,fragment', BAD_INPUTS)
def test_bad_input_fails_before_any_write(testbed, core, assignments, extra, fragment):
    nodes = ['a100-0', 'a100-1', 'h100-0', 't4-0', 'cpu-0']
    before = node_facts(core, nodes)
    res = rollout(testbed.kubeconfig, assignments=assignments, **extra)
    assert res.get('failed') is True, res
    assert fragment in res['msg'], res['msg']
    assert facts_diff(before, node_facts(core, nodes)) == []


def test_gpu_pods_are_evicted_and_pdb_blocks(testbed, core, policy, namespace):
    core.create_namespaced_pod(namespace, gpu_pod('free', 'a100-0'))
    core.create_namespaced_pod(namespace, gpu_pod('guarded', 'a100-1', labels={'app': 'guarded'}))
    policy.create_namespaced_pod_disruption_budget(namespace, client.V1PodDisruptionBudget(
        metadata=client.V1ObjectMeta(name='guarded'),
        spec=client.V1PodDisruptionBudgetSpec(min_available=1, selector=client.V1LabelSelector(
            match_labels={'app': 'guarded'}))))
    wait_until('GPU pods running', lambda: all(core.read_namespaced_pod(p, namespace).status.phase == 'Running'
                                               for p in ('free', 'guarded')), 60)
    wait_until('PDB status', lambda: policy.read_namespaced_pod_disruption_budget(
        'guarded', namespace).status.expected_pods == 1, 60)
    plan = rollout(testbed.kubeconfig, check=True, assignments=[{'nodes': A100, 'config': 'all-disabled'}],
                   max_unavailable=2)
    entries = dict((e['node'], e) for b in plan['plan'] for e in b['nodes'])
    assert entries['a100-0']['pods_to_evict'] == [namespace + '/free']
    assert entries['a100-1']['blocking_pdbs'] == [namespace + '/guarded']
    res = rollout(testbed.kubeconfig, assignments=[{'nodes': A100, 'config': 'all-disabled'}],
                  max_unavailable=1, drain_timeout=4)
    assert res.get('failed') is True
    assert 'a100-1' in res['msg'] and 'PodDisruptionBudget' in res['msg']
    # a100-0 went through (its pod was evicted), a100-1 stays cordoned with the reason
    assert labels(core, 'a100-0')['nvidia.com/mig.config'] == 'all-disabled'
    assert not [p for p in core.list_namespaced_pod(namespace).items if p.metadata.name == 'free']
    blocked = core.read_node('a100-1')
    assert blocked.spec.unschedulable is True
    assert 'PodDisruptionBudget' in blocked.metadata.annotations[ANN_PREFIX + 'rollout-reason']
    assert labels(core, 'a100-1')['nvidia.com/mig.config'] == 'all-1g.5gb'  # never relabelled under a pod
    # relax the PDB: the re-run resumes and cleans up
    policy.delete_namespaced_pod_disruption_budget('guarded', namespace)
    res = rollout(testbed.kubeconfig, assignments=[{'nodes': A100, 'config': 'all-disabled'}], max_unavailable=1)
    assert res.get('failed') is not True, res.get('msg')
    assert labels(core, 'a100-1')['nvidia.com/mig.config'] == 'all-disabled'
    assert_clean(core, A100)


def inject(core, name, value):
    core.patch_node(name, {'metadata': {'annotations': {'gpusim.gpuops.dev/inject': value}}})


def test_injected_failure_stops_the_rollout(testbed, core):
    inject(core, 'h100-0', 'fail')
    try:
        res = rollout(testbed.kubeconfig, assignments=[{'nodes': ['h100-0', 'h100-1'], 'config': 'all-disabled'}],
                      max_unavailable=1)
        assert res.get('failed') is True
        assert 'node h100-0' in res['msg'] and 'failed' in res['msg']
        assert res['untouched'] == ['h100-1']
        assert labels(core, 'h100-1')['nvidia.com/mig.config'] == 'all-1g.10gb'  # untouched
        assert not core.read_node('h100-1').spec.unschedulable
        assert core.read_node('h100-0').spec.unschedulable is True
    finally:
        inject(core, 'h100-0', None)
    res = rollout(testbed.kubeconfig, assignments=[{'nodes': ['h100-0', 'h100-1'], 'config': 'all-disabled'}],
                  max_unavailable=1)
    assert res.get('failed') is not True, res.get('msg')
    assert_clean(core, ['h100-0', 'h100-1'])


def test_stuck_pending_is_detected(testbed, core):
    inject(core, 'h100-0', 'stuck-pending')
    try:
        res = rollout(testbed.kubeconfig, assignments=[{'nodes': ['h100-0'], 'config': 'all-1g.10gb'}],
                      state_timeout=5)
        assert res.get('failed') is True and 'stuck' in res['msg'], res.get('msg')
        assert labels(core, 'h100-0')['nvidia.com/mig.config.state'] == 'pending'
        assert core.read_node('h100-0').spec.unschedulable is True
    finally:
        inject(core, 'h100-0', None)
    res = rollout(testbed.kubeconfig, assignments=[{'nodes': ['h100-0'], 'config': 'all-1g.10gb'}], retry_stuck=True,
                  state_timeout=30)
    assert res.get('failed') is not True, res.get('msg')
    assert_clean(core, ['h100-0'])


def progress_data(async_dir):
    """The progress file a background rollout module writes in ``async_dir`` (None until there is one)."""
    for name in os.listdir(async_dir):
        if name.startswith('gpuops-progress-') and name.endswith('.json'):
            with open(os.path.join(async_dir, name)) as handle:
                return json.load(handle)
    return None


def module_pid(async_dir):
    """The pid of the rollout module a background ansible-playbook started (its progress file names it)."""
    return wait_until('the module\'s progress file in %s' % async_dir,
                      lambda: (progress_data(async_dir) or {}).get('pid'), 60, 0.1)


def kill_playbook(path):
    """SIGKILL every process of the ansible-playbook running the play file ``path``: the main process and its
    workers (Ansible starts each worker in a session of its own, so killing the main process group leaves them)."""
    for pid in os.listdir('/proc'):
        try:
            with open('/proc/%s/cmdline' % pid, 'rb') as handle:
                if path.encode() in handle.read():
                    os.kill(int(pid), signal.SIGKILL)
        except (OSError, ValueError):
            continue


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_sigkill_mid_batch_then_rerun_converges(testbed, core, tmp_path):
    """The controller and the module killed at once (the machine lost): the next run takes the stale lock
    over and finishes the killed run's nodes."""
    proc, path = start_rollout_process(testbed.kubeconfig, [{'nodes': MIG_NODES, 'config': 'all-disabled'}],
                                       async_dir=str(tmp_path), max_unavailable=2, lock_duration=10)
    try:
        pid = module_pid(str(tmp_path))
        wait_until('first cordon', lambda: any(core.read_node(n).spec.unschedulable for n in MIG_NODES), 120, 0.1)
        time.sleep(0.5)
    finally:
        kill_playbook(path)
        proc.wait()
        os.unlink(path)
    os.kill(pid, signal.SIGKILL)
    assert any(core.read_node(n).spec.unschedulable for n in MIG_NODES)  # killed mid-batch
    # the killed run's Lease is still live: a re-run that does not wait is refused, naming it
    res = rollout(testbed.kubeconfig, assignments=[{'nodes': MIG_NODES, 'config': 'all-disabled'}], max_unavailable=2)
    assert res.get('failed') is True and 'holds the rollout lock' in res['msg'], res.get('msg')
    # one that waits takes it over once stale (10 s without renewal; the warning is checked in test_rollout_lock)
    # and finishes the killed run's nodes
    res = rollout(testbed.kubeconfig, assignments=[{'nodes': MIG_NODES, 'config': 'all-disabled'}], max_unavailable=2,
                  lock_timeout=40)
    assert res.get('failed') is not True, res.get('msg')
    assert_clean(core, MIG_NODES)
    for name in MIG_NODES:
        assert labels(core, name)['nvidia.com/mig.config.state'] == 'success'


def start_rollout_process(kubeconfig, assignments, async_dir=None, **extra):
    """ansible-playbook running mig_rollout in the background (own process group; ``async_dir``: where its
    action plugin keeps the module's job and progress files)."""
    args = dict({'assignments': assignments, 'operator_namespace': 'gpu-operator', 'poll_interval': 0.3,
                 'state_timeout': 120, 'verify_timeout': 60}, **extra)
    play = [{'name': 'bg', 'hosts': 'localhost', 'gather_facts': False,
             'tasks': [{'name': 'rollout', 'gpuops.gpu.mig_rollout': args}]}]
    handle = tempfile.NamedTemporaryFile('w', suffix='.yml', delete=False)
    with handle:
        yaml.safe_dump(play, handle)
    env = dict(os.environ, K8S_AUTH_KUBECONFIG=kubeconfig, ANSIBLE_PYTHON_INTERPRETER=sys.executable)
    if async_dir:
        env['ANSIBLE_ASYNC_DIR'] = async_dir
    proc = subprocess.Popen([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), handle.name],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    return proc, handle.name


def test_apiserver_restart_mid_rollout_is_survived(testbed, core):
    proc, path = start_rollout_process(testbed.kubeconfig, TRAINING, max_unavailable=2)
    try:
        wait_until('first cordon', lambda: any(core.read_node(n).spec.unschedulable for n in MIG_NODES), 120, 0.1)
        pid = testbed.state()['procs']['kube-apiserver']['pid']
        os.kill(pid, signal.SIGKILL)
        time.sleep(3)
        up = testbed.cli('up', '--config', testbed.config_path, check=False)
        assert up.returncode == 0, up.stdout + up.stderr
        out, _unused = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        os.unlink(path)
    assert proc.returncode == 0, out[-3000:]
    for name in MIG_NODES:
        assert labels(core, name)['nvidia.com/mig.config'] == ('all-1g.5gb' if name in A100 else 'all-1g.10gb')
        assert labels(core, name)['nvidia.com/mig.config.state'] == 'success'
    assert_clean(core, MIG_NODES)


def test_deployment_with_pdb_never_drops_below_min_available(testbed, core, apps, policy, namespace):
    name = 'trainer'
    gpu_deployment(apps, policy, namespace, name, 3, 2)

    def ready():
        return sum(1 for p in core.list_namespaced_pod(namespace, label_selector='app=' + name).items
                   if p.status.phase == 'Running' and not p.metadata.deletion_timestamp
                   and any(c.type == 'Ready' and c.status == 'True' for c in p.status.conditions or []))
    wait_until('3 trainer pods ready', lambda: ready() == 3, 90)
    wait_until('PDB allows 1 disruption', lambda: policy.read_namespaced_pod_disruption_budget(
        name, namespace).status.disruptions_allowed == 1, 60)
    proc, path = start_rollout_process(testbed.kubeconfig, [{'nodes': MIG_NODES, 'config': 'all-disabled'}],
                                       max_unavailable=1, drain_timeout=240)
    lowest = 3
    try:
        while proc.poll() is None:
            lowest = min(lowest, ready())
            time.sleep(0.2)
        out = proc.stdout.read()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        os.unlink(path)
    assert proc.returncode == 0, out[-3000:]
    assert lowest >= 2, 'the Deployment dropped to %d ready pods (PDB minAvailable 2)' % lowest
    assert_clean(core, MIG_NODES)


def test_a_rollout_whose_controller_was_lost_stops_itself(testbed, core, tmp_path):
    """ansible-playbook killed with all its processes (SIGKILL), the module left running in the background: it
    sees nobody read its progress for progress_timeout seconds and stops as an interrupted run does - the lock
    released (not left to go stale), the nodes it had not finished kept for the next run, which resumes them."""
    slow(core, 30)  # 30 s per node: the rollout cannot end (4 nodes one by one) before its switch stops it
    try:
        # progress_timeout: the next run below must find the lock still held, so it starts well within it
        proc, path = start_rollout_process(testbed.kubeconfig, TRAINING, async_dir=str(tmp_path),
                                           max_unavailable=1, progress_timeout=40)
        try:
            pid = module_pid(str(tmp_path))
            wait_until('first cordon', lambda: any(core.read_node(n).spec.unschedulable for n in MIG_NODES), 120,
                       0.1)
        finally:
            kill_playbook(path)
            proc.wait()
            os.unlink(path)
        res = rollout(testbed.kubeconfig, assignments=TRAINING, max_unavailable=1)
        assert res.get('failed') is True and 'holds the rollout lock' in res['msg'], \
            'the module did not go on: %s' % res
        wait_until('the module stopping itself', lambda: not alive(pid), 120, 0.2)
    finally:
        slow(core, None)
    said = [text for _seq, text in progress_data(str(tmp_path))['messages']]
    assert any('has not read the progress for' in text for text in said), said
    left = [n for n in MIG_NODES if labels(core, n).get('nvidia.com/mig.config.state') != 'success'
            or core.read_node(n).spec.unschedulable]
    assert left, 'the rollout ran to its end instead of stopping: %s' % said
    assert_released(core)
    res = rollout(testbed.kubeconfig, assignments=[{'nodes': MIG_NODES, 'config': 'all-disabled'}], max_unavailable=2)
    assert res.get('failed') is not True, res.get('msg')
    assert_clean(core, MIG_NODES)


def test_a_rollout_whose_playbook_was_killed_is_stopped_by_its_worker(testbed, core, tmp_path):
    """Only the main ansible-playbook process group killed (what a cancelled job or kill -9 of the playbook does):
    the worker running the task sees its playbook gone and stops the module at once (not after progress_timeout),
    the lock released."""
    slow(core, 30)  # 30 s per node: the rollout cannot end (4 nodes one by one) before the worker stops it
    try:
        proc, path = start_rollout_process(testbed.kubeconfig, TRAINING, async_dir=str(tmp_path), max_unavailable=1)
        try:
            pid = module_pid(str(tmp_path))
            wait_until('first cordon', lambda: any(core.read_node(n).spec.unschedulable for n in MIG_NODES), 120, 0.1)
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            os.unlink(path)
        killed = time.monotonic()
        wait_until('the worker stopping the module', lambda: not alive(pid), 60, 0.2)
    finally:
        slow(core, None)
    assert time.monotonic() - killed < 45, 'stopped only by the dead man\'s switch (progress_timeout is 60)'
    assert [n for n in MIG_NODES if labels(core, n).get('nvidia.com/mig.config.state') != 'success'
            or core.read_node(n).spec.unschedulable], 'the rollout ran to its end instead of stopping'
    assert_released(core)
    res = rollout(testbed.kubeconfig, assignments=TRAINING, max_unavailable=2)
    assert res.get('failed') is not True, res.get('msg')
    assert_clean(core, MIG_NODES)


def slow(core, seconds):
    """Make the simulated MIG manager take ``seconds`` per reconfiguration on the MIG nodes (None: the default)."""
    for name in MIG_NODES:
        core.patch_node(name, {'metadata': {'annotations': {
            'gpusim.gpuops.dev/reconfigure-seconds': None if seconds is None else str(seconds)}}})


def assert_released(core):
    coordination = client.CoordinationV1Api(core.api_client)
    with pytest.raises(client.exceptions.ApiException) as gone:
        coordination.read_namespaced_lease('gpuops-gpu-rollout', 'gpu-operator')
    assert gone.value.status == 404, 'the stopped run left its lease behind'
