# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The fleet report people look at: one self-contained HTML file, and CSV and JSON beside it. Pure.

Input: a fleet (what ``gpuops.gpu.gpu_nodes_info`` returns: ``nodes`` and ``summary``), optionally
the fleet read before a change (same shape, or an earlier ``fleet.json`` of this report) and a
rollout result (the ``gpuops_rollout`` artifact the rollout roles publish with ``set_stats``, or the
result of ``gpuops.gpu.mig_rollout``/``gpuops.gpu.sharing_rollout``: a ``nodes`` list whose entries
carry ``node``, ``from``, ``to``, ``phase``, ``evicted``, ``duration_s``, ``reason`` and
``timeline`` — ISO 8601 UTC times of the events that happened).

Here: the input checks (every error names its input: ``fleet``, ``before``, ``rollout``), the
capacity per product and resource, the CSV (the text table's cells, ``fleet.py``) and the JSON.
The HTML page is drawn by ``fleet_report_html.py``.

Used by the ``gpuops.gpu.gpu_fleet_report`` filter and ``playbooks/report.yml``.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import calendar
import csv
import datetime
import io
import json
import re

from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import type_name
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import fleet as fleet_table
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.fleet_report_html import EVENT_NAMES, html_document

FORMAT = 1
UNKNOWN_PRODUCT = 'unknown'  # as gpu/node.py fleet_summary counts a node without a product label

EVENT_INDEX = dict((name, index) for index, name in enumerate(EVENT_NAMES))

ISO_RE = re.compile(r'^(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:?\d\d)$')
ISO_EXAMPLE = '2026-11-24T16:40:01.123Z'


# ------------------------------------------------------------------------------------------ inputs

def parse_time(text):
    """ISO 8601 time with a zone (``2026-11-24T16:40:01.123Z``) → seconds since the epoch (float).
    Raises ValueError."""
    match = ISO_RE.match(text) if isinstance(text, str) else None
    if not match:
        raise ValueError('%r is not an ISO 8601 UTC time such as %s' % (text, ISO_EXAMPLE))
    fields = [int(g) for g in match.groups()[:6]]
    fraction = float('0.' + match.group(7)) if match.group(7) else 0.0
    zone = match.group(8)
    offset = 0 if zone == 'Z' else (1 if zone[0] == '+' else -1) * (
        int(zone[1:3]) * 3600 + int(zone[-2:]) * 60)
    try:
        datetime.datetime(*fields)
    except ValueError:
        raise ValueError('%r is not a valid time' % text)
    seconds = calendar.timegm(tuple(fields) + (0, 0, 0))
    return seconds + fraction - offset


def check_fleet(data, what):
    """``(nodes, summary)`` of a gpu_nodes_info result or a node list; ValueError naming ``what``."""
    try:
        return fleet_table.normalise_input(data)
    except ValueError as exc:
        raise ValueError('%s: %s' % (what, exc))


def _node_events(entry, where):
    timeline = entry.get('timeline')
    if timeline is None:
        return []
    if not isinstance(timeline, dict):
        raise ValueError('%s: timeline must be a dict of event: time, got %s' % (where, type_name(timeline)))
    events = []
    for name in EVENT_NAMES:
        if timeline.get(name) is None:
            continue
        try:
            events.append((name, timeline[name], parse_time(timeline[name])))
        except ValueError as exc:
            raise ValueError('%s: timeline.%s: %s' % (where, name, exc))
    # by time; two events at the same instant in the order a node passes them
    return sorted(events, key=lambda e: (e[2], EVENT_INDEX[e[0]]))


def _rollout_node(entry, index):
    if not isinstance(entry, dict) or not isinstance(entry.get('node'), str) or not entry.get('node'):
        raise ValueError('rollout: nodes[%d] must be a dict with the node name in "node", got %s'
                         % (index, entry if not isinstance(entry, dict) else 'keys %s' % sorted(entry)))
    where = 'rollout: node %s' % entry['node']
    evicted = entry.get('evicted') or []
    if not isinstance(evicted, list):
        raise ValueError('%s: evicted must be a list of namespace/name, got %s' % (where, type_name(evicted)))
    duration = entry.get('duration_s')
    if duration is not None and (isinstance(duration, bool) or not isinstance(duration, (int, float))):
        raise ValueError('%s: duration_s must be a number, got %s' % (where, type_name(duration)))
    return {'node': entry['node'], 'from': entry.get('from'), 'to': entry.get('to'),
            'phase': entry.get('phase'), 'changed': entry.get('changed'), 'evicted': [str(p) for p in evicted],
            'duration_s': duration, 'reason': entry.get('reason'),
            'events': _node_events(entry, where)}


def _rollout_time(rollout, key):
    value = rollout.get(key)
    if value is None:
        return None
    try:
        parse_time(value)
    except ValueError as exc:
        raise ValueError('rollout: %s: %s' % (key, exc))
    return value


def time_span(rollout):
    """(start, span in seconds) of a rollout: from its nodes' first event to their last, widened by
    its own ``started``/``ended``; a span of at least one second."""
    moments = [e[2] for n in rollout['nodes'] for e in n['events']]
    moments += [parse_time(rollout[k]) for k in ('started', 'ended') if rollout.get(k)]
    if not moments:
        return 0.0, 1.0
    return min(moments), max(max(moments) - min(moments), 1.0)


def normalise_rollout(rollout):
    """The ``gpuops_rollout`` artifact or a rollout module result, checked: ``None`` when ``None``.

    Returns {'kind', 'changed', 'started', 'ended', 'untouched', 'start', 'span' (``time_span``),
    'nodes': [{'node', 'from', 'to', 'phase', 'changed', 'evicted', 'duration_s', 'reason',
    'events': [(event, iso, seconds since the epoch)] in time order}]}."""
    if rollout is None:
        return None
    if not isinstance(rollout, dict) or not isinstance(rollout.get('nodes'), list):
        raise ValueError('rollout: expected the gpuops_rollout artifact or a mig_rollout/sharing_rollout result '
                         '(a dict with a "nodes" list), got %s'
                         % ('a dict with keys %s' % sorted(rollout) if isinstance(rollout, dict) else type_name(rollout)))
    untouched = rollout.get('untouched') or []
    if not isinstance(untouched, list):
        raise ValueError('rollout: untouched must be a list of node names, got %s' % type_name(untouched))
    out = {'kind': rollout.get('kind'), 'changed': rollout.get('changed'),
           'started': _rollout_time(rollout, 'started'), 'ended': _rollout_time(rollout, 'ended'),
           'untouched': [str(n) for n in untouched],
           'nodes': [_rollout_node(entry, i) for i, entry in enumerate(rollout['nodes'])]}
    out['start'], out['span'] = time_span(out)
    return out


# --------------------------------------------------------------------------------------- the data

def _count(value, where):
    if isinstance(value, bool):
        raise ValueError('%s: expected a count, got a boolean' % where)
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ValueError('%s: expected a count, got %r' % (where, value))


def capacity_by_product(nodes, what='fleet'):
    """{(product, resource): allocatable summed over the product's nodes}; a node's DRA devices count as the
    resources ``dra/gpu`` and ``dra/mig-<profile>`` (``fleet.py`` ``dra_kind``)."""
    out = {}
    for node in nodes:
        allocatable = node.get('allocatable') or {}
        if not isinstance(allocatable, dict):
            raise ValueError('%s: node %s: allocatable must be a dict, got %s'
                             % (what, node.get('name'), type_name(allocatable)))
        product = node.get('product') or UNKNOWN_PRODUCT
        for resource, value in allocatable.items():
            where = '%s: node %s: allocatable %s' % (what, node.get('name'), resource)
            out[(product, resource)] = out.get((product, resource), 0) + _count(value, where)
        for device in node.get('dra_devices') or []:  # DRA devices count as 'dra/gpu', 'dra/mig-<profile>'
            # a node without GFD's product label: the driver's productName (NVML's), spelt as GFD labels it
            # ('NVIDIA A100-SXM4-40GB' -> 'NVIDIA-A100-SXM4-40GB'), so one product is one row
            spelt = (device.get('product') or '').replace(' ', '-')
            key = (node.get('product') or spelt or UNKNOWN_PRODUCT, 'dra/' + fleet_table.dra_kind(device))
            out[key] = out.get(key, 0) + 1
    return out


def capacity_rows(nodes, before_nodes=None):
    """One row per product and resource, sorted: {'product', 'resource' (short name), 'after', and
    with a ``before``: 'before', 'delta'} (0 where a side has none)."""
    after = capacity_by_product(nodes)
    before = capacity_by_product(before_nodes, 'before') if before_nodes is not None else None
    keys = set(after) | set(before or {})
    rows = []
    for product, resource in sorted(keys, key=lambda k: (k[0], fleet_table.resource_order(k[1]))):
        row = {'product': product, 'resource': fleet_table.short_resource(resource),
               'after': after.get((product, resource), 0)}
        if before is not None:
            row['before'] = before.get((product, resource), 0)
            row['delta'] = row['after'] - row['before']
        rows.append(row)
    return rows


# ------------------------------------------------------------------------------ CSV, JSON, entry

def csv_text(nodes):
    """The fleet table as CSV: the text table's header and cells, one line per node."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator='\n')
    writer.writerow(fleet_table.HEADERS)
    writer.writerows(fleet_table.table_rows(nodes))
    return out.getvalue()


def _json_rollout(rollout):
    if rollout is None:
        return None
    nodes = []
    for node in rollout['nodes']:
        entry = dict((k, v) for k, v in node.items() if k != 'events')
        entry['timeline'] = dict((name, iso) for name, iso, moment in node['events'])
        nodes.append(entry)
    return dict(((k, v) for k, v in rollout.items() if k not in ('start', 'span')), nodes=nodes)


def json_text(report):
    """Everything as JSON. The top level is a fleet (``nodes``, ``summary``), so the file is also a
    valid ``before`` of a later report."""
    data = {'format': FORMAT, 'title': report['title'], 'generated': report['generated'],
            'nodes': report['nodes'], 'summary': report['summary'], 'before': report['before'],
            'capacity': report['capacity'], 'rollout': _json_rollout(report['rollout'])}
    return json.dumps(data, indent=2, sort_keys=True) + '\n'


def build(fleet, before=None, rollout=None, title='GPU fleet', generated=None):
    """The checked inputs and the capacity rows; ValueError with every message naming its input."""
    nodes, summary = check_fleet(fleet, 'fleet')
    previous = None
    if isinstance(before, str):   # the text of an earlier fleet.json
        try:
            before = json.loads(before)
        except ValueError as exc:
            raise ValueError('before: the text is not JSON (%s); expected an earlier fleet.json of this report' % exc)
    if before is not None:
        before_nodes, before_summary = check_fleet(before, 'before')
        previous = {'nodes': before_nodes, 'summary': before_summary}
    if generated is not None and not isinstance(generated, str):
        raise ValueError('generated: expected a string, got %s' % type_name(generated))
    return {'title': str(title or 'GPU fleet'), 'generated': generated, 'nodes': nodes, 'summary': summary,
            'before': previous, 'rollout': normalise_rollout(rollout),
            'capacity': capacity_rows(nodes, previous['nodes'] if previous else None)}


def render(fleet, before=None, rollout=None, title='GPU fleet', generated=None):
    """{'html', 'csv', 'json'}: the three files of the report, as strings."""
    report = build(fleet, before, rollout, title, generated)
    return {'html': html_document(report), 'csv': csv_text(report['nodes']), 'json': json_text(report)}
