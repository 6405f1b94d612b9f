"""The monitoring role's alerts evaluated by Prometheus' own promtool (no cluster).

The rule groups come from the role's template (roles/monitoring/templates/prometheus-rule.yml.j2, rendered as
the role's template lookup does) for each setting that changes them. ``promtool check rules`` checks every
rendered file; ``promtool test rules`` runs the cases of alert_cases.py on input series: each alert fires
with the labels and annotations a user sees and stays silent where it must, with the DCGM exporter's node
label spelled ``Hostname`` and ``hostname``. promtool is built from the Prometheus module pinned in
tests/testbed/promtool/go.mod and cached outside the work tree (tests/testbed/promtool/build.sh).
"""
from __future__ import annotations

import json
import os
import re
import subprocess

import jinja2
import pytest
import yaml
from conftest import REPO

import alert_cases

ROLE = os.path.join(REPO, 'roles', 'monitoring')
# the settings that change the rules (roles/monitoring/meta/argument_specs.yml): the vGPU alert on or off and
# the two thresholds (a fractional memory percent is valid input)
VARIANTS = {
    'defaults': {},
    'no-vgpu-alert': {'alert_vgpu_license': False},
    'other-thresholds': {'alert_memory_percent': 92.5, 'alert_temperature_celsius': 75},
}
SPELLINGS = ('Hostname', 'hostname')


def settings(variant):
    with open(os.path.join(ROLE, 'defaults', 'main.yml')) as f:
        out = dict((k[len('monitoring_'):], v) for k, v in yaml.safe_load(f).items())
    out.update(VARIANTS[variant])
    return out


def render_rule(values):
    """The PrometheusRule the role writes, rendered like its template lookup (trim_blocks)."""
    env = jinja2.Environment(trim_blocks=True, undefined=jinja2.StrictUndefined)
    env.filters['combine'] = lambda a, b: dict(a, **b)
    env.filters['to_json'] = json.dumps
    with open(os.path.join(ROLE, 'templates', 'prometheus-rule.yml.j2')) as f:
        template = env.from_string(f.read())
    return yaml.safe_load(template.render(__monitoring_operator_ns='gpu-operator',
                                          **dict(('monitoring_' + k, v) for k, v in values.items())))


@pytest.fixture(scope='module')
def promtool():
    """The promtool binary: built on first use (minutes), then cached (under a second)."""
    out = subprocess.run(['bash', os.path.join(REPO, 'tests', 'testbed', 'promtool', 'build.sh')], check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    return out.strip().splitlines()[-1]


@pytest.fixture(scope='module')
def rule_files(tmp_path_factory):
    """variant -> the rendered rule groups as a Prometheus rule file."""
    out = {}
    for variant in VARIANTS:
        path = tmp_path_factory.mktemp('rules') / ('%s.yml' % variant)
        path.write_text(yaml.safe_dump({'groups': render_rule(settings(variant))['spec']['groups']}))
        out[variant] = str(path)
    return out


def alert_names(path):
    with open(path) as f:
        return sorted(r['alert'] for g in yaml.safe_load(f)['groups'] for r in g['rules'])


def series(name, labels, values):
    """One promtool input series: ``name`` may carry labels of its own (``metric{a="b"}``)."""
    metric, own = (name.split('{', 1) + [''])[:2]
    matchers = [own.rstrip('}')] if own else []
    matchers += ['%s="%s"' % kv for kv in sorted(labels.items())]
    return {'series': '%s{%s}' % (metric, ', '.join(matchers)), 'values': values}


def own_labels(name):
    return dict(re.findall(r'(\w+)="([^"]*)"', name.partition('{')[2]))


def expected_labels(case, labels):
    """The labels of the firing alert: the series labels it keeps (the node as Hostname with either spelling)
    and the rule's own."""
    labels = dict(labels, **own_labels(next(iter(case['fire']))))
    if case['dcgm']:
        labels['Hostname'] = alert_cases.NODE
    kept = labels if case['keep'] is None else dict((k, labels[k]) for k in case['keep'])
    return dict(kept, **case['labels'])


def unit_test_groups(case, spelling):
    """promtool test groups of one case: fires (and is silent one minute before its ``for`` ends), and silent."""
    labels = dict(alert_cases.series_labels(case))
    if case['dcgm']:
        labels[spelling] = alert_cases.NODE
    name, minutes = case['alert'], case['for_min']
    label = ' (%s)' % spelling if case['dcgm'] else ''
    fire = {'name': '%s fires%s' % (name, label), 'interval': '1m',
            'input_series': [series(n, labels, v) for n, v in case['fire'].items()],
            'alert_rule_test': [{'eval_time': '%dm' % minutes, 'alertname': name, 'exp_alerts': [{
                'exp_labels': expected_labels(case, labels),
                'exp_annotations': {'summary': case['summary'], 'description': case['description']}}]}]}
    if minutes:
        fire['alert_rule_test'].insert(0, {'eval_time': '%dm' % (minutes - 1), 'alertname': name, 'exp_alerts': []})
    silent = {'name': '%s silent%s' % (name, label), 'interval': '1m',
              'input_series': [series(n, labels, v) for n, v in case['silent'].items()],
              'alert_rule_test': [{'eval_time': '%dm' % t, 'alertname': name, 'exp_alerts': []}
                                  for t in (minutes, 30)]}
    return [fire, silent]


@pytest.mark.parametrize('variant', sorted(VARIANTS))
def test_promtool_checks_the_rendered_rules(promtool, rule_files, variant):
    """Every rendered file passes promtool's checks (lint fatal), with as many rules as the variant has cases."""
    proc = subprocess.run([promtool, 'check', 'rules', '--lint=all', '--lint-fatal', rule_files[variant]],
                          check=False, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.returncode == 0, proc.stdout
    count = len(alert_cases.cases(settings(variant)))
    assert 'SUCCESS: %d rules found' % count in proc.stdout, proc.stdout


@pytest.mark.parametrize('variant', sorted(VARIANTS))
def test_every_alert_has_cases(rule_files, variant):
    """promtool ignores a test of an alert the rules do not have: each rendered alert has its cases, and
    each case its alert."""
    assert alert_names(rule_files[variant]) == sorted(c['alert'] for c in alert_cases.cases(settings(variant)))


@pytest.mark.parametrize('variant', sorted(VARIANTS))
def test_promtool_unit_tests(promtool, rule_files, variant, tmp_path):
    """Each alert fires and stays silent on its input series, for both node label spellings where the series
    are the DCGM exporter's; promtool names each failing group and shows the alerts expected and got."""
    groups = [g for case in alert_cases.cases(settings(variant))
              for spelling in (SPELLINGS if case['dcgm'] else SPELLINGS[:1]) for g in unit_test_groups(case, spelling)]
    path = tmp_path / 'alerts.test.yml'
    path.write_text(yaml.safe_dump({'rule_files': [rule_files[variant]], 'evaluation_interval': '1m',
                                    'tests': groups}, sort_keys=False, width=1000))
    proc = subprocess.run([promtool, 'test', 'rules', str(path)], check=False, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    assert proc.returncode == 0 and 'SUCCESS' in proc.stdout, proc.stdout
