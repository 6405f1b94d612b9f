# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The HTML/CSV/JSON fleet report (gpu/fleet_report.py) and its filter gpu_fleet_report."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import csv
import io
import json
import re
import xml.etree.ElementTree as ET

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.gpu.plugins.filter.fleet import FilterModule
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import fleet_report as fr
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import fleet_report_html as frh
from ansible_collections.gpuops.gpu.plugins.module_utils.plans import rollout_summary
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout import progress
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.gpu.fleet_data import INFOS, SUMMARY, TABLE

FILTER = FilterModule().filters()['gpu_fleet_report']
FLEET = {'nodes': INFOS, 'summary': SUMMARY}
PLOT = frh.CHART_WIDTH - frh.LABEL_WIDTH - frh.VALUE_WIDTH

# the text table of test_fleet.py, split into cells (cells hold at most single spaces)
TEXT_ROWS = [re.split(r'\s{2,}', line.strip()) for line in TABLE.splitlines()]

T0 = '2026-11-24T16:40:00.000Z'


def at(seconds):
    """T0 plus ``seconds`` as the engine writes it."""
    minutes, rest = divmod(seconds, 60)
    return '2026-11-24T16:%02d:%06.3fZ' % (40 + int(minutes), rest)


def node_result(name, offsets, phase='done', **extra):
    entry = {'node': name, 'from': 'all-disabled', 'to': 'all-1g.5gb', 'phase': phase, 'changed': True,
             'evicted': [], 'duration_s': 1.0, 'timeline': dict((k, at(v)) for k, v in offsets.items())}
    entry.update(extra)
    return entry


FULL = {'started': 0, 'cordoned': 1, 'drained': 11, 'labelled': 12, 'reported': 42, 'verified': 47, 'uncordoned': 50}
ROLLOUT = {'kind': 'mig', 'changed': True, 'started': at(0), 'ended': at(60), 'nodes': [
    node_result('h100-0', {'started': 5, 'cordoned': 6, 'labelled': 7}, phase='failed', reason='stuck pending'),
    node_result('a100-0', FULL, evicted=['team-a/train-0']),
    node_result('gone-0', {}, phase='gone')]}


def fragment(document, tag, element_id):
    """The element ``<tag id="element_id">`` of the HTML, parsed (the report writes SVG and tables
    as well-formed XML)."""
    match = re.search(r'<%s id="%s".*?</%s>' % (tag, element_id, tag), document, re.S)
    assert match, '%s#%s not in the document' % (tag, element_id)
    return ET.fromstring(match.group(0))


def cells(table):
    """Texts of every row, header row included."""
    return [[td.text or '' for td in tr] for tr in table.iter('tr')]


def rects(svg, css):
    return [r for r in svg.iter('rect') if css in r.get('class', '').split()]


# ----------------------------------------------------------------------------------------- tables

def test_csv_has_the_text_table_columns_and_cells():
    out = fr.render(FLEET, generated=T0)
    assert list(csv.reader(io.StringIO(out['csv']))) == TEXT_ROWS


def test_html_fleet_table_has_the_text_table_cells_and_totals():
    document = fr.render(FLEET)['html']
    table = fragment(document, 'table', 'fleet-table')
    assert cells(table) == TEXT_ROWS
    assert [th.text for th in table.iter('th')] == TEXT_ROWS[0]
    assert '5 nodes; products: NVIDIA-A100-SXM4-40GB x1' in document


def test_html_is_self_contained():
    document = fr.render(FLEET, before=FLEET, rollout=ROLLOUT)['html']
    assert document.startswith('<!DOCTYPE html>')
    assert '<script' not in document.lower()
    assert not re.search(r'(https?:|//[a-z]|src=|href=|@import|url\()', document, re.I)


# ----------------------------------------------------------------------------------- capacity chart

def test_capacity_rows_per_product_and_resource():
    assert fr.capacity_rows(INFOS) == [
        {'product': 'NVIDIA-A100-SXM4-40GB', 'resource': 'gpu', 'after': 56},
        {'product': 'NVIDIA-H100-80GB-HBM3', 'resource': 'gpu', 'after': 4},
        {'product': 'NVIDIA-H100-80GB-HBM3', 'resource': 'mig-1g.10gb', 'after': 14},
        {'product': 'NVIDIA-H100-80GB-HBM3', 'resource': 'mig-3g.40gb', 'after': 2},
        {'product': 'NVIDIA-L40S', 'resource': 'gpu.shared', 'after': 40},
        {'product': 'Tesla-T4', 'resource': 'gpu', 'after': 4},
        {'product': 'unknown', 'resource': 'gpu', 'after': 2},
    ]


def test_capacity_chart_geometry_after_only():
    rows = fr.capacity_rows(INFOS)
    svg = fragment(fr.render(FLEET)['html'], 'svg', 'capacity-chart')
    bars = rects(svg, 'bar')
    assert len(bars) == len(rows) and not rects(svg, 'bar-before')
    top = max(r['after'] for r in rows)
    for rect, row in zip(bars, rows):
        assert (rect.get('data-product'), rect.get('data-resource'), int(rect.get('data-value'))) == (
            row['product'], row['resource'], row['after'])
        assert float(rect.get('x')) == frh.LABEL_WIDTH
        assert float(rect.get('width')) == pytest.approx(PLOT * row['after'] / top, abs=0.05)
    ys = [float(b.get('y')) for b in bars]
    assert ys == sorted(ys) and len(set(ys)) == len(ys)
    assert float(svg.get('height')) >= ys[-1] + frh.BAR_HEIGHT


def test_capacity_delta_before_and_after():
    before = copy.deepcopy(INFOS)
    before[0]['allocatable'] = {'nvidia.com/gpu': 8, 'nvidia.com/mig-1g.5gb': 7}   # a100-0 before MIG
    rows = fr.capacity_rows(INFOS, before)
    a100 = [r for r in rows if r['product'] == 'NVIDIA-A100-SXM4-40GB']
    assert a100 == [{'product': 'NVIDIA-A100-SXM4-40GB', 'resource': 'gpu', 'after': 56, 'before': 8, 'delta': 48},
                    {'product': 'NVIDIA-A100-SXM4-40GB', 'resource': 'mig-1g.5gb', 'after': 0, 'before': 7,
                     'delta': -7}]
    assert all(r['delta'] == 0 for r in rows if r['product'] != 'NVIDIA-A100-SXM4-40GB')
    document = fr.render(FLEET, before={'nodes': before})['html']
    svg = fragment(document, 'svg', 'capacity-chart')
    assert len(rects(svg, 'bar-before')) == len(rects(svg, 'bar-after')) == len(rows)
    texts = [t.text for t in svg.iter('text')]
    assert '56 (+48)' in texts and '0 (-7)' in texts and '4 (±0)' in texts
    table = cells(fragment(document, 'table', 'capacity-table'))
    assert ['NVIDIA-A100-SXM4-40GB', 'gpu', '8', '56', '+48'] in table
    assert ['NVIDIA-A100-SXM4-40GB', 'mig-1g.5gb', '7', '0', '-7'] in table


def test_bars_share_one_scale_across_before_and_after():
    before = [{'name': 'n', 'product': 'P', 'allocatable': {'nvidia.com/gpu': 10}}]
    after = [{'name': 'n', 'product': 'P', 'allocatable': {'nvidia.com/gpu': 5}}]
    svg = fragment(fr.render(after, before=before)['html'], 'svg', 'capacity-chart')
    assert float(rects(svg, 'bar-before')[0].get('width')) == pytest.approx(PLOT)
    assert float(rects(svg, 'bar-after')[0].get('width')) == pytest.approx(PLOT / 2)


# ---------------------------------------------------------------------------------------- timeline

def test_timeline_rows_by_first_event_and_segments_in_time_order():
    svg = fragment(fr.render(FLEET, rollout=ROLLOUT)['html'], 'svg', 'rollout-timeline')
    rows = [g for g in svg.iter('g') if 'timeline-row' in g.get('class')]
    assert [g.get('data-node') for g in rows] == ['a100-0', 'h100-0', 'gone-0']
    a100 = rects(rows[0], 'segment')
    assert [s.get('data-event') for s in a100] == ['cordoned', 'drained', 'labelled', 'reported', 'verified',
                                                   'uncordoned']
    scale = PLOT / 60.0   # the rollout's own started/ended span 60 s
    bounds = [(0, 1), (1, 11), (11, 12), (12, 42), (42, 47), (47, 50)]
    for segment, (start, end) in zip(a100, bounds):
        assert float(segment.get('x')) == pytest.approx(frh.LABEL_WIDTH + start * scale, abs=0.05)
        assert float(segment.get('width')) == pytest.approx((end - start) * scale, abs=0.05)


def test_timeline_events_out_of_order_in_the_dict_are_drawn_by_time():
    shuffled = node_result('n', {'uncordoned': 50, 'labelled': 12, 'started': 0, 'cordoned': 1})
    rollout = fr.normalise_rollout({'nodes': [shuffled]})
    assert [e[0] for e in rollout['nodes'][0]['events']] == ['started', 'cordoned', 'labelled', 'uncordoned']


def test_timeline_missing_events():
    svg = fragment(fr.render(FLEET, rollout=ROLLOUT)['html'], 'svg', 'rollout-timeline')
    rows = dict((g.get('data-node'), g) for g in svg.iter('g') if 'timeline-row' in g.get('class'))
    # no drained event: the label segment runs from cordoned to labelled
    h100 = rects(rows['h100-0'], 'segment')
    assert [s.get('data-event') for s in h100] == ['cordoned', 'labelled']
    assert 'failed' in rows['h100-0'].get('class')
    assert [t.text for t in rows['h100-0'].iter('text')][-1] == 'failed: stuck pending'
    # no timeline at all: a row that says so, no bar
    assert rects(rows['gone-0'], 'segment') == []
    assert [t.text for t in rows['gone-0'].iter('text')][-1] == 'gone, no timeline recorded'
    table = cells(fragment(fr.render(FLEET, rollout=ROLLOUT)['html'], 'table', 'rollout-table'))
    assert table[2][:6] == ['h100-0', 'all-disabled', 'all-1g.5gb', 'failed', '1.0 s', '0']
    assert table[2][6:] == ['+6.0 s', '-', '+7.0 s', '-', '-', '-', 'stuck pending']
    assert table[1][5:12] == ['1', '+1.0 s', '+11.0 s', '+12.0 s', '+42.0 s', '+47.0 s', '+50.0 s']


def test_timeline_axis_ticks():
    assert frh.tick_step(60) == 10 and frh.tick_step(90) == 15 and frh.tick_step(7200) == 900
    svg = fragment(fr.render(FLEET, rollout=ROLLOUT)['html'], 'svg', 'rollout-timeline')
    labels = [t.text for t in svg.iter('text') if t.get('class') == 'tick-label']
    assert labels == ['+0 s', '+10 s', '+20 s', '+30 s', '+40 s', '+50 s', '+1:00']


def test_event_names_are_the_engine_timeline():
    assert frh.EVENT_NAMES == progress.TIMELINE_ORDER


def test_module_result_is_accepted():
    result = {'changed': True, 'assignments': {'a100-0': 'all-1g.5gb'}, 'batches': [['a100-0']],
              'nodes': [node_result('a100-0', FULL)], 'api_requests': 12}
    document = fr.render(FLEET, rollout=result)['html']
    assert '<p class="meta">changed; 1 node; times after %s</p>' % T0 in document
    assert len(rects(fragment(document, 'svg', 'rollout-timeline'), 'segment')) == 6


def test_rollout_without_nodes():
    document = fr.render(FLEET, rollout={'kind': 'sharing', 'changed': False, 'nodes': []})['html']
    assert 'No node was rolled out.' in document and 'rollout-timeline' not in document


# ---------------------------------------------------------------------------------------- escaping

def test_every_text_is_escaped():
    evil = '<script>alert("x")</script>'
    nodes = [{'name': evil, 'product': 'P&Q "quoted"', 'allocatable': {'nvidia.com/' + evil: 1}}]
    rollout = {'kind': evil, 'nodes': [node_result(evil, FULL, reason=evil, evicted=[evil], to=evil)]}
    document = fr.render(nodes, rollout=rollout, title=evil, generated=evil)['html']
    assert '<script' not in document
    assert '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;' in document
    assert 'P&amp;Q &quot;quoted&quot;' in document
    for element_id, tag in (('capacity-chart', 'svg'), ('rollout-timeline', 'svg'), ('fleet-table', 'table'),
                            ('rollout-table', 'table')):
        fragment(document, tag, element_id)   # still well-formed


# ------------------------------------------------------------------------------------ empty, JSON

def test_empty_fleet():
    out = fr.render({'nodes': [], 'summary': {'nodes': 0}})
    assert '(no GPU nodes)' in out['html'] and 'No allocatable GPU resources.' in out['html']
    assert 'capacity-chart' not in out['html'] and 'fleet-table' not in out['html']
    assert out['csv'] == ','.join(TEXT_ROWS[0]) + '\n'
    assert json.loads(out['json'])['nodes'] == []


def test_json_holds_everything_and_is_a_valid_before():
    out = fr.render(FLEET, before=FLEET, rollout=ROLLOUT, title='t', generated=T0)
    data = json.loads(out['json'])
    assert (data['format'], data['title'], data['generated']) == (1, 't', T0)
    assert data['nodes'] == INFOS and data['summary'] == SUMMARY and data['before']['nodes'] == INFOS
    assert data['capacity'] == fr.capacity_rows(INFOS, INFOS)
    assert data['rollout']['nodes'][0]['timeline'] == ROLLOUT['nodes'][0]['timeline']
    assert data['rollout']['nodes'][1]['evicted'] == ['team-a/train-0']
    again = json.loads(fr.render(FLEET, before=data)['json'])
    assert all(row['delta'] == 0 for row in again['capacity'])
    assert again['before'] == {'nodes': INFOS, 'summary': SUMMARY}


# ------------------------------------------------------------------------------------- bad inputs

BAD = [
    (dict(fleet='nodes'), 'fleet: expected a list of nodes, got str'),
    (dict(fleet={'summary': {}}), 'fleet: expected the node list or a gpu_nodes_info result'),
    (dict(before=['x']), 'before: every node must be a dict'),
    (dict(rollout='done'), 'rollout: expected the gpuops_rollout artifact or a mig_rollout/sharing_rollout '
                           'result (a dict with a "nodes" list), got str'),
    (dict(rollout={'kind': 'mig'}), "got a dict with keys ['kind']"),
    (dict(rollout={'nodes': [{'phase': 'done'}]}), 'rollout: nodes[0] must be a dict with the node name'),
    (dict(rollout={'nodes': [node_result('n', {'cordoned': 1}, timeline={'cordoned': '16:40'})]}),
     "rollout: node n: timeline.cordoned: '16:40' is not an ISO 8601 UTC time"),
    (dict(rollout={'nodes': [node_result('n', {}, timeline=['x'])]}), 'rollout: node n: timeline must be a dict'),
    (dict(rollout={'nodes': [node_result('n', {}, evicted='a/b')]}), 'rollout: node n: evicted must be a list'),
    (dict(rollout={'nodes': [node_result('n', {}, duration_s='5')]}), 'rollout: node n: duration_s must be a number'),
    (dict(rollout={'started': 'yesterday', 'nodes': []}), "rollout: started: 'yesterday' is not an ISO 8601"),
    (dict(fleet=[{'name': 'n', 'allocatable': {'nvidia.com/gpu': 'many'}}]),
     "fleet: node n: allocatable nvidia.com/gpu: expected a count, got 'many'"),
    (dict(generated=5), 'generated: expected a string, got int'),
]


@pytest.mark.parametrize('args,message', BAD)
def test_bad_input_errors(args, message):
    args = dict(args)
    fleet = args.pop('fleet', FLEET)
    with pytest.raises(ValueError) as err:
        fr.render(fleet, **args)
    assert message in str(err.value)
    with pytest.raises(AnsibleFilterError) as err:
        FILTER(fleet, **args)
    assert str(err.value).startswith('gpu_fleet_report: ') and message in str(err.value)


def test_parse_time():
    assert fr.parse_time('1970-01-01T00:00:01.5Z') == 1.5
    assert fr.parse_time('1970-01-01T01:00:00+01:00') == 0
    assert fr.parse_time('1970-01-01T00:00:00-0030') == 1800
    for bad in ('1970-01-01T00:00:00', '1970-13-01T00:00:00Z', 5, None):
        with pytest.raises(ValueError):
            fr.parse_time(bad)


def test_filter_returns_the_three_files():
    out = FILTER(FLEET, rollout=ROLLOUT, title='x')
    assert sorted(out) == ['csv', 'html', 'json'] and '<title>x</title>' in out['html']


def test_before_as_the_text_of_an_earlier_fleet_json():
    earlier = fr.render(FLEET)['json']
    data = json.loads(fr.render(FLEET, before=earlier)['json'])
    assert data['before'] == {'nodes': INFOS, 'summary': SUMMARY}
    with pytest.raises(ValueError, match='before: the text is not JSON'):
        fr.render(FLEET, before='NODE,PRODUCT\n')


def test_the_rollout_roles_artifact_is_accepted():
    """The gpuops_rollout artifact as the roles build it (plans/rollout_summary.py stats) draws the same timeline
    as the module result it came from."""
    result = {'changed': True, 'untouched': ['a100-9'], 'nodes': [node_result('a100-0', FULL, evicted=['a/b']),
                                                                  node_result('a100-1', {'started': 50})]}
    artifact = rollout_summary.stats('mig', [result])
    from_artifact = fr.build(FLEET, rollout=artifact)['rollout']
    from_result = fr.build(FLEET, rollout=result)['rollout']
    assert from_artifact['nodes'] == from_result['nodes']
    assert (from_artifact['kind'], from_artifact['started'], from_artifact['ended']) == ('mig', at(0), at(50))
    assert 'not started: a100-9' in fr.render(FLEET, rollout=artifact)['html']


def test_driver_and_cuda_versions_in_every_format():
    out = fr.render(FLEET)
    rows = list(csv.reader(io.StringIO(out['csv'])))
    driver, cuda = rows[0].index('DRIVER'), rows[0].index('CUDA')
    assert [(r[0], r[driver], r[cuda]) for r in rows[1:3]] == [('a100-0', '570.172.08', '12.8'),
                                                               ('h100-0', '580.95.05', '13.0')]
    assert '<th>DRIVER</th>' in out['html'].replace(' scope="col"', '') or 'DRIVER' in out['html']
    assert '570.172.08' in out['html']
    assert json.loads(out['json'])['nodes'][0]['driver_version'] == '570.172.08'
