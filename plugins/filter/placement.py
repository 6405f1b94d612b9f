# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters for GPU node placement: taint validation, tolerations for taints, the layer plan.

Thin wrappers over module_utils.gpu.tolerations and module_utils.plans.placement; documentation in
taint_errors.yml, tolerations_for_taints.yml, gpu_node_placement_plan.yml and
daemonsets_not_ready_for.yml.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.gpu.plugins.plugin_utils.filters import filter_errors, plain_filters


def taint_errors(taints):
    """List of problems in a list of node taints ([] when valid)."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import tolerations
    return tolerations.taint_errors(taints)


@filter_errors
def tolerations_for_taints(taints, match_value=False, keep_gpu=False):
    """Tolerations matching ``taints`` (Exists on key and effect unless match_value)."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import tolerations
    result = tolerations.tolerations_for_taints(taints, match_value=match_value)
    return tolerations.merge_tolerations(result, keep_gpu=keep_gpu) if keep_gpu else result


def gpu_node_placement_plan(config, cluster=None):
    """Errors and toleration patches (NFD worker, Subscription, ClusterPolicy) for gpu_node_placement."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.plans import placement
    if not isinstance(config, dict):
        raise AnsibleFilterError('gpu_node_placement_plan: the input must be a mapping of settings')
    return placement.placement_plan(config, cluster)


def daemonsets_not_ready_for(daemonsets, taints, owner_kind=None):
    """DaemonSets (namespace/name) whose pods would not survive the taints yet."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.plans import placement
    return placement.daemonsets_not_ready_for(daemonsets, taints, owner_kind)


class FilterModule(object):
    """gpuops.gpu placement filters."""

    def filters(self):
        return plain_filters({
            'taint_errors': taint_errors,
            'tolerations_for_taints': tolerations_for_taints,
            'gpu_node_placement_plan': gpu_node_placement_plan,
            'daemonsets_not_ready_for': daemonsets_not_ready_for,
        })
