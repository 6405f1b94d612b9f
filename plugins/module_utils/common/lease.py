# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A Kubernetes ``coordination.k8s.io/v1`` Lease used as a lock, the pure part (standard library and
common/ only; ``now`` is epoch seconds, so the clock is injectable): what a Lease says to a holder
(``lease_state``: free, ours, held by another, or stale: not renewed for its leaseDurationSeconds,
or stamped in the future beyond ``CLOCK_SKEW``), what to write (``lease_body``), when a write must
first renew the lease to prove it is still held (``needs_proof``, the fence), the annotations saying
who holds it, why and on which nodes (``lock_info``), and the messages. The fields are the Kubernetes API's LeaseSpec (kubernetes/api,
coordination/v1/types.go: holderIdentity, leaseDurationSeconds, acquireTime, renewTime,
leaseTransitions; the times are MicroTime, RFC 3339 with microseconds). The API side is
rollout/lock.py."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import datetime
import getpass
import os
import socket
import uuid

from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import (
    ANN_LOCK_NODES, ANN_LOCK_PURPOSE, ANN_LOCK_WHO, LOCK_LEASE_NAME, managed_by_labels)
from ansible_collections.gpuops.gpu.plugins.module_utils.common.objects import annotations_of

NODES_MAX = 900  # characters of the nodes annotation; longer lists are cut with "+N more"
# Seconds a Lease time (renewTime, acquireTime) may lie ahead of this host's clock and still count.
# Hosts kept in sync (NTP) differ by far less; a time further ahead is a clock gone wrong or a Lease
# written by hand, and trusting it would hold the lock until that date (a year, in one write), so such
# a Lease is treated as expired: taken over, with a warning naming the holder and the time.
CLOCK_SKEW = 15
# The longest leaseDurationSeconds counted (lock_duration's maximum, one week): a Lease claiming more is
# counted as holding for a week, so a typo or a forged Lease cannot hold the lock for years.
MAX_DURATION = 7 * 24 * 3600
# The fence: a write needs a renewal first once the last confirmed one is older than duration /
# FENCE_SHARE; the renewing thread renews every duration / RENEW_SHARE, so that is rare.
FENCE_SHARE = 3
RENEW_SHARE = 4
_UTC = datetime.timezone.utc


def format_time(epoch):
    """A Lease MicroTime (RFC 3339, microseconds, UTC) for ``epoch`` seconds."""
    return datetime.datetime.fromtimestamp(epoch, _UTC).strftime('%Y-%m-%dT%H:%M:%S.%fZ')


def parse_time(text):
    """Epoch seconds of a Lease time (``2026-01-02T03:04:05.123456Z`` or without fraction), else None."""
    if not text:
        return None
    text = str(text).strip()
    if text.endswith('Z'):
        text = text[:-1] + '+00:00'
    try:
        value = datetime.datetime.fromisoformat(text)
    except ValueError:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=_UTC)
    return value.timestamp()


def nodes_text(nodes, limit=NODES_MAX):
    """The nodes as one comma list of at most ``limit`` characters (``...,+N more`` when cut)."""
    names = sorted(set(nodes or ()))
    text = ','.join(names)
    if len(text) <= limit:
        return text
    kept, size = [], 0
    for name in names:
        if size + len(name) + 1 > limit - 16:
            break
        kept.append(name)
        size += len(name) + 1
    return ','.join(kept + ['+%d more' % (len(names) - len(kept))])


def who_am_i():
    """``user@host pid N`` of this process (where the module runs); never a secret."""
    try:
        user = getpass.getuser()
    except Exception:  # no user name in a container without a passwd entry
        user = str(os.getuid()) if hasattr(os, 'getuid') else 'unknown'
    return '%s@%s pid %d' % (user, socket.gethostname(), os.getpid())


def new_holder():
    """A holder identity unique to this run: host, pid and a random suffix."""
    return '%s-%d-%s' % (socket.gethostname()[:40], os.getpid(), uuid.uuid4().hex[:8])


def lock_info(purpose, nodes, who=None):
    """The Lease annotations of a holder: why, which nodes, who."""
    return {ANN_LOCK_PURPOSE: str(purpose or '')[:200], ANN_LOCK_NODES: nodes_text(nodes),
            ANN_LOCK_WHO: who or who_am_i()}


def lease_state(lease, holder, now):
    """What the Lease dict ``lease`` (None: there is none) says at ``now`` to the run ``holder``:
    {'state': 'free' | 'ours' | 'held' | 'stale', 'holder', 'who', 'purpose', 'nodes', 'since'
    (acquireTime), 'renewed' (renewTime), 'duration_s', 'expires_in_s'}. 'stale': another run's
    lease not renewed for its leaseDurationSeconds (a killed run), or whose renewTime or acquireTime
    lies more than CLOCK_SKEW seconds ahead of ``now`` (then 'future': that field and its time). A
    leaseDurationSeconds over MAX_DURATION counts as MAX_DURATION ('declared_s': what it says)."""
    if not lease:
        return {'state': 'free'}
    spec = lease.get('spec') or {}
    ann = annotations_of(lease)
    current = spec.get('holderIdentity') or ''
    declared = int(spec.get('leaseDurationSeconds') or 0)
    duration = min(declared, MAX_DURATION)
    renewed = parse_time(spec.get('renewTime')) or parse_time(spec.get('acquireTime'))
    left = (renewed + duration - now) if renewed is not None else 0.0
    future = [(field, spec[field]) for field in ('renewTime', 'acquireTime')
              if (parse_time(spec.get(field)) or 0) > now + CLOCK_SKEW]
    out = {'holder': current, 'who': ann.get(ANN_LOCK_WHO, ''), 'purpose': ann.get(ANN_LOCK_PURPOSE, ''),
           'nodes': ann.get(ANN_LOCK_NODES, ''), 'since': spec.get('acquireTime') or '',
           'renewed': spec.get('renewTime') or '', 'duration_s': duration, 'expires_in_s': round(max(0.0, left), 1)}
    if declared > duration:
        out['declared_s'] = declared
    if not current:
        out['state'] = 'free'
    elif holder and current == holder:
        out['state'] = 'ours'
    elif future:
        out.update(state='stale', expires_in_s=0.0, future='%s %s' % future[0])
    elif left <= 0:
        out['state'] = 'stale'
    else:
        out['state'] = 'held'
    return out


def needs_proof(confirmed, now, duration):
    """The fence: must a write at ``now`` first renew the lease? ``confirmed`` and ``now`` are
    (monotonic, wall clock) seconds, ``confirmed`` taken as the last successful write of the lease
    was sent (None: never). True once the older of the two readings is duration / FENCE_SHARE old:
    another run can take the lease over only after ``duration`` without renewal, so a write that
    follows a renewal younger than that lands with two thirds of the lease left for the request
    itself and for the clocks' difference. The monotonic clock keeps counting when the wall clock
    is set back; the wall clock when the host was suspended (which stops the monotonic one)."""
    if confirmed is None:
        return True
    age = max(now[0] - confirmed[0], now[1] - confirmed[1])
    return age >= float(duration) / FENCE_SHARE


def lease_body(namespace, holder, duration, now, info, lease=None):
    """The Lease to write so that ``holder`` holds it from ``now`` for ``duration`` seconds: a new one
    (``lease`` None), or ``lease`` renewed (same holder: acquireTime and annotations kept) or taken
    over (acquireTime, annotations ``info``, leaseTransitions + 1). Its resourceVersion is kept, so
    the PUT fails with 409 when the Lease changed since it was read."""
    stamp = format_time(now)
    if lease:
        body = copy.deepcopy(lease)
    else:
        body = {'apiVersion': 'coordination.k8s.io/v1', 'kind': 'Lease',
                'metadata': {'name': LOCK_LEASE_NAME, 'namespace': namespace}, 'spec': {}}
    meta, spec = body.setdefault('metadata', {}), body.setdefault('spec', {})
    meta['labels'] = managed_by_labels(meta.get('labels'))
    if spec.get('holderIdentity') != holder:
        if lease and spec.get('holderIdentity'):
            spec['leaseTransitions'] = int(spec.get('leaseTransitions') or 0) + 1
        spec['acquireTime'] = stamp
        meta['annotations'] = dict(meta.get('annotations') or {}, **info)
    spec.update(holderIdentity=holder, leaseDurationSeconds=int(duration), renewTime=stamp)
    return body


def describe(state):
    """'<who> (holder <id>) for <purpose> on nodes <nodes>, since <acquireTime>'."""
    text = '%s (holder %s)' % (state.get('who') or 'an unknown run', state.get('holder') or '?')
    if state.get('purpose'):
        text += ' for %s' % state['purpose']
    if state.get('nodes'):
        text += ' on nodes %s' % state['nodes']
    if state.get('since'):
        text += ', since %s' % state['since']
    return text


def busy_message(state, where, waited=0):
    """Why the lock could not be taken: who holds it, for what, since when, and what to do."""
    text = 'another GPU rollout holds the rollout lock (Lease %s): %s; nothing was changed. ' % (where, describe(state))
    if waited:
        text += 'Waited %ss (lock_timeout) for it. ' % waited
    if state.get('declared_s'):
        text += ('Its leaseDurationSeconds %s counts as %ss, the longest lock_duration. '
                 % (state['declared_s'], MAX_DURATION))
    text += ('Its lease expires in %ss unless renewed. Wait for that run to finish, or set lock_timeout (seconds) to '
             'wait for it; a killed run\'s lease is taken over once it expired.' % state.get('expires_in_s', 0))
    return text


def takeover_warning(state, where):
    """The warning of a stale lease taken over, naming the run that left it (and, for a Lease stamped
    in the future, the time it claimed)."""
    if state.get('future'):
        return ('took over the rollout lock (Lease %s) of %s: its %s lies more than %ss ahead of this host\'s clock, '
                'so it was treated as expired (a clock far ahead, or a Lease written by hand); check the clocks (NTP) '
                'of the hosts that run gpuops.gpu. Nodes that run left cordoned carry gpuops.gpu/rollout-* '
                'annotations; a rollout of the same kind resumes them.'
                % (where, describe(state), state['future'], CLOCK_SKEW))
    return ('took over the stale rollout lock (Lease %s) of %s: it was last renewed %s and expired after %ss (that run '
            'was probably killed). Nodes it left cordoned carry gpuops.gpu/rollout-* annotations; a rollout of the '
            'same kind resumes them.' % (where, describe(state), state.get('renewed') or 'never',
                                         state.get('duration_s')))
