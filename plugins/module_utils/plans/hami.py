# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Removing HAMi (gpuops.gpu.hami with hami_state=absent, and gpuops.gpu.reset), decided from what
was read. Pure, no I/O.

The hami role marks every node it labels with the annotations ``gpuops.gpu/hami-release:
<namespace>/<release>`` and ``gpuops.gpu/hami-labels: <label keys>``; removal takes those labels off
those nodes only, so labels somebody else set stay. Pods still using HAMi stop the removal before anything is written: pods that request
HAMi's resources (``nvidia.com/gpumem``, ``nvidia.com/gpumem-percentage``, ``nvidia.com/gpucores``)
anywhere, and pods that request GPU resources on a HAMi node (HAMi's device plugin serves them).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import node as gn

ANN_RELEASE = 'gpuops.gpu/hami-release'
ANN_LABELS = 'gpuops.gpu/hami-labels'
HAMI_RESOURCES = ('nvidia.com/gpumem', 'nvidia.com/gpumem-percentage', 'nvidia.com/gpucores')


def _meta(obj):
    return (obj or {}).get('metadata') or {}


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
    if policy_name:
        policies = [p for p in policies or [] if _meta(p).get('name') == policy_name]
    policy = None
    if len(policies or []) > 1:
        errors.append('more than one ClusterPolicy (%s); set hami_cluster_policy_name'
                      % ', '.join(sorted(_meta(p).get('name') for p in policies)))
    elif policies:
        policy = policies[0]
    patch = {}
    if restore_device_plugin and policy is not None:
        if ((policy.get('spec') or {}).get('devicePlugin') or {}).get('enabled', True) is False:
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
