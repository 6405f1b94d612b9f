# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter for vGPU licensing: validation, gridd.conf and the ClusterPolicy patch.

Thin wrapper over module_utils.plans.vgpu; documentation in vgpu_plan.yml.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.gpuops.gpu.plugins.plugin_utils.filters import plain_filters


def vgpu_plan(config, cluster=None):
    """Errors, warnings, gridd.conf and ClusterPolicy patch for the vgpu role."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.plans import vgpu as vgpu_licensing
    if not isinstance(config, dict):
        raise AnsibleFilterError('vgpu_plan: the input must be a mapping of settings')
    return vgpu_licensing.vgpu_plan(config, cluster)


class FilterModule(object):
    """gpuops.gpu vGPU filters."""

    def filters(self):
        return plain_filters({'vgpu_plan': vgpu_plan})
