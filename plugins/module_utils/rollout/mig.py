# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Cluster side of a MIG rollout: read what the GPU operator's MIG manager will read (ClusterPolicy
``mig.strategy`` and ``migManager.config``, the mig-parted ConfigMap), validate every assignment
against it BEFORE any write, then hand the work to the node_rollout engine."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import time

from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.node import LABEL_MIG_CONFIG, LABEL_MIG_STATE
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.geometry import mig_parted_errors
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.mig_kind import MigKind
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.engine import (
    NodeRollout, RolloutFailed, resolve_assignments)
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.batches import parse_max_unavailable

try:
    import yaml
except ImportError:  # pragma: no cover - AnsibleK8SModule reports missing PyYAML
    yaml = None
try:
    from kubernetes.client.rest import ApiException
except ImportError:  # pragma: no cover - AnsibleK8SModule reports missing kubernetes
    ApiException = Exception

DEFAULT_CONFIG_MAP = 'default-mig-parted-config'
CP_GROUP, CP_VERSION, CP_PLURAL = 'nvidia.com', 'v1', 'clusterpolicies'


class InputError(Exception):
    """Bad input: nothing was written."""


def read_cluster_policy(rollout, name=None):
    try:
        rollout.requests += 1
        if name:
            return rollout.conn.custom.get_cluster_custom_object(CP_GROUP, CP_VERSION, CP_PLURAL, name)
        items = rollout.conn.custom.list_cluster_custom_object(CP_GROUP, CP_VERSION, CP_PLURAL).get('items', [])
    except ApiException as exc:
        if exc.status == 404:
            if name:
                raise InputError("ClusterPolicy '%s' not found" % name)
            return None
        raise
    return items[0] if items else None


def read_document(rollout, config_map, namespace):
    """The mig-parted document, or None for the operator's built-in configs."""
    try:
        rollout.requests += 1
        cm = rollout.conn.core.read_namespaced_config_map(config_map, namespace)
    except ApiException as exc:
        if exc.status == 404 and config_map == DEFAULT_CONFIG_MAP:
            return None
        if exc.status == 404:
            raise InputError("mig-parted ConfigMap %s/%s not found (ClusterPolicy migManager.config.name names it); "
                             "create it first (the gpuops.gpu.mig role does)" % (namespace, config_map))
        raise
    text = (cm.data or {}).get('config.yaml')
    if text is None:
        raise InputError("ConfigMap %s/%s has no key 'config.yaml', which the MIG manager reads"
                         % (namespace, config_map))
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InputError('ConfigMap %s/%s config.yaml is not valid YAML: %s' % (namespace, config_map, exc))
    errors = mig_parted_errors(document)
    if errors:
        raise InputError('ConfigMap %s/%s config.yaml is not a valid mig-parted document: %s'
                         % (namespace, config_map, '; '.join(errors)))
    return document


def run(conn, params, check_mode, log=None):
    """Validate everything, then roll out. Returns the result dict; raises InputError (nothing
    written) or RolloutFailed (with a partial result)."""
    started = time.monotonic()
    opts = dict(params)
    opts['check_mode'] = check_mode
    rollout = NodeRollout(conn, None, opts, log=log)

    policy = read_cluster_policy(rollout, params.get('cluster_policy'))
    spec = (policy or {}).get('spec') or {}
    strategy = params.get('mig_strategy') or (spec.get('mig') or {}).get('strategy') or 'single'
    config_map = params.get('config_map') or ((spec.get('migManager') or {}).get('config') or {}).get('name') \
        or DEFAULT_CONFIG_MAP
    if params.get('config_document') is not None:
        document = params['config_document']
        errors = mig_parted_errors(document)
        if errors:
            raise InputError('config_document is not a valid mig-parted document: ' + '; '.join(errors))
    else:
        document = read_document(rollout, config_map, params['operator_namespace'])
    rollout.kind = MigKind(document, strategy, params.get('mig_catalog_overrides'))

    nodes = dict((n['metadata']['name'], n) for n in rollout.list_nodes())
    assignments, errors = resolve_assignments(params['assignments'], nodes, 'config')
    for name in sorted(assignments):
        errors.extend(rollout.kind.validate(nodes[name], assignments[name]))
    try:
        parse_max_unavailable(params['max_unavailable'], max(len(assignments), 1))
    except ValueError as exc:
        errors.append(str(exc))
    if errors:
        raise InputError('nothing was changed; fix these first: ' + ' | '.join(errors))

    result = rollout.run(assignments, nodes)
    before = dict((n, (nodes[n]['metadata'].get('labels') or {}).get(LABEL_MIG_CONFIG)) for n in sorted(assignments))
    result['diff'] = {
        'before': dict((n, {LABEL_MIG_CONFIG: before[n], LABEL_MIG_STATE: (nodes[n]['metadata'].get('labels') or {})
                            .get(LABEL_MIG_STATE)}) for n in sorted(assignments) if not rollout.kind.at_target(nodes[n], assignments[n])),
        'after': dict((n, {LABEL_MIG_CONFIG: assignments[n], LABEL_MIG_STATE: 'success'}) for n in sorted(assignments)
                      if not rollout.kind.at_target(nodes[n], assignments[n])),
    }
    result.update({'mig_strategy': strategy, 'config_map': config_map if document is not None else None,
                   'assignments': assignments, 'api_requests': rollout.requests,
                   'duration_s': round(time.monotonic() - started, 2), 'warnings': rollout.warnings})
    return result


__all__ = ['run', 'InputError', 'RolloutFailed']
