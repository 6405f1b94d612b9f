# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU node inventory as Ansible sees it: host names, group names, host and group variables.

Pure (dicts in, dicts out) logic behind the inventory plugin ``gpuops.gpu.gpu_nodes``; the plugin
reads the clusters (``ops/inventory.py`` ``gpu_node_records``) and hands them to ``build_inventory``.

* A host per GPU node: its node name with one cluster, ``<cluster>_<node>`` with several (node
  names are unique per cluster only). With ``cluster_hosts`` also one host per cluster, named after
  the cluster, in the group ``gpu_clusters``.
* Groups (lowercase, every run of characters other than ``[a-z0-9_]`` turned into one ``_``, see
  ``safe_name``): ``gpu_nodes`` (every node host), ``product_<product>`` (``product_unknown`` for a
  node without the GFD product label), ``mig_config_<config>``, ``mig_state_<state>`` (only nodes
  with these labels), ``sharing_<strategy>`` (``sharing_none`` without sharing), ``pool_<value>``
  (the value of the pool label), ``cordoned``, ``ready`` / ``not_ready``, ``cluster_<cluster>``,
  ``gpu_stack_<stack>`` (the stack that serves the node, ``gpu/dra_fleet.py``: ``gpu_stack_device_plugin``,
  ``gpu_stack_dra``, ``gpu_stack_both``, ``gpu_stack_none``).
* Host variables: ``HOST_VARS`` maps the keys of ``gpu/node.py`` ``node_gpu_info`` to
  ``gpuops_*`` names, plus ``gpuops_cluster``, ``gpuops_pool`` and ``gpuops_labels`` (the labels
  asked for). The ``cluster_<cluster>`` group carries the cluster's non-secret connection settings.

Two values that differ only in characters the group names cannot hold (``A-B`` and ``a_b``) share a
group. Two hosts that would get the same name are an error (``InventoryNameError``) rather than one
host hiding another.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import Fields, Items, bool_errors, string_errors
from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import CONNECTION_VARS, SECRET_CONNECTION_OPTIONS
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import dra_fleet
from ansible_collections.gpuops.gpu.plugins.module_utils.common.errors import InputError

DEFAULT_POOL_LABEL = 'gpuops.dev/pool'
GROUP_NODES = 'gpu_nodes'
GROUP_CLUSTERS = 'gpu_clusters'
UNKNOWN = 'unknown'

# node_gpu_info() key -> host variable
HOST_VARS = (
    ('name', 'gpuops_node_name'),
    ('product', 'gpuops_product'),
    ('product_label', 'gpuops_product_label'),
    ('count', 'gpuops_gpu_count'),
    ('memory_mib', 'gpuops_gpu_memory_mib'),
    ('mig_capable', 'gpuops_mig_capable'),
    ('mig_strategy', 'gpuops_mig_strategy'),
    ('mig_config', 'gpuops_mig_config'),
    ('mig_state', 'gpuops_mig_state'),
    ('mig_devices', 'gpuops_mig_devices'),
    ('sharing_strategy', 'gpuops_sharing'),
    ('replicas', 'gpuops_sharing_replicas'),
    ('device_plugin_config', 'gpuops_device_plugin_config'),
    ('capacity', 'gpuops_capacity'),
    ('allocatable', 'gpuops_allocatable'),
    ('requested', 'gpuops_requested'),
    ('free', 'gpuops_free'),
    ('gpu_pods', 'gpuops_gpu_pods'),
    ('unschedulable', 'gpuops_cordoned'),
    ('ready', 'gpuops_ready'),
    ('taints', 'gpuops_taints'),
    ('stack', 'gpuops_stack'),
    ('dra_devices', 'gpuops_dra_devices'),
    ('dra_counts', 'gpuops_dra_counts'),
)

# the connection settings of one cluster, as kubernetes.core names them
AUTH_KEYS = ('kubeconfig', 'context', 'host', 'api_key', 'username', 'password', 'client_cert', 'client_key',
             'ca_cert', 'validate_certs', 'proxy', 'no_proxy')
SECRET_KEYS = ('api_key', 'password')
_CLUSTER_NAME = re.compile(r'^[A-Za-z0-9][A-Za-z0-9_.-]*$')
_UNSAFE = re.compile(r'[^a-z0-9_]+')


class InventoryNameError(InputError, ValueError):
    """Two hosts of the inventory would have the same name."""


def safe_name(value):
    """``value`` as a part of a group name: lowercase, runs of other characters than ``[a-z0-9_]``
    as one ``_``, no ``_`` at either end; ``unknown`` when nothing is left."""
    text = _UNSAFE.sub('_', str(value).lower()).strip('_')
    return text or UNKNOWN


def group_name(prefix, value):
    """``<prefix>_<safe_name(value)>``: always a valid Ansible group name (never starts with a digit)."""
    return '%s_%s' % (prefix, safe_name(value))


def cluster_name_from_server(server):
    """A cluster name from its API server URL: ``https://api.prod.example.com:6443`` ->
    ``api_prod_example_com_6443``."""
    text = re.sub(r'^[a-z][a-z0-9+.-]*://', '', str(server or ''), flags=re.I).rstrip('/')
    return safe_name(text)


def node_host_name(cluster, node, several):
    """The host of a node: its name, or ``<cluster>_<node>`` when the inventory has several clusters."""
    return '%s_%s' % (cluster, node) if several else node


def _name_errors(value, path):
    errors = string_errors(value, path)
    if not errors and not _CLUSTER_NAME.match(value):
        errors.append("%s '%s' must start with a letter or digit and hold only letters, digits, '_', '.' and '-'"
                      % (path, value))
    return errors


def _str_or_mapping(value, path):
    return [] if isinstance(value, dict) else string_errors(value, path)


def _connection_check():
    fields = dict((key, string_errors) for key in AUTH_KEYS)
    fields.update(name=_name_errors, kubeconfig=_str_or_mapping, validate_certs=bool_errors,
                  label_selector=string_errors)
    return Items(Fields(fields, required={'name': 'a name for the cluster (hosts become <name>_<node>)'}))


def connection_errors(connections):
    """Every error of the ``connections`` option at once: unknown keys, names missing, malformed or
    used twice."""
    errors = _connection_check()(connections, 'connections')
    if errors:
        return errors
    seen = {}
    for index, conn in enumerate(connections):
        seen.setdefault(conn['name'], []).append(index)
    errors.extend("connections: the name '%s' is used by entries %s; each cluster needs its own name"
                  % (name, ', '.join(str(i) for i in indexes)) for name, indexes in seen.items() if len(indexes) > 1)
    return errors


def public_settings(auth):
    """The connection settings that may be shown (host variables, cache), under the playbook variables that set
    them (common/names.py CONNECTION_VARS), so a cluster host runs every playbook against its own cluster: no
    token, no password, and a kubeconfig only as a path."""
    out = {}
    for key, var in CONNECTION_VARS:
        if key in SECRET_CONNECTION_OPTIONS:
            continue
        if key == 'validate_certs' and isinstance(auth.get(key), bool):
            out[var] = auth[key]
        elif isinstance(auth.get(key), str) and auth.get(key):
            out[var] = auth[key]
    return out


def node_host_vars(info, cluster, pool_label=DEFAULT_POOL_LABEL):
    """The ``gpuops_*`` variables of one node host from its ``node_gpu_info()`` (with ``labels``: the
    node labels the inventory keeps)."""
    labels = dict(info.get('labels') or {})
    out = dict((var, info.get(key)) for key, var in HOST_VARS)
    out.update(gpuops_cluster=cluster, gpuops_pool=labels.get(pool_label), gpuops_labels=labels)
    return out


def node_groups(info, cluster, pool_label=DEFAULT_POOL_LABEL):
    """The groups of one node (see the module docstring), sorted."""
    labels = info.get('labels') or {}
    groups = {GROUP_NODES, group_name('cluster', cluster), group_name('product', info.get('product') or UNKNOWN),
              group_name('sharing', info.get('sharing_strategy') or 'none'),
              'ready' if info.get('ready') else 'not_ready'}
    for prefix, value in (('mig_config', info.get('mig_config')), ('mig_state', info.get('mig_state')),
                          ('pool', labels.get(pool_label)), ('gpu_stack', info.get('stack'))):
        if value:
            groups.add(group_name(prefix, value))
    if info.get('unschedulable'):
        groups.add('cordoned')
    return sorted(groups)


def cluster_host_vars(cluster):
    """The variables of a cluster host: its name, API server and the fleet totals
    (``gpu/dra_fleet.py`` ``summary`` of its GPU nodes)."""
    return {'gpuops_cluster': cluster['name'], 'gpuops_cluster_server': cluster.get('server'),
            'gpuops_fleet_summary': dra_fleet.summary(cluster.get('nodes') or [])}


def _add_host(inventory, host, hostvars, groups, owner):
    if host in inventory['hosts']:
        inventory['clashes'].setdefault(host, [inventory['owners'][host]]).append(owner)
        return
    inventory['hosts'][host] = hostvars
    inventory['owners'][host] = owner
    for group in groups:
        inventory['groups'].setdefault(group, []).append(host)


def build_inventory(clusters, pool_label=DEFAULT_POOL_LABEL, cluster_hosts=False):
    """The inventory of ``clusters`` (each ``{'name', 'server', 'settings', 'nodes'}``, ``nodes`` as
    ``ops/inventory.py`` ``gpu_node_records`` returns them): ``{'hosts': {host: vars}, 'groups':
    {group: [hosts]}, 'group_vars': {group: vars}}``, groups and their hosts sorted.

    Raises InventoryNameError when two hosts would have the same name."""
    several = len(clusters) > 1
    inventory = {'hosts': {}, 'groups': {}, 'owners': {}, 'clashes': {},
                 'group_vars': dict((group_name('cluster', c['name']), dict(
                     c.get('settings') or {}, gpuops_cluster=c['name'], gpuops_cluster_server=c.get('server')))
                     for c in clusters)}
    for cluster in clusters:
        name = cluster['name']
        if cluster_hosts:
            _add_host(inventory, name, cluster_host_vars(cluster), [GROUP_CLUSTERS, group_name('cluster', name)],
                      'cluster %s' % name)
        for info in cluster.get('nodes') or []:
            _add_host(inventory, node_host_name(name, info['name'], several), node_host_vars(info, name, pool_label),
                      node_groups(info, name, pool_label), 'node %s of cluster %s' % (info['name'], name))
    if inventory['clashes']:
        raise InventoryNameError('Two hosts would have the same name: %s. Rename a cluster (connections[].name) so '
                                 'that no cluster name, node name or <cluster>_<node> is used twice.' % '; '.join(
                                     '%s (%s)' % (host, ', '.join(owners))
                                     for host, owners in sorted(inventory['clashes'].items())))
    groups = dict((group, sorted(hosts)) for group, hosts in sorted(inventory['groups'].items()))
    return {'hosts': inventory['hosts'], 'groups': groups, 'group_vars': inventory['group_vars']}
