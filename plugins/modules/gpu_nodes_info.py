#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
module: gpu_nodes_info
short_description: Inventory of the NVIDIA GPU nodes of a Kubernetes or OpenShift cluster
version_added: 0.1.0
author:
  - gpuops.gpu contributors (@gpuops)
description:
  - Reports, per GPU node, the GPU product, count and memory, the MIG capability, strategy,
    configuration and reconfiguration state, the sharing strategy (time-slicing, MPS) and
    replicas, the allocatable GPU resources against the ones requested by the pods bound to the
    node, the GPU workload pods, whether the node is cordoned, and its taints; plus cluster totals.
  - In Dynamic Resource Allocation (DRA) terms as well, where C(resource.k8s.io/v1) is served, from the
    ResourceSlices of NVIDIA's DRA driver (C(gpu.nvidia.com), newest pool generation only) and the
    ResourceClaims, whose allocations say which devices are taken. Per node, the stack that serves
    it (RV(nodes[].stack)) and its DRA devices, allocated or free (RV(nodes[].dra_devices)); a node the
    driver publishes devices for counts as a GPU node.
  - The values come from the node labels written by GPU Feature Discovery, Node Feature Discovery
    and the MIG manager (C(nvidia.com/gpu.product), C(nvidia.com/gpu.count),
    C(nvidia.com/mig.config.state), ...), from the node C(status.allocatable) and from the pod
    specs.
  - The cluster is read with list calls only, never one request per node. One node list
    (filtered by the API server with O(label_selector)) and at most one pod list (bound,
    non-terminal pods, field selector C(spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed),
    narrowed to C(spec.nodeName=<node>) when a single node is selected); where C(resource.k8s.io/v1) is
    served, one ResourceSlice list (C(spec.driver=gpu.nvidia.com)) and one ResourceClaim list. Lists
    are read in pages of 500 objects.
  - Read-only. The module never changes the cluster and reports C(changed=false).
extends_documentation_fragment: [kubernetes.core.k8s_auth_options, gpuops.gpu.auth]
attributes:
  check_mode:
    support: full
    details: The module is read-only and behaves the same in check mode.
  diff_mode:
    support: N/A
    details: The module changes nothing, so there is nothing to diff.
options:
  label_selector:
    description:
      - Only nodes matching this label selector, in Kubernetes syntax, for example
        V(gpuops.dev/pool=training) or V(nvidia.com/mig.capable=true,node-role.kubernetes.io/worker).
      - Applied by the API server.
    type: str
  names:
    description:
      - Only the nodes with these names.
      - Names that match no node (after O(label_selector)) are returned in RV(not_found) with a
        warning; named nodes without GPUs are returned in RV(not_gpu) when O(only_gpu_nodes=true).
    type: list
    elements: str
  include_pods:
    description:
      - Read the pods bound to the selected nodes to report the requested GPU resources, the free
        ones and the GPU workload pods.
      - With V(false) no pod is read (one request instead of two on a large cluster); RV(nodes[].requested),
        RV(nodes[].free), RV(nodes[].gpu_pods) and their totals in RV(summary) are then V(null).
    type: bool
    default: true
  only_gpu_nodes:
    description:
      - Leave out nodes without NVIDIA GPUs.
      - A node has GPUs when it has the label C(nvidia.com/gpu.present=true),
        C(feature.node.kubernetes.io/pci-10de.present=true) or C(nvidia.com/gpu.product), or GPU
        resources in its capacity.
      - With V(false) every selected node is returned; RV(nodes[].gpu_node) tells them apart.
    type: bool
    default: true
notes:
  - Needs RBAC C(list) on C(nodes) and, unless O(include_pods=false), C(list) on C(pods) in all
    namespaces; for the DRA view C(list) on C(resourceslices) and C(resourceclaims) (C(resource.k8s.io)),
    without which it is left out with a warning.
  - C(requested) counts every non-terminal pod bound to the node, DaemonSet pods included, the way
    the scheduler does. An extended resource request defaults to its limit; init containers count
    by their peak and restartable init containers (sidecars) add to the app containers.
  - Under MIG strategy C(single), GPU Feature Discovery labels the MIG devices, so RV(nodes[].count)
    and RV(nodes[].memory_mib) describe MIG devices, not physical GPUs.
seealso:
  - plugin: gpuops.gpu.gpu_fleet_table
    plugin_type: filter
  - module: kubernetes.core.k8s_info
'''

EXAMPLES = r'''
- name: Read the GPU fleet
  gpuops.gpu.gpu_nodes_info:
  register: fleet

- name: Show it as a table
  ansible.builtin.debug:
    msg: "{{ (fleet.nodes | gpuops.gpu.gpu_fleet_table(summary=fleet.summary)).splitlines() }}"

- name: Only the training pool, with an explicit kubeconfig
  gpuops.gpu.gpu_nodes_info:
    kubeconfig: /home/ops/.kube/prod
    label_selector: gpuops.dev/pool=training
  register: training

- name: Fail when a node is stuck in a MIG reconfiguration
  ansible.builtin.assert:
    that: training.summary.mig_states.failed | default(0) == 0
    fail_msg: "MIG reconfiguration failed on {{ training.nodes | selectattr('mig_state', 'eq', 'failed') | map(attribute='name') | join(', ') }}"

- name: Two nodes, without reading pods
  gpuops.gpu.gpu_nodes_info:
    names:
      - gpu-worker-0
      - gpu-worker-1
    include_pods: false
  register: two

- name: Every node, with or without GPUs
  gpuops.gpu.gpu_nodes_info:
    only_gpu_nodes: false
  register: all_nodes
'''

RETURN = r'''
nodes:
  description: One entry per selected node, sorted by name.
  returned: success
  type: list
  elements: dict
  contains:
    name:
      description: Node name.
      type: str
      sample: gpu-a100-0
    gpu_node:
      description: Whether the node has NVIDIA GPUs (always V(true) with O(only_gpu_nodes=true)).
      type: bool
      sample: true
    product:
      description:
        - GPU model from C(nvidia.com/gpu.product), without the C(-MIG-<profile>) and C(-SHARED)
          suffixes GFD appends. V(null) when unlabelled.
      type: str
      sample: NVIDIA-A100-SXM4-40GB
    product_label:
      description: The C(nvidia.com/gpu.product) label as is.
      type: str
      sample: NVIDIA-A100-SXM4-40GB-MIG-1g.5gb
    count:
      description: C(nvidia.com/gpu.count) (MIG devices under MIG strategy C(single)).
      type: int
      sample: 8
    memory_mib:
      description: C(nvidia.com/gpu.memory), in MiB.
      type: int
      sample: 40960
    mig_capable:
      description: C(nvidia.com/mig.capable) is V(true).
      type: bool
      sample: true
    mig_strategy:
      description: C(nvidia.com/mig.strategy) (V(none), V(single) or V(mixed)), V(null) when unlabelled.
      type: str
      sample: single
    mig_config:
      description: C(nvidia.com/mig.config), the mig-parted configuration asked for.
      type: str
      sample: all-1g.5gb
    mig_state:
      description: C(nvidia.com/mig.config.state) (V(pending), V(rebooting), V(success), V(failed)).
      type: str
      sample: success
    mig_devices:
      description:
        - MIG devices by profile, from the C(nvidia.com/mig-<profile>.count) labels (strategy
          C(mixed)) or from the product suffix and count (strategy C(single)). Empty without MIG.
      type: dict
      sample: {"1g.5gb": 14, "3g.20gb": 4}
    sharing_strategy:
      description: C(nvidia.com/gpu.sharing-strategy) (V(none), V(time-slicing), V(mps)).
      type: str
      sample: time-slicing
    replicas:
      description: C(nvidia.com/gpu.replicas), the devices each physical device is shared as.
      type: int
      sample: 4
    device_plugin_config:
      description: C(nvidia.com/device-plugin.config), the device-plugin configuration key the node uses.
      type: str
      sample: ts-4
    driver_version:
      description:
        - The driver version from GFD's C(nvidia.com/cuda.driver-version.full) label (or the
          C(nvidia.com/cuda.driver.major)/C(minor)/C(rev) labels); null when GFD has not labelled the node.
      type: str
      sample: 570.172.08
    cuda_version:
      description:
        - The CUDA version the driver supports, from GFD's C(nvidia.com/cuda.runtime-version.full) label (or
          C(nvidia.com/cuda.runtime.major)/C(minor)); null when not labelled.
      type: str
      sample: "12.8"
    deploy:
      description: The C(nvidia.com/gpu.deploy.<operand>) labels, by operand.
      type: dict
      sample: {"device-plugin": "true", "mig-manager": "true"}
    paused_for_mig_change:
      description: Operands the MIG manager paused (C(paused-for-mig-change)) during a reconfiguration.
      type: list
      elements: str
      sample: []
    capacity:
      description: GPU resources of C(status.capacity).
      type: dict
      sample: {"nvidia.com/gpu": 8}
    allocatable:
      description: GPU resources of C(status.allocatable) (C(nvidia.com/gpu), C(nvidia.com/gpu.shared), C(nvidia.com/mig-*)).
      type: dict
      sample: {"nvidia.com/mig-1g.5gb": 14, "nvidia.com/mig-3g.20gb": 4}
    requested:
      description:
        - GPU resources requested by the non-terminal pods bound to the node.
        - V(null) with O(include_pods=false).
      type: dict
      sample: {"nvidia.com/mig-1g.5gb": 3}
    free:
      description:
        - RV(nodes[].allocatable) minus RV(nodes[].requested), per allocatable resource; negative
          when pods hold more than the node advertises now.
        - V(null) with O(include_pods=false).
      type: dict
      sample: {"nvidia.com/mig-1g.5gb": 11, "nvidia.com/mig-3g.20gb": 4}
    gpu_pods:
      description:
        - C(namespace/name) of the non-terminal pods on the node that request GPU resources,
          DaemonSet pods excluded (the workloads a drain would evict).
        - V(null) with O(include_pods=false).
      type: list
      elements: str
      sample: ["team-a/train-0", "team-b/notebook-1"]
    unschedulable:
      description: The node is cordoned (C(spec.unschedulable)).
      type: bool
      sample: false
    ready:
      description: The node's C(Ready) condition is C(True).
      type: bool
      sample: true
    taints:
      description: The node's taints, as the API returns them.
      type: list
      elements: dict
      sample: [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]
    stack:
      description:
        - Which stack serves the node's GPUs. V(device-plugin) when its capacity holds C(nvidia.com/gpu),
          C(nvidia.com/gpu.shared) or C(nvidia.com/mig-*) above zero; V(dra) when NVIDIA's DRA driver
          publishes a ResourceSlice for it; V(both); V(none).
      type: str
      sample: dra
    dra_devices:
      description: The node's DRA devices, sorted by name; empty without DRA.
      type: list
      elements: dict
      contains:
        name: {description: "Device name as the driver forms it (C(gpu-0), C(gpu-0-mig-1g5gb-19-0)).", type: str}
        pool: {description: "The ResourceSlice pool (the driver names it after the node).", type: str}
        type: {description: "V(gpu) or V(mig) (attribute C(type)).", type: str}
        product: {description: "Attribute C(productName), for example V(NVIDIA A100-SXM4-40GB).", type: str}
        profile: {description: "MIG profile (attribute C(profile)), V(null) for a whole GPU.", type: str}
        uuid: {description: "Attribute C(uuid).", type: str}
        parent_uuid: {description: "A MIG device's C(parentUUID).", type: str}
        parent: {description: "A MIG device's GPU: its device name, else its UUID.", type: str}
        memory_mib: {description: "The C(memory) capacity in MiB.", type: int}
        allocated: {description: "A claim's allocation holds the device.", type: bool}
        claims: {description: "C(namespace/name) of the ResourceClaims that hold it.", type: list, elements: str}
        pods: {description: "C(namespace/name) of the pods the claims are reserved for.", type: list, elements: str}
        sharing:
          description:
            - The C(sharing) of the driver's C(GpuConfig) or C(MigDeviceConfig) that applies to the
              allocation (C(strategy) V(TimeSlicing) or V(MPS) and its settings), V(null) without one.
          type: dict
          sample: {"strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": 50}}
      sample: [{"name": "gpu-0", "pool": "node-1", "type": "gpu", "product": "NVIDIA A100-SXM4-40GB",
                "profile": null, "uuid": "GPU-4f5b", "parent_uuid": null, "parent": null, "memory_mib": 40960,
                "allocated": true, "claims": ["team-a/train-gpu"], "pods": ["team-a/train"],
                "sharing": {"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Long"}}}]
    dra_counts:
      description: The node's DRA devices by product (C(<product> MIG <profile>) for MIG devices).
      type: dict
      sample: {"NVIDIA A100-SXM4-40GB": {"total": 2, "allocated": 1, "free": 1}}
summary:
  description: Totals over RV(nodes).
  returned: success
  type: dict
  contains:
    nodes:
      description: Number of nodes returned.
      type: int
      sample: 6
    gpu_nodes:
      description: Number of them with GPUs.
      type: int
      sample: 6
    products:
      description: GPU nodes by product.
      type: dict
      sample: {"NVIDIA-A100-SXM4-40GB": 2, "Tesla-T4": 1}
    capacity:
      description: Sum of RV(nodes[].capacity).
      type: dict
      sample: {"nvidia.com/gpu": 20}
    allocatable:
      description: Sum of RV(nodes[].allocatable).
      type: dict
      sample: {"nvidia.com/gpu": 20, "nvidia.com/mig-1g.5gb": 14}
    requested:
      description: Sum of RV(nodes[].requested); V(null) with O(include_pods=false).
      type: dict
      sample: {"nvidia.com/gpu": 3}
    free:
      description: Sum of RV(nodes[].free); V(null) with O(include_pods=false).
      type: dict
      sample: {"nvidia.com/gpu": 17, "nvidia.com/mig-1g.5gb": 14}
    gpu_pods:
      description: Number of GPU workload pods; V(null) with O(include_pods=false).
      type: int
      sample: 2
    mig_strategies:
      description: Nodes by C(nvidia.com/mig.strategy).
      type: dict
      sample: {"single": 2, "mixed": 1}
    mig_states:
      description: Nodes by C(nvidia.com/mig.config.state).
      type: dict
      sample: {"success": 3}
    sharing:
      description: GPU nodes by sharing strategy.
      type: dict
      sample: {"none": 5, "time-slicing": 1}
    unschedulable:
      description: Number of cordoned nodes.
      type: int
      sample: 0
    not_ready:
      description: Number of nodes whose C(Ready) condition is not C(True).
      type: int
      sample: 0
    stacks:
      description: GPU nodes by RV(nodes[].stack).
      type: dict
      sample: {"device-plugin": 4, "dra": 2}
    dra_devices:
      description: Sum of RV(nodes[].dra_counts).
      type: dict
      sample: {"NVIDIA A100-SXM4-40GB MIG 1g.5gb": {"total": 7, "allocated": 3, "free": 4}}
dra:
  description:
    - Whether the cluster serves C(resource.k8s.io/v1) (RV(dra.served)), and what was read there.
    - Only C(served) V(false) when it is not served; C(readable) V(false) with a C(reason) when the account
      may not list ResourceSlices and ResourceClaims.
  returned: success
  type: dict
  contains:
    served: {description: "C(resource.k8s.io/v1) is served.", type: bool}
    driver: {description: "The DRA driver read.", type: str, sample: gpu.nvidia.com}
    slices: {description: "ResourceSlices of the newest generation of their pool.", type: int, sample: 6}
    stale_slices: {description: "Older slices of those pools, left out.", type: int, sample: 0}
    claims: {description: "ResourceClaims holding devices of the driver.", type: int, sample: 3}
    unknown_allocations:
      description: "C(pool/device) allocated by a claim that no current slice lists (a device gone since)."
      type: list
      elements: str
      sample: []
not_found:
  description: Names from O(names) that matched no node (after O(label_selector)).
  returned: success
  type: list
  elements: str
  sample: []
not_gpu:
  description: Names from O(names) left out because the node has no GPUs (O(only_gpu_nodes=true)).
  returned: success
  type: list
  elements: str
  sample: []
api_requests:
  description:
    - Number of API requests the inventory made (two for a cluster of up to 500 nodes and 500
      bound pods, whatever the number of GPU nodes, plus one where C(resource.k8s.io/v1) is not served,
      two where it is and up to 500 slices and 500 claims exist).
  returned: success
  type: int
  sample: 2
'''

from ansible_collections.gpuops.gpu.plugins.module_utils.k8s.runner import argument_spec, gpu_module, run_module
from ansible_collections.gpuops.gpu.plugins.module_utils.ops.inventory import run


def main():
    run_module(gpu_module(argument_spec=argument_spec(
        label_selector=dict(type='str'),
        names=dict(type='list', elements='str'),
        include_pods=dict(type='bool', default=True),
        only_gpu_nodes=dict(type='bool', default=True),
    )), run)


if __name__ == '__main__':
    main()
