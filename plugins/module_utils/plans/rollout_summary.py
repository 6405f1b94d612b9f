# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What a rollout did, from the module's result: the summary table the rollout roles print at the end
(``summary_rows``/``summary_table``, over the ``nodes`` result) and the ``gpuops_rollout`` artifact they
hand to the next job with set_stats (``stats``). Pure: the filters rollout_summary_table and rollout_stats
wrap it; rollout/progress.py, which writes the progress file while a rollout runs, shares
``duration_words``.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


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
