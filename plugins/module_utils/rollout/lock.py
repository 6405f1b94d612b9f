# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The rollout lock: one ``coordination.k8s.io/v1`` Lease per cluster (``gpuops-gpu-rollout`` in the
GPU operator namespace), held by every disruptive run (MIG and sharing rollouts, the reset and HAMi
removal roles) so that two of them never change nodes at the same time.

Where it lives (``lock_namespace``): the namespace the user names with ``lock_namespace``, else the
GPU operator's own, as the operator writes it in the ClusterPolicy ``status.namespace``, else
``operator_namespace``; so runs given different ``operator_namespace`` values still meet at one lock.

The pure part (what a Lease says, what to write, the messages) is common/lease.py.

``RolloutLock`` over the run's ``k8s.client.Connection`` (CustomObjectsApi, group
coordination.k8s.io, plural leases). It is created with POST (409: another run created it first),
taken over or renewed with a PUT carrying the resourceVersion it read (409: it changed since, read
again) and deleted with a resourceVersion precondition, so two runs can never both think they hold
it. While a run holds it, a daemon thread renews it every quarter of its duration; a killed run's
lease goes stale after ``lock_duration`` seconds and the next run takes it over with a warning.

The fence: every write of a rollout (rollout/api.py) first calls ``fence``, which returns at once while
the last confirmed write of the Lease is younger than a third of its duration and otherwise renews it
before the write (a PUT with the resourceVersion last seen), raising ``LockLost`` when another run took
it over meanwhile: a run that was frozen or cut off past its lease never writes after the takeover.
``run`` is the module gpuops.gpu.rollout_lock, for roles whose disruptive work is several tasks.
docs/troubleshooting.md#the-rollout-lock explains the lock to users.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import threading
import time

from ansible_collections.gpuops.gpu.plugins.module_utils.common.lease import (
    MAX_DURATION, RENEW_SHARE, busy_message, describe, lease_body, lease_state, lock_info, needs_proof, new_holder,
    takeover_warning)
from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import LEASE, LOCK_LEASE_NAME
from ansible_collections.gpuops.gpu.plugins.module_utils.common.errors import (
    InputError, RolloutFailed, api_error_message, status_of)
from ansible_collections.gpuops.gpu.plugins.module_utils.common.waiter import Waiter
from ansible_collections.gpuops.gpu.plugins.module_utils.ops.cluster_policy import list_policies

DEFAULT_DURATION = 120
DEFAULT_NAMESPACE = 'nvidia-gpu-operator'


def lock_namespace(conn, params):
    """The namespace of the rollout lock for a module's ``params``: ``lock_namespace`` when set, else
    the GPU operator's namespace from the ClusterPolicy ``status.namespace`` (written by the operator
    itself, and only through the status subresource), else ``operator_namespace``."""
    if params.get('lock_namespace'):
        return params['lock_namespace']
    policies, _served = list_policies(conn)
    statuses = [p.get('status') or {} for p in policies if isinstance(p, dict)]
    written = sorted((st.get('state') == 'ignored', st['namespace']) for st in statuses if st.get('namespace'))
    if written:  # the ClusterPolicy the operator reconciles first (all of them name its one namespace)
        return written[0][1]
    return params.get('operator_namespace') or DEFAULT_NAMESPACE


class LockBusy(InputError, ValueError):
    """Another run holds the rollout lock (or lock_holder does not): nothing was written."""


class LockLost(RolloutFailed):
    """The lease is no longer this run's (another run took it over): the rollout stops before its next
    write; nodes already started keep their resume annotations."""


class RolloutLock(object):
    """The rollout lock of one run through ``conn`` (k8s.client.Connection) in ``namespace``.

    ``holder``: this run's identity (a new one by default). ``joined`` (lock_holder): the lease
    was taken by ``holder`` before this run (a role), so ``hold`` only checks and renews it and
    ``let_go`` leaves it. ``clock`` is wall-clock epoch seconds (Lease times), ``monotonic`` a clock
    that is never set back (the fence's age of the last confirmation), ``sleep`` pauses.
    """

    def __init__(self, conn, namespace, holder=None, duration=DEFAULT_DURATION, info=None, joined=False,
                 clock=time.time, sleep=time.sleep, log=None, monotonic=time.monotonic):
        self.conn = conn
        self.namespace = namespace
        self.holder = holder or new_holder()
        self.duration = int(duration or DEFAULT_DURATION)
        self.info = info or lock_info('', ())
        self.joined = joined
        self.clock = clock
        self.monotonic = monotonic
        self.sleep = sleep
        self.log = log or (lambda msg: None)
        self.warnings = []
        self.lease = None  # the last lease read or written
        self.lost = None  # why the lease is no longer this run's, once it is not
        self.held = False
        self.confirmed = None  # (monotonic, wall clock) as the last successful write of the lease was sent
        self._mutex = threading.RLock()  # one renewal at a time (the renewing thread, the fences of the workers)
        self._stop = threading.Event()
        self._thread = None
        self._reported = 0

    @classmethod
    def for_rollout(cls, conn, opts, purpose, nodes, log=None):
        """The lock of a rollout module run from its options (lock_holder, lock_duration, and where it
        lives: lock_namespace)."""
        return cls(conn, lock_namespace(conn, opts), holder=opts.get('lock_holder'),
                   duration=opts.get('lock_duration'), info=lock_info(purpose, nodes),
                   joined=bool(opts.get('lock_holder')), log=log)

    @property
    def where(self):
        return '%s/%s' % (self.namespace, LOCK_LEASE_NAME)

    def _args(self, named=True):
        group, version, plural = LEASE
        return (group, version, self.namespace, plural) + ((LOCK_LEASE_NAME,) if named else ())

    def read(self, timeout=None):
        """The Lease dict, or None when there is none."""
        kwargs = {'_request_timeout': timeout} if timeout else {}
        self.lease = self.conn.call_or_none(self.conn.custom.get_namespaced_custom_object, *self._args(), **kwargs)
        return self.lease

    def status(self):
        """The lock as check mode reports it (one read, nothing written): lease_state plus 'lease'."""
        try:
            state = lease_state(self.read(), self.holder if self.joined else None, self.clock())
        except Exception as exc:  # e.g. 403 without the Lease rules: reported, the plan still stands
            if status_of(exc) is None:
                raise
            state = {'state': 'unknown', 'error': api_error_message(exc)}
        state['lease'] = self.where
        return state

    def _write(self, lease, timeout=None):
        """Create or replace the Lease as this run's; once the API accepted it, ``confirmed`` is the time
        it was sent (the lease runs from then, by this host's clocks)."""
        sent = (self.monotonic(), self.clock())
        body = lease_body(self.namespace, self.holder, self.duration, sent[1], self.info, lease)
        kwargs = {'_request_timeout': timeout} if timeout else {}
        if lease is None:
            written = self.conn.call(self.conn.custom.create_namespaced_custom_object,
                                     *(self._args(False) + (body,)), **kwargs)
        else:
            written = self.conn.call(self.conn.custom.replace_namespaced_custom_object,
                                     *(self._args() + (body,)), **kwargs)
        self.confirmed = sent
        return written

    def try_take(self):
        """One attempt: (True, state before) when this run now holds the lease, (False, state) when
        another run holds it, (None, state) when another run wrote it meanwhile (409: read again)."""
        lease = self.read()
        state = lease_state(lease, self.holder, self.clock())
        if state['state'] == 'held':
            return False, state
        try:
            self.lease = self._write(lease)
        except Exception as exc:
            if status_of(exc) == 404 and lease is None:
                raise InputError('cannot create the rollout lock (Lease %s): namespace %s not found; no '
                                 'ClusterPolicy says where the GPU operator runs (status.namespace), so set '
                                 'operator_namespace (or lock_namespace) to the GPU operator namespace'
                                 % (self.where, self.namespace))
            if status_of(exc) in (404, 409):
                return None, state
            raise
        if state['state'] == 'stale':
            self.warnings.append(takeover_warning(state, self.where))
            self.log(self.warnings[-1])
        self.held = True
        return True, state

    def acquire(self, timeout=0, interval=2.0):
        """Take the lock, waiting up to ``timeout`` seconds (polling every ``interval``) while
        another run holds it. Returns the state it had; raises LockBusy (nothing written)."""
        waiter = Waiter(interval, sleep=self.sleep, clock=self.clock)
        deadline = waiter.deadline(max(0, timeout or 0))
        logged, races = None, 0
        while True:
            taken, state = self.try_take()
            if taken:
                return state
            if taken is None and races < 5:  # another run wrote it meanwhile: read who it is
                races += 1
                continue
            if deadline.passed():
                raise LockBusy(busy_message(state, self.where, waited=timeout))
            if taken is False and state.get('holder') != logged:
                logged = state.get('holder')
                self.log('waiting up to %ss for the rollout lock held by %s' % (timeout, describe(state)))
            waiter.pause(min(interval, deadline.left()))

    def join(self):
        """lock_holder: check that ``holder`` holds the lease and renew it; LockBusy when it does not."""
        state = lease_state(self.read(), self.holder, self.clock())
        if state['state'] != 'ours':
            held = 'it is free' if state['state'] == 'free' else 'it is held by %s' % describe(state)
            raise LockBusy('lock_holder %s does not hold the rollout lock (Lease %s): %s; nothing was changed. Take '
                           'it first with gpuops.gpu.rollout_lock (state present) and pass its holder.'
                           % (self.holder, self.where, held))
        self.duration = state.get('duration_s') or self.duration  # renewed for the duration its holder chose
        self.held = self.renew()
        return state

    def renew(self, timeout=None):
        """Write a new renewTime with the resourceVersion last seen (409: read again, at most twice).
        False, with ``lost`` set, once the lease is no longer this run's."""
        with self._mutex:
            if self.lost:
                return False
            for _attempt in range(3):
                lease = self.lease or self.read(timeout)
                state = lease_state(lease, self.holder, self.clock())
                if state['state'] != 'ours':
                    self.lost = ('the lease is gone' if state['state'] == 'free'
                                 else 'it is now held by %s' % describe(state))
                    return False
                try:
                    self.lease = self._write(lease, timeout)
                    return True
                except Exception as exc:
                    if status_of(exc) not in (404, 409):
                        raise
                    self.lease = None
            return False

    def fence(self, timeout=None):
        """Proof, before a write, that this run still holds the lease: returns at once while the last
        confirmed write of the lease is younger than a third of its duration (common/lease.py
        needs_proof), else renews it first. Raises LockLost (no write may follow) once the lease is
        not this run's; an API error of the renewal is raised as it is (the write waits, like any
        other request during an outage). ``timeout``: the renewal's (connect, read) timeout."""
        if not self.lost and not needs_proof(self.confirmed, (self.monotonic(), self.clock()), self.duration):
            return
        with self._mutex:
            if not self.lost and needs_proof(self.confirmed, (self.monotonic(), self.clock()), self.duration):
                if not self.renew(timeout) and not self.lost:
                    self.lost = 'it could not be renewed: it kept changing under this run'
            if self.lost:
                raise self._lost_error()

    def hold(self, timeout=0, interval=2.0):
        """Take (or, joined, check) the lock and keep renewing it every quarter of its duration in a
        daemon thread until ``let_go``. Returns self."""
        if self.joined:
            self.join()
        else:
            self.acquire(timeout, interval)
        self._thread = threading.Thread(target=self._keep, name='gpuops-rollout-lock', daemon=True)
        self._thread.start()
        return self

    def _keep(self):
        while not self._stop.wait(max(1.0, float(self.duration) / RENEW_SHARE)):
            try:
                if not self.renew():
                    self.log('lost the rollout lock: %s' % self.lost)
                    return
            except Exception as exc:  # an API outage: try again at the next renewal
                self.log('could not renew the rollout lock (%s); retrying' % api_error_message(exc))

    def ensure(self, result=None):
        """Raise LockLost (with ``result``) when the lease was lost while this run held it."""
        if self.lost:
            raise self._lost_error(result)

    def _lost_error(self, result=None):
        return LockLost('the rollout lock (Lease %s) is no longer held by this run (%s): it was not renewed within '
                        'lock_duration (%ss) and another run took it over; stopped before its next write: nodes '
                        'already started keep their gpuops.gpu/rollout-* annotations, run again to resume'
                        % (self.where, self.lost, self.duration), result)

    def release(self):
        """Delete the lease if it is still this run's (resourceVersion precondition). True when deleted."""
        for _attempt in range(3):
            lease = self.read()
            if lease_state(lease, self.holder, self.clock())['state'] != 'ours':
                return False
            precondition = {'preconditions': {'resourceVersion': lease['metadata'].get('resourceVersion')}}
            try:
                self.conn.call(self.conn.custom.delete_namespaced_custom_object, *self._args(), body=precondition)
                self.lease, self.held = None, False
                return True
            except Exception as exc:
                if status_of(exc) == 404:
                    return False
                if status_of(exc) != 409:
                    raise
        return False

    def let_go(self):
        """Stop renewing; release the lease unless joined. Never raises: a lease that could not be
        deleted expires after its duration (a warning says so). Returns the warnings not returned yet
        (a stale lease taken over, a failed release)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None
        if self.held and not self.joined:
            try:
                self.release()
            except Exception as exc:
                self.warnings.append('could not release the rollout lock (Lease %s: %s); it expires after %ss'
                                     % (self.where, api_error_message(exc), self.duration))
        new, self._reported = self.warnings[self._reported:], len(self.warnings)
        return new


def _summary(state):
    return dict((k, state.get(k)) for k in ('state', 'holder', 'who', 'purpose', 'nodes', 'since'))


def module_errors(params):
    """Why the options of gpuops.gpu.rollout_lock cannot work (nothing is read before they are fixed)."""
    errors = []
    if not 0 <= params['lock_timeout'] <= 7 * 24 * 3600:
        errors.append('lock_timeout must be between 0 and 604800 seconds (one week), got %s' % params['lock_timeout'])
    if not 10 <= params['lock_duration'] <= MAX_DURATION:
        errors.append('lock_duration must be between 10 and %s seconds, got %s' % (MAX_DURATION, params['lock_duration']))
    if params['state'] == 'absent' and not params.get('holder'):
        errors.append('state absent needs holder: the holder identity that state present returned')
    return errors


def run(conn, params, check_mode, log=None):
    """gpuops.gpu.rollout_lock: take the lock with state present (a new holder), or, given the holder
    that took it, renew it (the proof a role's next writes need: it fails when that holder no longer
    holds it); release it with state absent. Check mode reads it and writes nothing."""
    errors = module_errors(params)
    if errors:
        raise InputError('nothing was changed; fix these first: ' + ' | '.join(errors))
    namespace = lock_namespace(conn, params)
    lock = RolloutLock(conn, namespace, holder=params.get('holder'), duration=params['lock_duration'],
                       info=lock_info(params.get('purpose') or 'a gpuops.gpu role', params.get('nodes') or ()), log=log)
    before = lease_state(lock.read(), lock.holder, lock.clock())
    changed, warnings = False, []
    if params['state'] == 'present' and params.get('holder') and before['state'] != 'ours' and not check_mode:
        held = 'it is free' if before['state'] == 'free' else 'it is held by %s' % describe(before)
        raise LockBusy('holder %s does not hold the rollout lock (Lease %s): %s. It expired (not renewed for its '
                       'lock_duration) and was taken over, or was released; nothing was changed. Run the role again '
                       '(it takes the lock anew).' % (lock.holder, lock.where, held))
    if params['state'] == 'present':  # in check mode, a holder may be the one a check-mode take made up
        if before['state'] == 'held' and check_mode:
            warnings.append('check mode: the rollout lock is held by %s; a real run would wait lock_timeout (%ss) '
                            'for it, then fail' % (describe(before), params['lock_timeout']))
        elif check_mode:
            changed = before['state'] != 'ours'
        elif before['state'] == 'ours':
            if not lock.renew():
                raise LockBusy('the rollout lock (Lease %s) is no longer held by %s: %s'
                               % (lock.where, lock.holder, lock.lost))
        else:
            lock.acquire(params['lock_timeout'], max(0.2, params['poll_interval']))
            changed = True
    elif before['state'] == 'ours':
        changed = check_mode or lock.release()
    elif before['state'] != 'free':
        warnings.append('the rollout lock (Lease %s) is held by %s, not by %s: left alone'
                        % (lock.where, describe(before), lock.holder))
    if not check_mode:
        after = lease_state(lock.read(), lock.holder, lock.clock())
    elif changed:  # what would be written
        body = lease_body(namespace, lock.holder, lock.duration, lock.clock(), lock.info, lock.lease)
        after = {'state': 'free'} if params['state'] == 'absent' else lease_state(body, lock.holder, lock.clock())
    else:
        after = before
    return {'changed': changed, 'holder': lock.holder, 'lease': lock.where, 'namespace': namespace, 'lock': after,
            'diff': {'before': _summary(before), 'after': _summary(after)}, 'warnings': warnings + lock.warnings}
