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
read, the cluster's prerequisites) and decides the platform and the operator namespace.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import (
    is_dns_subdomain, type_name, unknown_key_errors)

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
    Returns ``{'errors', 'openshift', 'operator_namespace', 'metrics'}``.

    ConfigMap names are checked as RFC 1123 subdomains (what the apiserver accepts): stricter than the
    role's former pattern, which let ``a..b`` through to be refused by the apiserver after other writes.
    """
    config = dict(config or {})
    metrics = list(config.get('dcgm_metrics') or []) + list(config.get('dcgm_metrics_extra') or [])
    errors = metric_errors(metrics, required_fields=_required_fields(config)) + _setting_errors(config)
    plan = {'errors': errors, 'metrics': metrics, 'openshift': config.get('platform') == 'openshift',
            'operator_namespace': config.get('operator_namespace') or DEFAULT_OPERATOR_NAMESPACE}
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
    return required_fields(DASHBOARD_FIELDS if config.get('dashboard') or config.get('alerts') else [],
                           config.get('console_plugin'))


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
    if config.get('console_plugin') and not cluster.get('console'):
        errors.append('monitoring_console_plugin is for OpenShift (consoles.operator.openshift.io/cluster not found)')
    if config.get('console_plugin') and not config.get('console_plugin_install') and not cluster.get('console_plugin'):
        errors.append('the ConsolePlugin %s does not exist: install the chart (set monitoring_console_plugin_install: '
                      'true and monitoring_console_plugin_chart_repo_url) or install it first'
                      % config.get('console_plugin_name'))
