# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU fleet inventory: the cluster reads behind ``gpuops.gpu.gpu_nodes_info``.

Everything is read with LIST calls, never one request per node:

* one node list (server-side ``label_selector``; a ``metadata.name`` field selector when exactly
  one name is asked for),
* with ``resource.k8s.io/v1`` served, one ResourceSlice list (field selector ``spec.driver=gpu.nvidia.com``) and
  one ResourceClaim list (all namespaces): the DRA view of ``gpu/dra_fleet.py``; a 404 on the first means
  DRA is not served, and the view is ``{'served': False}``,
* at most one pod list: cluster-wide with the field selector
  ``spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed`` (bound, non-terminal pods: what
  the scheduler counts), or ``spec.nodeName=<node>,...`` when a single node is selected, or none
  at all when no node is selected or pods are not wanted.

Lists are paginated (``limit``/``continue``) so a large cluster is read in pages of
``PAGE_SIZE`` objects; the number of requests grows with the number of objects / ``PAGE_SIZE``,
not with the number of nodes. Responses are decoded as plain JSON (no client model objects), which
is what the pure helpers in ``gpu_node`` take.

Requests go through the run's ``k8s.client.Connection`` (which counts them: ``api_requests``); its
``core`` is a ``kubernetes.client.CoreV1Api`` or anything with the same ``list_node`` /
``list_pod_for_all_namespaces`` signature. This file imports no client library: ``read_cluster``, for the
inventory plugin, opens its connection through ``k8s/client.py``.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

from ansible_collections.gpuops.gpu.plugins.module_utils.common.objects import labels_of, meta_of, name_of
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import dra, dra_fleet
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import node as gpu_node
from ansible_collections.gpuops.gpu.plugins.module_utils.k8s import client
from ansible_collections.gpuops.gpu.plugins.module_utils.common.errors import (
    ApiError, GpuOpsError, api_error_message, status_of)

PAGE_SIZE = 500
InventoryError = ApiError  # a list call failed; the message says which and why


class Lister(object):
    """Paginated LIST calls through the connection ``conn`` (which counts them)."""

    def __init__(self, conn, page_size=PAGE_SIZE):
        self.conn = conn
        self.page_size = page_size

    def _call(self, method, kwargs):
        """One request; returns ``(data, None)`` or ``(None, exception)``."""
        try:
            data = self.conn.call(method, **kwargs)
        except Exception as exc:  # ApiException, urllib3 and socket errors alike
            return None, exc
        if not isinstance(data, dict):
            raise ApiError('unexpected API response type: %s' % type(data).__name__)
        return data, None

    def list(self, method, what, missing=(), **kwargs):
        """All items of a list call, following ``continue`` tokens.

        A 410 Gone while paging (the continue token expired during a very large list) restarts
        the list once as a single unpaginated request. An HTTP status in ``missing`` on the first
        page returns that status (an int) instead of raising.
        """
        items = []
        token = None
        while True:
            page = dict(kwargs, limit=self.page_size)
            if token:
                page['_continue'] = token
            data, exc = self._call(method, page)
            if exc is not None and token and getattr(exc, 'status', None) == 410:
                data, exc = self._call(method, kwargs)
                items = []
                token = None
            if exc is not None and not token and status_of(exc) in missing:
                return status_of(exc)
            if exc is not None:
                raise ApiError('Could not list %s: %s' % (what, api_error_message(exc)))
            items.extend(data.get('items') or [])
            token = meta_of(data).get('continue')
            if not token:
                return items


def list_nodes(core, lister, label_selector=None, names=None):
    """The nodes, filtered server-side by label selector (and by name when exactly one)."""
    kwargs = {}
    if label_selector:
        kwargs['label_selector'] = label_selector
    unique = sorted(set(names or []))
    if len(unique) == 1:
        kwargs['field_selector'] = 'metadata.name=%s' % unique[0]
    return lister.list(core.list_node, 'nodes', **kwargs)


def list_pods(core, lister, node_names):
    """Bound, non-terminal pods of the given nodes: one list for all of them, none for no node."""
    if not node_names:
        return []
    if len(node_names) == 1:
        selector = 'spec.nodeName=%s,%s' % (node_names[0], gpu_node.ACTIVE_POD_FIELD_SELECTOR)
    else:
        selector = gpu_node.BOUND_ACTIVE_POD_FIELD_SELECTOR
    return lister.list(core.list_pod_for_all_namespaces, 'pods', field_selector=selector)


def list_dra(conn, lister):
    """``(slices, claims, dra facts)``: the ResourceSlices of NVIDIA's DRA driver and every ResourceClaim, two
    lists; ``(None, None, {'served': False})`` when ``resource.k8s.io/v1`` is not served (HTTP 404), and
    ``(None, None, {'served': True, 'readable': False, ...})`` when the account may not list them (HTTP 403)."""
    group, version = dra.API_VERSION.split('/')
    slices = lister.list(conn.custom.list_cluster_custom_object, 'ResourceSlices', missing=(403, 404), group=group,
                         version=version, plural=dra.RESOURCE_SLICES,
                         field_selector='%s=%s' % (dra.SLICE_DRIVER_FIELD, dra.DRIVER))
    claims = lister.list(conn.custom.list_cluster_custom_object, 'ResourceClaims', missing=(403,), group=group,
                         version=version, plural=dra.RESOURCE_CLAIMS) if isinstance(slices, list) else slices
    if slices == 404:
        return None, None, {'served': False}
    if 403 in (slices, claims):
        return None, None, {'served': True, 'readable': False, 'reason': 'the account may not list ResourceSlices '
                            'and ResourceClaims (resource.k8s.io): the DRA view is left out'}
    return slices, claims, None


def read_fleet(conn, lister, label_selector=None, names=None, include_pods=True, only_gpu_nodes=True):
    """``(node_gpu_info dicts with their DRA view, dra facts, not_found, not_gpu, labels by node)``: one node
    list, at most one pod list, and the two DRA lists when ``resource.k8s.io/v1`` is served."""
    nodes = list_nodes(conn.core, lister, label_selector=label_selector, names=names)
    slices, claims, facts = list_dra(conn, lister)
    selected, not_found, not_gpu = gpu_node.select_nodes(nodes, names=names, only_gpu_nodes=only_gpu_nodes,
                                                         gpu_names=dra_fleet.dra_node_names(slices))
    pods = None
    if include_pods:
        pods = list_pods(conn.core, lister, sorted(name_of(n) for n in selected))
    infos = gpu_node.fleet_info(selected, pods)
    annotated = dra_fleet.annotate(infos, slices, claims)
    labels = dict((name_of(n), labels_of(n)) for n in selected)
    return infos, facts or annotated, not_found, not_gpu, labels


def gather(conn, label_selector=None, names=None, include_pods=True, only_gpu_nodes=True,
           page_size=PAGE_SIZE):
    """Read the fleet and shape it: ``nodes``, ``summary``, ``dra``, ``not_found``, ``not_gpu``,
    ``api_requests``. Raises InventoryError when a list call fails."""
    infos, facts, not_found, not_gpu, _labels = read_fleet(
        conn, Lister(conn, page_size=page_size), label_selector=label_selector, names=names,
        include_pods=include_pods, only_gpu_nodes=only_gpu_nodes)
    return {
        'nodes': infos,
        'summary': dra_fleet.summary(infos),
        'dra': facts,
        'not_found': not_found,
        'not_gpu': not_gpu,
        'api_requests': conn.requests,
    }


def gpu_node_records(conn, label_selector=None, include_pods=True, label_keys=(), page_size=PAGE_SIZE):
    """The GPU nodes for an inventory source (the inventory plugin ``gpuops.gpu.gpu_nodes``): the
    ``gpu_node.fleet_info`` dicts with their DRA view, each with ``labels``, the node's labels among
    ``label_keys``. Read as ``gather`` reads. Raises InventoryError."""
    infos, _facts, _not_found, _not_gpu, labels = read_fleet(
        conn, Lister(conn, page_size=page_size), label_selector=label_selector, include_pods=include_pods)
    for info in infos:
        own = labels.get(info['name']) or {}
        info['labels'] = dict((key, own[key]) for key in label_keys if key in own)
    return infos


def read_cluster(auth, label_selector=None, include_pods=True, label_keys=()):
    """One cluster for the inventory plugin ``gpuops.gpu.gpu_nodes``, which talks to the API only through here:
    connect with the kubernetes.core connection settings ``auth`` (a kubeconfig path expanded and checked
    first) and read its GPU nodes as ``gpu_node_records`` does. Returns ``(API server address, records)``;
    raises GpuOpsError."""
    if client.CoreV1Api is None or client.get_api_client is None:
        raise GpuOpsError('the kubernetes Python library and the kubernetes.core collection are required on the '
                          'controller (pip install kubernetes; ansible-galaxy collection install kubernetes.core)')
    kubeconfig = auth.get('kubeconfig')
    if isinstance(kubeconfig, str) and kubeconfig:
        auth = dict(auth, kubeconfig=os.path.expanduser(kubeconfig))
        if not os.path.isfile(auth['kubeconfig']):
            raise GpuOpsError('the kubeconfig file %s does not exist' % auth['kubeconfig'])
    conn = client.Connection(auth=auth)
    conn.open()
    records = gpu_node_records(conn, label_selector=label_selector, include_pods=include_pods, label_keys=label_keys)
    return conn.client.configuration.host, records


def run(conn, params, check_mode=False):
    """``gpuops.gpu.gpu_nodes_info``: the gathered fleet (reads only, the same in check mode), with
    warnings for names not found and nodes left out."""
    result = gather(conn, label_selector=params['label_selector'], names=params['names'],
                    include_pods=params['include_pods'], only_gpu_nodes=params['only_gpu_nodes'])
    warnings = []
    if result['not_found']:
        warnings.append('No node named %s%s.' % (', '.join(result['not_found']), ' matches %s' % params['label_selector']
                                                 if params['label_selector'] else ''))
    if result['not_gpu']:
        warnings.append('Left out, no NVIDIA GPUs: %s (set only_gpu_nodes=false to include them).'
                        % ', '.join(result['not_gpu']))
    if result['dra'].get('readable') is False:
        warnings.append(result['dra']['reason'] + '.')
    result.update(changed=False, warnings=warnings)
    return result
