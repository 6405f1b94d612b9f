# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


class ModuleDocFragment(object):
    """Options of the node rollout engine (plugins/module_utils/rollout/engine.py), shared by every
    module that drives it (mig_rollout, sharing_rollout); the argument spec is
    rollout.engine.rollout_argument_spec(), which also has the options each module documents in its
    own words (assignments, operator_namespace, cluster_policy, config_map, mig_strategy,
    mig_catalog_overrides, drain, verify)."""

    DOCUMENTATION = r'''
options:
  max_unavailable:
    description:
      - Nodes changed at once, as a count or a percentage of the assigned nodes (rounded up, at least 1).
        Nodes already cordoned count against it.
    type: raw
    default: 1
  pod_selector:
    description: Labels of extra pods (not using GPUs) to evict as well.
    type: dict
  force:
    description: Delete pods whose eviction a PodDisruptionBudget still blocks after O(drain_timeout).
    type: bool
    default: false
  grace_period:
    description: Termination grace period for evicted pods, seconds. Default is the pod's own.
    type: int
  drain_timeout:
    description: Seconds to wait for GPU pods to leave a node (PDB blocks are retried until then).
    type: int
    default: 300
  verify_timeout:
    description: Seconds to wait for the device plugin to advertise the expected resources.
    type: int
    default: 180
  api_timeout:
    description:
      - Seconds the Kubernetes API may be unavailable (restart, overload) before the rollout stops. Progress is
        kept on the nodes, so the next run resumes.
    type: int
    default: 300
  poll_interval:
    description:
      - Seconds between reads of the nodes of a batch. A watch on the nodes wakes the rollout as soon as one of them
        changes, so a state reached is acted on at once; the polling checks timeouts and drains, and carries on
        alone when the watch is not available.
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
