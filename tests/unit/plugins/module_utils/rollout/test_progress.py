# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What a running rollout shows (rollout/progress.py): the progress file the module rewrites, the lines the
action plugin prints from it and each node's timeline; and the engine filling them in on a fake API (the summary
table of its result: plans/rollout_summary.py, tested in plans/test_rollout_summary.py). The job output of a real rollout is tested in
tests/integration/test_awx_progress.py."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import signal

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.plans.rollout_summary import summary_table
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout import progress as pg

pytest.importorskip('kubernetes')

from ansible_collections.gpuops.gpu.plugins.module_utils.k8s.client import Connection  # noqa: E402
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.engine import NodeRollout  # noqa: E402
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.inputs import rollout_argument_spec  # noqa: E402
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.rollout.fake_api import (  # noqa: E402
    FakeApi, FakeKind, gpu_pod, node)


def read(path):
    with open(str(path)) as handle:
        return json.load(handle)


class TestTimeline(object):
    def test_each_transition_records_its_event_in_utc(self):
        st = {}
        for left, entered in (('cordon', 'drain'), ('drain', 'label'), ('label', 'wait'), ('wait', 'verify'),
                              ('verify', 'uncordon'), ('uncordon', 'done')):
            pg.mark(st, left, entered, when=1764002401.5)
        assert st['timeline'] == dict((e, '2025-11-24T16:40:01.500Z') for e in pg.TIMELINE_ORDER[1:])

    def test_a_stay_a_retry_or_a_failure_records_nothing(self):
        st = {}
        for left, entered in (('wait', 'wait'), ('wait', 'label'), ('drain', 'failed'), ('label', 'label')):
            pg.mark(st, left, entered)
        assert 'timeline' not in st

    def test_utc_iso_has_milliseconds_and_z(self):
        assert pg.utc_iso(0) == '1970-01-01T00:00:00.000Z'
        assert pg.utc_iso(1.2345) == '1970-01-01T00:00:01.234Z'


class TestProgressFile(object):
    def test_messages_are_numbered_and_the_newest_kept(self, tmp_path, monkeypatch):
        monkeypatch.setattr(pg, 'KEEP_MESSAGES', 3)
        path = tmp_path / 'p.json'
        progress = pg.Progress(str(path), 'mig')
        data = read(path)
        assert (data['kind'], data['seq'], data['messages'], data['batches']) == ('mig', 0, [], 0)
        for text in ('one', 'two', 'three', 'four'):
            progress.message(text)
        assert read(path)['messages'] == [[2, 'two'], [3, 'three'], [4, 'four']]
        assert pg.new_lines(read(path), 2) == (['three', 'four'], 4)
        assert pg.new_lines(read(path), 4) == ([], 4)

    def test_batch_nodes_and_finished(self, tmp_path):
        path = tmp_path / 'p.json'
        progress = pg.Progress(str(path), 'sharing')
        progress.batch(2, 5, ['n1', 'n2'])
        assert read(path)['nodes'] == {'n1': 'cordon', 'n2': 'cordon'}
        progress.nodes({'n1': {'phase': 'wait'}, 'n2': {'phase': 'failed', 'reason': 'stuck'}}, force=True)
        data = read(path)
        assert (data['batch'], data['batches'], data['nodes'], data['reasons']) == (
            2, 5, {'n1': 'wait', 'n2': 'failed'}, {'n2': 'stuck'})
        progress.finished(7)
        data = read(path)
        assert (data['done'], data['nodes']) == (7, {})

    def test_node_phases_are_written_at_most_every_write_every(self, tmp_path, monkeypatch):
        path = tmp_path / 'p.json'
        progress = pg.Progress(str(path), 'mig')
        progress.batch(1, 1, ['n1'])
        monkeypatch.setattr(pg, 'WRITE_EVERY', 3600)
        progress.nodes({'n1': {'phase': 'drain'}})
        assert read(path)['nodes'] == {'n1': 'cordon'}, 'written before WRITE_EVERY passed'
        progress.message('batch 1/1: n1')  # a message writes at once, with the phases known by then
        assert read(path)['nodes'] == {'n1': 'drain'}

    def test_without_a_path_nothing_is_written(self, tmp_path):
        progress = pg.Progress(None)
        progress.message('hello')
        progress.batch(1, 1, ['n1'])
        assert list(tmp_path.iterdir()) == [] and progress.data['seq'] == 1


class TestStatusLine(object):
    def test_planning(self):
        assert pg.status_line({'kind': 'mig'}, 3) == 'mig rollout 3s: planning (or waiting for the rollout lock)'

    def test_phases_in_order_with_reasons_and_done_count(self):
        data = {'kind': 'mig', 'batch': 2, 'batches': 4, 'done': 5,
                'nodes': {'c': 'wait', 'a': 'drain', 'b': 'drain', 'd': 'failed', 'e': 'done'},
                'reasons': {'d': 'stuck after 600s: pending'}}
        assert pg.status_line(data, 130) == (
            'mig rollout 2m10s: batch 2/4 · draining: a, b · waiting for the node agent: c · '
            'held: d (stuck after 600s: pending) · done: 6')

    def test_the_cluster_done_of_total_and_the_time_left(self):
        data = {'kind': 'sharing', 'cluster': 'prod-a', 'batch': 3, 'batches': 10, 'done': 4, 'total': 20,
                'rolling_s': 240, 'nodes': {'x': 'done', 'y': 'drain'}}
        # 5 of 20 done in 240 s: 48 s a node, 15 to go
        assert pg.status_line(data, 250) == ('sharing rollout on prod-a 4m10s, about 12m00s left: batch 3/10 · '
                                             'draining: y · done: 5/20')
        assert pg.status_line(dict(data, done=0, nodes={'y': 'drain'}), 30) == (
            'sharing rollout on prod-a 30s: batch 3/10 · draining: y · done: 0/20'), 'no estimate before a node is done'
        assert pg.status_line({'kind': 'mig', 'cluster': 'api.b:6443'}, 3) == (
            'mig rollout on api.b:6443 3s: planning (or waiting for the rollout lock)')

    def test_the_estimate_leaves_the_part_the_action_compares_alone(self):
        data = {'kind': 'mig', 'cluster': 'c', 'batch': 1, 'batches': 2, 'done': 1, 'total': 4, 'rolling_s': 10}
        later = dict(data, rolling_s=30)
        assert pg.status_line(data, 11) != pg.status_line(later, 31)
        assert pg.status_line(data, 11).split(': ', 1)[1] == pg.status_line(later, 31).split(': ', 1)[1]


@pytest.mark.parametrize('done, total, rolling_s, left', [
    (0, 10, 100, None), (1, None, 100, None), (1, 0, 100, None), (2, 10, None, None), (2, 10, 0, None),
    (2, 10, 100, 400.0), (10, 10, 500, 0.0), (12, 10, 600, 0.0)])
def test_eta_seconds(done, total, rolling_s, left):
    assert pg.eta_seconds(done, total, rolling_s) == left


def test_engine_messages_are_labelled_with_the_cluster_once_known():
    assert pg.labelled({'cluster': 'prod-a'}, 'batch 1/2: n1') == '[prod-a] batch 1/2: n1'
    assert pg.labelled({'cluster': ''}, 'batch 1/2: n1') == 'batch 1/2: n1'
    assert pg.labelled(None, 'x') == 'x'


def test_start_records_the_cluster_the_total_and_the_time_rolling(tmp_path, monkeypatch):
    path = tmp_path / 'p.json'
    clock = [100.0]
    monkeypatch.setattr(pg.time, 'monotonic', lambda: clock[0])
    progress = pg.Progress(str(path), 'mig')
    assert 'rolling_s' not in read(path) and 'cluster' not in read(path)
    progress.start('prod-a', 12)
    clock[0] = 160.0
    progress.finished(3)
    data = read(path)
    assert (data['cluster'], data['total'], data['rolling_s'], data['done']) == ('prod-a', 12, 60.0, 3)


def test_the_engine_fills_the_progress_file_and_the_timeline(tmp_path):
    api = FakeApi([node('n1'), node('n2'), node('n3')], pods=[gpu_pod('train-1', 'n1')])
    conn = Connection(core=api, policy=api, custom=api)
    opts = dict((k, v['default']) for k, v in rollout_argument_spec('config').items() if 'default' in v)
    opts.update(poll_interval=0.01, state_timeout=5, reboot_timeout=5, retry_stuck=False, check_mode=False,
                max_unavailable=2)
    path = tmp_path / 'progress.json'
    logged = []
    engine = NodeRollout(conn, FakeKind(), opts, log=logged.append, progress=pg.Progress(str(path), 'mig'))
    nodes = dict((n['metadata']['name'], n) for n in engine.list_nodes())
    result = engine.run({'n1': 'v2', 'n2': 'v2', 'n3': 'v2'}, nodes)
    data = read(path)
    texts = [text for _seq, text in data['messages']]
    assert texts[:2] == ['batch 1/2: n1, n2', 'batch 1/2 ended: n1 done, n2 done'], texts
    assert texts[2:] == ['batch 2/2: n3', 'batch 2/2 ended: n3 done'] and logged == texts
    assert (data['batch'], data['batches'], data['done'], data['nodes']) == (2, 2, 3, {})
    assert (data['total'], data['cluster']) == (3, ''), 'a connection over fake APIs names no cluster'
    for st in result['nodes']:
        assert list(st['timeline']) == list(pg.TIMELINE_ORDER), st['timeline']
        assert sorted(st['timeline'].values()) == list(st['timeline'].values())
        assert st['from'] is None and st['to'] == 'v2'
    lines = summary_table(result)
    assert [line.split()[0] for line in lines[2:5]] == ['n1', 'n2', 'n3'] and lines[2].split()[-2:] == ['1', 'done']


def test_phases_held_back_by_write_every_are_written_by_a_later_call(tmp_path, monkeypatch):
    path = tmp_path / 'p.json'
    progress = pg.Progress(str(path), 'mig')
    progress.batch(1, 1, ['n1'])
    monkeypatch.setattr(pg, 'WRITE_EVERY', 3600)
    progress.nodes({'n1': {'phase': 'wait'}})
    monkeypatch.setattr(pg, 'WRITE_EVERY', 0)
    progress.nodes({'n1': {'phase': 'wait'}})  # unchanged since the last call, but never written
    assert read(path)['nodes'] == {'n1': 'wait'}


class TestDeadMansSwitch(object):
    def test_unwatched_for(self, tmp_path):
        alive = str(tmp_path / 'p.json.alive')
        assert pg.unwatched_for(alive, since=100.0, now=130.0) == 30.0, 'never touched: counted from the start'
        open(alive, 'w').close()
        os.utime(alive, (200.0, 200.0))
        assert pg.unwatched_for(alive, since=100.0, now=230.0) == 30.0
        assert pg.unwatched_for(alive, since=210.0, now=230.0) == 20.0, 'a touch before the start does not count'

    def test_stops_the_run_once_the_controller_is_silent(self, tmp_path, monkeypatch):
        alive = str(tmp_path / 'p.json.alive')
        clock = {'now': 1000.0, 'touches': 3}
        killed = []

        def sleep(seconds):
            clock['now'] += seconds
            if clock['touches']:  # the controller reads the progress three times, then is gone
                clock['touches'] -= 1
                open(alive, 'w').close()
                os.utime(alive, (clock['now'], clock['now']))

        monkeypatch.setattr(pg.time, 'sleep', sleep)
        monkeypatch.setattr(pg.time, 'time', lambda: clock['now'])
        monkeypatch.setattr(pg.os, 'kill', lambda pid, sig: killed.append((pid, sig, clock['now'])))
        progress = pg.Progress(None)
        progress._watch(alive, 10)
        assert killed == [(os.getpid(), signal.SIGTERM, 1000.0 + 2.0 * 3 + 2.0 * 6)], killed
        assert 'has not read the progress for 12s' in progress.data['messages'][-1][1]


def test_status_line_in_the_words_of_the_module_phases():
    """A module whose nodes pass other phases (the driver upgrade: the operator's states) names them itself."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.plans.driver_upgrade import PHASE_WORDS
    progress = pg.Progress(phase_words=PHASE_WORDS)
    data = dict(progress.data, batch=1, batches=1, total=3, nodes={
        'a': 'pod-deletion-required', 'b': 'upgrade-required', 'c': 'failed'}, reasons={'c': 'is upgrade-failed: x'})
    assert pg.status_line(data, 5) == (
        'gpu rollout 5s: batch 1/1 · waiting for a slot: b · deleting GPU pods: a · held: c (is upgrade-failed: x) · '
        'done: 0/3')
