# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters for installing and removing HAMi (gpuops.gpu.hami, and gpuops.gpu.reset for removal).

Thin wrapper: the logic lives in module_utils.plans.hami. Documentation is in hami_install_plan.yml and
hami_removal_plan.yml.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.gpuops.gpu.plugins.plugin_utils.filters import plain_filters


def hami_install_plan(config, cluster):
    """The nodes to label, the ClusterPolicy whose device plugin HAMi replaces, and every input problem."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.plans import hami as hami_plan
    if not isinstance(config, dict) or not isinstance(cluster, dict):
        raise AnsibleFilterError('hami_install_plan: expects the settings and the cluster as mappings')
    return hami_plan.install_plan(config, cluster)


def hami_removal_plan(nodes, policies, pods, namespace, release, node_label, release_info=None, selected=None,
                      policy_name='', restore_device_plugin=True, with_pods=False):
    """Nodes to unlabel (from the release's record), the ClusterPolicy patch, pods in the way and errors."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.plans import hami as hami_plan
    if not isinstance(nodes, list) or not isinstance(policies, list) or not isinstance(pods, list):
        raise AnsibleFilterError('hami_removal_plan: expects the lists of Node, ClusterPolicy and Pod objects')
    if not isinstance(release_info or {}, dict) or not isinstance(selected or [], list):
        raise AnsibleFilterError('hami_removal_plan: release_info must be the release helm_info read (a mapping), '
                                 'selected a list of node names')
    return hami_plan.removal_plan(nodes, policies, pods, namespace, release, node_label,
                                  release_info=release_info or {}, selected=selected or [], policy_name=policy_name,
                                  restore_device_plugin=bool(restore_device_plugin), with_pods=bool(with_pods))


class FilterModule(object):
    """gpuops.gpu HAMi filters."""

    def filters(self):
        return plain_filters({'hami_install_plan': hami_install_plan, 'hami_removal_plan': hami_removal_plan})
