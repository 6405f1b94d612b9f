# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Pure planners of the removal of the GPU stack (the gpuops.gpu.uninstall role) and of one OLM
operator (``gpuops.gpu.olm_operator`` with ``state: absent``).

What is removed, in which order, and what refuses the removal, decided from what was read:

1. refuse while pods that request ``nvidia.com/*`` resources run (unless forced);
2. the NVIDIADriver custom resources, then the ClusterPolicy (the operator removes its operands);
3. the GPU operator: its OLM Subscription and CSV, or its Helm release;
4. Node Feature Discovery: the NodeFeatureDiscovery instance(s), then its operator or Helm release;
5. the ConfigMaps gpuops.gpu created in those namespaces, then the namespaces gpuops.gpu created.

Only objects labelled ``app.kubernetes.io/managed-by: gpuops.gpu`` are deleted in step 5; the
operators' own custom resources (steps 2 and 4) are deleted whoever created them, since they cannot
outlive their operator.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import is_dns_subdomain, type_name
from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import LABEL_MANAGED_BY, MANAGED_BY, is_managed
from ansible_collections.gpuops.gpu.plugins.module_utils.common.objects import labels_of, name_of, namespace_of
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import node as gn

METHODS = ('olm', 'helm')
# (input key, what it names); every one is checked before anything is read or written
NAME_INPUTS = (('gpu_operator_namespace', 'namespace'), ('nfd_namespace', 'namespace'),
               ('gpu_operator_olm_package', 'object'), ('nfd_olm_package', 'object'),
               ('gpu_operator_helm_release_name', 'object'), ('nfd_helm_release_name', 'object'))


def input_errors(inputs):
    """The role's inputs that need no cluster; messages name the variable (``uninstall_<key>``)."""
    errors = []
    if not isinstance(inputs, dict):
        return ['the uninstall inputs must be a mapping, got %s' % type_name(inputs)]
    for key in ('gpu_operator_install_method', 'nfd_install_method'):
        if inputs.get(key) not in METHODS:
            errors.append("uninstall_%s must be olm or helm, got '%s'" % (key, inputs.get(key)))
    for key, kind in NAME_INPUTS:
        value = inputs.get(key)
        if not isinstance(value, str) or not is_dns_subdomain(value) or (kind == 'namespace' and len(value) > 63):
            errors.append("uninstall_%s '%s' is not a valid %s name (lowercase letters, digits, '-' and '.')"
                          % (key, value, kind))
    for key in ('force', 'nfd'):
        if not isinstance(inputs.get(key, False), bool):
            errors.append('uninstall_%s must be true or false, got %s' % (key, type_name(inputs.get(key))))
    return errors


def gpu_workloads(pods):
    """``namespace/name on node (resources)`` of the active, non-DaemonSet pods requesting nvidia.com/* resources."""
    out = []
    for pod in gn.gpu_pods(pods or []):
        node = (pod.get('spec') or {}).get('nodeName')
        out.append('%s %s (%s)' % (gn.pod_key(pod), 'on %s' % node if node else '(not scheduled)',
                                   ', '.join(sorted(gn.pod_gpu_requests(pod)))))
    return sorted(out)


def _ref(obj, kind, api_version):
    ref = {'kind': kind, 'api_version': api_version, 'name': name_of(obj)}
    if namespace_of(obj):
        ref['namespace'] = namespace_of(obj)
    return ref


def uninstall_plan(inputs, found=None):
    """The removal of the GPU stack.

    ``inputs``: the role's variables without the ``uninstall_`` prefix (``force``, ``nfd``,
    ``gpu_operator_install_method``, ``gpu_operator_namespace``, ``gpu_operator_olm_package``,
    ``gpu_operator_helm_release_name``, ``nfd_install_method``, ``nfd_namespace``, ``nfd_olm_package``,
    ``nfd_helm_release_name``).
    ``found``: what was read - ``pods`` (all), ``cluster_policies``, ``nvidia_drivers``,
    ``nfd_instances`` (in the NFD namespace), ``config_maps`` (of the two namespaces) and ``namespaces``
    (the two, those that exist).

    Returns ``errors`` (nothing may be written unless empty), ``workloads`` (the GPU pods found),
    ``steps`` (the removal, in order, each ``{'step', 'objects', ...}``), ``kept`` (objects left on
    purpose, with the reason) and ``summary`` (one line per step, for the log).
    """
    errors = input_errors(inputs)
    found = found or {}
    if errors:
        return {'errors': errors, 'workloads': [], 'steps': [], 'kept': [], 'summary': [],
                'cluster_policies': [], 'nvidia_drivers': [], 'nfd_instances': [], 'config_maps': [],
                'namespaces': []}
    workloads = gpu_workloads(found.get('pods'))
    if workloads and not inputs.get('force'):
        errors.append('pods still request NVIDIA GPU resources: %s; stop them first (they lose their GPUs when '
                      'the driver goes), or set uninstall_force: true to remove the GPU stack anyway'
                      % '; '.join(workloads))
    with_nfd = inputs.get('nfd', True)
    gpu_ns, nfd_ns = inputs['gpu_operator_namespace'], inputs['nfd_namespace']
    drivers = sorted((_ref(d, 'NVIDIADriver', 'nvidia.com/v1alpha1') for d in found.get('nvidia_drivers') or []),
                     key=lambda r: r['name'])
    policies = sorted((_ref(p, 'ClusterPolicy', 'nvidia.com/v1') for p in found.get('cluster_policies') or []),
                      key=lambda r: r['name'])
    instances = []
    if with_nfd and inputs['nfd_install_method'] == 'olm':
        instances = sorted((_ref(i, 'NodeFeatureDiscovery', i.get('apiVersion') or 'nfd.openshift.io/v1')
                            for i in found.get('nfd_instances') or [] if namespace_of(i) == nfd_ns),
                           key=lambda r: r['name'])
    scope = [gpu_ns] + ([nfd_ns] if with_nfd and nfd_ns != gpu_ns else [])
    namespaces, kept, config_maps = _managed_in_scope(found, scope)
    steps = [{'step': 'custom_resources', 'objects': drivers + policies}]
    steps.append(_operator_step('gpu_operator', inputs, gpu_ns))
    if with_nfd:
        steps.append({'step': 'nfd_instances', 'objects': instances})
        steps.append(_operator_step('nfd', inputs, nfd_ns))
    steps.append({'step': 'config_maps', 'objects': config_maps})
    steps.append({'step': 'namespaces', 'objects': [{'kind': 'Namespace', 'api_version': 'v1', 'name': n}
                                                    for n in sorted(namespaces)]})
    return {'errors': errors, 'workloads': workloads, 'steps': steps, 'kept': kept,
            'summary': [_describe(s) for s in steps],
            'cluster_policies': policies, 'nvidia_drivers': drivers, 'nfd_instances': instances,
            'config_maps': config_maps, 'namespaces': sorted(namespaces)}


def _managed_in_scope(found, scope):
    """``(namespaces, kept, config_maps)``: the namespaces of ``scope`` gpuops.gpu created (the others kept,
    with the reason) and the ConfigMaps it created in the namespaces of ``scope`` that stay."""
    kept = []
    namespaces = []
    for ns in found.get('namespaces') or []:
        if name_of(ns) not in scope:
            continue
        if is_managed(labels_of(ns)):
            namespaces.append(name_of(ns))
        else:
            kept.append('Namespace %s: not created by gpuops.gpu (no label %s=%s)'
                        % (name_of(ns), LABEL_MANAGED_BY, MANAGED_BY))
    config_maps = []
    for cm in found.get('config_maps') or []:
        ns = namespace_of(cm)
        if ns not in scope or ns in namespaces:
            continue  # out of scope, or deleted with its namespace
        if is_managed(labels_of(cm)):
            config_maps.append(_ref(cm, 'ConfigMap', 'v1'))
    config_maps.sort(key=lambda r: (r['namespace'], r['name']))
    return namespaces, kept, config_maps


def _operator_step(prefix, inputs, namespace):
    method = inputs['%s_install_method' % prefix]
    step = {'step': prefix, 'method': method, 'namespace': namespace, 'objects': []}
    if method == 'olm':
        step['package'] = inputs['%s_olm_package' % prefix]
    else:
        step['release'] = inputs['%s_helm_release_name' % prefix]
    return step


def _describe(step):
    name = step['step']
    if name in ('gpu_operator', 'nfd'):
        what = 'GPU operator' if name == 'gpu_operator' else 'Node Feature Discovery'
        if step['method'] == 'olm':
            return ('%s: remove the OLM Subscription %s/%s, its CSV, and the OperatorGroup if gpuops.gpu created it'
                    % (what, step['namespace'], step['package']))
        return '%s: uninstall the Helm release %s/%s' % (what, step['namespace'], step['release'])
    objects = ['%s %s' % (o['kind'], '%s/%s' % (o['namespace'], o['name']) if o.get('namespace') else o['name'])
               for o in step['objects']]
    return '%s: %s' % (name.replace('_', ' '), ', '.join(objects) if objects else 'nothing to delete')


# --- one OLM operator (gpuops.gpu.olm_operator state=absent) -----------------------------------

def olm_removal(subscription, subscriptions, groups, csvs):
    """What removing one OLM operator deletes, in order: the Subscription, the CSV(s) it installed
    (``status.installedCSV`` and ``status.currentCSV``, those that exist), and the OperatorGroup only
    when gpuops.gpu created it and no other Subscription of the namespace still needs it.

    ``subscription``: the operator's Subscription or None; ``subscriptions``: every Subscription of
    the namespace; ``groups``: its OperatorGroups; ``csvs``: names of the CSVs that exist there.
    Returns ``{'subscription', 'csvs', 'operator_group', 'notes'}``.
    """
    status = (subscription or {}).get('status') or {}
    wanted = [status.get('installedCSV'), status.get('currentCSV')]
    present = set(csvs or [])
    remove_csvs = []
    for name in wanted:
        if name and name in present and name not in remove_csvs:
            remove_csvs.append(name)
    notes = []
    others = sorted(name_of(s) for s in subscriptions or [] if name_of(s) != name_of(subscription))
    group = None
    for og in groups or []:
        if not is_managed(labels_of(og)):
            notes.append('OperatorGroup %s kept: not created by gpuops.gpu (no label %s=%s)'
                         % (name_of(og), LABEL_MANAGED_BY, MANAGED_BY))
        elif others:
            notes.append('OperatorGroup %s kept: Subscription(s) %s still use it' % (name_of(og), ', '.join(others)))
        else:
            group = name_of(og)
    return {'subscription': name_of(subscription), 'csvs': remove_csvs,
            'operator_group': group, 'notes': notes}
