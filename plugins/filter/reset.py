# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter for the gpuops.gpu.reset role: what to reset, decided before anything is written.

Thin wrapper: the logic lives in module_utils.plans.reset. Documentation is in gpu_reset_plan.yml and
gpu_reset_pending.yml.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.gpuops.gpu.plugins.plugin_utils.filters import plain_filters


def gpu_reset_plan(nodes, policies, config_maps=None, scope=None, wanted=None, mig=True, sharing=True,
                   cluster_policy=True, config_maps_delete=True, hami=None):
    """Nodes to roll back, ClusterPolicy patches, ConfigMaps to delete, the HAMi release to remove, errors and notes."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.plans import reset as reset_plan
    if not isinstance(nodes, list):
        raise AnsibleFilterError('gpu_reset_plan: expects the list of Node objects')
    if hami is not None and not isinstance(hami, dict):
        raise AnsibleFilterError('gpu_reset_plan: hami must be a mapping (namespace, release, release_info, plugin_pods)')
    return reset_plan.reset_plan(nodes, policies, config_maps, scope=scope, wanted=wanted, options={
        'mig': bool(mig), 'sharing': bool(sharing), 'cluster_policy': bool(cluster_policy),
        'config_maps': bool(config_maps_delete)}, hami=hami)


def gpu_reset_pending(nodes, plan):
    """What still differs from the reset's goal on the nodes of the plan ([] when done)."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.plans import reset as reset_plan
    if not isinstance(nodes, list) or not isinstance(plan, dict):
        raise AnsibleFilterError('gpu_reset_pending: expects the list of Node objects and the gpu_reset_plan result')
    return reset_plan.reset_pending(nodes, plan)


class FilterModule(object):
    """gpuops.gpu reset filter."""

    def filters(self):
        return plain_filters({'gpu_reset_plan': gpu_reset_plan, 'gpu_reset_pending': gpu_reset_pending})
