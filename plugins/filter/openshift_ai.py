# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters for the openshift_ai role: the profile kind and the profile plan.

Thin wrappers over module_utils.plans.openshift_ai; documentation in openshift_ai_kind.yml and
openshift_ai_plan.yml.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.plugin_utils.filters import filter_errors, plain_filters


@filter_errors
def openshift_ai_kind(kind, hardware_profile_v1_served=None):
    """The kind option resolved (auto), with its apiVersion, kind and CRD name."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.plans import openshift_ai
    return openshift_ai.profile_kind(kind, hardware_profile_v1_served)


def openshift_ai_plan(config, cluster=None):
    """Errors, the profiles to create or update and the ones to delete, for the openshift_ai role."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.plans import openshift_ai
    return openshift_ai.openshift_ai_plan(config, cluster)


class FilterModule(object):
    """gpuops.gpu OpenShift AI filters."""

    def filters(self):
        return plain_filters({
            'openshift_ai_kind': openshift_ai_kind,
            'openshift_ai_plan': openshift_ai_plan,
        })
