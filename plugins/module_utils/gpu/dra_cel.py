# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""CEL device selectors for NVIDIA's DRA driver, built from typed fields. Pure, no I/O.

A DeviceClass or a ResourceClaimTemplate request selects devices with a CEL expression over
``device.driver``, ``device.attributes['gpu.nvidia.com']`` and ``device.capacity['gpu.nvidia.com']``
(docs/facts.md, "Dynamic Resource Allocation"). Users give typed fields; this file writes the CEL:

- ``type``: ``gpu`` or ``mig``; ``mig_profile`` (one or a list, e.g. ``1g.10gb``) implies ``mig``;
- ``product_name`` and ``architecture``: one string or a list (any of them);
- ``memory_min``: a quantity (``40Gi``): the device's ``memory`` capacity at least that;
- ``cuda_compute_capability_min``, ``driver_version_min``, ``driver_version_max``: versions, compared as
  semantic versions (the driver publishes these attributes as versions: ``8.0`` is ``8.0.0``);
- ``cel``: an expression of the user's own, and-ed to the rest as written (the escape hatch).

The expression always starts with ``device.driver == 'gpu.nvidia.com'`` and the type test, so the
attribute tests after it only meet devices that carry those attributes. Whether it compiles is left to
the API server (the role dry-runs every object before writing it); this file checks the inputs.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import type_name
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.dra import CEL_MAX_LENGTH, DEVICE_TYPES, DRIVER
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.quota import parse_quantity

SELECTOR_KEYS = ('type', 'product_name', 'mig_profile', 'architecture', 'memory_min', 'cuda_compute_capability_min',
                 'driver_version_min', 'driver_version_max', 'cel')
ATTRS = "device.attributes['%s']" % DRIVER
CAPACITY = "device.capacity['%s']" % DRIVER
_VERSION_RE = re.compile(r'^[0-9]+(\.[0-9]+){0,2}$', re.ASCII)
_MIG_PROFILE_RE = re.compile(r'^[0-9]+(c\.[0-9]+)?g\.[0-9]+gb(\+[a-z]+)?$', re.ASCII)
# (field, attribute, operator) of the version comparisons
_VERSIONS = (('cuda_compute_capability_min', 'cudaComputeCapability', '>='),
             ('driver_version_min', 'driverVersion', '>='),
             ('driver_version_max', 'driverVersion', '<='))


def _mig_profile_errors(profile, path):
    if _MIG_PROFILE_RE.match(profile):
        return []
    return ["%s %r is not a MIG profile name such as 1g.10gb, 2g.20gb, 1g.10gb+me or 1c.3g.40gb" % (path, profile)]


# (field, attribute, check) of the fields that take one string or a list of them
_STRING_FIELDS = (('product_name', 'productName', None), ('mig_profile', 'profile', _mig_profile_errors),
                  ('architecture', 'architecture', None))


def cel_string(text):
    """``text`` as a CEL string literal in single quotes."""
    return "'%s'" % text.replace('\\', '\\\\').replace("'", "\\'")


def semver(value):
    """A version as the driver's attributes hold it: '8.0' -> '8.0.0', 550 -> '550.0.0', '535.104.05' ->
    '535.104.5' (semantic versions have three numbers without leading zeros); None when not a version."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return None
    text = str(value).strip()
    if not _VERSION_RE.match(text):
        return None
    parts = [str(int(p)) for p in text.split('.')]
    return '.'.join(parts + ['0'] * (3 - len(parts)))


def _strings(value, path, what, check=None):
    """(values, errors) of a field that takes one string or a list of them."""
    values = value if isinstance(value, list) else [value]
    if not values:
        return [], ['%s must name at least one %s' % (path, what)]
    errors = []
    for item in values:
        if not isinstance(item, str) or not item.strip():
            errors.append('%s must be a non-empty string or a list of them (a %s), got %s %r'
                          % (path, what, type_name(item), item))
        elif any(ord(c) < 32 for c in item):
            errors.append('%s %r holds a control character (a line break?); write the %s on one line'
                          % (path, item, what))
        elif check is not None:
            errors.extend(check(item, path))
    return values, errors


def _any_of(attribute, values):
    if len(values) == 1:
        return '%s.%s == %s' % (ATTRS, attribute, cel_string(values[0]))
    return '%s.%s in [%s]' % (ATTRS, attribute, ', '.join(cel_string(v) for v in values))


def _type_clause(spec, path, errors):
    kind = spec.get('type')
    if kind is not None and kind not in DEVICE_TYPES:
        errors.append("%s.type must be one of %s, got %r" % (path, ', '.join(DEVICE_TYPES), kind))
        return []
    if spec.get('mig_profile') is not None:
        if kind == 'gpu':
            errors.append('%s: mig_profile selects MIG devices, but type is gpu; set type: mig or leave type out'
                          % path)
            return []
        kind = 'mig'
    return ['%s.type == %s' % (ATTRS, cel_string(kind))] if kind else []


def _memory_clause(value, path, errors):
    amount = parse_quantity(value) if not isinstance(value, bool) else None
    if amount is None or amount <= 0:
        errors.append("%s.memory_min must be a positive quantity such as 40Gi or 80Gi, got %r" % (path, value))
        return []
    return ["%s.memory.compareTo(quantity(%s)) >= 0" % (CAPACITY, cel_string(str(value).strip()))]


def _version_clauses(spec, path, errors):
    clauses = []
    for field, attribute, operator in _VERSIONS:
        value = spec.get(field)
        if value is None:
            continue
        version = semver(value)
        if version is None:
            errors.append("%s.%s must be a version such as 550.54.15 or 9.0 (up to three numbers joined by dots; "
                          "quote it in YAML), got %s %r" % (path, field, type_name(value), value))
            continue
        clauses.append('%s.%s.compareTo(semver(%s)) %s 0' % (ATTRS, attribute, cel_string(version), operator))
    low, high = semver(spec.get('driver_version_min')), semver(spec.get('driver_version_max'))
    if low and high and tuple(map(int, low.split('.'))) > tuple(map(int, high.split('.'))):
        errors.append('%s: driver_version_min %s is above driver_version_max %s; no driver matches' % (path, low, high))
    return clauses


def _cel_clause(value, path, errors):
    if not isinstance(value, str) or not value.strip():
        errors.append('%s.cel must be a non-empty CEL expression (a string), got %s %r' % (path, type_name(value), value))
        return []
    return ['(%s)' % value.strip()]


def selector_expression(spec, path):
    """(CEL expression, errors) for the typed selector fields of ``spec`` (a mapping; other keys ignored).

    The expression is None when there are errors. Every field is optional; without any the expression
    selects every device of NVIDIA's driver.
    """
    errors = []
    clauses = ['device.driver == %s' % cel_string(DRIVER)] + _type_clause(spec, path, errors)
    for field, attribute, check in _STRING_FIELDS:
        if spec.get(field) is not None:
            values, problems = _strings(spec[field], '%s.%s' % (path, field), field.replace('_', ' '), check)
            errors.extend(problems)
            if not problems:
                clauses.append(_any_of(attribute, values))
    if spec.get('memory_min') is not None:
        clauses.extend(_memory_clause(spec['memory_min'], path, errors))
    clauses.extend(_version_clauses(spec, path, errors))
    if spec.get('cel') is not None:
        clauses.extend(_cel_clause(spec['cel'], path, errors))
    expression = ' && '.join(clauses)
    if not errors and len(expression) > CEL_MAX_LENGTH:
        errors.append('%s: the CEL expression is %d characters, over the API server limit of %d; select with fewer '
                      'values' % (path, len(expression), CEL_MAX_LENGTH))
    return (None if errors else expression), errors


def has_selector(spec):
    """Whether ``spec`` sets any typed selector field (or ``cel``)."""
    return any(spec.get(key) is not None for key in SELECTOR_KEYS)


def selects_mig(spec):
    """Whether the typed fields of ``spec`` select MIG devices (type mig, or a MIG profile)."""
    return spec.get('type') == 'mig' or spec.get('mig_profile') is not None
