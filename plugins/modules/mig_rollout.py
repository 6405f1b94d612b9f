#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
module: mig_rollout
short_description: Change the MIG configuration of GPU nodes safely, in batches
version_added: 0.1.0
author:
  - gpuops.gpu contributors (@gpuops)
description:
  - Applies C(nvidia.com/mig.config) values to GPU nodes the way a careful operator would by hand,
    batch by batch - cordon, evict the pods that use GPU resources through the Eviction API
    (PodDisruptionBudgets honoured), set the label and clear the old C(nvidia.com/mig.config.state)
    in one patch, wait for the MIG manager to report C(success), verify the node's allocatable GPU
    resources, uncordon.
  - Every assignment is validated against the node's GPU product, the ClusterPolicy C(mig.strategy)
    and the mig-parted ConfigMap the MIG manager reads (placement-aware) before anything is written.
  - Idempotent - nodes already at their config with state C(success) are not touched.
  - Resumable - progress is kept in C(gpuops.gpu/*) annotations on the nodes, so a run that was
    killed is finished by the next run, and only nodes this module cordoned are uncordoned.
  - A failed or stuck node stops the rollout; it stays cordoned with the reason in the
    C(gpuops.gpu/rollout-reason) annotation and a Warning Event, and nodes not yet started stay untouched.
extends_documentation_fragment: [kubernetes.core.k8s_auth_options, gpuops.gpu.auth, gpuops.gpu.rollout, gpuops.gpu.rollout.lock]
attributes:
  check_mode:
    support: full
    details: Returns the plan (batches, pods to evict, PodDisruptionBudgets that would block) and writes nothing.
  diff_mode:
    support: full
    details: Shows the label changes per node.
seealso:
  - module: gpuops.gpu.sharing_rollout
    description: The same rollout for GPU sharing profiles (time-slicing, MPS).
  - module: gpuops.gpu.rollout_lock
    description: The lock this module takes; hold it across several tasks.
  - module: gpuops.gpu.gpu_nodes_info
    description: The GPU nodes, their MIG configuration and state, read-only.
options:
  assignments:
    description:
      - Which nodes get which mig-parted config. Give O(assignments[].nodes), a label selector, or both.
      - Select node groups by stable labels (a MachineSet or pool label), never by
        C(nvidia.com/gpu.product), which changes with the MIG and sharing configuration.
    type: list
    elements: dict
    required: true
    suboptions:
      config:
        description: Name of a config in the mig-parted ConfigMap (or of the operator's built-in configs).
        type: str
        required: true
      nodes:
        description: Names of the nodes that get O(assignments[].config).
        type: list
        elements: str
      label_selector:
        description:
          - A Kubernetes label selector, as C(kubectl get nodes -l) takes it, for example
            C(node-role.kubernetes.io/gpu-a100=,pool!=spot) or C(pool notin (spot,preemptible)).
        type: str
      selector:
        description: Labels the nodes must carry (equality), as a dict; combined with O(assignments[].label_selector).
        type: dict
  operator_namespace:
    description: Namespace of the GPU operator (where the mig-parted ConfigMap lives).
    type: str
    default: nvidia-gpu-operator
  cluster_policy:
    description: Name of the ClusterPolicy to read C(mig.strategy) and C(migManager.config) from. Default is the only one.
    type: str
  config_map:
    description:
      - The mig-parted ConfigMap to validate against. Default is the ClusterPolicy's C(migManager.config.name),
        else the operator's built-in configs.
      - The GPU operator's own ConfigMaps (C(default-mig-parted-config), C(default-gpu-clients),
        C(nvidia-<operand>-entrypoint)) and the CA bundles C(kube-root-ca.crt) and C(openshift-service-ca.crt) are
        refused before anything is read or written; leave it unset to use the ClusterPolicy's.
    type: str
  cluster_policy_spec:
    description:
      - The C(spec) of the ClusterPolicy as the caller has read it (RV(gpuops.gpu.cluster_policy_info#module:cluster_policy)),
        so the module does not read the ClusterPolicy again; O(mig_strategy) and O(config_document) still override
        what it says.
      - The gpuops.gpu.mig role reads the ClusterPolicy once per run and hands it to its check-mode plan and to the
        rollout, with the strategy and document it writes as O(mig_strategy) and O(config_document).
    type: dict
  config_document:
    description:
      - The mig-parted document (C(version), C(mig-configs)) to validate against instead of reading O(config_map),
        for example the one a role is about to write (so check mode can plan before the ConfigMap exists).
    type: dict
  mig_strategy:
    description: Overrides the ClusterPolicy C(mig.strategy) used to compute the expected resources.
    type: str
    choices: [none, single, mixed]
  mig_catalog_overrides:
    description: Extra or corrected GPU products for the MIG catalog (new GPUs, driver-renamed profiles).
    type: dict
  drain:
    description: Evict pods using GPU resources before relabelling. Turning this off is only safe on idle nodes.
    type: bool
    default: true
  state_timeout:
    description: Seconds to wait for C(nvidia.com/mig.config.state=success) before the node counts as stuck; 1 to 604800.
    type: int
    default: 600
  reboot_timeout:
    description: Seconds to wait when the MIG manager reports C(rebooting).
    type: int
    default: 1800
  verify:
    description: Check that the node's allocatable GPU resources match the config after C(success).
    type: bool
    default: true
  retry_stuck:
    description: When a node is stuck in C(pending), cycle the label once before failing (NVIDIA/gpu-operator#2833).
    type: bool
    default: false
'''

EXAMPLES = r'''
- name: All A100 nodes of the training pool to 7 x 1g.5gb, two nodes at a time
  gpuops.gpu.mig_rollout:
    assignments:
      - label_selector: pool=training
        config: all-1g.5gb
    max_unavailable: 2

- name: Different profiles per node, 10% of the fleet at a time, PDB waits up to 15 minutes
  gpuops.gpu.mig_rollout:
    assignments:
      - nodes: [gpu-node-1, gpu-node-2]
        config: all-balanced
      - selector:
          pool: inference
        config: custom-3g-2x1g
    max_unavailable: 10%
    drain_timeout: 900

- name: What would change?
  gpuops.gpu.mig_rollout:
    assignments:
      - label_selector: pool=training
        config: all-disabled
  check_mode: true
  register: plan
'''

RETURN = r'''
changed:
  description: Whether any node was (or, in check mode, would be) reconfigured, cordoned or uncordoned.
  returned: always
  type: bool
  sample: true
batches:
  description: Node names per batch, in order; the nodes of a batch change their MIG configuration together.
  returned: always
  type: list
  elements: list
  sample: [["gpu-1", "gpu-2"], ["gpu-3"]]
window:
  description: With O(window=rolling), how many nodes are changed at once (the order is that of RV(batches)).
  returned: when O(window=rolling) and there are nodes to change
  type: int
  sample: 20
plan:
  description: Check mode only - per batch, the nodes with their current and target config, pods to evict and blocking PDBs.
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
          description: The MIG configuration now (C(nvidia.com/mig.config)).
          type: str
        to: &to
          description: The MIG configuration assigned.
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
  sample: [{"batch": 1, "nodes": [{"node": "a100-0", "from": "all-disabled", "to": "all-1g.5gb", "resume": false,
            "pods_to_evict": ["team-a/train-0"], "blocking_pdbs": []}]}]
lock:
  description:
    - Check mode only - the rollout lock (lease C(namespace/gpuops-gpu-rollout)) as read, not taken. C(state) is
      C(free), C(held) (by another run), C(stale) (another run's, expired, so it would be taken over), C(ours) (held by
      O(lock_holder)) or C(unknown) (not readable, with C(error)); with C(holder), C(who), C(purpose), C(nodes),
      C(since), C(renewed), C(expires_in_s).
  returned: check mode
  type: dict
  sample: {"state": "held", "lease": "nvidia-gpu-operator/gpuops-gpu-rollout", "who": "awx@runner pid 41",
           "purpose": "sharing_rollout of 2 node(s)", "nodes": "a100-0,a100-1", "since": "2026-01-05T10:00:00.000000Z"}
nodes:
  description: Per node changed - target, final phase, pods evicted, allocatable after, duration in seconds.
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
      sample: {"nvidia.com/mig-1g.5gb": 56}
    duration_s:
      description: Seconds from its start to its end.
      type: float
    timeline:
      description:
        - UTC times (ISO 8601) of its steps, C(started), C(cordoned), C(drained), C(labelled), C(reported), C(verified),
          C(uncordoned), those it went through.
      type: dict
      sample: {"started": "2026-01-05T10:00:00.120Z", "cordoned": "2026-01-05T10:00:00.150Z",
               "drained": "2026-01-05T10:00:03.020Z", "labelled": "2026-01-05T10:00:03.040Z",
               "reported": "2026-01-05T10:01:08.200Z", "verified": "2026-01-05T10:01:14.280Z",
               "uncordoned": "2026-01-05T10:01:14.310Z"}
  sample: [{"node": "a100-0", "from": "all-disabled", "to": "all-1g.5gb", "phase": "done", "changed": true,
           "evicted": ["team-a/train-0"], "cycled": false, "detail": "success", "allocatable": {"nvidia.com/mig-1g.5gb": 56},
           "duration_s": 74.2, "timeline": {"started": "2026-01-05T10:00:00.120Z", "uncordoned": "2026-01-05T10:01:14.310Z"}}]

assignments:
  description: The resolved node to config map.
  returned: success
  type: dict
  sample: {"a100-0": "all-1g.5gb", "a100-1": "all-1g.5gb"}
mig_strategy:
  description: The MIG strategy the expected resources were computed for.
  returned: success
  type: str
  sample: single
config_map:
  description: The mig-parted ConfigMap validated against (null for the operator's built-in configs).
  returned: success
  type: str
  sample: gpuops-mig-parted-config
untouched:
  description: Nodes not started because the rollout stopped on a failure; their MIG configuration is unchanged.
  returned: failure
  type: list
  elements: str
  sample: ["a100-2", "a100-3"]
api_requests:
  description: Kubernetes API requests made (ClusterPolicy and ConfigMap reads, node reads and writes, evictions, Events).
  returned: success
  type: int
  sample: 38
duration_s:
  description: Wall time of the run in seconds, including the MIG manager's reconfiguration of every node.
  returned: success
  type: float
  sample: 75.3
'''

from ansible_collections.gpuops.gpu.plugins.module_utils.k8s.runner import argument_spec, gpu_module, run_module
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.inputs import rollout_argument_spec
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.mig import run


def main():
    run_module(gpu_module(argument_spec=argument_spec(
        rollout_argument_spec('config', state_timeout=600),
        config_document=dict(type='dict'),
        cluster_policy_spec=dict(type='dict'),
        reboot_timeout=dict(type='int', default=1800),
        retry_stuck=dict(type='bool', default=False),
    )), run)


if __name__ == '__main__':
    main()
