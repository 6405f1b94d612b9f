# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The dra role's part ``gpucluster``: NVIDIA's DRA driver through the GPU operator's ``GPUCluster``
(nvidia.com/v1alpha1, GPU operator 26.7 and later). Pure: what the role read in, the singleton to apply and
every reason not to, out.

The facts (docs/facts.md, "The GPU operator's GPUCluster"): the CR is cluster-scoped and a singleton named
``gpu-cluster``; the operator runs a ClusterPolicy or a GPUCluster, never both (its node labelling stops with an
error and the GPUCluster stays notReady while a ClusterPolicy exists); ``spec.draDriver.featureGates`` is a
mapping of gate name to true/false the driver gets as FEATURE_GATES, and the driver refuses a name it does not
know. The role's own floor is Kubernetes 1.34 with ``resource.k8s.io/v1`` served (its DeviceClasses and claims
are v1).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import (
    Fields, bool_errors, is_int, string_errors, type_name, unknown_key_errors)
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.dra_gates import gate_mapping, release_gates
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.quota import parse_quantity
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.dra_resources import role_labels
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.driver import image_name_errors

API_VERSION = 'nvidia.com/v1alpha1'
KIND = 'GPUCluster'
NAME = 'gpu-cluster'            # the CRD's CEL rule: a singleton of this name
MIN_KUBERNETES = (1, 34)        # resource.k8s.io/v1 is GA from 1.34
INPUTS = ('driver_repository', 'driver_image', 'driver_version', 'feature_gates', 'kubelet_plugin',
          'compute_domains', 'dcgm', 'dcgm_exporter', 'parts')
HELM_RELEASE, HELM_NAMESPACE = 'meta.helm.sh/release-name', 'meta.helm.sh/release-namespace'
_VERSION_RE = re.compile(r'^v?(\d+)\.(\d+)', re.ASCII)


def _env_errors(value, path):
    if not isinstance(value, dict):
        return ['%s must be a mapping of variable name to value, got %s' % (path, type_name(value))]
    return ['%s.%s must be a string, got %s (quote it in YAML)' % (path, key, type_name(item))
            for key, item in value.items() if not isinstance(item, str)]


def _quantities(value, path):
    if not isinstance(value, dict):
        return ['%s must be a mapping of resource name to quantity, got %s' % (path, type_name(value))]
    return ['%s.%s: %r is not a quantity' % (path, key, item) for key, item in value.items()
            if parse_quantity(item) is None]


def _port_errors(value, path):
    if is_int(value) and 1 <= value <= 65535:
        return []
    return ['%s must be a port number 1 to 65535, got %r' % (path, value)]


KUBELET_PLUGIN = Fields({'env': _env_errors, 'resources': Fields({'limits': _quantities, 'requests': _quantities}),
                         'healthcheck': Fields({'enabled': bool_errors, 'port': _port_errors})})


def _gate_map(gates, version, errors):
    """The featureGates mapping from dra_driver_feature_gates (a list of names or a {name: bool} mapping), each name
    checked against the gates of the driver release ``version`` (empty: the operator's default, newer than the
    table of gpu/dra_gates.py)."""
    gate_map, _enabled, bad = gate_mapping(gates)
    errors.extend('dra_driver_feature_gates: ' + e for e in bad)
    release, known = release_gates(version if isinstance(version, str) else '')
    for name in gate_map:
        if name not in known:
            errors.append("dra_driver_feature_gates: unknown DRA driver feature gate '%s': the driver %s refuses to "
                          "start with it (its gates: %s)" % (name, release, ', '.join(known) or 'none'))
    return gate_map


def kubernetes_version(version):
    """(major, minor) of a Kubernetes version ('v1.36.3', a kubelet's 'v1.34.1-eks-...'); None when unreadable."""
    match = _VERSION_RE.match(version) if isinstance(version, str) else None
    return (int(match.group(1)), int(match.group(2))) if match else None


def _old_kubelets(nodes):
    """'<node> (<version>)' of each GPU node whose kubelet is older than MIN_KUBERNETES or unreadable."""
    old = []
    for node in nodes or []:
        version = ((node.get('status') or {}).get('nodeInfo') or {}).get('kubeletVersion')
        parsed = kubernetes_version(version)
        if parsed is None or parsed < MIN_KUBERNETES:
            old.append('%s (%s)' % ((node.get('metadata') or {}).get('name'), version or 'unknown'))
    return sorted(old)


def cluster_errors(reads, window=False):
    """Why the cluster cannot take a GPUCluster now: each reason once, in the order a user fixes them. With
    ``window`` (the change window replaces the ClusterPolicy) a ClusterPolicy is no reason."""
    errors = []
    if not reads.get('crd_served'):
        errors.append('the cluster serves no GPUCluster (%s): GPU operator >= 26.7 needed (install or upgrade the '
                      'operator first)' % API_VERSION)
    old = _old_kubelets(reads.get('nodes'))
    if old:
        errors.append('Kubernetes >= %d.%d needed on the GPU nodes for DRA through the GPU operator (the kubelet runs '
                      'the driver\'s plugin through resource.k8s.io/v1); older: %s'
                      % (MIN_KUBERNETES + (', '.join(old),)))
    if not reads.get('resource_v1_served'):
        errors.append('the API server does not serve resource.k8s.io/v1 (DeviceClass): Dynamic Resource Allocation '
                      'must be on (Kubernetes >= 1.34)')
    releases = sorted(set('%s/%s' % (ann.get(HELM_NAMESPACE), ann[HELM_RELEASE]) for ann in (
        (c.get('metadata') or {}).get('annotations') or {} for c in reads.get('device_classes') or []
        if str((c.get('metadata') or {}).get('name')).endswith('.nvidia.com')) if ann.get(HELM_RELEASE)))
    if releases:
        errors.append("NVIDIA's standalone DRA driver chart is installed (Helm release %s, which owns the nvidia.com "
                      "DeviceClasses): with a GPUCluster the GPU operator deploys the driver itself, and two kubelet "
                      "plugins of gpu.nvidia.com on a node conflict; uninstall the release first, or keep the "
                      "standalone driver and move node groups with the part cutover" % ', '.join(releases))
    policies = sorted((p.get('metadata') or {}).get('name') or '?' for p in reads.get('cluster_policies') or [])
    if policies and not window:
        errors.append('ClusterPolicy %s exists: GPU operator v26.7 runs one of them, ClusterPolicy or GPUCluster, '
                      'never both (its node labelling stops and the GPUCluster stays notReady); move the cluster in '
                      'a change window instead: dra_parts [window] with dra_cutover_stack dra (it saves and deletes '
                      'the ClusterPolicy, then writes this GPUCluster)' % ', '.join(policies))
    return errors


_CONFLICTS = {
    'driver': "with a GPUCluster the GPU operator deploys the DRA driver itself, and two kubelet plugins of "
              "gpu.nvidia.com on one node conflict",
    'cutover': "the node-group cutover moves nodes to the standalone DRA driver, while with a GPUCluster the operator "
               "serves every GPU node",
}


def part_errors(parts):
    """Parts of the dra role that cannot run together with a GPUCluster (parts gpucluster and window)."""
    errors = ["dra_parts has both '%s' and '%s': %s; keep one of them" % (part, other, why)
              for part, why in sorted(_CONFLICTS.items()) for other in ('gpucluster', 'window')
              if part in parts and other in parts]
    if 'gpucluster' in parts and 'window' in parts:
        errors.append("dra_parts has both 'gpucluster' and 'window': the window writes the GPUCluster itself (from the "
                      "same dra_gpucluster_* inputs); keep 'window'")
    return errors


def _spec(config, gate_map):
    driver = dict((key, config[name]) for key, name in (
        ('repository', 'driver_repository'), ('image', 'driver_image'), ('version', 'driver_version'))
        if config.get(name))
    if gate_map:
        driver['featureGates'] = gate_map
    if config.get('kubelet_plugin'):
        plugin = dict(config['kubelet_plugin'])
        if 'env' in plugin:
            plugin['env'] = [{'name': k, 'value': v} for k, v in sorted(plugin['env'].items())]
        driver['gpus'] = {'kubeletPlugin': plugin}
    driver['computeDomains'] = {'enabled': bool(config.get('compute_domains'))}
    return {'draDriver': driver, 'dcgm': {'enabled': bool(config.get('dcgm'))},
            'dcgmExporter': {'enabled': bool(config.get('dcgm_exporter', True))}}


def gpucluster_plan(config, reads):
    """What the ``gpucluster`` part writes: {errors, definition, summary}.

    ``config``: the typed inputs (INPUTS: driver_repository, driver_image, driver_version, feature_gates,
    kubelet_plugin {env {name: value}, resources {limits, requests}, healthcheck {enabled, port}},
    compute_domains, dcgm, dcgm_exporter, parts: the role's dra_parts). ``reads``: crd_served, resource_v1_served (the API server's side of
    Kubernetes >= 1.34: resource.k8s.io/v1 is served from 1.34), nodes (the GPU nodes: their kubelets' versions),
    cluster_policies (the ClusterPolicies), existing (the GPUClusters), device_classes (the DeviceClasses: a Helm
    release that owns the nvidia.com ones is the standalone driver's chart). On any error, definition is None.
    """
    config, reads = config or {}, reads or {}
    errors = unknown_key_errors(config, INPUTS, 'gpucluster inputs')
    for name in ('driver_repository', 'driver_version'):
        if config.get(name) is not None:
            errors.extend(string_errors(config[name], 'dra_gpucluster_' + name))
    if config.get('driver_image') is not None:
        errors.extend(image_name_errors(config['driver_image'], 'dra_gpucluster_driver_image'))
    for name in ('compute_domains', 'dcgm', 'dcgm_exporter'):
        if config.get(name) is not None:
            errors.extend(bool_errors(config[name], 'dra_gpucluster_' + name))
    if config.get('kubelet_plugin') is not None:
        errors.extend(KUBELET_PLUGIN(config['kubelet_plugin'], 'dra_gpucluster_kubelet_plugin'))
    gate_map = _gate_map(config.get('feature_gates') or [], config.get('driver_version'), errors)
    parts = config.get('parts') or []
    errors.extend(part_errors(parts))
    errors.extend(cluster_errors(reads, window='window' in parts))
    existing = [o for o in reads.get('existing') or [] if (o.get('metadata') or {}).get('name') == NAME]
    summary = {'name': NAME, 'exists': bool(existing),
               'state': ((existing[0].get('status') or {}).get('state') if existing else None),
               'feature_gates': gate_map}
    if errors:
        return {'errors': errors, 'definition': None, 'summary': summary}
    definition = {'apiVersion': API_VERSION, 'kind': KIND,
                  'metadata': {'name': NAME, 'labels': role_labels()}, 'spec': _spec(config, gate_map)}
    return {'errors': [], 'definition': definition, 'summary': summary}
