# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Cluster side of a GPU sharing rollout: read what the device plugin's config-manager will read
(ClusterPolicy ``devicePlugin.config`` and ``mig.strategy``, the device-plugin ConfigMap), validate
every assignment against it BEFORE any write, then hand the work to the rollout engine with
the sharing kind (rollout/sharing_kind.py)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import time

from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import node as gn
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.sharing import sharing_strategy
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.sharing_checks import profile_errors
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.sharing_render import render_profiles
from ansible_collections.gpuops.gpu.plugins.module_utils.common.errors import InputError, RolloutFailed
from ansible_collections.gpuops.gpu.plugins.module_utils.common.waiter import Waiter
from ansible_collections.gpuops.gpu.plugins.module_utils.ops.cluster_policy import read_cluster_policy
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.cluster_policy import policy_settings
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.engine import ANN_TARGET, NodeRollout
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.inputs import (
    assignment_errors, check_inputs, finish_result, node_errors, option_errors, plan_errors, refuse,
    resolve_assignments)
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.node import held_elsewhere, not_ready_errors
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.progress import Progress
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.sharing_kind import (
    DEFAULT, RESERVED, RESTART_SELECTOR, SharingKind, normalise_value)

try:
    import yaml
except ImportError:  # pragma: no cover - AnsibleK8SModule reports missing PyYAML
    yaml = None


def read_profiles(conn, config_map, namespace):
    """{key: text} of the device-plugin ConfigMap."""
    cm = conn.call_or_none(conn.core.read_namespaced_config_map, config_map, namespace)
    if cm is None:
        raise InputError("device-plugin ConfigMap %s/%s not found (ClusterPolicy devicePlugin.config.name names "
                         "it; without it the device plugin cannot start); create it first (the gpuops.gpu.sharing "
                         "role does) or pass profiles" % (namespace, config_map))
    return dict(cm.get('data') or {})


def parse_texts(texts):
    configs = {}
    for key, text in texts.items():
        try:
            configs[key] = yaml.safe_load(text) or {}
        except yaml.YAMLError:
            configs[key] = None
        if configs[key] is not None and not isinstance(configs[key], dict):
            configs[key] = None
    return configs


def resolve(items, nodes):
    """Node → profile. Explicit profiles first; ``default`` assignments only cover the nodes no
    explicit assignment names (so 'every GPU node follows the default, except ...' is expressible)."""
    explicit, fallback, errors = {}, {}, []
    for index, item in enumerate(items):
        item = dict(item, profile=normalise_value(item.get('profile')))
        out, errs = resolve_assignments([item], nodes, 'profile')
        errors.extend(e.replace('assignments[0]', 'assignments[%d]' % index, 1) for e in errs)
        target = fallback if item['profile'] == DEFAULT else explicit
        for name, value in out.items():
            if target.get(name, value) != value:
                errors.append("node %s is assigned both '%s' and '%s'" % (name, target[name], value))
            target[name] = value
    for name, value in fallback.items():
        explicit.setdefault(name, value)
    return explicit, errors


def pick_unshared(kind, wanted):
    """The profile set on nodes that must be unshared while the default shares GPUs."""
    if wanted:
        if wanted not in kind.configs:
            raise InputError("unshared_profile '%s' is not a key of the device-plugin ConfigMap" % wanted)
        if not kind.is_unshared_key(wanted):
            raise InputError("unshared_profile '%s' shares GPUs (or is not valid YAML)" % wanted)
        return wanted
    candidates = sorted(k for k in kind.configs if kind.is_unshared_key(k))
    return candidates[0] if candidates else None


def wait_for_strategy(rollout, kind, nodes, assignments, params):
    """Right after the ClusterPolicy's mig.strategy changed, GFD still reports the old one for a few
    seconds: re-read the nodes until the assigned ones caught up (or state_timeout)."""
    latest = {'nodes': nodes, 'read': False}

    def caught_up():
        if latest['read']:
            latest['nodes'] = dict((n['metadata']['name'], n) for n in rollout.list_nodes())
        latest['read'] = True
        current = latest['nodes']
        return None if any(n in current and kind.strategy_lags(current[n]) for n in assignments) else current
    return Waiter(params['poll_interval']).until(caught_up, params['state_timeout'], lambda: latest['nodes'])


def _policy_settings(conn, params):
    """(mig strategy, device-plugin ConfigMap name, default profile key) from the ClusterPolicy and
    the module's overrides; InputError when the device plugin cannot share anything."""
    policy = read_cluster_policy(conn, params.get('cluster_policy'))
    if policy is None:
        raise InputError('no ClusterPolicy found: GPU sharing is configured through the GPU operator\'s device '
                         'plugin; install the operator first (or name the ClusterPolicy with cluster_policy)')
    spec = policy.get('spec') or {}
    plugin = spec.get('devicePlugin') or {}
    if plugin.get('enabled') is False:
        raise InputError("ClusterPolicy %s has devicePlugin.enabled=false: the NVIDIA device plugin does not run, so "
                         "nothing can be shared through it" % policy['metadata']['name'])
    settings = policy_settings(spec, params.get('mig_strategy'))
    plugin_config = settings['device_plugin_config']
    config_map = params.get('config_map') or plugin_config['name']
    default_key = params.get('default_profile')
    if default_key is None:
        default_key = plugin_config['default']
    if default_key in RESERVED:
        raise InputError("default profile '%s' is a reserved word (none = unshared, default = follow the "
                         "default); name the profile differently" % default_key)
    return settings['mig_strategy'], config_map, default_key


def _profile_texts(conn, params, strategy, config_map, check_mode):
    """{profile key: YAML text}: the given ``profiles`` rendered, else the device-plugin ConfigMap.
    Outside check mode the given profiles must be in the ConfigMap as given: the device plugin reads
    the ConfigMap, never ``profiles``."""
    profiles = params.get('profiles')
    if profiles is None:
        return read_profiles(conn, config_map, params['operator_namespace']) if config_map else {}
    errors = profile_errors(profiles, strategy) if profiles else []
    errors += ["profile name '%s' is reserved (none = unshared, default = follow the default profile)" % name
               for name in profiles if name in RESERVED]
    if not config_map:
        errors.append('profiles are given but no config_map (and the ClusterPolicy has no devicePlugin.config.name)')
    refuse(errors)
    texts = render_profiles(profiles, strategy) if profiles else {}
    if not check_mode and texts:
        cm = conn.call_or_none(conn.core.read_namespaced_config_map, config_map, params['operator_namespace'])
        refuse(stale_profile_errors(texts, None if cm is None else dict(cm.get('data') or {}),
                                    '%s/%s' % (params['operator_namespace'], config_map)))
    return texts


def stale_profile_errors(texts, cm_texts, where):
    """Why the rendered ``profiles`` (``texts``) are not what the device plugin will read from the
    ConfigMap ``where`` (its data ``cm_texts``, None when it does not exist): a profile missing there
    or with other content would make the plugin fail on an unknown config, or apply another one."""
    if cm_texts is None:
        return ['profiles are given but the device-plugin ConfigMap %s does not exist, and the device plugin reads '
                'only the ConfigMap: write it first (the gpuops.gpu.sharing role does), or run in check mode to '
                'plan' % where]
    wanted, have = parse_texts(texts), parse_texts(cm_texts)
    missing = sorted(k for k in wanted if k not in have)
    differ = sorted(k for k in wanted if k in have and have[k] != wanted[k])
    return ['profiles %s %s the device-plugin ConfigMap %s, which is what the device plugin reads: write the '
            'profiles there first (the gpuops.gpu.sharing role does), or run in check mode to plan'
            % (', '.join(keys), verb, where) for keys, verb in ((missing, 'are missing from'), (differ, 'differ from'))
            if keys]


def _kind(conn, params, check_mode):
    """(SharingKind, ConfigMap name or '') for this run."""
    strategy, config_map, default_key = _policy_settings(conn, params)
    texts = _profile_texts(conn, params, strategy, config_map, check_mode)
    kind = SharingKind(texts, parse_texts(texts), default_key, strategy, params['operator_namespace'],
                       configured=bool(config_map),
                       restart_selector=params.get('restart_pod_selector') or RESTART_SELECTOR,
                       overrides=params.get('mig_catalog_overrides'))
    kind.unshared_key = pick_unshared(kind, params.get('unshared_profile'))
    kind.strict_strategy = not check_mode
    return kind, config_map


def _skip_unlabelled(kind, nodes, assignments):
    """Drop ``default`` assignments of nodes GFD has not labelled yet (they follow the default anyway)."""
    for name in sorted(n for n, value in assignments.items() if value == DEFAULT and not kind.product(nodes[n])):
        kind.warnings.append('node %s has no GPU feature discovery labels yet; it follows the default profile '
                             'once its device plugin starts, and is verified on the next run' % name)
        del assignments[name]


def _errors(kind, nodes, assignments, config_map, todo, allow_vgpu=False):
    """Why the assignments cannot be applied, including nodes left by a killed run or labelled
    with a profile the ConfigMap no longer has; ``todo``: the assigned nodes not at their target."""
    errors = []
    if config_map and kind.default_key and kind.default_key not in kind.configs:
        errors.append("the default profile '%s' is not a key of the device-plugin ConfigMap %s (profiles: %s): every "
                      "GPU node without a %s label would fail"
                      % (kind.default_key, config_map, ', '.join(sorted(kind.configs)) or 'none', kind.label))
    errors.extend(node_errors(nodes, assignments))
    for name in sorted(n for n in assignments if gn.is_gpu_node(nodes[n])):
        errors.extend(kind.validate(nodes[name], assignments[name]))
    errors.extend(held_elsewhere(kind, nodes, assignments))
    if not allow_vgpu:
        errors.extend(gn.vgpu_errors(nodes, todo, 'GPU sharing'))
    errors.extend(not_ready_errors(nodes, todo))
    for name in sorted(set(nodes) - set(assignments)):
        ann = (nodes[name]['metadata'].get('annotations') or {}).get(ANN_TARGET, '')
        if ann.startswith(kind.label + '='):  # left by a killed run: it is resumed, so check it too
            errors.extend(kind.validate(nodes[name], ann.split('=', 1)[1]))
            continue
        current = (nodes[name]['metadata'].get('labels') or {}).get(kind.label)
        if current and config_map and current not in kind.configs:
            errors.append("node %s is labelled %s=%s, which is not a key of the device-plugin ConfigMap: its device "
                          "plugin fails at the next restart; assign it a profile (or none/default)"
                          % (name, kind.label, current))
    return errors


def _diff(kind, nodes, assignments, todo):
    todo = sorted(todo)
    return {
        'before': dict((n, {kind.label: kind.labels(nodes[n]).get(kind.label),
                            'allocatable': gn.gpu_resources((nodes[n].get('status') or {}).get('allocatable'))})
                       for n in todo),
        'after': dict((n, {kind.label: kind.desired_label(nodes[n], assignments[n]),
                           'allocatable': kind.expected_allocatable(nodes[n], assignments[n])}) for n in todo),
    }


def run(conn, params, check_mode, log=None):
    """Validate everything, then roll out. Returns the result dict; raises InputError (nothing
    written) or RolloutFailed (with a partial result)."""
    started = time.monotonic()
    refuse(option_errors(params) + assignment_errors(params['assignments'], 'profile'))
    kind, config_map = _kind(conn, params, check_mode)
    rollout = NodeRollout(conn, kind, dict(params, check_mode=check_mode), log=log,
                          progress=Progress(params.get('progress_file'), 'sharing', params.get('progress_timeout')))
    nodes = dict((n['metadata']['name'], n) for n in rollout.list_nodes())
    assignments, errors = resolve(params['assignments'], nodes)
    if not check_mode:
        nodes = wait_for_strategy(rollout, kind, nodes, assignments, params)
    _skip_unlabelled(kind, nodes, assignments)
    todo = [n for n in assignments if not kind.at_target(nodes[n], assignments[n])]
    check_inputs(errors + _errors(kind, nodes, assignments, config_map, todo, params.get('allow_vgpu_nodes')),
                 params, len(assignments))
    refuse(plan_errors(rollout, assignments, nodes))

    diff = _diff(kind, nodes, assignments, todo)
    result = rollout.run(assignments, nodes)
    result['diff'] = diff
    return finish_result(
        result, conn, started, rollout.warnings + kind.warnings, mig_strategy=kind.mig_strategy,
        config_map=config_map or None, default_profile=kind.default_key or None, unshared_profile=kind.unshared_key,
        assignments=assignments,
        profiles=dict((k, sharing_strategy(c) if isinstance(c, dict) else 'invalid') for k, c in kind.configs.items()))


__all__ = ['run', 'InputError', 'RolloutFailed']
