#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
module: gpu_diagnostics
short_description: Collect the GPU operator's state, logs and GPU node details into one archive, secrets redacted
version_added: 0.1.0
author:
  - gpuops.gpu contributors (@gpuops)
description:
  - Reads what a support case about NVIDIA GPUs on Kubernetes or OpenShift needs and writes it into one
    gzip-compressed tar archive O(dest) on the host the module runs on (the controller, for the playbooks of
    this collection).
  - "The archive holds, under one directory named after the file: C(summary.txt) (the index: each file,
    what it holds, whether it could be read, how many values were redacted); C(clusterpolicies.yaml) and
    C(nvidiadrivers.yaml) (spec and status, when their CRDs are installed); C(nodes.yaml) (per GPU node:
    labels, annotations, taints, cordon, capacity, allocatable, conditions, node info); C(pods.yaml) (the
    pods of O(operator_namespace)); C(logs/<component>/<pod>_<container>.log) (the last O(log_lines)
    lines of the GPU operator, MIG manager, device plugin, GPU feature discovery, DCGM exporter, DCGM,
    driver, container toolkit and validator containers, and of the previous instance of a container that
    restarted); C(events.yaml) (events of O(operator_namespace) and of the GPU nodes);
    C(configmaps/<name>.yaml) (the mig-parted, device-plugin, DCGM-exporter metrics, vGPU licensing
    and vGPU device manager ConfigMaps the ClusterPolicy names); C(lease.yaml) (the rollout lock's Lease)."
  - Secrets are never read. Every value kept is redacted first, in the module, so no secret reaches the
    archive, the module result or the job log - values of keys and environment variables whose name contains
    C(TOKEN), C(PASSWORD), C(PASSWD), C(SECRET), C(KEY), C(CREDENTIAL) or C(AUTH), bearer and basic
    authorization values, JSON Web Tokens, private keys and passwords in URLs, in objects and in log text.
  - An item that cannot be read (a CRD that is not installed, a missing permission, a node whose kubelet does
    not serve logs) is noted in C(summary.txt) and, unless it is simply absent, as a warning; the archive
    is written anyway.
  - Read-only on the cluster; the module reports C(changed=false).
extends_documentation_fragment: [kubernetes.core.k8s_auth_options, gpuops.gpu.auth]
attributes:
  check_mode:
    support: full
    details: The cluster is only read either way; the archive, a local file, is written in check mode too.
  diff_mode:
    support: N/A
    details: The module changes nothing on the cluster.
options:
  dest:
    description:
      - Path of the archive to write, ending in C(.tar.gz) or C(.tgz). Its directory is created when missing;
        an existing file is replaced. The archive is written with mode C(0600).
    type: path
    required: true
  operator_namespace:
    description: Namespace of the GPU operator and its operands.
    type: str
    default: nvidia-gpu-operator
  label_selector:
    description: Only the GPU nodes matching this label selector (Kubernetes syntax); default every GPU node.
    type: str
  log_lines:
    description: Lines of each container log to keep (the last ones).
    type: int
    default: 500
  max_log_pods:
    description:
      - Pods per component whose logs are read; pods that are not Ready come first. V(0) reads no log.
    type: int
    default: 10
  event_limit:
    description: The most events kept (the newest ones).
    type: int
    default: 1000
notes:
  - Needs RBAC get/list on nodes, pods, pods/log, events, ConfigMaps (get), Leases (get), ClusterPolicies and
    NVIDIADrivers; the ClusterRole C(gpuops-gpu-report) of the C(gpuops.gpu.rbac) role grants them.
seealso:
  - module: gpuops.gpu.gpu_nodes_info
'''

EXAMPLES = r'''
- name: Collect the diagnostics archive
  gpuops.gpu.gpu_diagnostics:
    dest: /tmp/gpuops-diagnostics.tar.gz
    operator_namespace: gpu-operator
    log_lines: 1000
  register: diagnostics

- name: Show where it is
  ansible.builtin.debug:
    msg: "{{ diagnostics.path }} ({{ diagnostics.files | length }} files, {{ diagnostics.redacted }} values redacted)"
'''

RETURN = r'''
path:
  description: Absolute path of the archive written.
  returned: success
  type: str
  sample: /tmp/gpuops-diagnostics-20260101T000000Z.tar.gz
files:
  description: The archive's members.
  returned: success
  type: list
  elements: str
  sample: [gpuops-diagnostics/summary.txt, gpuops-diagnostics/nodes.yaml]
contents:
  description: The lines of C(summary.txt) as data, one per item collected or not.
  returned: success
  type: list
  elements: dict
  contains:
    path:
      description: Path in the archive.
      type: str
    what:
      description: What it holds.
      type: str
    status:
      description: V(collected), V(not found), or why it was not collected.
      type: str
    redacted:
      description: Values redacted in it.
      type: int
redacted:
  description: Values redacted in the whole archive.
  returned: success
  type: int
  sample: 4
api_requests:
  description: Kubernetes API requests made.
  returned: success
  type: int
  sample: 42
'''

from ansible_collections.gpuops.gpu.plugins.module_utils.ops.diagnostics import run
from ansible_collections.gpuops.gpu.plugins.module_utils.k8s.runner import argument_spec, gpu_module, run_module


def main():
    module = gpu_module(argument_spec=argument_spec(
        dest=dict(type='path', required=True),
        operator_namespace=dict(type='str', default='nvidia-gpu-operator'),
        label_selector=dict(type='str'),
        log_lines=dict(type='int', default=500),
        max_log_pods=dict(type='int', default=10),
        event_limit=dict(type='int', default=1000),
    ), supports_check_mode=True)
    run_module(module, run)


if __name__ == '__main__':
    main()
