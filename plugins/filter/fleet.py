# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""GPU fleet filters: thin wrappers over module_utils.gpu.fleet (the text table) and
module_utils.gpu.fleet_report (the HTML, CSV and JSON report).

Documentation is in the sidecar files gpu_fleet_table.yml and gpu_fleet_report.yml.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.plugin_utils.filters import filter_errors, plain_filters


@filter_errors
def gpu_fleet_table(nodes, summary=None):
    """The gpu_nodes_info nodes (or whole result) as a fixed-width text table."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import fleet as fleet_table
    return fleet_table.render(nodes, summary=summary)


@filter_errors
def gpu_fleet_report(fleet, before=None, rollout=None, title='GPU fleet', generated=None):
    """The fleet report's files: {'html', 'csv', 'json'} (strings)."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import fleet_report
    return fleet_report.render(fleet, before=before, rollout=rollout, title=title, generated=generated)


class FilterModule(object):
    """gpuops.gpu fleet filters."""

    def filters(self):
        return plain_filters({
            'gpu_fleet_table': gpu_fleet_table,
            'gpu_fleet_report': gpu_fleet_report,
        })
