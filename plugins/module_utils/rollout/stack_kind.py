# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Which GPU stack serves a node, the NVIDIA device plugin or NVIDIA's standalone DRA driver, decided from the
node dict and the driver's ResourceSlices (pure, no I/O).

The *stack* kind for engine.NodeRollout (see sharing_kind.SharingKind): the engine cordons and drains the node,
then this kind's label patch moves it:

- to ``dra``: ``nvidia.com/gpu.deploy.device-plugin=false`` (the GPU operator's device-plugin DaemonSet leaves
  the node) and ``gpuops.gpu/dra-kubelet-plugin=true`` (the DRA driver's chart is installed with
  ``kubeletPlugin.nodeSelector`` on it); done when the node's ResourceSlice (driver ``gpu.nvidia.com``, pool =
  node name) lists at least the node's devices (``expected_devices``) and no GPU extended resource is
  allocatable any more;
- to ``device-plugin``: ``nvidia.com/gpu.deploy.device-plugin=true``, the DRA label removed; done when the
  driver publishes no slice for the node and its GPU extended resources are allocatable again.

The slices are read by the cluster side (rollout/dra_cutover.py), which gives the kind ``slices_of``: node name
-> the driver's current slices of that node. ``served_verdict``, whether a stack serves a node, is the kind's test
and the GPU operator change window's (rollout/dra_window.py). ``workload_plan`` says, for the check-mode plan, which pods ask for
GPUs as extended resources and whether they stay schedulable once their nodes are on DRA.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import as_number
from ansible_collections.gpuops.gpu.plugins.module_utils.common.objects import labels_of, meta_of
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import dra
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import node as gn
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.dra_fleet import devices_by_node

DRA = 'dra'
DEVICE_PLUGIN = 'device-plugin'
STACKS = (DRA, DEVICE_PLUGIN)
MIXED = 'mixed'  # the labels say neither stack fully (a half-done change)
DP_LABEL = dra.DEVICE_PLUGIN_DEPLOY_LABEL
DRA_LABEL = dra.DRA_NODE_LABEL
MIG_BUSY_STATES = ('pending', 'rebooting', 'failed')
TARGET_LABELS = {DRA: {DP_LABEL: 'false', DRA_LABEL: 'true'}, DEVICE_PLUGIN: {DP_LABEL: 'true', DRA_LABEL: None}}


def stack_errors(values):
    """Why assignment values cannot be targets (before anything is read)."""
    return ["assignments[%d].stack: '%s' is not a GPU stack (choose %s)" % (index, value, ' or '.join(STACKS))
            for index, value in enumerate(values) if value not in STACKS]


def gpu_count(node):
    """GFD's ``nvidia.com/gpu.count`` (None when the node has no such label)."""
    return as_number(labels_of(node).get(gn.LABEL_COUNT), int)


def expected_devices(node):
    """The fewest devices the driver publishes for the node: one per GPU, or its MIG devices when MIG is on
    (GFD's MIG device counts), whichever is more."""
    return max(gpu_count(node) or 0, sum(gn.mig_devices(labels_of(node)).values()))


def device_count(slices):
    """Devices listed by a node's current slices."""
    return sum(len(devices) for devices in devices_by_node(slices).values())


def advertised(node):
    """The GPU extended resources the node advertises now (allocatable above zero)."""
    resources = gn.gpu_resources((node.get('status') or {}).get('allocatable'))
    return dict((k, v) for k, v in resources.items() if v)


def current_stack(node):
    """``dra``, ``device-plugin`` or ``mixed`` as the node's labels say."""
    labels = labels_of(node)
    on_dra = labels.get(DRA_LABEL) == 'true'
    plugin_off = labels.get(DP_LABEL) == 'false'
    if on_dra and plugin_off:
        return DRA
    if not on_dra and not plugin_off:
        return DEVICE_PLUGIN
    return MIXED


def served_verdict(node, value, slices):
    """('done'|'wait', detail): whether the stack ``value`` serves the node, from the node (its GPU extended
    resources, GFD's counts) and ``slices``, the driver's current ResourceSlices of the node."""
    devices = device_count(slices)
    plugin = advertised(node)
    if value == DRA:
        want = expected_devices(node)
        if plugin:
            return 'wait', 'the device plugin still advertises %s' % _words(plugin)
        if devices < want:
            return 'wait', 'the ResourceSlice of %s lists %d of %d device(s)' % (dra.DRIVER, devices, want)
        return 'done', '%d device(s) published by %s, no GPU extended resource' % (devices, dra.DRIVER)
    if devices:
        return 'wait', '%s still publishes %d device(s) for the node' % (dra.DRIVER, devices)
    if not plugin:
        return 'wait', 'the device plugin does not advertise %s yet' % gn.GPU_RESOURCE
    return 'done', 'the device plugin advertises %s, no slice of %s' % (_words(plugin), dra.DRIVER)


class StackKind(object):
    """The GPU stack of a node through the device plugin's deploy label and the DRA kubelet plugin's label.

    ``slices_of``: node name -> the driver's current ResourceSlices of the node (read by the cluster side).
    """

    label = DRA_LABEL
    name = 'stack'
    cycle_same_value = False  # the DaemonSets follow the labels; re-setting one changes nothing

    def __init__(self, slices_of=None):
        self.slices_of = slices_of or (lambda name: [])
        self.warnings = []

    labels = staticmethod(labels_of)
    current = staticmethod(current_stack)

    def validate(self, node, value):
        """Reasons why the node cannot move to ``value`` (empty list when it can)."""
        name = meta_of(node).get('name')
        if value not in STACKS:
            return ["node %s: '%s' is not a GPU stack (choose %s)" % (name, value, ' or '.join(STACKS))]
        labels = labels_of(node)
        if not gpu_count(node):
            return ['node %s has no GPUs: no %s label above 0 (GPU feature discovery has not labelled it, or it is '
                    'not a GPU node); leave it out of the assignments' % (name, gn.LABEL_COUNT)]
        state = labels.get(gn.LABEL_MIG_STATE)
        if labels.get(gn.LABEL_MIG_CONFIG) and state in MIG_BUSY_STATES:
            return ["node %s: MIG reconfiguration to '%s' is %s; finish it first (gpuops.gpu.mig_rollout)"
                    % (name, labels.get(gn.LABEL_MIG_CONFIG), state)]
        return []

    # ------------------------------------------------------------------ engine questions
    def needs_label(self, node, value):
        labels = labels_of(node)
        return any(labels.get(k) != v for k, v in TARGET_LABELS[value].items())

    def label_patch(self, value):
        return dict(TARGET_LABELS[value])

    def clear_patch(self):
        return {DRA_LABEL: None}

    def progress(self, node, value):
        """('done'|'wait'|'failed', detail) for a node whose labels were set for ``value``."""
        if self.needs_label(node, value):
            labels = labels_of(node)
            return 'failed', ('labels %s=%s, %s=%s were changed by someone else during the cutover'
                              % (DP_LABEL, labels.get(DP_LABEL), DRA_LABEL, labels.get(DRA_LABEL)))
        return served_verdict(node, value, self.slices_of(meta_of(node).get('name')))

    def expected_allocatable(self, node, value):
        """None of the GPU extended resources on DRA; on the device plugin what it advertises (once back),
        else one ``nvidia.com/gpu`` per GPU."""
        if value == DRA:
            return {}
        return advertised(node) or {gn.GPU_RESOURCE: gpu_count(node) or 0}

    def at_target(self, node, value):
        return not self.needs_label(node, value) and self.progress(node, value)[0] == 'done'

    def describe(self, node, value):
        """Extra check-mode plan fields."""
        return {'stack_from': current_stack(node), 'labels_to': self.label_patch(value),
                'allocatable': advertised(node),
                'dra_devices': device_count(self.slices_of(meta_of(node).get('name'))),
                'expected_devices': expected_devices(node) if value == DRA else 0}


def _words(resources):
    return ', '.join('%s=%s' % kv for kv in sorted(resources.items()))


# ---------------------------------------------------------------------- the plan's workloads
def pod_gpu_requests(pod):
    """The GPU extended resources a pod asks for (limits, else requests, of its containers and init containers;
    an init container runs alone, so the pod needs the larger of the two sums)."""
    spec = pod.get('spec') or {}

    def total(containers, combine):
        out = {}
        for container in containers or []:
            resources = container.get('resources') or {}
            asked = gn.gpu_resources(resources.get('limits') or resources.get('requests'))
            for key, value in asked.items():
                out[key] = combine(out.get(key, 0), value)
        return out
    regular = total(spec.get('containers'), lambda a, b: a + b)
    init = total(spec.get('initContainers'), max)
    return dict((k, max(regular.get(k, 0), init.get(k, 0))) for k in set(regular) | set(init)
                if max(regular.get(k, 0), init.get(k, 0)))


def extended_resource_classes(classes):
    """{extended resource name: DeviceClass name} of the DeviceClasses that serve one (DRAExtendedResource)."""
    out = {}
    for item in classes or []:
        resource = (item.get('spec') or {}).get('extendedResourceName')
        if resource:
            out.setdefault(resource, meta_of(item).get('name'))
    return out


def _pod_key(pod):
    return meta_of(pod).get('namespace') or '', meta_of(pod).get('name') or ''


def workload_plan(groups, pods, classes):
    """Per node group ({'group', 'stack', 'nodes'}), the pods on its nodes that ask for GPUs as extended resources,
    and whether each stays schedulable once the group is on ``stack``: on DRA only when a DeviceClass serves every
    resource it asks for (``spec.extendedResourceName``); on the device plugin always."""
    served = extended_resource_classes(classes)
    by_node = {}
    for pod in pods or []:
        asked = pod_gpu_requests(pod)
        node = (pod.get('spec') or {}).get('nodeName')
        if asked and node:
            by_node.setdefault(node, []).append((pod, asked))
    out = []
    for group in groups:
        workloads = []
        for node in sorted(group['nodes']):
            for pod, asked in sorted(by_node.get(node, []), key=lambda p: _pod_key(p[0])):
                missing = sorted(r for r in asked if r not in served) if group['stack'] == DRA else []
                entry = {'pod': '%s/%s' % (meta_of(pod).get('namespace'), meta_of(pod).get('name')), 'node': node,
                         'resources': asked, 'schedulable': not missing}
                if group['stack'] == DRA:
                    entry['device_classes'] = sorted(set(served[r] for r in asked if r in served))
                if missing:
                    entry['reason'] = ('no DeviceClass serves %s (spec.extendedResourceName): on DRA the pod stays '
                                       'Pending; ask for a ResourceClaim instead, or add such a DeviceClass'
                                       % ', '.join(missing))
                workloads.append(entry)
        out.append(dict(group, nodes=sorted(group['nodes']), workloads=workloads,
                        unschedulable=sum(1 for w in workloads if not w['schedulable'])))
    return out
