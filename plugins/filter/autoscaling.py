# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Autoscaling filter: validate GPU MachineSet settings and plan the writes of the autoscaling role.

Thin wrapper: the logic lives in module_utils.plans.autoscaling. Documentation is in the sidecar file
autoscaling_plan.yml.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.plugin_utils.filters import plain_filters


def autoscaling_plan(machine_sets, existing_machine_sets=None, existing_machine_autoscalers=None,
                     existing_cluster_autoscaler=None, namespace='openshift-machine-api', gpu_limits=None,
                     resource_limits=None, scale_down=None, max_node_provision_time=None,
                     cluster_autoscaler_spec=None, manage_cluster_autoscaler=True, capacity_annotations=True,
                     sharing_keys=None, mig_configs=None, tolerations=None, inputs_only=False):
    """Errors, warnings and the objects to write for the wanted GPU MachineSets."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.plans import autoscaling
    return autoscaling.autoscaling_plan(
        machine_sets, existing_machine_sets=existing_machine_sets,
        existing_machine_autoscalers=existing_machine_autoscalers,
        existing_cluster_autoscaler=existing_cluster_autoscaler, namespace=namespace, gpu_limits=gpu_limits,
        resource_limits=resource_limits, scale_down=scale_down, max_node_provision_time=max_node_provision_time,
        cluster_autoscaler_spec=cluster_autoscaler_spec, manage_cluster_autoscaler=manage_cluster_autoscaler,
        capacity_annotations=capacity_annotations, sharing_keys=sharing_keys, mig_configs=mig_configs,
        tolerations=tolerations, inputs_only=inputs_only)


class FilterModule(object):
    """gpuops.gpu autoscaling filters."""

    def filters(self):
        return plain_filters({'autoscaling_plan': autoscaling_plan})
