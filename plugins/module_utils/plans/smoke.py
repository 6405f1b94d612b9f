# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""GPU smoke test, pure part: which cases to run, the Job of a case, how a case ended, the table.

A *case* is one GPU resource the cluster advertises, grouped by ``product`` (default: the
``nvidia.com/gpu.product`` label, which GFD suffixes with ``-MIG-<profile>`` and ``-SHARED``, so full,
shared and MIG devices of one model are separate cases), by ``resource`` or by ``node``. A case with
no schedulable capacity (0 allocatable, nodes cordoned or not Ready, every unit in use) is kept in
the result with the reason: it is reported, never hidden.

The input ``nodes`` is the ``nodes`` list of ``gpuops.gpu.gpu_nodes_info``.

:func:`input_errors` checks the settings of the gpuops.gpu.smoke_test role before it writes anything.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import hashlib
import re

from ansible_collections.gpuops.gpu.plugins.module_utils.common import image_ref
from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import as_number, is_dns_label, is_dns_subdomain
from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import (
    GPU_RESOURCE, LABEL_MANAGED_BY, LABEL_PRODUCT, MANAGED_BY, MIG_RESOURCE_PREFIX, SHARED_RESOURCE)
from ansible_collections.gpuops.gpu.plugins.module_utils.common.objects import meta_of
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.fleet import short_resource

GROUP_BY = ('product', 'resource', 'node')
# the labels and annotations on the smoke test's Jobs and pods
RUN_LABEL = 'gpuops.gpu/smoke-test'
NAME_LABEL, APP_NAME = 'app.kubernetes.io/name', 'gpuops-smoke-test'
ANN_RESOURCE, ANN_PRODUCT, ANN_NODE = ('gpuops.gpu/' + what for what in ('resource', 'product', 'node'))

PLANNED = 'planned'
PASSED = 'passed'
FAILED = 'failed'
UNSCHEDULABLE = 'unschedulable'
TIMEOUT = 'timeout'
ERROR = 'error'
NO_CAPACITY = 'no-capacity'
NOT_ADVERTISED = 'not-advertised'
# completed, but its log could not be read, so the expected output was not checked: a problem unless the user
# accepts unread logs (accept_unread_logs)
NOT_CHECKED = 'not-checked'
NOT_RUN = (NO_CAPACITY, NOT_ADVERTISED)
PROBLEMS = (FAILED, UNSCHEDULABLE, TIMEOUT, ERROR, NOT_CHECKED)

# Accepted by the OpenShift restricted-v2 SCC (which also assigns a non-root UID) and the baseline pod
# security standard. No runAsNonRoot: the CUDA sample images run as root where no SCC assigns a UID.
DEFAULT_SECURITY_CONTEXT = {
    'allowPrivilegeEscalation': False,
    'capabilities': {'drop': ['ALL']},
    'seccompProfile': {'type': 'RuntimeDefault'},
}


def _case_key(resource, node, group_by):
    if group_by == 'resource':
        return (resource, None, None)
    if group_by == 'node':
        return (resource, node.get('product_label'), node.get('name'))
    return (resource, node.get('product_label'), None)


def plan_cases(nodes, resources=None, exclude_resources=None, group_by='product'):
    """The cases to run, sorted (resource, product, node); see the module docstring."""
    if group_by not in GROUP_BY:
        raise ValueError('group_by must be one of %s, got %r' % (', '.join(GROUP_BY), group_by))
    wanted = set(resources or [])
    excluded = set(exclude_resources or [])
    cases = {}
    for node in nodes or []:
        names = set(node.get('capacity') or {}) | set(node.get('allocatable') or {})
        for resource in names:
            if resource in excluded or (wanted and resource not in wanted):
                continue
            key = _case_key(resource, node, group_by)
            case = cases.setdefault(key, {
                'resource': resource, 'product': key[1], 'node': key[2], 'nodes': [],
                'capacity': 0, 'allocatable': 0, 'free': 0, 'schedulable_nodes': [],
                'cordoned': [], 'not_ready': [], 'free_known': True})
            _add_node(case, node, resource)
    out = [_finish(case) for case in cases.values()]
    advertised = set(c['resource'] for c in out)
    for resource in sorted(wanted - advertised - excluded):
        out.append({'resource': resource, 'product': None, 'node': None, 'nodes': [], 'capacity': 0,
                    'allocatable': 0, 'free': 0, 'schedulable_nodes': [], 'status': NOT_ADVERTISED,
                    'reason': 'no node advertises %s' % resource})
    out.sort(key=lambda c: (_resource_order(c['resource']), c['product'] or '', c['node'] or ''))
    for index, case in enumerate(out):
        case['id'] = index
    return out


def _resource_order(name):
    short = short_resource(name)
    return (0 if short == 'gpu' else 1 if short.startswith('gpu') else 2, short)


def _add_node(case, node, resource):
    capacity = int((node.get('capacity') or {}).get(resource, 0) or 0)
    allocatable = int((node.get('allocatable') or {}).get(resource, 0) or 0)
    free_map = node.get('free')
    if free_map is None:
        free = allocatable
        case['free_known'] = False
    else:
        free = int(free_map.get(resource, 0) or 0)
    case['nodes'].append(node.get('name'))
    case['capacity'] += capacity
    case['allocatable'] += allocatable
    if allocatable <= 0:
        return
    if node.get('unschedulable'):
        case['cordoned'].append(node.get('name'))
        return
    if node.get('ready') is False:
        case['not_ready'].append(node.get('name'))
        return
    case['free'] += max(free, 0)
    if free > 0:
        case['schedulable_nodes'].append(node.get('name'))


def _finish(case):
    case = dict(case)
    cordoned, not_ready = case.pop('cordoned'), case.pop('not_ready')
    free_known = case.pop('free_known')
    case['nodes'] = sorted(case['nodes'])
    case['schedulable_nodes'] = sorted(case['schedulable_nodes'])
    if case['schedulable_nodes']:
        case['status'], case['reason'] = PLANNED, ''
    elif case['allocatable'] <= 0:
        case['status'] = NO_CAPACITY
        case['reason'] = ('in the capacity of %s but 0 allocatable (device plugin not running, devices unhealthy '
                          'or a MIG change in progress)' % ', '.join(case['nodes']))
    else:
        reasons = []
        if cordoned:
            reasons.append('cordoned: %s' % ', '.join(sorted(cordoned)))
        if not_ready:
            reasons.append('not Ready: %s' % ', '.join(sorted(not_ready)))
        if not reasons:
            reasons.append('every allocatable unit is requested by pods' if free_known else 'no free unit')
        case['status'], case['reason'] = NO_CAPACITY, '; '.join(reasons)
    return case


def job_name(case, prefix='gpuops-smoke'):
    """A DNS-1123 name of at most 52 characters (pod names add 6, the job-name label allows 63)."""
    parts = [short_resource(case['resource']), case.get('product') or '', case.get('node') or '']
    slug = re.sub(r'[^a-z0-9]+', '-', '-'.join(p for p in parts if p).lower()).strip('-')
    digest = hashlib.sha256(repr((case['resource'], case.get('product'), case.get('node'))).encode()).hexdigest()[:5]
    head = '%s-%s' % (prefix, case['id'])
    room = 52 - len(head) - len(digest) - 2
    slug = slug[:max(room, 0)].strip('-')
    return '-'.join(p for p in (head, slug, digest) if p)


def affinity(case):
    """Required node affinity that pins the case to its product or node."""
    if case.get('node'):
        term = {'matchFields': [{'key': 'metadata.name', 'operator': 'In', 'values': [case['node']]}]}
    elif case.get('product'):
        term = {'matchExpressions': [{'key': LABEL_PRODUCT, 'operator': 'In', 'values': [case['product']]}]}
    else:
        return None
    return {'nodeAffinity': {'requiredDuringSchedulingIgnoredDuringExecution': {'nodeSelectorTerms': [term]}}}


def job_manifest(case, namespace, image, run_id, command=None, args=None, tolerations=None,
                 image_pull_secrets=None, image_pull_policy='IfNotPresent', security_context=None,
                 node_selector=None, active_deadline_seconds=300, ttl_seconds_after_finished=600,
                 prefix='gpuops-smoke'):
    """The Job that requests one unit of the case's resource (the load Jobs use ``prefix`` gpuops-load)."""
    labels = {NAME_LABEL: APP_NAME, LABEL_MANAGED_BY: MANAGED_BY, RUN_LABEL: run_id}
    annotations = {ANN_RESOURCE: case['resource']}
    if case.get('product'):
        annotations[ANN_PRODUCT] = case['product']
    if case.get('node'):
        annotations[ANN_NODE] = case['node']
    container = {
        'name': 'smoke',
        'image': image,
        'imagePullPolicy': image_pull_policy,
        'resources': {'limits': {case['resource']: 1}},
        'securityContext': copy.deepcopy(DEFAULT_SECURITY_CONTEXT if security_context is None else security_context),
    }
    if command:
        container['command'] = list(command)
    if args:
        container['args'] = list(args)
    pod_spec = {
        'restartPolicy': 'Never',
        'terminationGracePeriodSeconds': 5,
        'automountServiceAccountToken': False,
        'containers': [container],
    }
    pinned = affinity(case)
    if pinned:
        pod_spec['affinity'] = pinned
    if tolerations:
        pod_spec['tolerations'] = copy.deepcopy(tolerations)
    if node_selector:
        pod_spec['nodeSelector'] = dict(node_selector)
    if image_pull_secrets:
        pod_spec['imagePullSecrets'] = [{'name': s} for s in image_pull_secrets]
    return {
        'apiVersion': 'batch/v1', 'kind': 'Job',
        'metadata': {'name': job_name(case, prefix), 'namespace': namespace, 'labels': dict(labels),
                     'annotations': dict(annotations)},
        'spec': {
            'backoffLimit': 0,
            'activeDeadlineSeconds': int(active_deadline_seconds),
            'ttlSecondsAfterFinished': int(ttl_seconds_after_finished),
            'template': {'metadata': {'labels': dict(labels), 'annotations': dict(annotations)}, 'spec': pod_spec},
        },
    }


# --- results ------------------------------------------------------------------------------------

def _conditions(obj):
    return dict((c.get('type'), c) for c in ((obj or {}).get('status') or {}).get('conditions') or [])


STUCK_WAITING_REASONS = ('ErrImagePull', 'ImagePullBackOff', 'InvalidImageName', 'CreateContainerConfigError',
                         'CreateContainerError', 'CrashLoopBackOff')


def pod_state(pod):
    """(phase, reason, message) of a smoke pod, with the most telling reason available."""
    status = (pod or {}).get('status') or {}
    phase = status.get('phase') or 'Pending'
    for cstatus in status.get('containerStatuses') or []:
        state = cstatus.get('state') or {}
        if state.get('waiting') and state['waiting'].get('reason') in STUCK_WAITING_REASONS:
            return phase, state['waiting']['reason'], state['waiting'].get('message') or ''
        if state.get('terminated') and phase == 'Failed':
            term = state['terminated']
            return phase, term.get('reason') or 'Error', 'exit code %s' % term.get('exitCode')
    scheduled = _conditions(pod).get('PodScheduled')
    if phase == 'Pending' and scheduled and scheduled.get('status') == 'False':
        return phase, scheduled.get('reason') or 'Unschedulable', scheduled.get('message') or ''
    return phase, status.get('reason') or '', status.get('message') or ''


def classify(job, pods, wait_for='completion', stuck=False):
    """(status or None while still running, detail, node) for one case's Job and its pods."""
    pods = sorted(pods or [], key=lambda p: (meta_of(p).get('creationTimestamp') or ''))
    pod = pods[-1] if pods else None
    node = ((pod or {}).get('spec') or {}).get('nodeName')
    conds = _conditions(job)
    if (conds.get('Complete') or {}).get('status') == 'True':
        return PASSED, 'completed', node
    failed = conds.get('Failed') or {}
    if failed.get('status') == 'True':
        detail = failed.get('reason') or 'Failed'
        if pod is not None:
            _phase, reason, message = pod_state(pod)
            if reason:
                detail = '%s: %s %s' % (detail, reason, message)
        return FAILED, detail.strip(), node
    if pod is None:
        return None, 'no pod yet', None
    phase, reason, message = pod_state(pod)
    if phase == 'Succeeded':
        return PASSED, 'completed', node
    if phase == 'Failed':
        return FAILED, ('%s %s' % (reason, message)).strip() or 'pod failed', node
    if phase == 'Running' and wait_for == 'running':
        return PASSED, 'running (not waited for completion)', node
    if stuck and reason in STUCK_WAITING_REASONS:
        return FAILED, ('%s %s' % (reason, message)).strip(), node
    if stuck and phase == 'Pending' and reason == 'Unschedulable':
        return UNSCHEDULABLE, message or reason, node
    return None, ('%s %s' % (phase, reason)).strip(), node


def check_log(log, expect_output, why_unread=''):
    """(status, note) of a completed case from its pod log: PASSED when ``expect_output`` is empty (nothing to
    check) or in the log, FAILED when the log lacks it, NOT_CHECKED when the log could not be read (``log`` None;
    ``why_unread`` says why): a completion whose output nobody read is not a pass."""
    if not expect_output:
        return PASSED, ''
    if log is None:
        return NOT_CHECKED, 'output not checked: the log could not be read%s' % (
            ' (%s)' % why_unread if why_unread else '')
    if expect_output in log:
        return PASSED, "output has '%s'" % expect_output
    return FAILED, "output lacks '%s'" % expect_output


def is_problem(case, accept_unread_logs=False):
    """Whether a case ended in a problem (PROBLEMS); NOT_CHECKED is none with ``accept_unread_logs``."""
    status = case.get('status')
    return status in PROBLEMS and not (accept_unread_logs and status == NOT_CHECKED)


def summarise(cases):
    counts = {}
    for case in cases:
        counts[case['status']] = counts.get(case['status'], 0) + 1
    return counts


def failures(result, on_error=True, on_no_capacity=False, accept_unread_logs=False):
    """What fails the smoke_test role after the table is shown: with ``on_error``, ``<resource> [<node>] <status>``
    of every case, fill case and load case of the module ``result`` that ended in a problem (:func:`is_problem`);
    with ``on_no_capacity``, ``<resource>: <reason>`` of every case not run (NOT_RUN). [] when nothing fails."""
    out = []
    if on_error:
        every = [c for key in ('cases', 'fill_cases', 'load_cases', 'dra_cases', 'dra_fill_cases')
                 for c in result.get(key) or []]
        out.extend(' '.join(str(part) for part in (case.get('resource'), case.get('node'), case['status']) if part)
                   for case in every if is_problem(case, accept_unread_logs))
    if on_no_capacity:
        out.extend('%s: %s' % (case.get('resource'), case.get('reason'))
                   for case in list(result.get('cases') or []) + list(result.get('dra_cases') or [])
                   if case.get('status') in NOT_RUN)
    return out


COLUMNS = (
    ('RESOURCE', lambda c: short_resource(c['resource'])),
    ('PRODUCT', lambda c: c.get('product') or '-'),
    ('NODES', lambda c: str(len(c.get('nodes') or []))),
    ('ALLOC', lambda c: str(c.get('allocatable', 0))),
    ('FREE', lambda c: str(c.get('free', 0))),
    ('RESULT', lambda c: c['status'].upper()),
    ('RAN ON', lambda c: c.get('ran_on') or '-'),
    ('SECS', lambda c: '-' if c.get('seconds') is None else '%.0f' % c['seconds']),
    ('DETAIL', lambda c: c.get('detail') or c.get('reason') or ''),
)


def table(cases):
    """Fixed-width text table, one row per case, then a totals line."""
    rows = [[h for h, _f in COLUMNS]] + [[f(c) for _h, f in COLUMNS] for c in cases]
    widths = [max(len(r[i]) for r in rows) for i in range(len(COLUMNS) - 1)]
    lines = []
    for row in rows:
        cells = [row[i].ljust(widths[i]) for i in range(len(widths))] + [row[-1]]
        lines.append('  '.join(cells).rstrip())
    counts = summarise(cases)
    lines.append('')
    lines.append('%d cases: %s' % (len(cases), ', '.join('%s %d' % (k, counts[k]) for k in sorted(counts)) or 'none'))
    return '\n'.join(lines)


# --- load Jobs ------------------------------------------------------------------------------------

def plan_load(nodes, resources=None):
    """The load cases: one per node and resource (default ``nvidia.com/gpu``), as :func:`plan_cases` with
    ``group_by=node``."""
    return plan_cases(nodes, resources=list(resources or [GPU_RESOURCE]), group_by='node')


def with_duration(words, duration):
    """``words`` with the text ``{duration}`` replaced by the seconds (for gpu-burn or dcgmproftester arguments)."""
    return [str(w).replace('{duration}', str(int(duration))) for w in words or []]


# --- the role's settings --------------------------------------------------------------------

FILL_MAX_EXTRA = 16  # smoke_test_fill_extra: pods started beyond a shared resource's replicas (plans/smoke_fill.py)


def is_gpu_resource(name):
    """``nvidia.com/gpu``, ``nvidia.com/gpu.shared`` or ``nvidia.com/mig-<profile>``."""
    return name in (GPU_RESOURCE, SHARED_RESOURCE) or (
        isinstance(name, str) and name.startswith(MIG_RESOURCE_PREFIX) and len(name) > len(MIG_RESOURCE_PREFIX))


def input_errors(settings):
    """Every problem with the smoke_test role's settings ([] when none): ``settings`` are its variables
    without the ``smoke_test_`` prefix (image, namespace, timeout, stuck_timeout, poll_interval,
    resources, exclude_resources; optionally fill, fill_extra, fill_command, load, load_image,
    load_duration, load_resources, scc). The images are parsed as image references (``image_ref``)."""
    errors = []
    image = settings.get('image')
    if not isinstance(image, str) or not image.strip():
        errors.append('smoke_test_image must not be empty (set it to the workload image, or its mirror)')
    else:
        try:
            image_ref.parse_image(image)
        except image_ref.ImageRefError as exc:
            errors.append('smoke_test_image %s is not an image reference: %s' % (image, exc))
    namespace = settings.get('namespace')
    if not is_dns_label(namespace):
        errors.append('smoke_test_namespace %s is not a valid namespace name (lowercase letters, digits and -, '
                      'at most 63)' % namespace)
    for key in ('timeout', 'stuck_timeout'):
        value = as_number(settings.get(key), int)
        if value is None or value < 1:
            errors.append('smoke_test_%s must be at least 1 second' % key)
    interval = as_number(settings.get('poll_interval'), float)
    if interval is None or interval <= 0:
        errors.append('smoke_test_poll_interval must be greater than 0')
    resources = list(settings.get('resources') or [])
    both = [r for r in resources if r in (settings.get('exclude_resources') or [])]
    if both:
        errors.append('smoke_test_resources and smoke_test_exclude_resources both name %s' % ', '.join(both))
    not_gpu = [str(r) for r in resources if not is_gpu_resource(r)]
    if not_gpu:
        errors.append('smoke_test_resources: %s is not an NVIDIA GPU resource (nvidia.com/gpu, nvidia.com/gpu.shared, '
                      'nvidia.com/mig-<profile>)' % ', '.join(not_gpu))
    errors.extend(_fill_errors(settings))
    errors.extend(_load_errors(settings))
    scc = settings.get('scc')
    if scc not in (None, '') and not is_dns_subdomain(scc):
        errors.append('smoke_test_scc %s is not a SecurityContextConstraints name (for example privileged; '
                      'empty binds none)' % scc)
    return errors


def _fill_errors(settings):
    errors = []
    if 'fill_extra' in settings:
        extra = as_number(settings.get('fill_extra'), int)
        if extra is None or not 1 <= extra <= FILL_MAX_EXTRA:
            errors.append('smoke_test_fill_extra must be a whole number from 1 to %d (the pods started beyond the '
                          'advertised replicas, which must stay Pending)' % FILL_MAX_EXTRA)
    if settings.get('fill') and not settings.get('fill_command'):
        errors.append('smoke_test_fill_command must not be empty with smoke_test_fill: the fill pods must keep '
                      'running (for example [sleep, "3600"])')
    return errors


def _load_errors(settings):
    if not settings.get('load'):
        return []
    errors = []
    image = settings.get('load_image')
    if not isinstance(image, str) or not image.strip():
        errors.append('smoke_test_load_image must be set with smoke_test_load (a gpu-burn or dcgmproftester image, '
                      'or its mirror)')
    else:
        try:
            image_ref.parse_image(image)
        except image_ref.ImageRefError as exc:
            errors.append('smoke_test_load_image %s is not an image reference: %s' % (image, exc))
    duration = as_number(settings.get('load_duration'), int)
    if duration is None or duration < 1:
        errors.append('smoke_test_load_duration must be at least 1 second')
    resources = list(settings.get('load_resources') or [])
    if not resources:
        errors.append('smoke_test_load_resources must name at least one GPU resource')
    not_gpu = [str(r) for r in resources if not is_gpu_resource(r)]
    if not_gpu:
        errors.append('smoke_test_load_resources: %s is not an NVIDIA GPU resource' % ', '.join(not_gpu))
    return errors
