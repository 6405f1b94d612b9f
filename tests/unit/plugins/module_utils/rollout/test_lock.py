# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests for module_utils.rollout.lock over the in-memory API (fake_api: a Lease store that answers
409 to a stale resourceVersion like the apiserver): take, wait, take over, renew, lose, release,
run under a role's lock, the engine's hook, and the rollout_lock module's run()."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import time

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.common.lease import format_time
from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import ANN_LOCK_PURPOSE
from ansible_collections.gpuops.gpu.plugins.module_utils.k8s.client import Connection
from ansible_collections.gpuops.gpu.plugins.module_utils.common.errors import InputError, RolloutFailed
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout import lock as rl
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.engine import NodeRollout
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.inputs import rollout_argument_spec
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.rollout.fake_api import (
    LABEL, FakeApi, FakeKind, api_error, node)
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.fakes import FakeClock

NS = 'gpu-operator'
KEY = (NS, 'gpuops-gpu-rollout')
T0 = 1767225600.0


class Clock(FakeClock):
    """The fake clock as the lock's wall clock (from T0) and monotonic clock; every pause moves it."""

    def __init__(self, now=T0, on_sleep=None):
        super(Clock, self).__init__(now, on_sleep, least=0.01)

    def monotonic(self):  # advances with the wall clock here
        return self.now - T0 + 1000.0


def make(api, clock, holder=None, joined=False, duration=120, log=None):
    return rl.RolloutLock(Connection(core=api, custom=api), NS, holder=holder, duration=duration, joined=joined,
                          info=rl.lock_info('mig_rollout of 1 node(s)', ['n1'], who='%s@ctl pid 1' % holder),
                          clock=clock, sleep=clock.sleep, log=log, monotonic=clock.monotonic)


def lease(api):
    return api.leases.get(KEY)


def test_take_then_a_second_run_fails_at_once_naming_the_holder():
    api, clock = FakeApi([]), Clock()
    first = make(api, clock, holder='first')
    assert first.acquire()['state'] == 'free'
    assert lease(api)['spec']['holderIdentity'] == 'first'
    version = lease(api)['metadata']['resourceVersion']
    with pytest.raises(rl.LockBusy) as info:
        make(api, clock, holder='second').acquire(timeout=0)
    assert 'first@ctl pid 1' in str(info.value) and 'mig_rollout of 1 node(s)' in str(info.value)
    assert info.value.changed is False
    assert lease(api)['metadata']['resourceVersion'] == version  # nothing written


def test_a_second_run_waits_and_takes_the_lock_once_released():
    api, logs = FakeApi([]), []
    first = make(api, Clock(), holder='first')
    first.acquire()
    clock = Clock(on_sleep=lambda c: len(c.sleeps) == 3 and first.release())
    state = make(api, clock, holder='second', log=logs.append).acquire(timeout=30, interval=1)
    assert state['state'] == 'free' and len(clock.sleeps) == 3
    assert lease(api)['spec']['holderIdentity'] == 'second'
    assert len(logs) == 1 and 'waiting up to 30s' in logs[0] and 'first@ctl' in logs[0]


def test_waiting_ends_at_lock_timeout():
    api = FakeApi([])
    make(api, Clock(), holder='first').acquire()
    clock = Clock()
    with pytest.raises(rl.LockBusy, match='Waited 5s'):
        make(api, clock, holder='second').acquire(timeout=5, interval=1)
    assert 5 <= clock.now - T0 < 6.5


def test_a_stale_lease_is_taken_over_with_a_warning():
    api = FakeApi([])
    make(api, Clock(), holder='killed', duration=30).acquire()
    later = make(api, Clock(T0 + 31), holder='next')
    assert later.acquire()['state'] == 'stale'
    assert lease(api)['spec']['holderIdentity'] == 'next' and lease(api)['spec']['leaseTransitions'] == 1
    assert len(later.warnings) == 1 and 'killed@ctl pid 1' in later.warnings[0]
    assert 'expired after 30s' in later.warnings[0]


def test_a_lost_race_reads_the_winner_and_reports_it():
    api, clock = FakeApi([]), Clock()
    create = api.create_namespaced_custom_object

    def racing_create(*args, **kwargs):  # the other run's POST lands first: ours gets 409
        api.create_namespaced_custom_object = create
        make(api, clock, holder='winner').acquire()
        return create(*args, **kwargs)
    api.create_namespaced_custom_object = racing_create
    with pytest.raises(rl.LockBusy, match='winner@ctl'):
        make(api, clock, holder='loser').acquire()
    assert lease(api)['spec']['holderIdentity'] == 'winner'


def test_renew_moves_renew_time_and_a_lease_taken_meanwhile_is_lost():
    api, clock = FakeApi([]), Clock()
    mine = make(api, clock, holder='me', duration=30)
    mine.acquire()
    clock.now += 10
    assert mine.renew() is True and lease(api)['spec']['renewTime'] == format_time(T0 + 10)
    clock.now += 100  # not renewed (API outage): another run takes it over
    make(api, clock, holder='other').acquire()
    assert mine.renew() is False and 'other@ctl' in mine.lost
    with pytest.raises(RolloutFailed, match='no longer held by this run'):
        mine.ensure({'nodes': []})
    assert mine.release() is False and lease(api)['spec']['holderIdentity'] == 'other'


def test_release_deletes_only_our_lease():
    api, clock = FakeApi([]), Clock()
    mine = make(api, clock, holder='me')
    mine.acquire()
    assert make(api, clock, holder='other').release() is False and lease(api) is not None
    assert mine.release() is True and lease(api) is None
    assert mine.release() is False


def test_joined_runs_under_the_roles_lease_and_leaves_it():
    api, clock = FakeApi([]), Clock()
    with pytest.raises(rl.LockBusy, match='lock_holder role-1 does not hold the rollout lock .*it is free'):
        make(api, clock, holder='role-1', joined=True).hold()
    make(api, clock, holder='role-1').acquire()
    clock.now += 50
    joined = make(api, clock, holder='role-1', joined=True).hold()
    assert lease(api)['spec']['renewTime'] == format_time(T0 + 50)
    assert joined.let_go() == [] and lease(api)['spec']['holderIdentity'] == 'role-1'
    with pytest.raises(rl.LockBusy, match='held by role-1@ctl'):
        make(api, clock, holder='role-2', joined=True).hold()


def test_status_reads_without_writing_and_reports_unreadable_leases():
    api, clock = FakeApi([]), Clock()
    assert make(api, clock).status() == {'state': 'free', 'lease': NS + '/gpuops-gpu-rollout'}
    make(api, clock, holder='first').acquire()
    assert make(api, clock).status()['state'] == 'held' and lease(api)['metadata']['resourceVersion'] == '1'

    def forbidden(*args, **kwargs):
        raise api_error(403, 'Forbidden')
    api.get_namespaced_custom_object = forbidden
    assert make(api, clock).status()['state'] == 'unknown'


def test_a_lease_stamped_a_year_ahead_is_taken_over_with_a_warning():
    api, clock = FakeApi([]), Clock()
    make(api, Clock(T0 + 365 * 86400), holder='from-the-future').acquire()
    later = make(api, clock, holder='next')
    assert later.acquire()['state'] == 'stale' and lease(api)['spec']['holderIdentity'] == 'next'
    assert 'from-the-future' in later.warnings[0] and 'renewTime 2027-01-01T00:00:00' in later.warnings[0]


class Counting(FakeApi):
    """Counts the Lease requests."""

    def __init__(self, *args, **kwargs):
        FakeApi.__init__(self, *args, **kwargs)
        self.lease_calls = []

    def get_namespaced_custom_object(self, *args, **kwargs):
        self.lease_calls.append('get')
        return FakeApi.get_namespaced_custom_object(self, *args, **kwargs)

    def replace_namespaced_custom_object(self, *args, **kwargs):
        self.lease_calls.append('put')
        return FakeApi.replace_namespaced_custom_object(self, *args, **kwargs)


def test_the_fence_passes_at_once_while_the_last_renewal_is_fresh_and_renews_after():
    api, clock = Counting([]), Clock()
    mine = make(api, clock, holder='me', duration=30)
    mine.acquire()
    clock.now += 9.9  # younger than a third of 30 s: no request
    mine.fence()
    assert api.lease_calls == ['get']  # the acquire's read only
    clock.now += 0.1
    mine.fence()  # a third old: one PUT (with the resourceVersion last seen) before the write
    assert api.lease_calls == ['get', 'put'] and lease(api)['spec']['renewTime'] == format_time(T0 + 10)
    mine.fence()
    assert api.lease_calls == ['get', 'put']


def test_a_frozen_holder_whose_lease_was_taken_over_is_stopped_by_the_fence():
    api, clock = Counting([]), Clock()
    mine = make(api, clock, holder='me', duration=30)
    mine.acquire()
    clock.now += 45  # frozen (its renewing thread too) past its lease; meanwhile another run takes it over
    make(api, clock, holder='other').acquire()
    taken = lease(api)['metadata']['resourceVersion']
    with pytest.raises(rl.LockLost, match='no longer held by this run .*other@ctl pid 1') as info:
        mine.fence()
    assert isinstance(info.value, RolloutFailed) and 'run again to resume' in str(info.value)
    assert lease(api)['spec']['holderIdentity'] == 'other' and lease(api)['metadata']['resourceVersion'] == taken
    calls = len(api.lease_calls)
    with pytest.raises(rl.LockLost):  # once lost, at once: no further request either
        mine.fence()
    assert len(api.lease_calls) == calls


def test_a_holder_whose_lease_nobody_took_renews_it_even_past_its_duration():
    api, clock = FakeApi([]), Clock()
    mine = make(api, clock, holder='me', duration=30)
    mine.acquire()
    clock.now += 300  # an API outage longer than the lease, but nobody wrote the Lease meanwhile
    mine.fence()
    assert lease(api)['spec']['renewTime'] == format_time(T0 + 300) and mine.lost is None


def test_the_lock_lives_in_the_namespace_the_operator_wrote_in_its_cluster_policy():
    api = FakeApi([])
    assert rl.lock_namespace(Connection(custom=api), {'operator_namespace': 'mine'}) == 'mine'
    assert rl.lock_namespace(Connection(custom=api), {}) == 'nvidia-gpu-operator'
    api.policies = [{'metadata': {'name': 'p'}, 'status': {'state': 'ready', 'namespace': 'gpu-operator'}}]
    for given in ('mine', 'nvidia-gpu-operator', None):
        assert rl.lock_namespace(Connection(custom=api), {'operator_namespace': given}) == 'gpu-operator'
    assert rl.lock_namespace(Connection(custom=api), {'operator_namespace': 'mine', 'lock_namespace': 'x'}) == 'x'
    api.policies = [{'metadata': {'name': 'p'}, 'status': {'state': 'ready'}}]  # the operator has not run yet
    assert rl.lock_namespace(Connection(custom=api), {'operator_namespace': 'mine'}) == 'mine'


# ---------------------------------------------------------------------------------------- the engine's hook

def engine(api, **kw):
    opts = dict((k, v['default']) for k, v in rollout_argument_spec('config').items() if 'default' in v)
    opts.update(poll_interval=0.01, state_timeout=5, reboot_timeout=5, retry_stuck=False, check_mode=False,
                operator_namespace=NS)
    opts.update(kw)
    rollout = NodeRollout(Connection(core=api, policy=api, custom=api), FakeKind(), opts)
    return rollout, dict((n['metadata']['name'], n) for n in rollout.list_nodes())


def test_the_engine_holds_the_lock_while_it_changes_nodes_and_releases_it():
    api = FakeApi([node('n1'), node('n2')])
    seen = []
    patch = api.patch_node

    def patch_node(name, body, **kwargs):
        seen.append(lease(api)['metadata']['annotations'][ANN_LOCK_PURPOSE] if lease(api) else None)
        return patch(name, body, **kwargs)
    api.patch_node = patch_node
    rollout, nodes = engine(api)
    assert rollout.run({'n1': 'v2', 'n2': 'v2'}, nodes)['changed'] is True
    assert seen and set(seen) == {'fake_rollout of 2 node(s)'}
    assert lease(api) is None and rollout.lock is None


def test_the_engine_fails_before_any_write_when_another_run_holds_the_lock():
    api = FakeApi([node('n1')])
    make(api, Clock(time.time()), holder='other').acquire()  # held now (the engine's lock reads the real clock)
    rollout, nodes = engine(api)
    with pytest.raises(rl.LockBusy, match='other@ctl pid 1'):
        rollout.run({'n1': 'v2'}, nodes)
    assert api.patches == [] and lease(api)['spec']['holderIdentity'] == 'other'


def test_the_engine_releases_the_lock_on_failure_and_takes_none_without_work():
    api = FakeApi([node('n1'), node('n2', labels={LABEL: 'v2'})])
    api.failures['patch_node'] = [api_error(403, 'Forbidden')] * 10
    rollout, nodes = engine(api)
    with pytest.raises(RolloutFailed):
        rollout.run({'n1': 'v2'}, nodes)
    assert lease(api) is None
    requests = []
    api.create_namespaced_custom_object = lambda *a, **k: requests.append(a)
    rollout, nodes = engine(api)
    assert rollout.run({'n2': 'v2'}, nodes)['changed'] is False and requests == []


def test_the_engine_plans_again_after_waiting(monkeypatch):
    api = FakeApi([node('n1')])
    holder = make(api, Clock(time.time()), holder='other')
    holder.acquire()
    rollout, nodes = engine(api, lock_timeout=30)

    def other_run_finishes(seconds):  # meanwhile the other run set n1 to the same value and let go
        api.nodes['n1']['metadata']['labels'][LABEL] = 'v2'
        holder.release()
    original = rl.RolloutLock.for_rollout

    def for_rollout(cls, *args, **kwargs):
        made = original(*args, **kwargs)
        made.sleep = other_run_finishes
        return made
    monkeypatch.setattr(rl.RolloutLock, 'for_rollout', classmethod(for_rollout))
    result = rollout.run({'n1': 'v2'}, nodes)
    assert result['changed'] is False and result['batches'] == [] and api.patches == []
    assert lease(api) is None


def test_check_mode_reports_the_lock_without_taking_it():
    api = FakeApi([node('n1')])
    make(api, Clock(time.time()), holder='other').acquire()
    rollout, nodes = engine(api, check_mode=True)
    result = rollout.run({'n1': 'v2'}, nodes)
    assert result['lock']['state'] == 'held' and result['lock']['who'] == 'other@ctl pid 1'
    assert lease(api)['metadata']['resourceVersion'] == '1'


def test_a_rollout_whose_lease_was_taken_over_makes_no_further_write():
    """The first node write (the cordon) is followed by a freeze past the lease, during which another
    run takes the lock over: the next write finds that out first, and nothing more is written."""
    api = FakeApi([node('n1'), node('n2')])
    rollout, nodes = engine(api, lock_duration=30, max_unavailable=1)
    patch, after = api.patch_node, []

    def patch_node(name, body, **kwargs):
        if api.patches:
            after.append((name, body))
        answer = patch(name, body, **kwargs)
        if len(api.patches) == 1:  # the cordon landed; then frozen for 45 s (its renewing thread too)
            later = Clock(time.time() + 45)
            rollout.lock.clock, rollout.lock.monotonic = later, lambda: time.monotonic() + 45
            make(api, later, holder='other').acquire()  # meanwhile another run took the expired lease over
        return answer
    api.patch_node = patch_node
    with pytest.raises(rl.LockLost, match='no longer held by this run .*other@ctl') as info:
        rollout.run({'n1': 'v2', 'n2': 'v2'}, nodes)
    assert len(api.patches) == 1 and after == [], 'no write after the takeover'
    assert lease(api)['spec']['holderIdentity'] == 'other'
    result = info.value.result
    assert [n['node'] for n in result['nodes']] == ['n1'] and result['untouched'] == ['n2']
    assert 'gpuops.gpu/rollout-target' in api.nodes['n1']['metadata']['annotations'], 'resumable'


# ---------------------------------------------------------------------------------------- gpuops.gpu.rollout_lock

def module(api, check_mode=False, **kw):
    params = dict(state='present', holder=None, purpose='reset of 1 node', nodes=['n1'], lock_timeout=0,
                  lock_duration=120, poll_interval=0.01, operator_namespace=NS, lock_namespace=None)
    params.update(kw)
    return rl.run(Connection(core=api, custom=api), params, check_mode)


def test_module_present_renew_absent():
    api = FakeApi([])
    taken = module(api)
    assert taken['changed'] is True and taken['lock']['state'] == 'ours'
    assert taken['lock']['purpose'] == 'reset of 1 node'
    assert taken['diff']['before']['state'] == 'free' and taken['diff']['after']['holder'] == taken['holder']
    again = module(api, holder=taken['holder'])
    assert again['changed'] is False and again['lock']['state'] == 'ours'
    with pytest.raises(rl.LockBusy, match='reset of 1 node'):
        module(api)
    other = module(api, state='absent', holder='someone-else')
    assert other['changed'] is False and 'left alone' in other['warnings'][0] and lease(api) is not None
    assert module(api, state='absent', holder=taken['holder'])['changed'] is True and lease(api) is None
    assert module(api, state='absent', holder=taken['holder'])['changed'] is False


def test_module_renewal_by_a_holder_that_lost_the_lock_fails_and_never_takes_it_again():
    api, clock = FakeApi([]), Clock(time.time())
    taken = module(api, lock_duration=30)
    api.leases[KEY]['spec']['renewTime'] = format_time(clock.now - 60)  # expired, then taken over
    make(api, clock, holder='other').acquire()
    with pytest.raises(rl.LockBusy, match='holder %s does not hold the rollout lock .*held by other@ctl' % taken['holder']):
        module(api, holder=taken['holder'])
    rl.RolloutLock(Connection(custom=api), NS, holder='other').release()
    with pytest.raises(rl.LockBusy, match='it is free'):  # released meanwhile: not taken again under the old holder
        module(api, holder=taken['holder'])
    assert lease(api) is None
    planned = module(api, check_mode=True, holder=taken['holder'])  # as a check-mode role renews its made-up holder
    assert planned['changed'] is True and planned['warnings'] == [] and lease(api) is None


def test_module_runs_given_other_operator_namespaces_share_the_operators_lock():
    api = FakeApi([])
    api.policies = [{'metadata': {'name': 'p'}, 'status': {'state': 'ready', 'namespace': NS}}]
    taken = module(api, operator_namespace='somewhere-else')
    assert taken['lease'] == NS + '/gpuops-gpu-rollout' and taken['namespace'] == NS
    with pytest.raises(rl.LockBusy, match='reset of 1 node'):
        module(api, operator_namespace='nvidia-gpu-operator')
    assert list(api.leases) == [KEY]


def test_module_check_mode_writes_nothing():
    api = FakeApi([])
    planned = module(api, check_mode=True)
    assert planned['changed'] is True and planned['lock']['state'] == 'ours' and lease(api) is None
    taken = module(api)
    busy = module(api, check_mode=True)
    assert busy['changed'] is False and 'held by' in busy['warnings'][0]
    assert module(api, check_mode=True, state='absent', holder=taken['holder'])['changed'] is True
    assert lease(api)['metadata']['resourceVersion'] == '1'


@pytest.mark.parametrize('kw,fragment', [
    ({'lock_timeout': -1}, 'lock_timeout must be between 0'),
    ({'lock_duration': 5}, 'lock_duration must be between 10'),
    ({'state': 'absent'}, 'state absent needs holder'),
])
def test_module_bad_input(kw, fragment):
    api = FakeApi([])
    with pytest.raises(InputError, match=fragment):
        module(api, **kw)
    assert lease(api) is None
