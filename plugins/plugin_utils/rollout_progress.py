# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The action behind gpuops.gpu.mig_rollout and gpuops.gpu.sharing_rollout: progress in the job output.

A module shows nothing until it ends, and a rollout of a large fleet runs for an hour. So, unless the
task runs in check mode or with ``async`` of its own, the action runs the module asynchronously (the
way the ``async`` keyword does, through Ansible's async wrapper) with ``progress_file`` set, and
while it runs reads that file (module_utils/rollout/progress.py) every POLL_EVERY seconds through
the task's connection. It prints the rollout's own messages as they come (batch k/n, stuck nodes,
API outages) and a status line (nodes draining, waiting for the node agent, verified, held, with
reasons) whenever it changes and at least every HEARTBEAT seconds. The printed lines reach
``ansible-playbook``'s output and, as job events, an AWX/AAP job's output. The task's result is
the module's own result.

If the task is interrupted (Ctrl-C, the task's ``timeout``), the action stops the module (SIGTERM:
the rollout lock is released, the nodes keep their annotations and the next run resumes them)
rather than leaving it running in the background; so it does when the ansible-playbook process
that runs the task is gone (killed with SIGKILL, the job cancelled: Ansible's worker processes
live in their own session and would otherwise go on). If the controller itself goes away (the
worker killed too, the machine or the connection lost), the module stops itself the same way once
nobody has read its progress for ``progress_timeout`` seconds: each read touches a heartbeat file
next to the progress file, and the module's dead man's switch watches it
(module_utils/rollout/progress.py).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import shlex
import time
import uuid

from ansible.errors import AnsibleError
from ansible.plugins.action import ActionBase
from ansible.utils.vars import merge_hash

from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.progress import (
    ALIVE_SUFFIX, labelled, new_lines, status_line)

POLL_EVERY = 5.0     # seconds between two reads of the job and the progress file
FIRST_POLL = 0.5     # the first read; the pause doubles up to POLL_EVERY
HEARTBEAT = 25.0     # a status line at least this often, changed or not
STOP_WAIT = 10.0     # stopping: how long to wait for a module not started yet to name its pid
ASYNC_LIMIT = 30 * 24 * 3600  # the async wrapper's own time limit: the module's timeouts are what bound a rollout
READ_SEPARATOR = '--gpuops-progress-then-job--'  # between the two files' texts in one read
JOB_KEYS = ('ansible_job_id', 'started', 'finished', 'results_file', 'stdout', 'stderr', 'stdout_lines',
            'stderr_lines', 'erased', '_ansible_suppress_tmpdir_delete')


class RolloutProgressAction(ActionBase):
    """Runs the rollout module in the background and prints its progress (see the file's docstring)."""

    def run(self, tmp=None, task_vars=None):
        result = super(RolloutProgressAction, self).run(tmp, task_vars)
        del tmp
        if self._task.check_mode or self._task.async_val:  # a plan is quick; async of its own: the user polls
            wrap_async = self._task.async_val and not self._connection.has_native_async
            result = merge_hash(result, self._execute_module(task_vars=task_vars, wrap_async=wrap_async))
            if not wrap_async:
                self._remove_tmp_path(self._connection._shell.tmpdir)
            return result
        return merge_hash(result, self._run_with_progress(task_vars))

    def _run_with_progress(self, task_vars):
        async_dir = self._remote_expand_user(self.get_shell_option('async_dir', default='~/.ansible_async'))
        # the async wrapper would expand a "~" with the module's HOME, this with the remote user's home: with a
        # HOME of its own (AWX, tests) they differ, and the job would not be found. Give it the expanded path.
        self._connection._shell.set_option('async_dir', async_dir)
        progress_file = self._connection._shell.join_path(async_dir, 'gpuops-progress-%s.json' % uuid.uuid4().hex)
        args = dict(self._task.args, progress_file=progress_file)
        self._task.async_val = ASYNC_LIMIT
        try:
            job = self._execute_module(module_args=args, task_vars=task_vars, wrap_async=True)
        finally:
            self._task.async_val = 0
        if job.get('failed') or 'ansible_job_id' not in job:
            return job
        poll = {'jid': job['ansible_job_id'], '_async_dir': async_dir}
        watcher = _Watcher(self._display)
        try:
            final = self._wait(poll, progress_file, watcher, task_vars)
        except BaseException:  # interrupted or timed out: do not leave the rollout running unseen
            self._stop(watcher.pid, progress_file)
            raise
        finally:
            self._cleanup(poll, progress_file, task_vars)
        return dict((k, v) for k, v in final.items() if k not in JOB_KEYS)

    def _wait(self, poll, progress_file, watcher, task_vars):
        pause = FIRST_POLL
        playbook = os.getppid()  # the ansible-playbook process this worker runs the task for
        job_file = self._connection._shell.join_path(poll['_async_dir'], poll['jid'])
        while True:
            if os.getppid() != playbook:  # it is gone (killed, the job cancelled): nobody would see the result
                raise AnsibleError('the ansible-playbook process that ran this task is gone: stopping the rollout')
            progress, job = self._read(progress_file, job_file)
            watcher.show(progress)
            if not running(job):  # ended, or the job file says something unexpected: async_status has the word
                status = self._module('ansible.legacy.async_status', poll, task_vars)
                if status.get('finished') or status.get('failed'):
                    watcher.show(None, final=True)
                    return status
            time.sleep(pause)
            pause = min(POLL_EVERY, pause * 2)  # a short rollout ends without waiting a whole POLL_EVERY

    def _read(self, path, job_file=None):
        """Say the controller is watching (touch the heartbeat file the module's dead man's switch looks at) and
        read the progress file and, given one, the async job's file, in one shell command on the target: the
        progress, or (progress, job); each None while there is no such file yet. Reading the job's file this way
        costs no module run per poll while the job runs."""
        files = [path] + ([job_file] if job_file else [])
        reads = ('; echo %s; ' % READ_SEPARATOR).join('cat %s 2>/dev/null' % shlex.quote(name) for name in files)
        got = self._low_level_execute_command('touch %s; %s' % (shlex.quote(path + ALIVE_SUFFIX), reads))
        texts = (got.get('stdout') or '').split(READ_SEPARATOR)
        read = [_json(texts[i]) if i < len(texts) else None for i in range(len(files))]
        return tuple(read) if job_file else read[0]

    def _module(self, name, args, task_vars):
        return self._execute_module(module_name=name, module_args=args, task_vars=task_vars, wrap_async=False)

    def _stop(self, pid, progress_file):
        """SIGTERM to the module. Its pid is in the progress file, which the module writes as it starts: when
        the task is stopped before this action read it once (a playbook killed in its first second), read it now,
        waiting up to STOP_WAIT seconds for the module to start."""
        deadline = time.monotonic() + STOP_WAIT
        while not pid and time.monotonic() < deadline:
            pid = (self._read(progress_file) or {}).get('pid')
            if not pid:
                time.sleep(FIRST_POLL)
        if pid:
            self._low_level_execute_command('kill -TERM %d' % int(pid))

    def _cleanup(self, poll, progress_file, task_vars):
        try:
            self._module('ansible.legacy.async_status', dict(poll, mode='cleanup'), task_vars)
            self._low_level_execute_command('rm -f %s %s' % (shlex.quote(progress_file),
                                                             shlex.quote(progress_file + ALIVE_SUFFIX)))
            self._remove_tmp_path(self._connection._shell.tmpdir)
        except Exception as exc:  # best effort: a leftover file in the async directory is harmless
            self._display.warning('could not remove the rollout progress file %s: %s' % (progress_file, exc))


class _Watcher(object):
    """What was printed so far, so each line is printed once."""

    def __init__(self, display):
        self.display = display
        self.started = time.monotonic()
        self.seen = 0
        self.last_status = None
        self.last_shown = 0.0
        self.pid = None
        self.data = None

    def show(self, data, final=False):
        if data is not None:
            self.data = data
            self.pid = data.get('pid') or self.pid
        if self.data is None:
            return
        lines, self.seen = new_lines(self.data, self.seen)
        for line in lines:
            self.display.display('  %s' % labelled(self.data, line))
        if final:
            return
        status = status_line(self.data, time.monotonic() - self.started)
        fresh = status.split(': ', 1)[-1] != (self.last_status or '').split(': ', 1)[-1]
        if fresh or time.monotonic() - self.last_shown >= HEARTBEAT:
            self.display.display('  %s' % status)
            self.last_status, self.last_shown = status, time.monotonic()


def _json(text):
    try:
        return json.loads(text)
    except ValueError:
        return None


def running(job):
    """Whether Ansible's async wrapper's job file says the job still runs (``{"started": true, "finished": false}``,
    replaced by the module's result when it ends): async_status's own reading of that file."""
    return isinstance(job, dict) and 'started' in job and not job.get('finished')
