# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""OpenShift AI / Open Data Hub profiles: one AcceleratorProfile or HardwareProfile per GPU resource
the nodes advertise, with the tolerations of the GPU node taints. Pure, no I/O.

The kinds and the fields set are in docs/openshift-ai.md (with their upstream sources):
- ``accelerator_profile``: ``dashboard.opendatahub.io/v1`` ``AcceleratorProfile``, spec ``displayName``,
  ``enabled``, ``identifier`` (the extended resource), ``description``, ``tolerations``; Open Data Hub /
  OpenShift AI 2.x (from 3.0 on the operator refuses to create or update them);
- ``hardware_profile``: ``infrastructure.opendatahub.io/v1`` ``HardwareProfile`` (3.0 on), spec
  ``identifiers`` (one ``Accelerator`` entry) and ``scheduling`` (``type: Node``, ``node.tolerations``);
  display name, description and enabled are the ``opendatahub.io/*`` annotations;
  ``hardware_profile_v1alpha1``: the same object in ``v1alpha1``, the version 2.x serves (deprecated in 3.0);
- ``auto`` (resolve_kind): ``hardware_profile`` where the cluster serves HardwareProfile v1, else
  ``accelerator_profile``.

Ownership: the profiles carry ``app.kubernetes.io/managed-by: gpuops.gpu``; a profile without it is
never changed or deleted (a name clash with one is an input error).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import (
    Fields, Items, bool_errors, is_dns_label, is_dns_subdomain, one_of, string_errors, type_name)
from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import (
    GPU_RESOURCE, MIG_RESOURCE_PREFIX, RESOURCE_PREFIX, SHARED_RESOURCE, is_managed, managed_by_labels)
from ansible_collections.gpuops.gpu.plugins.module_utils.common.objects import labels_of, meta_of
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import tolerations as tol
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.node import gpu_resources, is_gpu_resource
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.placement import placement_tolerations

# kind option -> (apiVersion, kind, CRD name)
KINDS = {
    'accelerator_profile': ('dashboard.opendatahub.io/v1', 'AcceleratorProfile',
                            'acceleratorprofiles.dashboard.opendatahub.io'),
    'hardware_profile': ('infrastructure.opendatahub.io/v1', 'HardwareProfile',
                         'hardwareprofiles.infrastructure.opendatahub.io'),
    'hardware_profile_v1alpha1': ('infrastructure.opendatahub.io/v1alpha1', 'HardwareProfile',
                                  'hardwareprofiles.infrastructure.opendatahub.io'),
}
AUTO = 'auto'
ANN_DISPLAY_NAME = 'opendatahub.io/display-name'
ANN_DESCRIPTION = 'opendatahub.io/description'
ANN_DISABLED = 'opendatahub.io/disabled'
STATES = ('present', 'absent')
_VAR = 'openshift_ai_'


def _mapping_of_strings(value, path):
    if not isinstance(value, dict):
        return ['%s must be a mapping of resource name to text, got %s' % (path, type_name(value))]
    errors = []
    for key, text in value.items():
        if not is_gpu_resource(str(key)):
            errors.append("%s: '%s' is not a GPU resource (nvidia.com/gpu, nvidia.com/gpu.shared or "
                          "nvidia.com/mig-<profile>)" % (path, key))
        errors.extend(string_errors(text, '%s[%s]' % (path, key)))
    return errors


def _prefix_errors(value, path):
    if isinstance(value, str) and is_dns_label(value + '-gpu'):
        return []
    return ["%s must be lowercase letters, digits and '-', starting with a letter or digit, "
            "got %r" % (path, value)]


def _namespace_errors(value, path):
    return [] if is_dns_label(value) else ['%s must be a namespace name, got %r' % (path, value)]


def _resource_errors(value, path):
    if isinstance(value, str) and is_gpu_resource(value):
        return []
    return ['%s must be a GPU resource such as nvidia.com/gpu or nvidia.com/mig-1g.10gb, got %r' % (path, value)]


def _toleration_list_errors(value, path):
    return tol.toleration_errors(value, path)


def _taint_list_errors(value, path):
    return tol.taint_errors(value, path)


_CONFIG = Fields({
    'namespace': _namespace_errors,
    'kind': one_of(*sorted(KINDS)),  # resolved: resolve_kind() turns auto into one of these
    'state': one_of(*STATES),
    'name_prefix': _prefix_errors,
    'display_names': _mapping_of_strings,
    'descriptions': _mapping_of_strings,
    'enabled': bool_errors,
    'resources': Items(_resource_errors),
    'taints': _taint_list_errors,
    'tolerations': _toleration_list_errors,
    'match_value': bool_errors,
}, required={'namespace': 'the namespace of the OpenShift AI applications, e.g. redhat-ods-applications'})


def config_errors(config):
    """Every problem of the role's input, with the variable names (``openshift_ai_*``)."""
    if not isinstance(config, dict):
        return ['the settings must be a mapping, got %s' % type_name(config)]
    return [e if e.startswith('top level') else _VAR + e for e in _CONFIG(config, '')]


def resolve_kind(kind, hardware_profile_v1_served=None):
    """The kind option to use: ``kind`` itself, or for ``auto`` ``hardware_profile`` when the cluster serves
    ``infrastructure.opendatahub.io/v1`` HardwareProfile (Open Data Hub / OpenShift AI 3.0 on, where the operator
    refuses new AcceleratorProfiles), else ``accelerator_profile``."""
    if kind == AUTO:
        if hardware_profile_v1_served is None:
            raise ValueError('openshift_ai_kind auto needs to know whether the cluster serves '
                             'infrastructure.opendatahub.io/v1 HardwareProfile')
        return 'hardware_profile' if hardware_profile_v1_served else 'accelerator_profile'
    if kind not in KINDS:
        raise ValueError('openshift_ai_kind must be one of %s, got %r' % (', '.join(sorted(KINDS) + [AUTO]), kind))
    return kind


def profile_kind(kind, hardware_profile_v1_served=None):
    """``{'option', 'api_version', 'kind', 'crd'}`` of the kind option (see resolve_kind for ``auto``)."""
    option = resolve_kind(kind, hardware_profile_v1_served)
    api_version, name, crd = KINDS[option]
    return {'option': option, 'api_version': api_version, 'kind': name, 'crd': crd}


def advertised_resources(nodes):
    """{GPU resource: the largest allocatable count of one node} over the nodes, zero counts left out."""
    out = {}
    for node in nodes or []:
        for name, count in gpu_resources((node.get('status') or {}).get('allocatable')).items():
            if count > 0:
                out[name] = max(out.get(name, 0), count)
    return out


def profile_name(prefix, resource):
    """'<prefix>-gpu', '<prefix>-gpu-shared', '<prefix>-mig-1g-10gb': a DNS label from the resource."""
    short = resource[len(RESOURCE_PREFIX):] if resource.startswith(RESOURCE_PREFIX) else resource
    return '%s-%s' % (prefix, short.replace('.', '-').replace('/', '-').lower())


def default_display_name(resource):
    """'NVIDIA GPU', 'NVIDIA GPU (shared)', 'NVIDIA MIG 1g.10gb'."""
    if resource == GPU_RESOURCE:
        return 'NVIDIA GPU'
    if resource == SHARED_RESOURCE:
        return 'NVIDIA GPU (shared)'
    if resource.startswith(MIG_RESOURCE_PREFIX):
        return 'NVIDIA MIG ' + resource[len(MIG_RESOURCE_PREFIX):]
    return resource


def _description(resource, config):
    given = (config.get('descriptions') or {}).get(resource)
    if given is not None:
        return given
    return 'Schedules on GPU nodes that advertise %s (managed by gpuops.gpu)' % resource


def profile_definition(config, resource, max_count, tolerations):
    """The object for one resource, in the configured kind."""
    api_version, kind, _crd = KINDS[config.get('kind') or 'accelerator_profile']
    display = (config.get('display_names') or {}).get(resource) or default_display_name(resource)
    enabled = config.get('enabled', True) is not False
    metadata = {'name': profile_name(config.get('name_prefix') or 'gpuops', resource),
                'namespace': config['namespace'], 'labels': managed_by_labels()}
    if kind == 'AcceleratorProfile':
        spec = {'displayName': display, 'enabled': enabled, 'identifier': resource,
                'description': _description(resource, config), 'tolerations': tolerations}
    else:
        metadata['annotations'] = {ANN_DISPLAY_NAME: display, ANN_DESCRIPTION: _description(resource, config),
                                   ANN_DISABLED: 'false' if enabled else 'true'}
        spec = {'identifiers': [{'displayName': display, 'identifier': resource, 'resourceType': 'Accelerator',
                                 'minCount': 1, 'defaultCount': 1, 'maxCount': max_count}],
                'scheduling': {'type': 'Node', 'node': {'tolerations': tolerations}}}
    return {'apiVersion': api_version, 'kind': kind, 'metadata': metadata, 'spec': spec}


def _subset(want, have):
    """True when every field of ``want`` is in ``have`` with the same value (lists compared whole)."""
    if isinstance(want, dict):
        return isinstance(have, dict) and all(_subset(v, have.get(k)) for k, v in want.items())
    return want == have


def _up_to_date(definition, existing):
    meta, have = definition['metadata'], meta_of(existing)
    return (_subset(meta.get('labels') or {}, have.get('labels') or {})
            and _subset(meta.get('annotations') or {}, have.get('annotations') or {})
            and _subset(definition['spec'], existing.get('spec') or {}))


def openshift_ai_plan(config, cluster=None):
    """What the openshift_ai role writes and deletes.

    ``config``: namespace, kind, state, name_prefix, display_names, descriptions, enabled, resources
    (only these; empty: every advertised one), taints, tolerations (extra), match_value.
    ``cluster``: ``nodes`` (Node dicts), ``profiles`` (the kind's objects in the namespace),
    ``crd_present`` (bool, default true: k8s_info's ``api_found``). Returns ``{'errors', 'api_version',
    'kind', 'resources', 'tolerations', 'apply': [{'name', 'resource', 'definition', 'action': create|update|unchanged}], 'delete': [names],
    'kept': [names of profiles not ours], 'summary': ['create <name> (<resource>)', 'delete <name>', ...],
    'changed'}``. With errors, nothing is to be written.
    """
    cluster = dict(cluster or {})
    plan = {'errors': config_errors(config), 'api_version': '', 'kind': '', 'resources': {}, 'tolerations': [],
            'apply': [], 'delete': [], 'kept': [], 'summary': [], 'changed': False}
    if plan['errors']:
        return plan
    api_version, kind, crd = KINDS[config.get('kind') or 'accelerator_profile']
    plan.update(api_version=api_version, kind=kind)
    if config.get('state', 'present') == 'present' and not cluster.get('crd_present', True):
        plan['errors'].append('the cluster does not serve %s %s (CRD %s): install OpenShift AI or Open Data Hub '
                              'first, or choose another openshift_ai_kind (auto picks the one the cluster serves)'
                              % (api_version, kind, crd))
        return plan
    profiles = cluster.get('profiles') or []
    ours = dict((p['metadata']['name'], p) for p in profiles if is_managed(labels_of(p)))
    plan['kept'] = sorted(p['metadata']['name'] for p in profiles if p['metadata']['name'] not in ours)
    if config.get('state', 'present') == 'absent':
        plan['delete'] = sorted(ours)
    else:
        _plan_present(plan, config, cluster.get('nodes') or [], profiles, ours)
    plan['summary'] = (['%s %s (%s)' % (a['action'], a['name'], a['resource']) for a in plan['apply']]
                       + ['delete %s' % name for name in plan['delete']])
    plan['changed'] = bool(plan['delete']) or any(a['action'] != 'unchanged' for a in plan['apply'])
    return plan


def _selected_resources(plan, config, nodes):
    advertised = advertised_resources(nodes)
    wanted = config.get('resources') or sorted(advertised)
    missing = [r for r in wanted if r not in advertised]
    if missing:
        plan['errors'].append('%sresources: no node advertises %s (advertised: %s); drop it or change the GPU '
                              'configuration first' % (_VAR, ', '.join(missing), ', '.join(sorted(advertised)) or 'none'))
    if not advertised:
        plan['errors'].append('no node advertises a GPU resource (nvidia.com/gpu, nvidia.com/mig-*): install the GPU '
                              'operator first, or wait for its device plugin')
    return dict((r, advertised[r]) for r in wanted if r in advertised)


def _plan_present(plan, config, nodes, profiles, ours):
    resources = _selected_resources(plan, config, nodes)
    plan['resources'] = resources
    plan['tolerations'] = placement_tolerations(config.get('taints') or [], config.get('tolerations'),
                                                bool(config.get('match_value')))
    by_name = dict((p['metadata']['name'], p) for p in profiles)
    names = {}
    for resource in sorted(resources):
        definition = profile_definition(config, resource, resources[resource], plan['tolerations'])
        name = definition['metadata']['name']
        if name in names:
            plan['errors'].append('%s and %s both give the profile name %s' % (names[name], resource, name))
        names[name] = resource
        if not is_dns_subdomain(name):
            plan['errors'].append('the profile name %s of %s is not a valid object name: shorten openshift_ai_name_prefix'
                                  % (name, resource))
        existing = by_name.get(name)
        if existing is not None and name not in ours:
            plan['errors'].append('%s %s/%s exists and is not managed by gpuops.gpu (no label app.kubernetes.io/'
                                  'managed-by=gpuops.gpu): delete it, or set another openshift_ai_name_prefix'
                                  % (plan['kind'], config['namespace'], name))
            continue
        action = 'create' if existing is None else 'unchanged' if _up_to_date(definition, existing) else 'update'
        plan['apply'].append({'name': name, 'resource': resource, 'definition': definition, 'action': action})
    plan['delete'] = sorted(n for n in ours if n not in names)
    if plan['errors']:
        plan['apply'], plan['delete'] = [], []
