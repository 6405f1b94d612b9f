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

The record of what the role labelled lives in the release itself: the role writes the top-level chart
value ``gpuopsGpu: {nodes: [...], nodeLabels: [...]}`` (:data:`RECORD_KEY`; HAMi's chart reads no such
key) into the release's values, so Helm keeps it in its release record - a Secret in the release
namespace, which only an account that may write Secrets there (the install account) can change. Node
annotations and labels are never read to decide what is uninstalled or unlabelled.

Removing (:func:`removal_plan`): the one release asked about (``hami_namespace``/``hami_release_name``),
and only when its chart is ``hami``; the labels its record names come off the nodes its record names,
so labels somebody else set stay. A HAMi release without a record (installed by an earlier version of
the collection, which kept the record in node annotations) loses the ``hami_node_label`` labels (same
value) of the nodes ``hami_nodes`` / ``hami_node_selector`` select. The annotations earlier versions
wrote (:data:`LEGACY_ANNOTATIONS`) are only removed, from the nodes a removal unlabels. Pods still using
HAMi stop the removal before anything is written: pods that request HAMi's resources
(``nvidia.com/gpumem``, ``nvidia.com/gpumem-percentage``, ``nvidia.com/gpucores``) anywhere, and pods
that request GPU resources on a HAMi node (HAMi's device plugin serves them).

Resetting (:func:`reset_release_plan`, for gpuops.gpu.reset): the release the reset names, only when
HAMi's device plugin runs there on nodes of the reset, only with a record, and only when every node the
record lists that still carries a recorded label is in the reset.

Both pick the ClusterPolicy with ``cluster_policy.select_policy`` (the same words as every role).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import (
    as_number, label_key_errors, label_value_errors, type_name)
from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import HAMI_RESOURCES
from ansible_collections.gpuops.gpu.plugins.module_utils.common.objects import annotations_of, labels_of, name_of
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import node as gn
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.cluster_policy import select_policy

CHART = 'hami'
# The top-level chart value that holds the role's record: {'nodes': [node names], 'nodeLabels': [label keys]}.
RECORD_KEY = 'gpuopsGpu'
# What earlier versions annotated labelled nodes with; never read, only removed from the nodes a removal unlabels.
LEGACY_ANNOTATIONS = ('gpuops.gpu/hami-release', 'gpuops.gpu/hami-labels')
POLICY_OPTION = 'hami_cluster_policy_name'
# "<chart name>-<chart version>", as helm list (and kubernetes.core.helm_info) prints a release's chart
_CHART_RE = re.compile(r'^(?P<name>.+?)-v?\d+(\.\d+){0,2}([-+][0-9A-Za-z.+-]*)?$')


def device_plugin_enabled(policy):
    """Whether a ClusterPolicy runs the GPU operator's device plugin (``devicePlugin.enabled`` unset is on)."""
    return ((policy.get('spec') or {}).get('devicePlugin') or {}).get('enabled', True) is not False


def install_plan(config, cluster):
    """What installing HAMi does, and every problem that stops it before anything is written.

    ``config``: chart_ref, nodes, node_selector, node_label, device_split_count, device_memory_scaling,
    device_core_scaling, cluster_policy_name, disable_operator_device_plugin, values (the role's variables
    without the ``hami_`` prefix). ``cluster``: cluster_policies (as read), node_names (the nodes read:
    all of them when ``nodes`` is given, else those matching ``node_selector``), release (the release as
    kubernetes.core.helm_info read it; empty when there is none).
    Returns ``{'errors', 'nodes', 'policy', 'disable_device_plugin', 'record', 'node_patch'}``: the nodes
    to label, the ClusterPolicy whose device plugin HAMi replaces (None without a GPU operator), whether
    the role switches that device plugin off, the record for the release's values (:func:`install_record`)
    and the metadata patch of each node (the labels; the annotations of earlier versions removed).
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
                      "set devicePlugin.enabled: false yourself" % name_of(policy))
    known = list(cluster.get('node_names') or [])
    wanted = list(config.get('nodes') or [])
    missing = [n for n in wanted if n not in known]
    if missing:
        errors.append('hami_nodes: node(s) not found: %s' % ', '.join(missing))
    if not wanted and not known:
        errors.append('no node matches hami_node_selector %s; HAMi would run nowhere' % config.get('node_selector'))
    errors.extend(_setting_errors(config))
    errors.extend(_node_label_errors(config.get('node_label')))
    if RECORD_KEY in (config.get('values') or {}):
        errors.append('hami_values must not set %s: the role keeps its record of the labelled nodes there' % RECORD_KEY)
    nodes = wanted or known
    record, _record_error = release_record(cluster.get('release'))
    return {'errors': errors, 'nodes': nodes, 'policy': name_of(policy),
            'disable_device_plugin': enabled and bool(config.get('disable_operator_device_plugin')),
            'record': install_record(record, nodes, config.get('node_label')),
            'node_patch': {'labels': config.get('node_label'),
                           'annotations': dict((key, None) for key in LEGACY_ANNOTATIONS)}}


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


def chart_name(chart):
    """The chart name in helm list's ``<name>-<version>`` ('hami-2.10.0' -> 'hami'); '' when there is none."""
    match = _CHART_RE.match(chart or '') if isinstance(chart, str) else None
    return match.group('name') if match else ''


def release_record(release):
    """(record, error) of a release as kubernetes.core.helm_info read it: the role's record in its values
    as ``{'nodes': [...], 'node_labels': [...]}``, or None (no release, or a release without a record);
    error: why the record cannot be used ('' when it can, or there is none)."""
    values = (release or {}).get('values') or {}
    if not isinstance(values, dict) or RECORD_KEY not in values:
        return None, ''
    raw = values[RECORD_KEY]
    nodes = raw.get('nodes', []) if isinstance(raw, dict) else None
    keys = raw.get('nodeLabels', []) if isinstance(raw, dict) else None
    if (not isinstance(nodes, list) or not all(isinstance(n, str) for n in nodes) or not isinstance(keys, list)
            or any(label_key_errors(k) for k in keys)):
        marker = release_marker(release.get('namespace'), release.get('name'))
        return None, ('the value %s of release %s is not the record gpuops.gpu.hami writes ({nodes: [node names], '
                      'nodeLabels: [label keys]})' % (RECORD_KEY, marker))
    return {'nodes': sorted(set(nodes)), 'node_labels': sorted(set(keys))}, ''


def install_record(record, nodes, node_label):
    """The record an install writes into the release's values: the nodes and label keys it labels now, plus
    those of the record already there (earlier runs' nodes keep their labels until the removal)."""
    record = record or {'nodes': [], 'node_labels': []}
    keys = list(node_label) if isinstance(node_label, dict) else []
    return {'nodes': sorted(set(record['nodes']) | set(nodes or [])),
            'nodeLabels': sorted(set(record['node_labels']) | set(keys))}


def _not_hami_error(release):
    return ('release %s is not HAMi (its chart is %s, not %s): nothing is removed'
            % (release_marker(release.get('namespace'), release.get('name')), release.get('chart') or 'unknown',
               CHART))


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


def _node_patch(node, keys, value_of=None):
    """The metadata patch that takes ``keys`` (those the node carries; with ``value_of``, only with that value)
    and the annotations of earlier versions off ``node``; {} when there is nothing to take off."""
    labels = labels_of(node)
    annotations = annotations_of(node)
    drop = [k for k in keys if k in labels and (value_of is None or labels[k] == value_of.get(k))]
    patch = {}
    if drop:
        patch['labels'] = dict((k, None) for k in sorted(drop))
    old = [k for k in LEGACY_ANNOTATIONS if k in annotations]
    if old:
        patch['annotations'] = dict((k, None) for k in old)
    return patch


def removal_plan(nodes, policies, pods, namespace, release, node_label, release_info=None, selected=None,
                 policy_name='', restore_device_plugin=True, with_pods=False):
    """What removing the HAMi release ``namespace``/``release`` changes, before any write.

    ``nodes``: every Node. ``release_info``: the release as kubernetes.core.helm_info read it (empty: none).
    ``selected``: the names of the nodes ``hami_nodes`` / ``hami_node_selector`` select (used only for a
    release without a record). Returns the nodes to patch and each one's metadata patch (``node_patches``),
    the ClusterPolicy to give its device plugin back, the pods in the way, notes and the errors that stop it.
    """
    marker = release_marker(namespace, release)
    info = release_info or {}
    by_name = dict((name_of(n), n) for n in nodes or [] if name_of(n))
    errors, notes, patches = [], [], {}
    if info and chart_name(info.get('chart')) != CHART:
        errors.append(_not_hami_error(dict(info, namespace=namespace, name=release)))
    elif info:
        record, record_error = release_record(dict(info, namespace=namespace, name=release))
        if record_error:
            errors.append(record_error)
        elif record is not None:
            for name in record['nodes']:
                patches[name] = _node_patch(by_name.get(name), record['node_labels'])
        else:
            label_errors = _node_label_errors(node_label)
            errors.extend(label_errors)
            notes.append('release %s has no record of the nodes gpuops.gpu.hami labelled (installed by an earlier '
                         'version of gpuops.gpu, or not by gpuops.gpu.hami): the hami_node_label labels come off the '
                         'nodes hami_nodes / hami_node_selector select that carry them with the same value' % marker)
            for name in ([] if label_errors else selected or []):
                patches[name] = _node_patch(by_name.get(name), list(node_label), node_label)
    else:
        notes.append('no HAMi release %s: nothing to uninstall, no node label to take off' % marker)
    patches = dict((name, patch) for name, patch in patches.items() if name in by_name and patch)
    policy, _matching, policy_errors = select_policy(policies, policy_name, False, POLICY_OPTION)
    errors.extend(policy_errors)
    patch = {}
    if restore_device_plugin and policy is not None and not device_plugin_enabled(policy):
        patch = {'devicePlugin': {'enabled': True}}
    in_use = hami_pods(pods, set(n for n, p in patches.items() if p.get('labels')))
    if in_use and not with_pods:
        errors.append('pods still use HAMi (%s); move them off first, or set hami_remove_with_pods: true to '
                      'remove HAMi anyway (running pods keep their GPUs until they end)' % ', '.join(in_use))
    ok = not errors
    return {'release': marker, 'installed': bool(info), 'nodes': sorted(patches) if ok else [],
            'node_patches': patches if ok else {},
            'policy': name_of(policy), 'policy_patch': patch,
            'pods': in_use, 'notes': notes, 'errors': errors}


def reset_release_plan(release_info, namespace, release, plugin_pods, nodes, scope):
    """Whether gpuops.gpu.reset removes the HAMi release ``namespace``/``release`` (the one it was told about).

    ``plugin_pods``: HAMi's device-plugin pods read in ``namespace``; ``scope``: the names of the nodes to reset;
    ``release_info``: the release as kubernetes.core.helm_info read it (empty: none, or not read because
    HAMi's device plugin runs on no node of the reset). Returns ``{'release': '<namespace>/<release>' or '',
    'errors'}``: the release is removed only when HAMi's device plugin runs on nodes of the reset, its chart is
    hami, it carries the role's record, and every node the record lists that still carries a recorded label
    is in the reset; else nothing is removed, with an error when HAMi runs on nodes of the reset.
    """
    marker = release_marker(namespace, release)
    in_scope = set(scope or [])
    served = sorted(set((p.get('spec') or {}).get('nodeName') for p in plugin_pods or [] if gn.pod_is_active(p))
                    & in_scope)
    if not served:
        return {'release': '', 'errors': []}
    how = ('remove it with gpuops.gpu.hami (hami_state: absent, hami_namespace: %s, hami_release_name: %s) first, '
           'or set reset_hami: false' % (namespace, release))
    info = dict(release_info or {}, namespace=namespace, name=release)
    record, record_error = release_record(info)
    error = ''
    if not release_info:
        error = ("HAMi's device plugin runs in namespace %s on nodes of the reset (%s) but there is no Helm release %s: "
                 'set reset_hami_namespace / reset_hami_release_name to its release, or set reset_hami: false'
                 % (namespace, ', '.join(served), marker))
    elif chart_name(info.get('chart')) != CHART:
        error = _not_hami_error(info) + '; set reset_hami_release_name to the HAMi release, or set reset_hami: false'
    elif record_error:
        error = record_error + '; ' + how
    elif record is None:
        error = ('HAMi release %s has no record of the nodes gpuops.gpu.hami labelled (installed by an earlier version '
                 'of gpuops.gpu, or not by gpuops.gpu.hami), and the reset removes only what that record names: %s'
                 % (marker, how))
    else:
        by_name = dict((name_of(n), n) for n in nodes or [] if name_of(n))
        outside = [n for n in record['nodes'] if n in by_name and n not in in_scope
                   and set(record['node_labels']) & set(labels_of(by_name[n]))]
        if outside:
            error = ('HAMi release %s also serves nodes outside the reset (%s): include them (reset_nodes / '
                     'reset_node_selector), %s' % (marker, ', '.join(outside), how))
    return {'release': '' if error else marker, 'errors': [error] if error else []}
