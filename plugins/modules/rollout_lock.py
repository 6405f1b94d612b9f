#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
module: rollout_lock
short_description: Take or release the cluster's GPU rollout lock (a coordination.k8s.io Lease)
version_added: 0.1.0
author:
  - gpuops.gpu contributors (@gpuops)
description:
  - The rollout lock keeps disruptive GPU operations apart on one cluster; it is the Lease
    C(gpuops-gpu-rollout) in the GPU operator's namespace as the operator itself reports it (ClusterPolicy
    C(status.namespace)); O(lock_namespace) overrides it, and O(operator_namespace) is used only while no
    ClusterPolicy reports one. So runs given different O(operator_namespace) values still share one lock.
    M(gpuops.gpu.mig_rollout)
    and M(gpuops.gpu.sharing_rollout) take it by themselves for the time they change nodes; this module is for
    roles whose disruptive work is several tasks (the C(reset) role, the HAMi removal of the C(hami) role). They
    take it at the start, pass its RV(holder) as C(lock_holder) to the rollout modules they call (which then run
    under it, renewing it, and neither take nor release it), and release it in an C(always) section.
  - With O(state=present) and a lock held by another run, the module waits up to O(lock_timeout) seconds, then
    fails naming who holds it, for what, on which nodes and since when. A lease not renewed for its duration
    (a killed run) is taken over, with a warning naming the run that left it. So is a lease whose C(renewTime) or
    C(acquireTime) lies more than 15 seconds ahead of the clock of the host running the module (a clock gone wrong,
    or a Lease written by hand), with a warning naming the holder and that time; a C(leaseDurationSeconds) over
    604800 (one week) counts as one week.
  - With O(state=present) and a O(holder), the module renews the lease of that holder (not a change) - the proof a
    role needs right before writes of its own (a ConfigMap, the ClusterPolicy, node labels). It fails, writing
    nothing, when that holder no longer holds the lease (it expired and another run took it over, or it was
    released); it never takes the lock anew under an old holder.
  - With O(state=absent), the lease is deleted if O(holder) still holds it (a resourceVersion precondition makes
    sure it is not another run's); a lease held by another run is left alone with a warning.
  - The module's process ends with the task, so nothing renews the lease between tasks; O(lock_duration) must
    cover the longest stretch of the role's tasks outside the rollout modules.
extends_documentation_fragment: [kubernetes.core.k8s_auth_options, gpuops.gpu.auth]
attributes:
  check_mode:
    support: full
    details: Reads the lease and reports what would happen; a lock held by another run is a warning, not a failure.
  diff_mode:
    support: full
    details: The lock's state, holder, purpose and nodes before and after.
seealso:
  - module: gpuops.gpu.mig_rollout
    description: Takes the lock itself, or joins one held with O(gpuops.gpu.mig_rollout#module:lock_holder).
  - module: gpuops.gpu.sharing_rollout
    description: Takes the lock itself, or joins one held with O(gpuops.gpu.sharing_rollout#module:lock_holder).
options:
  state:
    description: C(present) takes (or renews) the lock for O(holder); C(absent) releases it.
    type: str
    choices: [present, absent]
    default: present
  holder:
    description:
      - The holder identity RV(holder) of a lock taken before. With O(state=present) it is renewed (and must still
        hold the lock); with none given, the lock is taken under a new one unique to this run (host, process id,
        random suffix), returned as RV(holder). Required with O(state=absent).
    type: str
  purpose:
    description: What the lock is taken for, shown to runs that find it held (annotation C(gpuops.gpu/lock-purpose)).
    type: str
    default: a gpuops.gpu role
  nodes:
    description:
      - The nodes the work touches, shown to runs that find the lock held (annotation C(gpuops.gpu/lock-nodes)).
    type: list
    elements: str
    default: []
  lock_timeout:
    description: Seconds to wait for a lock held by another run; C(0) fails at once.
    type: int
    default: 0
  lock_duration:
    description:
      - Seconds the lease stays valid without renewal (C(leaseDurationSeconds)); after that, another run may take it
        over. At least 10, at most 604800 (one week).
    type: int
    default: 120
  poll_interval:
    description: Seconds between reads of the lease while waiting for it.
    type: float
    default: 2.0
  operator_namespace:
    description:
      - Namespace of the lease while no ClusterPolicy reports the GPU operator's namespace (C(status.namespace),
        written by the operator once it runs). With one, that namespace is used and this option is ignored.
    type: str
    default: nvidia-gpu-operator
  lock_namespace:
    description:
      - Namespace of the lease, whatever the ClusterPolicy says. Every run that must be kept apart from this one has
        to name the same namespace; the roles pass on the RV(namespace) of the lock they took.
    type: str
requirements:
  - kubernetes >= 29.0.0
  - RBAC on leases.coordination.k8s.io in that namespace, create, and get, update, delete for the name
    gpuops-gpu-rollout (the shipped ClusterRole gpuops-gpu-rollout has them), and list on
    clusterpolicies.nvidia.com (where the lock lives) unless O(lock_namespace) is set
'''

EXAMPLES = r'''
- name: Take the rollout lock for the whole reset
  gpuops.gpu.rollout_lock:
    purpose: reset of 3 nodes
    nodes: [a100-0, a100-1, h100-0]
    lock_timeout: 600
    lock_duration: 900
  register: lock

- name: The reset's disruptive tasks
  block:
    - name: Roll the MIG nodes back under the same lock
      gpuops.gpu.mig_rollout:
        assignments:
          - nodes: [a100-0, a100-1]
            config: all-disabled
        lock_holder: "{{ lock.holder }}"
  always:
    - name: Release the rollout lock
      gpuops.gpu.rollout_lock:
        state: absent
        holder: "{{ lock.holder }}"
'''

RETURN = r'''
holder:
  description: The holder identity of this lock (pass it as C(lock_holder) and to O(state=absent)).
  returned: always
  type: str
  sample: runner-7f9c-1234-5e0d2a1b
lease:
  description: The lease, C(namespace/name).
  returned: always
  type: str
  sample: nvidia-gpu-operator/gpuops-gpu-rollout
namespace:
  description: The namespace of the lease (pass it as C(lock_namespace) to the tasks that join or release this lock).
  returned: always
  type: str
  sample: nvidia-gpu-operator
lock:
  description: The lock after the task (in check mode, what it would be).
  returned: always
  type: dict
  contains:
    state:
      description: C(free), C(ours) (held by O(holder)), C(held) (by another run) or C(stale) (another run's, expired).
      type: str
      sample: ours
    holder:
      description: The holder identity.
      type: str
    who:
      description: C(user@host pid N) of the holder.
      type: str
    purpose:
      description: What the holder took it for.
      type: str
    nodes:
      description: The nodes the holder works on (comma list, cut when long).
      type: str
    since:
      description: When the holder took it (C(acquireTime)).
      type: str
    renewed:
      description: When it was last renewed (C(renewTime)).
      type: str
    expires_in_s:
      description: Seconds until it expires unless renewed.
      type: float
    future:
      description:
        - With C(stale) only, when the lease counts as expired because a time of it lies in the future beyond the
          15 seconds of clock difference tolerated, the field and its time (C(renewTime 2027-01-01T00:00:00.000000Z)).
      type: str
  sample: {"state": "ours", "holder": "runner-7f9c-1234-5e0d2a1b", "purpose": "reset of 3 nodes"}
'''

from ansible_collections.gpuops.gpu.plugins.module_utils.k8s.runner import argument_spec, gpu_module, run_module
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.lock import run


def main():
    run_module(gpu_module(argument_spec=argument_spec(
        state=dict(type='str', choices=['present', 'absent'], default='present'),
        holder=dict(type='str'),
        purpose=dict(type='str', default='a gpuops.gpu role'),
        nodes=dict(type='list', elements='str', default=[]),
        lock_timeout=dict(type='int', default=0),
        lock_duration=dict(type='int', default=120),
        poll_interval=dict(type='float', default=2.0),
        operator_namespace=dict(type='str', default='nvidia-gpu-operator'),
        lock_namespace=dict(type='str'),
    )), run)


if __name__ == '__main__':
    main()
