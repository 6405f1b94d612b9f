#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
module: cluster_policy_info
short_description: Read the NVIDIA GPU operator's ClusterPolicy and check that there is exactly one to work on
version_added: 0.1.0
author:
  - gpuops.gpu contributors (@gpuops)
description:
  - Lists the ClusterPolicies (C(nvidia.com/v1)) in one request and picks the one a task works on - the one
    named O(name), else the only one.
  - The GPU operator honours a single ClusterPolicy, so more than one without O(name) is reported in RV(errors);
    none at all is reported only with O(required=true).
  - The problems are returned, not raised, so that a role can report them together with its other input
    checks before it writes anything. The module fails only when the API refuses the read.
  - Read-only. The module never changes the cluster and reports C(changed=false).
extends_documentation_fragment: [kubernetes.core.k8s_auth_options, gpuops.gpu.auth]
attributes:
  check_mode:
    support: full
    details: Read-only; the same in check mode.
  diff_mode:
    support: none
options:
  name:
    description: The ClusterPolicy to work on. Empty means the only one in the cluster.
    type: str
    default: ""
  required:
    description: Report in RV(errors) when no ClusterPolicy matches (V(false) - none is fine, there is nothing to change).
    type: bool
    default: true
  name_option:
    description:
      - How the messages in RV(errors) name the input that picks the ClusterPolicy, for example the role
        variable V(mig_cluster_policy_name).
    type: str
    default: name
seealso:
  - module: gpuops.gpu.cluster_policy
'''

EXAMPLES = r'''
- name: Read the ClusterPolicy
  gpuops.gpu.cluster_policy_info:
    name: "{{ mig_cluster_policy_name }}"
    name_option: mig_cluster_policy_name
  register: cluster_policy

- name: Check the inputs before writing anything
  ansible.builtin.assert:
    that: cluster_policy.errors | length == 0
    fail_msg: "{{ cluster_policy.errors }}"
    quiet: true

- name: Point the ClusterPolicy at the MIG strategy
  gpuops.gpu.cluster_policy:
    name: "{{ cluster_policy.name }}"
    state: patched
    overrides:
      mig:
        strategy: mixed
  when: cluster_policy.mig_strategy != 'mixed'
'''

RETURN = r'''
cluster_policy:
  description: The ClusterPolicy to work on, as read; V(null) when there is none or more than one.
  returned: always
  type: dict
  sample: {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy",
           "metadata": {"name": "gpu-cluster-policy", "resourceVersion": "48213", "generation": 3},
           "spec": {"operator": {"defaultRuntime": "crio"}, "driver": {"enabled": true},
                    "devicePlugin": {"enabled": true, "config": {"name": "", "default": ""}},
                    "migManager": {"enabled": true}, "mig": {"strategy": "single"}},
           "status": {"namespace": "nvidia-gpu-operator", "state": "ready"}}
cluster_policies:
  description: Every ClusterPolicy that matched (all of them when O(name) is empty), as read (see RV(cluster_policy)).
  returned: always
  type: list
  elements: dict
  sample: [{"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": "gpu-cluster-policy"},
            "spec": {"mig": {"strategy": "single"}}, "status": {"namespace": "nvidia-gpu-operator", "state": "ready"}}]
name:
  description: Name of RV(cluster_policy); empty when there is none.
  returned: always
  type: str
  sample: gpu-cluster-policy
namespace:
  description: The GPU operator namespace, from the ClusterPolicy C(status.namespace); empty when unknown.
  returned: always
  type: str
  sample: nvidia-gpu-operator
state:
  description: C(status.state) of RV(cluster_policy) (V(ready), V(notReady), V(ignored)); empty when unknown.
  returned: always
  type: str
  sample: ready
mig_strategy:
  description:
    - The MIG strategy the GPU operator applies - C(spec.mig.strategy) of RV(cluster_policy), else the operator's
      default V(single) (also when there is no RV(cluster_policy)).
  returned: always
  type: str
  sample: single
device_plugin_config:
  description:
    - The device-plugin config of RV(cluster_policy) - C(spec.devicePlugin.config) - that names the ConfigMap of
      sharing profiles and the profile nodes without a C(nvidia.com/device-plugin.config) label use.
  returned: always
  type: dict
  contains:
    name:
      description: The device-plugin ConfigMap; empty when unset.
      type: str
      sample: gpuops-device-plugin-config
    default:
      description: The default profile (a key of that ConfigMap); empty when unset.
      type: str
      sample: ""
mig_config_map:
  description:
    - The mig-parted ConfigMap the MIG manager reads - C(spec.migManager.config.name) of RV(cluster_policy), else
      the operator's built-in V(default-mig-parted-config).
  returned: always
  type: str
  sample: default-mig-parted-config
errors:
  description: Why there is no single ClusterPolicy to work on; empty when RV(cluster_policy) is set (or not required).
  returned: always
  type: list
  elements: str
  sample: ["more than one ClusterPolicy (found 2: gpu-cluster-policy, gpu-cluster-policy-old); the GPU operator
           honours only one: set name to the one to use"]
api_found:
  description: Whether the ClusterPolicy API is served (V(false) before the GPU operator is installed).
  returned: always
  type: bool
  sample: true
api_requests:
  description: Kubernetes API requests made.
  returned: always
  type: int
  sample: 1
'''

from ansible_collections.gpuops.gpu.plugins.module_utils.ops.cluster_policy import info
from ansible_collections.gpuops.gpu.plugins.module_utils.k8s.runner import argument_spec, gpu_module, run_module


def main():
    module = gpu_module(argument_spec=argument_spec(
        name=dict(type='str', default=''),
        required=dict(type='bool', default=True),
        name_option=dict(type='str', default='name'),
    ), supports_check_mode=True)
    run_module(module, info)


if __name__ == '__main__':
    main()
