# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unhealthy GPUs where DRA serves them (pure): which DRA devices of a node are bad, and the DeviceTaintRules that
take only those devices out of service instead of the whole node (docs/facts.md, "Device taints").

A device of NVIDIA's DRA driver (``gpu.nvidia.com``, one pool per node named after it) is *bad* when

- DCGM reports an XID for its GPU (plans/gpu_health.py ``xids_by_node``): the device whose ``uuid`` attribute is the
  GPU's UUID, and the MIG devices whose ``parentUUID`` is (a broken GPU breaks its MIG devices), or
- the driver itself tainted it in its ResourceSlice (``spec.devices[].taints``, DRADeviceTaints) with the effect
  ``NoSchedule`` or ``NoExecute`` (a taint of effect ``None`` only informs).

Our DeviceTaintRule per bad device: cluster-scoped, named ``gpuops-gpu-health-<node>-<device>``, labelled as the
collection's, ``spec.deviceSelector`` the driver, the pool (the node) and the device, ``spec.taint`` our key
(:data:`TAINT_KEY`) with the reason as value and the effect asked for. On return the node's rules are deleted.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import hashlib
import re

from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import managed_by_labels
from ansible_collections.gpuops.gpu.plugins.module_utils.common.objects import labels_of, meta_of
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import dra
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.dra_fleet import attribute, current_slices

GROUP = dra.API_GROUP
# the API versions that may serve DeviceTaintRule, the one to prefer first (docs/facts.md)
RULE_VERSIONS = ('v1beta2', 'v1alpha3')
RULES = 'devicetaintrules'
TAINT_KEY = 'gpuops.gpu/gpu-unhealthy'
NODE_LABEL = 'gpuops.gpu/gpu-health-node'
EFFECTS = ('NoSchedule', 'NoExecute')
COUNTING_EFFECTS = ('NoSchedule', 'NoExecute')
_NAME = re.compile(r'[^a-z0-9.-]+')
NAME_MAX = 253


def node_devices(slices, node):
    """The devices the driver publishes for ``node`` (its current slices), as they are in the slices."""
    current, _stale = current_slices(slices or [])
    out = []
    for item in current:
        spec = item.get('spec') or {}
        if spec.get('nodeName') == node or (spec.get('pool') or {}).get('name') == node:
            out.extend(spec.get('devices') or [])
    return out


def driver_taints(device):
    """The device's taints from the driver with an effect that keeps work off it (not ours)."""
    return [t for t in device.get('taints') or []
            if t.get('effect') in COUNTING_EFFECTS and t.get('key') != TAINT_KEY]


def bad_devices(slices, node, gpus_with_xid):
    """{device name: why} of the node's DRA devices that are bad: their GPU reports an XID to DCGM
    (``gpus_with_xid``: [{'gpu', 'uuid', 'xid'}]), or the driver tainted them."""
    by_uuid = dict((g['uuid'], g) for g in gpus_with_xid or [] if g.get('uuid'))
    out = {}
    for device in node_devices(slices, node):
        name = device.get('name')
        gpu = by_uuid.get(attribute(device, 'uuid')) or by_uuid.get(attribute(device, 'parentUUID'))
        if gpu:
            out[name] = 'DCGM: last XID %d on %s' % (gpu['xid'], gpu['uuid'])
        taints = driver_taints(device)
        if taints:
            out.setdefault(name, 'DRA: tainted %s' % ', '.join(
                '%s%s:%s' % (t.get('key'), '=%s' % t['value'] if t.get('value') else '', t.get('effect'))
                for t in taints))
    return out


def tainted_reason(slices, node):
    """The node's reason from the driver's own device taints ('' when none)."""
    found = dict((d.get('name'), driver_taints(d)) for d in node_devices(slices, node) if driver_taints(d))
    if not found:
        return ''
    return 'DRA: device(s) tainted by the driver: %s' % '; '.join(
        '%s %s' % (name, ', '.join('%s=%s:%s' % (t.get('key'), t.get('value', ''), t.get('effect')) for t in taints))
        for name, taints in sorted(found.items()))


def rule_name(node, device):
    """``gpuops-gpu-health-<node>-<device>``, a valid object name (a hash keeps a long one unique)."""
    name = _NAME.sub('-', ('gpuops-gpu-health-%s-%s' % (node, device)).lower()).strip('-.')
    if len(name) <= NAME_MAX:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:10]
    return '%s-%s' % (name[:NAME_MAX - 11].rstrip('-.'), digest)


def _value(why):
    """The taint value (a label value: 63 characters of [A-Za-z0-9_.-], alphanumeric at both ends)."""
    match = re.search(r'XID (\d+)', why)
    return 'xid-%s' % match.group(1) if match else 'dra-taint'


def rule(node, device, why, effect, api_version):
    """The DeviceTaintRule that takes ``device`` of ``node`` out of service."""
    return {'apiVersion': '%s/%s' % (GROUP, api_version), 'kind': 'DeviceTaintRule',
            'metadata': {'name': rule_name(node, device), 'labels': managed_by_labels({NODE_LABEL: node}),
                         'annotations': {'gpuops.gpu/gpu-health-reason': why[:1000]}},
            'spec': {'deviceSelector': {'driver': dra.DRIVER, 'pool': node, 'device': device},
                     'taint': {'key': TAINT_KEY, 'value': _value(why), 'effect': effect}}}


def ours(rules, node=None):
    """Our DeviceTaintRules (of ``node`` when given), by name."""
    out = {}
    for item in rules or []:
        labels = labels_of(item)
        if NODE_LABEL in labels and (node is None or labels[NODE_LABEL] == node):
            out[meta_of(item).get('name')] = item
    return out


def rule_changes(node, bad, existing, effect, api_version):
    """(rules to create or replace, names to delete) so that the node's rules are exactly those of ``bad``
    ({device: why})."""
    wanted = dict((rule_name(node, device), rule(node, device, why, effect, api_version))
                  for device, why in sorted(bad.items()))
    have = ours(existing, node)
    write = [body for name, body in sorted(wanted.items())
             if name not in have or (have[name].get('spec') or {}).get('deviceSelector') != body['spec'][
                 'deviceSelector'] or _taint(have[name]) != _taint(body)]
    return write, sorted(set(have) - set(wanted))


def _taint(item):
    taint = (item.get('spec') or {}).get('taint') or {}
    return dict((k, taint.get(k)) for k in ('key', 'value', 'effect'))


def not_served_message():
    """Why DeviceTaintRules cannot be written on this cluster, and what turns them on."""
    return ('dra_device_taints needs the DeviceTaintRule API (resource.k8s.io %s, %s), which this cluster does not '
            'serve: it is beta and off by default in Kubernetes 1.36 (kube-apiserver '
            '--runtime-config=resource.k8s.io/v1beta2=true, and --feature-gates=DRADeviceTaintRules=true on '
            'kube-apiserver, kube-scheduler and kube-controller-manager); without it, leave dra_device_taints off '
            'and the whole node is cordoned; nothing was changed' % (' or '.join(RULE_VERSIONS), RULES))
