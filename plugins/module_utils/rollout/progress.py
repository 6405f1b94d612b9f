# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What a running rollout is doing, for the job output.

A rollout module runs for as long as its fleet takes, and Ansible shows nothing of a module until it
ends. So the module (``Progress``) rewrites a small JSON file as it goes: the batch it is in, each
node's phase, and the engine's messages, numbered. The action plugin of the module
(plugins/plugin_utils/rollout_progress.py) runs the module asynchronously, reads that file every few
seconds and prints what is new (``new_lines``, each named after the cluster: ``labelled``) and a status line
(``status_line``: the cluster, nodes done of the total and an estimate of the time left, ``eta_seconds``), so
progress shows from ``ansible-playbook`` and in an AWX job's output alike, and the lines of rollouts on several
clusters at once can be told apart.

Also here: the node timeline (``TIMELINE``: when each node was cordoned, drained, labelled,
reported success, verified and uncordoned). The summary table and the set_stats artifact the rollout
roles make of the module's result at the end are pure and live in plans/rollout_summary.py. Pure except
``Progress``, which writes the one file it is given.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import datetime
import json
import os
import signal
import threading
import time

from ansible_collections.gpuops.gpu.plugins.module_utils.plans.rollout_summary import duration_words

FORMAT = 1
KEEP_MESSAGES = 500  # the newest engine messages the file keeps
WRITE_EVERY = 1.0    # seconds between two writes of the node phases (messages are written at once)
WATCH_EVERY = 2.0    # seconds between two looks at the controller's heartbeat file
ALIVE_SUFFIX = '.alive'  # the progress file's name + this: the file the action plugin touches at each read

# (phase left, phase entered) -> the timeline event it records
TIMELINE = {
    ('cordon', 'drain'): 'cordoned', ('cordon', 'label'): 'cordoned', ('drain', 'label'): 'drained',
    ('label', 'wait'): 'labelled', ('wait', 'verify'): 'reported', ('verify', 'uncordon'): 'verified',
    ('uncordon', 'done'): 'uncordoned',
}
TIMELINE_ORDER = ('started', 'cordoned', 'drained', 'labelled', 'reported', 'verified', 'uncordoned')

# a node's phase in words, for the status line
PHASE_WORDS = (('cordon', 'cordoning'), ('drain', 'draining'), ('label', 'labelling'),
               ('wait', 'waiting for the node agent'), ('verify', 'verifying allocatable'),
               ('uncordon', 'uncordoning'), ('done', 'done'), ('failed', 'held'), ('gone', 'gone'))


def utc_iso(when=None):
    """``when`` (time.time(), default now) as ISO 8601 UTC with milliseconds: 2026-11-24T16:40:01.123Z."""
    moment = datetime.datetime.fromtimestamp(time.time() if when is None else when, datetime.timezone.utc)
    return moment.strftime('%Y-%m-%dT%H:%M:%S.') + '%03dZ' % (moment.microsecond // 1000)


def mark(st, left, entered, when=None):
    """Record in the node result ``st`` the timeline event of moving from phase ``left`` to ``entered``."""
    event = TIMELINE.get((left, entered))
    if event:
        st.setdefault('timeline', {})[event] = utc_iso(when)


class Progress(object):
    """The progress file of one module run (``path`` None: messages are only counted, nothing written).

    ``message`` is the engine's ``log`` callback; ``batch`` and ``nodes`` record where it is. Thread
    safe: the engine's workers log too."""

    def __init__(self, path=None, kind='', timeout=None, phase_words=None):
        self.path = path
        self.lock = threading.Lock()
        self.data = {'format': FORMAT, 'pid': os.getpid(), 'kind': kind, 'seq': 0, 'messages': [],
                     'batch': 0, 'batches': 0, 'nodes': {}, 'reasons': {}, 'done': 0, 'updated': utc_iso()}
        if phase_words:  # a module whose nodes pass other phases than the engine's names them (status_line)
            self.data['phase_words'] = [list(pair) for pair in phase_words]
        self.written, self.dirty, self.rolling_since = 0.0, False, None
        if path and threading.current_thread() is threading.main_thread():
            # the action plugin stops an abandoned run (see _stop) with the pid it reads in the file: the
            # handler is in place before the file names the pid
            signal.signal(signal.SIGTERM, _stop)
            if timeout:
                watchdog = threading.Thread(target=self._watch, args=(path + ALIVE_SUFFIX, timeout),
                                            name='gpuops-progress-watchdog')
                watchdog.daemon = True
                watchdog.start()
        self._write()

    def _watch(self, alive, timeout):
        """The dead man's switch: stop this run (SIGTERM, see _stop) when the controller has not touched
        ``alive`` for ``timeout`` seconds: the playbook was killed or lost, and nobody watches the rollout."""
        since = time.time()
        while True:
            time.sleep(min(WATCH_EVERY, timeout / 4.0))
            silent = unwatched_for(alive, since, time.time())
            if silent > timeout:
                self.message('the controller has not read the progress for %ds (the playbook was stopped or lost): '
                             'stopping the rollout; nodes keep their annotations and the next run resumes them'
                             % silent)
                os.kill(os.getpid(), signal.SIGTERM)
                return

    def message(self, text):
        with self.lock:
            self.data['seq'] += 1
            self.data['messages'] = (self.data['messages'] + [[self.data['seq'], text]])[-KEEP_MESSAGES:]
            self._write()

    def start(self, cluster, total):
        """The rollout begins its first batch: the cluster it runs on (a name, '' when unknown) and the nodes it
        changes in all; from now on each write records for how long it has been rolling (``rolling_s``)."""
        with self.lock:
            self.rolling_since = time.monotonic()
            self.data.update(cluster=cluster or '', total=total)
            self._write()

    def batch(self, index, total, names):
        with self.lock:
            self.data.update(batch=index, batches=total, nodes=dict((n, 'cordon') for n in names), reasons={})
            self._write()

    def nodes(self, states, force=False):
        """The batch's node phases (``states``: the engine's node results); written at most every WRITE_EVERY s."""
        with self.lock:
            phases = dict((n, st['phase']) for n, st in states.items())
            reasons = dict((n, st['reason']) for n, st in states.items() if st.get('reason'))
            if phases != self.data['nodes'] or reasons != self.data['reasons']:
                self.data.update(nodes=phases, reasons=reasons)
                self.dirty = True
            if self.dirty and (force or time.monotonic() - self.written >= WRITE_EVERY):
                self._write()

    def finished(self, done):
        """A batch ended: ``done`` nodes finished so far in the whole rollout (the batch's phases are cleared)."""
        with self.lock:
            self.data.update(done=done, nodes={}, reasons={})
            self._write()

    def _write(self):
        self.written, self.dirty = time.monotonic(), False
        if self.rolling_since is not None:
            self.data['rolling_s'] = round(self.written - self.rolling_since, 1)
        if not self.path:
            return
        self.data['updated'] = utc_iso()
        temp = '%s.%d.tmp' % (self.path, os.getpid())
        with open(temp, 'w') as handle:
            json.dump(self.data, handle)
        os.replace(temp, self.path)


def unwatched_for(alive, since, now):
    """Seconds since the controller last touched the file ``alive`` (or since ``since`` if it never did)."""
    try:
        touched = max(os.stat(alive).st_mtime, since)
    except OSError:
        touched = since
    return now - touched


def _stop(_signum, _frame):
    """SIGTERM while a rollout runs in the background (the playbook was interrupted or timed out): stop as
    Ctrl-C stops a run in the foreground, so the rollout lock is released; the nodes keep their annotations and
    the next run resumes them."""
    raise KeyboardInterrupt('stopped by SIGTERM')


# ====================================================================== reading it (the action plugin)
def new_lines(data, seen):
    """The engine's messages numbered above ``seen``, and the new ``seen``."""
    fresh = [(seq, text) for seq, text in (data or {}).get('messages') or [] if seq > seen]
    return [text for _seq, text in fresh], max([seen] + [seq for seq, _text in fresh])


def labelled(data, text):
    """An engine message as printed: ``[cluster] text`` once the progress names the cluster, else the text."""
    cluster = (data or {}).get('cluster')
    return '[%s] %s' % (cluster, text) if cluster else text


def eta_seconds(done, total, rolling_s):
    """The time left, estimated from the pace so far (``done`` of ``total`` nodes in ``rolling_s`` seconds);
    None before the first node is done or without a total."""
    if not total or not done or rolling_s is None or rolling_s <= 0:
        return None
    return max(0.0, rolling_s / done * (total - done))


def status_line(data, elapsed):
    """One line: where the rollout is, e.g. ``mig rollout on prod-a 2m10s, about 8m00s left: batch 2/5 ·
    draining: a, b · waiting for the node agent: c · held: d (why) · done: 4/20``. The part after the first ': '
    changes only when the rollout moves (the action prints the line again then, or after its heartbeat)."""
    data = data or {}
    head = '%s rollout%s %s' % (data.get('kind') or 'gpu', ' on %s' % data['cluster'] if data.get('cluster') else '',
                                duration_words(elapsed))
    if not data.get('batches'):
        return head + ': planning (or waiting for the rollout lock)'
    parts = ['batch %d/%d' % (data['batch'], data['batches'])]
    by_phase = {}
    for name, phase in sorted((data.get('nodes') or {}).items()):
        by_phase.setdefault(phase, []).append(name)
    reasons = data.get('reasons') or {}
    for phase, words in data.get('phase_words') or PHASE_WORDS:
        names = by_phase.get(phase)
        if not names or phase == 'done':
            continue
        if phase == 'failed':
            names = ['%s (%s)' % (n, reasons.get(n, 'no reason recorded')) for n in names]
        parts.append('%s: %s' % (words, ', '.join(names)))
    done = data.get('done', 0) + len(by_phase.get('done', []))
    parts.append('done: %d/%d' % (done, data['total']) if data.get('total') else 'done: %d' % done)
    left = eta_seconds(done, data.get('total'), data.get('rolling_s'))
    if left is not None:
        head += ', about %s left' % duration_words(left)
    return '%s: %s' % (head, ' · '.join(parts))
