# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Plan GPU ResourceQuotas from the quotas role's input. Pure, no I/O.

The role reads the namespaces, the existing ResourceQuotas and the GPU nodes; this file turns
its ``quotas_resource_quotas`` entries into the ResourceQuota manifests to apply (or the ones
to delete), and says everything that is wrong with the input at once, before anything is
written. ``spec.hard`` is normalised by module_utils.gpu.quota (``nvidia.com/gpu`` →
``requests.nvidia.com/gpu``). Quotas this collection writes carry the label
``app.kubernetes.io/managed-by: gpuops.gpu``; a quota without it is never changed or deleted.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import (
    is_dns_label, is_dns_subdomain, is_int, label_key_errors, label_value_errors, type_name, unknown_key_errors)
from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import (
    GPU_RESOURCE, LABEL_MANAGED_BY, LABEL_REPLICAS, MANAGED_BY, RESOURCE_PREFIX, is_managed, managed_by_labels)
from ansible_collections.gpuops.gpu.plugins.module_utils.common.objects import meta_of
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.quota import (
    LIMITS, REQUESTS, normalise_quota, quota_notes, timeslicing_quota_warnings)

DEFAULT_NAME = 'gpu-quota'
STATES = ('present', 'absent')
ENTRY_KEYS = ('name', 'namespace', 'namespaces', 'namespace_selector', 'hard', 'scopes', 'scope_selector',
              'labels', 'annotations')
# ResourceQuota spec.scopes (core/v1 ResourceQuotaScope)
SCOPES = ('Terminating', 'NotTerminating', 'BestEffort', 'NotBestEffort', 'PriorityClass',
          'CrossNamespacePodAffinity', 'VolumeAttributesClass')
_MIG_REPLICAS_RE = re.compile(r'^(nvidia\.com/mig-[^/]+)\.replicas$')


# --- time-slicing replicas from the nodes -------------------------------------------------

def _labels(node):
    if isinstance(node, dict) and isinstance(node.get('metadata'), dict):
        return node['metadata'].get('labels') or {}
    return node if isinstance(node, dict) else {}


def replicas_from_nodes(nodes):
    """{resource: replicas} from GPU feature discovery's ``nvidia.com/gpu.replicas`` and
    ``nvidia.com/mig-<profile>.replicas`` labels; the largest value over ``nodes`` (Node objects or
    label dicts), only resources shared at least 2 ways."""
    result = {}
    for node in nodes or []:
        for key, value in _labels(node).items():
            match = _MIG_REPLICAS_RE.match(key)
            resource = GPU_RESOURCE if key == LABEL_REPLICAS else match.group(1) if match else None
            if resource is None:
                continue
            try:
                ways = int(str(value))
            except ValueError:
                continue
            if ways >= 2 and ways > result.get(resource, 1):
                result[resource] = ways
    return result


# --- input checks -----------------------------------------------------------------------------

def _is_bare_gpu_key(key):
    return isinstance(key, str) and key.startswith(RESOURCE_PREFIX) and not key.startswith((REQUESTS, LIMITS))


def _string_list(value, path, errors):
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        errors.append('%s must be a list of namespace names, got %s' % (path, type_name(value)))
        return []
    return list(value)


def _metadata_errors(value, path, check_values):
    if value is None:
        return []
    if not isinstance(value, dict):
        return ['%s must be a mapping, got %s' % (path, type_name(value))]
    errors = []
    for key in sorted(value, key=str):
        errors.extend('%s key %r: %s' % (path, key, e) for e in label_key_errors(key))
        if check_values:
            errors.extend('%s[%s]: %s' % (path, key, e) for e in label_value_errors(value[key]))
        elif not isinstance(value[key], str):
            errors.append('%s[%s] must be a string, got %s' % (path, key, type_name(value[key])))
    if value.get(LABEL_MANAGED_BY, MANAGED_BY) != MANAGED_BY:
        errors.append('%s: %s is set by the role (%s) and cannot be overridden' % (path, LABEL_MANAGED_BY, MANAGED_BY))
    return errors


def _scope_errors(entry, path):
    errors = []
    scopes = entry.get('scopes')
    if scopes is not None:
        if not isinstance(scopes, list):
            errors.append('%s.scopes must be a list, got %s' % (path, type_name(scopes)))
        else:
            errors.extend("%s.scopes: unknown scope %r (one of %s)" % (path, s, ', '.join(SCOPES))
                          for s in scopes if s not in SCOPES)
    selector = entry.get('scope_selector')
    if selector is not None and not isinstance(selector, dict):
        errors.append('%s.scope_selector must be a mapping (matchExpressions), got %s' % (path, type_name(selector)))
    return errors


def _selected(entry, path, namespaces, selected, state, errors):
    """The namespaces an entry names, in order, without duplicates."""
    result = []
    names = []
    if entry.get('namespace') is not None:
        names.extend(_string_list(entry['namespace'], path + '.namespace', errors))
    if entry.get('namespaces') is not None:
        names.extend(_string_list(entry['namespaces'], path + '.namespaces', errors))
    for name in names:
        if not is_dns_label(name):
            errors.append('%s: %r is not a valid namespace name' % (path, name))
        elif name not in namespaces and state == 'present':
            errors.append("%s: namespace '%s' not found; create it first" % (path, name))
        elif name in namespaces and name not in result:
            result.append(name)
    selector = entry.get('namespace_selector')
    if selector is not None:
        if not isinstance(selector, str) or not selector.strip():
            errors.append('%s.namespace_selector must be a label selector string such as team=ml, got %r'
                          % (path, selector))
        else:
            matched = (selected or {}).get(selector)
            if matched is None:
                errors.append('%s.namespace_selector %r was not resolved (the role resolves it)' % (path, selector))
            elif not matched and state == 'present':
                errors.append('%s.namespace_selector %r matches no namespace' % (path, selector))
            else:
                result.extend(n for n in matched if n not in result)
    if not names and selector is None:
        errors.append('%s: set namespace, namespaces or namespace_selector (which namespaces get the quota)' % path)
    return result


# The namespaces an entry names (namespace, namespaces, namespace_selector), for the planners that take the same
# entry shape (plans/dra_resources.py).
entry_namespaces = _selected
# The check of an entry's labels (values too) or annotations, the same way.
metadata_errors = _metadata_errors


# --- the plan ---------------------------------------------------------------------------------

def _existing_index(existing):
    index = {}
    for quota in existing or []:
        meta = meta_of(quota)
        if meta.get('name') and meta.get('namespace'):
            index[(meta['namespace'], meta['name'])] = meta
    return index


def _manifest(namespace, name, entry, hard):
    metadata = {'name': name, 'namespace': namespace, 'labels': managed_by_labels(entry.get('labels'))}
    if entry.get('annotations'):
        metadata['annotations'] = dict(entry['annotations'])
    spec = {'hard': hard}
    if entry.get('scopes'):
        spec['scopes'] = list(entry['scopes'])
    if entry.get('scope_selector'):
        spec['scopeSelector'] = entry['scope_selector']
    return {'apiVersion': 'v1', 'kind': 'ResourceQuota', 'metadata': metadata, 'spec': spec}


def quota_plan(entries, namespaces, selected=None, existing=None, state='present', default_name=DEFAULT_NAME,
               normalise=True, replicas=None):
    """Turn the role's quota entries into what to write.

    ``entries``: list of {name, namespace|namespaces|namespace_selector, hard, scopes, scope_selector,
    labels, annotations}. ``namespaces``: names of the namespaces that exist. ``selected``:
    {namespace_selector: [matching namespace names]}. ``existing``: the ResourceQuota objects in the
    cluster (ownership). ``normalise``: False rejects bare ``nvidia.com/...`` keys instead of
    rewriting them. ``replicas``: {resource: ways} (see replicas_from_nodes) for the time-slicing
    warnings.

    Returns {'quotas': [manifests to apply], 'delete': [{namespace, name}], 'errors', 'notes',
    'warnings'}; with errors, 'quotas' and 'delete' are empty (nothing may be written).
    """
    planner = _QuotaPlanner(namespaces, selected, existing, state, normalise, replicas)
    if state not in STATES:
        planner.errors.append("state must be one of %s, got %r" % (', '.join(STATES), state))
    if not isinstance(entries, list):
        planner.errors.append('the quotas must be a list of mappings, got %s' % type_name(entries))
        entries = []
    for position, entry in enumerate(entries):
        planner.add(position, entry, default_name)
    ok = not planner.errors
    return {'quotas': planner.quotas if ok else [], 'delete': planner.delete if ok else [],
            'errors': planner.errors, 'notes': planner.notes, 'warnings': planner.warnings}


class _QuotaPlanner(object):
    """The state of one quota_plan() run: what was read, what to write, and the messages."""

    def __init__(self, namespaces, selected, existing, state, normalise, replicas):
        self.namespaces = set(namespaces or [])
        self.selected = selected
        self.index = _existing_index(existing)
        self.state = state
        self.normalise = normalise
        self.replicas = replicas
        self.seen = {}
        self.quotas, self.delete = [], []
        self.errors, self.notes, self.warnings = [], [], []

    def add(self, position, entry, default_name):
        """Check one entry and plan its quota in every namespace it names."""
        path = 'quota[%d]' % position
        if not isinstance(entry, dict):
            self.errors.append('%s must be a mapping, got %s' % (path, type_name(entry)))
            return
        name = entry.get('name', default_name)
        if isinstance(name, str) and name:
            path = "quota[%d] '%s'" % (position, name)
        errors = unknown_key_errors(entry, ENTRY_KEYS, path)
        if not is_dns_subdomain(name):
            errors.append('%s: name %r must be a lowercase DNS subdomain (a-z, 0-9, - and .)' % (path, name))
        targets = _selected(entry, path, self.namespaces, self.selected, self.state, errors)
        hard = self._hard(entry, path, errors) if self.state == 'present' else {}
        for namespace in targets:
            self._target(namespace, name, path, entry, hard, errors)
        self.errors.extend(errors)

    def _hard(self, entry, path, errors):
        """The normalised ``spec.hard`` of a present entry (and its notes, warnings and errors)."""
        raw = entry.get('hard')
        hard = {}
        if not isinstance(raw, dict) or not raw:
            errors.append('%s: hard must be a non-empty mapping of resource to quantity, for example '
                          '{requests.nvidia.com/gpu: 4}, got %r' % (path, raw))
        else:
            hard, hard_errors = normalise_quota(raw)
            errors.extend('%s: %s' % (path, e) for e in hard_errors)
            if not self.normalise:
                errors.extend('%s: %s is never enforced by Kubernetes quota admission; write requests.%s (or set '
                              'quotas_normalise: true to have it rewritten)' % (path, key, key)
                              for key in sorted(k for k in raw if _is_bare_gpu_key(k)))
            if not hard_errors:
                self.notes.extend('%s: %s' % (path, n) for n in quota_notes(raw))
                if self.replicas:
                    self.warnings.extend('%s: %s' % (path, w) for w in timeslicing_quota_warnings(raw, self.replicas))
        errors.extend(_scope_errors(entry, path))
        errors.extend(_metadata_errors(entry.get('labels'), path + '.labels', True))
        errors.extend(_metadata_errors(entry.get('annotations'), path + '.annotations', False))
        return hard

    def _target(self, namespace, name, path, entry, hard, errors):
        """Plan one quota: apply it, delete it, or leave a foreign one alone."""
        key = (namespace, name)
        if key in self.seen:
            errors.append('%s: %s/%s is also set by %s; each quota may be declared once'
                          % (path, namespace, name, self.seen[key]))
            return
        self.seen[key] = path
        current = self.index.get(key)
        if current is not None and not is_managed(current.get('labels')):
            message = ('%s: ResourceQuota %s/%s exists and was not created by gpuops.gpu (no label %s=%s)'
                       % (path, namespace, name, LABEL_MANAGED_BY, MANAGED_BY))
            if self.state == 'present':
                errors.append(message + '; pick another name or remove it first')
            else:
                self.notes.append(message + '; left in place')
            return
        if self.state == 'present':
            self.quotas.append(_manifest(namespace, name, entry, hard))
        elif current is not None:
            self.delete.append({'namespace': namespace, 'name': name})


def replicas_errors(replicas):
    """Problems with a {resource: ways} mapping given by hand ([] when valid)."""
    if replicas is None or is_int(replicas):
        return []
    if not isinstance(replicas, dict):
        return ['replicas must be an integer or a mapping of resource to replicas, got %s' % type_name(replicas)]
    return ['replicas[%s] must be an integer, got %s' % (k, type_name(v)) for k, v in replicas.items() if not is_int(v)]
