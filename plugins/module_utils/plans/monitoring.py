# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""DCGM exporter custom metrics: validate a metric list and render ``dcgm-metrics.csv``. Pure, no I/O.

The GPU operator mounts the ConfigMap named by ClusterPolicy ``dcgmExporter.config.name`` (key
``dcgm-metrics.csv``) into the exporter and points ``DCGM_EXPORTER_COLLECTORS`` at it
(docs/facts.md#dcgm-exporter). Each line is ``<DCGM field>, <Prometheus type>, <help>``; the exporter splits
on commas, so a help text with a comma breaks the file, and one bad line stops the exporter.

The ``DCGM_FI_DEV_*_UTIL`` fields are not reported for MIG instances; the profiling fields
(``DCGM_FI_PROF_GR_ENGINE_ACTIVE``, ``DCGM_FI_PROF_DRAM_ACTIVE``, ...) are (Volta and newer).

:func:`monitoring_plan` checks every setting of the gpuops.gpu.monitoring role (and, given what was
read, the cluster's prerequisites) and decides the platform, the operator namespace and whether the
dashboard also goes to the Grafana Operator (a ``GrafanaDashboard``, grafana.integreatly.org/v1beta1,
whose ``spec.instanceSelector`` is immutable: grafana/grafana-operator
``config/crd/bases/grafana.integreatly.org_grafanadashboards.yaml``).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import re

from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import (
    is_dns_label, is_dns_subdomain, label_key_errors, label_value_errors, type_name, unknown_key_errors)
from ansible_collections.gpuops.gpu.plugins.module_utils.common.objects import meta_of

METRIC_TYPES = ('gauge', 'counter', 'label')
FIELD_RE = re.compile(r'^DCGM_(FI|EXP)_[A-Z0-9_]+$')
METRIC_KEYS = ('field', 'type', 'help')
HEADER = ('# DCGM exporter metrics (dcgm-metrics.csv) written by the gpuops.gpu monitoring role.\n'
          '# Format: DCGM FIELD, Prometheus metric type, help message\n')

# Fields the NVIDIA console plugin (console-plugin-nvidia-gpu) charts.
CONSOLE_PLUGIN_FIELDS = (
    'DCGM_FI_PROF_GR_ENGINE_ACTIVE', 'DCGM_FI_DEV_MEM_COPY_UTIL', 'DCGM_FI_DEV_ENC_UTIL', 'DCGM_FI_DEV_DEC_UTIL',
    'DCGM_FI_DEV_POWER_USAGE', 'DCGM_FI_DEV_POWER_MGMT_LIMIT_MAX', 'DCGM_FI_DEV_GPU_TEMP', 'DCGM_FI_DEV_SM_CLOCK',
    'DCGM_FI_DEV_MAX_SM_CLOCK', 'DCGM_FI_DEV_MEM_CLOCK', 'DCGM_FI_DEV_MAX_MEM_CLOCK', 'DCGM_FI_DEV_FB_FREE',
    'DCGM_FI_DEV_FB_USED',
)
# Fields the gpuops.gpu dashboard and alerts use.
DASHBOARD_FIELDS = (
    'DCGM_FI_DEV_GPU_TEMP', 'DCGM_FI_DEV_XID_ERRORS', 'DCGM_FI_PROF_GR_ENGINE_ACTIVE', 'DCGM_FI_DEV_FB_USED',
    'DCGM_FI_DEV_FB_FREE',
)
# The field of the GPUVGPUUnlicensed alert (0: the vGPU has no license).
VGPU_LICENSE_FIELD = 'DCGM_FI_DEV_VGPU_LICENSE_STATUS'
GRAFANA_DASHBOARD_CRD = 'grafanadashboards.grafana.integreatly.org'
GRAFANA_OPERATOR_MODES = ('auto', 'always', 'never')
_SELECTOR_OPERATORS = ('In', 'NotIn', 'Exists', 'DoesNotExist')
OPENSHIFT_DASHBOARD_NAMESPACE = 'openshift-config-managed'
DEFAULT_OPERATOR_NAMESPACE = 'nvidia-gpu-operator'
SERVICE_MONITOR_CRD = 'servicemonitors.monitoring.coreos.com'
PROMETHEUS_RULE_CRD = 'prometheusrules.monitoring.coreos.com'
_PERCENT_RE = re.compile(r'^[0-9]+([.][0-9]+)?$')
MIG_BLIND_FIELDS = ('DCGM_FI_DEV_GPU_UTIL', 'DCGM_FI_DEV_MEM_COPY_UTIL', 'DCGM_FI_DEV_ENC_UTIL', 'DCGM_FI_DEV_DEC_UTIL')


def metric_errors(metrics, required_fields=None):
    """Problems in a metric list ([] when valid). ``required_fields``: fields that must be present."""
    if not isinstance(metrics, list):
        return ['the DCGM metric list must be a list of {field, type, help}, got %s' % type_name(metrics)]
    if not metrics:
        return ['the DCGM metric list is empty: the exporter would export nothing']
    errors = []
    seen = {}
    for index, metric in enumerate(metrics):
        path = 'metrics[%d]' % index
        if not isinstance(metric, dict):
            errors.append('%s must be a mapping {field, type, help}, got %s' % (path, type_name(metric)))
            continue
        errors.extend(unknown_key_errors(metric, METRIC_KEYS, path))
        field = metric.get('field')
        if not isinstance(field, str) or not FIELD_RE.match(field):
            errors.append("%s.field must be a DCGM field name such as DCGM_FI_PROF_GR_ENGINE_ACTIVE, got %r"
                          % (path, field))
        elif field in seen:
            errors.append('%s.field %s is already listed at metrics[%d]' % (path, field, seen[field]))
        else:
            seen[field] = index
        if metric.get('type') not in METRIC_TYPES:
            errors.append('%s.type must be one of %s, got %r' % (path, ', '.join(METRIC_TYPES), metric.get('type')))
        text = metric.get('help')
        if not isinstance(text, str) or not text.strip():
            errors.append('%s.help must be a non-empty string' % path)
        elif ',' in text or '\n' in text or '\r' in text:
            errors.append('%s.help must not contain a comma or a line break (the exporter splits lines on commas): %r'
                          % (path, text))
    for field in required_fields or []:
        if field not in seen:
            errors.append('%s is missing from the metric list but is needed (dashboard, alerts or console plugin)'
                          % field)
    return errors


def metric_warnings(metrics, mig=False):
    """Advice: with MIG, the DEV_*_UTIL fields report nothing for MIG instances."""
    fields = set(m.get('field') for m in metrics or [] if isinstance(m, dict))
    warnings = []
    if mig and fields & set(MIG_BLIND_FIELDS) and 'DCGM_FI_PROF_GR_ENGINE_ACTIVE' not in fields:
        warnings.append('MIG is in use: %s are not reported for MIG instances; add DCGM_FI_PROF_GR_ENGINE_ACTIVE '
                        '(and DCGM_FI_PROF_DRAM_ACTIVE) to see their utilisation'
                        % ', '.join(sorted(fields & set(MIG_BLIND_FIELDS))))
    return warnings


def render_csv(metrics):
    """The ``dcgm-metrics.csv`` text; raises ValueError on an invalid list."""
    errors = metric_errors(metrics)
    if errors:
        raise ValueError('; '.join(errors))
    lines = ['%s, %s, %s' % (m['field'], m['type'], m['help'].strip()) for m in metrics]
    return HEADER + '\n'.join(lines) + '\n'


# --- the role's settings and prerequisites ----------------------------------------------------

def monitoring_plan(config, cluster=None):
    """Every problem with the settings of the monitoring role, then (given ``cluster``) with the cluster.

    ``config``: the role's variables without the ``monitoring_`` prefix. ``cluster`` (None: check the
    settings only, before reading anything): ``namespaces`` (names), ``crds`` ({CRD name: exists}),
    ``console`` and ``console_plugin`` (whether ``consoles.operator.openshift.io/cluster`` and the
    ConsolePlugin exist) and ``policy_namespace`` (the ClusterPolicy ``status.namespace``).
    ``grafana_dashboards``: the GrafanaDashboard objects named ``dashboard_name`` (any namespace) when its
    CRD exists. Returns ``{'errors', 'openshift', 'operator_namespace', 'metrics', 'grafana_operator',
    'grafana_operator_namespace'}``: ``grafana_operator`` says whether to write the GrafanaDashboard
    (``auto``: on OpenShift when its CRD exists).

    ConfigMap names are checked as RFC 1123 subdomains (what the apiserver accepts): stricter than the
    role's former pattern, which let ``a..b`` through to be refused by the apiserver after other writes.
    """
    config = dict(config or {})
    metrics = list(config.get('dcgm_metrics') or []) + list(config.get('dcgm_metrics_extra') or [])
    errors = metric_errors(metrics, required_fields=_required_fields(config)) + _setting_errors(config)
    plan = {'errors': errors, 'metrics': metrics, 'openshift': config.get('platform') == 'openshift',
            'operator_namespace': config.get('operator_namespace') or DEFAULT_OPERATOR_NAMESPACE,
            'grafana_operator': False, 'grafana_operator_namespace': None}
    if cluster is not None:
        _cluster_checks(plan, config, cluster)
    return plan


def required_fields(fields=None, console_plugin=False):
    """``fields``, plus the fields the NVIDIA console plugin charts when ``console_plugin``."""
    required = list(fields or [])
    if console_plugin:
        required.extend(f for f in CONSOLE_PLUGIN_FIELDS if f not in required)
    return required


def _required_fields(config):
    fields = list(DASHBOARD_FIELDS if config.get('dashboard') or config.get('alerts') else [])
    if config.get('alerts') and config.get('alert_vgpu_license'):
        fields.append(VGPU_LICENSE_FIELD)
    return required_fields(fields, config.get('console_plugin'))


def instance_selector_errors(selector, path='monitoring_grafana_operator_instance_selector'):
    """Problems in a GrafanaDashboard ``spec.instanceSelector`` (a label selector that picks at least one
    label: an empty one would put the dashboard into every Grafana the operator manages)."""
    if not isinstance(selector, dict):
        return ['%s must be a label selector {matchLabels, matchExpressions}, got %s' % (path, type_name(selector))]
    errors = unknown_key_errors(selector, ('matchLabels', 'matchExpressions'), path)
    labels = selector.get('matchLabels') or {}
    expressions = selector.get('matchExpressions') or []
    if not isinstance(labels, dict):
        errors.append('%s.matchLabels must be a mapping of label names to values' % path)
        labels = {}
    for key, value in labels.items():
        errors.extend('%s.matchLabels key %s: %s' % (path, key, e) for e in label_key_errors(key))
        errors.extend('%s.matchLabels.%s: %s' % (path, key, e) for e in label_value_errors(value))
    if not isinstance(expressions, list):
        errors.append('%s.matchExpressions must be a list' % path)
        expressions = []
    for index, expression in enumerate(expressions):
        where = '%s.matchExpressions[%d]' % (path, index)
        if not isinstance(expression, dict) or not isinstance(expression.get('key'), str) \
                or expression.get('operator') not in _SELECTOR_OPERATORS:
            errors.append('%s must be {key, operator (%s), values}' % (where, ', '.join(_SELECTOR_OPERATORS)))
        elif not isinstance(expression.get('values') or [], list):
            errors.append('%s.values must be a list of strings' % where)
    if not errors and not labels and not expressions:
        errors.append('%s is empty: it would select every Grafana instance; give the labels of yours, for example '
                      '{matchLabels: {dashboards: grafana}}' % path)
    return errors


def _setting_errors(config):
    errors = []
    labels = config.get('service_monitor_additional_labels')
    if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()):
        errors.append('monitoring_service_monitor_additional_labels must be a mapping of label names to string values')
    percent = config.get('alert_memory_percent')
    if isinstance(percent, bool) or not _PERCENT_RE.match(str(percent)) or not 0 < float(percent) <= 100:
        errors.append('monitoring_alert_memory_percent must be a number between 1 and 100, got %s' % percent)
    for key in ('dashboard_name', 'dcgm_metrics_config_map'):
        if not is_dns_subdomain(config.get(key)):
            errors.append('monitoring_%s %s is not a valid ConfigMap name (lowercase letters, digits, - and ., '
                          'starting and ending with a letter or digit)' % (key, config.get(key)))
    mode = config.get('grafana_operator', 'never')
    if mode not in GRAFANA_OPERATOR_MODES:
        errors.append('monitoring_grafana_operator must be one of %s, got %r'
                      % (', '.join(GRAFANA_OPERATOR_MODES), mode))
    elif mode != 'never' and config.get('dashboard'):
        errors.extend(instance_selector_errors(config.get('grafana_operator_instance_selector')))
        namespace = config.get('grafana_operator_namespace')
        if namespace and not is_dns_label(namespace):
            errors.append('monitoring_grafana_operator_namespace %s is not a namespace name' % namespace)
    if config.get('console_plugin') and config.get('console_plugin_install') \
            and not config.get('console_plugin_chart_repo_url') and '/' not in (config.get('console_plugin_chart_ref') or ''):
        errors.append('monitoring_console_plugin_install needs monitoring_console_plugin_chart_repo_url (a Helm '
                      'repository or mirror)')
    return errors


def _cluster_checks(plan, config, cluster):
    namespaces = set(cluster.get('namespaces') or [])
    crds = cluster.get('crds') or {}
    openshift = config.get('platform') == 'openshift' or \
        (config.get('platform') == 'auto' and OPENSHIFT_DASHBOARD_NAMESPACE in namespaces)
    operator_ns = config.get('operator_namespace') or cluster.get('policy_namespace') or DEFAULT_OPERATOR_NAMESPACE
    plan.update(openshift=openshift, operator_namespace=operator_ns)
    errors = plan['errors']
    for what, kind, crd in (('service_monitor', 'ServiceMonitor', SERVICE_MONITOR_CRD),
                            ('alerts', 'PrometheusRule', PROMETHEUS_RULE_CRD)):
        if config.get(what) and not crds.get(crd):
            errors.append('monitoring_%s is true but the %s CRD (%s) is missing: install the Prometheus operator '
                          'or set monitoring_%s: false' % (what, kind, crd, what))
    if config.get('dashboard') and openshift and OPENSHIFT_DASHBOARD_NAMESPACE not in namespaces:
        errors.append('the namespace openshift-config-managed does not exist (monitoring_platform is openshift): '
                      'is this OpenShift?')
    grafana = config.get('grafana_namespace')
    if config.get('dashboard') and not openshift and grafana not in namespaces:
        errors.append('the Grafana namespace %s does not exist: install Grafana (for example kube-prometheus-stack) '
                      'first, set monitoring_grafana_namespace, or monitoring_dashboard: false' % grafana)
    if operator_ns not in namespaces:
        errors.append('the GPU operator namespace %s does not exist; set monitoring_operator_namespace' % operator_ns)
    _grafana_operator_checks(plan, config, cluster, namespaces)
    if config.get('console_plugin') and not cluster.get('console'):
        errors.append('monitoring_console_plugin is for OpenShift (consoles.operator.openshift.io/cluster not found)')
    if config.get('console_plugin') and not config.get('console_plugin_install') and not cluster.get('console_plugin'):
        errors.append('the ConsolePlugin %s does not exist: install the chart (set monitoring_console_plugin_install: '
                      'true and monitoring_console_plugin_chart_repo_url) or install it first'
                      % config.get('console_plugin_name'))


def _grafana_operator_checks(plan, config, cluster, namespaces):
    """Whether the dashboard also goes to the Grafana Operator, where, and why it cannot."""
    mode = config.get('grafana_operator', 'never')
    crd = bool((cluster.get('crds') or {}).get(GRAFANA_DASHBOARD_CRD))
    if not config.get('dashboard') or mode == 'never' or (mode == 'auto' and not (plan['openshift'] and crd)):
        return
    errors = plan['errors']
    if not crd:
        errors.append('monitoring_grafana_operator is always but the GrafanaDashboard CRD (%s) is missing: install '
                      'the Grafana Operator or set monitoring_grafana_operator: auto or never' % GRAFANA_DASHBOARD_CRD)
        return
    namespace = config.get('grafana_operator_namespace') or plan['operator_namespace']
    plan.update(grafana_operator=True, grafana_operator_namespace=namespace)
    if namespace not in namespaces:
        errors.append('the namespace %s for the GrafanaDashboard does not exist; set '
                      'monitoring_grafana_operator_namespace' % namespace)
    selector = config.get('grafana_operator_instance_selector')
    for existing in cluster.get('grafana_dashboards') or []:
        meta = meta_of(existing)
        current = (existing.get('spec') or {}).get('instanceSelector')
        if meta.get('namespace') == namespace and current is not None and _selector(current) != _selector(selector):
            errors.append('GrafanaDashboard %s/%s selects the Grafana instances %s, not %s, and its '
                          'spec.instanceSelector cannot be changed: delete it first (it is recreated) or set '
                          'monitoring_grafana_operator_instance_selector back'
                          % (namespace, meta.get('name'), json.dumps(_selector(current), sort_keys=True),
                             json.dumps(_selector(selector), sort_keys=True)))


def _selector(selector):
    """A label selector without its empty parts, to compare what the user gave with what the API returns."""
    return dict((k, v) for k, v in sorted((selector or {}).items()) if v) if isinstance(selector, dict) else selector
