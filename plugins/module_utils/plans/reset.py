# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the gpuops.gpu.reset role has to do, decided from what it read. Pure, no I/O.

Back to "MIG disabled, unshared, the operator's default configs": which nodes need a MIG
rollout to ``all-disabled``, which need a sharing rollout to unshared, which keep a stale
``nvidia.com/device-plugin.config`` label, how the ClusterPolicy is patched, which ConfigMaps may
be deleted (only those labelled ``app.kubernetes.io/managed-by=gpuops.gpu``), and everything that
makes the reset unsafe - before anything is written.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import node as gn
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.tolerations import type_name

MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by'
MANAGED_BY = 'gpuops.gpu'
DEFAULT_MIG_CONFIG_MAP = 'default-mig-parted-config'
MIG_DISABLED = 'all-disabled'
ANN_TARGET = 'gpuops.gpu/rollout-target'
OPTION_DEFAULTS = {'mig': True, 'sharing': True, 'cluster_policy': True, 'config_maps': True}


def _meta(obj):
    return (obj or {}).get('metadata') or {}


def _labels(obj):
    return _meta(obj).get('labels') or {}


def _target(node):
    return (_meta(node).get('annotations') or {}).get(ANN_TARGET, '')


def _int(value, default=1):
    try:
        return int(str(value))
    except ValueError:
        return default


def needs_mig_reset(node):
    """A MIG config other than all-disabled, a state that is not success, or a gpuops MIG rollout left
    unfinished (its node may still be cordoned)."""
    labels = _labels(node)
    if _target(node).startswith(gn.LABEL_MIG_CONFIG + '='):
        return True
    if gn.LABEL_MIG_CONFIG not in labels:
        return False
    return labels[gn.LABEL_MIG_CONFIG] != MIG_DISABLED or labels.get(gn.LABEL_MIG_STATE) != 'success'


def is_shared(node):
    labels = _labels(node)
    return _int(labels.get(gn.LABEL_REPLICAS, '1')) > 1 or labels.get(gn.LABEL_SHARING, 'none') not in ('', 'none')


def needs_sharing_reset(node):
    return (gn.LABEL_DP_CONFIG in _labels(node) or is_shared(node)
            or _target(node).startswith(gn.LABEL_DP_CONFIG + '='))


def _is_managed(obj):
    return _labels(obj).get(MANAGED_BY_LABEL) == MANAGED_BY


def reset_plan(nodes, policies, config_maps, scope=None, wanted=None, options=None):
    """Decide the reset.

    ``nodes``: every Node (objects). ``policies``: the ClusterPolicy objects read (one, or none).
    ``config_maps``: the ConfigMaps of the operator namespace. ``scope``: names of the nodes to reset
    (None = every GPU node). ``wanted``: node names the user listed (checked to exist).
    ``options``: {mig, sharing, cluster_policy, config_maps} booleans.
    """
    opts = dict(OPTION_DEFAULTS)
    opts.update(options or {})
    errors, notes = [], []
    nodes = [n for n in (nodes or []) if isinstance(n, dict) and _meta(n).get('name')]
    by_name = dict((_meta(n)['name'], n) for n in nodes)
    gpu_names = sorted(name for name, n in by_name.items() if gn.is_gpu_node(n) or needs_mig_reset(n)
                       or needs_sharing_reset(n))
    missing = sorted(set(wanted or []) - set(by_name))
    if missing:
        errors.append('reset_nodes: node(s) not found: %s' % ', '.join(missing))
    if not isinstance(policies, list):
        errors.append('the ClusterPolicies must be a list, got %s' % type_name(policies))
        policies = []
    if len(policies) > 1:
        errors.append('more than one ClusterPolicy (%s); set reset_cluster_policy_name'
                      % ', '.join(sorted(_meta(p).get('name', '?') for p in policies)))
    policy = policies[0] if len(policies) == 1 else None
    spec = (policy or {}).get('spec') or {}
    mig_cm = ((spec.get('migManager') or {}).get('config') or {}).get('name') or ''
    plugin = spec.get('devicePlugin') or {}
    dp_config = plugin.get('config') or {}
    dp_cm, dp_default = dp_config.get('name') or '', dp_config.get('default') or ''
    cms = dict((_meta(c).get('name'), c) for c in (config_maps or []) if _meta(c).get('name'))

    in_scope = sorted(set(gpu_names if scope is None else [s for s in scope if s in by_name]))
    mig_nodes = [n for n in in_scope if needs_mig_reset(by_name[n])] if opts['mig'] else []
    share_nodes = [n for n in in_scope if needs_sharing_reset(by_name[n])] if opts['sharing'] else []

    run_sharing = bool(share_nodes) and policy is not None and bool(dp_cm)
    if share_nodes and run_sharing and plugin.get('enabled') is False:
        notes.append('the ClusterPolicy has devicePlugin.enabled=false (HAMi or another device plugin?): the NVIDIA '
                     'device plugin shares nothing; only the %s labels are removed' % gn.LABEL_DP_CONFIG)
        run_sharing = False
    if share_nodes and run_sharing and dp_cm not in cms:
        notes.append('the device-plugin ConfigMap %s named by the ClusterPolicy does not exist: nothing can be shared '
                     'through it; only the %s labels are removed' % (dp_cm, gn.LABEL_DP_CONFIG))
        run_sharing = False

    policy_patch = {}
    remove_mig_config = bool(mig_cm) and mig_cm != DEFAULT_MIG_CONFIG_MAP and opts['mig']
    remove_dp_config = bool(dp_cm or dp_default) and opts['sharing']
    if opts['cluster_policy'] and policy is not None:
        if remove_mig_config:
            policy_patch['migManager'] = {'config': None}
        if remove_dp_config:
            policy_patch['devicePlugin'] = {'config': None}
        if policy_patch:
            outside = [n for n in gpu_names if n not in in_scope]
            users = []
            for name in outside:
                labels = _labels(by_name[name])
                if remove_mig_config and labels.get(gn.LABEL_MIG_CONFIG, MIG_DISABLED) != MIG_DISABLED:
                    users.append('%s (%s=%s)' % (name, gn.LABEL_MIG_CONFIG, labels[gn.LABEL_MIG_CONFIG]))
                if remove_dp_config and (labels.get(gn.LABEL_DP_CONFIG) or is_shared(by_name[name])):
                    users.append('%s (%s=%s)' % (name, gn.LABEL_DP_CONFIG, labels.get(gn.LABEL_DP_CONFIG, '<default>')))
            if users:
                errors.append('reset_cluster_policy would remove the custom configs that GPU nodes outside the reset still '
                              'use: %s; include them (reset_nodes / reset_node_selector) or set reset_cluster_policy: '
                              'false' % ', '.join(users))
    # nodes following a sharing default: the default is cleared first (their device plugin restarts unshared)
    default_patch = {'devicePlugin': {'config': {'default': ''}}} if run_sharing and dp_default else {}

    delete, kept = [], []
    if opts['cluster_policy'] and opts['config_maps'] and policy is not None:
        for name, wanted_removed in ((mig_cm, remove_mig_config), (dp_cm, remove_dp_config and bool(dp_cm))):
            if not wanted_removed or name not in cms:
                continue
            if _is_managed(cms[name]):
                delete.append(name)
            else:
                kept.append(name)
                notes.append('ConfigMap %s was not created by gpuops.gpu (no label %s=%s): left in place'
                             % (name, MANAGED_BY_LABEL, MANAGED_BY))
    labelled = [n for n in in_scope if gn.LABEL_DP_CONFIG in _labels(by_name[n])] if opts['sharing'] else []
    # after the sharing rollout a node may keep a label naming an unshared profile; it goes once the
    # ClusterPolicy no longer names a device-plugin ConfigMap (or when there is none)
    label_cleanup = labelled if (not dp_cm or 'devicePlugin' in policy_patch or not run_sharing) else []
    if errors:
        return {'errors': errors, 'notes': notes, 'scope': in_scope, 'mig_nodes': [], 'sharing_nodes': [],
                'run_sharing': False, 'label_cleanup': [], 'policy': _meta(policy).get('name'), 'policy_patch': {},
                'default_patch': {}, 'config_maps_delete': [], 'config_maps_kept': kept}
    return {'errors': [], 'notes': notes, 'scope': in_scope, 'mig_nodes': mig_nodes, 'sharing_nodes': share_nodes,
            'run_sharing': run_sharing, 'label_cleanup': label_cleanup, 'policy': _meta(policy).get('name'),
            'policy_patch': policy_patch, 'default_patch': default_patch, 'config_maps_delete': delete,
            'config_maps_kept': kept}


def reset_pending(nodes, plan):
    """What still differs from the reset's goal on the nodes in ``plan['scope']`` ('node: reason' strings,
    empty when done): a MIG config other than all-disabled/success, shared GPUs, a device-plugin label
    that was to be removed, a node cordoned by a gpuops.gpu rollout."""
    plan = plan or {}
    scope = set(plan.get('scope') or [])
    mig = set(plan.get('mig_nodes') or [])
    sharing = set(plan.get('sharing_nodes') or [])
    cleanup = set(plan.get('label_cleanup') or [])
    pending = []
    for node in nodes or []:
        name = _meta(node).get('name')
        if name not in scope:
            continue
        labels = _labels(node)
        if name in mig and needs_mig_reset(node):
            pending.append('%s: %s=%s, state %s' % (name, gn.LABEL_MIG_CONFIG, labels.get(gn.LABEL_MIG_CONFIG),
                                                    labels.get(gn.LABEL_MIG_STATE)))
        if name in sharing and is_shared(node):
            pending.append('%s: shared (%s=%s, %s=%s)' % (name, gn.LABEL_REPLICAS, labels.get(gn.LABEL_REPLICAS),
                                                          gn.LABEL_SHARING, labels.get(gn.LABEL_SHARING)))
        if name in cleanup and gn.LABEL_DP_CONFIG in labels:
            pending.append('%s: still labelled %s' % (name, gn.LABEL_DP_CONFIG))
        if (_meta(node).get('annotations') or {}).get('gpuops.gpu/cordoned-by-rollout') == 'true':
            pending.append('%s: still cordoned by a gpuops.gpu rollout' % name)
    return pending
