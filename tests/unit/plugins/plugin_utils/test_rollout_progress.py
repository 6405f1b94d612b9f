# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the rollout action prints from the progress file (plugin_utils/rollout_progress.py ``_Watcher``):
each engine message once, a status line when it changes and at least every HEARTBEAT seconds. The action
itself runs in tests/integration/test_awx_progress.py (an AWX-style job) and wherever a role rolls out."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import subprocess

from ansible_collections.gpuops.gpu.plugins.plugin_utils import rollout_progress as rp
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.fakes import FakeClock


class Display(object):
    def __init__(self):
        self.lines = []

    def display(self, text):
        self.lines.append(text)


def Clock():
    return FakeClock(now=1000.0)


def data(seq_texts, nodes=None, batch=1):
    return {'kind': 'mig', 'batch': batch, 'batches': 2, 'done': 0, 'pid': 4242,
            'messages': [list(m) for m in seq_texts], 'nodes': nodes or {}, 'reasons': {}}


def test_messages_once_status_on_change_and_heartbeat(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(rp.time, 'monotonic', clock)
    display = Display()
    watcher = rp._Watcher(display)
    watcher.show(None)
    assert display.lines == [], 'nothing to show before the module wrote its file'
    watcher.show(data([(1, 'batch 1/2: a, b')], {'a': 'drain', 'b': 'drain'}))
    assert display.lines == ['  batch 1/2: a, b', '  mig rollout 0s: batch 1/2 · draining: a, b · done: 0']
    assert watcher.pid == 4242
    clock.now += 10
    watcher.show(data([(1, 'batch 1/2: a, b')], {'a': 'drain', 'b': 'drain'}))
    assert len(display.lines) == 2, 'unchanged and before the heartbeat: nothing new'
    clock.now += rp.HEARTBEAT
    watcher.show(None)  # the file could not be read this time: the last data counts
    assert display.lines[-1] == '  mig rollout 35s: batch 1/2 · draining: a, b · done: 0'
    clock.now += 1
    watcher.show(data([(1, 'batch 1/2: a, b'), (2, 'API unavailable (x), retrying')], {'a': 'wait', 'b': 'drain'}))
    assert display.lines[-2:] == ['  API unavailable (x), retrying',
                                  '  mig rollout 36s: batch 1/2 · draining: b · waiting for the node agent: a · done: 0']
    watcher.show(data([(3, 'batch 1/2 ended: a done, b done')]), final=True)
    assert display.lines[-1] == '  batch 1/2 ended: a done, b done', 'the last messages, no status line at the end'


class Stopping(rp.RolloutProgressAction):
    """The action's stop alone: the module's progress file as ``reads`` (one per read), the commands it ran."""

    def __init__(self, reads):  # pylint: disable=super-init-not-called
        self.reads, self.commands = list(reads), []

    def _read(self, path):
        assert path == '/async/progress.json'
        return self.reads.pop(0) if self.reads else None

    def _low_level_execute_command(self, cmd, **kwargs):
        self.commands.append(cmd)
        return {'rc': 0}


def test_stop_signals_the_pid_it_knows():
    action = Stopping([])
    action._stop(4242, '/async/progress.json')
    assert action.commands == ['kill -TERM 4242']


def test_stop_before_the_first_read_takes_the_pid_from_the_file(monkeypatch):
    """The playbook killed in the task's first second: the action never read the file, the module wrote it
    meanwhile (or writes it a moment later): its pid is read then, not left to the dead man's switch."""
    monkeypatch.setattr(rp.time, 'sleep', lambda s: None)
    action = Stopping([None, None, data([])])
    action._stop(None, '/async/progress.json')
    assert action.commands == ['kill -TERM 4242']
    assert action.reads == []


def test_stop_gives_up_when_the_module_never_started(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(rp.time, 'monotonic', clock)
    monkeypatch.setattr(rp.time, 'sleep', lambda s: setattr(clock, 'now', clock.now + s))
    action = Stopping([])
    action._stop(None, '/async/progress.json')
    assert action.commands == [], 'no pid, nothing to signal'
    assert clock.now - 1000.0 >= rp.STOP_WAIT


class Shell(object):
    join_path = staticmethod(os.path.join)


class Connection(object):
    _shell = Shell()


class Waiting(rp.RolloutProgressAction):
    """The action's wait alone: its shell commands run for real (on files in a temporary directory), its module
    runs (async_status) are answered from the job file the way async_status reads it, and counted."""

    def __init__(self):  # pylint: disable=super-init-not-called
        self._connection, self.module_runs = Connection(), []

    def _low_level_execute_command(self, cmd, **kwargs):
        proc = subprocess.run(['sh', '-c', cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=False)
        return {'rc': proc.returncode, 'stdout': proc.stdout}

    def _module(self, name, args, task_vars):
        self.module_runs.append((name, args))
        with open(os.path.join(args['_async_dir'], args['jid'])) as handle:
            job = json.load(handle)
        return dict(job, finished=True) if 'started' not in job else job


def test_a_running_job_is_polled_without_module_runs(tmp_path, monkeypatch):
    """While the job file says it runs, each poll is one shell command (progress and job file together); the one
    async_status run comes once the module's result replaced it."""
    progress, job = tmp_path / 'progress.json', tmp_path / 'j1.2'
    progress.write_text(json.dumps(data([(1, 'batch 1/2: a')], {'a': 'drain'})))
    job.write_text(json.dumps({'started': True, 'finished': False, 'ansible_job_id': 'j1.2'}))
    sleeps = []

    def sleep(seconds):
        sleeps.append(seconds)
        if len(sleeps) == 3:
            job.write_text(json.dumps({'changed': True, 'nodes': ['a'], 'ansible_job_id': 'j1.2'}))
    monkeypatch.setattr(rp.time, 'sleep', sleep)
    action, display = Waiting(), Display()
    status = action._wait({'jid': 'j1.2', '_async_dir': str(tmp_path)}, str(progress), rp._Watcher(display), {})
    assert status['finished'] and status['nodes'] == ['a']
    assert [name for name, _args in action.module_runs] == ['ansible.legacy.async_status'], action.module_runs
    assert len(sleeps) == 3 and display.lines[0] == '  batch 1/2: a'
    assert (tmp_path / ('progress.json' + rp.ALIVE_SUFFIX)).exists(), 'each poll tells the module someone watches'


def test_read_gives_none_for_files_not_there_yet(tmp_path):
    action = Waiting()
    assert action._read(str(tmp_path / 'progress.json'), str(tmp_path / 'j1.2')) == (None, None)
    assert action._read(str(tmp_path / 'progress.json')) is None
    (tmp_path / 'j1.2').write_text('{"started": true, "finished": false}')
    assert action._read(str(tmp_path / 'progress.json'), str(tmp_path / 'j1.2')) == (
        None, {'started': True, 'finished': False})


def test_running_reads_the_job_file_as_async_status_does():
    assert rp.running({'started': True, 'finished': False})
    assert rp.running({'started': 1})  # async_status: 'finished' absent means still running
    assert not rp.running({'changed': True, 'nodes': []})  # the module's result: 'started' is gone
    assert not rp.running({'started': True, 'finished': True})
    assert not rp.running(None), 'unreadable: async_status decides'
