# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What a running rollout is doing, for the job output.

A rollout module runs for as long as its fleet takes, and Ansible shows nothing of a module until it
ends. So the module (``Progress``) rewrites a small JSON file as it goes: the batch it is in, each
node's phase, and the engine's messages, numbered. The action plugin of the module
(plugins/plugin_utils/rollout_progress.py) runs the module asynchronously, reads that file every few
seconds and prints what is new (``new_lines``) and a status line (``status_line``), so progress
shows from ``ansible-playbook`` and in an AWX job's output alike.

Also here: the node timeline (``TIMELINE``: when each node was cordoned, drained, labelled,
reported success, verified and uncordoned) and the summary table the rollout roles print at the end
(``summary_rows``/``summary_table``, over the module's ``nodes`` result). Pure except ``Progress``,
which writes the one file it is given.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import datetime
import json
import os
import signal
import threading
import time

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

    def __init__(self, path=None, kind='', timeout=None):
        self.path = path
        self.lock = threading.Lock()
        self.data = {'format': FORMAT, 'pid': os.getpid(), 'kind': kind, 'seq': 0, 'messages': [],
                     'batch': 0, 'batches': 0, 'nodes': {}, 'reasons': {}, 'done': 0, 'updated': utc_iso()}
        self.written, self.dirty = 0.0, False
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


def status_line(data, elapsed):
    """One line: where the rollout is, e.g.
    ``mig rollout 2m10s: batch 2/5 · draining: a, b · waiting for the node agent: c · done: 4 · held: d (why)``."""
    data = data or {}
    head = '%s rollout %s' % (data.get('kind') or 'gpu', duration_words(elapsed))
    if not data.get('batches'):
        return head + ': planning (or waiting for the rollout lock)'
    parts = ['batch %d/%d' % (data['batch'], data['batches'])]
    by_phase = {}
    for name, phase in sorted((data.get('nodes') or {}).items()):
        by_phase.setdefault(phase, []).append(name)
    reasons = data.get('reasons') or {}
    for phase, words in PHASE_WORDS:
        names = by_phase.get(phase)
        if not names or phase == 'done':
            continue
        if phase == 'failed':
            names = ['%s (%s)' % (n, reasons.get(n, 'no reason recorded')) for n in names]
        parts.append('%s: %s' % (words, ', '.join(names)))
    parts.append('done: %d' % (data.get('done', 0) + len(by_phase.get('done', []))))
    return '%s: %s' % (head, ' · '.join(parts))


def duration_words(seconds):
    """65.2 → '1m05s', 3725 → '1h02m05s', 9.4 → '9s'."""
    seconds = int(round(seconds or 0))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return '%dh%02dm%02ds' % (hours, minutes, secs)
    if minutes:
        return '%dm%02ds' % (minutes, secs)
    return '%ds' % secs


# ====================================================================== the summary at the end
SUMMARY_HEADER = ('NODE', 'FROM -> TO', 'DURATION', 'EVICTED', 'RESULT')


def _result_words(st):
    phase = st.get('phase')
    if phase == 'done':
        return 'done' if st.get('changed', True) else 'done (nothing to change)'
    if phase == 'failed':
        return 'held: %s' % (st.get('reason') or 'no reason recorded')
    if phase == 'gone':
        return 'gone: %s' % (st.get('reason') or 'node deleted')
    if phase == 'planned':
        return 'planned (resumes an unfinished run)' if st.get('resume') else 'planned'
    return 'not finished (%s)' % (phase or 'unknown')


def summary_rows(nodes):
    """Rows (tuples of strings, SUMMARY_HEADER's columns) for a rollout's ``nodes`` result; a node a
    run did not reach (``untouched``) is not in ``nodes`` and is not listed."""
    rows = []
    for st in nodes or []:
        change = '%s -> %s' % (st.get('from') or '-', st.get('to') or '-')
        took = '-' if st.get('phase') == 'planned' else duration_words(st.get('duration_s'))
        rows.append((str(st.get('node')), change, took,
                     str(len(st.get('evicted') or [])), _result_words(st)))
    return rows


def rollout_results(value):
    """A registered rollout result, or a list of them, as a list; skipped tasks' results left out.
    Raises ValueError for anything else."""
    results = value if isinstance(value, list) else [value]
    for index, result in enumerate(results):
        if not isinstance(result, dict):
            raise ValueError('expected the registered result of gpuops.gpu.mig_rollout or gpuops.gpu.sharing_rollout '
                             '(a dict) or a list of them; item %d is %s' % (index, type(result).__name__))
        if not isinstance(result.get('nodes', []), list):
            raise ValueError('item %d: nodes must be a list, got %s' % (index, type(result['nodes']).__name__))
    return [r for r in results if not r.get('skipped')]


def _planned(results):
    """The check-mode plan of the results as node entries (phase ``planned``)."""
    return [dict(entry, phase='planned', evicted=entry.get('pods_to_evict'))
            for result in results for batch in result.get('plan') or [] for entry in batch.get('nodes') or []]


def summary_table(results, title='GPU rollout'):
    """The summary lines of one or more rollout results (module results, in order): a header, one
    row per node (the plan's nodes in check mode), then a total and the nodes left untouched."""
    results = rollout_results(results)
    nodes = [st for result in results for st in result.get('nodes') or []] or _planned(results)
    untouched = [name for result in results for name in result.get('untouched') or []]
    if not nodes and not untouched:
        return ['%s: nothing to change' % title]
    rows = [SUMMARY_HEADER] + summary_rows(nodes)
    widths = [max(len(row[i]) for row in rows) for i in range(len(SUMMARY_HEADER) - 1)]
    lines = ['%s: %d node(s)' % (title, len(nodes))]
    lines.extend('  '.join([cell.ljust(width) for cell, width in zip(row[:-1], widths)] + [row[-1]]) for row in rows)
    count = dict((phase, sum(1 for st in nodes if st.get('phase') == phase)) for phase in ('done', 'failed', 'gone'))
    if nodes[0].get('phase') == 'planned':
        lines.append('planned %d (check mode: nothing was changed)' % len(nodes))
    else:
        lines.append('done %d, held %d, gone %d, not started %d' % (
            count['done'], count['failed'], count['gone'], len(untouched)))
    if untouched:
        lines.append('not started (untouched): %s' % ', '.join(untouched))
    return lines


STATS_NODE_KEYS = ('node', 'from', 'to', 'phase', 'changed', 'evicted', 'duration_s', 'reason', 'timeline')


def stats(kind, results):
    """The ``gpuops_rollout`` artifact (set_stats) of one or more rollout results: what a workflow's
    next job (the fleet report) needs, nothing more."""
    nodes, untouched, changed = [], [], False
    for result in rollout_results(results):
        changed = changed or bool(result.get('changed'))
        untouched.extend(result.get('untouched') or [])
        for st in result.get('nodes') or []:
            nodes.append(dict((k, st[k]) for k in STATS_NODE_KEYS if k in st))
    starts = sorted(st['timeline']['started'] for st in nodes if (st.get('timeline') or {}).get('started'))
    ends = sorted(max(st['timeline'].values()) for st in nodes if st.get('timeline'))
    return {'kind': kind, 'changed': changed, 'nodes': nodes, 'untouched': untouched,
            'started': starts[0] if starts else None, 'ended': ends[-1] if ends else None}
