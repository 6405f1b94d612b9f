# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Rollout batching: which nodes go down together. Pure, deterministic, no I/O."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import type_name

ORDERS = ('name', 'given')
# ASCII digits only (re.ASCII): Python's \d also matches other scripts' digits, which int() would read
_PERCENT_RE = re.compile(r'^\s*(\d+)\s*%\s*$', re.ASCII)
_COUNT_RE = re.compile(r'^\s*(\d+)\s*$', re.ASCII)
_MUST_BE = "max_unavailable must be a positive integer or a percentage like '25%%', got %s"


def _describe(value):
    return '%r (%s)' % (value, type_name(value))


def parse_max_unavailable(value, total):
    """Nodes that may be unavailable at once, from an int or an 'N%' string.

    Percentages are of ``total`` and round up; the result is at least 1 and at
    most ``total`` (when ``total`` > 0). Raises ValueError with the reason.
    """
    if isinstance(total, bool) or not isinstance(total, int) or total < 0:
        raise ValueError('total must be a non-negative integer, got %s' % _describe(total))
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(_MUST_BE % _describe(value))
    text = str(value)
    percent, count = _PERCENT_RE.match(text), _COUNT_RE.match(text)
    if isinstance(value, int):
        number = value
    elif percent:
        share = int(percent.group(1))
        if not 0 < share <= 100:
            raise ValueError("max_unavailable percentage must be between 1%% and 100%%, got '%s'" % value)
        number = max(1, -(-total * share // 100))
    elif count:
        number = int(count.group(1))
    else:
        foreign = any(c.isdigit() for c in text) and not text.isascii()
        raise ValueError(_MUST_BE % repr(value) + (': write it with the digits 0-9' if foreign else ''))
    if number < 1:
        raise ValueError('max_unavailable must allow at least one node, got %r' % value)
    return min(number, total) if total else number


def _natural_key(name):
    """node-2 before node-10."""
    return [int(part) if part.isdigit() else part for part in re.split(r'(\d+)', name)] + [name]


def _check_names(values, what):
    values = list(values)
    bad = [v for v in values if not isinstance(v, str) or not v]
    if bad:
        raise ValueError('%s must be non-empty node names, got %r' % (what, bad))
    seen, dupes = set(), []
    for value in values:
        if value in seen:
            dupes.append(value)
        seen.add(value)
    if dupes:
        raise ValueError('%s lists node(s) more than once: %s' % (what, ', '.join(sorted(set(dupes)))))
    return values


def _ordered(nodes, order):
    if order == 'name':
        return sorted(nodes, key=_natural_key)
    if order == 'given':
        return list(nodes)
    raise ValueError("order must be one of %s, got %r" % (', '.join(ORDERS), order))


def _budget(nodes, max_unavailable, unavailable, pool_size):
    """(nodes, down, outside, limit, budget): what plan_batches and window_size share."""
    nodes = _check_names(nodes, 'nodes')
    down = set(_check_names(unavailable or [], 'unavailable'))
    if pool_size is None:
        pool_size = len(set(nodes) | down)
    limit = parse_max_unavailable(max_unavailable, pool_size)
    outside = sorted(down - set(nodes), key=_natural_key)
    return nodes, down, outside, limit, limit - len(outside)


def window_size(nodes, max_unavailable, unavailable=None, pool_size=None):
    """How many of ``nodes`` a rolling window changes at once: max_unavailable less the nodes
    outside ``nodes`` that are already down (as plan_batches counts them); at least 1 when
    plan_batches could plan them."""
    return max(1, _budget(nodes, max_unavailable, unavailable, pool_size)[4])


def plan_batches(nodes, max_unavailable, order='name', unavailable=None, pool_size=None):
    """Split ``nodes`` into batches that each respect ``max_unavailable``.

    ``unavailable`` names nodes already down or cordoned. Those outside
    ``nodes`` stay down for the whole rollout and use up budget in every batch;
    those inside ``nodes`` go first (they are already down). Percentages are
    of ``pool_size``, by default every node named in ``nodes`` or
    ``unavailable``. ``order`` is 'name' (natural sort) or 'given'.
    """
    nodes, down, outside, limit, budget = _budget(nodes, max_unavailable, unavailable, pool_size)
    ordered = _ordered(nodes, order)
    if not ordered:
        return []
    if budget < 1:
        raise ValueError('%d node(s) this rollout does not change are already unavailable (%s: cordoned, e.g. by '
                         'an admin, or down) and max_unavailable allows %d: no node can be taken down now; uncordon '
                         'them (kubectl uncordon) or raise max_unavailable' % (len(outside), ', '.join(outside), limit))
    first = [n for n in ordered if n in down]
    rest = [n for n in ordered if n not in down]
    fill = max(0, budget - len(first))
    batches = [first + rest[:fill]] if first else []
    rest = rest[fill:] if first else rest
    batches.extend(rest[i:i + budget] for i in range(0, len(rest), budget))
    return batches
