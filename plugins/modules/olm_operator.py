#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
module: olm_operator
short_description: Install an operator through OLM, approving only the pinned version, or remove it
version_added: 0.1.0
author:
  - gpuops.gpu contributors (@gpuops)
description:
  - Installs an operator from an OLM catalog the way the OpenShift documentation describes it for the
    NVIDIA GPU operator and Node Feature Discovery - Namespace, OperatorGroup, Subscription - and waits
    until the operator's ClusterServiceVersion (CSV) is C(Succeeded).
  - With O(approval=Manual) it approves ONLY the InstallPlan whose C(clusterServiceVersionNames)
    contains the pinned CSV (O(starting_csv), else the CSV OLM resolved for the first install). The
    upgrade InstallPlan OLM creates as soon as an older pinned version is installed is never approved;
    it is returned in RV(held_install_plans).
  - Everything that can be checked without writing is checked first - the CatalogSource exists and is
    C(READY), the package, channel and O(starting_csv) exist in the catalog (through the PackageManifest
    API, always served on OpenShift), the install mode is supported, there is at most one OperatorGroup
    and no other Subscription for the package. When the PackageManifest API is not served, an unknown
    package or channel is reported from the Subscription's C(ResolutionFailed) condition and whatever
    this run created is deleted again.
  - Idempotent - nothing is written when the Subscription already says what is asked and its CSV is
    C(Succeeded).
  - Returns the CSV's C(alm-examples) (parsed) and C(relatedImages), the input of
    M(gpuops.gpu.cluster_policy) and of image mirroring.
  - With O(state=absent) it removes the operator - the Subscription, the CSV(s) it installed
    (C(status.installedCSV) and C(status.currentCSV)) and the OperatorGroup, the latter only when gpuops.gpu
    created it (label C(app.kubernetes.io/managed-by=gpuops.gpu)) and no other Subscription of the namespace
    uses it - and waits until they are gone. The namespace and the operator's custom resources (for example
    the ClusterPolicy, to be deleted before the operator) are left alone; see the gpuops.gpu.uninstall role.
extends_documentation_fragment: [kubernetes.core.k8s_auth_options, gpuops.gpu.auth]
attributes:
  check_mode:
    support: full
    details: Runs every check, writes nothing, returns the planned RV(actions); RV(csv) is the pinned or channel-head CSV.
  diff_mode:
    support: full
    details: Namespace labels, OperatorGroup and Subscription spec before and after (with O(state=absent) what is deleted).
options:
  state:
    description:
      - C(present) installs the operator, C(absent) removes it (Subscription, its CSVs, and the OperatorGroup if
        gpuops.gpu created it). With C(absent) only O(package), O(namespace), O(subscription_name), O(wait),
        O(wait_timeout) and O(poll_interval) are used.
    type: str
    choices: [present, absent]
    default: present
  package:
    description: OLM package name, for example C(gpu-operator-certified) or C(nfd).
    type: str
    required: true
  namespace:
    description: Namespace the operator is installed into, for example C(nvidia-gpu-operator).
    type: str
    required: true
  channel:
    description: Channel to subscribe to, for example C(stable) or C(v25.10). Empty means the package's default channel.
    type: str
  source:
    description: CatalogSource the package comes from (C(certified-operators) for the GPU operator,
      C(redhat-operators) for NFD, or the name of a mirrored catalog). Required with O(state=present).
    type: str
  source_namespace:
    description: Namespace of the CatalogSource.
    type: str
    default: openshift-marketplace
  starting_csv:
    description:
      - The CSV to install and pin, for example C(gpu-operator-certified.v25.10.1).
      - With O(approval=Manual), only the InstallPlan containing this CSV is approved; changing it later
        approves the upgrade InstallPlan only if OLM offers exactly that CSV.
    type: str
  approval:
    description: Subscription C(installPlanApproval). C(Manual) never lets OLM upgrade on its own.
    type: str
    choices: [Manual, Automatic]
    default: Manual
  subscription_name:
    description: Name of the Subscription. Default is O(package).
    type: str
  create_namespace:
    description: Create O(namespace) when it does not exist (labelled C(app.kubernetes.io/managed-by=gpuops.gpu),
      so that the gpuops.gpu.uninstall role may delete it again).
    type: bool
    default: true
  namespace_labels:
    description:
      - Labels the namespace must carry, for example C(openshift.io/cluster-monitoring=true) so that
        OpenShift's cluster monitoring scrapes the operator's metrics. Other labels are left alone.
    type: dict
    default: {}
  operator_group_name:
    description: Name of the OperatorGroup created when the namespace has none. Default is O(namespace).
      An existing OperatorGroup is reused whatever its name.
    type: str
  target_namespaces:
    description:
      - OperatorGroup C(targetNamespaces). Default is O(namespace) alone (C(OwnNamespace), the mode the
        GPU operator and NFD support). An empty list means C(AllNamespaces).
    type: list
    elements: str
  config:
    description:
      - Subscription C(spec.config), passed through - C(tolerations), C(nodeSelector), C(env), C(resources), ...
        for the operator's own Deployment. Tolerations are validated.
    type: dict
  wait:
    description: Wait for the CSV to be C(Succeeded) (approving the pinned InstallPlan on the way); with
      O(state=absent), wait until the deleted objects are gone.
    type: bool
    default: true
  wait_timeout:
    description: Seconds to wait for the CSV (with O(state=absent), for the deleted objects to be gone).
    type: int
    default: 600
  poll_interval:
    description: Seconds between reads while waiting for the CatalogSource, the InstallPlan and the CSV.
    type: float
    default: 2.0
  catalog_timeout:
    description:
      - Seconds to wait for the CatalogSource to become C(READY) before failing (nothing is written before).
      - In check mode the CatalogSource is read once, without waiting.
    type: int
    default: 120
seealso:
  - module: gpuops.gpu.cluster_policy
'''

EXAMPLES = r'''
- name: NVIDIA GPU operator, pinned, manual approval, monitored namespace
  gpuops.gpu.olm_operator:
    package: gpu-operator-certified
    namespace: nvidia-gpu-operator
    source: certified-operators
    channel: v25.10
    starting_csv: gpu-operator-certified.v25.10.1
    approval: Manual
    namespace_labels:
      openshift.io/cluster-monitoring: "true"
  register: gpu_operator

- name: ClusterPolicy from the CSV's example
  gpuops.gpu.cluster_policy:
    alm_examples: "{{ gpu_operator.alm_examples }}"

- name: Node Feature Discovery from Red Hat's catalog, operator pods on infra nodes
  gpuops.gpu.olm_operator:
    package: nfd
    namespace: openshift-nfd
    source: redhat-operators
    channel: stable
    config:
      nodeSelector:
        node-role.kubernetes.io/infra: ""
      tolerations:
        - key: node-role.kubernetes.io/infra
          operator: Exists
          effect: NoSchedule

- name: Remove the GPU operator (delete the ClusterPolicy first; the namespace stays)
  gpuops.gpu.olm_operator:
    package: gpu-operator-certified
    namespace: nvidia-gpu-operator
    state: absent
  register: removed
  # removed.actions: ["delete Subscription nvidia-gpu-operator/gpu-operator-certified",
  #                   "delete ClusterServiceVersion nvidia-gpu-operator/gpu-operator-certified.v25.10.1", ...]
'''

RETURN = r'''
csv:
  description: The installed ClusterServiceVersion (check mode, not installed yet - the pinned or channel-head CSV).
  returned: always
  type: str
  sample: gpu-operator-certified.v25.10.1
csv_phase:
  description: Phase of the CSV.
  returned: always
  type: str
  sample: Succeeded
version:
  description: C(spec.version) of the CSV.
  returned: always
  type: str
  sample: 25.10.1
alm_examples:
  description: The CSV's C(alm-examples) annotation, parsed (example custom resources such as the ClusterPolicy).
  returned: always
  type: list
  elements: dict
  sample: [{"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": "gpu-cluster-policy"},
            "spec": {"operator": {"defaultRuntime": "crio", "use_ocp_driver_toolkit": true}, "driver": {"enabled": true},
                     "mig": {"strategy": "single"}, "migManager": {"enabled": true}}},
           {"apiVersion": "nvidia.com/v1alpha1", "kind": "NVIDIADriver", "metadata": {"name": "gpu-driver"},
            "spec": {"driverType": "gpu", "repository": "nvcr.io/nvidia", "image": "driver"}}]
related_images:
  description: The CSV's C(spec.relatedImages) (every image the operator may run), for mirroring.
  returned: always
  type: list
  elements: dict
  sample: [{"name": "driver-image", "image": "nvcr.io/nvidia/driver@sha256:..."}]
install_plan:
  description: The InstallPlan that installed the CSV.
  returned: always
  type: str
  sample: install-q8vxr
approved_install_plans:
  description: InstallPlans approved by this run.
  returned: always
  type: list
  elements: str
  sample: [install-q8vxr]
held_install_plans:
  description: Unapproved InstallPlans left alone because they do not contain the pinned CSV (for example the upgrade to the channel head).
  returned: always
  type: list
  elements: dict
  sample: [{"name": "install-x7k2p", "csvs": ["gpu-operator-certified.v26.7.0"]}]
subscription:
  description: Name of the Subscription.
  returned: always
  type: str
  sample: gpu-operator-certified
operator_group:
  description: Name of the OperatorGroup.
  returned: always
  type: str
  sample: nvidia-gpu-operator
channel:
  description: The channel subscribed to.
  returned: always
  type: str
  sample: v25.10
namespace:
  description: The operator namespace.
  returned: always
  type: str
  sample: nvidia-gpu-operator
package:
  description: The package.
  returned: always
  type: str
  sample: gpu-operator-certified
actions:
  description: What was (in check mode, would be) written, in order.
  returned: always
  type: list
  elements: str
  sample: ["create Namespace nvidia-gpu-operator", "create OperatorGroup nvidia-gpu-operator/nvidia-gpu-operator (OwnNamespace)",
           "create Subscription nvidia-gpu-operator/gpu-operator-certified (package gpu-operator-certified, channel v25.10,
           Manual approval, startingCSV gpu-operator-certified.v25.10.1)",
           "approve InstallPlan install-q8vxr (gpu-operator-certified.v25.10.1)"]
removed_csvs:
  description: With O(state=absent), the CSVs deleted (in check mode, to delete).
  returned: when O(state=absent)
  type: list
  elements: str
  sample: [gpu-operator-certified.v25.10.1]
rolled_back:
  description: Objects this run created and deleted again because OLM could not resolve the Subscription.
  returned: failure
  type: list
  elements: str
  sample: ["Subscription gpu-operator-certified", "OperatorGroup nvidia-gpu-operator"]
api_requests:
  description: Kubernetes API requests made (the reads of the catalog and install waits included).
  returned: always
  type: int
  sample: 31
duration_s:
  description: Wall time in seconds, including the waits for the catalog and the CSV.
  returned: success
  type: float
  sample: 48.6
'''

from ansible_collections.gpuops.gpu.plugins.module_utils.k8s.runner import argument_spec, gpu_module, run_module
from ansible_collections.gpuops.gpu.plugins.module_utils.ops import olm, olm_remove


def run(conn, params, check_mode):
    if params['state'] == 'absent':
        return olm_remove.run(conn, params, check_mode)
    return olm.run(conn, params, check_mode)


def main():
    run_module(gpu_module(argument_spec=argument_spec(
        state=dict(type='str', choices=['present', 'absent'], default='present'),
        package=dict(type='str', required=True),
        namespace=dict(type='str', required=True),
        channel=dict(type='str'),
        source=dict(type='str'),
        source_namespace=dict(type='str', default='openshift-marketplace'),
        starting_csv=dict(type='str'),
        approval=dict(type='str', choices=['Manual', 'Automatic'], default='Manual'),
        subscription_name=dict(type='str'),
        create_namespace=dict(type='bool', default=True),
        namespace_labels=dict(type='dict', default={}),
        operator_group_name=dict(type='str'),
        target_namespaces=dict(type='list', elements='str'),
        config=dict(type='dict'),
        wait=dict(type='bool', default=True),
        wait_timeout=dict(type='int', default=600),
        catalog_timeout=dict(type='int', default=120),
        poll_interval=dict(type='float', default=2.0),
    ), required_if=[('state', 'present', ['source'])]), run)


if __name__ == '__main__':
    main()
