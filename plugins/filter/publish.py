# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Publishing filters: thin wrappers over module_utils.plans.publish.

Documentation is in the sidecar file publish_errors.yml.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.plugin_utils.filters import filter_errors, plain_filters


@filter_errors
def publish_errors(target, option, kind='ConfigMap', data=None, existing=None):
    """Why ``data`` may not be written into the ConfigMap or Secret ``target`` names ([] when it may)."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.plans import publish
    return publish.publish_errors(target, option, kind, data, existing)


class FilterModule(object):
    """gpuops.gpu publishing filters."""

    def filters(self):
        return plain_filters({
            'publish_errors': publish_errors,
        })
