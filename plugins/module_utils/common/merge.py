# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one deep merge, the JSON merge patches that take one object to another, and nested-path
access. Pure, no I/O.

``deep_merge(base, patch)`` is JSON merge patch (RFC 7386), the semantics the API server applies
to ``application/merge-patch+json``, so what the roles compute locally is what the cluster stores:

- mappings merge key by key, recursively;
- lists, strings, numbers and booleans replace (a list is never merged item by item);
- ``None`` (YAML ``null``) removes the key, at every depth: also inside a mapping that is new in
  ``base`` (``deep_merge({}, {'a': {'b': None}}) == {'a': {}}``) and where the mapping replaces a
  non-mapping value;
- a ``base`` that is not a mapping counts as ``{}``; a ``patch`` of ``None`` or ``{}`` changes
  nothing;
- the inputs are never modified; the result shares no mutable value with them.

With ``keep_nulls`` a ``None`` is a value like any other (set, not removed): how Helm merges the values
files of ``helm upgrade -f a -f b`` before it coalesces them with the chart's (plans/helm_values.py).

The three copies this replaces agreed on all of this except one case: the autoscaling plan copied
a mapping that was new in ``base`` as it was, so ``deep_merge({}, {'a': {'b': None}})`` gave
``{'a': {'b': None}}`` (a null the API server would then have dropped on its own).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy


def deep_merge(base, patch, keep_nulls=False):
    """``base`` with the JSON merge patch ``patch`` applied (new objects; see the module docstring)."""
    out = copy.deepcopy(base) if isinstance(base, dict) else {}
    for key, value in (patch or {}).items():
        if value is None and not keep_nulls:
            out.pop(key, None)
        elif isinstance(value, dict):
            out[key] = deep_merge(out.get(key), value, keep_nulls)
        else:
            out[key] = copy.deepcopy(value)
    return out


def merge_patch(current, wanted):
    """The smallest merge patch that makes ``current`` include ``wanted``; {} when nothing differs.

    Only keys of ``wanted`` are looked at (others in ``current`` stay); ``None`` in ``wanted``
    deletes a key that exists; a new mapping that would be empty after the merge is left out.
    """
    patch = {}
    for key, value in (wanted or {}).items():
        have = current.get(key) if isinstance(current, dict) else None
        if value is None:
            if isinstance(current, dict) and key in current:
                patch[key] = None
        elif isinstance(value, dict) and isinstance(have, dict):
            sub = merge_patch(have, value)
            if sub:
                patch[key] = sub
        elif isinstance(value, dict):
            new = deep_merge({}, value)
            if new or have is not None:
                patch[key] = new
        elif have != value:
            patch[key] = copy.deepcopy(value)
    return patch


def replace_patch(current, wanted):
    """The merge patch that makes ``current`` exactly ``wanted`` (keys not in ``wanted`` removed)."""
    current = current or {}
    patch = {}
    for key in sorted(set(current) | set(wanted)):
        if key not in wanted:
            patch[key] = None
        elif key not in current:
            patch[key] = copy.deepcopy(wanted[key])
        elif isinstance(current[key], dict) and isinstance(wanted[key], dict):
            sub = replace_patch(current[key], wanted[key])
            if sub:
                patch[key] = sub
        elif current[key] != wanted[key]:
            patch[key] = copy.deepcopy(wanted[key])
    return patch


def get_path(obj, path):
    """``obj[path[0]][path[1]]...`` or None where a step is missing or not a mapping."""
    value = obj
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def set_path(obj, path, value):
    """Set ``obj[path[0]]...[path[-1]] = value``, creating the mappings on the way."""
    node = obj
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value
