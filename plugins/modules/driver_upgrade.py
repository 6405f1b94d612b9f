#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
module: driver_upgrade
short_description: Upgrade the GPU driver through the GPU operator's upgrade controller, planned and followed
version_added: 0.1.0
author:
  - gpuops.gpu contributors (@gpuops)
description:
  - Plans a driver upgrade of the nodes the GPU operator runs its driver on - the nodes whose driver pod runs another
    image than the one the operator renders for O(version), in batches of the parallelism the upgrade policy gives
    (C(maxParallelUpgrades), C(maxUnavailable) less the nodes unavailable already), the GPU pods the operator deletes
    on each node and what would stop it (PodDisruptionBudgets, pods without a controller, emptyDir data).
  - Then sets the target (C(driver.version), and C(repository) / C(image) where given) and the typed upgrade policy
    on the ClusterPolicy, with C(autoUpgrade) on, and follows every node through the operator's states (label
    C(nvidia.com/gpu-driver-upgrade-state)) until C(upgrade-done) with its driver pod running the new image, printing
    each state as it comes and a status line, and returning a per-node timeline.
  - A node in C(upgrade-failed), or in one state longer than O(state_timeout), stops the run with the node, its state,
    the operator's reason (its C(GPUDriverUpgrade) Events) and the driver pod's status. With O(on_failure=pause) the
    operator's upgrades are switched off there (C(autoUpgrade) false, the documented switch), the nodes the operator
    had cordoned marked first (C(gpuops.gpu/driver-upgrade-paused), an annotation and a label).
  - A re-run resumes - it switches the upgrades on again, retries nodes left C(upgrade-failed) the way NVIDIA documents
    (their GPU pods evicted, PodDisruptionBudgets honoured, then their driver pod restarted; O(retry_failed)), and
    uncordons at the end the nodes the operator had cordoned before a pause (removing the mark's label with it; a node
    label change wakes the operator's upgrade controller, which then gives the next node the slot at once rather than
    at its 2-minute requeue). At the target it changes nothing.
  - Drivers deployed per pool by C(NVIDIADriver) objects (ClusterPolicy C(driver.useNvidiaDriverCRD)) are upgraded one
    pool at a time - O(driver_pool) names the C(NVIDIADriver); the target goes to its C(spec) and the upgrade policy to the
    ClusterPolicy (the operator's upgrade controller reads it there for every pool, and counts C(maxUnavailable) against
    every node it manages); only that pool's nodes are planned and followed. Run it once per pool, in the order wanted.
  - Every input is checked, and everything read, before the first write. The rollout lock (Lease
    C(gpuops-gpu-rollout)) is held while it writes and follows, so no MIG or sharing rollout runs meanwhile.
extends_documentation_fragment: [kubernetes.core.k8s_auth_options, gpuops.gpu.auth]
attributes:
  check_mode:
    support: full
    details: Returns the plan (RV(plan), RV(plan_lines)) and the rollout lock as read; writes nothing.
  diff_mode:
    support: full
    details: The ClusterPolicy's driver target and upgrade policy before and after (with O(driver_pool), the upgrade
      policy and the NVIDIADriver's target).
options:
  version:
    description:
      - The driver version to upgrade to, the tag of the driver image without the OS suffix the operator appends
        (for example V(580.105.08)), or a C(sha256:) digest.
    type: str
    required: true
  repository:
    description: Registry path of the driver image; default the ClusterPolicy's, else that of the running driver.
    type: str
  image:
    description: Name of the driver image; default the ClusterPolicy's, else that of the running driver.
    type: str
  cluster_policy:
    description: The ClusterPolicy; default the only one.
    type: str
  driver_pool:
    description:
      - The C(NVIDIADriver) to upgrade when the ClusterPolicy deploys the driver from NVIDIADriver objects
        (C(driver.useNvidiaDriverCRD)); required then, refused otherwise. O(repository) and O(image) default to its own.
    type: str
  policy:
    description:
      - The upgrade policy (ClusterPolicy C(driver.upgradePolicy)) in snake_case, as the upgrade role's
        C(upgrade_driver_upgrade_policy) - C(max_parallel_upgrades) (1 to the number of driver nodes),
        C(max_unavailable) (a count or a percentage, at least one node), C(drain), C(pod_deletion),
        C(wait_for_completion). Options left out keep the ClusterPolicy's values. C(auto_upgrade) is turned on.
    type: dict
    default: {}
  state_timeout:
    description:
      - Seconds a node may stay in one of the operator's working states (or the whole upgrade may make no progress)
        before the run stops on it as stuck.
    type: int
    default: 900
  on_failure:
    description: What happens to the operator's upgrades when a node fails or is stuck - V(stop) leaves them on,
      V(pause) sets C(autoUpgrade) false.
    type: str
    choices: [stop, pause]
    default: stop
  retry_failed:
    description: Retry the nodes in C(upgrade-failed) when the run starts (their GPU pods evicted, then their driver
      pod deleted), as NVIDIA documents; false stops the run on them.
    type: bool
    default: true
  drain_timeout:
    description: Seconds to wait for the GPU pods of a node retried to leave (PodDisruptionBudgets honoured).
    type: int
    default: 300
  grace_period:
    description: Grace period in seconds for the pods evicted on a retry (default theirs).
    type: int
  poll_interval:
    description: Seconds between two looks at the nodes while following.
    type: float
    default: 2.0
  operator_namespace:
    description: The GPU operator's namespace when the ClusterPolicy does not report one (status.namespace).
    type: str
    default: nvidia-gpu-operator
  lock_timeout:
    description: Seconds to wait for the rollout lock when another run holds it; 0 fails at once, naming the holder.
    type: int
    default: 0
  lock_duration:
    description: Seconds the rollout lock stays valid without renewal (renewed while the run follows).
    type: int
    default: 120
  lock_holder:
    description: Run under a lock a role took with M(gpuops.gpu.rollout_lock) (its holder).
    type: str
  lock_namespace:
    description: Namespace of the rollout lock's Lease; default the GPU operator's.
    type: str
  progress_file:
    description: Set by the module's action plugin, which prints the progress from it.
    type: path
  progress_timeout:
    description: Stop following (the lock released; the operator carries on) when the action plugin has not read
      the progress for this many seconds; 0 never.
    type: int
    default: 60
notes:
  - Needs the install account's rights - the ClusterPolicy patch, nodes read and patch (the pause mark, the uncordon
    after a pause), pods list, evict and delete (a retry), PodDisruptionBudgets and Events read, the Lease.
  - The operator picks which nodes go first itself; the batches of the plan are by node name with the sizes the policy
    gives.
  - With O(driver_pool), the driver DaemonSets of the operator's namespace and the NVIDIADrivers are read too, and the
    NVIDIADriver is patched (C(spec.version), C(repository), C(image)).
seealso:
  - module: gpuops.gpu.cluster_policy
  - module: gpuops.gpu.rollout_lock
'''

EXAMPLES = r'''
- name: Plan the driver upgrade (nodes, batches, GPU pods deleted, what would block)
  gpuops.gpu.driver_upgrade:
    version: 580.105.08
    policy: {max_parallel_upgrades: 1, max_unavailable: 1}
  check_mode: true

- name: Upgrade the driver and follow every node to upgrade-done, pausing the operator on a failure
  gpuops.gpu.driver_upgrade:
    version: 580.105.08
    policy:
      max_parallel_upgrades: 2
      max_unavailable: 25%
      pod_deletion: {timeout_seconds: 300}
      drain: {enable: true, timeout_seconds: 600}
    on_failure: pause
  register: driver_upgrade

# One task per pool: a loop would go on to the next pool after a failure (the upgrade role's
# upgrade_driver_pools stops at the first pool that fails)
- name: Upgrade the driver of the NVIDIADriver pool inference
  gpuops.gpu.driver_upgrade:
    driver_pool: inference
    version: 580.105.08
'''

RETURN = r'''
driver_pool:
  description: The NVIDIADriver upgraded (O(driver_pool)); null for the ClusterPolicy's driver.
  returned: always
  type: str
  sample: inference
target_image:
  description: The image(s) the operator renders for the target.
  returned: always
  type: list
  elements: str
  sample: [nvcr.io/nvidia/driver:580.105.08-rhcos4.18]
policy:
  description: The upgrade policy the operator acts on (CRD field names).
  returned: always
  type: dict
  sample: {"autoUpgrade": true, "maxParallelUpgrades": 1, "maxUnavailable": "25%",
           "podDeletion": {"force": false, "timeoutSeconds": 300, "deleteEmptyDir": false}}
batch_size:
  description: Nodes the operator starts at once.
  returned: always
  type: int
  sample: 1
upgrade:
  description: The nodes whose driver changes (or whose upgrade the run resumes).
  returned: always
  type: list
  elements: str
  sample: [t4-0, t4-1]
plan:
  description:
    - The batches, C(batch) and C(nodes) - C(node), C(from), C(to) (driver versions), C(state), C(resume),
      C(pods_to_evict), C(blocking_pdbs), C(blockers) (per pod, why the operator could not delete it) and
      C(fallback_drain) (the pods its drain would evict then, with C(drain.enable)).
  returned: always
  type: list
  elements: dict
  sample: [{"batch": 1, "nodes": [{"node": "t4-0", "from": "580.95.05", "to": "580.105.08", "state": "upgrade-done",
            "resume": false, "pods_to_evict": ["team-a/train-0"], "blocking_pdbs": ["team-a/train"],
            "blockers": {"team-a/train-0": ["PodDisruptionBudget team-a/train allows no disruption"]},
            "fallback_drain": []}]}]
plan_lines:
  description: The plan in words.
  returned: always
  type: list
  elements: str
  sample: ["batch 1: t4-0 580.95.05 -> 580.105.08", "  t4-0: the operator deletes GPU pod(s) team-a/train-0"]
skipped_nodes:
  description: Nodes labelled C(nvidia.com/gpu-driver-upgrade.skip=true), which the operator leaves as they are.
  returned: always
  type: list
  elements: str
  sample: []
lock:
  description: Check mode - the rollout lock as read (see M(gpuops.gpu.mig_rollout)).
  returned: check mode
  type: dict
  sample: {"state": "free", "lease": "nvidia-gpu-operator/gpuops-gpu-rollout"}
nodes:
  description:
    - Per node followed - C(from), C(to), C(phase) (C(done), C(failed) when held, C(gone)), C(state) (the operator's
      last), C(evicted) (its GPU pods gone during the run), C(retried), C(duration_s), C(states) (each state
      entered with its UTC time), C(timeline) (C(started), C(cordoned), C(drained) - GPU pods deleted,
      C(reported) - new driver ready, C(verified) - validated, C(uncordoned) - upgrade-done), C(reason) when held,
      C(driver_pod).
  returned: always
  type: list
  elements: dict
  sample: [{"node": "t4-0", "from": "580.95.05", "to": "580.105.08", "phase": "done", "state": "upgrade-done",
            "evicted": ["team-a/train-0"], "retried": false, "duration_s": 41.2,
            "states": [["cordon-required", "2026-01-05T10:00:01.000Z"], ["upgrade-done", "2026-01-05T10:00:42.120Z"]],
            "timeline": {"started": "2026-01-05T10:00:01.000Z", "uncordoned": "2026-01-05T10:00:42.120Z"},
            "reason": null, "driver_pod": "nvidia-driver-daemonset-x2k4p Running, ready, 0 restart(s), image ..."}]
untouched:
  description: Nodes the operator had not started when the run stopped.
  returned: always
  type: list
  elements: str
  sample: [t4-1]
paused:
  description: Whether the run paused the operator's upgrades (on a failure with O(on_failure=pause)).
  returned: failure
  type: bool
  sample: true
'''

from ansible_collections.gpuops.gpu.plugins.module_utils.k8s.runner import argument_spec, gpu_module, run_module
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.driver_upgrade import run
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.inputs import lock_argument_spec


def main():
    run_module(gpu_module(argument_spec=argument_spec(
        version=dict(type='str', required=True),
        repository=dict(type='str'),
        image=dict(type='str'),
        cluster_policy=dict(type='str'),
        driver_pool=dict(type='str'),
        policy=dict(type='dict', default={}),
        state_timeout=dict(type='int', default=900),
        on_failure=dict(type='str', choices=['stop', 'pause'], default='stop'),
        retry_failed=dict(type='bool', default=True),
        drain_timeout=dict(type='int', default=300),
        grace_period=dict(type='int'),
        poll_interval=dict(type='float', default=2.0),
        operator_namespace=dict(type='str', default='nvidia-gpu-operator'),
        **lock_argument_spec(progress=True)
    )), run)


if __name__ == '__main__':
    main()
