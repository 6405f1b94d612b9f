# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Cluster side of a cutover between the NVIDIA device plugin and NVIDIA's DRA driver, node group by node group:
check every assignment before any write (a known stack, GPU nodes, ``resource.k8s.io/v1`` served for a move to
DRA), read the driver's ResourceSlices for the stack kind (rollout/stack_kind.py), plan the GPU workloads of the
nodes to move in check mode, then hand the work to the rollout engine."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import time

from ansible_collections.gpuops.gpu.plugins.module_utils.common.errors import InputError, RolloutFailed
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import dra
from ansible_collections.gpuops.gpu.plugins.module_utils.ops.inventory import Lister
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.api import SliceReader
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.engine import ANN_TARGET, NodeRollout
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.inputs import (
    assignment_errors, check_inputs, finish_result, node_errors, option_errors, plan_errors, refuse,
    resolve_assignments)
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.node import held_elsewhere, not_ready_errors
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.progress import Progress
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.stack_kind import (
    DRA, StackKind, advertised, current_stack, stack_errors, workload_plan)

GROUP, VERSION = dra.API_VERSION.split('/')


def served_errors(slices, values):
    """Why the cutover cannot read what it waits for."""
    if slices == 404 and DRA in values:
        return ['a cutover to dra needs ResourceSlices of %s, which this cluster does not serve (Kubernetes 1.34 or '
                'later, OpenShift 4.21 or later)' % dra.API_VERSION]
    if slices == 403:
        return ['the account may not list ResourceSlices (%s): the cutover waits for them' % dra.API_VERSION]
    return []


def groups_of(params, nodes, assignments):
    """The node groups of the plan: one per assignment, with the nodes it resolved to that need the move."""
    out = []
    for index, item in enumerate(params['assignments']):
        names, _errors = resolve_assignments([item], nodes, 'stack')
        group = item.get('label_selector') or ','.join('%s=%s' % kv for kv in sorted((item.get('selector') or
                                                                                      {}).items()))
        out.append({'group': group or ','.join(item.get('nodes') or []) or 'assignments[%d]' % index,
                    'stack': item['stack'], 'nodes': sorted(n for n in names if n in assignments)})
    return out


def active_pods_and_classes(conn):
    """What the check-mode plans' workloads are read from: the active pods, and the DeviceClasses (none when
    ``resource.k8s.io/v1`` is not served or may not be read)."""
    lister = Lister(conn)
    pods = lister.list(conn.core.list_pod_for_all_namespaces, 'pods',
                       field_selector='status.phase!=Succeeded,status.phase!=Failed')
    classes = lister.list(conn.custom.list_cluster_custom_object, 'DeviceClasses', missing=(403, 404), group=GROUP,
                          version=VERSION, plural='deviceclasses')
    return pods, classes if isinstance(classes, list) else []


def read_workloads(conn, params, nodes, assignments):
    """The check-mode plan's workloads per node group (stack_kind.workload_plan)."""
    pods, classes = active_pods_and_classes(conn)
    return workload_plan(groups_of(params, nodes, assignments), pods, classes)


def _errors(kind, nodes, assignments, todo):
    errors = node_errors(nodes, assignments)
    for name in sorted(assignments):
        errors.extend(kind.validate(nodes[name], assignments[name]))
    errors.extend(held_elsewhere(kind, nodes, assignments))
    errors.extend(not_ready_errors(nodes, todo))
    for name in sorted(set(nodes) - set(assignments)):
        ann = (nodes[name]['metadata'].get('annotations') or {}).get(ANN_TARGET, '')
        if ann.startswith(kind.label + '='):  # left by a killed run: it is resumed, so check it too
            errors.extend(kind.validate(nodes[name], ann.split('=', 1)[1]))
    return errors


def _diff(nodes, assignments, todo):
    return {'before': dict((n, {'stack': current_stack(nodes[n]), 'allocatable': advertised(nodes[n])})
                           for n in sorted(todo)),
            'after': dict((n, {'stack': assignments[n]}) for n in sorted(todo))}


def run(conn, params, check_mode, log=None):
    """Validate everything, then cut over. Returns the result dict; raises InputError (nothing written) or
    RolloutFailed (with a partial result)."""
    started = time.monotonic()
    values = [item.get('stack') for item in params['assignments'] or []]
    refuse(option_errors(params) + assignment_errors(params['assignments'], 'stack') + stack_errors(values))
    reader = SliceReader(conn, ttl=params['poll_interval'] / 2.0)
    slices = reader.list()
    refuse(served_errors(slices, values))
    reader.fill(slices)
    kind = StackKind(reader)
    rollout = NodeRollout(conn, kind, dict(params, check_mode=check_mode), log=log,
                          progress=Progress(params.get('progress_file'), 'stack', params.get('progress_timeout')),
                          watch_more=reader.watch)
    nodes = dict((n['metadata']['name'], n) for n in rollout.list_nodes())
    assignments, errors = resolve_assignments(params['assignments'], nodes, 'stack')
    todo = [n for n in assignments if not kind.at_target(nodes[n], assignments[n])]
    check_inputs(errors + _errors(kind, nodes, assignments, todo), params, len(assignments))
    refuse(plan_errors(rollout, assignments, nodes))

    diff = _diff(nodes, assignments, todo)
    groups = read_workloads(conn, params, nodes, todo) if check_mode else None
    result = rollout.run(assignments, nodes)
    result['diff'] = diff
    if groups is not None:
        result['groups'] = groups
    return finish_result(result, conn, started, rollout.warnings + kind.warnings, assignments=assignments,
                         slices_served=slices != 404)


__all__ = ['run', 'InputError', 'RolloutFailed']
