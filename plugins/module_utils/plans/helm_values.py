# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Helm chart values, computed the way Helm computes them, and their difference. Pure, no I/O.

A chart here is ``{'values': <values.yaml>, 'dependencies': <Chart.yaml dependencies>, 'subcharts': {<chart
name>: <chart>}}``. :func:`computed_values` gives what ``helm get values --all`` shows for a release of that
chart with the user-supplied values, following Helm 3 (helm/pkg/chartutil/coalesce.go, dependencies.go):

* ``ProcessDependenciesWithMerge`` drops the subcharts whose ``condition`` (the first of its comma-separated
  paths that holds a boolean) or, without one, whose ``tags`` turn them off; when a dependency is left, the
  chart's stored values become its own merged with each remaining subchart's (under its alias, else its name;
  the parent's value for that key wins, and the parent's ``global`` over the subchart's);
* the release stores the chart without its subcharts, so ``helm get values --all`` coalesces the user's
  values over those stored values only: the user's values win, a user value ``null`` removes a non-null
  default.

``import-values`` and subcharts below the first level are not followed (neither NVIDIA chart uses them).
:func:`values_diff` lists the leaves that differ, one line each.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import json

from ansible_collections.gpuops.gpu.plugins.module_utils.common.merge import deep_merge

GLOBAL = 'global'
VALUE_WIDTH = 80       # characters of one value in a diff line
DIFF_LINES = 200       # lines of one diff; the rest is counted


def merge_values(base, overrides):
    """``overrides`` deep-merged over ``base`` (the values ``helm upgrade -f base -f overrides`` is given):
    mappings merge key by key, anything else (a list, a scalar, ``null``) replaces."""
    return deep_merge(base, overrides, keep_nulls=True)


def _coalesce_tables(dst, src, merge):
    """Helm's coalesceTablesFullKey: ``src`` fills what ``dst`` (the higher precedence) lacks."""
    for key, value in src.items():
        if key in dst and dst[key] is None and value is not None and not merge:
            del dst[key]
        elif key not in dst:
            dst[key] = copy.deepcopy(value)
        elif isinstance(value, dict) and isinstance(dst[key], dict):
            _coalesce_tables(dst[key], value, merge)
    return dst


def _coalesce_own(chart, dest, merge):
    """Helm's coalesceValues: the chart's own defaults under ``dest``; a subchart's key merges (keeps nulls)."""
    names = set(_subchart_keys(chart))
    for key, default in (chart.get('values') or {}).items():
        if key not in dest:
            dest[key] = copy.deepcopy(default)
        elif dest[key] is None and not merge:
            del dest[key]
        elif isinstance(dest[key], dict) and isinstance(default, dict):
            _coalesce_tables(dest[key], default, merge or key in names)
    return dest


def _coalesce_globals(dest, parent):
    """Helm's coalesceGlobals: the parent's ``global`` over the subchart's."""
    mine = dest.get(GLOBAL, {})
    theirs = parent.get(GLOBAL, {})
    if not isinstance(mine, dict) or not isinstance(theirs, dict):
        return
    for key, value in theirs.items():
        if isinstance(value, dict):
            if key not in mine:
                mine[key] = copy.deepcopy(value)
            elif isinstance(mine[key], dict):
                mine[key] = _coalesce_tables(copy.deepcopy(value), mine[key], True)
        elif not isinstance(mine.get(key), dict):
            mine[key] = copy.deepcopy(value)
    dest[GLOBAL] = mine


def _coalesce(chart, dest, merge=False):
    _coalesce_own(chart, dest, merge)
    for key, sub in _subcharts(chart):
        if not isinstance(dest.get(key, {}), dict):
            continue
        sub_dest = dest.setdefault(key, {})
        _coalesce_globals(sub_dest, dest)
        dest[key] = _coalesce(sub, sub_dest, merge)
    return dest


def _subchart_keys(chart):
    return [key for key, _sub in _subcharts(chart)]


def _subcharts(chart):
    """``(key, subchart)`` of each subchart that was read: a dependency under its alias or name, in the order of
    Chart.yaml, then any other chart under charts/ (Helm keeps those always) under its name."""
    subs = chart.get('subcharts') or {}
    deps = [dep for dep in chart.get('dependencies') or [] if isinstance(dep, dict)]
    out = [(dep.get('alias') or dep['name'], subs[dep['name']]) for dep in deps if dep.get('name') in subs]
    listed = set(dep.get('name') for dep in deps)
    return out + [(name, subs[name]) for name in sorted(subs) if name not in listed]


def _lookup(values, path):
    node = values
    for part in path.split('.'):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def dependency_enabled(dep, values):
    """Helm's processDependencyConditions and processDependencyTags for one Chart.yaml dependency."""
    for path in str(dep.get('condition') or '').split(','):
        found = _lookup(values, path.strip()) if path.strip() else None
        if isinstance(found, bool):
            return found
    tags = [(values.get('tags') or {}).get(tag) if isinstance(values.get('tags'), dict) else None
            for tag in dep.get('tags') or []]
    if any(tag is True for tag in tags):
        return True
    return not any(tag is False for tag in tags)


def enabled_chart(chart, user_values):
    """``chart`` without the dependencies (and their subcharts) its conditions or tags turn off."""
    everything = _coalesce(chart, copy.deepcopy(user_values or {}))
    deps = [dep for dep in chart.get('dependencies') or [] if isinstance(dep, dict)]
    kept = [dep for dep in deps if dependency_enabled(dep, everything)]
    off = set(dep.get('name') for dep in deps) - set(dep.get('name') for dep in kept)
    subs = dict((name, sub) for name, sub in (chart.get('subcharts') or {}).items() if name not in off)
    return dict(chart, dependencies=kept, subcharts=subs)


def stored_values(chart, user_values):
    """The values the release stores as its chart's (``ProcessDependenciesWithMerge``): the chart's own, merged
    with its enabled subcharts' when a dependency is left."""
    enabled = enabled_chart(chart, user_values)
    if not enabled['dependencies']:
        return copy.deepcopy(chart.get('values') or {})
    return _coalesce(enabled, {}, merge=True)


def computed_values(chart, user_values):
    """The values a release of ``chart`` with ``user_values`` computes (``helm get values --all``)."""
    return _coalesce({'values': stored_values(chart, user_values)}, copy.deepcopy(user_values or {}))


def enabled_subcharts(chart, user_values):
    """The names (Chart.yaml ``name``, the folder under charts/) of the subcharts enabled for ``user_values``."""
    return sorted((enabled_chart(chart, user_values).get('subcharts') or {}).keys())


# --- difference ------------------------------------------------------------------------------

def _key(path, key):
    text = str(key)
    if '.' in text or not text:
        text = '[%s]' % json.dumps(text)
        return path + text if path else text
    return '%s.%s' % (path, text) if path else text


def leaves(values, path=''):
    """``{'a.b.c': value}`` of every value that is not a non-empty mapping."""
    if not isinstance(values, dict) or (not values and path):
        return {path: values}
    out = {}
    for key in sorted(values, key=str):
        out.update(leaves(values[key], _key(path, key)))
    return out


def _show(value):
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= VALUE_WIDTH else text[:VALUE_WIDTH - 3] + '...'


def values_diff(old, new, limit=DIFF_LINES):
    """One line per leaf that differs, by path: ``~ a.b: 1 -> 2``, ``+ a.c: true``, ``- a.d: "x"``."""
    before, after = leaves(old or {}), leaves(new or {})
    lines = []
    for path in sorted(set(before) | set(after)):
        if path not in after:
            lines.append('- %s: %s' % (path, _show(before[path])))
        elif path not in before:
            lines.append('+ %s: %s' % (path, _show(after[path])))
        elif before[path] != after[path]:
            lines.append('~ %s: %s -> %s' % (path, _show(before[path]), _show(after[path])))
    if len(lines) > limit:
        lines = lines[:limit] + ['... %d more' % (len(lines) - limit)]
    return lines
