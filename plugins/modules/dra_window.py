#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
module: dra_window
short_description: Move a whole cluster between the GPU operator's ClusterPolicy and its GPUCluster in one planned window
version_added: 0.1.0
author:
  - gpuops.gpu contributors (@gpuops)
description:
  - GPU operator v26.7 runs a ClusterPolicy (the NVIDIA device plugin) or a GPUCluster (NVIDIA's DRA driver), never
    both, so a running fleet moves all at once. This module runs that change window, and its way back.
  - To V(dra) - saves the ClusterPolicy (name, labels, annotations, spec) to the Secret
    C(gpuops-gpu-saved-clusterpolicy) in O(operator_namespace), cordons and drains every GPU node
    (C(nvidia.com/gpu.present=true)) batch by batch (PodDisruptionBudgets honoured), deletes the ClusterPolicy,
    creates the GPUCluster O(gpucluster), waits until every node's ResourceSlice of driver C(gpu.nvidia.com) lists
    its devices and no GPU extended resource is left, then uncordons the nodes it cordoned.
  - To V(device-plugin) - the rollback - drains the same way, deletes the GPUCluster and waits until it is gone,
    restores the saved ClusterPolicy exactly (unless one exists), waits until every node advertises its GPU
    extended resources again and the driver publishes no slice for it, then uncordons.
  - Pods that ask for GPU extended resources or hold ResourceClaims are evicted; with O(pod_selector) others too.
  - Refused before any write, every reason at once - a cluster that serves no GPUCluster (operator before v26.7),
    C(resource.k8s.io/v1) not served (to V(dra)), a ClusterPolicy that deploys the GPU driver itself (its driver
    DaemonSet goes with it; a GPUCluster deploys no driver), nothing to restore, NotReady nodes, nodes held by
    another rollout or in a MIG change, and a GPUCluster (or, back, a saved ClusterPolicy) that the API server
    refuses in a server-side dry run.
  - When a node cannot be drained the window stops before the switch; the drained nodes stay cordoned. A node the
    new stack does not serve by O(state_timeout) stays cordoned with the reason on it (C(gpuops.gpu/) annotations).
    Run again to resume, or run the window the other way to undo.
extends_documentation_fragment: [kubernetes.core.k8s_auth_options, gpuops.gpu.auth, gpuops.gpu.rollout.lock]
attributes:
  check_mode:
    support: full
    details: Returns the steps, the batches, the pods each node loses and the GPU workloads with whether they stay schedulable; writes nothing.
  diff_mode:
    support: full
    details: Shows the cluster's stack before and after.
seealso:
  - module: gpuops.gpu.dra_cutover
    description: Node group by node group, with the standalone DRA driver beside a ClusterPolicy (before v26.7).
  - module: gpuops.gpu.cluster_policy
    description: Change the ClusterPolicy's driver settings before the window.
options:
  stack:
    description: The stack the cluster moves to, V(dra) (GPUCluster) or V(device-plugin) (the saved ClusterPolicy).
    type: str
    required: true
    choices: [dra, device-plugin]
  gpucluster:
    description:
      - The GPUCluster to create, as the C(gpuops.gpu.dra) role's part C(gpucluster) plans it (kind C(GPUCluster),
        name C(gpu-cluster)). Required with O(stack=dra).
    type: dict
  operator_namespace:
    description: Namespace of the GPU operator; the saved ClusterPolicy and the rollout lock live there.
    type: str
    default: nvidia-gpu-operator
  max_unavailable:
    description: Nodes drained at once, as a count or a percentage of the GPU nodes. All stay cordoned until the switch.
    type: raw
    default: 1
  pod_selector:
    description: Labels (equality) of other pods to move off the nodes as well.
    type: dict
  force:
    description: Delete a pod whose eviction a PodDisruptionBudget still blocks after O(drain_timeout).
    type: bool
    default: false
  grace_period:
    description: Grace period in seconds for evictions and deletions (default, the pod's own).
    type: int
  drain_timeout:
    description: Seconds a batch may take to drain.
    type: int
    default: 300
  state_timeout:
    description: Seconds to wait for the operator's resource to go and for every node to be served after the switch.
    type: int
    default: 600
  poll_interval:
    description: Seconds between two reads while waiting.
    type: float
    default: 2.0
'''

EXAMPLES = r'''
- name: Plan the window (nothing is written)
  gpuops.gpu.dra_window:
    stack: dra
    gpucluster: "{{ planned_gpucluster }}"
  check_mode: true
  register: window_plan

- name: Move the cluster to DRA through the GPU operator's GPUCluster
  gpuops.gpu.dra_window:
    stack: dra
    gpucluster: "{{ planned_gpucluster }}"
    max_unavailable: 25%

- name: Roll back to the saved ClusterPolicy
  gpuops.gpu.dra_window:
    stack: device-plugin
'''

RETURN = r'''
changed:
  description: Whether anything was (or, in check mode, would be) saved, switched, cordoned or uncordoned.
  returned: always
  type: bool
  sample: true
stack:
  description: The stack asked for.
  returned: always
  type: str
  sample: dra
stack_from:
  description: Where the cluster was - V(device-plugin), V(dra), V(both) or V(none) (a window stopped half-way).
  returned: always
  type: str
  sample: device-plugin
cluster_policy:
  description: The ClusterPolicy saved or restored (null when there is none).
  returned: always
  type: str
  sample: gpu-cluster-policy
steps:
  description: The window's steps in order, in words (empty when there is nothing to do).
  returned: always
  type: list
  elements: str
  sample: ["save ClusterPolicy gpu-cluster-policy to Secret nvidia-gpu-operator/gpuops-gpu-saved-clusterpolicy"]
batches:
  description: GPU node names per drain batch, in order.
  returned: always
  type: list
  elements: list
  sample: [["a100-0", "a100-1"], ["a100-2"]]
plan:
  description: Check mode only - per GPU node, the pods the window evicts.
  returned: check mode
  type: list
  elements: dict
  sample: [{"node": "a100-0", "pods_to_evict": ["ml/train-0"]}]
groups:
  description:
    - Check mode only - the pods on the GPU nodes that ask for GPUs as extended resources, and whether each stays
      schedulable on the target stack (on DRA only through a DeviceClass's C(extendedResourceName)); the fields of
      M(gpuops.gpu.dra_cutover)'s RV(groups).
  returned: check mode
  type: list
  elements: dict
  sample: [{"group": "all GPU nodes", "stack": "dra", "nodes": ["a100-0"], "unschedulable": 1, "workloads": []}]
device_classes:
  description: Check mode only - the DeviceClasses that serve an extended resource now.
  returned: check mode
  type: list
  elements: str
  sample: ["gpu.nvidia.com"]
lock:
  description: Check mode only - the rollout lock as read, not taken.
  returned: check mode
  type: dict
  sample: {"state": "free", "lease": "nvidia-gpu-operator/gpuops-gpu-rollout"}
nodes:
  description:
    - Per GPU node - C(phase) (C(done), or C(failed) with C(reason)), C(changed), pods C(evicted), C(detail) (what
      served it last).
  returned: success or failure
  type: list
  elements: dict
  sample: [{"node": "a100-0", "to": "dra", "phase": "done", "changed": true, "evicted": ["ml/train-0"],
            "detail": "8 device(s) published by gpu.nvidia.com, no GPU extended resource"}]
untouched:
  description: Nodes not cordoned because a drain failed before their batch.
  returned: when a drain failed
  type: list
  elements: str
  sample: ["a100-3"]
api_requests:
  description: Kubernetes API requests made.
  returned: success
  type: int
  sample: 120
duration_s:
  description: Wall time of the run in seconds.
  returned: success
  type: float
  sample: 95.2
'''

from ansible_collections.gpuops.gpu.plugins.module_utils.k8s.runner import argument_spec, gpu_module, run_module
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.dra_window import run
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.inputs import lock_argument_spec


def main():
    run_module(gpu_module(argument_spec=argument_spec(
        stack=dict(type='str', required=True, choices=['dra', 'device-plugin']),
        gpucluster=dict(type='dict'),
        operator_namespace=dict(type='str', default='nvidia-gpu-operator'),
        max_unavailable=dict(type='raw', default=1),
        pod_selector=dict(type='dict'),
        force=dict(type='bool', default=False),
        grace_period=dict(type='int'),
        drain_timeout=dict(type='int', default=300),
        state_timeout=dict(type='int', default=600),
        poll_interval=dict(type='float', default=2.0),
        **lock_argument_spec(progress=True)
    ), required_if=[('stack', 'dra', ('gpucluster',))]), run)


if __name__ == '__main__':
    main()
