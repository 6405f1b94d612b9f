# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""GPU smoke test through Dynamic Resource Allocation, the objects and the results: the claim templates and Jobs
of the cases, the claims and pods of the fill test (cases from plans/smoke_dra.py), how a case ended, the
tables. Pure; ops/smoke_dra.py creates, watches and deletes the objects.

Every object carries the smoke test's labels (``app.kubernetes.io/name: gpuops-smoke-test``, managed-by and
the run label), the claims made from a template too (the template's ``spec.metadata``), so one label selector
finds everything a run created.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy

from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import LABEL_MANAGED_BY, MANAGED_BY
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import dra
from ansible_collections.gpuops.gpu.plugins.module_utils.plans import smoke as S
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.smoke_dra import class_claim_spec
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.smoke_fill import FILL_LABEL, SKIPPED, fill_counts

PREFIX = 'gpuops-dra'
FILL_PREFIX = 'gpuops-dra-fill'
REQUEST = 'gpu'  # the name of the pod's claim and of the request of the claims the test writes
ANN_CLASS = 'gpuops.gpu/device-class'
ANN_KIND = 'gpuops.gpu/dra-case'


def node_affinity(nodes):
    """Required node affinity to any of ``nodes`` (one term per node: ``matchFields`` on ``metadata.name`` takes
    a single value, and terms are or-ed); None for no node."""
    if not nodes:
        return None
    terms = [{'matchFields': [{'key': 'metadata.name', 'operator': 'In', 'values': [name]}]} for name in nodes]
    return {'nodeAffinity': {'requiredDuringSchedulingIgnoredDuringExecution': {'nodeSelectorTerms': terms}}}


def _labels(run_id, extra=None):
    out = {S.NAME_LABEL: S.APP_NAME, LABEL_MANAGED_BY: MANAGED_BY, S.RUN_LABEL: run_id}
    out.update(extra or {})
    return out


def _annotations(case):
    return {S.ANN_RESOURCE: case['resource'], ANN_CLASS: case['device_class'], ANN_KIND: case['kind']}


def object_name(case):
    """The name of a case's Job and claim template."""
    return S.job_name(dict(case, product=None, node=None), prefix=PREFIX)


def claim_template_manifest(case, namespace, run_id):
    """The ResourceClaimTemplate of a ``class`` or ``template`` case: its claim spec, in the test's namespace."""
    return {'apiVersion': dra.API_VERSION, 'kind': 'ResourceClaimTemplate',
            'metadata': {'name': object_name(case), 'namespace': namespace, 'labels': _labels(run_id),
                         'annotations': _annotations(case)},
            'spec': {'metadata': {'labels': _labels(run_id)}, 'spec': copy.deepcopy(case['claim_spec'])}}


def job_manifest(case, namespace, image, run_id, **kwargs):
    """The Job of a case: plans/smoke.py's Job with, in place of an extended resource in ``limits``, the pod claim
    ``gpu`` made from the case's template (an ``extended-resource`` case keeps its ``limits``), pinned to the
    case's nodes. ``kwargs`` are plans/smoke.py ``job_manifest``'s."""
    job = S.job_manifest(dict(case, product=None, node=None), namespace, image, run_id, prefix=PREFIX, **kwargs)
    for meta in (job['metadata'], job['spec']['template']['metadata']):
        meta['annotations'].update(_annotations(case))
    pod = job['spec']['template']['spec']
    if case['kind'] != 'extended-resource':
        pod['containers'][0]['resources'] = {'claims': [{'name': REQUEST}]}
        pod['resourceClaims'] = [{'name': REQUEST, 'resourceClaimTemplateName': object_name(case)}]
    affinity = node_affinity(case.get('nodes'))
    if affinity:
        pod['affinity'] = affinity
    return job


def fill_objects(case, namespace, image, run_id, command=('sleep', '3600'), tolerations=None,
                 image_pull_secrets=None, image_pull_policy='IfNotPresent', security_context=None):
    """``[(claim, pod)]`` of a fill case: ``expect_running + expect_pending`` ResourceClaims of one device of the
    class, each used by one bare pod pinned to the case's nodes (bare pods: one that ended would free its device)."""
    labels = _labels(run_id, {FILL_LABEL: str(case['id'])})
    base = S.job_name({'resource': case['device_class'], 'id': case['id']}, prefix=FILL_PREFIX)
    out = []
    for index in range(case['expect_running'] + case['expect_pending']):
        name = '%s-%d' % (base, index)
        meta = {'name': name, 'namespace': namespace, 'labels': dict(labels), 'annotations': _annotations(case)}
        claim = {'apiVersion': dra.API_VERSION, 'kind': 'ResourceClaim', 'metadata': copy.deepcopy(meta),
                 'spec': class_claim_spec(case['device_class'])}
        container = {'name': 'fill', 'image': image, 'imagePullPolicy': image_pull_policy,
                     'resources': {'claims': [{'name': REQUEST}]},
                     'securityContext': copy.deepcopy(S.DEFAULT_SECURITY_CONTEXT if security_context is None
                                                      else security_context)}
        if command:
            container['command'] = list(command)
        spec = {'restartPolicy': 'Never', 'terminationGracePeriodSeconds': 0, 'automountServiceAccountToken': False,
                'containers': [container], 'resourceClaims': [{'name': REQUEST, 'resourceClaimName': name}]}
        affinity = node_affinity(case.get('nodes'))
        if affinity:
            spec['affinity'] = affinity
        if tolerations:
            spec['tolerations'] = copy.deepcopy(tolerations)
        if image_pull_secrets:
            spec['imagePullSecrets'] = [{'name': s} for s in image_pull_secrets]
        out.append((claim, {'apiVersion': 'v1', 'kind': 'Pod', 'metadata': meta, 'spec': spec}))
    return out


# --- results -------------------------------------------------------------------------------------------------

def claim_of(pod, kind):
    """The ResourceClaim that gave a case's pod its device: the pod claim ``gpu`` (``status.resourceClaimStatuses``)
    or, for an extended-resource case, the claim the scheduler made (``status.extendedResourceClaimStatus``)."""
    status = (pod or {}).get('status') or {}
    if kind == 'extended-resource':
        return (status.get('extendedResourceClaimStatus') or {}).get('resourceClaimName')
    return next((s.get('resourceClaimName') for s in status.get('resourceClaimStatuses') or []
                 if s.get('name') == REQUEST), None)


def allocated_devices(claim):
    """``['<pool>/<device>']`` of a claim's allocation ([] while not allocated)."""
    results = ((((claim or {}).get('status') or {}).get('allocation') or {}).get('devices') or {}).get('results')
    return ['%s/%s' % (r.get('pool'), r.get('device')) for r in results or []]


def judge(case, status, detail, pod):
    """``(status, detail)`` of a workload case once its Job ended (plans/smoke.py ``classify``): a completed pod
    passes only when it got its device through a ResourceClaim, which the pod's status names."""
    claim = claim_of(pod, case['kind'])
    if claim:
        case['claim'] = claim
    if status == S.PASSED and not claim:
        why = ('no extendedResourceClaimStatus: %s was not served through DeviceClass %s'
               % (case['resource'], case['device_class'])) if case['kind'] == 'extended-resource' else \
            'no ResourceClaim in its status'
        return S.FAILED, '%s, but %s' % (detail, why)
    return status, detail


def scheduler_reasons(pods):
    """The scheduler's messages on the Pending pods (their PodScheduled condition), distinct, in order."""
    out = []
    for pod in pods or []:
        for condition in (pod.get('status') or {}).get('conditions') or []:
            if condition.get('type') == 'PodScheduled' and condition.get('status') == 'False':
                message = condition.get('message') or condition.get('reason') or ''
                if message and message not in out:
                    out.append(message)
    return out


def classify_fill(case, pods, claims, stuck=False):
    """``(status or None while it settles, detail)`` of a DRA fill case: exactly ``expect_running`` claims
    allocated and pods bound, exactly ``expect_pending`` pods Pending as Unschedulable (plans/smoke_fill.py's
    counts), the scheduler's reason in the detail (``case['pending_reason']``)."""
    bound, unschedulable, ended = fill_counts(pods)
    allocated = sum(1 for claim in claims or [] if allocated_devices(claim))
    want_bound, want_pending = case['expect_running'], case['expect_pending']
    reasons = scheduler_reasons([p for p in pods or [] if not (p.get('spec') or {}).get('nodeName')])
    case['pending_reason'] = reasons[0] if reasons else ''
    detail = '%d claims allocated, %d pods bound, %d Pending (Unschedulable); expected %d and %d' % (
        allocated, bound, unschedulable, want_bound, want_pending)
    if reasons:
        detail += '; the scheduler: %s' % reasons[0]
    if bound > want_bound or allocated > want_bound:
        why = ('%d fill pods ended and freed their devices: give smoke_test_fill_command a command that keeps '
               'running' % ended) if ended else 'the scheduler allocated more devices than the class had free'
        return S.FAILED, '%s: %s' % (detail, why)
    if bound == want_bound == allocated and unschedulable == want_pending:
        return S.PASSED, detail
    return (S.FAILED if stuck else None), detail


# --- tables --------------------------------------------------------------------------------------------------

COLUMNS = (
    ('KIND', lambda c: c['kind']),
    ('NAME', lambda c: c['resource']),
    ('CLASS', lambda c: c.get('device_class') or '-'),
    ('NODES', lambda c: str(len(c.get('nodes') or []))),
    ('FREE', lambda c: '?' if not c.get('countable', True) else str(c['free']) if 'free' in c else '-'),
    ('RESULT', lambda c: c['status'].upper()),
    ('RAN ON', lambda c: c.get('ran_on') or '-'),
    ('SECS', lambda c: '-' if c.get('seconds') is None else '%.0f' % c['seconds']),
    ('DETAIL', lambda c: c.get('detail') or c.get('reason') or ''),
)
FILL_COLUMNS = (
    ('CLASS', lambda c: c['device_class']),
    ('NODES', lambda c: str(len(c.get('nodes') or []))),
    ('DEVICES', lambda c: str(c.get('devices', 0))),
    ('IN USE', lambda c: str(c.get('in_use', 0))),
    ('CLAIMS', lambda c: '-' if c['status'] in (S.NO_CAPACITY, SKIPPED) else
     str(c.get('expect_running', 0) + c.get('expect_pending', 0))),
    ('RESULT', lambda c: c['status'].upper()),
    ('DETAIL', lambda c: c.get('detail') or c.get('reason') or ''),
)


def render(columns, cases):
    """Fixed-width text table, one row per case (the last column is not padded)."""
    rows = [[h for h, _f in columns]] + [[f(c) for _h, f in columns] for c in cases]
    widths = [max(len(r[i]) for r in rows) for i in range(len(columns) - 1)]
    return '\n'.join('  '.join([row[i].ljust(widths[i]) for i in range(len(widths))] + [row[-1]]).rstrip()
                     for row in rows)


def table(cases, fill_cases=None, fill=False, extra=1):
    """The DRA part of the smoke test's output: its cases, their counts and, with ``fill``, the fill test."""
    text = 'DRA (DeviceClasses, ResourceClaimTemplates, extended resources through DRA)\n%s\n\n%d cases: %s' % (
        render(COLUMNS, cases), len(cases),
        ', '.join('%s %d' % kv for kv in sorted(S.summarise(cases).items())) or 'none')
    if fill:
        text += '\n\nDRA fill test (per DeviceClass: %d extra claim(s) must stay unallocated)\n%s' % (
            extra, render(FILL_COLUMNS, fill_cases) if fill_cases else 'no DeviceClass to fill')
    return text
