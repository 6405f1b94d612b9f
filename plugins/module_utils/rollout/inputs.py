# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The inputs and the result of every module that drives the rollout engine (pure): the shared
argument spec, assignments resolved to {node: value}, the check that refuses bad input before any
write, the module result, and the memo the kinds answer thousands of nodes from (``Memo``)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import math
import time

from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import (
    is_dns_label, is_dns_subdomain, label_key_errors, label_value_errors, type_name)
from ansible_collections.gpuops.gpu.plugins.module_utils.common.objects import labels_of
from ansible_collections.gpuops.gpu.plugins.module_utils.common.ownership import configmap_write_errors
from ansible_collections.gpuops.gpu.plugins.module_utils.common.selector import parse_selector, selector_matches
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.node import is_gpu_node
from ansible_collections.gpuops.gpu.plugins.module_utils.common.errors import InputError
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.batches import parse_max_unavailable

MAX_SECONDS = 7 * 24 * 3600  # a week: longer waits are typos (and overflow the thread timers)
# (option, least value): every duration option of the rollout modules, in seconds
DURATIONS = (('state_timeout', 1), ('reboot_timeout', 1), ('verify_timeout', 1), ('api_timeout', 1),
             ('drain_timeout', 0), ('grace_period', 0), ('lock_timeout', 0), ('lock_duration', 10),
             ('progress_timeout', 0))
LEAST_PROGRESS_TIMEOUT = 10  # seconds; the action plugin reads the progress (and says it is alive) every 5 s
POLL_INTERVAL = (0.1, 300.0)  # seconds; below it a node costs hundreds of API requests a second
CONTROL_PLANE_LABELS = ('node-role.kubernetes.io/control-plane', 'node-role.kubernetes.io/master')
REFUSED = 'nothing was changed; fix these first: '


def _fresh(value):
    """A shallow copy of a remembered dict or list, so a caller may change what it was given."""
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, list):
        return list(value)
    return value


class Memo(object):
    """Answers of pure functions, each computed once per distinct key. A fleet of thousands of nodes
    shares a handful of (product, GPU count, config, profile, strategy) combinations, so the kinds
    (mig_kind.py, sharing_kind.py) validate and predict once per combination, not once per node. A
    ValueError (the pure checks' errors, MigGeometryError among them) is remembered too and raised
    again, a new one with the same message, each time; dicts and lists are handed out as copies.
    ``computed`` counts the distinct keys computed."""

    def __init__(self):
        self.answers = {}
        self.computed = 0

    def get(self, key, compute, *args):
        """``compute(*args)``, remembered under ``key`` (which must say everything the answer depends on)."""
        if key not in self.answers:
            self.computed += 1
            try:
                self.answers[key] = (compute(*args), None)
            except ValueError as exc:
                self.answers[key] = (None, exc)
        value, exc = self.answers[key]
        if exc is not None:
            raise type(exc)(*exc.args)
        return _fresh(value)


def refuse(errors):
    """InputError ('nothing was changed') listing ``errors``, when there are any."""
    if errors:
        raise InputError(REFUSED + ' | '.join(errors))


def check_inputs(errors, params, count):
    """InputError ('nothing was changed') listing ``errors``, plus max_unavailable when it cannot
    work for ``count`` assigned nodes."""
    try:
        parse_max_unavailable(params['max_unavailable'], max(count, 1))
    except ValueError as exc:
        errors.append(str(exc))
    refuse(errors)


def _number_errors(params):
    errors = []
    for key, least in DURATIONS:
        value = params.get(key)
        if value is not None and not least <= value <= MAX_SECONDS:
            errors.append('%s must be between %d and %d seconds (one week), got %s' % (key, least, MAX_SECONDS, value))
    if 0 < (params.get('progress_timeout') or 0) < LEAST_PROGRESS_TIMEOUT:
        errors.append('progress_timeout must be 0 (never stop) or at least %d seconds, got %s'
                      % (LEAST_PROGRESS_TIMEOUT, params['progress_timeout']))
    poll = params.get('poll_interval')
    if poll is not None and not (math.isfinite(poll) and POLL_INTERVAL[0] <= poll <= POLL_INTERVAL[1]):
        errors.append('poll_interval must be between %s and %s seconds, got %s' % (POLL_INTERVAL + (poll,)))
    return errors


def _name_errors(params):
    errors = []
    namespace = params.get('operator_namespace')
    if not is_dns_label(namespace):
        errors.append("operator_namespace '%s' is not a namespace name (lowercase letters, digits and '-', at most 63 "
                      "characters); name the namespace of the GPU operator, e.g. nvidia-gpu-operator" % namespace)
    if params.get('lock_namespace') and not is_dns_label(params['lock_namespace']):
        errors.append("lock_namespace '%s' is not a namespace name (lowercase letters, digits and '-')"
                      % params['lock_namespace'])
    for key in ('cluster_policy', 'config_map'):
        value = params.get(key)
        if value and not is_dns_subdomain(value):
            errors.append("%s '%s' is not a Kubernetes object name (lowercase letters, digits, '-' and '.')"
                          % (key, value))
    if params.get('config_map'):  # the ConfigMap a role writes and points the ClusterPolicy at: never someone else's
        errors.extend('%s, or leave config_map unset to read the one the ClusterPolicy names' % e
                      for e in configmap_write_errors(params['config_map'], 'config_map'))
    return errors


def labels_errors(labels, path):
    """Why the mapping ``labels`` (label key -> value, equality as in matchLabels) is not a valid set
    of label requirements: each key a label key, each value a label value string (so 'a: x,y' can
    never become two requirements)."""
    if not isinstance(labels, dict):
        return ['%s must be a mapping of label keys to values, got %s' % (path, type_name(labels))]
    errors = []
    for key, value in labels.items():
        errors.extend("%s: key '%s' %s" % (path, key, e) for e in label_key_errors(key))
        hint = (" (one value per key: for several, use label_selector '%s in (%s)')" % (key, value)
                if isinstance(value, str) and ',' in value else '')
        errors.extend('%s.%s: %s%s' % (path, key, e, hint) for e in label_value_errors(value))
    return errors


def option_errors(params):
    """Why the options (not the assignments) of a rollout module cannot work; nothing is read or
    written before these are fixed: durations and poll_interval in range, names that Kubernetes
    accepts, pod_selector and restart_pod_selector valid label selectors."""
    errors = _number_errors(params) + _name_errors(params)
    if params.get('pod_selector') is not None:
        errors.extend(labels_errors(params['pod_selector'], 'pod_selector'))
    if params.get('restart_pod_selector') is not None:
        try:
            parse_selector(params['restart_pod_selector'])
        except ValueError as exc:
            errors.append('restart_pod_selector: %s' % exc)
    return errors


def assignment_errors(assignments, value_key):
    """Why ``assignments`` cannot be resolved whatever the cluster holds: none at all, a value that
    cannot be a label value, a node named twice for the same value (named for two values, it is
    resolve_assignments' "assigned both")."""
    if not assignments:
        return ['assignments is empty: give at least one item with nodes, label_selector or selector, '
                'and its %s' % value_key]
    errors, seen = [], {}
    for index, item in enumerate(assignments):
        where = 'assignments[%d]' % index
        value = item.get(value_key)
        if value:
            errors.extend("%s.%s: %s (it becomes a node label value)" % (where, value_key, e)
                          for e in label_value_errors(value))
        for name in item.get('nodes') or []:
            if name in seen and seen[name][1] == value:
                errors.append("node '%s' is named twice (%s and %s.nodes): name each node once"
                              % (name, seen[name][0], where))
            seen.setdefault(name, (where + '.nodes', value))
    return errors


def node_errors(nodes_by_name, names):
    """The nodes among ``names`` no GPU change belongs on: nodes without NVIDIA GPUs, control-plane
    nodes among them named as such. A control-plane node with GPUs (single-node clusters) is allowed."""
    errors = []
    for name in sorted(names):
        node = nodes_by_name[name]
        if is_gpu_node(node):
            continue
        labels = labels_of(node)
        role = next((key for key in CONTROL_PLANE_LABELS if key in labels), None)
        errors.append('node %s is %s without NVIDIA GPUs (no nvidia.com/gpu.present=true label, no GPU capacity): leave '
                      'it out of the assignments (narrow the selector, e.g. add nvidia.com/gpu.present=true)'
                      % (name, 'a control-plane node (label %s)' % role if role else 'a node'))
    return errors


def plan_errors(rollout, assignments, nodes_by_name):
    """Why the rollout's batches cannot be planned (max_unavailable against the nodes already
    cordoned), as input errors: the engine plans again when it runs."""
    try:
        rollout.plan(assignments, nodes_by_name)
    except ValueError as exc:
        return [str(exc)]
    return []


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
            bad = labels_errors(item['selector'], where + '.selector')
            if bad:
                errors.extend(bad)
                continue
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
                              if selector_matches(requirements, labels_of(node)))
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


def rollout_argument_spec(value_key, state_timeout=300):
    """The options every module that drives the engine has: ``assignments`` (nodes by name and/or
    selector, each with its ``value_key``: config, profile, stack), where the GPU operator and its
    ClusterPolicy are, how long a node may take to reach its target (``state_timeout``, its default
    the module's), and the engine's own options (documented once in the gpuops.gpu.rollout doc
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
        window=dict(type='str', default='batch', choices=['batch', 'rolling']),
        drain=dict(type='bool', default=True),
        pod_selector=dict(type='dict'),
        force=dict(type='bool', default=False),
        grace_period=dict(type='int'),
        drain_timeout=dict(type='int', default=300),
        state_timeout=dict(type='int', default=state_timeout),
        verify=dict(type='bool', default=True),
        verify_timeout=dict(type='int', default=180),
        api_timeout=dict(type='int', default=300),
        poll_interval=dict(type='float', default=1.0),
        allow_vgpu_nodes=dict(type='bool', default=False),
        **lock_argument_spec(progress=True)
    )


def lock_argument_spec(progress=False):
    """The rollout lock's options (and, with ``progress``, the progress file's) of every module that takes the lock
    (documented once in the gpuops.gpu.rollout doc fragment, or in the module)."""
    out = dict(lock_timeout=dict(type='int', default=0), lock_duration=dict(type='int', default=120),
               lock_holder=dict(type='str'), lock_namespace=dict(type='str'))
    if progress:
        out.update(progress_file=dict(type='path'), progress_timeout=dict(type='int', default=60))
    return out
