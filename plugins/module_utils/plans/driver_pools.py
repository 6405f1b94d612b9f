# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A driver upgrade of one NVIDIADriver (one pool of nodes) through the GPU operator. Pure, no I/O.

With the ClusterPolicy's ``driver.useNvidiaDriverCRD: true`` the operator deploys the driver from NVIDIADriver
objects, one DaemonSet (per OS version) for each, owned by it; its upgrade controller then follows the driver
pods labelled ``app.kubernetes.io/component=nvidia-driver`` through the same node states, with the
ClusterPolicy's ``driver.upgradePolicy``, and scales ``maxUnavailable`` on every node it manages, all pools
together (gpu-operator controllers/upgrade_controller.go; docs/facts.md, "Driver upgrades through the
operator"). So one pool is upgraded by setting its NVIDIADriver's ``version`` (``repository``, ``image``), the
policy staying on the ClusterPolicy: ``plan`` narrows the request to the pool's driver pods and hands it to
plans/driver_upgrade.py, then splits the patch between the two objects.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy

from ansible_collections.gpuops.gpu.plugins.module_utils.common.objects import meta_of, name_of
from ansible_collections.gpuops.gpu.plugins.module_utils.plans import driver_upgrade as du

KIND = 'NVIDIADriver'
TARGET_KEYS = ('version', 'repository', 'image')


def uses_nvidia_drivers(policy_obj):
    return bool((((policy_obj or {}).get('spec') or {}).get('driver') or {}).get('useNvidiaDriverCRD'))


def _owned_by(obj, kind, names):
    return any(o.get('kind') == kind and o.get('name') in names for o in meta_of(obj).get('ownerReferences') or [])


def pool_pods(pods, daemonsets, pool):
    """``pods`` less the driver pods of the other NVIDIADrivers: a driver pod is the pool's when its DaemonSet
    is owned by the NVIDIADriver ``pool`` (the pods carry no name of it)."""
    owned = set(name_of(d) for d in daemonsets or [] if _owned_by(d, KIND, (pool,)))
    return [p for p in pods or [] if not du.is_driver_pod(p) or _owned_by(p, 'DaemonSet', owned)]


def selection_errors(policy_obj, pool, nvidia_drivers):
    """Why ``pool`` (an NVIDIADriver name, or None) cannot be what this run upgrades."""
    names = sorted(name_of(d) for d in nvidia_drivers or [])
    policy = name_of(policy_obj)
    if uses_nvidia_drivers(policy_obj) and not pool:
        return ['ClusterPolicy %s has driver.useNvidiaDriverCRD: true, so the drivers are NVIDIADriver objects, one '
                'per pool: give driver_pool, the NVIDIADriver to upgrade (one pool at a time): %s'
                % (policy, ', '.join(names) or 'the cluster has none')]
    if pool and not uses_nvidia_drivers(policy_obj):
        return ['driver_pool %s: ClusterPolicy %s does not deploy the driver from NVIDIADriver objects '
                '(driver.useNvidiaDriverCRD is not true); leave driver_pool out to upgrade its driver' % (pool, policy)]
    if pool and pool not in names:
        return ['driver_pool %s: no NVIDIADriver of that name; the cluster has %s' % (pool, ', '.join(names) or 'none')]
    return []


def pool_request(request, pool):
    """The request of plans/driver_upgrade.py for one pool: the NVIDIADriver's spec in the ClusterPolicy's
    ``driver`` (with the ClusterPolicy's ``upgradePolicy``), its own driver pods only, and every node the operator
    manages counted for the parallelism."""
    nvidia_driver = next(d for d in request.get('nvidia_drivers') or [] if name_of(d) == pool)
    policy = copy.deepcopy(request['cluster_policy'])
    current = policy['spec']['driver']
    spec = nvidia_driver.get('spec') or {}
    policy['spec']['driver'] = dict((k, v) for k, v in spec.items() if k in TARGET_KEYS + ('usePrecompiled',))
    policy['spec']['driver'].update(upgradePolicy=current.get('upgradePolicy') or {}, enabled=current.get('enabled'))
    out = dict(request, cluster_policy=policy, pods=pool_pods(request.get('pods'), request.get('daemonsets'), pool))
    out['managed_nodes'] = len(du.driver_pods_by_node(request.get('pods')))
    return out


def split_patch(patch):
    """``(ClusterPolicy patch, NVIDIADriver spec patch)`` from the plan's ``{'driver': {...}}``: the policy stays
    on the ClusterPolicy, the target goes to the NVIDIADriver."""
    driver = dict((patch or {}).get('driver') or {})
    target = dict((k, driver.pop(k)) for k in TARGET_KEYS if k in driver)
    return ({'driver': driver} if driver else {}), target


def plan(request, pool=None):
    """plans/driver_upgrade.py ``plan``, of the ClusterPolicy's driver or, with ``pool``, of that NVIDIADriver.
    ``request`` adds ``nvidia_drivers`` and ``daemonsets`` (the driver DaemonSets) to that of driver_upgrade.
    The result adds ``driver_pool`` and ``driver_patch`` (the NVIDIADriver spec patch, {} without a pool)."""
    policy_obj = request.get('cluster_policy')
    errors = selection_errors(policy_obj, pool, request.get('nvidia_drivers')) if policy_obj else []
    if errors:
        out = du.empty_plan(errors)
    elif pool and policy_obj:
        out = du.plan(pool_request(request, pool))
        out['patch'], out['driver_patch'] = split_patch(out['patch'])
        out['changes'] = not out['errors'] and bool(out['upgrade'] or out['patch'] or out['driver_patch'])
    else:
        out = du.plan(request)
    out.setdefault('driver_patch', {})
    out['driver_pool'] = pool
    return out


def plan_lines(result):
    """plans/driver_upgrade.py ``plan_lines``, with the NVIDIADriver's target."""
    lines = du.plan_lines(result)
    if result.get('driver_patch') and not result['errors']:
        lines.append('NVIDIADriver %s: set %s' % (result['driver_pool'], du.flat(result['driver_patch'], 'spec')))
    return lines
