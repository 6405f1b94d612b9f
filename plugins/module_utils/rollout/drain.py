# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Moving pods off a node during a rollout: which pods go (GPU pods, plus an optional selector),
eviction through the Eviction API (PodDisruptionBudgets honoured: HTTP 429 is retried until
drain_timeout, then only ``force`` deletes past it), which PDBs would block (check-mode plan), and
the restart of operand pods (e.g. the device plugin) after a label change.

``st`` is the node's result dict of the rollout (``evicted``, ``restarted``, ``changed``, ...).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.module_utils.common.objects import labels_of
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import node as gn
from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import ANN_ROLLOUT_UPDATED
from ansible_collections.gpuops.gpu.plugins.module_utils.common import selector as _selector
from ansible_collections.gpuops.gpu.plugins.module_utils.common.errors import status_of
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.api import FENCE_CALL, now_iso

# which PodDisruptionBudgets would block an eviction (the check-mode plans): pure, in common/selector.py
blocking_pdbs = _selector.blocking_pdbs
label_selector_requirements = _selector.label_selector_requirements

try:
    from kubernetes.client.rest import ApiException
except ImportError:  # pragma: no cover - the module reports the missing library
    ApiException = Exception


def _ref(pod):
    return '%s/%s' % (pod['metadata']['namespace'], pod['metadata']['name'])


def selected_pods(pods, pod_selector=None):
    """GPU pods to move off a node: active, not DaemonSet-owned, asking for GPU extended resources or holding
    ResourceClaims (devices handed out through DRA), plus those ``pod_selector`` (labels, equality) selects among
    the other active, non-DaemonSet pods."""
    chosen = gn.gpu_pods(pods)
    movable = [p for p in pods if gn.pod_is_active(p) and not gn.pod_is_daemonset(p)]
    others = [p for p in movable if (p.get('spec') or {}).get('resourceClaims')]
    if pod_selector:
        others += [p for p in movable if all(labels_of(p).get(k) == v for k, v in pod_selector.items())]
    names = set(id(p) for p in chosen)
    for pod in others:
        if id(pod) not in names:
            names.add(id(pod))
            chosen.append(pod)
    return chosen


def _evict_all(api, node, pods, st, grace_period):
    """Evict ``pods``; returns the refs a PodDisruptionBudget blocked (HTTP 429)."""
    blocked = []
    for pod in pods:
        meta = pod['metadata']
        if meta.get('deletionTimestamp'):
            continue
        try:
            api.evict(meta['name'], meta['namespace'], grace_period)
        except ApiException as exc:
            if getattr(exc, 'gpuops_call', None) == FENCE_CALL:  # the lock's renewal, not the eviction
                raise
            if status_of(exc) == 404:
                continue
            if status_of(exc) == 429:
                blocked.append(_ref(pod))
                continue
            raise
        if _ref(pod) not in st['evicted']:
            st['evicted'].append(_ref(pod))
            api.event(node, 'GpuopsEvict', 'evicted GPU pod %s' % _ref(pod))
    return blocked


def drain(api, node, st, deadline, opts):
    """Evict the node's pods to move; ``(True, None)`` once none is left, ``(False, None)`` while
    waiting, ``(False, reason)`` when the node fails (blocked or still busy at ``deadline``)."""
    name = node['metadata']['name']
    pods = selected_pods(api.node_pods(name), opts.get('pod_selector'))
    if not pods:
        return True, None
    st['changed'] = True
    blocked = _evict_all(api, node, pods, st, opts.get('grace_period'))
    if not deadline.passed():
        return False, None
    if blocked and not opts.get('force'):
        return False, ('eviction of %s blocked by a PodDisruptionBudget for %ss (drain_timeout); scale the '
                       'workload, relax the PDB or use force' % (', '.join(blocked), opts['drain_timeout']))
    if blocked:
        for ref in blocked:
            namespace, pod_name = ref.split('/', 1)
            api.delete_pod(pod_name, namespace, opts.get('grace_period'))
            api.warn('force: deleted %s on %s past its PodDisruptionBudget' % (ref, name))
        return False, None
    return False, 'GPU pods still on the node after %ss: %s' % (opts['drain_timeout'], ', '.join(_ref(p) for p in pods))


def restart_pods(api, node, spec, st):
    """Delete the pods ``spec`` selects on the node (their DaemonSet recreates them), then record
    ``spec['annotations']`` on the node; a run killed in between deletes them again next time."""
    name = node['metadata']['name']
    pods = api.selected_pods_on(spec['namespace'], spec['selector'], name)
    # what each deleted pod was (app label) and where its DaemonSet wants it (nodeSelector)
    st['restarting'] = {'namespace': spec['namespace'], 'selector': spec['selector'],
                        'old': sorted(p['metadata']['uid'] for p in pods),
                        'pods': [(labels_of(p).get('app'),
                                  (p.get('spec') or {}).get('nodeSelector') or {}) for p in pods]}
    st['restarted'] = [_ref(p) for p in pods if api.delete_pod(p['metadata']['name'], p['metadata']['namespace'])]
    if st['restarted']:
        api.event(node, 'GpuopsRestart', 'restarted %s' % ', '.join(st['restarted']))
    annotations = dict(spec.get('annotations') or {})
    annotations[ANN_ROLLOUT_UPDATED] = now_iso()
    api.patch_node(name, {'metadata': {'annotations': annotations}})
    st['changed'] = True


def _ready(pod):
    status = pod.get('status') or {}
    return status.get('phase') == 'Running' and any(
        c.get('type') == 'Ready' and c.get('status') == 'True' for c in status.get('conditions') or [])


def restarted(api, node, st):
    """('wait', detail): is every pod deleted by restart_pods back, Running and Ready? Once they
    are, ``st['restarting']`` is dropped (the rollout then asks the kind for progress).

    A pod whose nodeSelector no longer matches the node (e.g. the MPS control daemon once MPS is
    off) is not coming back and is not waited for.
    """
    spec = st['restarting']
    labels = labels_of(node)
    pods = api.selected_pods_on(spec['namespace'], spec['selector'], node['metadata']['name'])
    ready = [labels_of(p).get('app') for p in pods
             if p['metadata']['uid'] not in spec['old'] and not p['metadata'].get('deletionTimestamp') and _ready(p)]
    missing = [app for app, selector in spec['pods']
               if app not in ready and all(labels.get(k) == v for k, v in selector.items())]
    if not missing:
        st.pop('restarting')
        return 'wait', 'restarted pods are ready'
    return 'wait', 'waiting for the restarted %s pod(s) to be Running and Ready' % ', '.join(sorted(set(missing)))
