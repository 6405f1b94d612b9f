# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the diagnostics archive holds, decided from what was read (``gpuops.gpu.gpu_diagnostics``,
the cluster side is ``ops/diagnostics.py``). Pure, no I/O.

Which pods' logs (the operator and its operands, by their ``app`` label), which ConfigMaps (the ones
the ClusterPolicy names), what of a node, which events, the cleaning of every object (no
``managedFields``, no last-applied copy, secrets redacted by ``common/redact.py``) and the
``summary.txt`` index. See docs/diagnostics.md.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy

from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import is_dns_label, is_int
from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import DEFAULT_MIG_CONFIG_MAP
from ansible_collections.gpuops.gpu.plugins.module_utils.common.objects import labels_of, meta_of
from ansible_collections.gpuops.gpu.plugins.module_utils.common.redact import REDACTED, redact

# component -> the ``app`` label of its pods (gpu-operator: deployments/gpu-operator/templates/operator.yaml;
# operands: assets/*/0500_daemonset.yaml and the like of NVIDIA/gpu-operator v25.10)
COMPONENTS = (
    ('gpu-operator', 'gpu-operator'),
    ('mig-manager', 'nvidia-mig-manager'),
    ('device-plugin', 'nvidia-device-plugin-daemonset'),
    ('gpu-feature-discovery', 'gpu-feature-discovery'),
    ('dcgm-exporter', 'nvidia-dcgm-exporter'),
    ('dcgm', 'nvidia-dcgm'),
    ('driver', 'nvidia-driver-daemonset'),
    ('container-toolkit', 'nvidia-container-toolkit-daemonset'),
    ('validator', 'nvidia-operator-validator'),
)
_BY_APP = dict((app, component) for component, app in COMPONENTS)

# (purpose, path in the ClusterPolicy spec) of the ConfigMaps it names
CONFIG_MAP_REFS = (
    ('mig-parted', ('migManager', 'config', 'name')),
    ('device-plugin', ('devicePlugin', 'config', 'name')),
    ('dcgm-exporter-metrics', ('dcgmExporter', 'config', 'name')),
    ('vgpu-licensing', ('driver', 'licensingConfig', 'configMapName')),
    ('vgpu-device-manager', ('vgpuDeviceManager', 'config', 'name')),
)
ARCHIVE_SUFFIXES = ('.tar.gz', '.tgz')
LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration'


def clean(obj):
    """A copy of an API object without ``managedFields`` and the last-applied annotation (noise, and
    a second copy of every value), every secret-looking value redacted."""
    obj = copy.deepcopy(obj)
    meta = obj.get('metadata') if isinstance(obj, dict) else None
    if isinstance(meta, dict):
        meta.pop('managedFields', None)
        if LAST_APPLIED in (meta.get('annotations') or {}):
            meta['annotations'][LAST_APPLIED] = '(left out)'
    return redact(obj)


def component_of(pod):
    """The component of a pod by its ``app`` label, or None."""
    return _BY_APP.get(labels_of(pod).get('app'))


def _ready(pod):
    return any(c.get('type') == 'Ready' and c.get('status') == 'True'
               for c in (pod.get('status') or {}).get('conditions') or [])


def _containers(pod):
    """[(container name, restarted)] of a pod: init containers first, then the app containers."""
    status = pod.get('status') or {}
    restarts = dict((c.get('name'), c.get('restartCount') or 0)
                    for c in (status.get('initContainerStatuses') or []) + (status.get('containerStatuses') or []))
    spec = pod.get('spec') or {}
    return [(c['name'], restarts.get(c['name'], 0) > 0)
            for c in (spec.get('initContainers') or []) + (spec.get('containers') or []) if c.get('name')]


def log_targets(pods, max_pods):
    """[{component, pod, node, container, previous}] to read logs from: per component at most
    ``max_pods`` pods, those not Ready first (the ones a support case is about), then by name; a
    container that restarted also gets its previous instance's log."""
    targets = []
    for component, _app in COMPONENTS:
        mine = [p for p in pods if component_of(p) == component]
        mine.sort(key=lambda p: (_ready(p), p['metadata']['name']))
        for pod in mine[:max_pods]:
            for container, restarted in _containers(pod):
                for previous in ((False, True) if restarted else (False,)):
                    targets.append({'component': component, 'pod': pod['metadata']['name'],
                                    'node': (pod.get('spec') or {}).get('nodeName'),
                                    'container': container, 'previous': previous})
    return targets


def log_path(target):
    """The archive path of one log."""
    return 'logs/%s/%s_%s%s.log' % (target['component'], target['pod'], target['container'],
                                    '.previous' if target['previous'] else '')


def config_map_refs(policies):
    """[(purpose, name)] of the ConfigMaps the ClusterPolicies name, without repeats. Without a
    ``migManager.config.name`` the MIG manager reads the operator's ``default-mig-parted-config``
    (gpu-operator controllers/object_controls.go, MigPartedDefaultConfigMapName)."""
    refs = []
    for policy in policies:
        for purpose, path in CONFIG_MAP_REFS:
            value = policy.get('spec') or {}
            for step in path:
                value = value.get(step) if isinstance(value, dict) else None
            if purpose == 'mig-parted' and not value:
                value = DEFAULT_MIG_CONFIG_MAP
            if isinstance(value, str) and value and (purpose, value) not in refs:
                refs.append((purpose, value))
    return refs


def node_record(node):
    """What the archive keeps of a node: name, labels, annotations, taints, cordon, capacity,
    allocatable, conditions, node info; cleaned like every object."""
    meta, spec, status = meta_of(node), node.get('spec') or {}, node.get('status') or {}
    record = {'name': meta.get('name'), 'labels': meta.get('labels') or {},
              'annotations': meta.get('annotations') or {}, 'taints': spec.get('taints') or [],
              'unschedulable': bool(spec.get('unschedulable')), 'capacity': status.get('capacity') or {},
              'allocatable': status.get('allocatable') or {}, 'conditions': status.get('conditions') or [],
              'nodeInfo': status.get('nodeInfo') or {}}
    return _clean_record(record)


def _clean_record(record):
    """The node record without the last-applied annotation, redacted."""
    annotations = dict(record['annotations'])
    if LAST_APPLIED in annotations:
        annotations[LAST_APPLIED] = '(left out)'
    record['annotations'] = annotations
    return redact(record)


def _event_time(event):
    return (event.get('lastTimestamp') or event.get('eventTime') or event.get('firstTimestamp')
            or meta_of(event).get('creationTimestamp') or '')


def select_events(namespace_events, node_events, node_names, limit):
    """The events of the operator namespace and of the GPU nodes, oldest first, the last ``limit``
    of them, each cleaned."""
    names = set(node_names)
    chosen = list(namespace_events) + [e for e in node_events if (e.get('involvedObject') or {}).get('name') in names]
    seen, unique = set(), []
    for event in chosen:
        uid = meta_of(event).get('uid') or id(event)
        if uid not in seen:
            seen.add(uid)
            unique.append(event)
    unique.sort(key=_event_time)
    return [clean(e) for e in unique[-limit:]] if limit else []


def redactions(text):
    """How many values ``text`` has redacted."""
    return text.count(REDACTED)


def summary_text(header, items):
    """``summary.txt``: ``header`` lines, then one line per item: its file, what it holds, and
    ``(n redacted)`` when values were removed; ``items`` are dicts with path, what, status, redacted."""
    lines = list(header) + ['', 'Contents (path: what, status):']
    for item in items:
        note = ' (%d value(s) redacted)' % item['redacted'] if item.get('redacted') else ''
        lines.append('  %s: %s, %s%s' % (item['path'], item['what'], item['status'], note))
    lines += ['', 'Secrets are never read. Values that look like tokens, passwords or keys are replaced by '
              + REDACTED + ' (docs/diagnostics.md, "Redaction").', '']
    return '\n'.join(lines)


def input_errors(params):
    """Every input error of ``gpuops.gpu.gpu_diagnostics`` at once (messages say what to fix)."""
    errors = []
    if not is_dns_label(params.get('operator_namespace') or ''):
        errors.append('operator_namespace must be a namespace name (a DNS label), got %r'
                      % params.get('operator_namespace'))
    for name, low in (('log_lines', 1), ('max_log_pods', 0), ('event_limit', 0)):
        if not is_int(params.get(name)) or params[name] < low:
            errors.append('%s must be an integer >= %d, got %r' % (name, low, params.get(name)))
    dest = params.get('dest') or ''
    if not dest.endswith(ARCHIVE_SUFFIXES):
        errors.append('dest must be the path of the archive to write, ending in %s, got %r'
                      % (' or '.join(ARCHIVE_SUFFIXES), dest))
    return errors


def top_directory(dest):
    """The one directory every archive member is under: the archive's file name without suffix."""
    name = dest.replace('\\', '/').rsplit('/', 1)[-1]
    for suffix in ARCHIVE_SUFFIXES:
        if name.endswith(suffix):
            return name[:-len(suffix)] or 'gpuops-diagnostics'
    return name or 'gpuops-diagnostics'
