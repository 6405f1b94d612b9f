# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Rollout result filters: thin wrappers over module_utils.plans.rollout_summary.

Documentation is in the sidecar files rollout_summary_table.yml and rollout_stats.yml.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.plugin_utils.filters import filter_errors, plain_filters


@filter_errors
def rollout_summary_table(results, title='GPU rollout'):
    """One or more rollout results as summary lines: node, from -> to, duration, pods evicted, result."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.plans import rollout_summary
    return rollout_summary.summary_table(results, title=title)


@filter_errors
def rollout_stats(results, kind):
    """One or more rollout results as the gpuops_rollout artifact (set_stats)."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.plans import rollout_summary
    return rollout_summary.stats(kind, results)


class FilterModule(object):
    """gpuops.gpu rollout result filters."""

    def filters(self):
        return plain_filters({
            'rollout_summary_table': rollout_summary_table,
            'rollout_stats': rollout_stats,
        })
