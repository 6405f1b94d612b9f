# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure reading of a Kubernetes Node (a dict, as the API returns it) as a GPU node.

The labels are the ones GFD, NFD and the MIG manager write (docs/facts.md#gpu-feature-discovery-labels,
#mig-manager). No I/O.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import as_number
from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import (
    DEPLOY_LABEL_PREFIX, GPU_RESOURCE, LABEL_COUNT, LABEL_CUDA_PARTS, LABEL_CUDA_VERSION, LABEL_DRIVER_PARTS,
    LABEL_DRIVER_VERSION, LABEL_DP_CONFIG, LABEL_MEMORY, LABEL_MIG_CAPABLE, LABEL_MIG_CONFIG,
    LABEL_MIG_STATE, LABEL_MIG_STRATEGY, LABEL_PCI_PRESENT, LABEL_PRESENT, LABEL_PRODUCT, LABEL_REPLICAS, LABEL_SHARING,
    MIG_RESOURCE_PREFIX, PAUSED_FOR_MIG, SHARED_RESOURCE, VGPU_LABELS)
from ansible_collections.gpuops.gpu.plugins.module_utils.common.objects import labels_of, meta_of, name_of

# Pods that hold resources on a node: bound, not terminal (what the scheduler's cache holds).
ACTIVE_POD_FIELD_SELECTOR = 'status.phase!=Succeeded,status.phase!=Failed'
BOUND_ACTIVE_POD_FIELD_SELECTOR = 'spec.nodeName!=,' + ACTIVE_POD_FIELD_SELECTOR

_MIG_SUFFIX = re.compile(r'-MIG-.*$')
_MIG_SINGLE = re.compile(r'-MIG-(.+?)(?:-SHARED)?$')
_COUNT_SUFFIX = '.count'


def is_gpu_resource(name):
    """True for the extended resources the NVIDIA device plugin advertises."""
    return name in (GPU_RESOURCE, SHARED_RESOURCE) or name.startswith(MIG_RESOURCE_PREFIX)


def gpu_resources(resources):
    """The GPU part of a capacity/allocatable/requests map, as ints."""
    out = {}
    for name, value in (resources or {}).items():
        if is_gpu_resource(name):
            try:
                out[name] = int(str(value))
            except ValueError:
                out[name] = 0
    return out


def is_gpu_node(node):
    """A node with NVIDIA GPUs: GFD/NFD labels or GPU capacity."""
    labels = labels_of(node)
    if labels.get(LABEL_PRESENT) == 'true' or labels.get(LABEL_PCI_PRESENT) == 'true':
        return True
    if LABEL_PRODUCT in labels:
        return True
    return bool(gpu_resources((node.get('status') or {}).get('capacity')))


def vgpu_label(node):
    """'<label>=<value>' of the first vGPU label the node carries (docs/facts.md#vgpu-nodes), else None."""
    labels = labels_of(node)
    for key, value in VGPU_LABELS:
        if labels.get(key) == value:
            return '%s=%s' % (key, value)
    return None


def vgpu_errors(nodes, names, change):
    """One error per vGPU label naming the nodes among ``names`` that carry it: a vGPU guest has one
    unsplittable GPU per VM and a vGPU host's GPUs belong to its VMs, so ``change`` (MIG, sharing)
    cannot be applied there by a node label."""
    found = {}
    for name in sorted(names):
        label = vgpu_label(nodes[name])
        if label:
            found.setdefault(label, []).append(name)
    return ['%s refused on vGPU node(s) %s (label %s): a vGPU is one unsplittable GPU per VM, and a vGPU '
            'host gives its GPUs to VMs; leave these nodes out of the assignments, or set allow_vgpu_nodes: '
            'true if you are sure' % (change, ', '.join(found[label]), label) for label in sorted(found)]


def base_product(product):
    """GFD's product label without the MIG single-strategy and sharing suffixes."""
    if not product:
        return product
    product = product[:-len('-SHARED')] if product.endswith('-SHARED') else product
    return _MIG_SUFFIX.sub('', product)


def _container_gpu(container):
    """Extended resources: an unset request defaults to the limit."""
    resources = container.get('resources') or {}
    merged = gpu_resources(resources.get('limits'))
    merged.update(gpu_resources(resources.get('requests')))
    return merged


def pod_gpu_requests(pod):
    """GPU resources a pod requests, as the scheduler counts them.

    Per resource: the larger of (app containers + restartable init containers, "sidecars") and,
    for each init container in order, its own request plus the sidecars started before it
    (Kubernetes effective request, KEP-753). An unset request defaults to the limit.
    """
    spec = pod.get('spec') or {}
    total = {}
    for container in spec.get('containers') or []:
        for name, qty in _container_gpu(container).items():
            total[name] = total.get(name, 0) + qty
    sidecars = {}
    init_peak = {}
    for container in spec.get('initContainers') or []:
        own = _container_gpu(container)
        if container.get('restartPolicy') == 'Always':
            for name, qty in own.items():
                sidecars[name] = sidecars.get(name, 0) + qty
            continue
        for name, qty in own.items():
            init_peak[name] = max(init_peak.get(name, 0), qty + sidecars.get(name, 0))
    for name, qty in sidecars.items():
        total[name] = total.get(name, 0) + qty
    for name, qty in init_peak.items():
        total[name] = max(total.get(name, 0), qty)
    return dict((k, v) for k, v in total.items() if v)


def pod_is_active(pod):
    """Not terminal: the pod still holds its resources on the node."""
    return (pod.get('status') or {}).get('phase') not in ('Succeeded', 'Failed')


def pod_is_daemonset(pod):
    """Owned by a DaemonSet (a drain leaves it alone)."""
    return any(ref.get('kind') == 'DaemonSet' for ref in meta_of(pod).get('ownerReferences') or [])


def gpu_pods(pods):
    """Active pods that request GPU resources, DaemonSet pods excluded."""
    return [p for p in pods if pod_is_active(p) and not pod_is_daemonset(p) and pod_gpu_requests(p)]


def pod_key(pod):
    meta = meta_of(pod)
    return '%s/%s' % (meta.get('namespace'), meta.get('name'))


def mig_devices(labels):
    """MIG devices by profile, from GFD labels: ``nvidia.com/mig-<profile>.count`` (strategy mixed) or
    the ``-MIG-<profile>`` product suffix with ``nvidia.com/gpu.count`` (strategy single)."""
    out = {}
    for key, value in labels.items():
        if key.startswith(MIG_RESOURCE_PREFIX) and key.endswith(_COUNT_SUFFIX):
            profile = key[len(MIG_RESOURCE_PREFIX):-len(_COUNT_SUFFIX)]
            count = as_number(value, int, 0)
            if profile and count:
                out[profile] = out.get(profile, 0) + count
    match = _MIG_SINGLE.search(labels.get(LABEL_PRODUCT) or '')
    if match and match.group(1) != 'INVALID':
        count = as_number(labels.get(LABEL_COUNT), int, 0)
        if count:
            out[match.group(1)] = out.get(match.group(1), 0) + count
    return out


def free_resources(allocatable, requested):
    """Allocatable minus requested, per allocatable GPU resource.

    Negative when pods hold more than the node advertises now (for example after the device
    plugin came back with fewer devices).
    """
    return dict((name, qty - requested.get(name, 0)) for name, qty in allocatable.items())


def _version(labels, full_key, part_keys):
    if labels.get(full_key):
        return labels[full_key]
    for keys in part_keys:
        parts = [labels.get(k) for k in keys]
        if parts[0]:
            return '.'.join(p for p in parts if p)
    return None


def driver_version(labels):
    """The driver version GFD labels (``570.172.08``), None when the node has no such label."""
    return _version(labels or {}, LABEL_DRIVER_VERSION, LABEL_DRIVER_PARTS)


def cuda_version(labels):
    """The CUDA version the driver supports, as GFD labels it (``12.8``), or None."""
    return _version(labels or {}, LABEL_CUDA_VERSION, LABEL_CUDA_PARTS)


def node_gpu_info(node, pods=None):
    """Summarise one node as a GPU node (a flat dict, stable keys).

    ``requested`` is what the scheduler counts: every non-terminal pod bound to the node, DaemonSet
    pods included. ``gpu_pods`` lists the workload pods among them (DaemonSet pods excluded: the
    ones a drain would evict).
    """
    meta = meta_of(node)
    labels = meta.get('labels') or {}
    status = node.get('status') or {}
    spec = node.get('spec') or {}
    product_label = labels.get(LABEL_PRODUCT)
    pods = [p for p in (pods or []) if (p.get('spec') or {}).get('nodeName') == meta.get('name')]
    requested = {}
    for pod in pods:
        if not pod_is_active(pod):
            continue
        for name, qty in pod_gpu_requests(pod).items():
            requested[name] = requested.get(name, 0) + qty
    allocatable = gpu_resources(status.get('allocatable'))
    deploy = dict((k[len(DEPLOY_LABEL_PREFIX):], v) for k, v in labels.items() if k.startswith(DEPLOY_LABEL_PREFIX))
    ready = next((c.get('status') == 'True' for c in status.get('conditions') or [] if c.get('type') == 'Ready'), False)
    return {
        'name': meta.get('name'),
        'gpu_node': is_gpu_node(node),
        'product': base_product(product_label),
        'product_label': product_label,
        'count': as_number(labels.get(LABEL_COUNT), int),
        'memory_mib': as_number(labels.get(LABEL_MEMORY), int),
        'mig_capable': labels.get(LABEL_MIG_CAPABLE) == 'true',
        'mig_strategy': labels.get(LABEL_MIG_STRATEGY),
        'mig_config': labels.get(LABEL_MIG_CONFIG),
        'mig_state': labels.get(LABEL_MIG_STATE),
        'mig_devices': mig_devices(labels),
        'sharing_strategy': labels.get(LABEL_SHARING) or 'none',
        'replicas': as_number(labels.get(LABEL_REPLICAS), int, 1),
        'device_plugin_config': labels.get(LABEL_DP_CONFIG),
        'driver_version': driver_version(labels),
        'cuda_version': cuda_version(labels),
        'deploy': deploy,
        'paused_for_mig_change': sorted(k for k, v in deploy.items() if v == PAUSED_FOR_MIG),
        'capacity': gpu_resources(status.get('capacity')),
        'allocatable': allocatable,
        'requested': requested,
        'free': free_resources(allocatable, requested),
        'gpu_pods': sorted(pod_key(p) for p in gpu_pods(pods)),
        'unschedulable': bool(spec.get('unschedulable')),
        'ready': ready,
        'taints': spec.get('taints') or [],
    }


def pods_by_node(pods):
    """Group pods by ``spec.nodeName`` (unscheduled pods are dropped)."""
    out = {}
    for pod in pods or []:
        node_name = (pod.get('spec') or {}).get('nodeName')
        if node_name:
            out.setdefault(node_name, []).append(pod)
    return out


def select_nodes(nodes, names=None, only_gpu_nodes=True, gpu_names=()):
    """Pick nodes from a node list: ``(selected, not_found, not_gpu)``.

    ``names`` restricts the selection to those nodes; ``not_found`` lists the names that matched
    no node, ``not_gpu`` the named nodes left out by ``only_gpu_nodes``. ``gpu_names``: nodes that
    have GPUs whatever their labels and capacity (those NVIDIA's DRA driver publishes devices for).
    """
    wanted = set(names) if names else None
    selected = []
    seen = set()
    not_gpu = []
    for node in nodes:
        name = name_of(node)
        if wanted is not None and name not in wanted:
            continue
        seen.add(name)
        if only_gpu_nodes and name not in gpu_names and not is_gpu_node(node):
            if wanted is not None:
                not_gpu.append(name)
            continue
        selected.append(node)
    not_found = sorted(wanted - seen) if wanted is not None else []
    return selected, not_found, sorted(not_gpu)


def fleet_info(nodes, pods=None):
    """``node_gpu_info()`` of every node, sorted by name, in O(nodes + pods).

    With ``pods=None`` (pods not read) the pod derived keys ``requested``, ``free`` and
    ``gpu_pods`` are ``None`` rather than empty.
    """
    grouped = pods_by_node(pods)
    infos = []
    for node in nodes:
        info = node_gpu_info(node, grouped.get(name_of(node), []))
        if pods is None:
            info['requested'] = info['free'] = info['gpu_pods'] = None
        infos.append(info)
    infos.sort(key=lambda i: i['name'] or '')
    return infos


def _add(total, resources):
    for name, qty in resources.items():
        total[name] = total.get(name, 0) + qty


def _count(total, key):
    total[key] = total.get(key, 0) + 1


def fleet_summary(infos):
    """Cluster totals over node_gpu_info() results.

    ``requested``, ``free`` and ``gpu_pods`` are ``None`` when any node has them ``None`` (pods not
    read).
    """
    summary = {'nodes': len(infos), 'gpu_nodes': 0, 'products': {}, 'capacity': {}, 'allocatable': {},
               'requested': {}, 'free': {}, 'gpu_pods': 0, 'mig_strategies': {}, 'mig_states': {},
               'sharing': {}, 'unschedulable': 0, 'not_ready': 0}
    pods_known = all(info.get('requested') is not None for info in infos)
    for info in infos:
        summary['gpu_nodes'] += 1 if info.get('gpu_node', True) else 0
        if info.get('gpu_node', True):
            _count(summary['products'], info['product'] or 'unknown')
            _count(summary['sharing'], info['sharing_strategy'])
        _add(summary['capacity'], info.get('capacity') or {})
        _add(summary['allocatable'], info['allocatable'])
        if pods_known:
            _add(summary['requested'], info['requested'])
            _add(summary['free'], info.get('free') or {})
            summary['gpu_pods'] += len(info.get('gpu_pods') or [])
        if info.get('mig_strategy'):
            _count(summary['mig_strategies'], info['mig_strategy'])
        if info['mig_state']:
            _count(summary['mig_states'], info['mig_state'])
        summary['unschedulable'] += 1 if info['unschedulable'] else 0
        summary['not_ready'] += 0 if info.get('ready', True) else 1
    if not pods_known:
        summary['requested'] = summary['free'] = summary['gpu_pods'] = None
    return summary
