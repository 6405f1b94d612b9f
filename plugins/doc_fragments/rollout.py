# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


class ModuleDocFragment(object):
    """Options of the node rollout engine (plugins/module_utils/rollout/engine.py), shared by every
    module that drives it (mig_rollout, sharing_rollout, dra_cutover); the argument spec is
    rollout.inputs.rollout_argument_spec(), which also has the options each module documents in its
    own words (assignments, operator_namespace, cluster_policy, config_map, mig_strategy,
    mig_catalog_overrides, drain, state_timeout with the module's default, verify)."""

    DOCUMENTATION = r'''
options:
  max_unavailable:
    description:
      - Nodes changed at once, as a count or a percentage of the assigned nodes (rounded up, at least 1).
        Nodes already cordoned count against it.
    type: raw
    default: 1
  window:
    description:
      - How nodes are started. V(batch) changes O(max_unavailable) nodes, waits for the slowest of them, then starts
        the next batch.
      - V(rolling) starts the next node as soon as one finishes, so the slowest node of a group no longer holds up
        the others; never more than O(max_unavailable) nodes are changed at once, in the same order. The drain,
        PodDisruptionBudget, verification and resume rules are those of V(batch); when a node fails, no further
        node is started, the nodes already started are finished, and the rollout stops.
      - RV(batches) is the same plan in both modes (the order nodes start in, grouped by O(max_unavailable));
        RV(window) is the number of nodes changed at once in V(rolling) mode.
    type: str
    choices: [batch, rolling]
    default: batch
  pod_selector:
    description: Labels of extra pods (not using GPUs) to evict as well.
    type: dict
  force:
    description: Delete pods whose eviction a PodDisruptionBudget still blocks after O(drain_timeout).
    type: bool
    default: false
  grace_period:
    description: Termination grace period for evicted pods, seconds (0 to 604800). Default is the pod's own.
    type: int
  drain_timeout:
    description: Seconds to wait for GPU pods to leave a node (PDB blocks are retried until then); 0 to 604800.
    type: int
    default: 300
  verify_timeout:
    description: Seconds to wait for the device plugin to advertise the expected resources; 1 to 604800.
    type: int
    default: 180
  api_timeout:
    description:
      - Seconds the Kubernetes API may be unavailable (restart, overload, an apiserver that accepts connections but
        does not answer) before the rollout stops. Progress is kept on the nodes, so the next run resumes; the nodes
        the run holds get the reason annotation when the API takes it.
      - Each request also has a client-side timeout of a quarter of this (2 to 30 seconds), so the module ends
        about O(api_timeout) plus one request timeout after the API stopped answering.
      - Time spent waiting for the API is not charged to O(state_timeout), O(verify_timeout) or O(drain_timeout).
      - 1 to 604800 (a week), like every timeout of the rollout; a value outside is refused before anything is read.
    type: int
    default: 300
  poll_interval:
    description:
      - Seconds between checks of the nodes of a batch (timeouts, drains). A watch on the nodes wakes the rollout as
        soon as one of them changes and delivers it, so a state reached is acted on at once without reading the node
        again; each check reads one node with a GET to prove the API answers, and every node is read with a GET
        while the API is slow or away or the watch is not available.
      - 0.1 to 300; a value outside (0 would poll without pause) is refused before anything is read.
    type: float
    default: 1.0
  allow_vgpu_nodes:
    description:
      - Change assigned nodes that carry an NVIDIA vGPU label (C(nvidia.com/vgpu.present=true) on a vGPU guest,
        C(nvidia.com/gpu.workload.config=vm-vgpu) on a vGPU host). By default such nodes are refused before anything
        is written, with the nodes and the label named; a vGPU is one GPU per VM that cannot be split further.
      - Nodes already at their target are never refused.
    type: bool
    default: false
'''

    # The rollout lock and the progress file alone, for a module that takes the lock without the engine's options
    # (gpuops.gpu.rollout.lock).
    LOCK = r'''
options:
  lock_timeout:
    description:
      - Seconds to wait for the rollout lock when another run holds it. The lock is the Lease C(gpuops-gpu-rollout)
        in the GPU operator's namespace as the operator reports it (ClusterPolicy C(status.namespace); without one,
        O(operator_namespace)); a rollout takes it only when it has nodes to change (check mode reports it as
        RV(lock) without taking it) and releases it at the end, also on failure.
      - C(0) fails at once, naming who holds the lock, for what, on which nodes and since when; nothing is written.
    type: int
    default: 0
  lock_duration:
    description:
      - Seconds the rollout lock's lease stays valid without renewal; the rollout renews it every quarter of that
        while it runs. A killed run's lease is taken over by the next run after this time, with a warning.
        At least 10.
      - Every node patch, eviction and pod deletion is fenced - when the last renewal is older than a third of
        this, the lease is renewed first, and once another run took it over (this run was frozen or cut off from
        the API past its lease) the rollout stops before that write, failing with "no longer held by this run";
        its nodes keep their resume annotations.
    type: int
    default: 120
  lock_holder:
    description:
      - Run under a lock a role already took with M(gpuops.gpu.rollout_lock) (the holder it returned). The rollout
        checks that this holder holds it, renews it while it runs, and neither takes nor releases it.
        It fails at once when the holder does not hold the lock.
    type: str
  lock_namespace:
    description:
      - Namespace of the rollout lock's lease, whatever the ClusterPolicy says (see O(lock_timeout)). Every run that
        must be kept apart from this one has to use the same; the roles pass on the namespace of the lock they took.
    type: str
  progress_file:
    description:
      - A file the module rewrites while it runs, with the batch it is in, each node's phase and the rollout's
        messages (JSON). The module's action plugin sets it and prints the progress from it; there is no need to
        set it yourself.
    type: path
  progress_timeout:
    description:
      - With O(progress_file), the action plugin touches a file next to it each time it reads the progress (every
        few seconds). When that has not happened for this many seconds (the playbook was killed, the controller
        was lost), the module stops the rollout the way an interrupted run stops - the rollout lock is released,
        the nodes keep their C(gpuops.gpu/) annotations and the next run resumes them - rather than going on with
        nobody watching.
      - Set it to V(0) to let the rollout finish on its own.
    type: int
    default: 60
'''
