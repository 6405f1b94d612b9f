# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests for module_utils.common.lease: a Lease read as a lock at a given time (injected clock),
what is written to take, renew or take it over, and the messages."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.common import lease as ls
from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import (
    ANN_LOCK_NODES, ANN_LOCK_PURPOSE, ANN_LOCK_WHO, LABEL_MANAGED_BY)

T0 = 1767225600.0  # 2026-01-01T00:00:00Z
INFO = ls.lock_info('mig_rollout of 2 node(s)', ['b', 'a'], who='ops@ctl pid 7')


def held(holder='other', renewed=T0, duration=120, acquired=T0 - 60):
    return {'metadata': {'name': 'gpuops-gpu-rollout', 'resourceVersion': '5', 'annotations': dict(INFO)},
            'spec': {'holderIdentity': holder, 'leaseDurationSeconds': duration,
                     'acquireTime': ls.format_time(acquired), 'renewTime': ls.format_time(renewed)}}


def test_times_round_trip_in_the_lease_microtime_format():
    text = ls.format_time(T0 + 0.25)
    assert text == '2026-01-01T00:00:00.250000Z'
    assert ls.parse_time(text) == T0 + 0.25
    assert ls.parse_time('2026-01-01T00:00:00Z') == T0
    assert ls.parse_time('2026-01-01T01:00:00+01:00') == T0
    assert ls.parse_time('2026-01-01T00:00:00') == T0  # no zone: UTC
    assert ls.parse_time('yesterday') is None and ls.parse_time(None) is None


@pytest.mark.parametrize('lease,holder,now,state', [
    (None, 'me', T0, 'free'),
    (held(holder=''), 'me', T0, 'free'),
    (held(), 'me', T0 + 119, 'held'),
    (held(), 'me', T0 + 120, 'stale'),
    (held(), None, T0 + 500, 'stale'),
    (held(holder='me'), 'me', T0 + 500, 'ours'),  # ours, even expired, while nobody took it
    (dict(held(), spec={'holderIdentity': 'other'}), 'me', T0, 'stale'),  # never renewed, no duration
])
def test_state(lease, holder, now, state):
    assert ls.lease_state(lease, holder, now)['state'] == state


def test_state_says_who_why_where_and_when():
    st = ls.lease_state(held(), 'me', T0 + 20)
    assert st == {'state': 'held', 'holder': 'other', 'who': 'ops@ctl pid 7', 'purpose': 'mig_rollout of 2 node(s)',
                  'nodes': 'a,b', 'since': '2025-12-31T23:59:00.000000Z', 'renewed': '2026-01-01T00:00:00.000000Z',
                  'duration_s': 120, 'expires_in_s': 100.0}


def test_new_lease_body():
    body = ls.lease_body('gpu-operator', 'me', 90, T0, INFO)
    assert body['metadata']['name'] == 'gpuops-gpu-rollout' and body['metadata']['namespace'] == 'gpu-operator'
    assert body['metadata']['labels'] == {LABEL_MANAGED_BY: 'gpuops.gpu'}
    assert body['metadata']['annotations'] == INFO
    assert body['spec'] == {'holderIdentity': 'me', 'leaseDurationSeconds': 90, 'acquireTime': ls.format_time(T0),
                            'renewTime': ls.format_time(T0)}
    assert 'resourceVersion' not in body['metadata']


def test_renewal_keeps_acquire_time_annotations_and_resource_version():
    lease = held(holder='me')
    body = ls.lease_body('ns', 'me', 120, T0 + 40, {ANN_LOCK_PURPOSE: 'other purpose'}, lease)
    assert body['spec']['acquireTime'] == lease['spec']['acquireTime']
    assert body['spec']['renewTime'] == ls.format_time(T0 + 40)
    assert body['metadata']['annotations'][ANN_LOCK_PURPOSE] == 'mig_rollout of 2 node(s)'
    assert body['metadata']['resourceVersion'] == '5'  # the PUT fails with 409 if it changed since
    assert 'leaseTransitions' not in body['spec']
    assert lease['spec']['renewTime'] == ls.format_time(T0)  # the lease read is not modified


def test_takeover_counts_a_transition_and_writes_the_new_holder():
    info = ls.lock_info('sharing_rollout of 1 node(s)', ['c'], who='me@here pid 1')
    body = ls.lease_body('ns', 'me', 60, T0 + 500, info, held())
    assert body['spec']['holderIdentity'] == 'me' and body['spec']['leaseTransitions'] == 1
    assert body['spec']['acquireTime'] == body['spec']['renewTime'] == ls.format_time(T0 + 500)
    assert body['metadata']['annotations'][ANN_LOCK_NODES] == 'c'
    assert body['metadata']['annotations'][ANN_LOCK_WHO] == 'me@here pid 1'


def test_long_node_lists_are_cut():
    names = ['gpu-node-%04d' % i for i in range(500)]
    text = ls.nodes_text(names, limit=100)
    assert len(text) <= 100 and text.startswith('gpu-node-0000,') and text.endswith('more')
    kept, last = text.rsplit(',', maxsplit=1)
    assert last == '+%d more' % (500 - len(kept.split(',')))
    assert ls.nodes_text(['b', 'a', 'b']) == 'a,b'


def test_holder_identities_are_unique_per_run():
    assert ls.new_holder() != ls.new_holder()
    assert ' pid ' in ls.who_am_i() and '@' in ls.who_am_i()


def test_messages_name_the_holder_purpose_nodes_and_time():
    st = ls.lease_state(held(), 'me', T0 + 20)
    msg = ls.busy_message(st, 'gpu-operator/gpuops-gpu-rollout')
    for part in ('Lease gpu-operator/gpuops-gpu-rollout', 'ops@ctl pid 7', 'holder other', 'mig_rollout of 2 node(s)',
                 'on nodes a,b', 'since 2025-12-31T23:59:00', 'nothing was changed', 'expires in 100.0s',
                 'lock_timeout'):
        assert part in msg
    assert 'Waited 30s' in ls.busy_message(st, 'x', waited=30)
    warning = ls.takeover_warning(ls.lease_state(held(), 'me', T0 + 500), 'ns/gpuops-gpu-rollout')
    for part in ('took over the stale rollout lock', 'ops@ctl pid 7', 'last renewed 2026-01-01T00:00:00',
                 'expired after 120s', 'gpuops.gpu/rollout-'):
        assert part in warning


# ---------------------------------------------------------------------------------------- times that cannot be

@pytest.mark.parametrize('renewed,acquired,state', [
    (T0 + ls.CLOCK_SKEW, T0 - 60, 'held'),  # a little ahead (clocks differ slightly): still counts
    (T0 + ls.CLOCK_SKEW + 1, T0 - 60, 'stale'),
    (T0 + 365 * 86400, T0 - 60, 'stale'),  # a year ahead, in one write
    (T0, T0 + 3600, 'stale'),  # acquired in an hour
])
def test_a_lease_stamped_in_the_future_beyond_the_skew_is_expired(renewed, acquired, state):
    st = ls.lease_state(held(renewed=renewed, acquired=acquired), 'me', T0)
    assert st['state'] == state
    if state == 'stale':
        claimed = (ls.format_time(renewed), ls.format_time(acquired))
        assert st['expires_in_s'] == 0.0 and st['future'].split()[1] in claimed
    else:
        assert 'future' not in st


def test_our_own_lease_stays_ours_whatever_its_times():
    assert ls.lease_state(held(holder='me', renewed=T0 + 86400), 'me', T0)['state'] == 'ours'


def test_the_takeover_warning_names_the_holder_and_the_future_time():
    year = T0 + 365 * 86400
    warning = ls.takeover_warning(ls.lease_state(held(renewed=year), 'me', T0), 'ns/gpuops-gpu-rollout')
    for part in ('took over the rollout lock (Lease ns/gpuops-gpu-rollout)', 'ops@ctl pid 7', 'holder other',
                 'renewTime %s' % ls.format_time(year), 'more than %ss ahead' % ls.CLOCK_SKEW, 'NTP'):
        assert part in warning, warning


def test_an_absurd_lease_duration_counts_as_the_longest_lock_duration():
    lease = held(duration=10 * 365 * 86400)
    assert ls.lease_state(lease, 'me', T0 + ls.MAX_DURATION - 1)['state'] == 'held'
    st = ls.lease_state(lease, 'me', T0 + ls.MAX_DURATION)
    assert st['state'] == 'stale' and st['duration_s'] == ls.MAX_DURATION and st['declared_s'] == 10 * 365 * 86400
    busy = ls.busy_message(ls.lease_state(lease, 'me', T0), 'ns/l')
    assert 'leaseDurationSeconds 315360000 counts as 604800s' in busy
    assert 'declared_s' not in ls.lease_state(held(), 'me', T0)


# ---------------------------------------------------------------------------------------- the fence's timing

@pytest.mark.parametrize('confirmed,now,duration,needed', [
    (None, (0.0, T0), 120, True),  # never written: prove first
    ((100.0, T0), (100.0, T0), 120, False),
    ((100.0, T0), (139.9, T0 + 39.9), 120, False),  # younger than a third of the lease: at once
    ((100.0, T0), (140.0, T0 + 40), 120, True),  # a third old: renew before writing
    ((100.0, T0), (100.0 + 3600, T0 + 3600), 120, True),  # a process frozen for an hour
    ((100.0, T0), (150.0, T0 - 600), 120, True),  # the wall clock set back: the monotonic one counts
    ((100.0, T0), (101.0, T0 + 500), 120, True),  # suspended (the monotonic clock stood still): the wall clock
    ((100.0, T0), (103.0, T0 + 3), 10, False),  # the shortest lease: 3.33 s
    ((100.0, T0), (103.4, T0 + 3.4), 10, True),
])
def test_a_write_needs_a_renewal_once_the_last_is_a_third_of_the_lease_old(confirmed, now, duration, needed):
    assert ls.needs_proof(confirmed, now, duration) is needed
