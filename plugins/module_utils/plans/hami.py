# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Installing and removing HAMi (gpuops.gpu.hami, and gpuops.gpu.reset for removal), decided from
what was read. Pure, no I/O.

Installing: every input problem is found before anything is written (:func:`install_plan`). HAMi's
device plugin advertises ``nvidia.com/gpu`` too, so the GPU operator's device plugin must be off
(ClusterPolicy ``devicePlugin.enabled: false``) on the HAMi nodes; the role switches it off only
when asked to.

Removing (:func:`removal_plan`): the hami role marks every node it labels with the annotations
``gpuops.gpu/hami-release: <namespace>/<release>`` and ``gpuops.gpu/hami-labels: <label keys>``;
removal takes those labels off those nodes only, so labels somebody else set stay. Pods still using
HAMi stop the removal before anything is written: pods that request HAMi's resources
(``nvidia.com/gpumem``, ``nvidia.com/gpumem-percentage``, ``nvidia.com/gpucores``) anywhere, and pods
that request GPU resources on a HAMi node (HAMi's device plugin serves them).

Both pick the ClusterPolicy with ``cluster_policy.select_policy`` (the same words as every role).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import (
    as_number, label_key_errors, label_value_errors, type_name)
from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import HAMI_RESOURCES
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import node as gn
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.cluster_policy import select_policy

ANN_RELEASE = 'gpuops.gpu/hami-release'
ANN_LABELS = 'gpuops.gpu/hami-labels'
POLICY_OPTION = 'hami_cluster_policy_name'


def _meta(obj):
    return (obj or {}).get('metadata') or {}


def device_plugin_enabled(policy):
    """Whether a ClusterPolicy runs the GPU operator's device plugin (``devicePlugin.enabled`` unset is on)."""
    return ((policy.get('spec') or {}).get('devicePlugin') or {}).get('enabled', True) is not False


def install_plan(config, cluster):
    """What installing HAMi does, and every problem that stops it before anything is written.

    ``config``: chart_ref, nodes, node_selector, node_label, device_split_count, device_memory_scaling,
    device_core_scaling, cluster_policy_name, disable_operator_device_plugin (the role's variables
    without the ``hami_`` prefix). ``cluster``: cluster_policies (as read), node_names (the nodes read:
    all of them when ``nodes`` is given, else those matching ``node_selector``).
    Returns ``{'errors', 'nodes', 'policy', 'disable_device_plugin'}``: the nodes to label, the
    ClusterPolicy whose device plugin HAMi replaces (None without a GPU operator), and whether the
    role switches that device plugin off.
    """
    errors = []
    if not config.get('chart_ref'):
        errors.append('hami_chart_ref is empty: set it to the HAMi chart (a chart directory such as charts/hami of a '
                      'HAMi checkout, an OCI reference, or the chart name hami with hami_chart_repo_url set to '
                      "HAMi's Helm repository)")
    policy, _matching, policy_errors = select_policy(cluster.get('cluster_policies'), config.get('cluster_policy_name'),
                                                     False, POLICY_OPTION)
    errors.extend(policy_errors)
    enabled = policy is not None and device_plugin_enabled(policy)
    if enabled and not config.get('disable_operator_device_plugin'):
        errors.append("the GPU operator's device plugin is still enabled in ClusterPolicy %s (spec.devicePlugin.enabled "
                      "is not false). HAMi's device plugin advertises nvidia.com/gpu too, and two plugins on one node "
                      "fight over the same GPUs. Set hami_disable_operator_device_plugin: true to let this role switch "
                      "the operator's device plugin off (GPU feature discovery, MIG manager and DCGM keep running), or "
                      "set devicePlugin.enabled: false yourself" % _meta(policy).get('name'))
    known = list(cluster.get('node_names') or [])
    wanted = list(config.get('nodes') or [])
    missing = [n for n in wanted if n not in known]
    if missing:
        errors.append('hami_nodes: node(s) not found: %s' % ', '.join(missing))
    if not wanted and not known:
        errors.append('no node matches hami_node_selector %s; HAMi would run nowhere' % config.get('node_selector'))
    errors.extend(_setting_errors(config))
    errors.extend(_node_label_errors(config.get('node_label')))
    return {'errors': errors, 'nodes': wanted or known, 'policy': _meta(policy).get('name') if policy else None,
            'disable_device_plugin': enabled and bool(config.get('disable_operator_device_plugin'))}


def _setting_errors(config):
    errors = []
    split = as_number(config.get('device_split_count'), int)
    if split is None or split < 1:
        errors.append('hami_device_split_count must be at least 1 (tasks per GPU), got %s'
                      % config.get('device_split_count'))
    for key, what in (('device_memory_scaling', 'GPU memory'), ('device_core_scaling', 'GPU cores')):
        value = as_number(config.get(key), float)
        if value is None or value <= 0:
            errors.append('hami_%s must be greater than 0 (1 = the real %s), got %s' % (key, what, config.get(key)))
    return errors


def _node_label_errors(labels):
    if not isinstance(labels, dict):
        return ['hami_node_label must be a mapping of label names to values, got %s' % type_name(labels)]
    if not labels:
        return ['hami_node_label must name at least one label']
    errors = []
    bad_keys = [str(k) for k in labels if label_key_errors(k)]
    if bad_keys:
        errors.append('hami_node_label: invalid label key(s): %s' % ', '.join(bad_keys))
    bad_values = [v for v in labels.values() if isinstance(v, str) and label_value_errors(v)]
    if bad_values:
        errors.append('hami_node_label: invalid label value(s) (at most 63 of [A-Za-z0-9-_.], quote on/off in '
                      'YAML): %s' % ', '.join(bad_values))
    if any(not isinstance(v, str) for v in labels.values()):
        errors.append('hami_node_label values must be strings (quote "on" in YAML, or it becomes the boolean true)')
    return errors


def release_marker(namespace, release):
    return '%s/%s' % (namespace, release)


def marked_releases(nodes):
    """{'<namespace>/<release>': [node names]} for every HAMi release the role labelled nodes for."""
    out = {}
    for node in nodes or []:
        value = (_meta(node).get('annotations') or {}).get(ANN_RELEASE)
        if value:
            out.setdefault(value, []).append(_meta(node).get('name'))
    return dict((k, sorted(v)) for k, v in out.items())


def _requests_hami(pod):
    for container in ((pod.get('spec') or {}).get('containers') or []) + \
            ((pod.get('spec') or {}).get('initContainers') or []):
        resources = container.get('resources') or {}
        for section in ('limits', 'requests'):
            if any(name in HAMI_RESOURCES for name in resources.get(section) or {}):
                return True
    return False


def hami_pods(pods, hami_nodes):
    """Active, non-DaemonSet pods that use HAMi: HAMi resources anywhere, GPU resources on a HAMi node."""
    out = []
    for pod in pods or []:
        if not gn.pod_is_active(pod) or gn.pod_is_daemonset(pod):
            continue
        node = (pod.get('spec') or {}).get('nodeName')
        if _requests_hami(pod) or (node in hami_nodes and gn.pod_gpu_requests(pod)):
            out.append(gn.pod_key(pod) + (' on %s' % node if node else ' (not scheduled)'))
    return sorted(out)


def removal_plan(nodes, policies, pods, namespace, release, node_label, policy_name='', restore_device_plugin=True,
                 with_pods=False):
    """What removing one HAMi release changes: nodes to unlabel, the label patch, the ClusterPolicy to
    give its device plugin back, the pods in the way, and the errors that stop it before any write."""
    marker = release_marker(namespace, release)
    names = marked_releases(nodes).get(marker, [])
    errors = []
    keys = set(node_label) if isinstance(node_label, dict) else set()
    for node in nodes or []:
        if _meta(node).get('name') in names:
            recorded = (_meta(node).get('annotations') or {}).get(ANN_LABELS) or ''
            keys.update(k for k in recorded.split(',') if k)
    if not keys:
        errors.append('hami_node_label must name at least one label (the labels to take off the HAMi nodes)')
    policy, _matching, policy_errors = select_policy(policies, policy_name, False, POLICY_OPTION)
    errors.extend(policy_errors)
    patch = {}
    if restore_device_plugin and policy is not None and not device_plugin_enabled(policy):
        patch = {'devicePlugin': {'enabled': True}}
    in_use = hami_pods(pods, set(names))
    if in_use and not with_pods:
        errors.append('pods still use HAMi (%s); move them off first, or set hami_remove_with_pods: true to '
                      'remove HAMi anyway (running pods keep their GPUs until they end)' % ', '.join(in_use))
    labels_patch = {'labels': dict((key, None) for key in sorted(keys)),
                    'annotations': {ANN_RELEASE: None, ANN_LABELS: None}}
    return {'release': marker, 'nodes': names, 'node_patch': labels_patch,
            'policy': _meta(policy).get('name') if policy is not None else None, 'policy_patch': patch,
            'pods': in_use, 'errors': errors}
