"""Chaos on the virtual GPU cluster: faults hit a gpuops.gpu.mig_rollout in flight.

Each fault comes from the testbed (tests/testbed/vcluster/chaos.py, by the PIDs it recorded, never by
name) and is undone in a ``finally``: the simulated node agents killed and started again, etcd killed
and started again on its data dir, a node deleted, a node added, a node going NotReady, the
kube-apiserver frozen (SIGSTOP) past ``api_timeout`` and for less than that but longer than
``state_timeout``. Each test ends with a clear message (never a raw HTTP dump), nodes held cordoned
with the reason where the run stopped, a re-run that converges (every node at its target, none
cordoned, no gpuops.gpu markers), and no PodDisruptionBudget violation: a Deployment of GPU pods
under a PDB runs on the nodes throughout, and its Ready pods never drop below minAvailable.

The rollout runs through ansible-playbook (ansible_run.run_play) in a thread, so that the test can
hit it mid-flight; one small cluster (tests/testbed/configs/chaos.yaml: a100-0..2) for the module.
"""

import contextlib
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from kubernetes import client

from ansible_run import run_play
from conftest import REPO, create_namespace, gpu_deployment, wait_until

TESTBED_CONFIG = os.path.join(REPO, 'tests', 'testbed', 'configs', 'chaos.yaml')
NODES = ['a100-0', 'a100-1', 'a100-2']
ADDED = 'a100-3'          # the node that appears mid-rollout
VICTIM = 'a100-1'         # the node deleted / made NotReady: the trainer pods never run there
CONFIGS = ('all-1g.5gb', 'all-disabled', 'all-2g.10gb', 'all-3g.20gb')  # A100-40GB, MIG strategy single
ANN = 'gpuops.gpu/'
REASON = ANN + 'rollout-reason'
RAW_DUMP = 'HTTP response headers'
RECONFIGURE = 'gpusim.gpuops.dev/reconfigure-seconds'
TRAINER, MIN_AVAILABLE = 'trainer', 1


def rollout(kubeconfig, **args):
    """One mig_rollout task through ansible-playbook; returns its result."""
    args.setdefault('operator_namespace', 'gpu-operator')
    for key, value in (('poll_interval', 0.3), ('verify_timeout', 30), ('state_timeout', 30),
                       ('api_timeout', 30), ('drain_timeout', 60)):
        args.setdefault(key, value)
    task = {'name': 'rollout', 'gpuops.gpu.mig_rollout': args, 'register': 'r', 'ignore_errors': True}
    _rc, results, raw = run_play(kubeconfig, [task], timeout=300)
    assert 'rollout' in results, raw[-3000:]
    return results['rollout']


@contextlib.contextmanager
def in_background(kubeconfig, **args):
    """The rollout running in a thread: yields a future whose result() is (result, monotonic end)."""
    def run():
        res = rollout(kubeconfig, **args)
        return res, time.monotonic()
    with ThreadPoolExecutor(1) as pool:
        yield pool.submit(run)


def labels(core, name):
    return core.read_node(name).metadata.labels or {}


def target_for(core, names):
    """A MIG config none of ``names`` is at: a rollout to it has work on every one of them."""
    held = set(labels(core, name).get('nvidia.com/mig.config') for name in names)
    return next(c for c in CONFIGS if c not in held)


def mig_state(core, name):
    return labels(core, name).get('nvidia.com/mig.config.state')


def our_annotations(core, name):
    """The rollout's markers on the node (gpuops.gpu/rollout-*, gpuops.gpu/cordoned-by-rollout)."""
    return dict((k, v) for k, v in (core.read_node(name).metadata.annotations or {}).items()
                if k.startswith(ANN + 'rollout') or k == ANN + 'cordoned-by-rollout')


def assert_clear(res):
    """One clear message: no raw HTTP dump in the message or the warnings."""
    text = '%s %s' % (res.get('msg', ''), ' '.join(str(w) for w in res.get('warnings') or []))
    assert RAW_DUMP not in text, text[:3000]


def assert_held(core, name, reason=True):
    """``name`` is cordoned with the rollout's markers (and the reason, when the API was up to take it)."""
    node = core.read_node(name)
    assert node.spec.unschedulable is True, '%s not held cordoned' % name
    ann = our_annotations(core, name)
    assert ann, '%s carries no gpuops.gpu markers' % name
    if reason:
        assert ann.get(REASON), '%s held without %s: %s' % (name, REASON, ann)


def assert_converged(core, names, target):
    for name in names:
        node = core.read_node(name)
        lab = node.metadata.labels or {}
        assert lab.get('nvidia.com/mig.config') == target, (name, lab.get('nvidia.com/mig.config'))
        assert lab.get('nvidia.com/mig.config.state') == 'success', (name, lab.get('nvidia.com/mig.config.state'))
        assert not node.spec.unschedulable, '%s left cordoned' % name
        assert not our_annotations(core, name), (name, our_annotations(core, name))


def assert_survived(res, core, names, target):
    """The rollout got through the fault: it succeeded, left nothing behind and every node is at ``target``."""
    assert_clear(res)
    assert res.get('failed') is not True, res.get('msg')
    assert_converged(core, names, target)


def rerun_converges(testbed, core, names, target, **args):
    res = rollout(testbed.kubeconfig, assignments=[{'nodes': names, 'config': target}], max_unavailable=1, **args)
    assert res.get('failed') is not True, res.get('msg')
    assert_converged(core, names, target)
    return res


@contextlib.contextmanager
def slow_mig(core, names, seconds):
    """The simulated MIG manager takes ``seconds`` per reconfiguration on ``names`` (a window to hit)."""
    for name in names:
        core.patch_node(name, {'metadata': {'annotations': {RECONFIGURE: str(seconds)}}})
    try:
        yield
    finally:
        for name in names:
            with contextlib.suppress(client.ApiException):
                core.patch_node(name, {'metadata': {'annotations': {RECONFIGURE: None}}})


# ---------------------------------------------------------------------------- the workload and its PDB

@pytest.fixture(scope='module', autouse=True)
def gpu_nodes_ready(testbed, core):
    wait_until('GFD labels on %s' % NODES,
               lambda: all(labels(core, n).get('nvidia.com/gpu.product') for n in NODES), 120)


@pytest.fixture(scope='module')
def workload(core, apps, policy):
    """A Deployment of 2 GPU pods (never on VICTIM or ADDED, which the tests delete) under a PDB
    minAvailable 1."""
    namespace = create_namespace(core, 'chaos-%d' % (time.time() * 1000 % 1000000))
    gpu_deployment(apps, policy, namespace, TRAINER, 2, MIN_AVAILABLE, avoid_nodes=[VICTIM, ADDED])
    yield namespace
    core.delete_namespace(namespace)


class PdbGuard(object):
    """Counts the trainer's Ready pods every 0.2 s while a test runs (a frozen API just skips samples)."""

    def __init__(self, core, namespace):
        self.core, self.namespace = core, namespace
        self.lowest, self.samples = None, 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)

    def ready(self):
        pods = self.core.list_namespaced_pod(self.namespace, label_selector='app=' + TRAINER,
                                             _request_timeout=2).items
        return sum(1 for p in pods if p.status.phase == 'Running' and not p.metadata.deletion_timestamp
                   and any(c.type == 'Ready' and c.status == 'True' for c in p.status.conditions or []))

    def loop(self):
        while not self.stop.is_set():
            with contextlib.suppress(Exception):
                count = self.ready()
                self.lowest = count if self.lowest is None else min(self.lowest, count)
                self.samples += 1
            self.stop.wait(0.2)

    def check(self):
        self.stop.set()
        self.thread.join(5)
        assert self.samples > 0
        assert self.lowest >= MIN_AVAILABLE, \
            'the PDB was violated: %d Ready trainer pods (minAvailable %d)' % (self.lowest, MIN_AVAILABLE)


@pytest.fixture
def pdb(core, policy, workload):
    """The PDB guard of one test: the trainer is whole before the fault; call pdb.check() at the end."""
    guard = PdbGuard(core, workload)
    wait_until('2 trainer pods Ready', lambda: guard.ready() == 2, 90)
    wait_until('the PDB allows 1 disruption', lambda: policy.read_namespaced_pod_disruption_budget(
        TRAINER, workload).status.disruptions_allowed == 1, 60)
    guard.thread.start()
    yield guard
    guard.stop.set()


# ---------------------------------------------------------------------------------------- the tests

def test_agents_killed_mid_rollout_then_restarted(testbed, core, pdb):
    names = ['a100-0', 'a100-1']
    target = target_for(core, names)
    with slow_mig(core, names, 4), in_background(testbed.kubeconfig, max_unavailable=1, state_timeout=8,
                                                 assignments=[{'nodes': names, 'config': target}]) as run:
        wait_until('a100-0 pending', lambda: mig_state(core, 'a100-0') == 'pending', 90, 0.1)
        with testbed.killed('gpusim'):
            res, _end = run.result(timeout=180)
            assert res.get('failed') is True, res
            assert_clear(res)
            assert 'a100-0' in res['msg'], res['msg']
            assert_held(core, 'a100-0')
            assert not core.read_node('a100-1').spec.unschedulable  # the next batch was never started
    rerun_converges(testbed, core, names, target)
    pdb.check()


def test_etcd_killed_mid_rollout_and_brought_back(testbed, core, pdb):
    names = ['a100-1', 'a100-2']
    target = target_for(core, names)
    with slow_mig(core, names, 3), in_background(testbed.kubeconfig, max_unavailable=1, api_timeout=60,
                                                 assignments=[{'nodes': names, 'config': target}]) as run:
        wait_until('first cordon', lambda: any(core.read_node(n).spec.unschedulable for n in names), 90, 0.1)
        with testbed.killed('etcd'):
            time.sleep(6)
        res, _end = run.result(timeout=180)
    assert_survived(res, core, names, target)
    again = rerun_converges(testbed, core, names, target)
    assert again['changed'] is False
    pdb.check()


def test_node_deleted_mid_rollout(testbed, core, pdb):
    names = ['a100-0', VICTIM]
    target = target_for(core, names)
    deleted = False
    try:
        with slow_mig(core, names, 4), in_background(testbed.kubeconfig, max_unavailable=2,
                                                     assignments=[{'nodes': names, 'config': target}]) as run:
            wait_until(VICTIM + ' pending', lambda: mig_state(core, VICTIM) == 'pending', 90, 0.1)
            assert core.read_node('a100-0').spec.unschedulable  # the same batch
            testbed.chaos('delete-node', VICTIM)
            deleted = True
            res, _end = run.result(timeout=180)
        assert_clear(res)
        reported = ' '.join([res.get('msg', '')] + [str(w) for w in res.get('warnings') or []])
        assert VICTIM in reported and ('gone' in reported.lower() or 'deleted' in reported.lower()), reported
        assert VICTIM in [n.get('node') for n in res.get('nodes') or []], res.get('nodes')
        assert_converged(core, ['a100-0'], target)  # the rest of the batch went on
    finally:
        if deleted:
            testbed.chaos('add-node', VICTIM, '--group', 'a100')
    wait_until('GFD labels on ' + VICTIM, lambda: labels(core, VICTIM).get('nvidia.com/gpu.product'), 60)
    rerun_converges(testbed, core, names, target)
    pdb.check()


def test_node_added_mid_rollout_is_not_touched(testbed, core, pdb):
    target = target_for(core, NODES)
    selector = 'gpuops.dev/node-group=a100'
    try:
        with slow_mig(core, NODES, 3), in_background(testbed.kubeconfig, max_unavailable=2,
                                                     assignments=[{'label_selector': selector, 'config': target}]) as run:
            wait_until('first cordon', lambda: any(core.read_node(n).spec.unschedulable for n in NODES), 90, 0.1)
            testbed.chaos('add-node', ADDED, '--group', 'a100')
            res, _end = run.result(timeout=180)
        assert_clear(res)
        assert not core.read_node(ADDED).spec.unschedulable and not our_annotations(core, ADDED)
        assert ADDED not in [n.get('node') for n in res.get('nodes') or [] if n.get('changed')]
        reported = ' '.join([res.get('msg', '')] + [str(w) for w in res.get('warnings') or []])
        assert ADDED in reported, reported
        res = rollout(testbed.kubeconfig, assignments=[{'label_selector': selector, 'config': target}],
                      max_unavailable=2)
        assert res.get('failed') is not True, res.get('msg')
        assert_converged(core, NODES + [ADDED], target)
    finally:
        testbed.chaos('delete-node', ADDED)
    pdb.check()


def test_node_not_ready_mid_rollout_is_held(testbed, core, pdb):
    names = [VICTIM, 'a100-2']
    target = target_for(core, names)
    with slow_mig(core, names, 4), in_background(testbed.kubeconfig, max_unavailable=1,
                                                 assignments=[{'nodes': names, 'config': target}]) as run:
        wait_until(VICTIM + ' pending', lambda: mig_state(core, VICTIM) == 'pending', 90, 0.1)
        with testbed.not_ready(VICTIM):
            res, _end = run.result(timeout=180)
            assert_clear(res)
            assert VICTIM in res.get('msg', '') and 'ready' in res['msg'].lower(), res.get('msg')
            assert_held(core, VICTIM)  # never uncordoned as done
            assert 'ready' in our_annotations(core, VICTIM)[REASON].lower()
    rerun_converges(testbed, core, names, target)
    pdb.check()


def test_hung_api_ends_within_api_timeout(testbed, core, pdb):
    """The apiserver SIGSTOPped (connections open, no answer) past api_timeout: the module ends about
    api_timeout after the freeze with one clear message, although the API never answers again."""
    names, api_timeout, margin = [VICTIM], 10, 20
    target = target_for(core, names)
    with slow_mig(core, names, 4), in_background(testbed.kubeconfig, api_timeout=api_timeout, state_timeout=60,
                                                 lock_duration=10,
                                                 assignments=[{'nodes': names, 'config': target}]) as run:
        wait_until(VICTIM + ' pending', lambda: mig_state(core, VICTIM) == 'pending', 90, 0.1)
        with testbed.frozen('kube-apiserver'):
            frozen_at = time.monotonic()
            done = wait_until('the module to end', run.done, api_timeout + margin + 10, 0.2)
        res, ended = run.result()
    assert done and ended - frozen_at < api_timeout + margin, \
        'the module ran %.0fs after the API froze (api_timeout %ds)' % (ended - frozen_at, api_timeout)
    assert res.get('failed') is True, res
    assert_clear(res)
    assert 'api' in res['msg'].lower() and str(api_timeout) in res['msg'], res['msg']
    assert_held(core, VICTIM, reason=False)  # the API was gone: the markers of the step it was in stay
    # nor could it let go of the rollout lock: the re-run takes the stale lease over (lock_duration 10 s)
    rerun_converges(testbed, core, names, target, lock_timeout=30)
    pdb.check()


def test_api_outage_not_charged_to_state_timeout(testbed, core, pdb):
    """A freeze shorter than api_timeout but longer than state_timeout while the MIG manager works:
    the time the API did not answer is not counted as the node being stuck; the rollout succeeds."""
    names = [VICTIM]
    target = target_for(core, names)
    with slow_mig(core, names, 3), in_background(testbed.kubeconfig, api_timeout=40, state_timeout=6,
                                                 assignments=[{'nodes': names, 'config': target}]) as run:
        wait_until(VICTIM + ' pending', lambda: mig_state(core, VICTIM) == 'pending', 90, 0.1)
        with testbed.frozen('kube-apiserver'):
            time.sleep(10)
        res, _end = run.result(timeout=180)
    assert_survived(res, core, names, target)
    pdb.check()
