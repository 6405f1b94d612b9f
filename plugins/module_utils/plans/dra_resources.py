# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""DRA resources as code: the DeviceClasses, ResourceClaimTemplates and DRA ResourceQuotas of the dra role.
Pure, no I/O.

The role reads the namespaces, the DeviceClasses, the ResourceClaimTemplates and the ResourceQuotas; this file
turns its ``dra_device_classes``, ``dra_claim_templates`` and ``dra_quotas`` entries into the objects to apply
and the objects to delete, and says everything that is wrong with the input at once, before anything is
written. Every object it plans carries ``app.kubernetes.io/managed-by: gpuops.gpu`` and ``gpuops.gpu/role:
dra``; an object of the same name without both is never changed, and only objects with both are deleted when
their entry goes. CEL selectors come from gpu/dra_cel.py, the driver's opaque configuration from
gpu/dra_config.py; the quota entries take the quotas role's shape (plans/quota.py) with ``devices`` (DeviceClass
name to a number of devices) in place of ``hard``.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import (
    is_dns_subdomain, is_int, label_key_errors, suggest, type_name, unknown_key_errors)
from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import (
    LABEL_MANAGED_BY, MANAGED_BY, is_managed, managed_by_labels)
from ansible_collections.gpuops.gpu.plugins.module_utils.common.objects import meta_of
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.dra import (
    ALLOCATION_MODES, API_VERSION, DRIVER, LABEL_ROLE, MIG_CLASS, ROLE, quota_key)
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.dra_cel import (
    SELECTOR_KEYS, has_selector, selector_expression, selects_mig)
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.dra_config import (
    config_parameters, enabled_gates, sharing_errors)
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.quota import entry_namespaces, metadata_errors, quota_plan

CLASS_KEYS = ('name', 'extended_resource_name', 'sharing', 'labels', 'annotations') + SELECTOR_KEYS
TEMPLATE_KEYS = ('name', 'namespace', 'namespaces', 'namespace_selector', 'device_class', 'count', 'allocation_mode',
                 'sharing', 'labels', 'annotations') + SELECTOR_KEYS
QUOTA_KEYS = ('name', 'namespace', 'namespaces', 'namespace_selector', 'devices', 'labels', 'annotations')
DEFAULT_QUOTA_NAME = 'gpu-dra-quota'
REQUEST = 'gpu'
# (plan key, kind, apiVersion, namespaced) in the order the role writes them; deletions go the other way
KINDS = (('device_classes', 'DeviceClass', API_VERSION, False),
         ('claim_templates', 'ResourceClaimTemplate', API_VERSION, True),
         ('quotas', 'ResourceQuota', 'v1', True))
INPUTS = ('device_classes', 'claim_templates', 'quotas', 'feature_gates')


def role_labels(labels=None):
    """``labels`` plus the two the role's objects carry (managed-by and role)."""
    out = managed_by_labels(labels)
    out[LABEL_ROLE] = ROLE
    return out


def is_ours(labels):
    """Whether an object with ``labels`` was written by the dra role."""
    return is_managed(labels) and (labels or {}).get(LABEL_ROLE) == ROLE


def _path(base, position, entry):
    name = entry.get('name') if isinstance(entry, dict) else None
    return "%s[%d] '%s'" % (base, position, name) if isinstance(name, str) and name else '%s[%d]' % (base, position)


def _entries(value, name, errors):
    if value is None:
        return []
    if not isinstance(value, list):
        errors.append('dra_%s must be a list of mappings, got %s' % (name, type_name(value)))
        return []
    return value


def _metadata(entry, name, namespace=None):
    metadata = {'name': name, 'labels': role_labels(entry.get('labels'))}
    if namespace:
        metadata['namespace'] = namespace
    if entry.get('annotations'):
        metadata['annotations'] = dict(entry['annotations'])
    return metadata


def _metadata_errors(entry, path):
    errors = metadata_errors(entry.get('labels'), path + '.labels', True)
    errors.extend(metadata_errors(entry.get('annotations'), path + '.annotations', False))
    labels = entry.get('labels')
    if isinstance(labels, dict) and labels.get(LABEL_ROLE, ROLE) != ROLE:
        errors.append('%s.labels: %s is set by the role (%s) and cannot be overridden' % (path, LABEL_ROLE, ROLE))
    return errors


def _extended_resource_errors(value, path):
    where = path + '.extended_resource_name'
    if not isinstance(value, str) or '/' not in value:
        return ['%s must be a resource name with a domain, such as nvidia.com/gpu or example.com/h100, got %r'
                % (where, value)]
    domain = value.split('/', 1)[0]
    errors = ['%s %r: %s' % (where, value, e) for e in label_key_errors(value)]
    if domain == 'kubernetes.io' or domain.endswith('.kubernetes.io') or domain.startswith('requests.'):
        errors.append('%s %r: the domain may not be kubernetes.io nor start with requests.' % (where, value))
    return errors


def _sharing_config(entry, path, gates, mig, count=None, requests=None):
    """([config entry], errors) of an entry's ``sharing``."""
    share = entry.get('sharing')
    if share is None:
        return [], []
    errors = sharing_errors(share, path + '.sharing', gates, mig=mig, count=count)
    if errors:
        return [], errors
    config = {'opaque': {'driver': DRIVER, 'parameters': config_parameters(share, mig=mig)}}
    if requests:
        config['requests'] = list(requests)
    return [config], []


class _Planner(object):
    """One resources_plan() run: what was read, what to write, and the messages."""

    def __init__(self, inputs, namespaces, selected, existing):
        self.inputs = inputs
        self.namespaces = set(namespaces or [])
        self.selected = selected
        self.existing = existing
        self.errors, self.warnings = [], []
        self.gates, gate_errors = enabled_gates(inputs.get('feature_gates'))
        self.errors.extend('dra_driver_feature_gates: %s' % e for e in gate_errors)
        self.plan = dict((key, []) for key, _kind, _version, _namespaced in KINDS)
        self.replace = []
        self.mig_classes = set([MIG_CLASS])
        self.known_classes = set()

    def _entry_errors(self, variable, keys, position, entry):
        """The path of one entry of ``variable`` and its unknown keys; None for the errors when the entry is
        not a mapping (that error is recorded here)."""
        path = _path(variable, position, entry)
        if not isinstance(entry, dict):
            self.errors.append('%s must be a mapping, got %s' % (path, type_name(entry)))
            return path, None
        return path, unknown_key_errors(entry, keys, path)

    def _named_entry(self, variable, keys, position, entry, example=''):
        """``(path, name, errors)`` of an entry that names an object, its name checked; None when the entry is
        not a mapping."""
        path, errors = self._entry_errors(variable, keys, position, entry)
        if errors is None:
            return None
        name = entry.get('name')
        if not is_dns_subdomain(name):
            errors.append('%s: name %r must be a lowercase DNS subdomain (a-z, 0-9, - and .)%s' % (path, name, example))
        return path, name, errors

    # --- DeviceClasses -------------------------------------------------------------------------------------

    def device_class(self, position, entry):
        checked = self._named_entry('dra_device_classes', CLASS_KEYS, position, entry, ', such as h100.example.com')
        if checked is None:
            return
        path, name, errors = checked
        expression, problems = selector_expression(entry, path)
        errors.extend(problems)
        config, problems = _sharing_config(entry, path, self.gates, selects_mig(entry))
        errors.extend(problems)
        errors.extend(_metadata_errors(entry, path))
        spec = {'selectors': [{'cel': {'expression': expression}}]}
        if config:
            spec['config'] = config
        if entry.get('extended_resource_name') is not None:
            errors.extend(_extended_resource_errors(entry['extended_resource_name'], path))
            spec['extendedResourceName'] = entry['extended_resource_name']
        self.errors.extend(errors)
        if selects_mig(entry) and isinstance(name, str):
            self.mig_classes.add(name)
        if not errors:
            self.plan['device_classes'].append({'apiVersion': API_VERSION, 'kind': 'DeviceClass',
                                                'metadata': _metadata(entry, name), 'spec': spec})

    def class_checks(self):
        """Duplicate names and extended resource names among the classes, clashes with the cluster's."""
        seen, resources = set(), {}
        for manifest in self.plan['device_classes']:
            name = manifest['metadata']['name']
            if name in seen:
                self.errors.append("dra_device_classes: DeviceClass '%s' is declared twice" % name)
            seen.add(name)
            resource = manifest['spec'].get('extendedResourceName')
            if resource and resource in resources:
                self.errors.append("dra_device_classes: extended_resource_name %s is set on both '%s' and '%s'; "
                                   'a pod request can be served by one class only' % (resource, resources[resource], name))
            if resource:
                resources.setdefault(resource, name)
        for cls in self.existing.get('device_classes') or []:
            meta, spec = meta_of(cls), cls.get('spec') or {}
            resource = spec.get('extendedResourceName')
            if resource in resources and meta.get('name') not in seen and not is_ours(meta.get('labels')):
                self.warnings.append("DeviceClass '%s' in the cluster already serves %s; of two classes with the same "
                                     "extended resource name the one created later serves the pods' requests "
                                     "(now: '%s')" % (meta.get('name'), resource, resources[resource]))

    # --- ResourceClaimTemplates ----------------------------------------------------------------------------

    def _device_class_ref(self, entry, path, errors):
        name = entry.get('device_class')
        if not isinstance(name, str) or not name:
            errors.append('%s.device_class is required: the DeviceClass the claim asks for, such as %s or %s'
                          % (path, DRIVER, MIG_CLASS))
            return None
        if name not in self.known_classes:
            hint = suggest(name, sorted(self.known_classes))
            errors.append("%s.device_class '%s' is neither a DeviceClass in the cluster nor in dra_device_classes%s; "
                          'add it to dra_device_classes or install the driver that creates it'
                          % (path, name, "; did you mean '%s'?" % hint if hint else ''))
        return name

    def _request(self, entry, path, errors):
        mode = entry.get('allocation_mode', 'ExactCount')
        count = entry.get('count', 1 if mode == 'ExactCount' else None)
        if mode not in ALLOCATION_MODES:
            errors.append('%s.allocation_mode must be one of %s, got %r' % (path, ', '.join(ALLOCATION_MODES), mode))
        elif mode == 'All' and count is not None:
            errors.append('%s: count applies to allocation_mode ExactCount only; with All the claim takes every '
                          'matching device of a node' % path)
        elif mode == 'ExactCount' and (not is_int(count) or count < 1):
            errors.append('%s.count must be a whole number of devices, at least 1, got %r' % (path, count))
        request = {'deviceClassName': entry.get('device_class'), 'allocationMode': mode}
        if mode == 'ExactCount':
            request['count'] = count
        if has_selector(entry):
            expression, problems = selector_expression(entry, path)
            errors.extend(problems)
            request['selectors'] = [{'cel': {'expression': expression}}]
        return request, count if mode == 'ExactCount' and is_int(count) else None

    def claim_template(self, position, entry):
        checked = self._named_entry('dra_claim_templates', TEMPLATE_KEYS, position, entry)
        if checked is None:
            return
        path, name, errors = checked
        device_class = self._device_class_ref(entry, path, errors)
        request, count = self._request(entry, path, errors)
        mig = selects_mig(entry) or device_class in self.mig_classes
        config, problems = _sharing_config(entry, path, self.gates, mig, count, [REQUEST])
        errors.extend(problems)
        errors.extend(_metadata_errors(entry, path))
        targets = entry_namespaces(entry, path, self.namespaces, self.selected, 'present', errors)
        self.errors.extend(errors)
        if errors:
            return
        devices = {'requests': [dict(name=REQUEST, exactly=request)]}
        if config:
            devices['config'] = config
        for namespace in targets:
            self.plan['claim_templates'].append({
                'apiVersion': API_VERSION, 'kind': 'ResourceClaimTemplate',
                'metadata': _metadata(entry, name, namespace), 'spec': {'spec': {'devices': devices}}})

    # --- ResourceQuotas ------------------------------------------------------------------------------------

    def _quota_entry(self, position, entry):
        """The quotas role's entry for one of dra_quotas (None when it is wrong)."""
        path, errors = self._entry_errors('dra_quotas', QUOTA_KEYS, position, entry)
        if errors is None:
            return None
        devices = entry.get('devices')
        if not isinstance(devices, dict) or not devices:
            errors.append('%s.devices must be a non-empty mapping of DeviceClass name to a number of devices, such '
                          'as {%s: 4}, got %r' % (path, DRIVER, devices))
            devices = {}
        for name, number in devices.items():
            if name not in self.known_classes:
                hint = suggest(name, sorted(self.known_classes))
                errors.append("%s.devices: DeviceClass '%s' is neither in the cluster nor in dra_device_classes%s"
                              % (path, name, "; did you mean '%s'?" % hint if hint else ''))
            if not is_int(number) or number < 0:
                errors.append('%s.devices[%s] must be a whole number of devices (0 or more), got %r' % (path, name, number))
        errors.extend(_metadata_errors(entry, path))
        self.errors.extend(errors)
        if errors:
            return None
        converted = dict((k, v) for k, v in entry.items() if k in QUOTA_KEYS and k != 'devices')
        converted['hard'] = dict((quota_key(name), number) for name, number in devices.items())
        converted['labels'] = role_labels(entry.get('labels'))
        converted.setdefault('name', DEFAULT_QUOTA_NAME)
        return converted

    def quotas(self, entries):
        converted = [self._quota_entry(position, entry) for position, entry in enumerate(entries)]
        if any(entry is None for entry in converted):
            return
        planned = quota_plan(converted, sorted(self.namespaces), selected=self.selected, default_name=DEFAULT_QUOTA_NAME)
        self.errors.extend(e.replace('quota[', 'dra_quotas[', 1) for e in planned['errors'])
        self.plan['quotas'].extend(planned['quotas'])

    # --- ownership and removal -----------------------------------------------------------------------------

    def ownership(self):
        """Refuse to overwrite what the role did not write; delete what it wrote and no entry names any more."""
        delete = []
        for key, kind, version, namespaced in KINDS:
            wanted = dict(((m['metadata'].get('namespace'), m['metadata']['name']), m) for m in self.plan[key])
            for item in self.existing.get(key) or []:
                meta = meta_of(item)
                where = (meta.get('namespace') if namespaced else None, meta.get('name'))
                if where in wanted and is_ours(meta.get('labels')) and kind == 'ResourceClaimTemplate' and \
                        _pruned(item.get('spec')) != _pruned(wanted[where]['spec']):
                    self.replace.append({'api_version': version, 'kind': kind, 'namespace': where[0], 'name': where[1]})
                elif where in wanted and not is_ours(meta.get('labels')):
                    self.errors.append('%s %s exists and was not written by the dra role (labels %s=%s, %s=%s); pick '
                                       'another name or remove it first'
                                       % (kind, '/'.join(p for p in where if p), LABEL_MANAGED_BY, MANAGED_BY,
                                          LABEL_ROLE, ROLE))
                elif where not in wanted and is_ours(meta.get('labels')):
                    delete.append({'api_version': version, 'kind': kind, 'namespace': where[0], 'name': where[1]})
        return list(reversed(delete))

    def class_names(self, entries):
        """The classes a template or quota may name: those of the inputs and those in the cluster that stay."""
        names = set(e.get('name') for e in entries if isinstance(e, dict) and isinstance(e.get('name'), str))
        for cls in self.existing.get('device_classes') or []:
            meta = meta_of(cls)
            if not is_ours(meta.get('labels')) or meta.get('name') in names:
                names.add(meta.get('name'))
        return names


def resources_plan(inputs, namespaces, selected=None, existing=None, served=True):
    """The DeviceClasses, ResourceClaimTemplates and ResourceQuotas to apply, and the ones to delete.

    ``inputs``: {device_classes, claim_templates, quotas, feature_gates} (the role's dra_* variables; the
    enabled driver feature gates as a list of names or a {name: bool} mapping). ``namespaces``: names of the
    namespaces that exist; ``selected``: {namespace_selector: [names]}; ``existing``: {device_classes,
    claim_templates, quotas}: the objects of each kind in the cluster; ``served``: whether the cluster serves
    resource.k8s.io/v1.

    Returns {device_classes, claim_templates, quotas: [manifests], delete: [{api_version, kind, namespace,
    name}] (templates and quotas before classes), replace: the same for the role's templates whose spec changed
    (a template's spec is immutable: deleted, then written again; claims made from it stay as they are),
    dry_run: [manifests] (every object to write, a replaced template under a name of its own), errors,
    warnings, summary}; with errors nothing is to be written.
    """
    errors = [] if isinstance(inputs, dict) else ['the inputs must be a mapping, got %s' % type_name(inputs)]
    inputs = inputs if isinstance(inputs, dict) else {}
    errors.extend(unknown_key_errors(inputs, INPUTS, 'inputs'))
    planner = _Planner(inputs, namespaces, selected, existing if isinstance(existing, dict) else {})
    planner.errors[:0] = errors
    entries = dict((key, _entries(inputs.get(key), key, planner.errors)) for key in INPUTS[:3])
    for position, entry in enumerate(entries['device_classes']):
        planner.device_class(position, entry)
    planner.class_checks()
    planner.known_classes = planner.class_names(entries['device_classes'])
    for position, entry in enumerate(entries['claim_templates']):
        planner.claim_template(position, entry)
    planner.quotas(entries['quotas'])
    delete = planner.ownership()
    wants = any(entries.values()) or delete
    if not served and wants:
        planner.errors.insert(0, 'resource.k8s.io/v1 is not served by this cluster: DRA needs Kubernetes 1.34 or '
                                 'later (OpenShift 4.21); nothing can be written')
    result = dict(planner.plan) if not planner.errors else dict((key, []) for key, _k, _v, _n in KINDS)
    result.update(delete=delete if not planner.errors else [], replace=planner.replace if not planner.errors else [],
                  errors=planner.errors, warnings=planner.warnings)
    result['dry_run'] = _dry_run(result)
    result['summary'] = summary(result)
    return result


def _pruned(value):
    """``value`` without empty mappings, lists and nulls, at any depth (what the API server adds when it reads an
    object back, such as a template's empty ``spec.metadata``)."""
    if isinstance(value, dict):
        value = dict((k, _pruned(v)) for k, v in value.items())
        return dict((k, v) for k, v in value.items() if v not in ({}, [], None))
    if isinstance(value, list):
        return [_pruned(v) for v in value]
    return value


def _check_copy(manifest):
    """A copy of a template under a name of its own, to dry-run a template that is to be replaced (its spec is
    immutable, so a dry run under its own name would only say so)."""
    metadata = dict(manifest['metadata'], name=manifest['metadata']['name'][:240] + '-gpuops-check')
    return dict(manifest, metadata=metadata)


def _dry_run(plan):
    replaced = set((r['namespace'], r['name']) for r in plan['replace'])
    templates = [_check_copy(m) if (m['metadata']['namespace'], m['metadata']['name']) in replaced else m
                 for m in plan['claim_templates']]
    return plan['device_classes'] + templates + plan['quotas']


def _where(meta):
    return '/'.join(p for p in (meta.get('namespace'), meta.get('name')) if p)


def summary(plan):
    """What a plan writes and deletes, as names (namespace/name): the role's result."""
    out = dict((key, [_where(m['metadata']) for m in plan[key]]) for key, _k, _v, _n in KINDS)
    out['deleted'] = ['%s %s' % (d['kind'], _where(d)) for d in plan['delete']]
    out['replaced'] = ['%s %s' % (d['kind'], _where(d)) for d in plan['replace']]
    out['warnings'] = list(plan['warnings'])
    return out
