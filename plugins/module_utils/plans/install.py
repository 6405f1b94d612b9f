# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Input checks of the install roles (nfd, gpu_operator) that need no cluster. Pure, no I/O.

The roles run these before their first write, so a bad toleration, selector or override fails
with a message naming the role variable instead of half-way through an install.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.module_utils.plans import cluster_policy
from ansible_collections.gpuops.gpu.plugins.module_utils.plans import driver as driver_plan
from ansible_collections.gpuops.gpu.plugins.module_utils.common.merge import deep_merge
from ansible_collections.gpuops.gpu.plugins.module_utils.common.selector import selector_errors
from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import (
    is_dns_subdomain, label_key_errors, label_value_errors, type_name)
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.tolerations import toleration_errors

ROLES = ('nfd', 'gpu_operator')


def labels_errors(labels, name):
    """Problems in a mapping of label key to value (node selectors, namespace labels)."""
    if labels is None:
        return []
    if not isinstance(labels, dict):
        return ['%s must be a mapping of label to value, got %s' % (name, type_name(labels))]
    errors = []
    for key, value in sorted(labels.items(), key=lambda kv: str(kv[0])):
        errors.extend('%s key %s %s' % (name, key, e) for e in label_key_errors(key))
        errors.extend('%s.%s %s' % (name, key, e) for e in label_value_errors(value))
    return errors


def _namespace_errors(value, name):
    if not isinstance(value, str) or not is_dns_subdomain(value) or len(value) > 63 or '.' in value:
        return ["%s '%s' is not a valid namespace name (lowercase letters, digits and '-')" % (name, value)]
    return []


def _olm_config_errors(config, name):
    if config in (None, {}):
        return []
    if not isinstance(config, dict):
        return ['%s must be a mapping (Subscription spec.config), got %s' % (name, type_name(config))]
    return (toleration_errors(config.get('tolerations'), '%s.tolerations' % name)
            + labels_errors(config.get('nodeSelector'), '%s.nodeSelector' % name))


def nfd_errors(v):
    errors = _namespace_errors(v.get('nfd_namespace'), 'nfd_namespace')
    errors += labels_errors(v.get('nfd_namespace_labels'), 'nfd_namespace_labels')
    errors += toleration_errors(v.get('nfd_worker_tolerations'), 'nfd_worker_tolerations')
    errors += labels_errors(v.get('nfd_worker_node_selector'), 'nfd_worker_node_selector')
    errors += selector_errors(v.get('nfd_gpu_node_selector'), 'nfd_gpu_node_selector')
    errors += _olm_config_errors(v.get('nfd_olm_config'), 'nfd_olm_config')
    for key in ('nfd_instance_overrides', 'nfd_helm_values'):
        if v.get(key) is not None and not isinstance(v.get(key), dict):
            errors.append('%s must be a mapping, got %s' % (key, type_name(v.get(key))))
    if v.get('nfd_install_method') == 'helm' and not v.get('nfd_helm_chart_ref'):
        errors.append('nfd_install_method helm needs nfd_helm_chart_ref (a chart directory or archive, or '
                      '<repo>/node-feature-discovery with nfd_helm_chart_repo_url)')
    return errors


def gpu_operator_errors(v):
    errors = _namespace_errors(v.get('gpu_operator_namespace'), 'gpu_operator_namespace')
    errors += labels_errors(v.get('gpu_operator_namespace_labels'), 'gpu_operator_namespace_labels')
    errors += _olm_config_errors(v.get('gpu_operator_olm_config'), 'gpu_operator_olm_config')
    overrides = v.get('gpu_operator_cluster_policy_overrides')
    errors += ['gpu_operator_cluster_policy_' + e for e in cluster_policy.input_errors(
        overrides, None)]
    errors += toleration_errors(v.get('gpu_operator_daemonset_tolerations'), 'gpu_operator_daemonset_tolerations')
    errors += driver_errors(v, overrides)
    strategy = v.get('gpu_operator_mig_strategy')
    if strategy not in (None, '') and strategy not in cluster_policy.MIG_STRATEGIES:
        errors.append("gpu_operator_mig_strategy must be none, single or mixed (or empty), got %r" % (strategy,))
    if v.get('gpu_operator_helm_values') is not None and not isinstance(v.get('gpu_operator_helm_values'), dict):
        errors.append('gpu_operator_helm_values must be a mapping, got %s' % type_name(v.get('gpu_operator_helm_values')))
    if v.get('gpu_operator_install_method') == 'helm' and not v.get('gpu_operator_helm_chart_ref'):
        errors.append('gpu_operator_install_method helm needs gpu_operator_helm_chart_ref (a chart directory or '
                      'archive, or <repo>/gpu-operator with gpu_operator_helm_chart_repo_url)')
    return errors


def driver_settings(v):
    """The typed driver settings of the gpu_operator role (``gpu_operator_driver_*``) by short name."""
    prefix = 'gpu_operator_driver_'
    return dict((k[len(prefix):], value) for k, value in v.items() if k.startswith(prefix))


def driver_errors(v, overrides=None):
    """The typed driver settings: types, then NVIDIA's cross-field rules on the overrides they make
    (merged on top of the raw ClusterPolicy overrides, as the role applies them)."""
    settings = driver_settings(v)
    if not settings:
        return []
    errors = driver_plan.settings_errors(settings)
    if errors:
        return errors
    merged = deep_merge(overrides if isinstance(overrides, dict) else {}, driver_plan.driver_overrides(settings))
    return driver_plan.driver_rule_errors(merged, 'the ClusterPolicy (gpu_operator_cluster_policy_overrides and '
                                          'gpu_operator_driver_*) spec')


def role_input_errors(variables, role):
    """Messages for the role's variables ([] when they are fine)."""
    if role not in ROLES:
        raise ValueError('role must be one of %s' % ', '.join(ROLES))
    if not isinstance(variables, dict):
        raise ValueError('the input must be a mapping of role variables')
    return nfd_errors(variables) if role == 'nfd' else gpu_operator_errors(variables)
