# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Monitoring filters: check the monitoring role's settings, validate and render the DCGM exporter metric
list (dcgm-metrics.csv).

Thin wrappers: the logic lives in module_utils.plans.monitoring. Documentation is in the sidecar files
monitoring_plan.yml, dcgm_metrics_errors.yml and dcgm_metrics_csv.yml.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.gpu.plugins.plugin_utils.filters import filter_errors, plain_filters


def dcgm_metrics_errors(metrics, required_fields=None, console_plugin=False):
    """List of problems in a DCGM exporter metric list ([] when valid)."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.plans import monitoring
    return monitoring.metric_errors(metrics, required_fields=monitoring.required_fields(required_fields, console_plugin))


def monitoring_plan(config, cluster=None):
    """Every problem with the monitoring role's settings (and the cluster), the platform, the namespace."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.plans import monitoring
    if not isinstance(config, dict) or not isinstance(cluster, (dict, type(None))):
        raise AnsibleFilterError('monitoring_plan: expects the settings (and the cluster) as mappings')
    return monitoring.monitoring_plan(config, cluster)


@filter_errors
def dcgm_metrics_csv(metrics):
    """The dcgm-metrics.csv text for a valid metric list."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.plans import monitoring
    return monitoring.render_csv(metrics)


class FilterModule(object):
    """gpuops.gpu monitoring filters."""

    def filters(self):
        return plain_filters({
            'dcgm_metrics_errors': dcgm_metrics_errors,
            'dcgm_metrics_csv': dcgm_metrics_csv,
            'monitoring_plan': monitoring_plan,
        })
