# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The HTML file of the fleet report (``fleet_report.py`` checks the inputs and calls it). Pure.

One self-contained page: inline CSS, charts drawn here as inline SVG, no script, no external URL;
every text escaped. A bar chart of the allocatable GPU resources per product and resource (before
and after with the difference, when the report has a ``before``), a timeline of the rollout (one
row per node, split at each event of its timeline) with a table of the same events, the fleet
table (the columns of the text table, ``fleet.py``) with its totals, and the DRA devices of the nodes,
allocated or free.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import datetime
import html

from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import fleet as fleet_table

# the rollout timeline events, in the order a node passes them, and what a bar ending in one shows
# (the rollout engine's node timeline: rollout/progress.py TIMELINE_ORDER)
EVENTS = (
    ('started', 'started', '#cfd6e0'),
    ('cordoned', 'cordon', '#8e9aaf'),
    ('drained', 'drain (pods evicted)', '#e8a33d'),
    ('labelled', 'label', '#6c8ebf'),
    ('reported', 'wait for the node agent', '#4aa3a2'),
    ('verified', 'verify allocatable', '#7fb069'),
    ('uncordoned', 'uncordon', '#9b8ec4'),
)
EVENT_NAMES = tuple(e[0] for e in EVENTS)
STAGE_WORDS = dict((e[0], e[1]) for e in EVENTS)
STAGE_COLOURS = dict((e[0], e[2]) for e in EVENTS)

# chart geometry (SVG user units = CSS pixels)
CHART_WIDTH = 1100
LABEL_WIDTH = 330     # product and resource names, left of the bars
VALUE_WIDTH = 130     # value and difference, right of the longest bar
BAR_HEIGHT = 16
BAR_GAP = 3
GROUP_GAP = 12
CHART_TOP = 30        # the legend
TIMELINE_ROW = 30
TIMELINE_BAR = 16
TIMELINE_TOP = 34     # the legend
TIMELINE_AXIS = 30    # the time axis below the rows
BAR_COLOURS = {'before': '#b8c0cc', 'after': '#2f6db5'}
TICK_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400)
MAX_TICKS = 8


def esc(value):
    """Any value as escaped HTML text (attributes included)."""
    return html.escape('' if value is None else str(value), quote=True)


def signed(number):
    return '+%d' % number if number > 0 else '%d' % number if number < 0 else '±0'


def utc_text(seconds):
    """Seconds since the epoch as ISO 8601 UTC with milliseconds: 2026-11-24T16:40:01.123Z."""
    moment = datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)
    return moment.strftime('%Y-%m-%dT%H:%M:%S.') + '%03dZ' % (moment.microsecond // 1000)


def seconds_words(seconds):
    """12.3 → ``12.3 s``; 754 → ``12 min 34 s``."""
    if seconds < 60:
        return '%.1f s' % seconds
    minutes, rest = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return '%d min %02d s' % (minutes, rest)
    return '%d h %02d min' % divmod(minutes, 60)


# ------------------------------------------------------------------------------------- the charts

def _svg(element_id, height, label, body):
    return ('<svg id="%s" class="chart" role="img" aria-label="%s" width="%d" height="%d" viewBox="0 0 %d %d">%s</svg>'
            % (element_id, esc(label), CHART_WIDTH, height, CHART_WIDTH, height, ''.join(body)))


def _legend(items, top=16):
    """Colour swatches with their names in one line at the top of a chart."""
    out, x = [], LABEL_WIDTH
    for css_class, colour, words in items:
        out.append('<rect class="legend %s" x="%d" y="%d" width="12" height="12" fill="%s"/>'
                   '<text x="%d" y="%d">%s</text>' % (css_class, x, top - 10, colour, x + 16, top, esc(words)))
        x += 24 + 7 * len(words)  # a 12 px sans-serif letter is about 7 px wide
    return out


def _bar(side, row, x, y, width):
    value = row[side]
    title = '%s %s %s: %d' % (row['product'], row['resource'], side, value)
    if side == 'after' and 'delta' in row:
        title += ' (%s)' % signed(row['delta'])
    return ('<rect class="bar bar-%s" data-product="%s" data-resource="%s" data-value="%d" x="%d" y="%d" '
            'width="%.1f" height="%d" fill="%s"><title>%s</title></rect>'
            % (side, esc(row['product']), esc(row['resource']), value, x, y, width, BAR_HEIGHT,
               BAR_COLOURS[side], esc(title)))


def _value_text(side, row, x, y):
    words = '%d' % row[side]
    css = 'value'
    if side == 'after' and 'delta' in row:
        words += ' (%s)' % signed(row['delta'])
        css += ' delta-up' if row['delta'] > 0 else ' delta-down' if row['delta'] < 0 else ''
    return '<text class="%s" x="%.1f" y="%d">%s</text>' % (css, x, y + BAR_HEIGHT - 4, esc(words))


def capacity_chart(rows):
    """Horizontal bars, one group per product and resource: ``before`` (grey) above ``after`` when the
    rows have a before, else ``after`` alone; bar length proportional to the count (the longest is
    the plot width). '' without rows."""
    if not rows:
        return ''
    sides = ('before', 'after') if 'before' in rows[0] else ('after',)
    plot = CHART_WIDTH - LABEL_WIDTH - VALUE_WIDTH
    top = max(max(row[side] for side in sides) for row in rows) or 1
    group = len(sides) * (BAR_HEIGHT + BAR_GAP) + GROUP_GAP
    body = _legend([('swatch-%s' % s, BAR_COLOURS[s], s) for s in sides]) if len(sides) > 1 else []
    for index, row in enumerate(rows):
        y = CHART_TOP + index * group
        body.append('<text class="label" x="%d" y="%d">%s</text>' % (
            LABEL_WIDTH - 8, y + (len(sides) * (BAR_HEIGHT + BAR_GAP)) // 2 + 4,
            esc('%s  %s' % (row['product'], row['resource']))))
        for offset, side in enumerate(sides):
            width = plot * max(row[side], 0) / float(top)
            bar_y = y + offset * (BAR_HEIGHT + BAR_GAP)
            body.append(_bar(side, row, LABEL_WIDTH, bar_y, width))
            body.append(_value_text(side, row, LABEL_WIDTH + width + 6, bar_y))
    height = CHART_TOP + len(rows) * group
    return _svg('capacity-chart', height, 'allocatable GPU resources per product and resource', body)


def tick_step(span):
    """Seconds between two axis ticks: the smallest round step giving at most MAX_TICKS ticks."""
    for step in TICK_STEPS:
        if span / step <= MAX_TICKS:
            return step
    return TICK_STEPS[-1] * (int(span / TICK_STEPS[-1] / MAX_TICKS) + 1)


def _tick_words(seconds):
    """Axis label: ``+45 s`` under a minute, then ``+m:ss``, then ``+h:mm:ss``."""
    if seconds < 60:
        return '+%d s' % seconds
    minutes, rest = divmod(int(seconds), 60)
    if minutes < 60:
        return '+%d:%02d' % (minutes, rest)
    return '+%d:%02d:%02d' % (minutes // 60, minutes % 60, rest)


def _axis(start, span, scale, y):
    step = tick_step(span)
    out = ['<line class="axis" x1="%d" y1="%d" x2="%d" y2="%d"/>' % (LABEL_WIDTH, y, CHART_WIDTH - VALUE_WIDTH, y)]
    tick = 0
    while tick <= span:
        x = LABEL_WIDTH + tick * scale
        out.append('<line class="tick" x1="%.1f" y1="%d" x2="%.1f" y2="%d"/><text class="tick-label" x="%.1f" y="%d">'
                   '%s</text>' % (x, y, x, y + 5, x, y + 18, esc(_tick_words(tick))))
        tick += step
    return out


def _segments(node, start, scale, y):
    """The node's bar: one rect per event after the first, from the previous event to this one."""
    out, events = [], node['events']
    for previous, event in zip(events, events[1:]):
        x = LABEL_WIDTH + (previous[2] - start) * scale
        width = max((event[2] - previous[2]) * scale, 1.0)
        title = '%s: %s %s (%s → %s)' % (
            node['node'], STAGE_WORDS[event[0]], seconds_words(event[2] - previous[2]), previous[1], event[1])
        out.append('<rect class="segment seg-%s" data-node="%s" data-event="%s" x="%.1f" y="%d" width="%.1f" '
                   'height="%d" fill="%s"><title>%s</title></rect>'
                   % (event[0], esc(node['node']), event[0], x, y, width, TIMELINE_BAR,
                      STAGE_COLOURS[event[0]], esc(title)))
    for name, iso, moment in events:
        x = LABEL_WIDTH + (moment - start) * scale
        out.append('<line class="event ev-%s" data-node="%s" data-event="%s" x1="%.1f" y1="%d" x2="%.1f" y2="%d">'
                   '<title>%s %s %s</title></line>'
                   % (name, esc(node['node']), name, x, y - 3, x, y + TIMELINE_BAR + 3,
                      esc(node['node']), name, esc(iso)))
    return out


def _timeline_row(node, index, start, scale):
    y = TIMELINE_TOP + index * TIMELINE_ROW
    failed = node['phase'] not in (None, 'done')
    label = '%s  %s → %s' % (node['node'], node['from'] or '-', node['to'] or '-')
    out = ['<g class="timeline-row%s" data-node="%s">' % (' failed' if failed else '', esc(node['node'])),
           '<text class="label" x="%d" y="%d">%s</text>' % (LABEL_WIDTH - 8, y + TIMELINE_BAR - 3, esc(label))]
    out.extend(_segments(node, start, scale, y))
    end = LABEL_WIDTH + ((node['events'][-1][2] - start) * scale if node['events'] else 0)
    note = (node['phase'] or '') if failed or not node['events'] else ''
    if failed and node['reason']:
        note += ': %s' % node['reason']
    if not node['events']:
        note = ('%s, ' % note if note else '') + 'no timeline recorded'
    if note:
        out.append('<text class="note%s" x="%.1f" y="%d">%s</text>'
                   % (' failed' if failed else '', end + 6, y + TIMELINE_BAR - 3, esc(note)))
    out.append('</g>')
    return out


def timeline_order(nodes):
    """Rows of the timeline: by first event, then name; nodes without events last, by name."""
    return sorted(nodes, key=lambda n: (0, n['events'][0][2], n['node']) if n['events'] else (1, 0, n['node']))


def timeline_chart(rollout):
    """One row per rollout node, time left to right from the rollout's ``start`` over its ``span``
    (seconds). '' without nodes."""
    nodes = timeline_order(rollout['nodes'])
    if not nodes:
        return ''
    start, span = rollout['start'], rollout['span']
    scale = (CHART_WIDTH - LABEL_WIDTH - VALUE_WIDTH) / span
    body = _legend([('swatch-%s' % name, STAGE_COLOURS[name], STAGE_WORDS[name]) for name in EVENT_NAMES[1:]])
    for index, node in enumerate(nodes):
        body.extend(_timeline_row(node, index, start, scale))
    axis_y = TIMELINE_TOP + len(nodes) * TIMELINE_ROW
    body.extend(_axis(start, span, scale, axis_y))
    return _svg('rollout-timeline', axis_y + TIMELINE_AXIS, 'rollout timeline per node', body)


# --------------------------------------------------------------------------------------- the HTML

STYLE = '''
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px;color:#1d2733;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #d8dee6;padding-bottom:4px}
.meta{color:#5b6776;margin:0 0 12px}ul.summary{margin:4px 0;padding-left:18px}
table{border-collapse:collapse;font-size:13px;margin:8px 0}
th,td{border:1px solid #d8dee6;padding:3px 8px;text-align:left;white-space:nowrap}
th{background:#eef2f6}td.num{text-align:right}tr.failed td{background:#fdecea}tr.allocated td{background:#eaf3ea}
td.delta-up{color:#1a7f37}td.delta-down{color:#b42318}
svg.chart{display:block;font-size:12px;margin:8px 0}
svg .label{text-anchor:end}svg .tick-label{text-anchor:middle;fill:#5b6776}
svg .axis,svg .tick{stroke:#8c96a3}svg .event{stroke:#1d2733;stroke-width:1.5}
svg .value{fill:#1d2733}svg .delta-up{fill:#1a7f37}svg .delta-down{fill:#b42318}
svg .note{fill:#5b6776}svg .note.failed{fill:#b42318;font-weight:600}
svg .timeline-row.failed .label{fill:#b42318}
.empty{color:#5b6776;font-style:italic}
'''


def html_table(element_id, headers, rows, numeric=(), row_classes=None):
    """A <table>; ``numeric``: indexes of right-aligned columns; cells are (text, title) or text."""
    out = ['<table id="%s"><thead><tr>%s</tr></thead><tbody>' % (
        element_id, ''.join('<th>%s</th>' % esc(h) for h in headers))]
    for index, row in enumerate(rows):
        css = (row_classes or {}).get(index)
        cells = []
        for column, cell in enumerate(row):
            text, title = cell if isinstance(cell, tuple) else (cell, None)
            cells.append('<td%s%s>%s</td>' % (' class="num"' if column in numeric else '',
                                              ' title="%s"' % esc(title) if title else '', esc(text)))
        out.append('<tr%s>%s</tr>' % (' class="%s"' % esc(css) if css else '', ''.join(cells)))
    out.append('</tbody></table>')
    return ''.join(out)


def _fleet_section(nodes, summary):
    headers, rows = list(fleet_table.HEADERS), fleet_table.table_rows(nodes)
    numeric = [i for i, column in enumerate(fleet_table.COLUMNS) if column[2]]
    body = html_table('fleet-table', headers, rows, numeric) if rows else '<p class="empty">(no GPU nodes)</p>'
    lines = fleet_table.summary_lines(summary) if summary else []
    totals = '<ul class="summary">%s</ul>' % ''.join('<li>%s</li>' % esc(line) for line in lines) if lines else ''
    return '<section id="fleet"><h2>GPU nodes</h2>%s%s</section>' % (totals, body)


def _dra_section(nodes):
    """The DRA devices of every node, allocated or free, with the claims and pods that hold them; '' without any."""
    rows = fleet_table.dra_rows(nodes)
    if not rows:
        return ''
    classes = dict((index, row[6]) for index, row in enumerate(rows))
    return '<section id="dra"><h2>DRA devices</h2>%s</section>' % html_table(
        'dra-devices', fleet_table.DRA_HEADERS, rows, (5,), classes)


def _capacity_section(rows):
    if not rows:
        return ('<section id="capacity"><h2>Allocatable GPU resources per product</h2>'
                '<p class="empty">No allocatable GPU resources.</p></section>')
    with_before = 'before' in rows[0]
    headers = ['PRODUCT', 'RESOURCE'] + (['BEFORE', 'AFTER', 'CHANGE'] if with_before else ['ALLOCATABLE'])
    cells = [[r['product'], r['resource']] + ([str(r['before']), str(r['after']), signed(r['delta'])]
                                              if with_before else [str(r['after'])]) for r in rows]
    title = 'Allocatable GPU resources per product' + (', before and after' if with_before else '')
    return '<section id="capacity"><h2>%s</h2>%s%s</section>' % (
        esc(title), capacity_chart(rows), html_table('capacity-table', headers, cells, (2, 3, 4)))


def _event_cell(node, name, start):
    for event, iso, moment in node['events']:
        if event == name:
            return ('+%.1f s' % (moment - start), iso)
    return '-'


def _rollout_rows(rollout):
    nodes = timeline_order(rollout['nodes'])
    start = rollout['start']
    rows, classes = [], {}
    for index, node in enumerate(nodes):
        if node['phase'] not in (None, 'done'):
            classes[index] = 'failed'
        duration = '' if node['duration_s'] is None else seconds_words(node['duration_s'])
        rows.append([node['node'], node['from'] or '-', node['to'] or '-', node['phase'] or '-', duration,
                     (str(len(node['evicted'])), ', '.join(node['evicted']))]
                    + [_event_cell(node, name, start) for name in EVENT_NAMES[1:]] + [node['reason'] or ''])
    return rows, classes


def _rollout_section(rollout):
    if rollout is None:
        return ''
    count = len(rollout['nodes'])
    facts = ['kind %s' % rollout['kind']] if rollout['kind'] else []
    facts += ['changed' if rollout['changed'] else 'no change', '%d node%s' % (count, '' if count == 1 else 's')]
    facts += ['%s %s' % (k, rollout[k]) for k in ('started', 'ended') if rollout.get(k)]
    if any(node['events'] for node in rollout['nodes']):
        facts.append('times after %s' % utc_text(rollout['start']))
    if rollout['untouched']:
        facts.append('not started: %s' % ', '.join(rollout['untouched']))
    rows, classes = _rollout_rows(rollout)
    headers = ['NODE', 'FROM', 'TO', 'RESULT', 'DURATION', 'EVICTED'] + [n.upper() for n in EVENT_NAMES[1:]] + ['REASON']
    chart = timeline_chart(rollout) or '<p class="empty">No node was rolled out.</p>'
    table_html = html_table('rollout-table', headers, rows, (4, 5, 6, 7, 8, 9, 10, 11), classes) if rows else ''
    return '<section id="rollout"><h2>Rollout timeline</h2><p class="meta">%s</p>%s%s</section>' % (
        esc('; '.join(facts)), chart, table_html)


def html_document(report):
    """The HTML file of a ``build()`` report."""
    head = ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            '<title>%s</title><style>%s</style></head><body>' % (esc(report['title']), STYLE))
    count = len(report['nodes'])
    meta = 'generated %s; %d GPU node%s' % (report['generated'] or 'at an unknown time', count, '' if count == 1 else 's')
    if report['before'] is not None:
        meta += '; compared with a fleet of %d node%s read before' % (
            len(report['before']['nodes']), '' if len(report['before']['nodes']) == 1 else 's')
    return ''.join([head, '<header><h1>%s</h1><p class="meta">%s</p></header>' % (esc(report['title']), esc(meta)),
                    _capacity_section(report['capacity']), _rollout_section(report['rollout']),
                    _fleet_section(report['nodes'], report['summary']), _dra_section(report['nodes']),
                    '</body></html>\n'])
