# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The cluster-wide change window of GPU operator v26.7 between its two stacks, pure part (no I/O).

v26.7 runs a ClusterPolicy (the device plugin) or a GPUCluster (NVIDIA's DRA driver), never both (docs/facts.md,
"The GPU operator's GPUCluster"), so a running fleet moves all at once: the ClusterPolicy is saved, every GPU node
is cordoned and drained, the ClusterPolicy is deleted and the GPUCluster created, every node is verified (its
ResourceSlice lists its devices, no GPU extended resource is left), then uncordoned. The way back restores the
saved ClusterPolicy exactly (name, labels, annotations, spec). The cluster side is rollout/dra_window.py.

Here: where the cluster stands, the saved copy and its ConfigMap, every reason not to start, and the steps of the
plan.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import base64
import json

from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import (
    CLUSTER_POLICY_API_VERSION, CLUSTER_POLICY_KIND, managed_by_labels)
from ansible_collections.gpuops.gpu.plugins.module_utils.common.objects import meta_of, name_of
from ansible_collections.gpuops.gpu.plugins.module_utils.plans import gpucluster as gc
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.stack_kind import DEVICE_PLUGIN, DRA, STACKS

SAVED_NAME = 'gpuops-gpu-saved-clusterpolicy'   # Secret in the operator's namespace
SAVED_KEY = 'clusterpolicy.json'
# annotations the API server or a client writes for itself: not part of what is restored
VOLATILE_ANNOTATIONS = ('kubectl.kubernetes.io/last-applied-configuration',)


def cluster_stack(policies, gpuclusters):
    """``device-plugin`` (a ClusterPolicy, no GPUCluster), ``dra`` (a GPUCluster, no ClusterPolicy), ``both`` or
    ``none`` (a window stopped half-way)."""
    live = [g for g in gpuclusters or [] if not meta_of(g).get('deletionTimestamp')]
    if policies and live:
        return 'both'
    if policies:
        return DEVICE_PLUGIN
    return DRA if live else 'none'


def saved_copy(policy):
    """What the window keeps of a ClusterPolicy to restore it exactly: name, labels, annotations and spec."""
    meta = meta_of(policy)
    out = {'apiVersion': CLUSTER_POLICY_API_VERSION, 'kind': CLUSTER_POLICY_KIND,
           'metadata': {'name': meta.get('name')}, 'spec': policy.get('spec') or {}}
    if meta.get('labels'):
        out['metadata']['labels'] = dict(meta['labels'])
    annotations = dict((k, v) for k, v in (meta.get('annotations') or {}).items() if k not in VOLATILE_ANNOTATIONS)
    if annotations:
        out['metadata']['annotations'] = annotations
    return out


def saved_secret(policy, namespace):
    """The Secret that holds the saved ClusterPolicy: a ClusterPolicy names Secrets rather than holding them, but
    its free-form fields (driver and operand ``env``, proxy settings) may carry a credential, so never a ConfigMap."""
    text = json.dumps(saved_copy(policy), indent=2, sort_keys=True)
    return {'apiVersion': 'v1', 'kind': 'Secret', 'type': 'Opaque',
            'metadata': {'name': SAVED_NAME, 'namespace': namespace, 'labels': managed_by_labels()},
            'data': {SAVED_KEY: base64.b64encode(text.encode('utf-8')).decode('ascii')}}


def read_saved(secret):
    """(the saved ClusterPolicy or None, the reason it cannot be used or None) from the Secret as read."""
    if not secret:
        return None, None
    encoded = (secret.get('data') or {}).get(SAVED_KEY)
    try:
        saved = json.loads(base64.b64decode(encoded).decode('utf-8')) if encoded else None
    except (ValueError, TypeError) as exc:
        return None, 'Secret %s has no readable %s (%s)' % (SAVED_NAME, SAVED_KEY, exc)
    if not isinstance(saved, dict) or saved.get('kind') != CLUSTER_POLICY_KIND or not name_of(saved):
        return None, 'Secret %s/%s does not hold a ClusterPolicy' % (SAVED_NAME, SAVED_KEY)
    return saved, None


def deploys_driver(policy):
    """Whether the ClusterPolicy runs the GPU driver itself (its DaemonSet goes with the ClusterPolicy)."""
    driver = (policy.get('spec') or {}).get('driver') or {}
    return driver.get('enabled', True) is not False and not driver.get('useNvidiaDriverCRD')


def window_errors(stack, reads, gpucluster):
    """Every reason not to start the window to ``stack``, before any write.

    ``reads``: policies, gpuclusters (None when the GPUCluster API is not served), slices_served (resource.k8s.io/v1),
    saved (the saved ClusterPolicy or None), saved_error. ``gpucluster``: the GPUCluster to create (to DRA)."""
    if stack not in STACKS:
        return ["stack: '%s' is not a GPU stack (choose %s)" % (stack, ' or '.join(STACKS))]
    errors = []
    policies = reads.get('policies') or []
    if reads.get('gpuclusters') is None:
        errors.append('the cluster serves no GPUCluster (%s): the change window needs GPU operator v26.7 or later; '
                      'before v26.7 use the node-group cutover beside the standalone DRA driver' % gc.API_VERSION)
    if len(policies) > 1:
        errors.append('ClusterPolicies %s: the GPU operator follows one; delete the extra ones first'
                      % ', '.join(sorted(name_of(p) for p in policies)))
    if stack == DRA:
        errors.extend(_to_dra_errors(reads, policies, gpucluster))
    elif not policies and reads.get('saved') is None:
        errors.append(reads.get('saved_error') or 'no ClusterPolicy and no saved copy (Secret %s in the operator\'s '
                      'namespace): nothing to restore; a window to dra saves it' % SAVED_NAME)
    return errors


def _to_dra_errors(reads, policies, gpucluster):
    errors = []
    if not reads.get('slices_served'):
        errors.append('the API server does not serve resource.k8s.io/v1 ResourceSlices: Dynamic Resource Allocation '
                      'must be on (Kubernetes 1.34 or later, OpenShift 4.21 or later)')
    for policy in policies:
        if deploys_driver(policy):
            errors.append('ClusterPolicy %s deploys the GPU driver (spec.driver.enabled is not false): its driver '
                          'DaemonSet goes with it, and a GPUCluster deploys no driver; move the driver to NVIDIADriver '
                          'resources (spec.driver.useNvidiaDriverCRD: true) or to the hosts (spec.driver.enabled: '
                          'false) first' % name_of(policy))
    if not isinstance(gpucluster, dict) or gpucluster.get('kind') != gc.KIND or name_of(gpucluster) != gc.NAME:
        errors.append('gpucluster must be the GPUCluster to create (kind %s, name %s), as the dra role\'s part '
                      'gpucluster plans it' % (gc.KIND, gc.NAME))
    return errors


def needs_switch(stack, policies, gpuclusters):
    """Whether the operator's resources must still change for ``stack``."""
    return cluster_stack(policies, gpuclusters) != stack


def steps(stack, policy_name, saved_name, nodes, batches, namespace):
    """The plan in words, in order."""
    out = []
    if stack == DRA and policy_name:
        out.append('save ClusterPolicy %s to Secret %s/%s' % (policy_name, namespace, SAVED_NAME))
    if nodes:
        out.append('cordon and drain %d GPU node(s) in %d batch(es)' % (len(nodes), len(batches)))
    if stack == DRA:
        if policy_name:
            out.append('delete ClusterPolicy %s (the operator removes the device plugin and its operands)'
                       % policy_name)
        out.append('create or update GPUCluster %s (the operator labels the GPU nodes for the DRA driver)' % gc.NAME)
    else:
        out.append('delete GPUCluster %s and wait until it is gone' % gc.NAME)
        if saved_name:
            out.append('restore ClusterPolicy %s as saved in Secret %s/%s' % (saved_name, namespace, SAVED_NAME))
    if nodes:
        out.append('wait until every node is served by %s, then uncordon the nodes the window cordoned'
                   % ('the DRA driver (its ResourceSlice lists the node\'s devices, no GPU extended resource)'
                      if stack == DRA else 'the device plugin (GPU extended resources back, no ResourceSlice)'))
    return out
