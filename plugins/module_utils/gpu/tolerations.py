# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Tolerations and taints for GPU nodes: validate, merge, match, derive. Pure, no I/O.

Why merging matters: the GPU operator's ``daemonsets.tolerations`` (and the NFD worker's and the
operator Subscription's) REPLACE the default list, so a user who adds a toleration for their own
taint silently drops ``nvidia.com/gpu`` and the operands stop scheduling on tainted GPU nodes.
``merge_tolerations`` always keeps it.

Generic input checks (label keys and values, type names, unknown keys) live in common/checks.py.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import (
    is_int, label_key_errors, label_value_errors, optional_list, type_name, unknown_key_errors)
from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import GPU_RESOURCE

GPU_TOLERATION = {'key': GPU_RESOURCE, 'operator': 'Exists', 'effect': 'NoSchedule'}
TAINT_EFFECTS = ('NoSchedule', 'PreferNoSchedule', 'NoExecute')
TOLERATION_EFFECTS = ('',) + TAINT_EFFECTS
TOLERATION_OPERATORS = ('Exists', 'Equal')

_TOLERATION_FIELDS = ('key', 'operator', 'value', 'effect', 'tolerationSeconds')
_TAINT_FIELDS = ('key', 'value', 'effect', 'timeAdded')


# --- tolerations ----------------------------------------------------------------------------

def toleration_identity(toleration):
    """(key, operator, value, effect) with Kubernetes defaults applied: the dedupe key."""
    return (toleration.get('key') or '', toleration.get('operator') or 'Equal',
            toleration.get('value') or '', toleration.get('effect') or '')


def toleration_errors(tolerations, path='tolerations'):
    """Validate a list of pod tolerations; returns a list of messages ([] when valid)."""
    items, errors = optional_list(tolerations, path)
    for index, toleration in items:
        errors.extend(_one_toleration_errors(toleration, '%s[%d]' % (path, index)))
    return errors


def _one_toleration_errors(tol, path):
    if not isinstance(tol, dict):
        return ['%s must be a mapping with key/operator/value/effect, got %s' % (path, type_name(tol))]
    errors = unknown_key_errors(tol, _TOLERATION_FIELDS, path)
    operator = tol.get('operator') or 'Equal'
    key = tol.get('key') or ''
    value = tol.get('value')
    effect = tol.get('effect') or ''
    if operator not in TOLERATION_OPERATORS:
        errors.append("%s.operator must be Exists or Equal (case-sensitive), got '%s'" % (path, operator))
    if key:
        errors.extend('%s.key %s' % (path, e) for e in label_key_errors(key))
    elif operator != 'Exists':
        errors.append('%s: an empty key matches all taints and needs operator Exists; '
                      'set key or use operator Exists' % path)
    if value is not None and value != '':
        if operator == 'Exists':
            errors.append("%s: operator Exists must not set value (got %r); drop value, or use "
                          "operator Equal to match only that value" % (path, value))
        else:
            errors.extend('%s.value %s' % (path, e) for e in label_value_errors(value))
    if effect not in TOLERATION_EFFECTS:
        errors.append("%s.effect must be one of NoSchedule, PreferNoSchedule, NoExecute or empty "
                      "(all effects), got '%s'" % (path, effect))
    errors.extend(_toleration_seconds_errors(tol, effect, path))
    return errors


def _toleration_seconds_errors(tol, effect, path):
    if tol.get('tolerationSeconds') is None:
        return []
    if not is_int(tol['tolerationSeconds']):
        return ['%s.tolerationSeconds must be an integer number of seconds, got %s'
                % (path, type_name(tol['tolerationSeconds']))]
    if effect != 'NoExecute':
        return ["%s: tolerationSeconds applies only to effect NoExecute (effect is '%s'); "
                "remove tolerationSeconds or set effect NoExecute" % (path, effect)]
    return []


def tolerates(toleration, taint):
    """Kubernetes semantics: does ``toleration`` match ``taint``?

    The effect must match unless the toleration's is empty (all effects); an empty key with
    ``Exists`` matches every taint; otherwise the key must match and, with ``Equal`` (the
    default operator), the value too (an unset value equals the empty string).
    """
    effect = toleration.get('effect') or ''
    if effect and effect != taint.get('effect'):
        return False
    key = toleration.get('key') or ''
    operator = toleration.get('operator') or 'Equal'
    if not key:
        return operator == 'Exists'
    if key != taint.get('key'):
        return False
    return operator == 'Exists' or (toleration.get('value') or '') == (taint.get('value') or '')


def merge_tolerations(existing, extra=None, keep_gpu=True):
    """Merge toleration lists, deduplicated by (key, operator, value, effect).

    Order is stable: first appearance wins the position, the later entry wins the content (so
    ``extra`` can change ``tolerationSeconds``). With ``keep_gpu`` the
    ``nvidia.com/gpu Exists NoSchedule`` toleration is appended when missing. Raises ValueError
    on invalid input. Returns new dicts; the inputs are not modified.
    """
    errors = toleration_errors(existing, 'existing') + toleration_errors(extra, 'extra')
    if errors:
        raise ValueError('; '.join(errors))
    merged = {}
    for toleration in list(existing or []) + list(extra or []):
        merged[toleration_identity(toleration)] = dict(toleration)
    if keep_gpu:
        merged.setdefault(toleration_identity(GPU_TOLERATION), dict(GPU_TOLERATION))
    return list(merged.values())


# --- taints ---------------------------------------------------------------------------------

def taint_errors(taints, path='taints'):
    """Validate a list of node taints; returns a list of messages ([] when valid)."""
    items, errors = optional_list(taints, path)
    seen = {}
    for index, taint in items:
        item_path = '%s[%d]' % (path, index)
        item_errors = _one_taint_errors(taint, item_path)
        errors.extend(item_errors)
        if item_errors:
            continue
        identity = (taint['key'], taint['effect'])
        if identity in seen:
            errors.append('%s duplicates %s (same key %s and effect %s); Kubernetes allows one taint '
                          'per key and effect' % (item_path, seen[identity], identity[0], identity[1]))
        seen.setdefault(identity, item_path)
    return errors


def _one_taint_errors(taint, path):
    if not isinstance(taint, dict):
        return ['%s must be a mapping with key/value/effect, got %s' % (path, type_name(taint))]
    errors = unknown_key_errors(taint, _TAINT_FIELDS, path)
    if not taint.get('key'):
        errors.append('%s.key is required' % path)
    else:
        errors.extend('%s.key %s' % (path, e) for e in label_key_errors(taint['key']))
    if taint.get('value') not in (None, ''):
        errors.extend('%s.value %s' % (path, e) for e in label_value_errors(taint['value']))
    if taint.get('effect') not in TAINT_EFFECTS:
        errors.append("%s.effect must be one of NoSchedule, PreferNoSchedule, NoExecute, got '%s'"
                      % (path, taint.get('effect')))
    return errors


def tolerations_for_taints(taints, match_value=False):
    """Tolerations that let pods schedule onto nodes carrying ``taints``.

    By default each toleration uses ``operator: Exists`` for the taint's key and effect, so it
    keeps working when the taint's value changes (an ``Equal`` toleration for
    ``nvidia.com/gpu=present`` never matches a node tainted ``nvidia.com/gpu=true`` and the
    DaemonSet silently stays at zero pods). ``match_value=True`` emits ``Equal`` with the value.
    Raises ValueError on invalid taints.
    """
    errors = taint_errors(taints)
    if errors:
        raise ValueError('; '.join(errors))
    tolerations = [_toleration_for(taint, match_value) for taint in taints or []]
    return merge_tolerations([], tolerations, keep_gpu=False)


def _toleration_for(taint, match_value):
    if match_value and taint.get('value'):
        return {'key': taint['key'], 'operator': 'Equal', 'value': taint['value'], 'effect': taint['effect']}
    return {'key': taint['key'], 'operator': 'Exists', 'effect': taint['effect']}
