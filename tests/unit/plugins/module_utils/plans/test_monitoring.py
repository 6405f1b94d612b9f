# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""DCGM exporter metric list: validation, rendering, MIG advice, and the filters over them."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os
import re

import pytest
import yaml

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.gpu.plugins.filter.monitoring import FilterModule
from ansible_collections.gpuops.gpu.plugins.module_utils.plans import monitoring as D

ROLE_DEFAULTS = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', '..', 'roles', 'monitoring', 'defaults',
                             'main.yml')
GOOD = [{'field': 'DCGM_FI_PROF_GR_ENGINE_ACTIVE', 'type': 'gauge', 'help': 'Graphics engine active.'},
        {'field': 'DCGM_FI_DEV_XID_ERRORS', 'type': 'gauge', 'help': 'Last XID.'},
        {'field': 'DCGM_FI_DRIVER_VERSION', 'type': 'label', 'help': 'Driver version.'}]
FILTERS = FilterModule().filters()


def test_render():
    text = D.render_csv(GOOD)
    lines = text.splitlines()
    assert lines[0].startswith('#') and lines[1].startswith('#')
    assert lines[2:] == ['DCGM_FI_PROF_GR_ENGINE_ACTIVE, gauge, Graphics engine active.',
                         'DCGM_FI_DEV_XID_ERRORS, gauge, Last XID.',
                         'DCGM_FI_DRIVER_VERSION, label, Driver version.']
    assert text.endswith('\n')
    assert FILTERS['dcgm_metrics_csv'](GOOD) == text


@pytest.mark.parametrize('metrics,message', [
    ([], 'is empty'),
    ({'field': 'x'}, 'must be a list'),
    (['DCGM_FI_DEV_GPU_TEMP, gauge, x'], 'must be a mapping'),
    ([{'field': 'GPU_TEMP', 'type': 'gauge', 'help': 'x'}], 'must be a DCGM field name'),
    ([{'field': 'DCGM_FI_DEV_GPU_TEMP', 'type': 'histogram', 'help': 'x'}], 'type must be one of gauge, counter, label'),
    ([{'field': 'DCGM_FI_DEV_GPU_TEMP', 'type': 'gauge', 'help': 'Temperature, in C'}], 'must not contain a comma'),
    ([{'field': 'DCGM_FI_DEV_GPU_TEMP', 'type': 'gauge', 'help': ''}], 'help must be a non-empty string'),
    ([{'field': 'DCGM_FI_DEV_GPU_TEMP', 'type': 'gauge', 'help': 'a'},
      {'field': 'DCGM_FI_DEV_GPU_TEMP', 'type': 'gauge', 'help': 'b'}], 'already listed at metrics[0]'),
    ([{'field': 'DCGM_FI_DEV_GPU_TEMP', 'typ': 'gauge', 'help': 'a'}], "unknown key 'typ'; did you mean 'type'"),
])
def test_errors(metrics, message):
    errors = D.metric_errors(metrics)
    assert any(message in e for e in errors), errors
    assert FILTERS['dcgm_metrics_errors'](metrics) == errors
    with pytest.raises((AnsibleFilterError, ValueError)):
        FILTERS['dcgm_metrics_csv'](metrics)


def test_required_fields_and_console_plugin():
    errors = FILTERS['dcgm_metrics_errors'](GOOD, required_fields=['DCGM_FI_DEV_FB_USED'])
    assert errors == ['DCGM_FI_DEV_FB_USED is missing from the metric list but is needed (dashboard, alerts or console plugin)']
    errors = FILTERS['dcgm_metrics_errors'](GOOD, console_plugin=True)
    assert any('DCGM_FI_DEV_MAX_SM_CLOCK' in e for e in errors)


def test_role_default_list_is_valid_and_covers_dashboard_alerts_and_console_plugin():
    with open(ROLE_DEFAULTS) as f:
        defaults = yaml.safe_load(f)
    metrics = defaults['monitoring_dcgm_metrics']
    assert FILTERS['dcgm_metrics_errors'](metrics, required_fields=list(D.DASHBOARD_FIELDS), console_plugin=True) == []
    assert metrics[0]['field'] == 'DCGM_FI_PROF_GR_ENGINE_ACTIVE'


def test_mig_warning():
    util_only = [{'field': 'DCGM_FI_DEV_GPU_UTIL', 'type': 'gauge', 'help': 'u'}]
    assert D.metric_warnings(util_only, mig=True)
    assert D.metric_warnings(util_only, mig=False) == []
    assert D.metric_warnings(util_only + GOOD, mig=True) == []


# --- the role's settings and prerequisites (monitoring_plan) ------------------------------------

def role_settings(**extra):
    with open(ROLE_DEFAULTS) as f:
        defaults = yaml.safe_load(f)
    out = dict((key[len('monitoring_'):], value) for key, value in defaults.items())
    out.update(extra)
    return out


CRDS = {D.SERVICE_MONITOR_CRD: True, D.PROMETHEUS_RULE_CRD: True}


def read(**extra):
    out = {'namespaces': ['gpu-operator', 'openshift-config-managed'], 'crds': dict(CRDS), 'console': True,
           'console_plugin': True, 'policy_namespace': 'gpu-operator'}
    out.update(extra)
    return out


def test_role_defaults_pass_and_decide_platform_and_namespace():
    plan = D.monitoring_plan(role_settings())
    assert plan['errors'] == [] and len(plan['metrics']) > 20
    plan = D.monitoring_plan(role_settings(), read())
    assert plan['errors'] == [] and plan['openshift'] is True and plan['operator_namespace'] == 'gpu-operator'
    plan = D.monitoring_plan(role_settings(operator_namespace='nvidia-gpu-operator'),
                             read(namespaces=['nvidia-gpu-operator', 'monitoring']))
    assert plan['errors'] == [] and plan['openshift'] is False and plan['operator_namespace'] == 'nvidia-gpu-operator'
    plan = D.monitoring_plan(role_settings(), read(namespaces=['nvidia-gpu-operator', 'monitoring'], policy_namespace=''))
    assert plan['operator_namespace'] == 'nvidia-gpu-operator' and plan['errors'] == []


@pytest.mark.parametrize('extra, fragment', [
    ({'dcgm_metrics_extra': [{'field': 'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL', 'type': 'counter', 'help': 'ECC, double'}]},
     'must not contain a comma'),
    ({'dcgm_metrics': [{'field': 'DCGM_FI_DEV_GPU_TEMP', 'type': 'gauge', 'help': 'Temperature.'}]},
     'DCGM_FI_DEV_XID_ERRORS is missing from the metric list'),
    ({'service_monitor_additional_labels': {'release': 1}}, 'must be a mapping of label names to string values'),
    ({'service_monitor_additional_labels': ['release']}, 'must be a mapping of label names to string values'),
    ({'alert_memory_percent': 0}, 'monitoring_alert_memory_percent must be a number between 1 and 100, got 0'),
    ({'alert_memory_percent': 100.5}, 'monitoring_alert_memory_percent must be a number between 1 and 100'),
    ({'alert_memory_percent': 'ninety'}, 'monitoring_alert_memory_percent must be a number between 1 and 100'),
    ({'alert_memory_percent': True}, 'monitoring_alert_memory_percent must be a number between 1 and 100'),
    ({'dashboard_name': 'GPU dashboard'}, 'monitoring_dashboard_name GPU dashboard is not a valid ConfigMap name'),
    # the role's former pattern let these through; the apiserver refuses them
    ({'dashboard_name': 'gpu..dashboard'}, 'is not a valid ConfigMap name'),
    ({'dcgm_metrics_config_map': 'a.-b'}, 'monitoring_dcgm_metrics_config_map a.-b is not a valid ConfigMap name'),
    ({'console_plugin': True, 'console_plugin_install': True}, 'needs monitoring_console_plugin_chart_repo_url'),
])
def test_setting_errors(extra, fragment):
    errors = D.monitoring_plan(role_settings(**extra))['errors']
    assert fragment in errors[0], errors
    assert len(errors) == 1 or 'is missing from the metric list' in fragment, errors


@pytest.mark.parametrize('value', [95, 1, 100, 0.5, '80', '99.9'])
def test_memory_percent_accepted(value):
    assert D.monitoring_plan(role_settings(alert_memory_percent=value))['errors'] == []


def test_console_plugin_chart_path_needs_no_repository():
    assert D.monitoring_plan(role_settings(console_plugin=True, console_plugin_install=True,
                                           console_plugin_chart_ref='./charts/console-plugin'))['errors'] == []


@pytest.mark.parametrize('extra, cluster, fragments', [
    ({}, {'crds': {}}, ['ServiceMonitor CRD (servicemonitors.monitoring.coreos.com) is missing',
                        'PrometheusRule CRD (prometheusrules.monitoring.coreos.com) is missing']),
    ({'service_monitor': False, 'alerts': False}, {'crds': {}}, []),
    ({'platform': 'openshift'}, {'namespaces': ['gpu-operator']}, ['openshift-config-managed does not exist']),
    ({'platform': 'kubernetes'}, {}, ['the Grafana namespace monitoring does not exist']),
    ({'platform': 'kubernetes', 'dashboard': False}, {}, []),
    ({'operator_namespace': 'elsewhere'}, {}, ['the GPU operator namespace elsewhere does not exist']),
    ({'console_plugin': True}, {'console': False, 'console_plugin': False},
     ['monitoring_console_plugin is for OpenShift', 'the ConsolePlugin console-plugin-nvidia-gpu does not exist']),
    ({'console_plugin': True, 'console_plugin_install': True, 'console_plugin_chart_repo_url': 'https://x'},
     {'console_plugin': False}, []),
])
def test_cluster_errors(extra, cluster, fragments):
    errors = D.monitoring_plan(role_settings(**extra), read(**cluster))['errors']
    assert len(errors) == len(fragments), errors
    for error, fragment in zip(errors, fragments):
        assert fragment in error


def test_monitoring_plan_filter():
    assert FILTERS['monitoring_plan'](role_settings())['errors'] == []
    assert FILTERS['monitoring_plan'](role_settings(), read())['openshift'] is True
    with pytest.raises(AnsibleFilterError):
        FILTERS['monitoring_plan']([])


# --- default list completeness, vGPU licence alert, Grafana Operator -----------------------------

def test_role_default_list_has_pipe_activity_nvlink_and_vgpu_license():
    fields = [m['field'] for m in role_settings()['dcgm_metrics']]
    for field in ('DCGM_FI_PROF_PIPE_FP16_ACTIVE', 'DCGM_FI_PROF_PIPE_FP32_ACTIVE', 'DCGM_FI_PROF_PIPE_FP64_ACTIVE',
                  'DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL', D.VGPU_LICENSE_FIELD):
        assert field in fields
    csv = D.render_csv(role_settings()['dcgm_metrics'])
    assert 'DCGM_FI_PROF_PIPE_FP64_ACTIVE, gauge, Ratio of cycles the FP64 pipe is active.\n' in csv


def test_vgpu_license_alert_needs_its_field():
    metrics = [m for m in role_settings()['dcgm_metrics'] if m['field'] != D.VGPU_LICENSE_FIELD]
    errors = D.monitoring_plan(role_settings(dcgm_metrics=metrics))['errors']
    assert errors == ['DCGM_FI_DEV_VGPU_LICENSE_STATUS is missing from the metric list but is needed '
                      '(dashboard, alerts or console plugin)']
    assert D.monitoring_plan(role_settings(dcgm_metrics=metrics, alert_vgpu_license=False))['errors'] == []
    assert D.monitoring_plan(role_settings(dcgm_metrics=metrics, alerts=False))['errors'] == []


GRAFANA = dict(CRDS, **{D.GRAFANA_DASHBOARD_CRD: True})
SELECTOR = {'matchLabels': {'dashboards': 'grafana'}}


def dashboard(namespace='gpu-operator', selector=None):
    return {'metadata': {'name': 'gpuops-gpu-dashboard', 'namespace': namespace},
            'spec': {'instanceSelector': selector or SELECTOR, 'json': '{}'}}


@pytest.mark.parametrize('extra, cluster, expected', [
    ({}, {'crds': GRAFANA}, 'gpu-operator'),                                     # auto, OpenShift, CRD
    ({}, {}, None),                                                              # auto, no CRD
    ({'platform': 'kubernetes'}, {'crds': GRAFANA, 'namespaces': ['gpu-operator', 'monitoring']}, None),
    ({'platform': 'kubernetes', 'grafana_operator': 'always'},
     {'crds': GRAFANA, 'namespaces': ['gpu-operator', 'monitoring']}, 'gpu-operator'),
    ({'grafana_operator': 'never'}, {'crds': GRAFANA}, None),
    ({'dashboard': False}, {'crds': GRAFANA}, None),
    ({'grafana_operator_namespace': 'grafana'}, {'crds': GRAFANA,
                                                 'namespaces': ['gpu-operator', 'openshift-config-managed', 'grafana']},
     'grafana'),
    # the same selector as the existing dashboard (the API may add an empty matchExpressions)
    ({}, {'crds': GRAFANA, 'grafana_dashboards': [dashboard(selector=dict(SELECTOR, matchExpressions=[]))]},
     'gpu-operator'),
    # another namespace's dashboard of the same name is not ours
    ({}, {'crds': GRAFANA, 'grafana_dashboards': [dashboard('other', {'matchLabels': {'x': 'y'}})]}, 'gpu-operator'),
])
def test_grafana_operator_decision(extra, cluster, expected):
    plan = D.monitoring_plan(role_settings(**extra), read(**cluster))
    assert plan['errors'] == []
    assert plan['grafana_operator'] is (expected is not None)
    assert plan['grafana_operator_namespace'] == expected


@pytest.mark.parametrize('extra, cluster, fragment', [
    ({'grafana_operator': 'always'}, {}, 'the GrafanaDashboard CRD (grafanadashboards.grafana.integreatly.org) is '
                                         'missing'),
    ({'grafana_operator_namespace': 'grafana'}, {'crds': GRAFANA},
     'the namespace grafana for the GrafanaDashboard does not exist'),
    ({'grafana_operator_instance_selector': {'matchLabels': {'dashboards': 'team-a'}}},
     {'crds': GRAFANA, 'grafana_dashboards': [dashboard()]},
     'GrafanaDashboard gpu-operator/gpuops-gpu-dashboard selects the Grafana instances '
     '{"matchLabels": {"dashboards": "grafana"}}, not {"matchLabels": {"dashboards": "team-a"}}, and its '
     'spec.instanceSelector cannot be changed'),
])
def test_grafana_operator_cluster_errors(extra, cluster, fragment):
    errors = D.monitoring_plan(role_settings(**extra), read(**cluster))['errors']
    assert len(errors) == 1 and fragment in errors[0], errors


@pytest.mark.parametrize('extra, fragment', [
    ({'grafana_operator': 'yes'}, "monitoring_grafana_operator must be one of auto, always, never, got 'yes'"),
    ({'grafana_operator_instance_selector': {}}, 'is empty: it would select every Grafana instance'),
    ({'grafana_operator_instance_selector': None}, 'must be a label selector'),
    ({'grafana_operator_instance_selector': {'matchLabel': {'a': 'b'}}}, "did you mean 'matchLabels'"),
    ({'grafana_operator_instance_selector': {'matchLabels': {'dashboards': 1}}}, 'quote it in YAML'),
    ({'grafana_operator_instance_selector': {'matchLabels': {'bad key!': 'x'}}}, 'matchLabels key bad key!'),
    ({'grafana_operator_instance_selector': {'matchExpressions': [{'key': 'a', 'operator': 'Is'}]}},
     'matchExpressions[0] must be {key, operator (In, NotIn, Exists, DoesNotExist), values}'),
    ({'grafana_operator_namespace': 'Grafana'}, 'monitoring_grafana_operator_namespace Grafana is not a namespace name'),
])
def test_grafana_operator_setting_errors(extra, fragment):
    errors = D.monitoring_plan(role_settings(**extra))['errors']
    assert len(errors) == 1 and fragment in errors[0], errors


def test_grafana_operator_settings_ignored_when_off():
    bad = {'grafana_operator_instance_selector': {}, 'grafana_operator_namespace': 'Bad'}
    assert D.monitoring_plan(role_settings(grafana_operator='never', **bad))['errors'] == []
    assert D.monitoring_plan(role_settings(dashboard=False, **bad))['errors'] == []
    expressions = {'matchExpressions': [{'key': 'dashboards', 'operator': 'In', 'values': ['grafana']}]}
    assert D.monitoring_plan(role_settings(grafana_operator_instance_selector=expressions))['errors'] == []


# --- the node label: Hostname, or hostname from NVIDIA/dcgm-exporter d5e5f51 (PR 655) on --------------------

ROLE_DIR = os.path.join(os.path.dirname(ROLE_DEFAULTS), '..')
HOSTNAME_COPY = ', "Hostname", "$1", "hostname", "(.+)")'
NODE_MATCHERS = '{Hostname=~"$Hostname|", hostname=~"$hostname|"}'


def hostname_copies(expr):
    """(start, end) of each ``label_replace(<x>, "Hostname", "$1", "hostname", "(.+)")`` in ``expr``."""
    spans = []
    for match in re.finditer(r'label_replace\(', expr):
        depth, end = 0, None
        for index in range(match.end() - 1, len(expr)):
            depth += {'(': 1, ')': -1}.get(expr[index], 0)
            if depth == 0:
                end = index + 1
                break
        if end and expr[:end].endswith(HOSTNAME_COPY):
            spans.append((match.start(), end))
    return spans


def uncopied_metrics(expr):
    """The DCGM series of ``expr`` that no hostname copy wraps (their node label may be hostname only)."""
    spans = hostname_copies(expr)
    return [m.group(0) for m in re.finditer(r'DCGM_F[IE]_\w+', expr)
            if not any(start < m.start() < end for start, end in spans)]


def test_hostname_helpers_see_an_expression_without_the_copy():
    assert uncopied_metrics('max by (Hostname, gpu) (DCGM_FI_DEV_XID_ERRORS) > 0') == ['DCGM_FI_DEV_XID_ERRORS']
    assert uncopied_metrics('label_replace(DCGM_FI_DEV_GPU_TEMP, "Hostname", "$1", "host", "(.+)")') == [
        'DCGM_FI_DEV_GPU_TEMP']
    assert uncopied_metrics('label_replace(A{x="y"} / (DCGM_FI_DEV_FB_USED + B), "Hostname", "$1", "hostname", '
                            '"(.+)") > 9') == []


def dashboard_json():
    with open(os.path.join(ROLE_DIR, 'files', 'gpuops-gpu-dashboard.json')) as f:
        return json.load(f)


def test_dashboard_filters_and_names_nodes_with_either_exporter_label():
    board = dashboard_json()
    variables = dict((v['name'], v) for v in board['templating']['list'])
    assert variables['Hostname']['query'] == 'label_values(DCGM_FI_DEV_GPU_TEMP, Hostname)'
    assert variables['hostname']['query'] == 'label_values(DCGM_FI_DEV_GPU_TEMP, hostname)'
    assert all(variables[n]['includeAll'] and variables[n]['allValue'] == '.*' for n in ('Hostname', 'hostname'))
    targets = [t for p in board['panels'] for t in p.get('targets', [])]
    selectors = [(t['expr'], m) for t in targets for m in re.finditer(r'(DCGM_F[IE]_\w+)(\{[^}]*\})?', t['expr'])]
    assert len(selectors) > 15
    for expr, match in selectors:
        assert match.group(2) == NODE_MATCHERS, expr
    legends = [t for t in targets if '{{Hostname}}' in t.get('legendFormat', '')]
    assert len(legends) == 11
    for target in legends:
        assert uncopied_metrics(target['expr']) == [], target['expr']
    assert not any('{{hostname}}' in t.get('legendFormat', '') for t in targets)


@pytest.mark.parametrize('value', ['.*', '.+', '(a100-0|h100-0)', 'a100-0', '', '$hostname'])
def test_node_matchers_filter_only_the_series_that_carry_the_label(value):
    """Prometheus anchors a regex matcher (^(?:re)$) and an absent label is the empty string: "<value>|"
    passes a series without the label whatever the variable holds (All, a pick, nothing, or left as text
    by a dashboard that did not substitute it), and filters the series that carry it."""
    matcher = '^(?:%s|)$' % value
    assert re.match(matcher, '')
    for node in ('a100-0', 'h100-0', 't4-0'):
        picked = value in ('.*', '.+') or node in value.strip('()').split('|')
        assert bool(re.match(matcher, node)) == (picked and value != ''), (value, node)
