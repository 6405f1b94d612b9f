# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The GPU operator's ClusterPolicy: base spec, overrides, tolerations, patches. Pure, no I/O.

* The base is the ClusterPolicy in the operator CSV's ``alm-examples`` (OLM installs) or the
  built-in ``DEFAULT_SPEC`` below (Helm or plain-manifest installs whose chart did not create one).
* User ``overrides`` are deep-merged into it: mappings merge key by key, anything else (lists,
  strings, numbers) replaces; ``None`` removes the key.
* ``daemonsets.tolerations`` is never replaced: the GPU operator REPLACES its default list with a
  non-empty one (controllers/object_controls.go), so a user who adds a toleration for their own
  taint would silently lose ``nvidia.com/gpu`` and the operands would stop scheduling on tainted
  GPU nodes. Lists are merged with ``tolerations.merge_tolerations``, which always keeps it.
* On an existing ClusterPolicy only what the user asked for is compared and patched (a merge
  patch of the differing keys); fields other roles set (``mig.strategy`` by the mig role,
  ``devicePlugin.config`` by the sharing role) are never reverted to the base, unless
  ``replace`` asks for exactly base + overrides.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy

from ansible_collections.gpuops.gpu.plugins.module_utils.common.merge import deep_merge, get_path, merge_patch, set_path
from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import suggest, type_name
from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import (
    CLUSTER_POLICY_API_VERSION, CLUSTER_POLICY_KIND, DEFAULT_MIG_CONFIG_MAP, MIG_STRATEGIES)
from ansible_collections.gpuops.gpu.plugins.module_utils.common.objects import name_of
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.tolerations import (
    GPU_TOLERATION, merge_tolerations, toleration_errors, toleration_identity)
from ansible_collections.gpuops.gpu.plugins.module_utils.common.errors import InputError

KIND = CLUSTER_POLICY_KIND
API_VERSION = CLUSTER_POLICY_API_VERSION
DEFAULT_NAME = 'gpu-cluster-policy'
TOLERATIONS_PATH = ('daemonsets', 'tolerations')

# Built-in base for installs that do not come with a ClusterPolicy example. Written from the
# ClusterPolicy field reference (api/nvidia/v1/clusterpolicy_types.go, the fields the CRD marks
# required plus the documented defaults): every operand on, MIG strategy single, rolling updates
# one node at a time, operands tolerating the nvidia.com/gpu taint. It names no images: the
# operator takes them from its own environment (as under OLM) unless overrides set them.
DEFAULT_SPEC = {
    'operator': {'defaultRuntime': 'containerd'},
    'daemonsets': {
        'updateStrategy': 'RollingUpdate',
        'rollingUpdate': {'maxUnavailable': '1'},
        'tolerations': [dict(GPU_TOLERATION)],
    },
    'driver': {'enabled': True},
    'toolkit': {'enabled': True},
    'devicePlugin': {'enabled': True},
    'dcgm': {'enabled': True},
    'dcgmExporter': {'enabled': True},
    'gfd': {'enabled': True},
    'nodeStatusExporter': {'enabled': True},
    'mig': {'strategy': 'single'},
    'migManager': {'enabled': True},
    'validator': {'plugin': {'env': []}},
}


class PolicyError(InputError, ValueError):
    """Invalid input for a ClusterPolicy (message says what to fix)."""


# --- base -----------------------------------------------------------------------------------

def base_policy(alm_examples=None, base=None):
    """``(name or None, spec)`` to start from: ``base`` (a ClusterPolicy object or a bare spec),
    else the ClusterPolicy in ``alm_examples``, else the built-in defaults."""
    if base is not None:
        if not isinstance(base, dict):
            raise PolicyError('base must be a ClusterPolicy (mapping), got %s' % type_name(base))
        if 'spec' in base or base.get('kind') == KIND:
            spec = base.get('spec')
            if not isinstance(spec, dict):
                raise PolicyError('base.spec must be a mapping, got %s' % type_name(spec))
            return name_of(base), copy.deepcopy(spec)
        return None, copy.deepcopy(base)
    if alm_examples:
        if not isinstance(alm_examples, list):
            raise PolicyError('alm_examples must be the list the CSV annotation holds, got %s'
                              % type_name(alm_examples))
        for example in alm_examples:
            if isinstance(example, dict) and example.get('kind') == KIND:
                spec = example.get('spec')
                if not isinstance(spec, dict) or not spec:
                    raise PolicyError('the ClusterPolicy in alm_examples has no spec (the operator does not '
                                      'deploy anything from an empty spec)')
                return name_of(example), copy.deepcopy(spec)
        kinds = sorted(set(str(e.get('kind')) for e in alm_examples if isinstance(e, dict)))
        raise PolicyError('alm_examples has no ClusterPolicy (kinds: %s); pass the alm_examples of the GPU '
                          'operator CSV' % (', '.join(kinds) or 'none'))
    return None, copy.deepcopy(DEFAULT_SPEC)


# --- overrides and tolerations --------------------------------------------------------------

def user_tolerations(overrides, tolerations):
    """The tolerations the user asks for: O(tolerations) plus overrides.daemonsets.tolerations."""
    return list(get_path(overrides or {}, TOLERATIONS_PATH) or []) + list(tolerations or [])


def _without_tolerations(overrides):
    out = copy.deepcopy(overrides or {})
    daemonsets = out.get('daemonsets')
    if isinstance(daemonsets, dict):
        daemonsets.pop('tolerations', None)
    return out


def merged_tolerations(current, wanted):
    """New ``daemonsets.tolerations`` or None when the list should stay as it is.

    ``current`` None/[] means the operator's own default (which tolerates nvidia.com/gpu); it is
    only replaced when the user asks for tolerations. A non-empty list missing nvidia.com/gpu is
    repaired.
    """
    current = list(current or [])
    if not wanted and not current:
        return None
    merged = merge_tolerations(current, wanted, keep_gpu=True)
    return merged


def desired_spec(base_spec, overrides=None, tolerations=None):
    """base + overrides, with daemonsets.tolerations merged (create and replace)."""
    spec = deep_merge(base_spec, _without_tolerations(overrides))
    merged = merged_tolerations(get_path(base_spec, TOLERATIONS_PATH), user_tolerations(overrides, tolerations))
    if merged is not None:
        set_path(spec, TOLERATIONS_PATH, merged)
    return spec


def patch_for_existing(current_spec, overrides=None, tolerations=None):
    """Merge patch for an existing ClusterPolicy: only overrides and tolerations, only what differs."""
    patch = merge_patch(current_spec, _without_tolerations(overrides))
    merged = merged_tolerations(get_path(current_spec, TOLERATIONS_PATH), user_tolerations(overrides, tolerations))
    if merged is not None and merged != (get_path(current_spec, TOLERATIONS_PATH) or []):
        set_path(patch, TOLERATIONS_PATH, merged)
    return patch


def gpu_toleration_missing(spec):
    """True when the policy's daemonsets.tolerations is a non-empty list without nvidia.com/gpu."""
    current = get_path(spec, TOLERATIONS_PATH)
    if not current or not isinstance(current, list):
        return False
    wanted = toleration_identity(GPU_TOLERATION)
    return not any(isinstance(t, dict) and _covers(t, wanted) for t in current)


def _covers(toleration, wanted):
    key, operator, _value, effect = toleration_identity(toleration)
    if operator == 'Exists' and not key:
        return effect in ('', wanted[3])
    return key == wanted[0] and operator == 'Exists' and effect in ('', wanted[3])


# --- validation -----------------------------------------------------------------------------

def input_errors(overrides=None, tolerations=None, schema=None):
    """Everything wrong with the inputs, before any write: tolerations (key/operator/value/effect
    rules the CRD schema does not express), and the overrides against the CRD ``schema`` (the
    ``spec`` node of the cluster's ClusterPolicy CRD) or, without one, the basic shape."""
    if overrides is not None and not isinstance(overrides, dict):
        return ['overrides must be a mapping of ClusterPolicy spec fields, got %s' % type_name(overrides)]
    overrides = overrides or {}
    errors = []
    if schema:
        errors.extend(schema_errors(deep_merge({}, overrides), schema, 'overrides'))
        errors.extend(e for e in schema_errors({'daemonsets': {'tolerations': tolerations or []}}, schema, 'spec')
                      if tolerations)
    else:
        for key, value in sorted(overrides.items()):
            if value is not None and not isinstance(value, dict):
                errors.append("overrides.%s must be a mapping (ClusterPolicy spec.%s is an object), got %s %r"
                              % (key, key, type_name(value), value))
        strategy = get_path(overrides, ('mig', 'strategy'))
        if strategy is not None and strategy not in MIG_STRATEGIES:
            errors.append("overrides.mig.strategy must be one of none, single, mixed, got %r" % (strategy,))
    if isinstance(overrides.get('daemonsets'), dict):
        errors.extend(toleration_errors(get_path(overrides, TOLERATIONS_PATH), 'overrides.daemonsets.tolerations'))
    errors.extend(toleration_errors(tolerations, 'tolerations'))
    return errors


_JSON_TYPES = {
    'object': (dict,), 'array': (list,), 'string': (str,), 'boolean': (bool,),
}


def schema_errors(value, schema, path='spec', max_errors=20):
    """Check ``value`` against a CRD openAPIV3Schema node: types, enums, unknown fields (which the
    apiserver would silently prune). Returns messages; only what is set is checked."""
    errors = []
    _walk(value, schema or {}, path, errors)
    return errors[:max_errors]


def _type_ok(value, expected, schema):
    if value is None:
        return True
    if schema.get('x-kubernetes-int-or-string'):
        return isinstance(value, (str, int)) and not isinstance(value, bool)
    if expected == 'integer':
        return isinstance(value, int) and not isinstance(value, bool)
    if expected == 'number':
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if expected in _JSON_TYPES:
        return isinstance(value, _JSON_TYPES[expected])
    return True


def _walk(value, schema, path, errors):
    expected = schema.get('type')
    if not _type_ok(value, expected, schema):
        errors.append('%s must be %s, got %s %r' % (path, _type_phrase(expected, schema), type_name(value), value))
        return
    if value is None:
        return
    if schema.get('enum') and value not in schema['enum']:
        errors.append('%s must be one of %s, got %r' % (path, ', '.join(str(e) for e in schema['enum']), value))
    if isinstance(value, dict):
        props = schema.get('properties')
        extra = schema.get('additionalProperties')
        preserve = schema.get('x-kubernetes-preserve-unknown-fields')
        for key in sorted(value):
            sub = '%s.%s' % (path, key)
            if props and key in props:
                _walk(value[key], props[key], sub, errors)
            elif isinstance(extra, dict):
                _walk(value[key], extra, sub, errors)
            elif props is not None and not preserve and extra is not True:
                hint = suggest(key, list(props))
                errors.append("%s: unknown field '%s'%s (the apiserver would drop it silently)"
                              % (path, key, "; did you mean '%s'?" % hint if hint else ''))
    elif isinstance(value, list) and isinstance(schema.get('items'), dict):
        for index, item in enumerate(value):
            _walk(item, schema['items'], '%s[%d]' % (path, index), errors)


def _type_phrase(expected, schema):
    if schema.get('x-kubernetes-int-or-string'):
        return 'an integer or a string'
    return {'object': 'a mapping', 'array': 'a list', 'string': 'a string (quote it in YAML)',
            'boolean': 'true or false', 'integer': 'an integer', 'number': 'a number'}.get(expected, expected)


def spec_schema(crd):
    """The ``spec`` schema of the served version of a ClusterPolicy CRD (or None)."""
    for version in ((crd or {}).get('spec') or {}).get('versions') or []:
        if version.get('served') and version.get('name') == 'v1':
            return (((version.get('schema') or {}).get('openAPIV3Schema') or {}).get('properties') or {}).get('spec')
    return None


# --- status ---------------------------------------------------------------------------------

def policy_state(policy):
    return ((policy or {}).get('status') or {}).get('state') or ''


def not_ready_reason(policy):
    """Why a ClusterPolicy is not ready, from its conditions ('' when unknown)."""
    for cond in ((policy or {}).get('status') or {}).get('conditions') or []:
        if cond.get('type') in ('Error', 'Ready') and cond.get('status') in ('True', 'False'):
            if cond.get('type') == 'Ready' and cond.get('status') == 'True':
                continue
            text = '%s: %s' % (cond.get('reason') or cond.get('type'), cond.get('message') or '')
            return text.strip(': ')
    return ''


def other_policy_error(policies, name):
    """The GPU operator reconciles ONE ClusterPolicy (the others are 'ignored')."""
    others = sorted(p['metadata']['name'] for p in policies if p['metadata']['name'] != name)
    if others:
        return ("ClusterPolicy %s already exists and the GPU operator only honours one ClusterPolicy (a second "
                "one stays 'ignored'); set name to %s to manage it, or delete it first" % (others[0], others[0]))
    return None


# --- the ClusterPolicy a role works on --------------------------------------------------------

def select_policy(policies, name='', required=True, name_option='name'):
    """The ClusterPolicy to work on among ``policies`` (as listed), and the errors that stop a caller.

    Returns ``(policy or None, matching policies, errors)``. ``name`` picks one by name; empty means
    the only one. The GPU operator honours a single ClusterPolicy, so more than one without a name is
    always an error (nobody can tell which one the caller meant). None at all is an error only when
    ``required`` (a role that merely adjusts an existing ClusterPolicy has nothing to do without one).
    ``name_option`` is how the messages name the input that picks it (a role's
    ``<role>_cluster_policy_name``).
    """
    policies = [p for p in policies or [] if isinstance(p, dict)]
    if name:
        policies = [p for p in policies if name_of(p) == name]
    names = sorted(name_of(p) or '?' for p in policies)
    if len(policies) > 1:
        return None, policies, ['more than one ClusterPolicy (found %d: %s); the GPU operator honours only one: '
                                'set %s to the one to use' % (len(names), ', '.join(names), name_option)]
    if policies:
        return policies[0], policies, []
    if not required:
        return None, policies, []
    if name:
        return None, policies, ['exactly one ClusterPolicy is needed (found 0); there is no ClusterPolicy named %s: '
                                'set %s to an existing one, or leave it empty for the only one'
                                % (name, name_option)]
    return None, policies, ['exactly one ClusterPolicy is needed (found 0); install the GPU operator first']


# --- the settings other components read from it -----------------------------------------------

def _mapping(value):
    return value if isinstance(value, dict) else {}


def policy_settings(spec, mig_strategy=None):
    """What the GPU operator's components take from a ClusterPolicy ``spec``, with the operator's
    defaults for what is unset: ``mig_strategy`` (``mig.strategy``, else ``single``; an explicit
    ``mig_strategy`` wins), ``device_plugin_config`` (``devicePlugin.config`` ``{name, default}``,
    empty strings when unset) and ``mig_config_map`` (``migManager.config.name``, else the operator's
    built-in ``DEFAULT_MIG_CONFIG_MAP``). The one place this rule is written."""
    spec = _mapping(spec)
    plugin_config = _mapping(_mapping(spec.get('devicePlugin')).get('config'))
    return {
        'mig_strategy': mig_strategy or _mapping(spec.get('mig')).get('strategy') or 'single',
        'device_plugin_config': {'name': plugin_config.get('name') or '',
                                 'default': plugin_config.get('default') or ''},
        'mig_config_map': _mapping(_mapping(spec.get('migManager')).get('config')).get('name')
        or DEFAULT_MIG_CONFIG_MAP,
    }
