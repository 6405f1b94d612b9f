#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
module: node_taints
short_description: Add or remove the taints gpuops.gpu owns on nodes and MachineSet templates
version_added: 0.1.0
author:
  - gpuops.gpu contributors (@gpuops)
description:
  - Puts O(taints) on the selected nodes (C(spec.taints)) and on the machine template of the selected
    OpenShift MachineSets (C(spec.template.spec.taints), machine.openshift.io/v1beta1), or takes them away
    with O(state=absent).
  - Records the taints it owns on each object in the annotation C(gpuops.gpu/owned-taints) (JSON list of
    C(key:effect)). Only those are ever changed or removed, plus the ones named in O(remove); every other
    taint (cloud provider, node lifecycle controller, other tools) is kept as it is.
  - With O(state=present), an owned taint that is no longer in O(taints) is removed, so the list can
    shrink between runs. A foreign taint with the same key, effect and value is adopted; with another value
    it is a conflict and the module fails before changing anything.
  - Every selected object is read and checked before the first write; a named object that does not exist,
    a selector that matches nothing (with O(require_match=true)) or a conflict fails with no change.
  - Writes are JSON merge patches carrying the object's C(resourceVersion); a concurrent change (HTTP 409)
    re-reads the object and plans again.
  - A MachineSet template change applies to the Machines created afterwards; tainting the nodes the
    MachineSet already has is done by selecting them as nodes too.
extends_documentation_fragment: [kubernetes.core.k8s_auth_options, gpuops.gpu.auth]
attributes:
  check_mode:
    support: full
    details: Returns the planned changes per object and writes nothing.
  diff_mode:
    support: full
    details: The taints of every changed object before and after.
options:
  taints:
    description:
      - Taints to have (O(state=present)) or to take away (O(state=absent)), each C(key), optional
        C(value) and C(effect) (V(NoSchedule), V(PreferNoSchedule) or V(NoExecute)).
    type: list
    elements: dict
    default: []
  state:
    description: Whether O(taints) should be present or absent.
    type: str
    choices: [present, absent]
    default: present
  nodes:
    description: Names of the nodes to taint.
    type: list
    elements: str
    default: []
  label_selector:
    description: Nodes matching this label selector, for example V(nvidia.com/gpu.present=true).
    type: str
  machinesets:
    description: Names of the MachineSets (in O(machine_namespace)) whose template gets the taints.
    type: list
    elements: str
    default: []
  machineset_selector:
    description: MachineSets (in O(machine_namespace)) matching this label selector.
    type: str
  machine_namespace:
    description: Namespace of the MachineSets.
    type: str
    default: openshift-machine-api
  remove:
    description:
      - Taints to remove even though gpuops.gpu did not add them, as C(key) (every effect) or C(key:effect).
    type: list
    elements: str
    default: []
  require_match:
    description:
      - Fail when O(label_selector) or O(machineset_selector) matches no object.
    type: bool
    default: true
  conflict_retries:
    description: How many times a write refused with HTTP 409 (concurrent change) is planned again.
    type: int
    default: 5
notes:
  - Needs RBAC C(get), C(list) and C(patch) on C(nodes) and, for MachineSets, on
    C(machinesets.machine.openshift.io) in O(machine_namespace).
  - Tolerate the taints before adding them (NFD worker, GPU operator, ClusterPolicy daemonsets); the
    C(gpuops.gpu.gpu_node_placement) role does this in the right order.
seealso:
  - module: kubernetes.core.k8s_taint
'''

EXAMPLES = r'''
- name: Reserve the GPU nodes for GPU workloads
  gpuops.gpu.node_taints:
    label_selector: nvidia.com/gpu.present=true
    taints:
      - key: nvidia.com/gpu
        effect: NoSchedule

- name: The same on the GPU MachineSets, for nodes created later
  gpuops.gpu.node_taints:
    machineset_selector: cluster-api/accelerator
    taints:
      - key: nvidia.com/gpu
        effect: NoSchedule

- name: Take our taint away again (foreign taints stay)
  gpuops.gpu.node_taints:
    nodes: [gpu-worker-0]
    state: absent
    taints:
      - key: nvidia.com/gpu
        effect: NoSchedule

- name: Replace a taint another tool left behind
  gpuops.gpu.node_taints:
    nodes: [gpu-worker-0]
    remove: ["dedicated:NoSchedule"]
    taints:
      - key: dedicated
        value: gpu
        effect: NoSchedule
'''

RETURN = r'''
objects:
  description: One entry per selected node and MachineSet, sorted by kind and name.
  returned: success
  type: list
  elements: dict
  contains:
    kind:
      description: V(Node) or V(MachineSet).
      type: str
      sample: Node
    name:
      description: Object name.
      type: str
      sample: a100-0
    namespace:
      description: Namespace (MachineSets only).
      type: str
      sample: openshift-machine-api
    changed:
      description: Whether the object was (or, in check mode, would be) changed.
      type: bool
      sample: true
    added:
      description: Taints added, as C(key:effect).
      type: list
      elements: str
      sample: ["nvidia.com/gpu:NoSchedule"]
    updated:
      description: Owned taints whose value changed.
      type: list
      elements: str
      sample: []
    removed:
      description: Taints removed.
      type: list
      elements: str
      sample: []
    adopted:
      description: Foreign taints identical to a wanted one, now recorded as owned.
      type: list
      elements: str
      sample: []
    kept:
      description: With O(state=absent), wanted-away taints that gpuops.gpu does not own and therefore kept.
      type: list
      elements: str
      sample: []
    taints:
      description: The object's taints after the change.
      type: list
      elements: dict
      sample: [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]
changed_objects:
  description: C(Kind/name) of the changed objects.
  returned: success
  type: list
  elements: str
  sample: ["Node/a100-0", "MachineSet/gpu-a100"]
'''

from ansible_collections.gpuops.gpu.plugins.module_utils.k8s.runner import argument_spec, gpu_module, run_module
from ansible_collections.gpuops.gpu.plugins.module_utils.ops.taints import run


def main():
    run_module(gpu_module(argument_spec=argument_spec(
        taints=dict(type='list', elements='dict', default=[]),
        state=dict(type='str', choices=['present', 'absent'], default='present'),
        nodes=dict(type='list', elements='str', default=[]),
        label_selector=dict(type='str'),
        machinesets=dict(type='list', elements='str', default=[]),
        machineset_selector=dict(type='str'),
        machine_namespace=dict(type='str', default='openshift-machine-api'),
        remove=dict(type='list', elements='str', default=[]),
        require_match=dict(type='bool', default=True),
        conflict_retries=dict(type='int', default=5),
    )), run)


if __name__ == '__main__':
    main()
