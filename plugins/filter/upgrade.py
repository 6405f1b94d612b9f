# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters of the upgrade role: the plan from what the role read, and the driver upgrade state of the nodes.

Thin wrappers over module_utils.plans.upgrade; documentation in upgrade_plan.yml and driver_upgrade_states.yml.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.gpuops.gpu.plugins.plugin_utils.filters import plain_filters


def _resources(result):
    """The objects of one k8s_info result (a loop item's), [] when skipped or absent."""
    if not isinstance(result, dict):
        return []
    return [r for r in result.get('resources') or [] if isinstance(r, dict)]


def _operator(op, index, reads):
    def item(key):
        results = reads.get(key) or []
        return results[index] if index < len(results) else {}
    subs = _resources(item('subscriptions'))
    manifests = item('package_manifests')
    sub = subs[0] if subs else None
    source = ((sub or {}).get('spec') or {}).get('source')
    return dict(op, subscription=sub, install_plans=_resources(item('install_plans')),
                operator_groups=_resources(item('operator_groups')), csvs=_resources(item('csvs')),
                package_api=bool(manifests.get('api_found')) if isinstance(manifests, dict) else False,
                manifest=next((m for m in _resources(manifests)
                               if m['metadata'].get('name') == op['package']
                               and (m['metadata'].get('labels') or {}).get('catalog', source) == source), None))


def upgrade_plan(reads):
    """The upgrade's plan (module_utils.plans.upgrade.upgrade_plan) from the role's k8s_info results."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.plans import upgrade
    if not isinstance(reads, dict) or not isinstance(reads.get('operators'), list):
        raise AnsibleFilterError('upgrade_plan: expects a mapping with the list operators')
    try:
        operators = [_operator(op, i, reads) for i, op in enumerate(reads['operators'])]
        lock = reads.get('lock')
        return upgrade.upgrade_plan({
            'operators': operators, 'cluster_policy': reads.get('cluster_policy') or {},
            'lock': lock.get('lock') if isinstance(lock, dict) else None, 'nodes': reads.get('nodes') or [],
            'driver_upgrade_policy': reads.get('driver_upgrade_policy')})
    except (KeyError, TypeError, ValueError) as exc:
        raise AnsibleFilterError('upgrade_plan: %s' % exc)


def driver_upgrade_states(nodes):
    """[{'node', 'state'}] of the nodes with the nvidia.com/gpu-driver-upgrade-state label."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.plans import upgrade
    if not isinstance(nodes, list):
        raise AnsibleFilterError('driver_upgrade_states: expects a list of Node objects')
    return upgrade.driver_upgrade_states(nodes)


class FilterModule(object):
    """gpuops.gpu upgrade filters."""

    def filters(self):
        return plain_filters({'upgrade_plan': upgrade_plan, 'driver_upgrade_states': driver_upgrade_states})
