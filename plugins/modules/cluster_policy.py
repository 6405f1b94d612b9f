#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
module: cluster_policy
short_description: Create or patch the NVIDIA GPU operator's ClusterPolicy and wait until it is ready
version_added: 0.1.0
author:
  - gpuops.gpu contributors (@gpuops)
description:
  - Creates the ClusterPolicy (C(nvidia.com/v1)) from a base - the ClusterPolicy in the operator CSV's
    C(alm-examples) (O(alm_examples), as returned by M(gpuops.gpu.olm_operator)), a given O(base), or
    built-in defaults for Helm and plain-manifest installs - deep-merged with O(overrides).
  - On an existing ClusterPolicy only O(overrides) and O(tolerations) are compared, and only the fields
    that differ are patched; fields set by someone else (the MIG or sharing roles, an administrator) are
    left alone unless O(replace=true).
  - C(daemonsets.tolerations) is always merged, never replaced - the operator replaces its default list
    (which tolerates C(nvidia.com/gpu)) with any non-empty list, so C(nvidia.com/gpu:NoSchedule Exists)
    is always kept.
  - Overrides are checked against the cluster's ClusterPolicy CRD schema (types, enums, unknown fields
    with a "did you mean") and every write is first sent as a server-side dry run with strict field
    validation, so a bad input fails before anything is stored.
  - The spec about to be written (the stored fields included) is checked against driver combinations the
    operator refuses only at reconcile time - C(driver.usePrecompiled) without C(driver.version), GPUDirect
    Storage or GDRCopy with precompiled drivers, GPUDirect Storage 2.17.5 or later without
    C(driver.kernelModuleType=open).
  - Waits for C(status.state=ready).
  - The GPU operator honours a single ClusterPolicy; the module refuses to create a second one.
extends_documentation_fragment: [kubernetes.core.k8s_auth_options, gpuops.gpu.auth]
attributes:
  check_mode:
    support: full
    details: The change is sent as a server-side dry run (validated and defaulted by the apiserver) and not stored.
  diff_mode:
    support: full
    details: The ClusterPolicy spec before and after.
options:
  name:
    description: ClusterPolicy name. Default is the existing ClusterPolicy, else the base's name, else C(gpu-cluster-policy).
    type: str
  alm_examples:
    description: The CSV C(alm-examples) list (M(gpuops.gpu.olm_operator) returns it); its ClusterPolicy is the base.
    type: list
    elements: dict
  base:
    description: A ClusterPolicy (or its spec) to use as the base instead of O(alm_examples) or the built-in defaults.
    type: dict
  overrides:
    description:
      - ClusterPolicy C(spec) fields to set, deep-merged into the base (mappings merge, lists and values
        replace, C(null) removes a field); see the examples.
      - C(daemonsets.tolerations) given here are merged like O(tolerations).
    type: dict
    default: {}
  tolerations:
    description: Tolerations added to C(daemonsets.tolerations) (merged, deduplicated, C(nvidia.com/gpu) kept).
    type: list
    elements: dict
    default: []
  replace:
    description:
      - Make the spec exactly base + overrides, removing fields set by others. Default is to patch only
        what O(overrides) and O(tolerations) name.
    type: bool
    default: false
  state:
    description:
      - V(present) creates the ClusterPolicy or patches it; it refuses to work where another ClusterPolicy exists
        (the operator honours only one).
      - V(patched) only patches an existing ClusterPolicy - the one O(name) picks, for example among several
        as M(gpuops.gpu.cluster_policy_info) chose it - and fails, changing nothing, when it is not there.
        O(alm_examples) and O(base) are not used then (unless O(replace=true)).
      - V(absent) deletes the ClusterPolicy (the operator then removes its operands).
    type: str
    choices: [present, patched, absent]
    default: present
  wait:
    description: Wait for C(status.state=ready).
    type: bool
    default: true
  wait_timeout:
    description: Seconds to wait for C(ready).
    type: int
    default: 600
  poll_interval:
    description: Seconds between reads of the ClusterPolicy while waiting for C(ready).
    type: float
    default: 2.0
seealso:
  - module: gpuops.gpu.olm_operator
    description: Installs the GPU operator and returns the C(alm-examples) used as the base.
  - module: gpuops.gpu.cluster_policy_info
    description: Reads the ClusterPolicy and checks that there is exactly one to work on.
'''

EXAMPLES = r'''
- name: Install the GPU operator through OLM
  gpuops.gpu.olm_operator:
    package: gpu-operator-certified
    namespace: nvidia-gpu-operator
    source: certified-operators
    starting_csv: gpu-operator-certified.v25.10.1
  register: gpu_operator

- name: ClusterPolicy from the CSV example, mixed MIG strategy, operands tolerate a custom taint too
  gpuops.gpu.cluster_policy:
    alm_examples: "{{ gpu_operator.alm_examples }}"
    overrides:
      mig:
        strategy: mixed
      dcgmExporter:
        serviceMonitor:
          enabled: true
    tolerations:
      - key: dedicated
        operator: Equal
        value: gpu
        effect: NoSchedule

- name: Helm install - patch the chart's ClusterPolicy only where it differs
  gpuops.gpu.cluster_policy:
    name: cluster-policy
    overrides:
      driver:
        enabled: false

- name: Switch the device plugin off and drop its config (null removes a field) in the existing ClusterPolicy
  gpuops.gpu.cluster_policy:
    name: "{{ cluster_policy.name }}"  # registered from gpuops.gpu.cluster_policy_info
    state: patched
    overrides:
      devicePlugin:
        enabled: false
        config: null
    wait: false
'''

RETURN = r'''
name:
  description: The ClusterPolicy name.
  returned: always
  type: str
  sample: gpu-cluster-policy
created:
  description: Whether the ClusterPolicy was (in check mode, would be) created.
  returned: always
  type: bool
  sample: false
patch:
  description: The merge patch applied to C(spec) ({} when nothing differed; the whole spec when created).
  returned: always
  type: dict
  sample: {"mig": {"strategy": "mixed"}, "devicePlugin": {"config": {"name": "gpuops-device-plugin-config"}}}
spec:
  description: The spec after the change (as stored, or as the server-side dry run returned it in check mode).
  returned: always
  type: dict
  sample: {"operator": {"defaultRuntime": "crio", "use_ocp_driver_toolkit": true}, "cdi": {"enabled": true},
           "driver": {"enabled": true, "kernelModuleType": "auto", "useNvidiaDriverCRD": false},
           "devicePlugin": {"enabled": true, "config": {"name": "gpuops-device-plugin-config", "default": ""}},
           "migManager": {"enabled": true}, "mig": {"strategy": "mixed"}, "toolkit": {"enabled": true},
           "daemonsets": {"updateStrategy": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "1"},
                          "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}}
state:
  description: C(status.state) at the end (C(ready) after a successful wait).
  returned: always
  type: str
  sample: ready
api_requests:
  description: Kubernetes API requests made (the server-side dry run and the reads of the wait included).
  returned: always
  type: int
  sample: 7
duration_s:
  description: Wall time in seconds, including the wait for C(ready).
  returned: success
  type: float
  sample: 12.4
'''

from ansible_collections.gpuops.gpu.plugins.module_utils.k8s.runner import argument_spec, gpu_module, run_module
from ansible_collections.gpuops.gpu.plugins.module_utils.ops.cluster_policy import run


def main():
    run_module(gpu_module(argument_spec=argument_spec(
        name=dict(type='str'),
        alm_examples=dict(type='list', elements='dict'),
        base=dict(type='dict'),
        overrides=dict(type='dict', default={}),
        tolerations=dict(type='list', elements='dict', default=[]),
        replace=dict(type='bool', default=False),
        state=dict(type='str', choices=['present', 'patched', 'absent'], default='present'),
        wait=dict(type='bool', default=True),
        wait_timeout=dict(type='int', default=600),
        poll_interval=dict(type='float', default=2.0),
    ), mutually_exclusive=[('alm_examples', 'base')]), run)


if __name__ == '__main__':
    main()
