# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""GPU smoke test, cluster part: create one Job per case, wait for all of them together, read the logs,
delete everything it created (also when it fails half-way).

Waiting costs two list calls per poll (the Jobs and the pods of this run, by label), whatever the
number of cases. The API objects are a ``kubernetes.client.CoreV1Api`` and ``BatchV1Api`` (or anything
with the same methods); this file imports no client library.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import time

from ansible_collections.gpuops.gpu.plugins.module_utils.plans import smoke as S
from ansible_collections.gpuops.gpu.plugins.module_utils.ops.inventory import api_error_message

JOB_NAME_LABELS = ('batch.kubernetes.io/job-name', 'job-name')


class SmokeRunner(object):
    """Runs the planned cases of one smoke test run (``run_id``) in ``namespace``."""

    def __init__(self, core, batch, namespace, run_id, timeout=300, stuck_timeout=60, poll_interval=2.0,
                 wait_for='completion', expect_output='', log_lines=20, cleanup=True, cleanup_timeout=60,
                 clock=time.monotonic, sleep=time.sleep):
        self.core = core
        self.batch = batch
        self.namespace = namespace
        self.run_id = run_id
        self.timeout = timeout
        self.stuck_timeout = stuck_timeout
        self.poll_interval = poll_interval
        self.wait_for = wait_for
        self.expect_output = expect_output
        self.log_lines = log_lines
        self.cleanup_enabled = cleanup
        self.cleanup_timeout = cleanup_timeout
        self.clock = clock
        self.sleep = sleep
        self.warnings = []
        self.requests = 0

    @property
    def selector(self):
        return '%s=%s' % (S.RUN_LABEL, self.run_id)

    def _call(self, fn, *args, **kwargs):
        self.requests += 1
        return fn(*args, **kwargs)

    def run(self, cases, manifests):
        """Run ``cases`` (status planned) with their Job ``manifests`` (same order); returns the cases."""
        started = {}
        try:
            for case, manifest in zip(cases, manifests):
                try:
                    self._call(self.batch.create_namespaced_job, self.namespace, manifest,
                               _preload_content=False)
                except Exception as exc:  # ApiException, urllib3 errors alike
                    case.update(status=S.ERROR, detail='could not create Job %s: %s'
                                % (manifest['metadata']['name'], api_error_message(exc)))
                    continue
                case['job'] = manifest['metadata']['name']
                started[case['job']] = (case, self.clock())
            self._wait(started)
            self._logs([c for c, _t in started.values()])
        finally:
            if self.cleanup_enabled:
                self.cleanup()
        return cases

    def _lists(self):
        jobs = self._call(self.batch.list_namespaced_job, self.namespace, label_selector=self.selector,
                          _preload_content=False)
        pods = self._call(self.core.list_namespaced_pod, self.namespace, label_selector=self.selector,
                          _preload_content=False)
        return _items(jobs), _items(pods)

    def _wait(self, started):
        pending = dict(started)
        deadline = self.clock() + self.timeout
        last = {}
        while pending:
            try:
                jobs, pods = self._lists()
            except Exception as exc:  # a failed poll is retried until the deadline
                self.warnings.append('could not read the smoke test Jobs: %s' % api_error_message(exc))
                jobs, pods = None, None
            if jobs is not None:
                jobs_by_name = dict(((j.get('metadata') or {}).get('name'), j) for j in jobs)
                pods_by_job = {}
                for pod in pods:
                    labels = (pod.get('metadata') or {}).get('labels') or {}
                    name = next((labels[k] for k in JOB_NAME_LABELS if labels.get(k)), None)
                    pods_by_job.setdefault(name, []).append(pod)
                now = self.clock()
                for name in list(pending):
                    case, t0 = pending[name]
                    stuck = now - t0 >= self.stuck_timeout
                    status, detail, node = S.classify(jobs_by_name.get(name), pods_by_job.get(name),
                                                      wait_for=self.wait_for, stuck=stuck)
                    if status is None and stuck and not pods_by_job.get(name):
                        # the Job controller could not create the pod (admission, quota, SCC): say why
                        warning = self._job_warning(name)
                        if warning:
                            status, detail = S.ERROR, warning
                    case['pod'] = _newest_pod_name(pods_by_job.get(name))
                    case['ran_on'] = node
                    last[name] = detail
                    if status is not None:
                        case.update(status=status, detail=detail, seconds=round(now - t0, 1))
                        del pending[name]
            if not pending:
                break
            if self.clock() >= deadline:
                break
            self.sleep(self.poll_interval)
        now = self.clock()
        for name, (case, t0) in pending.items():
            case.update(status=S.TIMEOUT, seconds=round(now - t0, 1),
                        detail='not finished after %ss (%s)' % (self.timeout, last.get(name) or 'no pod'))

    def _job_warning(self, name):
        """The newest Warning event of a Job (for example FailedCreate: pods forbidden), or None."""
        try:
            events = _items(self._call(self.core.list_namespaced_event, self.namespace,
                                       field_selector='involvedObject.kind=Job,involvedObject.name=%s' % name,
                                       _preload_content=False))
        except Exception:  # events are a best-effort explanation
            return None
        warnings = [e for e in events if e.get('type') == 'Warning']
        if not warnings:
            return None
        newest = sorted(warnings, key=lambda e: e.get('lastTimestamp') or e.get('eventTime') or '')[-1]
        return '%s: %s' % (newest.get('reason') or 'Warning', (newest.get('message') or '').strip())

    def _logs(self, cases):
        for case in cases:
            if not case.get('pod') or case.get('status') not in (S.PASSED, S.FAILED):
                continue
            try:
                log = self._call(self.core.read_namespaced_pod_log, case['pod'], self.namespace,
                                 tail_lines=self.log_lines, _preload_content=False)
                log = _text(log)
            except Exception:  # no kubelet log endpoint (virtual nodes), pod gone, RBAC
                log = None
            case['log'] = log
            if case['status'] == S.PASSED:
                ok, note = S.check_log(log, self.expect_output)
                if not ok:
                    case['status'] = S.FAILED
                if note:
                    case['detail'] = '%s; %s' % (case.get('detail') or '', note) if case.get('detail') else note

    def cleanup(self):
        """Delete this run's Jobs and wait (bounded) until their pods are gone, so the GPUs are free again."""
        try:
            jobs, _pods = self._lists()
            for job in jobs:
                try:
                    self._call(self.batch.delete_namespaced_job, job['metadata']['name'], self.namespace,
                               propagation_policy='Background', grace_period_seconds=0,
                               _preload_content=False)
                except Exception as exc:
                    if getattr(exc, 'status', None) != 404:
                        self.warnings.append('could not delete Job %s: %s'
                                             % (job['metadata']['name'], api_error_message(exc)))
            deadline = self.clock() + self.cleanup_timeout
            while True:
                left_jobs, pods = self._lists()
                if not pods and not left_jobs:
                    return
                if self.clock() >= deadline:
                    self.warnings.append('smoke test pods still present after %ss: %s'
                                         % (self.cleanup_timeout,
                                            ', '.join(p['metadata']['name'] for p in pods) or 'none'))
                    return
                self.sleep(self.poll_interval)
        except Exception as exc:
            self.warnings.append('clean-up of the smoke test Jobs failed: %s (delete the Jobs labelled %s in %s)'
                                 % (api_error_message(exc), self.selector, self.namespace))


def _items(response):
    data = getattr(response, 'data', response)
    if isinstance(data, bytes):
        data = data.decode('utf-8')
    if isinstance(data, str):
        data = json.loads(data)
    return (data or {}).get('items') or []


def _text(response):
    data = getattr(response, 'data', response)
    if isinstance(data, bytes):
        data = data.decode('utf-8', 'replace')
    return data if isinstance(data, str) else str(data)


def _newest_pod_name(pods):
    if not pods:
        return None
    pod = sorted(pods, key=lambda p: ((p.get('metadata') or {}).get('creationTimestamp') or ''))[-1]
    return pod['metadata']['name']
