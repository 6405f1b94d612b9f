# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""RBAC filters: check the rbac role's settings before it writes anything; fill the GPU operator namespace
into its manifests.

Thin wrapper: the logic lives in module_utils.plans.rbac. Documentation is in rbac_input_errors.yml and rbac_objects.yml.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.gpuops.gpu.plugins.plugin_utils.filters import plain_filters


def rbac_input_errors(settings):
    """Every problem with the rbac role's settings ([] when none)."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.plans import rbac
    if not isinstance(settings, dict):
        raise AnsibleFilterError('rbac_input_errors: expects the settings as a mapping')
    return rbac.input_errors(settings)


def rbac_objects(manifests, operator_namespace):
    """The rbac role's manifests with the GPU operator namespace filled in."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.plans import rbac
    if not isinstance(manifests, list) or not all(isinstance(m, dict) for m in manifests):
        raise AnsibleFilterError('rbac_objects: expects a list of manifests (mappings)')
    return rbac.with_operator_namespace(manifests, operator_namespace)


class FilterModule(object):
    """gpuops.gpu RBAC filters."""

    def filters(self):
        return plain_filters({'rbac_input_errors': rbac_input_errors, 'rbac_objects': rbac_objects})
