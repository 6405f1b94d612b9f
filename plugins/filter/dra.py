# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters for Dynamic Resource Allocation: the plans of the dra role's DRA resources as code, of its GPUCluster and
of NVIDIA's DRA driver chart.

Thin wrappers over module_utils.plans.dra_resources, module_utils.plans.gpucluster and module_utils.plans.dra_driver;
documentation in dra_resources_plan.yml, dra_gpucluster_plan.yml and dra_driver_plan.yml.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.plugin_utils.filters import plain_filters


def dra_resources_plan(inputs, namespaces, selected=None, existing=None, served=True):
    """DeviceClasses, ResourceClaimTemplates and ResourceQuotas to apply and delete, errors and warnings."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.plans import dra_resources
    names = [n['metadata']['name'] if isinstance(n, dict) and isinstance(n.get('metadata'), dict) else n
             for n in (namespaces or [])]
    return dra_resources.resources_plan(inputs, names, selected=selected, existing=existing, served=served)


def dra_gpucluster_plan(config, reads):
    """The GPU operator's GPUCluster singleton to apply, and every reason not to."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.plans import gpucluster
    return gpucluster.gpucluster_plan(config, reads)


def dra_driver_plan(config, reads, mirror_result=None):
    """The DRA driver chart's Helm values, and every reason not to install it."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.plans import dra_driver
    return dra_driver.driver_plan(config, reads, mirror_result)


class FilterModule(object):
    """gpuops.gpu DRA filters."""

    def filters(self):
        return plain_filters({
            'dra_resources_plan': dra_resources_plan,
            'dra_gpucluster_plan': dra_gpucluster_plan,
            'dra_driver_plan': dra_driver_plan,
        })
