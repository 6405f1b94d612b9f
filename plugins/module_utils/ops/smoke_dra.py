# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""GPU smoke test through Dynamic Resource Allocation, cluster part: read what DRA publishes, plan
(plans/smoke_dra.py), run the fill test one DeviceClass at a time, then every workload Job at once, and delete
everything the run created (claims, claim templates, Jobs, pods), also when it fails half-way.

Reads: four list calls (DeviceClasses, ResourceClaimTemplates, the driver's ResourceSlices, ResourceClaims),
also in check mode, which writes nothing. Waiting costs one list call per kind of object per poll (Jobs, pods,
claims of the run, by label). Requests go through the run's ``k8s.client.Connection`` (``core``, ``batch``,
``custom``); this file imports no client library.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.module_utils.common.errors import ApiError, InputError, api_error_message
from ansible_collections.gpuops.gpu.plugins.module_utils.common.objects import labels_of, name_of
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import dra
from ansible_collections.gpuops.gpu.plugins.module_utils.ops import inventory
from ansible_collections.gpuops.gpu.plugins.module_utils.ops import smoke
from ansible_collections.gpuops.gpu.plugins.module_utils.ops.smoke import FillRunner, SmokeRunner
from ansible_collections.gpuops.gpu.plugins.module_utils.plans import smoke as S
from ansible_collections.gpuops.gpu.plugins.module_utils.plans import smoke_dra as D
from ansible_collections.gpuops.gpu.plugins.module_utils.plans import smoke_dra_run as R
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.smoke_fill import FILL_LABEL

GROUP, VERSION = dra.API_VERSION.split('/')
TEMPLATES, CLAIMS = 'resourceclaimtemplates', dra.RESOURCE_CLAIMS


def read(conn):
    """``(classes, templates, slices, claims)``; InputError when ``resource.k8s.io/v1`` is not served, ApiError when
    the account may not read it."""
    lister = inventory.Lister(conn)
    classes = lister.list(conn.custom.list_cluster_custom_object, 'DeviceClasses', missing=(403, 404), group=GROUP,
                          version=VERSION, plural='deviceclasses')
    if classes == 404:
        raise InputError('the smoke test through DRA needs %s, which this cluster does not serve (Kubernetes 1.34 or '
                         'later; OpenShift 4.21 or later)' % dra.API_VERSION)
    templates = lister.list(conn.custom.list_cluster_custom_object, 'ResourceClaimTemplates', missing=(403,),
                            group=GROUP, version=VERSION, plural=TEMPLATES) if classes != 403 else 403
    slices, claims, facts = inventory.list_dra(conn, lister)
    if 403 in (classes, templates) or facts is not None:
        raise ApiError('the smoke test through DRA must list DeviceClasses, ResourceClaimTemplates, ResourceSlices and '
                       'ResourceClaims (%s): the account may not' % GROUP)
    return classes, templates, slices, claims


def plan(conn, params):
    """The DRA plan of a smoke test run (plans/smoke_dra.py ``plan``); InputError, before anything is written,
    listing every input error."""
    classes, templates, slices, claims = read(conn)
    out = D.plan(classes, templates, slices, claims, params['nodes'], wanted_classes=params['device_classes'],
                 wanted_templates=params['claim_templates'], tolerations=params['tolerations'],
                 extended_resources=params['extended_resources'], fill=params['fill'],
                 fill_extra=params['fill_extra'])
    if out['errors']:
        raise InputError('GPU smoke test through DRA: nothing was created; %s' % '; '.join(out['errors']))
    return out


class DraSmokeRunner(SmokeRunner):
    """The Jobs of the DRA cases run by ops/smoke.py ``SmokeRunner``, with the claim template of each case created
    before its Job, the pod's claim checked (plans/smoke_dra_run.py ``judge``) and its device noted, and the
    templates and claims of the run deleted with the Jobs (with ``cleanup``), also when the run fails."""

    def run(self, cases, manifests, templates=None):
        """Run ``cases`` with their Job ``manifests`` and claim ``templates`` (None for an extended-resource case),
        same order; a case whose template is refused ends as an error. Returns the cases."""
        self._pods_seen = {}
        self._stuck = self.stuck_timeout
        self._started = self._progress = self.clock()
        enabled, self.cleanup_enabled = self.cleanup_enabled, False
        try:
            for case, template in zip(cases, templates or []):
                try:
                    if template is not None:
                        self.conn.request(self.conn.custom.create_namespaced_custom_object, GROUP, VERSION,
                                          self.namespace, TEMPLATES, template)
                except Exception as exc:  # ApiException, urllib3 errors alike
                    case.update(status=S.ERROR, detail='could not create ResourceClaimTemplate %s: %s'
                                % (name_of(template), api_error_message(exc)))
            runnable = [(c, m) for c, m in zip(cases, manifests) if c['status'] == S.PLANNED]
            if runnable:
                SmokeRunner.run(self, [c for c, _m in runnable], [m for _c, m in runnable])
        finally:
            self.cleanup_enabled = enabled
            if enabled:
                self.cleanup()
        return cases

    def _lists(self):
        jobs, pods = SmokeRunner._lists(self)
        self._pods_seen.update((name_of(p), p) for p in pods)
        return jobs, pods

    def _poll(self, pending, last):
        waiting = dict(pending)
        # cases may wait for the same devices (a class and its extended resource, two classes of one GPU model):
        # the scheduler places the next as each ends, so a Pending case is stuck only stuck_timeout after the last
        # case of the run ended
        self.stuck_timeout = self._stuck + max(0.0, self._progress - self._started)
        SmokeRunner._poll(self, pending, last)
        if len(pending) < len(waiting):
            self._progress = self.clock()
        claims = None
        for name, (case, _t0) in waiting.items():
            pod = self._pods_seen.get(case.get('pod'))
            if R.claim_of(pod, case['kind']) and not case.get('device'):
                claims = self._claims() if claims is None else claims
                case['device'] = ', '.join(R.allocated_devices(claims.get(R.claim_of(pod, case['kind'])))) or None
            if name not in pending:
                case['status'], case['detail'] = R.judge(case, case['status'], case.get('detail'), pod)

    def _claims(self):
        try:
            items = self.conn.call(self.conn.custom.list_namespaced_custom_object, GROUP, VERSION, self.namespace,
                                   CLAIMS).get('items') or []
        except Exception:  # the device is a detail; the claim's name is in the pod
            return {}
        return dict((name_of(c), c) for c in items)

    def cleanup(self):
        """The Jobs and their pods (SmokeRunner), then the run's claim templates, then wait (bounded) until the claims
        made for its pods are gone: their devices are free again."""
        SmokeRunner.cleanup(self)
        delete_labelled(self, TEMPLATES, 'ResourceClaimTemplate')
        pods = set(getattr(self, '_pods_seen', {}))

        def ours(claim):
            owners = [o.get('name') for o in (claim.get('metadata') or {}).get('ownerReferences') or []]
            return labels_of(claim).get(S.RUN_LABEL) == self.run_id or bool(pods.intersection(owners))
        wait_gone(self, lambda: [c for c in self._claims().values() if ours(c)], 'claims')


def delete_labelled(runner, plural, kind):
    """Delete the run's objects of ``plural`` (by the run label); failures become warnings."""
    try:
        items = runner.conn.call(runner.conn.custom.list_namespaced_custom_object, GROUP, VERSION, runner.namespace,
                                 plural, label_selector=runner.selector).get('items') or []
    except Exception as exc:
        runner.warnings.append('could not list the %ss of the run: %s (delete the ones labelled %s in %s)'
                               % (kind, api_error_message(exc), runner.selector, runner.namespace))
        return
    for item in items:
        try:
            runner.conn.request(runner.conn.custom.delete_namespaced_custom_object, GROUP, VERSION, runner.namespace,
                                plural, name_of(item), grace_period_seconds=0)
        except Exception as exc:
            if getattr(exc, 'status', None) != 404:
                runner.warnings.append('could not delete %s %s: %s' % (kind, name_of(item), api_error_message(exc)))


def wait_gone(runner, left, what):
    """Wait (bounded by the runner's ``cleanup_timeout``) until ``left()`` is empty; a warning names what stayed."""
    seen = []

    def gone():
        seen[:] = left()
        return True if not seen else None
    if runner.waiter.until(gone, runner.cleanup_timeout) is None:
        runner.warnings.append('smoke test %s still present after %ss: %s' % (
            what, runner.cleanup_timeout, ', '.join(name_of(o) for o in seen)))


class DraFillRunner(FillRunner):
    """The DRA fill test: one DeviceClass at a time (classes may select the same devices), its claims and pods
    created at once, polled (pods and claims: two list calls) until plans/smoke_dra_run.py ``classify_fill``
    decides, then its pods (the Pending ones first) and claims deleted and awaited before the next class."""

    def run(self, cases, manifests):
        """Run the fill ``cases`` one after the other with their ``[(claim, pod)]`` lists ``manifests`` (same order);
        returns the cases."""
        for case, pairs in zip(cases, manifests):
            try:
                for claim, pod in pairs:
                    self.conn.request(self.conn.custom.create_namespaced_custom_object, GROUP, VERSION,
                                      self.namespace, CLAIMS, claim)
                    self.conn.request(self.conn.core.create_namespaced_pod, self.namespace, pod)
                self._settle({str(case['id']): (case, self.clock())}, 'not settled after %ss: %s')
            except Exception as exc:  # ApiException, urllib3 errors alike
                case.update(status=S.ERROR, detail='could not create the fill claims and pods: %s'
                            % api_error_message(exc))
            finally:
                self.cleanup()
        return cases

    def _fill_claims(self):
        return self.conn.call(self.conn.custom.list_namespaced_custom_object, GROUP, VERSION, self.namespace,
                              CLAIMS, label_selector=self.selector).get('items') or []

    def _poll(self, pending, last):
        try:
            pods, claims = self._pods(), self._fill_claims()
        except Exception as exc:  # a failed poll is retried until the deadline
            self.warnings.append('could not read the fill test pods and claims: %s' % api_error_message(exc))
            return

        def classify(key, case, stuck):
            return R.classify_fill(case, [p for p in pods if labels_of(p).get(FILL_LABEL) == key],
                                   [c for c in claims if labels_of(c).get(FILL_LABEL) == key], stuck=stuck)
        self._decide(pending, last, classify)

    def cleanup(self):
        FillRunner.cleanup(self)
        delete_labelled(self, CLAIMS, 'ResourceClaim')
        wait_gone(self, self._fill_claims, 'fill claims')


def _job_kwargs(params, timeout):
    return dict(command=params['command'], args=params['args'], tolerations=params['tolerations'],
                image_pull_secrets=params['image_pull_secrets'], image_pull_policy=params['image_pull_policy'],
                security_context=params['security_context'], node_selector=params['node_selector'],
                active_deadline_seconds=timeout + 60)


def run_dra(conn, params, planned_dra, run_id, check_mode):
    """``(cases, fill_cases, warnings)`` of the DRA part of a smoke test run: the fill test (with ``fill``), then
    the workload Jobs. In check mode only the names of what would be created are filled in."""
    cases, fill_cases = planned_dra['cases'], planned_dra['fill_cases']
    fills = [c for c in fill_cases if c['status'] == S.PLANNED]
    fill_objects = [R.fill_objects(c, params['namespace'], params['image'], run_id + '-fill',
                                   command=params['fill_command'], tolerations=params['tolerations'],
                                   image_pull_secrets=params['image_pull_secrets'],
                                   image_pull_policy=params['image_pull_policy'],
                                   security_context=params['security_context']) for c in fills]
    planned = [c for c in cases if c['status'] == S.PLANNED]
    jobs = [R.job_manifest(c, params['namespace'], params['image'], run_id, **_job_kwargs(params, params['timeout']))
            for c in planned]
    templates = [None if c['kind'] == 'extended-resource' else R.claim_template_manifest(c, params['namespace'], run_id)
                 for c in planned]
    for case, job, template in zip(planned, jobs, templates):
        case.update(job=name_of(job), claim_template=name_of(template) if template else None)
    for case, pairs in zip(fills, fill_objects):
        case['claims'] = [name_of(claim) for claim, _pod in pairs]
    if check_mode:
        return cases, fill_cases, []
    warnings = []
    if fills:
        filler = DraFillRunner(conn, params['namespace'], run_id + '-fill', timeout=params['timeout'],
                               stuck_timeout=params['stuck_timeout'], poll_interval=params['poll_interval'])
        filler.run(fills, fill_objects)
        warnings.extend(filler.warnings)
    if planned:
        runner = DraSmokeRunner(conn, params['namespace'], run_id, timeout=params['timeout'],
                                stuck_timeout=params['stuck_timeout'], poll_interval=params['poll_interval'],
                                wait_for=params['wait_for'], expect_output=params['expect_output'],
                                log_lines=params['log_lines'], cleanup=params['cleanup'])
        runner.run(planned, jobs, templates)
        warnings.extend(runner.warnings)
    return cases, fill_cases, warnings


def run(conn, params, check_mode):
    """``gpuops.gpu.gpu_smoke_test`` by ``mode``: ``device-plugin`` is ops/smoke.py ``run``; ``dra`` and ``both`` read
    and plan the DRA part first (bad input is refused before anything is written), run the device-plugin part
    (``both``), then the DRA part, and judge everything together. Raises InputError, CheckFailed (with the
    result)."""
    if params['mode'] == 'device-plugin':
        return smoke.run(conn, params, check_mode)
    smoke.check_options(params)
    if params['mode'] == 'dra' and params.get('load') is not None:
        raise InputError('load runs on the resources the device plugin advertises: use it with mode both or '
                         'device-plugin')
    planned_dra = plan(conn, params)
    if params['mode'] == 'both':
        result = smoke.run(conn, params, check_mode, judge=False)
    else:
        run_id = smoke.new_run_id()
        result = dict(changed=False, cases=[], fill_cases=[], load_cases=[], summary={}, table='', run_id=run_id,
                      warnings=[])
    cases, fill_cases, warnings = run_dra(conn, params, planned_dra, result['run_id'] + '-dra', check_mode)
    text = R.table(cases, fill_cases, fill=params['fill'], extra=params['fill_extra'])
    result.update(dra_cases=cases, dra_fill_cases=fill_cases, summary=S.summarise(result['cases'] + cases),
                  table='%s\n\n%s' % (result['table'], text) if result['table'] else text,
                  changed=result['changed'] or (
                      any(c.get('job') for c in cases) and not params['cleanup'] and not check_mode))
    result['warnings'].extend(warnings)
    smoke.verdict(result['cases'], params, result)
    return result
