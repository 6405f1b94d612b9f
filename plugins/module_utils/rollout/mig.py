# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Cluster side of a MIG rollout: read what the GPU operator's MIG manager will read (ClusterPolicy
``mig.strategy`` and ``migManager.config``, the mig-parted ConfigMap), validate every assignment
against it BEFORE any write, then hand the work to the rollout engine with
the MIG kind (rollout/mig_kind.py)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import time

from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.node import (
    LABEL_MIG_CONFIG, LABEL_MIG_STATE, is_gpu_node, vgpu_errors)
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.mig_parted import mig_parted_errors
from ansible_collections.gpuops.gpu.plugins.module_utils.common.errors import InputError, RolloutFailed
from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import DEFAULT_MIG_CONFIG_MAP
from ansible_collections.gpuops.gpu.plugins.module_utils.ops.cluster_policy import read_cluster_policy
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.cluster_policy import policy_settings
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.api import SliceReader
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.mig_kind import MigKind
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.progress import Progress
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.sharing import parse_texts
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.sharing_kind import SharingKind
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.engine import NodeRollout
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.inputs import (
    assignment_errors, check_inputs, finish_result, node_errors, option_errors, plan_errors, refuse,
    resolve_assignments)
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.node import held_elsewhere, not_ready_errors

try:
    import yaml
except ImportError:  # pragma: no cover - AnsibleK8SModule reports missing PyYAML
    yaml = None


def read_document(conn, config_map, namespace):
    """The mig-parted document, or None for the operator's built-in configs."""
    cm = conn.call_or_none(conn.core.read_namespaced_config_map, config_map, namespace)
    if cm is None and config_map == DEFAULT_MIG_CONFIG_MAP:
        return None
    if cm is None:
        raise InputError("mig-parted ConfigMap %s/%s not found (ClusterPolicy migManager.config.name names it); "
                         "create it first (the gpuops.gpu.mig role does)" % (namespace, config_map))
    text = (cm.get('data') or {}).get('config.yaml')
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


def _kind(conn, params):
    """(MigKind, ConfigMap name or None for the built-in configs, the device-plugin config ``{name, default}``
    or None when the device plugin is off) from the ClusterPolicy (its ``cluster_policy_spec`` when the caller
    read it already), the mig-parted document and the module's overrides."""
    spec = params.get('cluster_policy_spec')
    if spec is None:
        spec = (read_cluster_policy(conn, params.get('cluster_policy')) or {}).get('spec') or {}
    settings = policy_settings(spec, params.get('mig_strategy'))
    strategy = settings['mig_strategy']
    config_map = params.get('config_map') or settings['mig_config_map']
    if params.get('config_document') is not None:
        document = params['config_document']
        errors = mig_parted_errors(document)
        if errors:
            raise InputError('config_document is not a valid mig-parted document: ' + '; '.join(errors))
    else:
        document = read_document(conn, config_map, params['operator_namespace'])
    plugin_off = (spec.get('devicePlugin') or {}).get('enabled') is False
    # a node on NVIDIA's DRA driver is verified through its ResourceSlice, read only when such a node asks
    slices_of = SliceReader(conn, ttl=(params.get('poll_interval') or 2.0) / 2.0)
    return MigKind(document, strategy, params.get('mig_catalog_overrides'), slices_of=slices_of), \
        config_map if document is not None else None, None if plugin_off else settings['device_plugin_config']


def read_sharing(conn, config, strategy, namespace, nodes):
    """The device-plugin profiles behind the nodes' allocatable: a rollout.sharing_kind.SharingKind over the
    ConfigMap the ClusterPolicy's device-plugin ``config`` ({name, default}; None when the device plugin is
    off) names, read when a node runs one (some node has a nvidia.com/device-plugin.config label, or the
    ClusterPolicy sets a default); None when no node is shared. A missing ConfigMap reads as one without
    profiles (MigKind.validate names the nodes)."""
    name, default = (config or {}).get('name'), (config or {}).get('default') or ''
    if not name:
        return None
    if not (default or any(SharingKind.labels(n).get(SharingKind.label) for n in nodes)):
        return None
    cm = conn.call_or_none(conn.core.read_namespaced_config_map, name, namespace)
    texts = dict((cm or {}).get('data') or {})
    return SharingKind(texts, parse_texts(texts), default, strategy, namespace)


def _diff(kind, nodes, assignments):
    todo = [n for n in sorted(assignments) if not kind.at_target(nodes[n], assignments[n])]
    labels = dict((n, nodes[n]['metadata'].get('labels') or {}) for n in todo)
    return {
        'before': dict((n, {LABEL_MIG_CONFIG: labels[n].get(LABEL_MIG_CONFIG),
                            LABEL_MIG_STATE: labels[n].get(LABEL_MIG_STATE)}) for n in todo),
        'after': dict((n, {LABEL_MIG_CONFIG: assignments[n], LABEL_MIG_STATE: 'success'}) for n in todo),
    }


def run(conn, params, check_mode, log=None):
    """Validate everything, then roll out. Returns the result dict; raises InputError (nothing
    written) or RolloutFailed (with a partial result)."""
    started = time.monotonic()
    refuse(option_errors(params) + assignment_errors(params['assignments'], 'config'))
    kind, config_map, plugin = _kind(conn, params)
    rollout = NodeRollout(conn, kind, dict(params, check_mode=check_mode), log=log,
                          progress=Progress(params.get('progress_file'), 'mig', params.get('progress_timeout')))
    nodes = dict((n['metadata']['name'], n) for n in rollout.list_nodes())
    kind.sharing = read_sharing(conn, plugin, kind.strategy, params['operator_namespace'], nodes.values())
    assignments, errors = resolve_assignments(params['assignments'], nodes, 'config')
    errors.extend(node_errors(nodes, assignments))
    for name in sorted(n for n in assignments if is_gpu_node(nodes[n])):
        errors.extend(kind.validate(nodes[name], assignments[name]))
    errors.extend(held_elsewhere(kind, nodes, assignments))
    todo = [n for n in assignments if not kind.at_target(nodes[n], assignments[n])]
    if not params.get('allow_vgpu_nodes'):
        errors.extend(vgpu_errors(nodes, todo, 'MIG'))
    errors.extend(not_ready_errors(nodes, todo))
    check_inputs(errors, params, len(assignments))
    refuse(plan_errors(rollout, assignments, nodes))

    result = rollout.run(assignments, nodes)
    result['diff'] = _diff(kind, nodes, assignments)
    return finish_result(result, conn, started, rollout.warnings, mig_strategy=kind.strategy, config_map=config_map,
                         assignments=assignments)


__all__ = ['run', 'InputError', 'RolloutFailed']
