# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters for installing and removing HAMi (gpuops.gpu.hami, and gpuops.gpu.reset for removal).

Thin wrapper: the logic lives in module_utils.plans.hami. Documentation is in hami_install_plan.yml,
hami_removal_plan.yml and hami_releases.yml.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.gpu.plugins.module_utils.plans import hami as hami_plan


def hami_install_plan(config, cluster):
    """The nodes to label, the ClusterPolicy whose device plugin HAMi replaces, and every input problem."""
    if not isinstance(config, dict) or not isinstance(cluster, dict):
        raise AnsibleFilterError('hami_install_plan: expects the settings and the cluster as mappings')
    return hami_plan.install_plan(config, cluster)


def hami_removal_plan(nodes, policies, pods, namespace, release, node_label, policy_name='',
                      restore_device_plugin=True, with_pods=False):
    """Nodes to unlabel, the ClusterPolicy patch, pods in the way and errors, before any write."""
    if not isinstance(nodes, list) or not isinstance(policies, list) or not isinstance(pods, list):
        raise AnsibleFilterError('hami_removal_plan: expects the lists of Node, ClusterPolicy and Pod objects')
    return hami_plan.removal_plan(nodes, policies, pods, namespace, release, node_label, policy_name=policy_name,
                                  restore_device_plugin=bool(restore_device_plugin), with_pods=bool(with_pods))


def hami_releases(nodes):
    """{'<namespace>/<release>': [node names]} of the HAMi releases gpuops.gpu.hami labelled nodes for."""
    if not isinstance(nodes, list):
        raise AnsibleFilterError('hami_releases: expects the list of Node objects')
    return hami_plan.marked_releases(nodes)


class FilterModule(object):
    """gpuops.gpu HAMi filters."""

    def filters(self):
        return {'hami_install_plan': hami_install_plan, 'hami_removal_plan': hami_removal_plan,
                'hami_releases': hami_releases}
