# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filter for the gpuops.gpu.uninstall role: what to remove, in which order, decided before anything is written.

Thin wrapper: the logic lives in module_utils.plans.uninstall. Documentation is in uninstall_plan.yml.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.gpuops.gpu.plugins.plugin_utils.filters import plain_filters


def uninstall_plan(inputs, found=None):
    """Errors, GPU workloads in the way, and the removal steps in order."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.plans import uninstall
    if not isinstance(inputs, dict) or (found is not None and not isinstance(found, dict)):
        raise AnsibleFilterError('uninstall_plan: expects the mapping of inputs and the mapping of objects read')
    return uninstall.uninstall_plan(inputs, found)


class FilterModule(object):
    """gpuops.gpu uninstall filter."""

    def filters(self):
        return plain_filters({'uninstall_plan': uninstall_plan})
