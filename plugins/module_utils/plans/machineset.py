# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""OpenShift GPU MachineSets: the patch (or the clone) that makes one MachineSet a GPU node group
the cluster autoscaler can scale. Pure, no I/O; used by ``plans.autoscaling``.

Per MachineSet: the ``cluster-api/accelerator`` label on the MachineSet and on the node template,
the scale-from-zero annotations (``machine.openshift.io/GPU|vCPU|memoryMb`` and the
``capacity.cluster-autoscaler.kubernetes.io/*`` equivalents), zone/region labels, taints, the
device-plugin / MIG config labels and provider spec changes (vSphere VM template per vGPU profile).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy

from ansible_collections.gpuops.gpu.plugins.module_utils.common.merge import deep_merge
from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import (
    GPU_RESOURCE, LABEL_DP_CONFIG, LABEL_MIG_CONFIG)
from ansible_collections.gpuops.gpu.plugins.module_utils.common.objects import annotations_of, labels_of, meta_of
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.tolerations import tolerates

ACCELERATOR_LABEL = 'cluster-api/accelerator'
MACHINESET_LABEL = 'machine.openshift.io/cluster-api-machineset'
MACHINESET_API = 'machine.openshift.io/v1beta1'
ANN_GPU = 'machine.openshift.io/GPU'
ANN_VCPU = 'machine.openshift.io/vCPU'
ANN_MEMORY = 'machine.openshift.io/memoryMb'
# The cluster autoscaler's scale-from-zero annotations (the same facts for any cloud provider).
CAPACITY_PREFIX = 'capacity.cluster-autoscaler.kubernetes.io/'
ANN_CAP_GPU_COUNT, ANN_CAP_GPU_TYPE, ANN_CAP_CPU, ANN_CAP_MEMORY, ANN_CAP_LABELS, ANN_CAP_TAINTS = (
    CAPACITY_PREFIX + name for name in ('gpu-count', 'gpu-type', 'cpu', 'memory', 'labels', 'taints'))
# Written by the MachineAutoscaler controller, never copied to a clone.
ANN_MIN_SIZE = 'machine.openshift.io/cluster-api-autoscaler-node-group-min-size'
ANN_MAX_SIZE = 'machine.openshift.io/cluster-api-autoscaler-node-group-max-size'
LABEL_ZONE = 'topology.kubernetes.io/zone'
LABEL_REGION = 'topology.kubernetes.io/region'
LABEL_VGPU_PROFILE = 'gpuops.gpu/vgpu-profile'
VSPHERE_KIND = 'VSphereMachineProviderSpec'
# Annotations a clone must not inherit: they describe the source's instance type or its autoscaler.
_CLONE_DROP_ANNOTATIONS = (ANN_GPU, ANN_VCPU, ANN_MEMORY, 'machine.openshift.io/maxPods',
                           ANN_MIN_SIZE, ANN_MAX_SIZE, 'kubectl.kubernetes.io/last-applied-configuration')


# --- object access ----------------------------------------------------------------------------

def template_spec(ms):
    return (((ms or {}).get('spec') or {}).get('template') or {}).get('spec') or {}


def template_node_labels(ms):
    return dict(labels_of(template_spec(ms)))


def provider_value(ms):
    return ((template_spec(ms).get('providerSpec') or {}).get('value')) or {}


# --- capacity annotations and taints ----------------------------------------------------------

def parse_pairs(text):
    """'k1=v1,k2=v2' (capacity annotation format) -> ordered list of (key, value)."""
    pairs = []
    for part in (text or '').split(','):
        part = part.strip()
        if not part:
            continue
        key, _sep, value = part.partition('=')
        pairs.append((key.strip(), value.strip()))
    return pairs


def render_pairs(pairs):
    return ','.join('%s=%s' % (k, v) for k, v in pairs)


def merge_pairs(existing_text, wanted):
    """Existing 'k=v' pairs with ``wanted`` (dict) added or updated; existing order kept, new keys sorted."""
    pairs = parse_pairs(existing_text)
    keys = [k for k, _v in pairs]
    out = [(k, wanted.get(k, v)) for k, v in pairs]
    out.extend((k, wanted[k]) for k in sorted(wanted) if k not in keys)
    return render_pairs(out)


def render_taints(taints):
    """Taints in the capacity annotation format: 'key=value:Effect' or 'key:Effect', comma separated."""
    parts = []
    for taint in taints or []:
        if taint.get('value'):
            parts.append('%s=%s:%s' % (taint['key'], taint['value'], taint['effect']))
        else:
            parts.append('%s:%s' % (taint['key'], taint['effect']))
    return ','.join(parts)


def merge_taints(existing, wanted):
    """Template taints: ``wanted`` replaces taints with the same key and effect, others are kept."""
    wanted_ids = set((t['key'], t['effect']) for t in wanted or [])
    out = [copy.deepcopy(t) for t in existing or [] if (t.get('key'), t.get('effect')) not in wanted_ids]
    for taint in wanted or []:
        item = {'key': taint['key'], 'effect': taint['effect']}
        if taint.get('value') not in (None, ''):
            item['value'] = taint['value']
        out.append(item)
    return out


def provider_zone_region(value):
    """(zone, region) from a providerSpec value: AWS placement, GCP zone/region, Azure zone/location."""
    value = value or {}
    placement = value.get('placement') or {}
    zone = placement.get('availabilityZone') or value.get('zone')
    region = placement.get('region') or value.get('region') or value.get('location')
    zone = str(zone) if zone not in (None, '') else None
    region = str(region) if region not in (None, '') else None
    if zone and region and zone.isdigit():
        # Azure numbers its zones per region: the node label is <location>-<zone>
        zone = '%s-%s' % (region, zone)
    return zone, region


# --- one MachineSet ---------------------------------------------------------------------------

def clone_machineset(source, name, replicas=0):
    """A new MachineSet copied from ``source``: own name, selector and template label, no status."""
    md = meta_of(source)
    annotations = dict((k, v) for k, v in (md.get('annotations') or {}).items()
                       if k not in _CLONE_DROP_ANNOTATIONS and not k.startswith(CAPACITY_PREFIX))
    labels = dict(md.get('labels') or {})
    labels.pop(ACCELERATOR_LABEL, None)
    spec = copy.deepcopy(source.get('spec') or {})
    spec['replicas'] = replicas
    selector = spec.setdefault('selector', {})
    selector.setdefault('matchLabels', {})[MACHINESET_LABEL] = name
    template = spec.setdefault('template', {})
    template.setdefault('metadata', {}).setdefault('labels', {})[MACHINESET_LABEL] = name
    new = {'apiVersion': MACHINESET_API, 'kind': 'MachineSet',
           'metadata': {'name': name, 'namespace': md.get('namespace'), 'labels': labels},
           'spec': spec}
    if annotations:
        new['metadata']['annotations'] = annotations
    return new


def _desired_node_labels(entry, value):
    labels = dict(entry.get('labels') or {})
    labels[ACCELERATOR_LABEL] = entry['accelerator']
    zone, region = provider_zone_region(value)
    zone = entry.get('zone') or zone
    region = entry.get('region') or region
    if zone:
        labels[LABEL_ZONE] = zone
    if region:
        labels[LABEL_REGION] = region
    for key, label in (('sharing_config', LABEL_DP_CONFIG), ('mig_config', LABEL_MIG_CONFIG),
                       ('vgpu_profile', LABEL_VGPU_PROFILE)):
        if entry.get(key):
            labels[label] = entry[key]
    return labels


def _known_gpus(entry, annotations, create, where, errors, warnings):
    """The GPUs per machine (entry, else the provider's annotation) or None; checks scale-from-zero."""
    known = entry.get('gpus')
    if known is None and not create:
        try:
            known = int(annotations.get(ANN_GPU)) if annotations.get(ANN_GPU) not in (None, '') else None
        except ValueError:
            known = None
        if known == 0:
            errors.append('%s has %s=0, its instance type has no GPU (the machine-api '
                          'provider computed it); choose a GPU MachineSet or set gpus for an instance '
                          'type the provider does not know' % (where, ANN_GPU))
    if known is None and not entry.get('min_replicas') and entry.get('machine_autoscaler', True) is not False:
        warnings.append('%s has no %s annotation and gpus is not set: the autoscaler cannot '
                        'scale it up from zero (it does not know the node will have GPUs). Set gpus (and '
                        'vcpu, memory_mb) unless the machine-api provider fills them in (AWS, Azure, GCP)'
                        % (where, ANN_GPU))
    return known


def _vgpu_errors(entry, value, path, name, vgpu_templates):
    """vgpu_profile needs a vSphere MachineSet with a VM template; records template -> profiles."""
    if not entry.get('vgpu_profile'):
        return []
    if value.get('kind') != VSPHERE_KIND:
        return ['%s: vgpu_profile is for vSphere MachineSets (providerSpec kind %s), MachineSet %s '
                'has %s' % (path, VSPHERE_KIND, name, value.get('kind') or 'no kind')]
    if not value.get('template'):
        return ['%s: vgpu_profile %s needs the VM template that carries the profile: '
                'provider_spec: {template: <VM template>}' % (path, entry['vgpu_profile'])]
    vgpu_templates.setdefault(value['template'], set()).add(entry['vgpu_profile'])
    return []


def _cluster_config_checks(entry, taints, path, name, context, errors, warnings):
    """The operator must tolerate the taints; sharing/MIG configs must exist (when known)."""
    for taint in taints:
        if context['tolerations'] is not None and not any(
                tolerates(t, taint) for t in context['tolerations']):
            warnings.append('%s: the GPU operator DaemonSets (ClusterPolicy daemonsets.tolerations) do not '
                            'tolerate the taint %s:%s; the driver and device plugin will not run on new nodes '
                            'of %s (add the toleration, see the gpu_node_placement role)'
                            % (path, taint.get('key'), taint.get('effect'), name))
    for key, known, what in (('sharing_config', 'sharing_keys', 'a key of the device-plugin ConfigMap (keys'),
                             ('mig_config', 'mig_configs', 'a mig-parted config of the MIG manager (configs')):
        if entry.get(key) and context[known] is not None and entry[key] not in context[known]:
            errors.append('%s.%s: %s is not %s: %s)'
                          % (path, key, entry[key], what, ', '.join(sorted(context[known])) or 'none'))


def _wanted_annotations(entry, labels, taints, current, capacity_annotations):
    """The scale-from-zero annotations the MachineSet should carry."""
    gpus, vcpu, memory = entry.get('gpus'), entry.get('vcpu'), entry.get('memory_mb')
    wanted = {}
    for key, value in ((ANN_GPU, gpus), (ANN_VCPU, vcpu), (ANN_MEMORY, memory)):
        if value is not None:
            wanted[key] = str(value)
    if capacity_annotations:
        if gpus is not None:
            wanted[ANN_CAP_GPU_COUNT] = str(gpus)
            wanted[ANN_CAP_GPU_TYPE] = GPU_RESOURCE
        if vcpu is not None:
            wanted[ANN_CAP_CPU] = str(vcpu)
        if memory is not None:
            wanted[ANN_CAP_MEMORY] = '%dMi' % memory
        wanted[ANN_CAP_LABELS] = merge_pairs(current.get(ANN_CAP_LABELS), labels)
        if taints:
            wanted[ANN_CAP_TAINTS] = render_taints(taints)
    return wanted


def _machineset_patch(entry, base, value, labels, taints, capacity_annotations):
    """The merge patch (only what differs) taking ``base`` to the GPU MachineSet."""
    annotations = dict(annotations_of(base))
    wanted_ann = _wanted_annotations(entry, labels, taints, annotations, capacity_annotations)
    annotations_patch = dict((k, v) for k, v in wanted_ann.items() if annotations.get(k) != v)
    patch = {}
    if labels_of(base).get(ACCELERATOR_LABEL) != entry['accelerator']:
        patch.setdefault('metadata', {})['labels'] = {ACCELERATOR_LABEL: entry['accelerator']}
    if annotations_patch:
        patch.setdefault('metadata', {})['annotations'] = annotations_patch
    current_labels = template_node_labels(base)
    template_labels_patch = dict((k, v) for k, v in labels.items() if current_labels.get(k) != v)
    tspec_patch = {}
    if template_labels_patch:
        tspec_patch['metadata'] = {'labels': template_labels_patch}
    if taints != (template_spec(base).get('taints') or []):
        tspec_patch['taints'] = taints
    if entry.get('provider_spec') and value != provider_value(base):
        tspec_patch['providerSpec'] = {'value': copy.deepcopy(entry['provider_spec'])}
    if tspec_patch:
        patch['spec'] = {'template': {'spec': tspec_patch}}
    return patch


def plan_machineset(entry, name, obj, source, namespace, capacity_annotations, context, errors, warnings):
    """The plan of one chosen MachineSet (patch, or definition when cloned); appends errors/warnings.

    ``context``: index (of the entry), tolerations, sharing_keys, mig_configs (None = unknown) and
    vgpu_templates (collects VM template -> vGPU profiles).
    """
    path = 'autoscaling_machine_sets[%d]' % context['index']
    if entry.get('label_selector'):
        path += ' (MachineSet %s)' % name
    create = obj is None
    base = clone_machineset(source, name, entry.get('replicas') or 0) if create else obj
    value = deep_merge(provider_value(base), entry.get('provider_spec') or {})
    known_gpus = _known_gpus(entry, annotations_of(base), create,
                             '%s: MachineSet %s' % (path, name), errors, warnings)
    errors.extend(_vgpu_errors(entry, value, path, name, context['vgpu_templates']))
    labels = _desired_node_labels(entry, value)
    current_taints = template_spec(base).get('taints') or []
    taints = merge_taints(current_taints, entry.get('taints')) if entry.get('taints') else current_taints
    _cluster_config_checks(entry, taints, path, name, context, errors, warnings)
    patch = _machineset_patch(entry, base, value, labels, taints, capacity_annotations)
    result = {
        'name': name, 'namespace': namespace, 'create': create, 'accelerator': entry['accelerator'],
        'gpus': known_gpus, 'min_replicas': entry.get('min_replicas') or 0,
        'max_replicas': entry.get('max_replicas'),
        'machine_autoscaler': entry.get('machine_autoscaler', True) is not False,
        'zone': labels.get(LABEL_ZONE), 'node_labels': labels, 'taints': taints,
        'patch': patch, 'definition': None,
    }
    if create:
        result['definition'] = deep_merge(base, patch)
        result['patch'] = {}
    return result
