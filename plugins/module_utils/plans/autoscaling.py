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

Facts (nvidia-facts.md §7): the autoscaler counts a node's GPUs under the type given by the VALUE of
its ``cluster-api/accelerator`` label; that value is a Kubernetes label value, so ``nvidia.com/gpu``
(the resource name, used in the operator's own example) can never match.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import re

from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.tolerations import (
    is_dns_subdomain,
    is_int,
    label_key_errors,
    label_value_errors,
    taint_errors,
    type_name,
    unknown_key_errors,
)

ACCELERATOR_LABEL = 'cluster-api/accelerator'
MACHINESET_LABEL = 'machine.openshift.io/cluster-api-machineset'
ANN_GPU = 'machine.openshift.io/GPU'
ANN_VCPU = 'machine.openshift.io/vCPU'
ANN_MEMORY = 'machine.openshift.io/memoryMb'
CAPACITY_PREFIX = 'capacity.cluster-autoscaler.kubernetes.io/'
ANN_CAP_GPU_COUNT = CAPACITY_PREFIX + 'gpu-count'
ANN_CAP_GPU_TYPE = CAPACITY_PREFIX + 'gpu-type'
ANN_CAP_CPU = CAPACITY_PREFIX + 'cpu'
ANN_CAP_MEMORY = CAPACITY_PREFIX + 'memory'
ANN_CAP_LABELS = CAPACITY_PREFIX + 'labels'
ANN_CAP_TAINTS = CAPACITY_PREFIX + 'taints'
# Written by the MachineAutoscaler controller, never copied to a clone.
ANN_MIN_SIZE = 'machine.openshift.io/cluster-api-autoscaler-node-group-min-size'
ANN_MAX_SIZE = 'machine.openshift.io/cluster-api-autoscaler-node-group-max-size'
LABEL_ZONE = 'topology.kubernetes.io/zone'
LABEL_REGION = 'topology.kubernetes.io/region'
LABEL_DP_CONFIG = 'nvidia.com/device-plugin.config'
LABEL_MIG_CONFIG = 'nvidia.com/mig.config'
LABEL_VGPU_PROFILE = 'gpuops.gpu/vgpu-profile'
LABEL_MANAGED_BY = 'app.kubernetes.io/managed-by'
MANAGED_BY = 'gpuops.gpu'
GPU_RESOURCE = 'nvidia.com/gpu'
VSPHERE_KIND = 'VSphereMachineProviderSpec'

MACHINESET_API = 'machine.openshift.io/v1beta1'
AUTOSCALING_API = 'autoscaling.openshift.io/v1'
MACHINE_AUTOSCALER_API = 'autoscaling.openshift.io/v1beta1'

ENTRY_KEYS = ('name', 'label_selector', 'source', 'replicas', 'accelerator', 'gpus', 'vcpu',
              'memory_mb', 'labels', 'taints', 'zone', 'region', 'sharing_config', 'mig_config',
              'allow_mig_preset', 'provider_spec', 'vgpu_profile', 'min_replicas', 'max_replicas',
              'machine_autoscaler')
LIMIT_KEYS = ('type', 'min', 'max')
# Annotations a clone must not inherit: they describe the source's instance type or its autoscaler.
_CLONE_DROP_ANNOTATIONS = (ANN_GPU, ANN_VCPU, ANN_MEMORY, 'machine.openshift.io/maxPods',
                           ANN_MIN_SIZE, ANN_MAX_SIZE, 'kubectl.kubernetes.io/last-applied-configuration')
_DURATION_RE = re.compile(r'^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$')
_SELECTOR_TERM_RE = re.compile(
    r'^\s*(?P<neg>!)?\s*(?P<key>[A-Za-z0-9][-A-Za-z0-9_./]*)\s*'
    r'(?:(?P<op>==|=|!=)\s*(?P<value>[-A-Za-z0-9_.]*)|\s+(?P<setop>in|notin)\s*\((?P<values>[^)]*)\))?\s*$')

NVIDIA_GPU_EXPLANATION = (
    "'nvidia.com/gpu' is the name of the GPU resource, not a GPU type: a label value cannot "
    "contain '/', and the cluster autoscaler matches ClusterAutoscaler resourceLimits.gpus[].type "
    "against the VALUE of the node label cluster-api/accelerator. Use a GPU type such as "
    "nvidia-a100 or nvidia-t4, the same string on the MachineSet and in the ClusterAutoscaler")
MIG_PRESET_EXPLANATION = (
    'presetting nvidia.com/mig.config on a MachineSet template is affected by gpu-operator#2670: '
    'on a node that joins with the label already set, the device plugin can start before the MIG '
    "manager applied the layout and fails with 'device 0 has no MIG devices configured' (the "
    'workaround is to change the label after the node joined, which gpuops.gpu.mig / mig_rollout '
    'do). Set allow_mig_preset: true on the entry to accept this, or leave mig_config out and '
    'partition new nodes with the mig role')


class SelectorError(ValueError):
    """A label selector that cannot be parsed."""


# --- label selectors ------------------------------------------------------------------------

def parse_selector(selector):
    """Parse a Kubernetes label selector string into [(op, key, values)]; raises SelectorError.

    Supports ``k=v``, ``k==v``, ``k!=v``, ``k``, ``!k``, ``k in (a,b)``, ``k notin (a,b)``.
    """
    if not isinstance(selector, str) or not selector.strip():
        raise SelectorError('a label selector must be a non-empty string')
    terms = []
    for raw in _split_terms(selector):
        match = _SELECTOR_TERM_RE.match(raw)
        if not match:
            raise SelectorError("cannot parse '%s' in label selector '%s'" % (raw.strip(), selector))
        key, neg = match.group('key'), bool(match.group('neg'))
        if match.group('op'):
            if neg:
                raise SelectorError("'!' only goes before a bare key, not '%s'" % raw.strip())
            op = '!=' if match.group('op') == '!=' else '='
            terms.append((op, key, [match.group('value')]))
        elif match.group('setop'):
            if neg:
                raise SelectorError("'!' only goes before a bare key, not '%s'" % raw.strip())
            values = [v.strip() for v in match.group('values').split(',') if v.strip()]
            terms.append((match.group('setop'), key, values))
        else:
            terms.append(('!exists' if neg else 'exists', key, []))
    return terms


def _split_terms(selector):
    """Split on commas that are not inside parentheses."""
    terms, depth, current = [], 0, ''
    for char in selector:
        if char == '(':
            depth += 1
        elif char == ')':
            depth -= 1
        if char == ',' and depth == 0:
            terms.append(current)
            current = ''
        else:
            current += char
    terms.append(current)
    return [t for t in terms if t.strip()]


def selector_matches(terms, labels):
    """Whether ``labels`` satisfy every parsed selector term."""
    labels = labels or {}
    for op, key, values in terms:
        present = key in labels
        value = labels.get(key)
        if op == '=' and not (present and value == values[0]):
            return False
        if op == '!=' and present and value == values[0]:
            return False
        if op == 'in' and not (present and value in values):
            return False
        if op == 'notin' and present and value in values:
            return False
        if op == 'exists' and not present:
            return False
        if op == '!exists' and present:
            return False
    return True


# --- small helpers ----------------------------------------------------------------------------

def _meta(obj):
    return (obj or {}).get('metadata') or {}


def _name(obj):
    return _meta(obj).get('name')


def _template_spec(ms):
    return (((ms or {}).get('spec') or {}).get('template') or {}).get('spec') or {}


def _template_node_labels(ms):
    return dict((_template_spec(ms).get('metadata') or {}).get('labels') or {})


def _provider_value(ms):
    return ((_template_spec(ms).get('providerSpec') or {}).get('value')) or {}


def deep_merge(base, override):
    """``base`` updated recursively with ``override`` (JSON merge patch semantics, None deletes)."""
    out = copy.deepcopy(base) if isinstance(base, dict) else {}
    for key, value in (override or {}).items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


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


def provider_zone_region(provider_value):
    """(zone, region) from a providerSpec value: AWS placement, GCP zone/region, Azure zone/location."""
    value = provider_value or {}
    placement = value.get('placement') or {}
    zone = placement.get('availabilityZone') or value.get('zone')
    region = placement.get('region') or value.get('region') or value.get('location')
    zone = str(zone) if zone not in (None, '') else None
    region = str(region) if region not in (None, '') else None
    if zone and region and zone.isdigit():
        # Azure numbers its zones per region: the node label is <location>-<zone>
        zone = '%s-%s' % (region, zone)
    return zone, region


def toleration_tolerates(toleration, taint):
    """Whether one pod toleration tolerates one taint (Kubernetes semantics)."""
    effect = toleration.get('effect') or ''
    if effect and effect != taint.get('effect'):
        return False
    key = toleration.get('key') or ''
    operator = toleration.get('operator') or 'Equal'
    if not key:
        return operator == 'Exists'
    if key != taint.get('key'):
        return False
    if operator == 'Exists':
        return True
    return (toleration.get('value') or '') == (taint.get('value') or '')


def accelerator_errors(value, path):
    """Why ``value`` cannot be a cluster-api/accelerator label value (= a resourceLimits.gpus type)."""
    if value in (None, ''):
        return ['%s is required: the GPU type, for example nvidia-a100 (it becomes the node label '
                'cluster-api/accelerator and the ClusterAutoscaler resourceLimits.gpus[].type)' % path]
    if isinstance(value, str) and value.strip().lower() in ('nvidia.com/gpu', 'nvidia.com/gpu.shared'):
        return ['%s: %s' % (path, NVIDIA_GPU_EXPLANATION)]
    return ['%s %s' % (path, e) for e in label_value_errors(value)]


def _int_errors(value, path, minimum=0, required=False):
    if value is None:
        return ['%s is required' % path] if required else []
    if not is_int(value):
        return ['%s must be an integer, got %s %r' % (path, type_name(value), value)]
    if value < minimum:
        return ['%s must be >= %d, got %d' % (path, minimum, value)]
    return []


def _duration_errors(value, path):
    if value in (None, ''):
        return []
    if not isinstance(value, str) or not _DURATION_RE.match(value):
        return ["%s must be a duration such as 10m, 90s or 1h30m, got %r" % (path, value)]
    return []


# --- per-entry validation ---------------------------------------------------------------------

def _entry_errors(entry, path):
    """Shape errors of one autoscaling_machine_sets entry (no cluster knowledge needed)."""
    if not isinstance(entry, dict):
        return ['%s must be a mapping, got %s' % (path, type_name(entry))]
    errors = unknown_key_errors(entry, ENTRY_KEYS, path)
    has_name = entry.get('name') not in (None, '')
    has_selector = entry.get('label_selector') not in (None, '')
    if has_name == has_selector:
        errors.append('%s needs exactly one of name (one MachineSet) or label_selector (the GPU '
                      'MachineSets carrying a label); there is no way to choose all MachineSets' % path)
    if has_selector:
        try:
            parse_selector(entry['label_selector'])
        except SelectorError as exc:
            errors.append('%s.label_selector: %s' % (path, exc))
    if has_name and not is_dns_subdomain(entry['name']):
        errors.append('%s.name %r is not a valid MachineSet name (lowercase letters, digits, - and .)'
                      % (path, entry['name']))
    if entry.get('source') not in (None, ''):
        if not has_name:
            errors.append('%s.source (clone a MachineSet) needs name, the name of the new MachineSet' % path)
        if not isinstance(entry['source'], str):
            errors.append('%s.source must be a MachineSet name (string)' % path)
    if entry.get('replicas') is not None and entry.get('source') in (None, ''):
        errors.append('%s.replicas is only used when the MachineSet is created from source; the '
                      'autoscaler owns the replicas of an existing MachineSet' % path)
    errors.extend(_int_errors(entry.get('replicas'), path + '.replicas'))
    errors.extend(accelerator_errors(entry.get('accelerator'), path + '.accelerator'))
    errors.extend(_int_errors(entry.get('gpus'), path + '.gpus', minimum=1))
    errors.extend(_int_errors(entry.get('vcpu'), path + '.vcpu', minimum=1))
    errors.extend(_int_errors(entry.get('memory_mb'), path + '.memory_mb', minimum=1))
    labels = entry.get('labels')
    if labels is not None:
        if not isinstance(labels, dict):
            errors.append('%s.labels must be a mapping of node labels, got %s' % (path, type_name(labels)))
        else:
            for key, value in labels.items():
                errors.extend('%s.labels key %s' % (path, e) for e in label_key_errors(key))
                errors.extend('%s.labels[%s] %s' % (path, key, e) for e in label_value_errors(value))
                if key == ACCELERATOR_LABEL:
                    errors.append('%s.labels: set the GPU type with accelerator, not labels[%s]' % (path, key))
    errors.extend(taint_errors(entry.get('taints'), path + '.taints'))
    for key in ('zone', 'region', 'sharing_config', 'mig_config', 'vgpu_profile'):
        if entry.get(key) not in (None, ''):
            errors.extend('%s.%s %s' % (path, key, e) for e in label_value_errors(entry[key]))
    if entry.get('mig_config') not in (None, '') and entry.get('allow_mig_preset') is not True:
        errors.append('%s.mig_config: %s' % (path, MIG_PRESET_EXPLANATION))
    if entry.get('allow_mig_preset') not in (None, True, False):
        errors.append('%s.allow_mig_preset must be true or false' % path)
    if entry.get('provider_spec') is not None and not isinstance(entry['provider_spec'], dict):
        errors.append('%s.provider_spec must be a mapping merged into spec.template.spec.providerSpec.value'
                      % path)
    errors.extend(_int_errors(entry.get('min_replicas'), path + '.min_replicas'))
    errors.extend(_int_errors(entry.get('max_replicas'), path + '.max_replicas', minimum=1,
                              required=entry.get('machine_autoscaler', True) is not False))
    if is_int(entry.get('min_replicas')) and is_int(entry.get('max_replicas')) \
            and entry['min_replicas'] > entry['max_replicas']:
        errors.append('%s: min_replicas %d is greater than max_replicas %d'
                      % (path, entry['min_replicas'], entry['max_replicas']))
    if entry.get('machine_autoscaler') not in (None, True, False):
        errors.append('%s.machine_autoscaler must be true or false' % path)
    return errors


def _limit_errors(limits):
    errors = []
    if limits is None:
        return errors
    if not isinstance(limits, list):
        return ['autoscaling_gpu_limits must be a list of {type, min, max}, got %s' % type_name(limits)]
    seen = set()
    for index, limit in enumerate(limits):
        path = 'autoscaling_gpu_limits[%d]' % index
        if not isinstance(limit, dict):
            errors.append('%s must be a mapping {type, min, max}, got %s' % (path, type_name(limit)))
            continue
        errors.extend(unknown_key_errors(limit, LIMIT_KEYS, path))
        errors.extend(accelerator_errors(limit.get('type'), path + '.type'))
        errors.extend(_int_errors(limit.get('min'), path + '.min', required=True))
        errors.extend(_int_errors(limit.get('max'), path + '.max', minimum=1, required=True))
        if is_int(limit.get('min')) and is_int(limit.get('max')) and limit['min'] > limit['max']:
            errors.append('%s: min %d is greater than max %d' % (path, limit['min'], limit['max']))
        if limit.get('type') in seen:
            errors.append('%s: type %s is listed twice' % (path, limit.get('type')))
        seen.add(limit.get('type'))
    return errors


def _resource_limit_errors(resource_limits):
    errors = []
    if not resource_limits:
        return errors
    if not isinstance(resource_limits, dict):
        return ['autoscaling_resource_limits must be a mapping, got %s' % type_name(resource_limits)]
    errors.extend(unknown_key_errors(resource_limits, ('maxNodesTotal', 'cores', 'memory'),
                                     'autoscaling_resource_limits'))
    errors.extend(_int_errors(resource_limits.get('maxNodesTotal'), 'autoscaling_resource_limits.maxNodesTotal'))
    for key in ('cores', 'memory'):
        value = resource_limits.get(key)
        if value is None:
            continue
        path = 'autoscaling_resource_limits.%s' % key
        if not isinstance(value, dict):
            errors.append('%s must be a mapping {min, max}' % path)
            continue
        errors.extend(unknown_key_errors(value, ('min', 'max'), path))
        errors.extend(_int_errors(value.get('min'), path + '.min', required=True))
        errors.extend(_int_errors(value.get('max'), path + '.max', required=True))
        if is_int(value.get('min')) and is_int(value.get('max')) and value['min'] > value['max']:
            errors.append('%s: min %d is greater than max %d' % (path, value['min'], value['max']))
    return errors


def _scale_down_errors(scale_down):
    errors = []
    if scale_down in (None, {}):
        return errors
    if not isinstance(scale_down, dict):
        return ['autoscaling_scale_down must be a mapping, got %s' % type_name(scale_down)]
    keys = ('enabled', 'delayAfterAdd', 'delayAfterDelete', 'delayAfterFailure', 'unneededTime',
            'utilizationThreshold')
    errors.extend(unknown_key_errors(scale_down, keys, 'autoscaling_scale_down'))
    if not isinstance(scale_down.get('enabled'), bool):
        errors.append('autoscaling_scale_down.enabled must be true or false')
    for key in keys[1:5]:
        errors.extend(_duration_errors(scale_down.get(key), 'autoscaling_scale_down.' + key))
    threshold = scale_down.get('utilizationThreshold')
    if threshold not in (None, ''):
        if not isinstance(threshold, str) or not re.match(r'^0\.[0-9]+$', threshold):
            errors.append("autoscaling_scale_down.utilizationThreshold must be a quoted string between "
                          "0 and 1 such as '0.5', got %r" % (threshold,))
    return errors


# --- the plan ---------------------------------------------------------------------------------

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
                           if selector_matches(terms, _meta(existing_by_name[n]).get('labels')))
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


def clone_machineset(source, name, replicas=0):
    """A new MachineSet copied from ``source``: own name, selector and template label, no status."""
    md = _meta(source)
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


def _desired_node_labels(entry, base_obj, provider_value):
    labels = dict(entry.get('labels') or {})
    labels[ACCELERATOR_LABEL] = entry['accelerator']
    zone, region = provider_zone_region(provider_value)
    zone = entry.get('zone') or zone
    region = entry.get('region') or region
    if zone:
        labels[LABEL_ZONE] = zone
    if region:
        labels[LABEL_REGION] = region
    if entry.get('sharing_config'):
        labels[LABEL_DP_CONFIG] = entry['sharing_config']
    if entry.get('mig_config'):
        labels[LABEL_MIG_CONFIG] = entry['mig_config']
    if entry.get('vgpu_profile'):
        labels[LABEL_VGPU_PROFILE] = entry['vgpu_profile']
    return labels


def _plan_machineset(entry, name, obj, source, namespace, capacity_annotations, context, errors, warnings):
    """(plan dict) for one chosen MachineSet; appends errors/warnings."""
    path = 'autoscaling_machine_sets[%d]' % context['index']
    if entry.get('label_selector'):
        path += ' (MachineSet %s)' % name
    create = obj is None
    base = clone_machineset(source, name, entry.get('replicas') or 0) if create else obj
    provider_value = deep_merge(_provider_value(base), entry.get('provider_spec') or {})
    annotations = dict(_meta(base).get('annotations') or {})

    gpus = entry.get('gpus')
    known_gpus = gpus
    if known_gpus is None and not create:
        try:
            known_gpus = int(annotations.get(ANN_GPU)) if annotations.get(ANN_GPU) not in (None, '') else None
        except ValueError:
            known_gpus = None
        if known_gpus == 0:
            errors.append('%s: MachineSet %s has %s=0, its instance type has no GPU (the machine-api '
                          'provider computed it); choose a GPU MachineSet or set gpus for an instance '
                          'type the provider does not know' % (path, name, ANN_GPU))
    min_replicas = entry.get('min_replicas') or 0
    if known_gpus is None and min_replicas == 0 and entry.get('machine_autoscaler', True) is not False:
        warnings.append('%s: MachineSet %s has no %s annotation and gpus is not set: the autoscaler cannot '
                        'scale it up from zero (it does not know the node will have GPUs). Set gpus (and '
                        'vcpu, memory_mb) unless the machine-api provider fills them in (AWS, Azure, GCP)'
                        % (path, name, ANN_GPU))

    if entry.get('vgpu_profile'):
        if provider_value.get('kind') != VSPHERE_KIND:
            errors.append('%s: vgpu_profile is for vSphere MachineSets (providerSpec kind %s), MachineSet %s '
                          'has %s' % (path, VSPHERE_KIND, name, provider_value.get('kind') or 'no kind'))
        elif not provider_value.get('template'):
            errors.append('%s: vgpu_profile %s needs the VM template that carries the profile: '
                          'provider_spec: {template: <VM template>}' % (path, entry['vgpu_profile']))
        else:
            context['vgpu_templates'].setdefault(provider_value['template'], set()).add(entry['vgpu_profile'])

    labels = _desired_node_labels(entry, base, provider_value)
    current_labels = _template_node_labels(base)
    template_labels_patch = dict((k, v) for k, v in labels.items() if current_labels.get(k) != v)
    current_taints = _template_spec(base).get('taints') or []
    taints = merge_taints(current_taints, entry.get('taints')) if entry.get('taints') else current_taints
    for taint in taints:
        if context['tolerations'] is not None and not any(
                toleration_tolerates(t, taint) for t in context['tolerations']):
            warnings.append('%s: the GPU operator DaemonSets (ClusterPolicy daemonsets.tolerations) do not '
                            'tolerate the taint %s:%s; the driver and device plugin will not run on new nodes '
                            'of %s (add the toleration, see the gpu_node_placement role)'
                            % (path, taint.get('key'), taint.get('effect'), name))
    if entry.get('sharing_config') and context['sharing_keys'] is not None \
            and entry['sharing_config'] not in context['sharing_keys']:
        errors.append('%s.sharing_config: %s is not a key of the device-plugin ConfigMap (keys: %s)'
                      % (path, entry['sharing_config'], ', '.join(sorted(context['sharing_keys'])) or 'none'))
    if entry.get('mig_config') and context['mig_configs'] is not None \
            and entry['mig_config'] not in context['mig_configs']:
        errors.append('%s.mig_config: %s is not a mig-parted config of the MIG manager (configs: %s)'
                      % (path, entry['mig_config'], ', '.join(sorted(context['mig_configs'])) or 'none'))

    wanted_ann = {}
    if gpus is not None:
        wanted_ann[ANN_GPU] = str(gpus)
    if entry.get('vcpu') is not None:
        wanted_ann[ANN_VCPU] = str(entry['vcpu'])
    if entry.get('memory_mb') is not None:
        wanted_ann[ANN_MEMORY] = str(entry['memory_mb'])
    if capacity_annotations:
        if gpus is not None:
            wanted_ann[ANN_CAP_GPU_COUNT] = str(gpus)
            wanted_ann[ANN_CAP_GPU_TYPE] = GPU_RESOURCE
        if entry.get('vcpu') is not None:
            wanted_ann[ANN_CAP_CPU] = str(entry['vcpu'])
        if entry.get('memory_mb') is not None:
            wanted_ann[ANN_CAP_MEMORY] = '%dMi' % entry['memory_mb']
        wanted_ann[ANN_CAP_LABELS] = merge_pairs(annotations.get(ANN_CAP_LABELS), labels)
        if taints:
            wanted_ann[ANN_CAP_TAINTS] = render_taints(taints)
    annotations_patch = dict((k, v) for k, v in wanted_ann.items() if annotations.get(k) != v)
    ms_labels_patch = {} if (_meta(base).get('labels') or {}).get(ACCELERATOR_LABEL) == entry['accelerator'] \
        else {ACCELERATOR_LABEL: entry['accelerator']}

    patch = {}
    if ms_labels_patch:
        patch.setdefault('metadata', {})['labels'] = ms_labels_patch
    if annotations_patch:
        patch.setdefault('metadata', {})['annotations'] = annotations_patch
    tspec_patch = {}
    if template_labels_patch:
        tspec_patch['metadata'] = {'labels': template_labels_patch}
    if taints != current_taints:
        tspec_patch['taints'] = taints
    if entry.get('provider_spec') and provider_value != _provider_value(base):
        tspec_patch['providerSpec'] = {'value': copy.deepcopy(entry['provider_spec'])}
    if tspec_patch:
        patch['spec'] = {'template': {'spec': tspec_patch}}

    result = {
        'name': name, 'namespace': namespace, 'create': create, 'accelerator': entry['accelerator'],
        'gpus': known_gpus, 'min_replicas': min_replicas, 'max_replicas': entry.get('max_replicas'),
        'machine_autoscaler': entry.get('machine_autoscaler', True) is not False,
        'zone': labels.get(LABEL_ZONE), 'node_labels': labels, 'taints': taints,
        'patch': patch, 'definition': None,
    }
    if create:
        result['definition'] = deep_merge(base, patch)
        result['patch'] = {}
    return result


def _machine_autoscaler(ms_plan, existing_autoscalers):
    name = ms_plan['name']
    for ma in existing_autoscalers or []:
        ref = ((ma.get('spec') or {}).get('scaleTargetRef')) or {}
        if ref.get('kind') == 'MachineSet' and ref.get('name') == name \
                and _meta(ma).get('namespace', ms_plan['namespace']) == ms_plan['namespace']:
            name = _name(ma)  # adopt the existing one: two MachineAutoscalers for one MachineSet conflict
            break
    return {
        'apiVersion': MACHINE_AUTOSCALER_API, 'kind': 'MachineAutoscaler',
        'metadata': {'name': name, 'namespace': ms_plan['namespace'],
                     'labels': {LABEL_MANAGED_BY: MANAGED_BY}},
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


def autoscaling_plan(machine_sets, existing_machine_sets=None, existing_machine_autoscalers=None,
                     existing_cluster_autoscaler=None, namespace='openshift-machine-api', gpu_limits=None,
                     resource_limits=None, scale_down=None, max_node_provision_time=None,
                     cluster_autoscaler_spec=None, manage_cluster_autoscaler=True,
                     capacity_annotations=True, sharing_keys=None, mig_configs=None, tolerations=None,
                     inputs_only=False):
    """Validate and plan; see the module docstring. Returns a dict (never raises on bad input).

    ``inputs_only=True`` runs only the checks that need no cluster knowledge (before any read).
    """
    errors, warnings = [], []
    if not isinstance(machine_sets, list):
        return _result(['autoscaling_machine_sets must be a list, got %s' % type_name(machine_sets)], warnings)
    for index, entry in enumerate(machine_sets):
        errors.extend(_entry_errors(entry, 'autoscaling_machine_sets[%d]' % index))
    errors.extend(_limit_errors(gpu_limits))
    errors.extend(_resource_limit_errors(resource_limits))
    errors.extend(_scale_down_errors(scale_down))
    errors.extend(_duration_errors(max_node_provision_time, 'autoscaling_max_node_provision_time'))
    if cluster_autoscaler_spec not in (None, {}) and not isinstance(cluster_autoscaler_spec, dict):
        errors.append('autoscaling_cluster_autoscaler_spec must be a mapping')
    if errors or inputs_only:
        return _result(errors, warnings)

    existing = dict((_name(ms), ms) for ms in existing_machine_sets or [] if _name(ms))
    resolved = _resolve(machine_sets, existing, errors)
    context = {'sharing_keys': None if sharing_keys is None else set(sharing_keys),
               'mig_configs': None if mig_configs is None else set(mig_configs),
               'tolerations': tolerations, 'vgpu_templates': {}}
    plans = []
    for index, entry, name, obj, source in resolved:
        context['index'] = index
        plans.append(_plan_machineset(entry, name, obj, source, namespace, capacity_annotations,
                                      context, errors, warnings))
    for template, profiles in sorted(context['vgpu_templates'].items()):
        if len(profiles) > 1:
            errors.append('VM template %s is used for vGPU profiles %s: one MachineSet per vGPU profile, each '
                          'referencing the VM template that carries that profile'
                          % (template, ', '.join(sorted(profiles))))
    chosen = set(p['name'] for p in plans)
    other_types = set()
    for name, ms in existing.items():
        if name in chosen:
            continue
        value = _template_node_labels(ms).get(ACCELERATOR_LABEL)
        if value:
            other_types.add(value)
    autoscalers = [_machine_autoscaler(p, existing_machine_autoscalers) for p in plans if p['machine_autoscaler']]
    cluster_autoscaler = None
    gpus = _gpu_limits(plans, gpu_limits, existing_cluster_autoscaler, other_types, errors, warnings)
    if manage_cluster_autoscaler:
        spec = copy.deepcopy((existing_cluster_autoscaler or {}).get('spec') or {})
        spec = deep_merge(spec, cluster_autoscaler_spec or {})
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
        if existing_cluster_autoscaler is None:
            cluster_autoscaler['metadata']['labels'] = {LABEL_MANAGED_BY: MANAGED_BY}
    return _result(errors, warnings, plans, autoscalers, cluster_autoscaler, gpus)


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
