# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The inputs and the result of every module that drives the rollout engine (pure): the shared
argument spec, assignments resolved to {node: value}, the check that refuses bad input before any
write, and the module result."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import time

from ansible_collections.gpuops.gpu.plugins.module_utils.common.selector import parse_selector, selector_matches
from ansible_collections.gpuops.gpu.plugins.module_utils.k8s.errors import InputError
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.batches import parse_max_unavailable


def check_inputs(errors, params, count):
    """InputError ('nothing was changed') listing ``errors``, plus max_unavailable when it cannot
    work for ``count`` assigned nodes."""
    try:
        parse_max_unavailable(params['max_unavailable'], max(count, 1))
    except ValueError as exc:
        errors.append(str(exc))
    if errors:
        raise InputError('nothing was changed; fix these first: ' + ' | '.join(errors))


def finish_result(result, conn, started, warnings, **fields):
    """The module result of a rollout run: ``fields``, api_requests (from the connection), the
    duration since ``started`` (time.monotonic) and the warnings."""
    result.update(fields)
    result.update({'api_requests': conn.requests, 'duration_s': round(time.monotonic() - started, 2),
                   'warnings': list(warnings)})
    return result


def resolve_assignments(assignments, nodes_by_name, value_key):
    """[{nodes: [...] | label_selector: str | selector: {k: v}, <value_key>: value}] → ({node: value}, errors).

    A node named by two assignments with different values, an unknown node name, and a selector
    that matches no node are errors (nothing is written when there is any error). Selectors are
    Kubernetes label selectors, parsed and matched by common.selector (``a notin (x)`` also holds
    for nodes without the label ``a``, as in ``kubectl get nodes -l``).
    """
    out, errors = {}, []
    for index, item in enumerate(assignments or []):
        where = 'assignments[%d]' % index
        value = item.get(value_key)
        if value is None or value == '':
            errors.append('%s: %s is required' % (where, value_key))
            continue
        names = list(item.get('nodes') or [])
        selector = item.get('label_selector')
        if item.get('selector'):
            selector = ','.join('%s=%s' % (k, v) for k, v in sorted(item['selector'].items())) + \
                (',' + selector if selector else '')
        if not names and not selector:
            errors.append('%s: give nodes or a label_selector/selector' % where)
            continue
        missing = [n for n in names if n not in nodes_by_name]
        if missing:
            errors.append('%s: node(s) not found: %s' % (where, ', '.join(missing)))
        if selector:
            try:
                requirements = parse_selector(selector)
            except ValueError as exc:
                errors.append('%s: %s' % (where, exc))
                continue
            selected = sorted(n for n, node in nodes_by_name.items()
                              if selector_matches(requirements, (node.get('metadata') or {}).get('labels')))
            if not selected:
                errors.append("%s: label selector '%s' matches no node" % (where, selector))
            names += selected
        for name in names:
            if name not in nodes_by_name:
                continue
            if out.get(name, value) != value:
                errors.append("node %s is assigned both '%s' and '%s'" % (name, out[name], value))
            out[name] = value
    return out, errors


def rollout_argument_spec(value_key):
    """The options every module that drives the engine has: ``assignments`` (nodes by name and/or
    selector, each with its ``value_key``: config, profile), where the GPU operator and its
    ClusterPolicy are, and the engine's own options (documented once in the gpuops.gpu.rollout doc
    fragment; the others, whose words differ, in each module)."""
    return dict(
        assignments=dict(type='list', elements='dict', required=True, options={
            value_key: dict(type='str', required=True),
            'nodes': dict(type='list', elements='str'),
            'label_selector': dict(type='str'),
            'selector': dict(type='dict'),
        }),
        operator_namespace=dict(type='str', default='nvidia-gpu-operator'),
        cluster_policy=dict(type='str'),
        config_map=dict(type='str'),
        mig_strategy=dict(type='str', choices=['none', 'single', 'mixed']),
        mig_catalog_overrides=dict(type='dict'),
        max_unavailable=dict(type='raw', default=1),
        drain=dict(type='bool', default=True),
        pod_selector=dict(type='dict'),
        force=dict(type='bool', default=False),
        grace_period=dict(type='int'),
        drain_timeout=dict(type='int', default=300),
        verify=dict(type='bool', default=True),
        verify_timeout=dict(type='int', default=180),
        api_timeout=dict(type='int', default=300),
        poll_interval=dict(type='float', default=1.0),
        allow_vgpu_nodes=dict(type='bool', default=False),
    )
