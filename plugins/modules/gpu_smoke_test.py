#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
module: gpu_smoke_test
short_description: Run a short workload on every GPU resource a Kubernetes or OpenShift cluster advertises
version_added: 0.1.0
author:
  - gpuops.gpu contributors (@gpuops)
description:
  - Takes the GPU nodes read by M(gpuops.gpu.gpu_nodes_info) and, for every GPU resource they advertise
    (C(nvidia.com/gpu), C(nvidia.com/gpu.shared), each C(nvidia.com/mig-<profile>)), grouped per GPU product
    label by default (so full, time-sliced and MIG devices of a model are separate cases), runs one Job whose pod
    requests one unit of it, pinned to that product (or node) by node affinity.
  - Waits for all the Jobs together (two list calls per poll), reads the tail of each pod log (optionally checking
    for an expected text such as V(Test PASSED)), deletes the Jobs and waits until their pods are gone, and returns
    one row per case plus a text table.
  - A resource with no schedulable capacity (0 allocatable, nodes cordoned or not Ready, every unit requested by
    pods) is reported with the reason, never left out. A resource named in O(resources) that no node advertises is
    reported as V(not-advertised).
  - The module leaves the cluster as it found it (with O(cleanup=true) the Jobs it created are gone when it
    returns), so it reports C(changed=false).
extends_documentation_fragment: [kubernetes.core.k8s_auth_options, gpuops.gpu.auth]
attributes:
  check_mode:
    support: full
    details: Returns the cases it would run (status V(planned)) and creates nothing.
  diff_mode:
    support: none
options:
  nodes:
    description:
      - The RV(gpuops.gpu.gpu_nodes_info#module:nodes) list of M(gpuops.gpu.gpu_nodes_info) (read with
        O(gpuops.gpu.gpu_nodes_info#module:include_pods=true) so free units are known).
    type: list
    elements: dict
    required: true
  namespace:
    description: Namespace of the Jobs; it must exist.
    type: str
    default: gpuops-smoke-test
  image:
    description:
      - Container image of the workload. Point it at a mirror in disconnected clusters.
      - The default is the CUDA vector-add sample NVIDIA's GPU operator uses in its own tests; it prints
        V(Test PASSED).
    type: str
    default: nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0-ubuntu22.04
  image_pull_policy:
    description: Image pull policy of the workload container.
    type: str
    choices: [Always, IfNotPresent, Never]
    default: IfNotPresent
  image_pull_secrets:
    description: Names of Secrets in O(namespace) used to pull O(image).
    type: list
    elements: str
    default: []
  command:
    description: Command of the container; empty keeps the image entrypoint.
    type: list
    elements: str
    default: []
  args:
    description: Arguments of the container.
    type: list
    elements: str
    default: []
  resources:
    description: Only these resource names (for example V(nvidia.com/mig-1g.5gb)); empty means every GPU resource.
    type: list
    elements: str
    default: []
  exclude_resources:
    description: Resource names never tested.
    type: list
    elements: str
    default: []
  group_by:
    description:
      - V(product) one case per resource and C(nvidia.com/gpu.product) label; V(resource) one case per resource
        name; V(node) one case per resource and node (every node is exercised).
    type: str
    choices: [product, resource, node]
    default: product
  tolerations:
    description: Tolerations of the workload pods (tainted GPU nodes).
    type: list
    elements: dict
    default: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
  node_selector:
    description: Extra node selector of the workload pods.
    type: dict
    default: {}
  security_context:
    description:
      - Container security context. The default (no privilege escalation, all capabilities dropped, RuntimeDefault
        seccomp) is accepted by the OpenShift C(restricted-v2) SCC, which also assigns a non-root UID, and by the
        C(baseline) pod security standard. Add C(runAsNonRoot)/C(runAsUser) for the C(restricted) standard when the
        image can run as a non-root user.
    type: dict
  wait_for:
    description:
      - V(completion) a case passes when its Job completes; V(running) when its pod runs (long-running images).
    type: str
    choices: [completion, running]
    default: completion
  timeout:
    description: Seconds to wait for all the Jobs; cases not finished by then are reported as V(timeout).
    type: int
    default: 300
  stuck_timeout:
    description:
      - Seconds after which a pod that is unschedulable, or waiting on an image pull or container config error,
        ends its case instead of waiting for O(timeout).
    type: int
    default: 60
  poll_interval:
    description: Seconds between two polls.
    type: float
    default: 2.0
  expect_output:
    description:
      - Text the pod log must contain for the case to pass, for example V(Test PASSED). Where the log cannot be
        read (virtual nodes without a kubelet log endpoint) the case passes on completion and says so.
    type: str
    default: ''
  log_lines:
    description: Lines of each pod log returned.
    type: int
    default: 20
  cleanup:
    description: Delete the Jobs (and wait for their pods to go) before returning.
    type: bool
    default: true
  fill:
    description:
      - Also run the fill test of every time-sliced or MPS-shared resource (C(nvidia.com/gpu) or
        C(nvidia.com/gpu.shared) on a node whose C(nvidia.com/gpu.sharing-strategy) is V(time-slicing) or V(mps)),
        per node and before the Jobs. With N free units (the advertised replicas, less what other pods request),
        it starts N + O(fill_extra) bare pods requesting 1 unit each, pinned to the node, and passes when the
        scheduler binds exactly N and leaves exactly O(fill_extra) Pending as Unschedulable. The pods are deleted
        before the module goes on.
      - MPS clients need no C(hostIPC) and no volume of their own. Each pod requests 1 unit in C(limits) and the
        device plugin passes the MPS pipe directory and shared memory to the container. Each case reports the sharing mode.
    type: bool
    default: false
  fill_extra:
    description: Pods started beyond the free units of a shared resource (1 to 16), which must stay Pending.
    type: int
    default: 1
  fill_command:
    description:
      - Command of the fill pods (O(image)). It must keep running while the test settles; a pod that ends frees
        its unit and fails the case.
    type: list
    elements: str
    default: [sleep, '3600']
  load:
    description:
      - Optional load Jobs, run after the smoke Jobs, one Job per node advertising one of O(load.resources),
        C(backoffLimit=0), pinned to the node, each pod requesting 1 unit. A node passes when its Job completes.
      - V({duration}) in O(load.command) and O(load.args) is replaced by O(load.duration).
    type: dict
    suboptions:
      image:
        description: Image of the load, for example gpu-burn or dcgmproftester (from your mirror if air-gapped).
        type: str
        required: true
      command:
        description: Command; empty keeps the image entrypoint.
        type: list
        elements: str
        default: []
      args:
        description: Arguments, for example V(["{duration}"]) for gpu-burn.
        type: list
        elements: str
        default: []
      duration:
        description: Seconds the load runs; the Jobs are awaited for this plus O(timeout).
        type: int
        default: 60
      resources:
        description: Resources loaded, one Job per node advertising each.
        type: list
        elements: str
        default: [nvidia.com/gpu]
  fail_on_error:
    description: Fail when a case (of the smoke test, the fill test or the load) failed, stayed unschedulable, timed out or could not be created.
    type: bool
    default: true
  fail_on_no_capacity:
    description: Also fail when a resource has no schedulable capacity or is not advertised.
    type: bool
    default: false
notes:
  - Needs RBAC to create, list and delete C(jobs), list C(pods) and get C(pods/log) in O(namespace); with
    O(fill) also create and delete C(pods).
  - On virtual (KWOK) nodes the pods of Jobs complete at once and no log can be read.
seealso:
  - module: gpuops.gpu.gpu_nodes_info
'''

EXAMPLES = r'''
- name: Read the GPU nodes
  gpuops.gpu.gpu_nodes_info:
  register: fleet

- name: Run the CUDA vector-add sample on every GPU resource
  gpuops.gpu.gpu_smoke_test:
    nodes: "{{ fleet.nodes }}"
    namespace: gpuops-smoke-test
    expect_output: Test PASSED
  register: smoke

- name: Show the result
  ansible.builtin.debug:
    msg: "{{ smoke.table.splitlines() }}"

- name: Fill every time-sliced or MPS-shared GPU (one pod beyond its replicas must stay Pending), then burn each node
  gpuops.gpu.gpu_smoke_test:
    nodes: "{{ fleet.nodes }}"
    fill: true
    fill_extra: 1
    load:
      image: registry.example.com/gpu-burn:latest
      args: ["{duration}"]
      duration: 120

- name: Every MIG profile on every node, from a mirror, without failing the play
  gpuops.gpu.gpu_smoke_test:
    nodes: "{{ fleet.nodes }}"
    image: registry.example.com/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0-ubuntu22.04
    image_pull_secrets: [mirror-pull-secret]
    group_by: node
    exclude_resources: [nvidia.com/gpu]
    fail_on_error: false
'''

RETURN = r'''
cases:
  description: One entry per case, sorted by resource, product and node.
  returned: always
  type: list
  elements: dict
  contains:
    id:
      description: Case number.
      type: int
    resource:
      description: The resource requested.
      type: str
      sample: nvidia.com/mig-1g.5gb
    product:
      description: The C(nvidia.com/gpu.product) label of the nodes of the case (V(null) with O(group_by=resource)).
      type: str
      sample: NVIDIA-A100-SXM4-40GB
    node:
      description: The node of the case with O(group_by=node), else V(null).
      type: str
    nodes:
      description: Nodes advertising the resource in this case.
      type: list
      elements: str
    capacity:
      description: Sum of the resource in the capacity of RV(cases[].nodes).
      type: int
    allocatable:
      description: Sum of the resource in their allocatable.
      type: int
    free:
      description: Free units on the schedulable nodes.
      type: int
    schedulable_nodes:
      description: Ready, uncordoned nodes with a free unit.
      type: list
      elements: str
    status:
      description: >-
        V(passed), V(failed), V(unschedulable), V(timeout), V(error) (Job not created), V(no-capacity),
        V(not-advertised), or V(planned) in check mode.
      type: str
      sample: passed
    reason:
      description: Why a case was not run (no schedulable capacity, not advertised).
      type: str
    detail:
      description: How the case ended (Job condition, pod state, scheduler message, log check).
      type: str
    job:
      description: Name of the Job.
      type: str
    pod:
      description: Name of its pod.
      type: str
    ran_on:
      description: Node the pod was scheduled on.
      type: str
    seconds:
      description: Seconds from the Job creation to the end of the case.
      type: float
    log:
      description: Tail of the pod log, V(null) when it could not be read.
      type: str
fill_cases:
  description: One entry per node and shared resource of the fill test (empty without O(fill)).
  returned: always
  type: list
  elements: dict
  contains:
    id:
      description: Case number.
      type: int
    kind:
      description: V(fill).
      type: str
    node:
      description: The node.
      type: str
    resource:
      description: The shared resource.
      type: str
      sample: nvidia.com/gpu
    product:
      description: The C(nvidia.com/gpu.product) label of the node.
      type: str
    sharing:
      description: The sharing mode, V(time-slicing) or V(mps).
      type: str
    replicas:
      description: C(nvidia.com/gpu.replicas) of the node.
      type: int
    allocatable:
      description: Allocatable units of the resource on the node.
      type: int
    in_use:
      description: Units requested by other pods when the nodes were read.
      type: int
    expect_running:
      description: Pods that must be bound (the free units).
      type: int
    expect_pending:
      description: Pods that must stay Pending (O(fill_extra)).
      type: int
    status:
      description: V(passed), V(failed), V(timeout), V(error), V(no-capacity), V(skipped), or V(planned) in check mode.
      type: str
    reason:
      description: Why the case was not run.
      type: str
    detail:
      description: Pods bound and Pending against the expected numbers.
      type: str
      sample: 4 bound, 1 Pending (Unschedulable); expected 4 and 1
    pods:
      description: Names of the pods it would create (check mode).
      type: list
      elements: str
load_cases:
  description: One entry per node and resource of the load (empty without O(load)), with the keys of RV(cases).
  returned: always
  type: list
  elements: dict
summary:
  description: Number of cases by status.
  returned: always
  type: dict
  sample: {"passed": 5, "no-capacity": 1}
table:
  description: The cases as a fixed-width text table with a totals line.
  returned: always
  type: str
run_id:
  description: Value of the C(gpuops.gpu/smoke-test) label on the Jobs and pods of this run.
  returned: always
  type: str
  sample: 20261121-201512-4f2a
'''

from ansible_collections.gpuops.gpu.plugins.module_utils.k8s.runner import argument_spec, gpu_module, run_module
from ansible_collections.gpuops.gpu.plugins.module_utils.ops.smoke import run
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.tolerations import GPU_TOLERATION
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.smoke import GROUP_BY


def main():
    run_module(gpu_module(argument_spec=argument_spec(
        nodes=dict(type='list', elements='dict', required=True),
        namespace=dict(type='str', default='gpuops-smoke-test'),
        image=dict(type='str', default='nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0-ubuntu22.04'),
        image_pull_policy=dict(type='str', default='IfNotPresent', choices=['Always', 'IfNotPresent', 'Never']),
        image_pull_secrets=dict(type='list', elements='str', default=[], no_log=False),
        command=dict(type='list', elements='str', default=[]),
        args=dict(type='list', elements='str', default=[]),
        resources=dict(type='list', elements='str', default=[]),
        exclude_resources=dict(type='list', elements='str', default=[]),
        group_by=dict(type='str', default='product', choices=list(GROUP_BY)),
        tolerations=dict(type='list', elements='dict', default=[GPU_TOLERATION]),
        node_selector=dict(type='dict', default={}),
        security_context=dict(type='dict'),
        wait_for=dict(type='str', default='completion', choices=['completion', 'running']),
        timeout=dict(type='int', default=300),
        stuck_timeout=dict(type='int', default=60),
        poll_interval=dict(type='float', default=2.0),
        expect_output=dict(type='str', default=''),
        log_lines=dict(type='int', default=20),
        cleanup=dict(type='bool', default=True),
        fill=dict(type='bool', default=False),
        fill_extra=dict(type='int', default=1),
        fill_command=dict(type='list', elements='str', default=['sleep', '3600']),
        load=dict(type='dict', options=dict(
            image=dict(type='str', required=True),
            command=dict(type='list', elements='str', default=[]),
            args=dict(type='list', elements='str', default=[]),
            duration=dict(type='int', default=60),
            resources=dict(type='list', elements='str', default=['nvidia.com/gpu']),
        )),
        fail_on_error=dict(type='bool', default=True),
        fail_on_no_capacity=dict(type='bool', default=False),
    )), run, lazy=True)


if __name__ == '__main__':
    main()
