# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""GPU smoke test, cluster part: create one Job per case, wait for all of them together, read the logs,
delete everything it created (also when it fails half-way).

Waiting costs two list calls per poll (the Jobs and the pods of this run, by label), whatever the
number of cases. Requests go through the run's ``k8s.client.Connection``: its ``core`` and ``batch``
are a ``kubernetes.client.CoreV1Api`` and ``BatchV1Api`` (or anything with the same methods); this
file imports no client library.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import time

from ansible_collections.gpuops.gpu.plugins.module_utils.common.objects import labels_of, meta_of, name_of
from ansible_collections.gpuops.gpu.plugins.module_utils.plans import smoke as S
from ansible_collections.gpuops.gpu.plugins.module_utils.plans import smoke_fill as F
from ansible_collections.gpuops.gpu.plugins.module_utils.common.errors import CheckFailed, InputError, api_error_message
from ansible_collections.gpuops.gpu.plugins.module_utils.common.waiter import Waiter

JOB_NAME_LABELS = ('batch.kubernetes.io/job-name', 'job-name')


class _Run(object):
    """What every runner of one smoke test run (``run_id``) in ``namespace`` shares: its objects carry the run
    label (``selector``), one waiter, the timeouts, the warnings."""

    def __init__(self, conn, namespace, run_id, timeout=300, stuck_timeout=60, poll_interval=2.0,
                 cleanup_timeout=60, clock=time.monotonic, sleep=time.sleep):
        self.conn = conn
        self.namespace = namespace
        self.run_id = run_id
        self.timeout = timeout
        self.stuck_timeout = stuck_timeout
        self.cleanup_timeout = cleanup_timeout
        self.clock = clock
        self.waiter = Waiter(poll_interval, sleep=sleep, clock=clock)
        self.warnings = []

    @property
    def selector(self):
        return '%s=%s' % (S.RUN_LABEL, self.run_id)

    def _settle(self, pending, unsettled):
        """Poll (the runner's ``_poll``) until every case of ``pending`` ({key: (case, started)}) has an
        outcome or ``timeout``; the rest time out, their detail ``unsettled`` % (timeout, last state seen)."""
        last = {}

        def settled():
            self._poll(pending, last)
            return True if not pending else None
        if pending:
            self.waiter.until(settled, self.timeout)
        now = self.clock()
        for key, (case, t0) in pending.items():
            case.update(status=S.TIMEOUT, seconds=round(now - t0, 1),
                        detail=unsettled % (self.timeout, last.get(key) or 'no pod'))

    def _decide(self, pending, last, classify):
        """One poll's outcomes: ``classify(key, case, stuck)`` gives each case of ``pending`` its ``(status,
        detail)``; a case with a status is settled (removed from ``pending``), ``last`` keeps each detail."""
        now = self.clock()
        for key in list(pending):
            case, t0 = pending[key]
            status, detail = classify(key, case, now - t0 >= self.stuck_timeout)
            last[key] = detail
            if status is not None:
                case.update(status=status, detail=detail, seconds=round(now - t0, 1))
                del pending[key]


class SmokeRunner(_Run):
    """Runs the planned cases of one smoke test run (``run_id``) in ``namespace``."""

    def __init__(self, conn, namespace, run_id, timeout=300, stuck_timeout=60, poll_interval=2.0,
                 wait_for='completion', expect_output='', log_lines=20, cleanup=True, cleanup_timeout=60,
                 clock=time.monotonic, sleep=time.sleep):
        super(SmokeRunner, self).__init__(conn, namespace, run_id, timeout=timeout, stuck_timeout=stuck_timeout,
                                          poll_interval=poll_interval, cleanup_timeout=cleanup_timeout,
                                          clock=clock, sleep=sleep)
        self.wait_for = wait_for
        self.expect_output = expect_output
        self.log_lines = log_lines
        self.cleanup_enabled = cleanup

    def run(self, cases, manifests):
        """Run ``cases`` (status planned) with their Job ``manifests`` (same order); returns the cases."""
        started = {}
        try:
            for case, manifest in zip(cases, manifests):
                try:
                    self.conn.request(self.conn.batch.create_namespaced_job, self.namespace, manifest)
                except Exception as exc:  # ApiException, urllib3 errors alike
                    case.update(status=S.ERROR, detail='could not create Job %s: %s'
                                % (manifest['metadata']['name'], api_error_message(exc)))
                    continue
                case['job'] = manifest['metadata']['name']
                started[case['job']] = (case, self.clock())
            self._settle(dict(started), 'not finished after %ss (%s)')
            self._logs([c for c, _t in started.values()])
        finally:
            if self.cleanup_enabled:
                self.cleanup()
        return cases

    def _lists(self):
        jobs = self.conn.call(self.conn.batch.list_namespaced_job, self.namespace, label_selector=self.selector)
        pods = self.conn.call(self.conn.core.list_namespaced_pod, self.namespace, label_selector=self.selector)
        return jobs.get('items') or [], pods.get('items') or []

    def _poll(self, pending, last):
        """One read of the Jobs and pods; settles (removes from ``pending``) the cases that ended."""
        try:
            jobs, pods = self._lists()
        except Exception as exc:  # a failed poll is retried until the deadline
            self.warnings.append('could not read the smoke test Jobs: %s' % api_error_message(exc))
            return
        jobs_by_name = dict((name_of(j), j) for j in jobs)
        pods_by_job = {}
        for pod in pods:
            labels = labels_of(pod)
            name = next((labels[k] for k in JOB_NAME_LABELS if labels.get(k)), None)
            pods_by_job.setdefault(name, []).append(pod)

        def classify(name, case, stuck):
            status, detail, node = S.classify(jobs_by_name.get(name), pods_by_job.get(name),
                                              wait_for=self.wait_for, stuck=stuck)
            if status is None and stuck and not pods_by_job.get(name):
                # the Job controller could not create the pod (admission, quota, SCC): say why
                warning = self._job_warning(name)
                if warning:
                    status, detail = S.ERROR, warning
            case['pod'] = _newest_pod_name(pods_by_job.get(name))
            case['ran_on'] = node
            return status, detail
        self._decide(pending, last, classify)

    def _job_warning(self, name):
        """The newest Warning event of a Job (for example FailedCreate: pods forbidden), or None."""
        try:
            events = self.conn.call(self.conn.core.list_namespaced_event, self.namespace,
                                    field_selector='involvedObject.kind=Job,involvedObject.name=%s' % name
                                    ).get('items') or []
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
            why = ''
            try:
                log = _text(self.conn.request(self.conn.core.read_namespaced_pod_log, case['pod'], self.namespace,
                                              tail_lines=self.log_lines))
            except Exception as exc:  # kubelet unreachable, container log gone, pod gone, RBAC
                log, why = None, api_error_message(exc)
            case['log'] = log
            if case['status'] == S.PASSED:
                case['status'], note = S.check_log(log, self.expect_output, why)
                if note:
                    case['detail'] = '%s; %s' % (case.get('detail') or '', note) if case.get('detail') else note

    def cleanup(self):
        """Delete this run's Jobs and wait (bounded) until their pods are gone, so the GPUs are free again."""
        try:
            jobs, _pods = self._lists()
            for job in jobs:
                try:
                    self.conn.request(self.conn.batch.delete_namespaced_job, job['metadata']['name'], self.namespace,
                                      propagation_policy='Background', grace_period_seconds=0)
                except Exception as exc:
                    if getattr(exc, 'status', None) != 404:
                        self.warnings.append('could not delete Job %s: %s'
                                             % (job['metadata']['name'], api_error_message(exc)))
            left = {}

            def gone():
                left['jobs'], left['pods'] = self._lists()
                return True if not left['jobs'] and not left['pods'] else None
            if self.waiter.until(gone, self.cleanup_timeout) is None:
                self.warnings.append('smoke test pods still present after %ss: %s'
                                     % (self.cleanup_timeout,
                                        ', '.join(p['metadata']['name'] for p in left['pods']) or 'none'))
        except Exception as exc:
            self.warnings.append('clean-up of the smoke test Jobs failed: %s (delete the Jobs labelled %s in %s)'
                                 % (api_error_message(exc), self.selector, self.namespace))


class FillRunner(_Run):
    """Runs the fill cases (``plans.smoke_fill.plan_fill``) of one run: creates every case's bare pods at once, polls
    them (one list call per poll) until each case has exactly its expected pods bound and Pending, then deletes
    them and waits until they are gone."""

    def _pods(self):
        return self.conn.call(self.conn.core.list_namespaced_pod, self.namespace,
                              label_selector=self.selector).get('items') or []

    def run(self, cases, manifests):
        """Run ``cases`` (status planned) with their pod lists ``manifests`` (same order); returns the cases."""
        pending = {}
        try:
            for case, pods in zip(cases, manifests):
                try:
                    for pod in pods:
                        self.conn.request(self.conn.core.create_namespaced_pod, self.namespace, pod)
                except Exception as exc:  # ApiException, urllib3 errors alike
                    case.update(status=S.ERROR, detail='could not create pod %s: %s'
                                % (pod['metadata']['name'], api_error_message(exc)))
                    continue
                pending[str(case['id'])] = (case, self.clock())
            self._settle(pending, 'not settled after %ss: %s')
        finally:
            self.cleanup()
        return cases

    def _poll(self, pending, last):
        try:
            pods = self._pods()
        except Exception as exc:  # a failed poll is retried until the deadline
            self.warnings.append('could not read the fill test pods: %s' % api_error_message(exc))
            return
        by_case = {}
        for pod in pods:
            by_case.setdefault(labels_of(pod).get(F.FILL_LABEL), []).append(pod)
        self._decide(pending, last, lambda key, case, stuck: F.classify_fill(case, by_case.get(key), stuck=stuck))

    def cleanup(self):
        """Delete this run's fill pods at once (grace 0), the Pending ones first (so none of them takes a unit
        freed by a deleted one), and wait (bounded) until they are gone."""
        try:
            for pod in sorted(self._pods(), key=lambda p: bool((p.get('spec') or {}).get('nodeName'))):
                try:
                    self.conn.request(self.conn.core.delete_namespaced_pod, pod['metadata']['name'], self.namespace,
                                      grace_period_seconds=0)
                except Exception as exc:
                    if getattr(exc, 'status', None) != 404:
                        self.warnings.append('could not delete pod %s: %s'
                                             % (pod['metadata']['name'], api_error_message(exc)))
            left = []

            def gone():
                left[:] = self._pods()
                return True if not left else None
            if self.waiter.until(gone, self.cleanup_timeout) is None:
                self.warnings.append('fill test pods still present after %ss: %s'
                                     % (self.cleanup_timeout, ', '.join(p['metadata']['name'] for p in left)))
        except Exception as exc:
            self.warnings.append('clean-up of the fill test pods failed: %s (delete the pods labelled %s in %s)'
                                 % (api_error_message(exc), self.selector, self.namespace))


def _text(response):
    data = getattr(response, 'data', response)
    if isinstance(data, bytes):
        data = data.decode('utf-8', 'replace')
    return data if isinstance(data, str) else str(data)


def _newest_pod_name(pods):
    if not pods:
        return None
    pod = sorted(pods, key=lambda p: (meta_of(p).get('creationTimestamp') or ''))[-1]
    return pod['metadata']['name']


def _check_numbers(params):
    for key in ('timeout', 'stuck_timeout', 'log_lines'):
        if params[key] < 1:
            raise InputError('%s must be at least 1, got %d' % (key, params[key]))
    if params['poll_interval'] <= 0:
        raise InputError('poll_interval must be greater than 0')


def _manifests(cases, params, run_id):
    return [S.job_manifest(c, params['namespace'], params['image'], run_id, command=params['command'],
                           args=params['args'], tolerations=params['tolerations'],
                           image_pull_secrets=params['image_pull_secrets'],
                           image_pull_policy=params['image_pull_policy'],
                           security_context=params['security_context'], node_selector=params['node_selector'],
                           active_deadline_seconds=params['timeout'] + 60)
            for c in cases]


def _fill_manifests(cases, params, run_id):
    return [F.fill_pod_manifests(c, params['namespace'], params['image'], run_id, command=params['fill_command'],
                                 tolerations=params['tolerations'], image_pull_secrets=params['image_pull_secrets'],
                                 image_pull_policy=params['image_pull_policy'],
                                 security_context=params['security_context'])
            for c in cases]


def _load_manifests(cases, params, run_id):
    load = params['load']
    return [S.job_manifest(c, params['namespace'], load['image'], run_id,
                           command=S.with_duration(load['command'], load['duration']),
                           args=S.with_duration(load['args'], load['duration']), tolerations=params['tolerations'],
                           image_pull_secrets=params['image_pull_secrets'],
                           image_pull_policy=params['image_pull_policy'],
                           security_context=params['security_context'], node_selector=params['node_selector'],
                           active_deadline_seconds=load['duration'] + params['timeout'], prefix='gpuops-load')
            for c in cases]


def verdict(cases, params, result):
    """CheckFailed (with the result) when the run must fail the module; ``result`` may hold the DRA cases
    (``dra_cases``, ``dra_fill_cases``: ops/smoke_dra.py)."""
    dra = list(result.get('dra_cases') or [])
    everything = cases + result['fill_cases'] + result['load_cases'] + dra + list(result.get('dra_fill_cases') or [])
    problems = [c for c in everything if S.is_problem(c, params['accept_unread_logs'])]
    no_capacity = [c for c in cases + dra if c['status'] in S.NOT_RUN]
    if not cases and not dra:
        raise CheckFailed('no GPU resource to test: the nodes advertise none (is the device plugin running?)',
                          result)
    if params['fail_on_error'] and problems:
        details = '; '.join('%s%s %s: %s %s' % ('%s test ' % c['kind'] if c.get('kind') else '', c['resource'],
                                                (c.get('node') or '') if c.get('kind') else c.get('product') or '',
                                                c['status'], c.get('detail') or '')
                            for c in problems)
        raise CheckFailed('GPU smoke test: %d of %d cases did not pass: %s' % (len(problems), len(everything), details),
                          result)
    if params['fail_on_no_capacity'] and no_capacity:
        raise CheckFailed('GPU smoke test: no schedulable capacity for %s' % '; '.join(
            '%s %s (%s)' % (c['resource'], c.get('product') or '', c.get('reason')) for c in no_capacity), result)


def check_options(params):
    _check_numbers(params)
    if params['fill'] and not 1 <= params['fill_extra'] <= S.FILL_MAX_EXTRA:
        raise InputError('fill_extra must be from 1 to %d, got %d' % (S.FILL_MAX_EXTRA, params['fill_extra']))
    if params['fill'] and not params['fill_command']:
        raise InputError('fill_command must not be empty: the fill pods must keep running')
    load = params.get('load')
    if load is not None and load['duration'] < 1:
        raise InputError('load.duration must be at least 1, got %d' % load['duration'])


def _run_load(conn, params, run_id, check_mode):
    """The load cases, run (one Job per node, backoffLimit 0) unless in check mode; and their warnings."""
    load = params.get('load')
    if load is None:
        return [], []
    cases = S.plan_load(params['nodes'], load['resources'])
    for case in cases:
        case['kind'] = 'load'
    planned = [c for c in cases if c['status'] == S.PLANNED]
    manifests = _load_manifests(planned, params, run_id)
    if check_mode or not planned:
        for case, manifest in zip(planned, manifests):
            case['job'] = manifest['metadata']['name']
        return cases, []
    runner = SmokeRunner(conn, params['namespace'], run_id, timeout=load['duration'] + params['timeout'],
                         stuck_timeout=params['stuck_timeout'], poll_interval=params['poll_interval'],
                         log_lines=params['log_lines'], cleanup=True)
    runner.run(planned, manifests)
    return cases, runner.warnings


def new_run_id():
    """The label value of one run's objects: the time and a random part."""
    return '%s-%s' % (time.strftime('%Y%m%d-%H%M%S', time.gmtime()), os.urandom(2).hex())


def run(conn, params, check_mode, judge=True):
    """``gpuops.gpu.gpu_smoke_test`` on the resources the device plugin advertises (ops/smoke_dra.py adds DRA):
    plan the cases, run them (not in check mode: there only the Job names are filled in, and the cluster is not
    contacted), and judge (unless ``judge`` is false). With ``fill`` the shared resources are filled first (while
    the fleet read is fresh); with ``load`` the load Jobs run last. Raises InputError for bad numbers,
    CheckFailed (with the result) for a run that must fail."""
    check_options(params)
    cases = S.plan_cases(params['nodes'], resources=params['resources'], exclude_resources=params['exclude_resources'],
                         group_by=params['group_by'])
    run_id = new_run_id()
    fill_cases = (F.plan_fill(params['nodes'], params['fill_extra'], resources=params['resources'],
                              exclude_resources=params['exclude_resources']) if params['fill'] else [])
    fill_planned = [c for c in fill_cases if c['status'] == S.PLANNED]
    fill_manifests = _fill_manifests(fill_planned, params, run_id + '-fill')
    planned = [c for c in cases if c['status'] == S.PLANNED]
    manifests = _manifests(planned, params, run_id)
    warnings = []
    if not check_mode and (planned or fill_planned or params.get('load') is not None):
        conn.open()  # a cluster that cannot be reached fails the module here, before any case
    if not check_mode and fill_planned:
        filler = FillRunner(conn, params['namespace'], run_id + '-fill', timeout=params['timeout'],
                            stuck_timeout=params['stuck_timeout'], poll_interval=params['poll_interval'])
        filler.run(fill_planned, fill_manifests)
        warnings.extend(filler.warnings)
    elif check_mode:
        for case, pods in zip(fill_planned, fill_manifests):
            case['pods'] = [p['metadata']['name'] for p in pods]
    if not check_mode and planned:
        runner = SmokeRunner(conn, params['namespace'], run_id, timeout=params['timeout'],
                             stuck_timeout=params['stuck_timeout'], poll_interval=params['poll_interval'],
                             wait_for=params['wait_for'], expect_output=params['expect_output'],
                             log_lines=params['log_lines'], cleanup=params['cleanup'])
        runner.run(planned, manifests)
        warnings.extend(runner.warnings)
    elif check_mode:
        for case, manifest in zip(planned, manifests):
            case['job'] = manifest['metadata']['name']
    load_cases, load_warnings = _run_load(conn, params, run_id + '-load', check_mode)
    warnings.extend(load_warnings)
    text = S.table(cases)
    if params['fill']:
        text += '\n\nFill test (shared resources: %d extra pod(s) must stay Pending)\n%s' % (
            params['fill_extra'], F.fill_table(fill_cases))
    if params.get('load') is not None:
        text += '\n\nLoad (%s, %ss)\n%s' % (
            params['load']['image'], params['load']['duration'], S.table(load_cases) if load_cases else 'no node to load')
    result = dict(changed=bool(planned) and not params['cleanup'] and not check_mode, cases=cases,
                  fill_cases=fill_cases, load_cases=load_cases, dra_cases=[], dra_fill_cases=[],
                  summary=S.summarise(cases), table=text, run_id=run_id, warnings=warnings)
    if judge:
        verdict(cases, params, result)
    return result
