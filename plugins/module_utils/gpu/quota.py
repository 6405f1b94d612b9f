# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""GPU ResourceQuota ``spec.hard``: normalise, validate, warn. Pure, no I/O.

Kubernetes counts an extended resource (``nvidia.com/*``) in a quota only as
``requests.<name>`` (quota evaluator ``isExtendedResourceNameForQuota``: overcommit is not
allowed, a pod's request equals its limit). A bare ``nvidia.com/gpu`` or ``limits.nvidia.com/gpu``
key is accepted by the API server and then never enforced, which is the trap this module closes.
HAMi's scheduler additionally enforces ``limits.nvidia.com/gpumem`` and
``limits.nvidia.com/gpucores`` itself (HAMi pkg/device/quota.go), so those two are kept.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import math
import re
from fractions import Fraction

from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import GPU_RESOURCE, HAMI_RESOURCES
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.sharing import (
    SHARED_SUFFIX, is_mig_resource, normalise_resource_name)
from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import is_int, suggest, type_name

REQUESTS = 'requests.'
LIMITS = 'limits.'
HAMI_SCHEDULER_LIMITS = ('nvidia.com/gpumem', 'nvidia.com/gpucores')

# The quantity grammar of the API server (k8s.io/apimachinery resource.Quantity; the Python client's
# parse_quantity is more lenient: '5K', '1ui', 'NaN', '1_000'), and its suffixes' factors.
_QUANTITY_RE = re.compile(r'^(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))'
                          r'(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?$')
_BINARY = dict((s, 1024 ** (i + 1)) for i, s in enumerate(('Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei')))
_DECIMAL = {'n': -9, 'u': -6, 'm': -3, 'k': 3, 'M': 6, 'G': 9, 'T': 12, 'P': 15, 'E': 18}
_KNOWN_EXAMPLES = ('nvidia.com/gpu', 'nvidia.com/gpu.shared', 'nvidia.com/mig-1g.5gb') + HAMI_RESOURCES


def parse_quantity(value):
    """A Kubernetes quantity (4, '500m', '2Gi', '1e3') as a Fraction; None when it is not one.

    Numbers are taken as written (0.1 is 1/10, not the nearest binary float); strings must follow
    the API server's grammar (surrounding blanks ignored) and are converted exactly.
    """
    if is_int(value):
        return Fraction(value)
    if isinstance(value, float):
        return Fraction(repr(value)) if math.isfinite(value) else None
    match = _QUANTITY_RE.match(value.strip()) if isinstance(value, str) else None
    if match is None:
        return None
    number, suffix = Fraction(match.group('number')), match.group('suffix') or ''
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    exponent = _DECIMAL[suffix] if suffix in _DECIMAL else int(suffix[1:] or 0)
    return number * Fraction(10) ** exponent


def is_nvidia_resource(resource):
    """A GPU resource the quota may name: gpu, gpu.shared, mig-<profile>[.shared], HAMi ones."""
    base = resource[:-len(SHARED_SUFFIX)] if resource.endswith(SHARED_SUFFIX) else resource
    return base == GPU_RESOURCE or is_mig_resource(base) or resource in HAMI_RESOURCES


def _split_key(key):
    """(prefix, resource) where prefix is 'requests.', 'limits.' or ''."""
    for prefix in (REQUESTS, LIMITS):
        if key.startswith(prefix):
            return prefix, key[len(prefix):]
    return '', key


def _classify(key):
    """(normalised key, note or None, error or None) for one quota key."""
    if not isinstance(key, str) or not key:
        return None, None, 'quota keys must be resource names such as requests.nvidia.com/gpu, got %r' % (key,)
    prefix, resource = _split_key(key)
    if not resource.startswith('nvidia.com/'):
        return key, None, None
    if not is_nvidia_resource(resource):
        hint = suggest(resource, _KNOWN_EXAMPLES)
        return None, None, ('%s: %s is not a GPU resource%s; use nvidia.com/gpu, nvidia.com/gpu.shared, '
                            'nvidia.com/mig-<profile> (e.g. nvidia.com/mig-1g.5gb) or the HAMi resources %s'
                            % (key, resource, " (did you mean '%s'?)" % hint if hint else '',
                               ', '.join(HAMI_RESOURCES)))
    if prefix == REQUESTS:
        return key, None, None
    if prefix == LIMITS and resource in HAMI_SCHEDULER_LIMITS:
        return key, ('%s is enforced only by hami-scheduler (HAMi quota), not by Kubernetes quota '
                     'admission; add %s%s for the Kubernetes side' % (key, REQUESTS, resource)), None
    if prefix == LIMITS:
        return None, None, ('%s is never enforced: Kubernetes quotas count extended resources only as '
                            '%s<name> (their limits must equal their requests); use %s%s'
                            % (key, REQUESTS, REQUESTS, resource))
    return REQUESTS + resource, ('%s normalised to %s%s: a bare extended-resource name in a quota is never '
                                 'enforced' % (key, REQUESTS, resource)), None


def _quantity(key, value):
    """(normalised value, error or None). GPU resources must be whole, non-negative counts."""
    amount = parse_quantity(value)
    if amount is None:
        return None, "%s: %r is not a Kubernetes quantity (e.g. 4, '500m', '16Gi')" % (key, value)
    if amount < 0:
        return None, '%s: %r must not be negative' % (key, value)
    if 'nvidia.com/' not in key:
        return str(value).strip(), None
    if amount.denominator != 1:
        return None, '%s: %r must be a whole number (GPU resources are counted in whole units)' % (key, value)
    return str(amount.numerator), None


def _normalise(hard):
    """(normalised dict, notes, errors)."""
    if not isinstance(hard, dict):
        return {}, [], ['the quota hard limits must be a mapping of resource to quantity, got %s' % type_name(hard)]
    result, origin, notes, errors = {}, {}, [], []
    for key in sorted(hard, key=str):
        name, note, error = _classify(key)
        value, value_error = (None, None) if error else _quantity(key, hard[key])
        if error or value_error:
            errors.append(error or value_error)
            continue
        if note:
            notes.append(note)
        if name in result and result[name] != value:
            errors.append('%s (%s) and %s (%s) both set %s; keep one' % (origin[name], result[name], key, value, name))
            continue
        result[name] = value
        origin.setdefault(name, key)
    return result, notes, errors


def normalise_quota(hard):
    """Normalise ``spec.hard`` for GPU resources; returns (normalised dict, errors).

    ``nvidia.com/gpu`` becomes ``requests.nvidia.com/gpu``; ``limits.nvidia.com/gpu`` (and any
    limits. GPU key except HAMi's gpumem/gpucores) is an error; quantities are validated (GPU
    ones must be whole) and GPU ones written as plain integers. Non-GPU keys pass through.
    """
    result, _notes, errors = _normalise(hard)
    return result, errors


def quota_notes(hard):
    """What ``normalise_quota`` changed or what needs to be known (for task warnings)."""
    return _normalise(hard)[1]


def timeslicing_quota_warnings(hard, replicas):
    """Warn that shared GPU counts are replicas, not physical GPUs.

    ``replicas``: the replicas per device (int, applies to nvidia.com/gpu) or a mapping
    {resource: replicas} such as ``sharing_config.replicas_by_resource(config)``.
    """
    per_resource = _replicas_map(replicas)
    result, _notes, _errors = _normalise(hard)
    warnings = []
    for key in sorted(result):
        prefix, resource = _split_key(key)
        base = resource[:-len(SHARED_SUFFIX)] if resource.endswith(SHARED_SUFFIX) else resource
        ways = per_resource.get(base, 1)
        if prefix != REQUESTS or ways < 2 or not is_nvidia_resource(resource):
            continue
        count = int(result[key])
        physical = Fraction(count, ways)
        warnings.append('%s: %d with %s shared %d ways (time-slicing/MPS replicas %d) admits %d replicas, the '
                        'equivalent of %s physical device(s); for N physical devices set %d x N'
                        % (key, count, base, ways, ways, count, _number(physical), ways))
    return warnings


def _replicas_map(replicas):
    if is_int(replicas):
        return {GPU_RESOURCE: replicas}
    if isinstance(replicas, dict) and all(isinstance(k, str) and is_int(v) for k, v in replicas.items()):
        return dict((normalise_resource_name(k), v) for k, v in replicas.items())
    raise ValueError('replicas must be an integer or a mapping of resource name to replicas, got %r' % (replicas,))


def _number(fraction):
    if fraction.denominator == 1:
        return str(fraction.numerator)
    return '%.2f' % float(fraction)
