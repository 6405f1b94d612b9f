#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
module: sharing_rollout
short_description: Set the GPU sharing profile (time-slicing, MPS) of node groups safely, in batches
version_added: 0.1.0
author:
  - gpuops.gpu contributors (@gpuops)
description:
  - Applies C(nvidia.com/device-plugin.config) values to GPU nodes, batch by batch - cordon, evict the pods
    that use GPU resources (PodDisruptionBudgets honoured, only with O(drain=true)), set or remove the label,
    restart the device-plugin pods on the node when the profile's content changed, wait for GPU feature
    discovery's C(nvidia.com/gpu.replicas) and C(nvidia.com/gpu.sharing-strategy) labels, verify the node's
    allocatable GPU resources (physical devices x replicas), uncordon.
  - Every assignment is validated before anything is written - the profile must be a key of the device-plugin
    ConfigMap named by the ClusterPolicy C(devicePlugin.config.name) (or of O(profiles)), and valid for the
    cluster's MIG strategy and the node's GPU (MPS replica limit by compute capability, MPS refused with MIG
    strategy C(mixed) and on nodes with MIG enabled, C(nvidia.com/mig-*) resources only with C(mixed)).
  - The GPU operator and the device plugin's config-manager do not watch the ConfigMap content; a changed
    profile is only read when the plugin restarts. The module records the content hash each node runs with in
    the C(gpuops.gpu/device-plugin-config-hash) annotation and deletes the device-plugin, GPU feature discovery
    and MPS control daemon pods on a node (see O(restart_pod_selector)) when it differs; their DaemonSets
    recreate them with the new content.
  - Idempotent - nodes whose label, recorded content hash, sharing labels and allocatable resources are already
    right are not touched.
  - Resumable - progress is kept in C(gpuops.gpu/*) annotations on the nodes, so a run that was killed is finished
    by the next run, and only nodes this module cordoned are uncordoned.
extends_documentation_fragment: [kubernetes.core.k8s_auth_options, gpuops.gpu.auth, gpuops.gpu.rollout, gpuops.gpu.rollout.lock]
attributes:
  check_mode:
    support: full
    details: Returns the plan (batches, label changes, plugin restarts, expected resources, pods to evict) and writes nothing.
  diff_mode:
    support: full
    details: Shows the label and allocatable changes per node.
seealso:
  - module: gpuops.gpu.mig_rollout
    description: The same rollout for MIG geometries.
  - module: gpuops.gpu.rollout_lock
    description: The lock this module takes; hold it across several tasks.
  - module: gpuops.gpu.gpu_nodes_info
    description: The GPU nodes and their sharing profile, read-only.
options:
  assignments:
    description:
      - Which nodes get which sharing profile. Give O(assignments[].nodes), a label selector, or both.
      - Select node groups by stable labels (a MachineSet, pool or node-group label, or C(nvidia.com/gpu.present)),
        never by C(nvidia.com/gpu.product), which gains a C(-SHARED) suffix when a node is shared.
    type: list
    elements: dict
    required: true
    suboptions:
      profile:
        description:
          - A key of the device-plugin ConfigMap (the label value).
          - V(none) (or empty) - the node must not be shared. The label is removed when the config-manager then
            falls back to an unshared config (no C(devicePlugin.config.default), or an unshared one); when the
            default shares GPUs it is set to an unshared profile (O(unshared_profile)). A node already labelled
            with an unshared profile keeps it.
          - V(default) - the label is removed and the node follows C(devicePlugin.config.default). Such an assignment
            only covers the nodes no other assignment names, so a cluster-wide default with exceptions is an
            assignment with C(label_selector=nvidia.com/gpu.present=true) and C(profile=default) plus the exceptions.
        type: str
        required: true
      nodes:
        description: Names of the nodes that get O(assignments[].profile).
        type: list
        elements: str
      label_selector:
        description: A Kubernetes label selector (the syntax of C(kubectl get nodes -l)), for example C(gpuops.dev/pool=inference).
        type: str
      selector:
        description: Labels the nodes must carry (equality), as a dict; both selectors apply when both are given.
        type: dict
  operator_namespace:
    description: Namespace of the GPU operator (the device-plugin ConfigMap and pods).
    type: str
    default: nvidia-gpu-operator
  cluster_policy:
    description: Name of the ClusterPolicy to read C(devicePlugin.config) and C(mig.strategy) from. Default is the only one.
    type: str
  config_map:
    description:
      - The device-plugin ConfigMap. Default is the ClusterPolicy's C(devicePlugin.config.name).
      - The GPU operator's own ConfigMaps (C(default-mig-parted-config), C(default-gpu-clients),
        C(nvidia-<operand>-entrypoint)) and the CA bundles C(kube-root-ca.crt) and C(openshift-service-ca.crt) are
        refused before anything is read or written.
    type: str
  profiles:
    description:
      - The profiles (name to device-plugin config) to validate against instead of reading O(config_map), for example
        the ones a role is about to write, so check mode can plan before the ConfigMap exists. They are rendered
        exactly as the P(gpuops.gpu.sharing#role) role writes them, so the content hashes match.
    type: dict
  default_profile:
    description:
      - Overrides the ClusterPolicy's C(devicePlugin.config.default) (the profile of nodes without the label);
        an empty string means no default.
    type: str
  unshared_profile:
    description:
      - The profile set on nodes assigned V(none) while the default profile shares GPUs. Default is the first (by name)
        profile without sharing.
    type: str
  mig_strategy:
    description: Overrides the ClusterPolicy C(mig.strategy) used to validate profiles and compute the expected resources.
    type: str
    choices: [none, single, mixed]
  mig_catalog_overrides:
    description: Extra or corrected GPU products for the catalog the compute capability is read from.
    type: dict
  restart_pod_selector:
    description:
      - Label selector of the pods, in O(operator_namespace) on the node, deleted when the profile content changed.
    type: str
    default: app in (nvidia-device-plugin-daemonset,gpu-feature-discovery,nvidia-device-plugin-mps-control-daemon)
  drain:
    description:
      - Evict pods using GPU resources before changing the profile. On by default because a profile change
        restarts the device plugin and changes the number (and possibly the name) of the advertised resources
        under running pods. Turn it off only where the workloads tolerate it.
    type: bool
    default: true
  state_timeout:
    description: Seconds to wait for the restarted pods and the sharing labels before the node counts as stuck; 1 to 604800.
    type: int
    default: 300
  verify:
    description: Check that the node's allocatable GPU resources match the profile.
    type: bool
    default: true
'''

EXAMPLES = r'''
- name: Time-slice the inference pool 4 ways, the A100 training pool stays unshared
  gpuops.gpu.sharing_rollout:
    assignments:
      - label_selector: gpuops.dev/pool=inference
        profile: time-sliced-4
      - selector:
          gpuops.dev/pool: training
        profile: none

- name: Every GPU node follows devicePlugin.config.default, except the L40S group (MPS), two nodes at a time
  gpuops.gpu.sharing_rollout:
    assignments:
      - label_selector: nvidia.com/gpu.present=true
        profile: default
      - selector:
          gpuops.dev/node-group: l40s
        profile: mps-10
    max_unavailable: 2

- name: What would change?
  gpuops.gpu.sharing_rollout:
    assignments:
      - label_selector: gpuops.dev/pool=inference
        profile: time-sliced-8
  check_mode: true
  register: plan
'''

RETURN = r'''
changed:
  description: Whether any node was (or, in check mode, would be) relabelled, restarted, cordoned or uncordoned.
  returned: always
  type: bool
  sample: true
batches:
  description: Node names per batch, in order; the nodes of a batch change their sharing profile together.
  returned: always
  type: list
  elements: list
  sample: [["t4-0"], ["l40s-0"]]
window:
  description: With O(window=rolling), how many nodes are changed at once (the order is that of RV(batches)).
  returned: when O(window=rolling) and there are nodes to change
  type: int
  sample: 20
plan:
  description:
    - Check mode only - per batch, the nodes with their label now and after, the profile, whether the device plugin
      is restarted, allocatable now and expected, pods to evict and blocking PDBs.
  returned: check mode
  type: list
  elements: dict
  contains:
    batch:
      description: The batch number, from 1.
      type: int
    nodes:
      description: The nodes of the batch.
      type: list
      elements: dict
      contains:
        node: &node
          description: The node.
          type: str
        from: &from
          description: The node's profile now.
          type: str
        to: &to
          description: The profile assigned.
          type: str
        resume:
          description: Whether an earlier run left this node half-way (it is resumed).
          type: bool
        pods_to_evict:
          description: Pods the drain would evict, C(namespace/name).
          type: list
          elements: str
        blocking_pdbs:
          description: PodDisruptionBudgets that would block those evictions now, C(namespace/name).
          type: list
          elements: str
        label_from:
          description: The node's C(nvidia.com/device-plugin.config) label now.
          type: str
        label_to:
          description: The label after the rollout.
          type: str
        profile:
          description: The profile of the ConfigMap the node gets (null for none).
          type: str
        restart_device_plugin:
          description: Whether the node's device plugin pod is restarted.
          type: bool
        allocatable:
          description: The node's GPU resources advertised now.
          type: dict
          sample: {"nvidia.com/gpu": 1}
        expected_allocatable:
          description: The GPU resources it is expected to advertise after the rollout.
          type: dict
          sample: {"nvidia.com/gpu": 4}
  sample: [{"batch": 1, "nodes": [{"node": "t4-0", "from": null, "to": "time-sliced-4", "resume": false,
            "pods_to_evict": [], "blocking_pdbs": [], "label_from": null, "label_to": "time-sliced-4",
            "profile": "time-sliced-4", "restart_device_plugin": true, "allocatable": {"nvidia.com/gpu": 1},
            "expected_allocatable": {"nvidia.com/gpu": 4}}]}]
lock:
  description: Check mode only - the rollout lock as read, not taken (its fields as in RV(gpuops.gpu.mig_rollout#module:lock)).
  returned: check mode
  type: dict
  sample: {"state": "held", "lease": "nvidia-gpu-operator/gpuops-gpu-rollout", "who": "awx@runner pid 41",
           "purpose": "sharing_rollout of 2 node(s)", "nodes": "a100-0,a100-1", "since": "2026-01-05T10:00:00.000000Z"}
nodes:
  description: Per node changed - target, final phase, pods evicted, pods restarted, allocatable after, duration in seconds.
  returned: success or rollout failure
  type: list
  elements: dict
  contains:
    node: *node
    from: *from
    to: *to
    phase:
      description:
        - Where the node ended, C(done), C(failed) (held cordoned and annotated, with C(reason)) or C(gone) (deleted
          during the rollout).
      type: str
    changed:
      description: Whether the node was written to.
      type: bool
    evicted:
      description: Pods evicted from it, C(namespace/name).
      type: list
      elements: str
    cycled:
      description: Whether its label was cycled because the node agent was stuck.
      type: bool
    detail:
      description: What the last check of the node found, in words.
      type: str
    reason:
      description: Why it was held (C(phase=failed)).
      type: str
      returned: when held
    allocatable:
      description: Its GPU resources as advertised after the change.
      type: dict
      returned: when verified
      sample: {"nvidia.com/gpu": 4}
    duration_s:
      description: Seconds from its start to its end.
      type: float
    timeline:
      description:
        - UTC times (ISO 8601) of its steps, C(started), C(cordoned), C(drained), C(labelled), C(reported), C(verified),
          C(uncordoned), those it went through.
      type: dict
      sample: {"started": "2026-01-05T10:00:00.120Z", "cordoned": "2026-01-05T10:00:00.140Z",
               "drained": "2026-01-05T10:00:00.910Z", "labelled": "2026-01-05T10:00:00.930Z",
               "reported": "2026-01-05T10:00:19.400Z", "verified": "2026-01-05T10:00:21.600Z",
               "uncordoned": "2026-01-05T10:00:21.620Z"}
    restarted:
      description: Device plugin pods restarted for the node, C(namespace/name).
      type: list
      elements: str
      returned: when a pod was restarted
  sample: [{"node": "t4-0", "from": null, "to": "time-sliced-4", "phase": "done", "changed": true, "evicted": [],
           "restarted": ["nvidia-gpu-operator/nvidia-device-plugin-daemonset-x7k2p"], "cycled": false, "detail": "",
           "allocatable": {"nvidia.com/gpu": 4}, "duration_s": 21.5,
           "timeline": {"started": "2026-01-05T10:00:00.120Z", "uncordoned": "2026-01-05T10:00:21.620Z"}}]

assignments:
  description: The resolved node to profile map (V(none) and V(default) as given).
  returned: success
  type: dict
  sample: {"t4-0": "time-sliced-4", "a100-0": "none"}
profiles:
  description: The profiles of the ConfigMap (or O(profiles)) with their sharing strategy (none, time-slicing, mps).
  returned: success
  type: dict
  sample: {"time-sliced-4": "time-slicing", "mps-10": "mps", "unshared": "none"}
mig_strategy:
  description: The MIG strategy the profiles were validated and the expected resources computed for.
  returned: success
  type: str
  sample: single
config_map:
  description: The device-plugin ConfigMap validated against.
  returned: success
  type: str
  sample: gpuops-device-plugin-config
default_profile:
  description: The profile of nodes without the label (C(devicePlugin.config.default)), null for none.
  returned: success
  type: str
  sample: time-sliced-4
unshared_profile:
  description: The profile used for V(none) assignments while the default shares GPUs.
  returned: success
  type: str
  sample: unshared
untouched:
  description: Nodes not started because the rollout stopped on a failure; their sharing profile is unchanged.
  returned: failure
  type: list
  elements: str
  sample: ["t4-1"]
api_requests:
  description: Kubernetes API requests made (node reads and writes, evictions, device-plugin pod restarts, Events).
  returned: success
  type: int
  sample: 24
duration_s:
  description: Wall time of the run in seconds, including the device plugin restarts and GPU feature discovery.
  returned: success
  type: float
  sample: 22.4
'''

from ansible_collections.gpuops.gpu.plugins.module_utils.k8s.runner import argument_spec, gpu_module, run_module
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.inputs import rollout_argument_spec
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.sharing import run
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.sharing_kind import RESTART_SELECTOR


def main():
    run_module(gpu_module(argument_spec=argument_spec(
        rollout_argument_spec('profile', state_timeout=300),
        profiles=dict(type='dict'),
        default_profile=dict(type='str'),
        unshared_profile=dict(type='str'),
        restart_pod_selector=dict(type='str', default=RESTART_SELECTOR),
    )), run)


if __name__ == '__main__':
    main()
