# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the gpuops.gpu.reset role has to do, decided from what it read. Pure, no I/O.

Back to "MIG disabled, unshared, the operator's default configs": which nodes need a MIG
rollout to ``all-disabled``, which need a sharing rollout to unshared, which keep a stale
``nvidia.com/device-plugin.config`` label, how the ClusterPolicy is patched, which ConfigMaps may
be deleted (only those labelled ``app.kubernetes.io/managed-by=gpuops.gpu``), whether the HAMi release
it was told about is removed (``plans.hami.reset_release_plan``: from the release's own record, never
from node annotations), and everything that makes the reset unsafe - before anything is written.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import as_number, type_name
from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import (
    ANN_CORDONED_BY_ROLLOUT, ANN_ROLLOUT_TARGET, DEFAULT_MIG_CONFIG_MAP, LABEL_DP_CONFIG, LABEL_MANAGED_BY,
    LABEL_MIG_CONFIG, LABEL_MIG_STATE, LABEL_REPLICAS, LABEL_SHARING, MANAGED_BY, is_managed)
from ansible_collections.gpuops.gpu.plugins.module_utils.common.objects import annotations_of, labels_of, meta_of, name_of
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.node import is_gpu_node
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.cluster_policy import select_policy
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.hami import reset_release_plan

MIG_DISABLED = 'all-disabled'
OPTION_DEFAULTS = {'mig': True, 'sharing': True, 'cluster_policy': True, 'config_maps': True}


def _target(node):
    return annotations_of(node).get(ANN_ROLLOUT_TARGET, '')


def needs_mig_reset(node):
    """A MIG config other than all-disabled, a state that is not success, or a gpuops MIG rollout left
    unfinished (its node may still be cordoned)."""
    labels = labels_of(node)
    if _target(node).startswith(LABEL_MIG_CONFIG + '='):
        return True
    if LABEL_MIG_CONFIG not in labels:
        return False
    return labels[LABEL_MIG_CONFIG] != MIG_DISABLED or labels.get(LABEL_MIG_STATE) != 'success'


def is_shared(node):
    labels = labels_of(node)
    return as_number(labels.get(LABEL_REPLICAS, '1'), int, 1) > 1 or labels.get(LABEL_SHARING, 'none') not in ('', 'none')


def needs_sharing_reset(node):
    return (LABEL_DP_CONFIG in labels_of(node) or is_shared(node)
            or _target(node).startswith(LABEL_DP_CONFIG + '='))


def reset_plan(nodes, policies, config_maps, scope=None, wanted=None, options=None, hami=None):
    """Decide the reset.

    ``nodes``: every Node (objects). ``policies``: the ClusterPolicy objects read (one, or none).
    ``config_maps``: the ConfigMaps of the operator namespace. ``scope``: names of the nodes to reset
    (None = every GPU node). ``wanted``: node names the user listed (checked to exist).
    ``options``: {mig, sharing, cluster_policy, config_maps} booleans. ``hami``: None (leave HAMi alone)
    or {namespace, release, release_info, plugin_pods}: the HAMi release the reset was told about, as
    kubernetes.core.helm_info read it, and HAMi's device-plugin pods read in its namespace.
    """
    opts = dict(OPTION_DEFAULTS)
    opts.update(options or {})
    errors, notes = [], []
    by_name = dict((name_of(n), n) for n in (nodes or []) if isinstance(n, dict) and name_of(n))
    gpu_names = sorted(name for name, n in by_name.items() if is_gpu_node(n) or needs_mig_reset(n)
                       or needs_sharing_reset(n))
    missing = sorted(set(wanted or []) - set(by_name))
    if missing:
        errors.append('reset_nodes: node(s) not found: %s' % ', '.join(missing))
    if not isinstance(policies, list):
        errors.append('the ClusterPolicies must be a list, got %s' % type_name(policies))
        policies = []
    policy, _matching, policy_errors = select_policy(policies, '', False, 'reset_cluster_policy_name')
    errors.extend(policy_errors)
    configs = _policy_configs(policy, opts)
    cms = dict((name_of(c), c) for c in (config_maps or []) if name_of(c))

    in_scope = sorted(set(gpu_names if scope is None else [s for s in scope if s in by_name]))
    mig_nodes = [n for n in in_scope if needs_mig_reset(by_name[n])] if opts['mig'] else []
    share_nodes = [n for n in in_scope if needs_sharing_reset(by_name[n])] if opts['sharing'] else []
    run_sharing = _can_run_sharing(share_nodes, policy, configs, cms, notes)
    policy_patch = {}
    if opts['cluster_policy'] and policy is not None:
        policy_patch = _policy_patch(configs)
        outside = [by_name[n] for n in gpu_names if n not in in_scope]
        errors.extend(_outside_users_errors(outside, configs) if policy_patch else [])
    # nodes following a sharing default: the default is cleared first (their device plugin restarts unshared)
    default_patch = {'devicePlugin': {'config': {'default': ''}}} if run_sharing and configs['dp_default'] else {}
    delete, kept = [], []
    if opts['cluster_policy'] and opts['config_maps'] and policy is not None:
        delete, kept = _config_maps_to_delete(configs, cms, notes)
    hami_release = ''
    if hami is not None:
        hami_plan = reset_release_plan(hami.get('release_info'), hami.get('namespace'), hami.get('release'),
                                       hami.get('plugin_pods'), nodes, in_scope)
        errors.extend(hami_plan['errors'])
        hami_release = hami_plan['release']
    errors.extend(_device_plugin_off_errors(policy, mig_nodes, hami_release))
    labelled = [n for n in in_scope if LABEL_DP_CONFIG in labels_of(by_name[n])] if opts['sharing'] else []
    # after the sharing rollout a node may keep a label naming an unshared profile; it goes once the
    # ClusterPolicy no longer names a device-plugin ConfigMap (or when there is none)
    label_cleanup = labelled if (not configs['dp_cm'] or 'devicePlugin' in policy_patch or not run_sharing) else []
    ok = not errors  # with errors nothing may be written
    return {'errors': errors, 'notes': notes, 'scope': in_scope, 'mig_nodes': mig_nodes if ok else [],
            'sharing_nodes': share_nodes if ok else [], 'run_sharing': run_sharing and ok,
            'label_cleanup': label_cleanup if ok else [], 'policy': name_of(policy),
            'policy_patch': policy_patch if ok else {}, 'default_patch': default_patch if ok else {},
            'config_maps_delete': delete if ok else [], 'config_maps_kept': kept,
            'hami_release': hami_release if ok else ''}


def _device_plugin_off_errors(policy, nodes, hami_release):
    """The rollback of ``nodes`` is verified by the GPUs the operator's device plugin advertises: with that device
    plugin switched off (HAMi, or by hand) and no HAMi removal in this reset to switch it back on, it could never
    be, and the nodes would stay cordoned."""
    if not nodes or hami_release or policy is None:
        return []
    if ((policy.get('spec') or {}).get('devicePlugin') or {}).get('enabled', True) is not False:
        return []
    return ["the GPU operator's device plugin is switched off in ClusterPolicy %s (spec.devicePlugin.enabled: false), "
            'so the MIG rollback of %s could not be verified and the nodes would stay cordoned. If HAMi runs here, name its '
            'release with reset_hami_namespace and reset_hami_release_name (and keep reset_hami on); otherwise switch '
            'the device plugin back on first' % (name_of(policy), ', '.join(nodes))]


def _policy_configs(policy, opts):
    """The custom configs the ClusterPolicy names, and which of them the reset removes."""
    spec = (policy or {}).get('spec') or {}
    plugin = spec.get('devicePlugin') or {}
    dp_config = plugin.get('config') or {}
    configs = {'mig_cm': ((spec.get('migManager') or {}).get('config') or {}).get('name') or '',
               'plugin_enabled': plugin.get('enabled'),
               'dp_cm': dp_config.get('name') or '', 'dp_default': dp_config.get('default') or ''}
    configs['remove_mig'] = bool(configs['mig_cm']) and configs['mig_cm'] != DEFAULT_MIG_CONFIG_MAP and opts['mig']
    configs['remove_dp'] = bool(configs['dp_cm'] or configs['dp_default']) and opts['sharing']
    return configs


def _can_run_sharing(share_nodes, policy, configs, cms, notes):
    """Whether a sharing rollout to unshared can run (else only the device-plugin labels go)."""
    if not (share_nodes and policy is not None and configs['dp_cm']):
        return False
    if configs['plugin_enabled'] is False:
        notes.append('the ClusterPolicy has devicePlugin.enabled=false (HAMi or another device plugin?): the NVIDIA '
                     'device plugin shares nothing; only the %s labels are removed' % LABEL_DP_CONFIG)
        return False
    if configs['dp_cm'] not in cms:
        notes.append('the device-plugin ConfigMap %s named by the ClusterPolicy does not exist: nothing can be shared '
                     'through it; only the %s labels are removed' % (configs['dp_cm'], LABEL_DP_CONFIG))
        return False
    return True


def _policy_patch(configs):
    patch = {}
    if configs['remove_mig']:
        patch['migManager'] = {'config': None}
    if configs['remove_dp']:
        patch['devicePlugin'] = {'config': None}
    return patch


def _outside_users_errors(outside, configs):
    """The nodes outside the reset that still use a custom config the policy patch would remove."""
    users = []
    for node in outside:
        name, labels = meta_of(node)['name'], labels_of(node)
        if configs['remove_mig'] and labels.get(LABEL_MIG_CONFIG, MIG_DISABLED) != MIG_DISABLED:
            users.append('%s (%s=%s)' % (name, LABEL_MIG_CONFIG, labels[LABEL_MIG_CONFIG]))
        if configs['remove_dp'] and (labels.get(LABEL_DP_CONFIG) or is_shared(node)):
            users.append('%s (%s=%s)' % (name, LABEL_DP_CONFIG, labels.get(LABEL_DP_CONFIG, '<default>')))
    if not users:
        return []
    return ['reset_cluster_policy would remove the custom configs that GPU nodes outside the reset still use: %s; '
            'include them (reset_nodes / reset_node_selector) or set reset_cluster_policy: false' % ', '.join(users)]


def _config_maps_to_delete(configs, cms, notes):
    """(delete, kept): the removed custom ConfigMaps that gpuops.gpu created, and the others."""
    delete, kept = [], []
    for name, removed in ((configs['mig_cm'], configs['remove_mig']),
                          (configs['dp_cm'], configs['remove_dp'] and bool(configs['dp_cm']))):
        if not removed or name not in cms:
            continue
        if is_managed(labels_of(cms[name])):
            delete.append(name)
        else:
            kept.append(name)
            notes.append('ConfigMap %s was not created by gpuops.gpu (no label %s=%s): left in place'
                         % (name, LABEL_MANAGED_BY, MANAGED_BY))
    return delete, kept


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
        name = name_of(node)
        if name not in scope:
            continue
        labels = labels_of(node)
        if name in mig and needs_mig_reset(node):
            pending.append('%s: %s=%s, state %s' % (name, LABEL_MIG_CONFIG, labels.get(LABEL_MIG_CONFIG),
                                                    labels.get(LABEL_MIG_STATE)))
        if name in sharing and is_shared(node):
            pending.append('%s: shared (%s=%s, %s=%s)' % (name, LABEL_REPLICAS, labels.get(LABEL_REPLICAS),
                                                          LABEL_SHARING, labels.get(LABEL_SHARING)))
        if name in cleanup and LABEL_DP_CONFIG in labels:
            pending.append('%s: still labelled %s' % (name, LABEL_DP_CONFIG))
        if annotations_of(node).get(ANN_CORDONED_BY_ROLLOUT) == 'true':
            pending.append('%s: still cordoned by a gpuops.gpu rollout' % name)
    return pending
