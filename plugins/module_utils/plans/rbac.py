# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""RBAC for gpuops.gpu jobs (the gpuops.gpu.rbac role): check its settings before anything is written.
Pure, no I/O.

ServiceAccount names are RFC 1123 subdomains and namespaces RFC 1123 labels (the apiserver's rules).
Each ServiceAccount is bound to the ClusterRoles ``gpuops-gpu-<access>`` (plus ``rollout-force`` with
``force``), so those ClusterRoles must be among the ones the same run applies.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy

from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import is_dns_label, is_dns_subdomain

# What the role's manifests (roles/rbac/files) write where the GPU operator namespace goes.
OPERATOR_NAMESPACE = 'OPERATOR_NAMESPACE'


def needed_cluster_roles(service_accounts):
    """The ClusterRoles (``report``, ``rollout``, ...) the ServiceAccounts are bound to, sorted."""
    needed = set()
    for account in service_accounts or []:
        needed.update(account.get('access') or [])
        if account.get('force'):
            needed.add('rollout-force')
    return sorted(needed)


def with_operator_namespace(manifests, namespace):
    """The role's manifests for one cluster: each namespaced Role gets ``namespace`` as its namespace, and every
    value ``OPERATOR_NAMESPACE`` (the namespace selector of an admission policy binding limited to the GPU
    operator namespace) becomes ``namespace``. New dicts; the input is not changed."""
    def fill(value):
        if isinstance(value, dict):
            return dict((k, fill(v)) for k, v in value.items())
        if isinstance(value, list):
            return [fill(v) for v in value]
        return namespace if value == OPERATOR_NAMESPACE else value
    out = []
    for doc in manifests or []:
        doc = fill(copy.deepcopy(doc))
        if doc.get('kind') == 'Role':
            doc.setdefault('metadata', {})['namespace'] = namespace
        out.append(doc)
    return out


def input_errors(settings):
    """Every problem with the rbac role's settings ([] when none): ``settings`` are its variables without
    the ``rbac_`` prefix (state, cluster_roles, operator_namespace, service_accounts; the account fields
    themselves are typed by the role's argument spec), and ``cluster_policies``: the ClusterPolicies as read, whose
    ``status.namespace`` says where the GPU operator runs."""
    errors = []
    if not is_dns_label(settings.get('operator_namespace')):
        errors.append('rbac_operator_namespace %s is not a valid namespace name' % settings.get('operator_namespace'))
    accounts = [a for a in settings.get('service_accounts') or [] if isinstance(a, dict)]
    for account in accounts:
        if not is_dns_subdomain(account.get('name')):
            errors.append('rbac_service_accounts: name %s is not a valid ServiceAccount name' % account.get('name'))
        if not is_dns_label(account.get('namespace')):
            errors.append('rbac_service_accounts: namespace %s is not a valid namespace name' % account.get('namespace'))
        if not account.get('access'):
            errors.append('rbac_service_accounts: %s has an empty access list' % account.get('name'))
    running = sorted(set(((p.get('status') or {}).get('namespace') or '') for p in settings.get('cluster_policies') or []
                         if isinstance(p, dict)) - {''})
    if 'rollout' in (settings.get('cluster_roles') or []) and running and settings.get('operator_namespace') not in running:
        errors.append('rbac_operator_namespace is %s, but the GPU operator runs in %s (ClusterPolicy status.namespace): '
                      'the rollout account would get its ConfigMaps, operand restarts and rollout lock in the wrong '
                      'namespace; set rbac_operator_namespace to %s' % (settings.get('operator_namespace'),
                                                                        ', '.join(running), running[0]))
    missing = [r for r in needed_cluster_roles(accounts) if r not in (settings.get('cluster_roles') or [])]
    if settings.get('state', 'present') == 'present' and missing:
        errors.append('the ServiceAccounts are bound to ClusterRoles this run does not apply: %s (add them to '
                      'rbac_cluster_roles)' % ', '.join(missing))
    ids = ['%s/%s' % (a.get('namespace'), a.get('name')) for a in accounts]
    duplicates = sorted(set(i for i in ids if ids.count(i) > 1))
    if duplicates:
        errors.append('rbac_service_accounts: duplicate %s' % ', '.join(duplicates))
    return errors
