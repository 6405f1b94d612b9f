#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
module: gpu_health
short_description: Take GPU nodes with unhealthy GPUs out of service, and return them once repaired
version_added: 0.1.0
author:
  - gpuops.gpu contributors (@gpuops)
description:
  - Finds the GPU nodes whose GPUs are unhealthy, that is, where C(status.allocatable) is below C(status.capacity)
    for C(nvidia.com/gpu), C(nvidia.com/gpu.shared) or a C(nvidia.com/mig-*) resource (the NVIDIA device plugin
    marks a device unhealthy after a critical XID error and kubelet then keeps it out of allocatable), or that have
    Events with one of O(event_reasons) newer than O(window_minutes), or, with O(prometheus_url), one of whose GPUs
    reports an XID to NVIDIA's DCGM exporter (C(DCGM_FI_DEV_XID_ERRORS), the code of the GPU's last XID error, not 0
    and not one of O(ignored_xids)).
  - Nodes whose device plugin is not serving on purpose (MIG change pending, device plugin paused or switched
    off, a MIG or sharing rollout working on the node) are skipped and listed with the reason.
  - With O(policy=quarantine), cordons every unhealthy node, records why and since when in the annotation
    C(gpuops.gpu/gpu-health), optionally adds the taint C(gpuops.gpu/gpu-unhealthy:NoSchedule) (O(taint)), and
    moves its GPU pods off through the Eviction API (PodDisruptionBudgets honoured), as the MIG and sharing
    rollouts do. A node already quarantined is not changed again; GPU pods still on it are moved off.
  - With O(policy=return), a node this module quarantined whose allocatable equals its capacity again is
    uncordoned (only when this module cordoned it; with O(prometheus_url), only once none of its GPUs reports an XID
    either), its taint removed, and the annotation records the return;
    XID Events from before the return are not counted again. Nodes this module did not quarantine are never
    uncordoned.
  - A run with something to write takes the rollout lock first, the Lease C(gpuops-gpu-rollout) that MIG and sharing
    rollouts, the reset role and the HAMi removal hold, so that it never cordons, drains or returns nodes while
    another of them changes nodes; when another run holds it, the module fails before any write, naming that run,
    its purpose, its nodes and since when (or waits O(lock_timeout) for it). It then reads the nodes and plans again
    under the lock, and releases it at the end, also on failure. Check mode and a run with nothing to write never
    take it (check mode reports it as RV(lock)).
  - Every input is checked, and every node read, before the first write. With O(prometheus_url), Prometheus is asked
    first; a URL that does not answer, refuses the credentials, is not the Prometheus HTTP API or refuses the query
    fails the module with that reason and nothing changed.
extends_documentation_fragment: [kubernetes.core.k8s_auth_options, gpuops.gpu.auth]
attributes:
  check_mode:
    support: full
    details: Returns the plan, the GPU pods that would be evicted and the PodDisruptionBudgets that would block.
  diff_mode:
    support: full
    details: Cordon state, the C(gpuops.gpu/gpu-health) annotation and the taints of every node that changes.
options:
  policy:
    description: V(quarantine) takes unhealthy nodes out of service, V(return) brings repaired ones back.
    type: str
    choices: [quarantine, return]
    default: quarantine
  label_selector:
    description: The GPU nodes to look at.
    type: str
    default: nvidia.com/gpu.present=true
  nodes:
    description: Only these nodes (among those of O(label_selector)); a name not found fails before any write.
    type: list
    elements: str
    default: []
  window_minutes:
    description: How far back Node Events with one of O(event_reasons) count; V(0) does not read Events.
    type: int
    default: 60
  event_reasons:
    description: The Event reasons that mean a GPU error on the node (for example from a node problem detector).
    type: list
    elements: str
    default: [XidCriticalError]
  taint:
    description:
      - Also add the taint C(gpuops.gpu/gpu-unhealthy:NoSchedule) to a quarantined node (removed on return).
      - Needs an account that may change node taints (the install account; the rollout account may only cordon).
    type: bool
    default: false
  drain:
    description: Move the GPU pods off quarantined nodes.
    type: bool
    default: true
  pod_selector:
    description: Also move the other pods with these labels (equality) off.
    type: dict
  drain_timeout:
    description: Seconds to wait for the GPU pods to leave a node; past it a blocked eviction fails the node.
    type: int
    default: 300
  grace_period:
    description: Grace period in seconds for the evicted pods (default theirs).
    type: int
  force:
    description: Delete the pods a PodDisruptionBudget still blocks after O(drain_timeout).
    type: bool
    default: false
  max_nodes:
    description:
      - Refuse (before any write) when more than this many nodes would be newly quarantined; many nodes at once
        points at a shared cause (device plugin config, driver) rather than broken GPUs. V(0) means no limit.
    type: int
    default: 5
  poll_interval:
    description: Seconds between checks while pods leave a node.
    type: float
    default: 2
  prometheus_url:
    description:
      - Base URL of a Prometheus (or Thanos querier) that scrapes NVIDIA's DCGM exporter, for example
        V(https://thanos-querier.openshift-monitoring.svc:9091) on OpenShift; the module asks C(GET /api/v1/query) for
        the last XID of every GPU by node (C(max by (Hostname, gpu, UUID)) of C(DCGM_FI_DEV_XID_ERRORS), with the
        exporter's newer C(hostname) label copied into C(Hostname)).
      - Not set, DCGM metrics are not read.
    type: str
  prometheus_token:
    description: Bearer token for O(prometheus_url) (for OpenShift's thanos-querier, a service account's token).
    type: str
  prometheus_username:
    description: User for basic authentication to O(prometheus_url) (instead of O(prometheus_token)).
    type: str
  prometheus_password:
    description: Password of O(prometheus_username).
    type: str
  prometheus_validate_certs:
    description: Verify the TLS certificate of O(prometheus_url).
    type: bool
    default: true
  prometheus_ca_cert:
    description: CA certificate file that signed the certificate of O(prometheus_url) (for example the service CA).
    type: path
  prometheus_client_cert:
    description: Client certificate file for O(prometheus_url) (mutual TLS).
    type: path
  prometheus_client_key:
    description: Key file of O(prometheus_client_cert).
    type: path
  prometheus_timeout:
    description: Seconds to wait for the answer of O(prometheus_url) (1 to 300).
    type: int
    default: 10
  prometheus_node_label:
    description:
      - The label of the DCGM series that holds the node name. The exporter writes C(Hostname) (C(hostname) in its
        newer versions, copied into C(Hostname) by the query); set another one when the scrape configuration
        relabels it (for example V(node)).
    type: str
    default: Hostname
  ignored_xids:
    description:
      - XID codes that do not make a node unhealthy. The default is the list NVIDIA's device plugin ignores as
        application errors (13, 31, 43, 45, 68, 109); V([]) counts every XID.
    type: list
    elements: int
    default: [13, 31, 43, 45, 68, 109]
  dra_device_taints:
    description:
      - Where NVIDIA's DRA driver (C(gpu.nvidia.com)) serves a node's GPUs and its bad devices are known (the GPU whose
        UUID DCGM reports an XID for, and its MIG devices; or a device the driver tainted itself), quarantine only those
        devices with one DeviceTaintRule each (C(gpuops-gpu-health-<node>-<device>), taint
        C(gpuops.gpu/gpu-unhealthy) with O(dra_taint_effect)) instead of cordoning and draining the node; the return
        deletes them. Nodes whose bad devices are not known are cordoned as without this option.
      - Also counts a device the driver tainted with effect C(NoSchedule) or C(NoExecute) (its ResourceSlice's
        C(devices[].taints)) as a reason, whatever the option O(dra_taint_effect).
      - Needs the DeviceTaintRule API (C(resource.k8s.io/v1beta2), else C(v1alpha3)); Kubernetes 1.36 serves it only
        with C(--runtime-config=resource.k8s.io/v1beta2=true) and the C(DRADeviceTaintRules) feature gate (beta, off
        by default). Without it the module fails before any write. Needs an account that may list ResourceSlices and
        write DeviceTaintRules (the rollout ClusterRole C(gpuops-gpu-rollout) grants both).
    type: bool
    default: false
  dra_taint_effect:
    description:
      - The effect of the DeviceTaintRules of O(dra_device_taints). V(NoSchedule) keeps new claims off the device;
        V(NoExecute) also makes Kubernetes evict the pods using it (its device taint eviction controller deletes them,
        PodDisruptionBudgets are not consulted).
    type: str
    choices: [NoSchedule, NoExecute]
    default: NoSchedule
  lock_timeout:
    description:
      - Seconds to wait for the rollout lock while another run holds it (0 to 604800). V(0) fails at once, naming who
        holds it, for what, on which nodes and since when; nothing is written.
    type: int
    default: 0
  lock_duration:
    description:
      - Seconds the lock's lease stays valid without renewal (10 to 604800); it is renewed every quarter of that while
        the module runs, and every node patch and eviction first proves the lease is still this run's (a run cut off
        past its lease stops before its next write).
    type: int
    default: 120
  lock_holder:
    description:
      - Run under a lock already taken with M(gpuops.gpu.rollout_lock) (the holder it returned); it is checked and renewed,
        neither taken nor released. Fails at once when that holder does not hold it.
    type: str
  lock_namespace:
    description: Namespace of the lock's Lease, whatever the ClusterPolicy says (see O(operator_namespace)).
    type: str
  operator_namespace:
    description:
      - Where the rollout lock lives when no ClusterPolicy reports the GPU operator's namespace (C(status.namespace),
        which wins, so that every run meets at one lock).
    type: str
    default: nvidia-gpu-operator
notes:
  - Needs RBAC C(list) and C(patch) on C(nodes), C(list) on C(pods), C(poddisruptionbudgets) and C(events),
    C(create) on C(pods/eviction) and C(events), C(get), C(create), C(update) and C(delete) on the
    C(coordination.k8s.io) Lease C(gpuops-gpu-rollout) in the GPU operator namespace, C(list) on ClusterPolicies;
    with O(dra_device_taints) also C(list) on C(resourceslices) and C(get), C(list), C(create), C(update) and
    C(delete) on C(devicetaintrules) (C(resource.k8s.io))
    (the rollout ClusterRole and Role C(gpuops-gpu-rollout) grant this; its admission policy admits the C(gpuops.gpu/gpu-health) annotation and the
    cordon).
seealso:
  - module: gpuops.gpu.mig_rollout
  - module: gpuops.gpu.rollout_lock
'''

EXAMPLES = r'''
- name: Plan only (check mode shows the nodes, the reasons and the pods that would move)
  gpuops.gpu.gpu_health:
    policy: quarantine
  check_mode: true

- name: Take the nodes with unhealthy GPUs out of service
  gpuops.gpu.gpu_health:
    policy: quarantine
    drain_timeout: 600

- name: Bring the repaired nodes back
  gpuops.gpu.gpu_health:
    policy: return

- name: Also count the XIDs the DCGM exporter reports (OpenShift's monitoring stack)
  gpuops.gpu.gpu_health:
    policy: quarantine
    prometheus_url: https://thanos-querier.openshift-monitoring.svc:9091
    prometheus_token: "{{ monitoring_reader_token }}"   # a token allowed to query it (cluster-monitoring-view)
    prometheus_ca_cert: service-ca.crt                   # the CA of its certificate (the service CA)
'''

RETURN = r'''
policy:
  description: The policy applied.
  returned: always
  type: str
  sample: quarantine
unhealthy:
  description: The nodes found unhealthy now.
  returned: always
  type: list
  elements: str
  sample: [a100-0]
skipped:
  description: Nodes not judged, with the reason (their device plugin is not serving on purpose).
  returned: always
  type: dict
  sample: {a100-1: "MIG change pending (nvidia.com/mig.config.state=pending)"}
nodes:
  description: Every GPU node looked at, with C(unhealthy), C(reasons), C(skipped), C(lost) (per resource its
    C(allocatable) and C(capacity)), C(events) (the number of recent error Events) and C(xids) (the GPUs reporting
    an XID to DCGM, each with C(gpu), C(uuid), C(xid); empty without O(prometheus_url)).
  returned: always
  type: list
  elements: dict
  sample: [{"name": "a100-0", "unhealthy": true, "skipped": null, "events": 1,
            "reasons": ["nvidia.com/gpu allocatable 7 < capacity 8", "DCGM: GPU 0 (GPU-8a1f...) last XID 79"],
            "lost": {"nvidia.com/gpu": {"allocatable": 7, "capacity": 8}},
            "xids": [{"gpu": "0", "uuid": "GPU-8a1f...", "xid": 79}]}]
actions:
  description:
    - One entry per node the policy acts on, with C(node), C(action) (V(quarantine) or V(return)), C(reason),
      C(changed); in check mode C(would_evict) and C(blocking_pdbs), else C(evicted).
    - With O(dra_device_taints), a node quarantined device by device has C(mode) V(devices),
      C(device_taint_rules) (written) and C(deleted_device_taint_rules).
  returned: always
  type: list
  elements: dict
  sample: [{"node": "a100-0", "action": "quarantine", "reason": "nvidia.com/gpu allocatable 7 < capacity 8",
            "changed": true, "evicted": ["team-a/train-0"]}]
evicted:
  description: Per node, the pods evicted (not in check mode).
  returned: success and not check mode
  type: dict
  sample: {a100-0: ["team-a/train-0"]}
failed:
  description: Per node, why its GPU pods could not be moved off (empty when every drain finished).
  returned: always
  type: dict
  sample: {"a100-0": "eviction of team-a/train-0 blocked by PodDisruptionBudget team-a/train after 300s"}
devices:
  description: With O(dra_device_taints), the nodes quarantined device by device (DeviceTaintRules, no cordon).
  returned: when dra_device_taints is true
  type: list
  elements: str
  sample: [a100-0]
dcgm:
  description:
    - With O(prometheus_url), what was asked and who answered - C(url), C(query) (the PromQL), C(reporting) (the
      nodes with series) and C(missing) (GPU nodes without any, also a warning).
  returned: when prometheus_url is set
  type: dict
  sample: {"url": "https://thanos-querier.openshift-monitoring.svc:9091", "reporting": ["a100-0"], "missing": []}
lock:
  description:
    - The rollout lock as check mode found it (one read, nothing written), with C(state) (V(free), V(held) by another
      run, V(stale), V(ours) with O(lock_holder), or V(unknown) when it could not be read, with C(error)),
      C(holder), C(who), C(purpose), C(nodes), C(since) and C(lease) (namespace/name).
  returned: check mode
  type: dict
  sample: {"state": "free", "lease": "gpu-operator/gpuops-gpu-rollout"}
'''

from ansible_collections.gpuops.gpu.plugins.module_utils.k8s.runner import argument_spec, gpu_module, run_module
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.gpu_health import (
    APPLICATION_XIDS, DEFAULT_EVENT_REASONS, POLICIES)
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.gpu_health import run
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.inputs import lock_argument_spec


def main():
    run_module(gpu_module(argument_spec=argument_spec(
        policy=dict(type='str', choices=list(POLICIES), default='quarantine'),
        label_selector=dict(type='str', default='nvidia.com/gpu.present=true'),
        nodes=dict(type='list', elements='str', default=[]),
        window_minutes=dict(type='int', default=60),
        event_reasons=dict(type='list', elements='str', default=list(DEFAULT_EVENT_REASONS)),
        taint=dict(type='bool', default=False),
        drain=dict(type='bool', default=True),
        pod_selector=dict(type='dict'),
        drain_timeout=dict(type='int', default=300),
        grace_period=dict(type='int'),
        force=dict(type='bool', default=False),
        max_nodes=dict(type='int', default=5),
        poll_interval=dict(type='float', default=2),
        prometheus_url=dict(type='str'),
        prometheus_token=dict(type='str', no_log=True),
        prometheus_username=dict(type='str'),
        prometheus_password=dict(type='str', no_log=True),
        prometheus_validate_certs=dict(type='bool', default=True),
        prometheus_ca_cert=dict(type='path'),
        prometheus_client_cert=dict(type='path'),
        prometheus_client_key=dict(type='path', no_log=False),
        prometheus_timeout=dict(type='int', default=10),
        prometheus_node_label=dict(type='str', default='Hostname'),
        ignored_xids=dict(type='list', elements='int', default=list(APPLICATION_XIDS)),
        dra_device_taints=dict(type='bool', default=False),
        dra_taint_effect=dict(type='str', choices=['NoSchedule', 'NoExecute'], default='NoSchedule'),
        operator_namespace=dict(type='str', default='nvidia-gpu-operator'),
        **lock_argument_spec()
    )), run)


if __name__ == '__main__':
    main()
