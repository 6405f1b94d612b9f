# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""GPU smoke test, the fill test of shared resources, pure part: the cases (one per node and time-sliced or
MPS-shared resource), their bare pods, how a case ended and its table. The Jobs of the plain smoke test, the
shared labels and statuses and the role's input checks are in plans/smoke.py; ops/smoke.py runs both.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy

from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import as_number
from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import (
    GPU_RESOURCE, LABEL_MANAGED_BY, MANAGED_BY, SHARED_RESOURCE)
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.fleet import short_resource
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.smoke import (
    ANN_NODE, ANN_RESOURCE, APP_NAME, DEFAULT_SECURITY_CONTEXT, FAILED, NAME_LABEL, NO_CAPACITY, PASSED, PLANNED,
    RUN_LABEL, affinity, job_name, pod_state)

# the label that ties a fill pod to its case; fill pods also carry RUN_LABEL and NAME_LABEL
FILL_LABEL = 'gpuops.gpu/smoke-fill'
ANN_SHARING = 'gpuops.gpu/sharing'
SHARED_NAMES = (GPU_RESOURCE, SHARED_RESOURCE)
SHARING_MODES = ('time-slicing', 'mps')
# more pods than this on one node and resource are not started (a fill test is not a load test)
FILL_MAX_PODS = 128
DEFAULT_FILL_COMMAND = ('sleep', '3600')
SKIPPED = 'skipped'


def plan_fill(nodes, extra=1, resources=None, exclude_resources=None):
    """The fill cases: one per node and shared resource (``nvidia.com/gpu`` or ``nvidia.com/gpu.shared`` on a
    node whose ``nvidia.com/gpu.sharing-strategy`` is time-slicing or mps with more than 1 replica).

    A case starts ``expect_running`` + ``extra`` pods requesting 1 unit each, pinned to its node: the
    scheduler must bind exactly ``expect_running`` (the node's free units: its allocatable, the advertised
    replicas, less what other pods hold) and leave exactly ``extra`` Pending as Unschedulable."""
    wanted = set(resources or [])
    excluded = set(exclude_resources or [])
    out = []
    for node in nodes or []:
        sharing = node.get('sharing_strategy') or 'none'
        replicas = as_number(node.get('replicas'), int, 1) or 1
        if sharing not in SHARING_MODES or replicas < 2:
            continue
        allocatable_map = node.get('allocatable') or {}
        for resource in sorted(r for r in allocatable_map if r in SHARED_NAMES):
            if resource in excluded or (wanted and resource not in wanted):
                continue
            allocatable = int(allocatable_map.get(resource) or 0)
            free_map = node.get('free')
            free = allocatable if free_map is None else max(int(free_map.get(resource, 0) or 0), 0)
            case = {'kind': 'fill', 'resource': resource, 'node': node.get('name'),
                    'product': node.get('product_label'), 'sharing': sharing, 'replicas': replicas,
                    'allocatable': allocatable, 'in_use': allocatable - free, 'extra': int(extra),
                    'expect_running': free, 'expect_pending': int(extra), 'status': PLANNED, 'reason': ''}
            if allocatable <= 0:
                case.update(status=NO_CAPACITY, reason='0 allocatable')
            elif node.get('unschedulable'):
                case.update(status=NO_CAPACITY, reason='cordoned')
            elif node.get('ready') is False:
                case.update(status=NO_CAPACITY, reason='not Ready')
            elif free <= 0:
                case.update(status=NO_CAPACITY, reason='every allocatable unit is requested by pods')
            elif free + int(extra) > FILL_MAX_PODS:
                case.update(status=SKIPPED, reason='%d pods needed, more than %d' % (free + int(extra), FILL_MAX_PODS))
            out.append(case)
    out.sort(key=lambda c: (c['node'] or '', c['resource']))
    for index, case in enumerate(out):
        case['id'] = index
    return out


def fill_pod_manifests(case, namespace, image, run_id, command=DEFAULT_FILL_COMMAND, tolerations=None,
                       image_pull_secrets=None, image_pull_policy='IfNotPresent', security_context=None):
    """The ``expect_running + extra`` bare pods of a fill case, each requesting 1 unit, pinned to the node.

    Bare pods, not Jobs: a pod that ends frees its unit and a Pending one would take it. MPS clients need
    nothing more in the spec: 1 unit in ``limits`` (the device plugin refuses more under MPS) and no
    ``hostIPC``; the device plugin hands the MPS pipe directory and shared memory to the container."""
    labels = {NAME_LABEL: APP_NAME, LABEL_MANAGED_BY: MANAGED_BY, RUN_LABEL: run_id, FILL_LABEL: str(case['id'])}
    annotations = {ANN_RESOURCE: case['resource'], ANN_NODE: case['node'], ANN_SHARING: case['sharing']}
    base = job_name(dict(case, product=None), prefix='gpuops-fill')
    pods = []
    for index in range(case['expect_running'] + case['expect_pending']):
        container = {
            'name': 'fill', 'image': image, 'imagePullPolicy': image_pull_policy,
            'resources': {'limits': {case['resource']: 1}},
            'securityContext': copy.deepcopy(DEFAULT_SECURITY_CONTEXT if security_context is None else security_context),
        }
        if command:
            container['command'] = list(command)
        spec = {
            'restartPolicy': 'Never', 'terminationGracePeriodSeconds': 0, 'automountServiceAccountToken': False,
            'containers': [container], 'affinity': affinity({'node': case['node']}),
        }
        if tolerations:
            spec['tolerations'] = copy.deepcopy(tolerations)
        if image_pull_secrets:
            spec['imagePullSecrets'] = [{'name': s} for s in image_pull_secrets]
        pods.append({'apiVersion': 'v1', 'kind': 'Pod',
                     'metadata': {'name': '%s-%d' % (base, index), 'namespace': namespace, 'labels': dict(labels),
                                  'annotations': dict(annotations)},
                     'spec': spec})
    return pods


def fill_counts(pods):
    """(bound, unschedulable, ended) among a fill case's pods: bound to a node, Pending with the scheduler's
    Unschedulable condition, and ended (Succeeded or Failed: its unit is free again)."""
    bound = unschedulable = ended = 0
    for pod in pods or []:
        phase, reason, _message = pod_state(pod)
        if (pod.get('spec') or {}).get('nodeName'):
            bound += 1
            if phase in ('Succeeded', 'Failed'):
                ended += 1
        elif phase == 'Pending' and reason == 'Unschedulable':
            unschedulable += 1
    return bound, unschedulable, ended


def classify_fill(case, pods, stuck=False):
    """(status or None while it settles, detail) of a fill case from its pods."""
    bound, unschedulable, ended = fill_counts(pods)
    want_bound, want_pending = case['expect_running'], case['expect_pending']
    counts = '%d bound, %d Pending (Unschedulable); expected %d and %d' % (bound, unschedulable, want_bound, want_pending)
    if bound > want_bound:
        why = ('%d fill pods ended and freed their units: give smoke_test_fill_command a command that keeps running'
               % ended) if ended else 'the node took more pods than it advertises'
        return FAILED, '%s: %s' % (counts, why)
    if bound == want_bound and unschedulable == want_pending:
        return PASSED, counts
    if stuck:
        return FAILED, counts
    return None, counts


FILL_COLUMNS = (
    ('NODE', lambda c: c.get('node') or '-'),
    ('RESOURCE', lambda c: short_resource(c['resource'])),
    ('SHARING', lambda c: c.get('sharing') or '-'),
    ('ALLOC', lambda c: str(c.get('allocatable', 0))),
    ('IN USE', lambda c: str(c.get('in_use', 0))),
    ('PODS', lambda c: str(c.get('expect_running', 0) + c.get('expect_pending', 0))),
    ('RESULT', lambda c: c['status'].upper()),
    ('DETAIL', lambda c: c.get('detail') or c.get('reason') or ''),
)


def fill_table(cases):
    """Fixed-width text table of the fill cases."""
    if not cases:
        return 'no time-sliced or MPS-shared resource to fill'
    rows = [[h for h, _f in FILL_COLUMNS]] + [[f(c) for _h, f in FILL_COLUMNS] for c in cases]
    widths = [max(len(r[i]) for r in rows) for i in range(len(FILL_COLUMNS) - 1)]
    return '\n'.join('  '.join([row[i].ljust(widths[i]) for i in range(len(widths))] + [row[-1]]).rstrip()
                     for row in rows)
