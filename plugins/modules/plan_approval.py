#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
module: plan_approval
short_description: Bind a rollout to its cluster and to the plan a person approved
version_added: 0.1.0
author:
  - gpuops.gpu contributors (@gpuops)
description:
  - Reads which cluster the job reached, its API server URL and the UID of its C(kube-system) namespace (the UID
    does not change while the cluster lives; a URL may point elsewhere after a DNS or load-balancer change).
  - In check mode (the plan job of an AWX workflow) returns RV(approved_plan), what to hand on to the approval and
    to the apply job - the kind, that cluster, the changes and their digest. The rollout roles pass it on as the
    C(gpuops_plan) artifact (C(set_stats)); AWX gives it to the later jobs of the workflow as an extra variable.
  - Otherwise, with O(approved), fails before any write when the job reached another cluster than the approved
    plan's, when the kind differs, or when the changes it is given now differ from the approved ones; the message
    shows both change lists.
  - With O(expected_cluster), fails in both modes when the job reached another cluster than the one named.
  - The changes are O(plan) as given, except that the nodes of a C(batches) list lose C(pods_to_evict) and
    C(blocking_pdbs) - workloads come and go between plan and apply, and the drain deals with them.
  - Reads one namespace; never changes the cluster (C(changed=false)).
extends_documentation_fragment: [kubernetes.core.k8s_auth_options, gpuops.gpu.auth]
attributes:
  check_mode:
    support: full
    details: Returns the plan to approve; compares nothing but O(expected_cluster).
  diff_mode:
    support: none
options:
  kind:
    description: What the plan is of, V(mig), V(sharing) or V(reset) for the collection's rollout roles.
    type: str
    required: true
  plan:
    description:
      - What the run will change, as the role computed it before any write (for example C(batches) - the check-mode
        C(plan) of M(gpuops.gpu.mig_rollout) - and the documents and ClusterPolicy patch it writes).
    type: dict
    default: {}
  approved:
    description:
      - The RV(approved_plan) of the plan job (the C(gpuops_plan) artifact, unchanged). Empty means no approval to
        check (a run outside a workflow).
    type: dict
    default: {}
  expected_cluster:
    description:
      - The cluster the job must reach, C(server) (API server URL) and/or C(uid) (the UID of the C(kube-system)
        namespace, C(kubectl get namespace kube-system -o jsonpath='{.metadata.uid}')). Empty checks nothing.
    type: dict
    default: {}
seealso:
  - module: gpuops.gpu.mig_rollout
  - module: gpuops.gpu.sharing_rollout
'''

EXAMPLES = r'''
- name: Hand the plan on to the approval (check mode), or check the approved one (apply)
  gpuops.gpu.plan_approval:
    kind: mig
    plan:
      batches: "{{ mig_plan.plan }}"
    approved: "{{ gpuops_plan | default({}) }}"
    expected_cluster:
      server: https://api.gpu-cluster.example.com:6443
      uid: 3f1c2a4e-8f0e-4d7b-9c55-0d1f2b3a4c5d
  register: approval

- name: Hand the plan on to the workflow's next jobs
  ansible.builtin.set_stats:
    data:
      gpuops_plan: "{{ approval.approved_plan }}"
  when: ansible_check_mode
'''

RETURN = r'''
cluster:
  description: The cluster the job reached.
  returned: success or a refusal
  type: dict
  contains:
    server:
      description: The API server URL.
      type: str
    uid:
      description: The UID of the C(kube-system) namespace.
      type: str
    name:
      description: The kubeconfig context, else the API server's host.
      type: str
  sample: {"server": "https://api.gpu-cluster.example.com:6443", "uid": "3f1c2a4e-8f0e-4d7b-9c55-0d1f2b3a4c5d",
           "name": "gpu-cluster"}
approved_plan:
  description: The plan to approve - what a plan job hands on.
  returned: success or a refusal
  type: dict
  contains:
    kind:
      description: O(kind).
      type: str
    digest:
      description: sha256 of the kind and the changes as canonical JSON.
      type: str
    cluster:
      description: C(server) and C(uid) of the cluster the plan was computed on.
      type: dict
      sample: {"server": "https://api.gpu-cluster.example.com:6443", "uid": "3f1c2a4e-8f0e-4d7b-9c55-0d1f2b3a4c5d"}
    changes:
      description: O(plan) without what the drain meets (C(pods_to_evict), C(blocking_pdbs)).
      type: dict
      sample: {"batches": [{"batch": 1, "nodes": [{"node": "a100-0", "from": "all-disabled", "to": "all-1g.5gb",
                                                   "resume": false}]}]}
  sample: {"kind": "mig", "digest": "51d11a824902282e76c9852d0b9454e91f1176f0e6cd298f3450474ac57fd2ce",
           "cluster": {"server": "https://api.gpu-cluster.example.com:6443", "uid": "3f1c2a4e-8f0e-4d7b-9c55-0d1f2b3a4c5d"},
           "changes": {"batches": [{"batch": 1, "nodes": [{"node": "a100-0", "from": "all-disabled",
                                                          "to": "all-1g.5gb", "resume": false}]}]}}
approved:
  description: O(approved) as given, beside RV(approved_plan) (what the run would do now).
  returned: a refusal
  type: dict
  sample: {"kind": "mig", "digest": "c4d3fd577b47046c7c4d915bef2b8d063a40c4ad7b00ce5e120f233cf1431dfb",
           "cluster": {"server": "https://api.gpu-cluster.example.com:6443", "uid": "3f1c2a4e-8f0e-4d7b-9c55-0d1f2b3a4c5d"},
           "changes": {"batches": [{"batch": 1, "nodes": [{"node": "a100-0", "from": "all-disabled",
                                                          "to": "all-3g.20gb", "resume": false}]}]}}
'''

from ansible_collections.gpuops.gpu.plugins.module_utils.k8s.runner import argument_spec, gpu_module, run_module
from ansible_collections.gpuops.gpu.plugins.module_utils.ops.approval import run


def main():
    run_module(gpu_module(argument_spec=argument_spec(
        kind=dict(type='str', required=True),
        plan=dict(type='dict', default={}),
        approved=dict(type='dict', default={}),
        expected_cluster=dict(type='dict', default={}),
    )), run)


if __name__ == '__main__':
    main()
