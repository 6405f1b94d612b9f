# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Ownership filters: thin wrappers over module_utils.common.ownership.

Documentation is in the sidecar file configmap_write_errors.yml.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.plugin_utils.filters import plain_filters


def configmap_write_errors(name, option, namespace='', existing=None):
    """Why the collection may not write the ConfigMap ``name`` ([] when it may)."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.common import ownership
    return ownership.configmap_write_errors(name, option, namespace, existing)


class FilterModule(object):
    """gpuops.gpu ownership filters."""

    def filters(self):
        return plain_filters({
            'configmap_write_errors': configmap_write_errors,
        })
