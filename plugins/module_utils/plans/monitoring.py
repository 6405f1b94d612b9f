# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""DCGM exporter custom metrics: validate a metric list and render ``dcgm-metrics.csv``. Pure, no I/O.

The GPU operator mounts the ConfigMap named by ClusterPolicy ``dcgmExporter.config.name`` (key
``dcgm-metrics.csv``) into the exporter and points ``DCGM_EXPORTER_COLLECTORS`` at it
(nvidia-facts.md §6). Each line is ``<DCGM field>, <Prometheus type>, <help>``; the exporter splits
on commas, so a help text with a comma breaks the file, and one bad line stops the exporter.

The ``DCGM_FI_DEV_*_UTIL`` fields are not reported for MIG instances; the profiling fields
(``DCGM_FI_PROF_GR_ENGINE_ACTIVE``, ``DCGM_FI_PROF_DRAM_ACTIVE``, ...) are (Volta and newer).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.tolerations import type_name, unknown_key_errors

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
