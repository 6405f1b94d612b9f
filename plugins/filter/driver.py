# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters for the gpu_operator role's driver settings: ClusterPolicy fields of the typed settings and
the NVIDIADriver objects of the driver pools.

Thin wrappers over module_utils.plans.driver; documentation in gpu_driver_overrides.yml and
gpu_driver_pool_plan.yml.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.gpuops.gpu.plugins.plugin_utils.filters import plain_filters


def gpu_driver_overrides(variables):
    """ClusterPolicy spec fields of the gpu_operator role's typed driver settings."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.plans import driver as driver_plan
    from ansible_collections.gpuops.gpu.plugins.module_utils.plans.install import driver_settings
    if not isinstance(variables, dict):
        raise AnsibleFilterError('gpu_driver_overrides: the input must be a mapping of role variables')
    return driver_plan.driver_overrides(driver_settings(variables))


def gpu_driver_pool_plan(variables, nodes=None, existing=None, crd=None):
    """NVIDIADriver documents of the pools, the NVIDIADrivers of removed pools, and every error
    ({'documents', 'deletions', 'errors'})."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.plans import driver as driver_plan
    from ansible_collections.gpuops.gpu.plugins.module_utils.plans.install import driver_settings
    if not isinstance(variables, dict):
        raise AnsibleFilterError('gpu_driver_pool_plan: the input must be a mapping of role variables')
    settings = driver_settings(variables)
    return driver_plan.pool_plan(settings.get('pools') or [], settings, nodes, existing, crd or None)


class FilterModule(object):
    """gpuops.gpu driver filters."""

    def filters(self):
        return plain_filters({'gpu_driver_overrides': gpu_driver_overrides,
                              'gpu_driver_pool_plan': gpu_driver_pool_plan})
