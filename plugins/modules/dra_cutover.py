#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
module: dra_cutover
short_description: Move node groups from the NVIDIA device plugin to NVIDIA's DRA driver and back, safely, in batches
version_added: 0.1.0
author:
  - gpuops.gpu contributors (@gpuops)
description:
  - Moves GPU nodes between the two ways Kubernetes hands out NVIDIA GPUs, batch by batch - cordon, evict the pods
    that use GPU resources (PodDisruptionBudgets honoured), set the node labels, wait until the other stack serves
    the node, uncordon.
  - To V(dra) - sets C(nvidia.com/gpu.deploy.device-plugin=false) (the GPU operator's device-plugin DaemonSet
    leaves the node) and C(gpuops.gpu/dra-kubelet-plugin=true) (NVIDIA's DRA driver chart, installed with
    C(kubeletPlugin.nodeSelector) on that label, starts its kubelet plugin there), then waits until the node's
    ResourceSlice of driver C(gpu.nvidia.com) lists at least one device per GPU (or the node's MIG devices) and
    the node no longer advertises C(nvidia.com/gpu) or C(nvidia.com/mig-*).
  - To V(device-plugin) - sets C(nvidia.com/gpu.deploy.device-plugin=true) and removes
    C(gpuops.gpu/dra-kubelet-plugin), then waits until the driver publishes no slice for the node and its GPU
    extended resources are allocatable again. This is the rollback of a cutover to V(dra).
  - Every assignment is checked before anything is written - a known stack, GPU nodes (C(nvidia.com/gpu.count)
    above 0), no MIG change under way, no node held by another rollout, and for a cutover to V(dra)
    C(resource.k8s.io/v1) ResourceSlices served.
  - Check mode returns the plan, and per node group every pod on the nodes to move that asks for GPUs as extended
    resources, with whether it stays schedulable on DRA (only when a DeviceClass names its resource in
    C(spec.extendedResourceName), the DRAExtendedResource feature).
  - Idempotent and resumable like M(gpuops.gpu.sharing_rollout) - nodes already on their stack are not touched,
    progress is kept in C(gpuops.gpu/*) annotations, a failed node is held cordoned with the reason.
extends_documentation_fragment: [kubernetes.core.k8s_auth_options, gpuops.gpu.auth, gpuops.gpu.rollout, gpuops.gpu.rollout.lock]
attributes:
  check_mode:
    support: full
    details: Returns the plan (batches, label changes, pods to evict, the GPU workloads and their schedulability) and writes nothing.
  diff_mode:
    support: full
    details: Shows each node's stack and advertised GPU resources before, and its stack after.
seealso:
  - module: gpuops.gpu.sharing_rollout
    description: The same rollout for device-plugin sharing profiles.
  - module: gpuops.gpu.gpu_nodes_info
    description: The stack that serves each GPU node, read-only.
options:
  assignments:
    description:
      - Which nodes move to which stack. Give O(assignments[].nodes), a label selector, or both; each item is one
        node group of the plan.
    type: list
    elements: dict
    required: true
    suboptions:
      stack:
        description: The stack the nodes move to, V(dra) or V(device-plugin).
        type: str
        required: true
      nodes:
        description: Names of the nodes that move.
        type: list
        elements: str
      label_selector:
        description: A Kubernetes label selector (the syntax of C(kubectl get nodes -l)).
        type: str
      selector:
        description: Labels the nodes must carry (equality), as a dict; both selectors apply when both are given.
        type: dict
  operator_namespace:
    description: Namespace of the GPU operator; the rollout lock lives there unless O(lock_namespace) says otherwise.
    type: str
    default: nvidia-gpu-operator
  cluster_policy:
    description: Not used by this module (kept for the options every rollout module shares).
    type: str
  config_map:
    description: Not used by this module (kept for the options every rollout module shares).
    type: str
  mig_strategy:
    description: Not used by this module (kept for the options every rollout module shares).
    type: str
    choices: [none, single, mixed]
  mig_catalog_overrides:
    description: Not used by this module (kept for the options every rollout module shares).
    type: dict
  drain:
    description:
      - Evict pods using GPU resources before the stack changes. On by default - the device plugin's resources
        disappear under running pods. Turn it off only where the workloads tolerate it.
    type: bool
    default: true
  state_timeout:
    description: Seconds to wait for the other stack to serve the node before it counts as stuck; 1 to 604800.
    type: int
    default: 300
  verify:
    description: Check the node's allocatable GPU extended resources after the move (none on DRA).
    type: bool
    default: true
'''

EXAMPLES = r'''
- name: What would move, and which GPU workloads would no longer schedule?
  gpuops.gpu.dra_cutover:
    assignments:
      - label_selector: gpuops.dev/pool=inference
        stack: dra
  check_mode: true
  register: plan

- name: Move the inference pool to DRA, two nodes at a time
  gpuops.gpu.dra_cutover:
    assignments:
      - label_selector: gpuops.dev/pool=inference
        stack: dra
    max_unavailable: 2
    lock_namespace: nvidia-dra-driver-gpu

- name: Roll it back to the device plugin
  gpuops.gpu.dra_cutover:
    assignments:
      - label_selector: gpuops.dev/pool=inference
        stack: device-plugin
'''

RETURN = r'''
changed:
  description: Whether any node was (or, in check mode, would be) relabelled, cordoned or uncordoned.
  returned: always
  type: bool
  sample: true
batches:
  description: Node names per batch, in order.
  returned: always
  type: list
  elements: list
  sample: [["t4-0"], ["t4-1"]]
window:
  description: With O(window=rolling), how many nodes are moved at once (the order is that of RV(batches)).
  returned: when O(window=rolling) and there are nodes to change
  type: int
  sample: 20
plan:
  description:
    - Check mode only - per batch, the nodes with their stack now (C(stack_from)) and the labels set
      (C(labels_to)), the GPU resources advertised now, the devices the driver publishes now and the fewest it must
      publish after a move to DRA (C(dra_devices), C(expected_devices)), pods to evict and blocking PDBs.
  returned: check mode
  type: list
  elements: dict
  sample: [{"batch": 1, "nodes": [{"node": "t4-0", "from": "device-plugin", "to": "dra", "resume": false,
            "pods_to_evict": ["ml/infer-0"], "blocking_pdbs": [], "stack_from": "device-plugin",
            "labels_to": {"nvidia.com/gpu.deploy.device-plugin": "false", "gpuops.gpu/dra-kubelet-plugin": "true"},
            "allocatable": {"nvidia.com/gpu": 1}, "dra_devices": 0, "expected_devices": 1}]}]
groups:
  description:
    - Check mode only - one entry per assignment (node group) with its nodes to move, the pods on them that ask for
      GPUs as extended resources (C(workloads) - C(pod), C(node), C(resources), C(schedulable), C(device_classes),
      C(reason) when not schedulable) and how many would stay Pending (C(unschedulable)).
  returned: check mode
  type: list
  elements: dict
  sample: [{"group": "gpuops.dev/pool=inference", "stack": "dra", "nodes": ["t4-0"], "unschedulable": 0,
            "workloads": [{"pod": "ml/infer-0", "node": "t4-0", "resources": {"nvidia.com/gpu": 1},
                           "schedulable": true, "device_classes": ["gpu.nvidia.com"]}]}]
lock:
  description: Check mode only - the rollout lock as read, not taken (its fields as in RV(gpuops.gpu.mig_rollout#module:lock)).
  returned: check mode
  type: dict
  sample: {"state": "free", "lease": "nvidia-gpu-operator/gpuops-gpu-rollout"}
nodes:
  description:
    - Per node changed - C(from) and C(to) stack, final C(phase) (C(done), C(failed) with C(reason), C(gone)),
      C(changed), pods C(evicted), C(detail), C(allocatable) after, C(duration_s), C(timeline).
  returned: success or rollout failure
  type: list
  elements: dict
  sample: [{"node": "t4-0", "from": "device-plugin", "to": "dra", "phase": "done", "changed": true, "evicted": [],
            "cycled": false, "detail": "1 device(s) published by gpu.nvidia.com, no GPU extended resource",
            "allocatable": {}, "duration_s": 6.2}]
assignments:
  description: The resolved node to stack map.
  returned: success
  type: dict
  sample: {"t4-0": "dra", "t4-1": "dra"}
slices_served:
  description: Whether the cluster serves C(resource.k8s.io/v1) ResourceSlices.
  returned: success
  type: bool
  sample: true
untouched:
  description: Nodes not started because the rollout stopped on a failure; their stack is unchanged.
  returned: failure
  type: list
  elements: str
  sample: ["t4-1"]
api_requests:
  description: Kubernetes API requests made.
  returned: success
  type: int
  sample: 40
duration_s:
  description: Wall time of the run in seconds.
  returned: success
  type: float
  sample: 12.4
'''

from ansible_collections.gpuops.gpu.plugins.module_utils.k8s.runner import argument_spec, gpu_module, run_module
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.dra_cutover import run
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.inputs import rollout_argument_spec


def main():
    run_module(gpu_module(argument_spec=argument_spec(rollout_argument_spec('stack', state_timeout=300))), run)


if __name__ == '__main__':
    main()
