# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""OpenShift GPU autoscaling: validate the wanted GPU MachineSets and plan every write. Pure, no I/O.

``autoscaling_plan(machine_sets, existing, ...)`` takes what the user asked for and what the
cluster holds (MachineSets, MachineAutoscalers, the ClusterAutoscaler, optionally the device-plugin
config keys, the MIG config names and the operator's tolerations) and returns ``errors`` (nothing
may be written when there is one), ``warnings`` and the objects to write:

* per GPU MachineSet a JSON merge patch (or a full object when it is cloned from a source
  MachineSet): the ``cluster-api/accelerator`` label on the MachineSet and on the node template,
  the scale-from-zero annotations (``machine.openshift.io/GPU|vCPU|memoryMb`` and the
  ``capacity.cluster-autoscaler.kubernetes.io/*`` equivalents), zone/region labels, taints, the
  device-plugin / MIG config labels, provider spec changes (vSphere VM template per vGPU profile);
* one ``MachineAutoscaler`` per GPU MachineSet (never one for a MachineSet that was not chosen);
* the ``ClusterAutoscaler`` ``default`` with ``resourceLimits.gpus[{type,min,max}]`` whose types
  are exactly the accelerator label values (a type no GPU MachineSet carries is an error).

Facts (docs/facts.md#cluster-autoscaler-on-openshift): the autoscaler counts a node's GPUs under the type given by the VALUE of
its ``cluster-api/accelerator`` label; that value is a Kubernetes label value, so ``nvidia.com/gpu``
(the resource name, used in the operator's own example) can never match.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy

from ansible_collections.gpuops.gpu.plugins.module_utils.common.merge import deep_merge
from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import managed_by_labels
from ansible_collections.gpuops.gpu.plugins.module_utils.common.objects import labels_of, meta_of, name_of
from ansible_collections.gpuops.gpu.plugins.module_utils.common.selector import parse_selector, selector_matches
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.autoscaling_inputs import input_errors
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.machineset import (
    ACCELERATOR_LABEL, MACHINESET_API, plan_machineset, template_node_labels)

AUTOSCALING_API = 'autoscaling.openshift.io/v1'
MACHINE_AUTOSCALER_API = 'autoscaling.openshift.io/v1beta1'


def autoscaling_plan(machine_sets, existing_machine_sets=None, existing_machine_autoscalers=None,
                     existing_cluster_autoscaler=None, namespace='openshift-machine-api', gpu_limits=None,
                     resource_limits=None, scale_down=None, max_node_provision_time=None,
                     cluster_autoscaler_spec=None, manage_cluster_autoscaler=True,
                     capacity_annotations=True, sharing_keys=None, mig_configs=None, tolerations=None,
                     inputs_only=False):
    """Validate and plan; see the module docstring. Returns a dict (never raises on bad input).

    ``inputs_only=True`` runs only the checks that need no cluster knowledge (before any read).
    """
    errors = input_errors(machine_sets, gpu_limits, resource_limits, scale_down, max_node_provision_time,
                          cluster_autoscaler_spec)
    warnings = []
    if errors or inputs_only:
        return _result(errors, warnings)

    existing = dict((name_of(ms), ms) for ms in existing_machine_sets or [] if name_of(ms))
    context = {'sharing_keys': None if sharing_keys is None else set(sharing_keys),
               'mig_configs': None if mig_configs is None else set(mig_configs),
               'tolerations': tolerations, 'vgpu_templates': {}}
    plans = []
    for index, entry, name, obj, source in _resolve(machine_sets, existing, errors):
        context['index'] = index
        plans.append(plan_machineset(entry, name, obj, source, namespace, capacity_annotations,
                                     context, errors, warnings))
    for template, profiles in sorted(context['vgpu_templates'].items()):
        if len(profiles) > 1:
            errors.append('VM template %s is used for vGPU profiles %s: one MachineSet per vGPU profile, each '
                          'referencing the VM template that carries that profile'
                          % (template, ', '.join(sorted(profiles))))
    chosen = set(p['name'] for p in plans)
    other_types = set(template_node_labels(ms).get(ACCELERATOR_LABEL) for name, ms in existing.items()
                      if name not in chosen and template_node_labels(ms).get(ACCELERATOR_LABEL))
    autoscalers = [_machine_autoscaler(p, existing_machine_autoscalers) for p in plans if p['machine_autoscaler']]
    gpus = _gpu_limits(plans, gpu_limits, existing_cluster_autoscaler, other_types, errors, warnings)
    cluster_autoscaler = None
    if manage_cluster_autoscaler:
        cluster_autoscaler = _cluster_autoscaler(existing_cluster_autoscaler, cluster_autoscaler_spec, gpus,
                                                 resource_limits, scale_down, max_node_provision_time)
    return _result(errors, warnings, plans, autoscalers, cluster_autoscaler, gpus)


def _resolve(entries, existing_by_name, errors):
    """[(entry index, entry, MachineSet name, existing object or None, source object or None)]."""
    resolved = []
    chosen = {}
    all_names = sorted(existing_by_name)
    for index, entry in enumerate(entries):
        path = 'autoscaling_machine_sets[%d]' % index
        if entry.get('label_selector'):
            terms = parse_selector(entry['label_selector'])
            names = sorted(n for n in all_names
                           if selector_matches(terms, labels_of(existing_by_name[n])))
            if not names:
                errors.append("%s.label_selector '%s' matches no MachineSet (existing: %s)"
                              % (path, entry['label_selector'], ', '.join(all_names) or 'none'))
                continue
            if len(all_names) > 1 and len(names) == len(all_names):
                errors.append("%s.label_selector '%s' matches every MachineSet (%s); GPU settings and "
                              "MachineAutoscalers go to GPU MachineSets only, narrow the selector"
                              % (path, entry['label_selector'], ', '.join(names)))
                continue
            targets = [(n, existing_by_name[n], None) for n in names]
        else:
            name = entry['name']
            source = None
            if name not in existing_by_name:
                if entry.get('source') in (None, ''):
                    errors.append('%s: MachineSet %s does not exist (existing: %s); set source to create '
                                  'it as a copy of another MachineSet' % (path, name, ', '.join(all_names) or 'none'))
                    continue
                source = existing_by_name.get(entry['source'])
                if source is None:
                    errors.append('%s.source: MachineSet %s does not exist (existing: %s)'
                                  % (path, entry['source'], ', '.join(all_names) or 'none'))
                    continue
            targets = [(name, existing_by_name.get(name), source)]
        for name, obj, source in targets:
            if name in chosen:
                errors.append('%s selects MachineSet %s, already chosen by %s' % (path, name, chosen[name]))
                continue
            chosen[name] = path
            resolved.append((index, entry, name, obj, source))
    return resolved


def _machine_autoscaler(ms_plan, existing_autoscalers):
    name = ms_plan['name']
    for ma in existing_autoscalers or []:
        ref = ((ma.get('spec') or {}).get('scaleTargetRef')) or {}
        if ref.get('kind') == 'MachineSet' and ref.get('name') == name \
                and meta_of(ma).get('namespace', ms_plan['namespace']) == ms_plan['namespace']:
            name = name_of(ma)  # adopt the existing one: two MachineAutoscalers for one MachineSet conflict
            break
    return {
        'apiVersion': MACHINE_AUTOSCALER_API, 'kind': 'MachineAutoscaler',
        'metadata': {'name': name, 'namespace': ms_plan['namespace'],
                     'labels': managed_by_labels()},
        'spec': {'minReplicas': ms_plan['min_replicas'], 'maxReplicas': ms_plan['max_replicas'],
                 'scaleTargetRef': {'apiVersion': MACHINESET_API, 'kind': 'MachineSet',
                                    'name': ms_plan['name']}},
    }


def _gpu_limits(ms_plans, limits, existing_ca, other_types, errors, warnings):
    """The resourceLimits.gpus list: explicit limits, derived ones, and other types kept."""
    by_type = {}
    for plan in ms_plans:
        by_type.setdefault(plan['accelerator'], []).append(plan)
    out = []
    explicit = dict((l['type'], l) for l in limits or [])
    known_types = set(by_type) | set(other_types)
    for index, limit in enumerate(limits or []):
        if limit['type'] not in known_types:
            errors.append('autoscaling_gpu_limits[%d].type %s matches no GPU MachineSet: the '
                          'cluster-api/accelerator labels are %s. The autoscaler would never count these '
                          'GPUs (mismatch between ClusterAutoscaler and MachineSet labels)'
                          % (index, limit['type'], ', '.join(sorted(known_types)) or 'none'))
            continue
        for plan in by_type.get(limit['type'], []):
            if plan['gpus'] and limit['max'] < plan['gpus']:
                errors.append('autoscaling_gpu_limits[%d]: max %d GPUs of type %s is less than the %d GPUs of '
                              'one machine of MachineSet %s; the autoscaler could never add such a node'
                              % (index, limit['max'], limit['type'], plan['gpus'], plan['name']))
    for gpu_type in sorted(by_type):
        if gpu_type in explicit:
            limit = explicit[gpu_type]
            out.append({'type': gpu_type, 'min': limit['min'], 'max': limit['max']})
            continue
        plans = [p for p in by_type[gpu_type] if p['machine_autoscaler']]
        missing = [p['name'] for p in plans if not p['gpus']]
        if missing:
            errors.append('GPU type %s: cannot derive its ClusterAutoscaler limit, the GPU count of MachineSet '
                          '%s is unknown; set gpus on the entry or give autoscaling_gpu_limits for %s'
                          % (gpu_type, ', '.join(missing), gpu_type))
            continue
        maximum = sum(p['gpus'] * p['max_replicas'] for p in plans)
        if maximum < 1:
            continue
        out.append({'type': gpu_type, 'min': 0, 'max': maximum})
    for gpu_type in sorted(set(explicit) - set(by_type)):
        if gpu_type in other_types:
            # a GPU MachineSet this run does not manage carries the type: the limit is still valid
            out.append({'type': gpu_type, 'min': explicit[gpu_type]['min'], 'max': explicit[gpu_type]['max']})
    ours = set(e['type'] for e in out) | set(explicit)
    spec = ((existing_ca or {}).get('spec') or {})
    for item in ((spec.get('resourceLimits') or {}).get('gpus')) or []:
        gpu_type = item.get('type')
        if gpu_type in ours:
            continue
        out.append(copy.deepcopy(item))
        if gpu_type not in known_types:
            warnings.append('ClusterAutoscaler resourceLimits.gpus has type %s that no MachineSet carries as '
                            'cluster-api/accelerator; it is kept as it is but counts no GPU' % gpu_type)
    return sorted(out, key=lambda e: str(e.get('type')))


def _cluster_autoscaler(existing, spec_overrides, gpus, resource_limits, scale_down, max_node_provision_time):
    """The ClusterAutoscaler ``default``: the existing spec with the role's settings merged in."""
    spec = deep_merge((existing or {}).get('spec') or {}, spec_overrides or {})
    limits = deep_merge(spec.get('resourceLimits') or {}, resource_limits or {})
    if gpus:
        limits['gpus'] = gpus
    spec['resourceLimits'] = limits
    if scale_down:
        spec['scaleDown'] = deep_merge(spec.get('scaleDown') or {}, scale_down)
    if max_node_provision_time:
        spec['maxNodeProvisionTime'] = max_node_provision_time
    cluster_autoscaler = {'apiVersion': AUTOSCALING_API, 'kind': 'ClusterAutoscaler',
                          'metadata': {'name': 'default'}, 'spec': spec}
    if existing is None:
        cluster_autoscaler['metadata']['labels'] = managed_by_labels()
    return cluster_autoscaler


def _result(errors, warnings, plans=None, autoscalers=None, cluster_autoscaler=None, gpus=None):
    plans = plans or []
    return {
        'errors': errors,
        'warnings': warnings,
        'machine_sets': plans,
        'machine_autoscalers': autoscalers or [],
        'cluster_autoscaler': cluster_autoscaler,
        'gpu_limits': gpus or [],
        'summary': [{'machine_set': p['name'], 'accelerator': p['accelerator'], 'gpus': p['gpus'],
                     'min': p['min_replicas'] if p['machine_autoscaler'] else None,
                     'max': p['max_replicas'] if p['machine_autoscaler'] else None,
                     'zone': p['zone'], 'create': p['create']} for p in plans],
    }
