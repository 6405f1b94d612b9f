# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
name: gpu_nodes
author:
  - gpuops.gpu contributors (@gpuops)
version_added: 0.1.0
short_description: The NVIDIA GPU nodes of one or several Kubernetes or OpenShift clusters as inventory hosts
description:
  - One host per GPU node (a node with the GFD/NFD GPU labels or GPU capacity), named after the node; with several
    clusters C(<cluster>_<node>). Optionally one host per cluster as well (O(cluster_hosts)).
  - 'Groups: C(gpu_nodes) (every node host), C(product_<product>) (C(product_unknown) without the GFD product label),
    C(mig_config_<config>), C(mig_state_<state>), C(sharing_<strategy>) (C(sharing_none) without sharing),
    C(pool_<value>) (the O(pool_label)), C(cordoned), C(ready) or C(not_ready), C(cluster_<cluster>), the stack that
    serves the node (C(gpu_stack_device_plugin), C(gpu_stack_dra), C(gpu_stack_both), C(gpu_stack_none)), and with
    O(cluster_hosts) C(gpu_clusters). A group name is the value lowercased, every run of characters other than
    letters, digits and C(_) turned into one C(_): C(NVIDIA-H100-80GB-HBM3) gives C(product_nvidia_h100_80gb_hbm3),
    C(all-1g.5gb) gives C(mig_config_all_1g_5gb).'
  - 'Host variables, all prefixed C(gpuops_): C(gpuops_cluster), C(gpuops_node_name), C(gpuops_product),
    C(gpuops_product_label), C(gpuops_gpu_count), C(gpuops_gpu_memory_mib), C(gpuops_mig_capable),
    C(gpuops_mig_strategy), C(gpuops_mig_config), C(gpuops_mig_state), C(gpuops_mig_devices), C(gpuops_sharing),
    C(gpuops_sharing_replicas), C(gpuops_device_plugin_config), C(gpuops_capacity), C(gpuops_allocatable),
    C(gpuops_requested), C(gpuops_free), C(gpuops_gpu_pods), C(gpuops_cordoned), C(gpuops_ready), C(gpuops_taints),
    C(gpuops_stack), C(gpuops_dra_devices), C(gpuops_dra_counts), C(gpuops_pool) and C(gpuops_labels) (the node
    labels of O(host_labels) and O(pool_label)). They mean what the
    return values of the same name of M(gpuops.gpu.gpu_nodes_info) mean (C(gpuops_stack), C(gpuops_dra_devices),
    C(gpuops_dra_counts): RV(gpuops.gpu.gpu_nodes_info#module:nodes[].stack) and the others of that name).'
  - A cluster host has C(gpuops_cluster), C(gpuops_cluster_server) and C(gpuops_fleet_summary) (the RV(gpuops.gpu.gpu_nodes_info#module:summary)
    of its GPU nodes). The group C(cluster_<cluster>) has C(gpuops_cluster), C(gpuops_cluster_server) and the
    connection settings that are not secret (C(gpuops_kubeconfig) when a path, C(gpuops_context),
    C(gpuops_k8s_host), C(gpuops_k8s_ca_cert), C(gpuops_k8s_validate_certs), the variables every playbook of the
    collection reads, so a cluster host runs them against its cluster); tokens and passwords are never inventory variables.
  - Each cluster is read with one node list, at most one pod list and, where C(resource.k8s.io/v1) is served, one
    ResourceSlice and one ResourceClaim list (paginated), whatever the number of nodes.
  - The configuration file must end with C(gpu_nodes.yml) or C(gpu_nodes.yaml).
extends_documentation_fragment:
  - constructed
  - inventory_cache
requirements:
  - kubernetes >= 29.0.0 (Python)
  - the kubernetes.core collection
options:
  plugin:
    description: The name of this plugin; the file is for this plugin only when it is set to this.
    type: str
    required: true
    choices: ['gpuops.gpu.gpu_nodes']
  connections:
    description:
      - Several clusters in one inventory, one entry per cluster. The options O(kubeconfig), O(context), O(host),
        O(api_key), O(username), O(password), O(client_cert), O(client_key), O(ca_cert), O(validate_certs) and
        O(cluster_name) are then not used.
      - A setting an entry leaves out is taken from the E(K8S_AUTH_*) environment, as M(kubernetes.core.k8s) does.
    type: list
    elements: dict
    suboptions:
      name:
        description: The cluster's name in host and group names (C(<name>_<node>), C(cluster_<name>)); unique.
        type: str
        required: true
      kubeconfig:
        description: Path to a kubeconfig file, or the kubeconfig itself as a mapping.
        type: raw
      context:
        description: The kubeconfig context.
        type: str
      host:
        description: The API server URL.
        type: str
      api_key:
        description: A bearer token.
        type: str
      username:
        description: User name for basic authentication.
        type: str
      password:
        description: Password for basic authentication.
        type: str
      client_cert:
        description: Path to a client certificate file.
        type: str
      client_key:
        description: Path to the client certificate's key file.
        type: str
      ca_cert:
        description: Path to the CA certificate file the API server's certificate is checked against.
        type: str
      validate_certs:
        description: Whether to check the API server's certificate.
        type: bool
      proxy:
        description: An HTTP proxy URL.
        type: str
      no_proxy:
        description: Hosts to reach without the proxy, comma separated.
        type: str
      label_selector:
        description: O(label_selector) for this cluster.
        type: str
  kubeconfig:
    description: Path to a kubeconfig file (one cluster; see O(connections)).
    type: str
    env:
      - name: K8S_AUTH_KUBECONFIG
  context:
    description: The kubeconfig context.
    type: str
    env:
      - name: K8S_AUTH_CONTEXT
  host:
    description: The API server URL.
    type: str
    env:
      - name: K8S_AUTH_HOST
  api_key:
    description: A bearer token (an AWX/AAP "OpenShift or Kubernetes API Bearer Token" credential injects it).
    type: str
    env:
      - name: K8S_AUTH_API_KEY
  username:
    description: User name for basic authentication.
    type: str
    env:
      - name: K8S_AUTH_USERNAME
  password:
    description: Password for basic authentication.
    type: str
    env:
      - name: K8S_AUTH_PASSWORD
  client_cert:
    description: Path to a client certificate file.
    type: str
    env:
      - name: K8S_AUTH_CERT_FILE
  client_key:
    description: Path to the client certificate's key file.
    type: str
    env:
      - name: K8S_AUTH_KEY_FILE
  ca_cert:
    description: Path to the CA certificate file the API server's certificate is checked against.
    type: str
    env:
      - name: K8S_AUTH_SSL_CA_CERT
  validate_certs:
    description: Whether to check the API server's certificate.
    type: bool
    env:
      - name: K8S_AUTH_VERIFY_SSL
  cluster_name:
    description:
      - The name of the one cluster (groups C(cluster_<name>)); without it, the API server's address, for example
        C(api_prod_example_com_6443).
    type: str
  label_selector:
    description: Only nodes matching this label selector (Kubernetes syntax), for example V(gpuops.dev/pool=training).
    type: str
  include_pods:
    description:
      - Read the pods bound to the GPU nodes, for C(gpuops_requested), C(gpuops_free) and C(gpuops_gpu_pods).
      - With V(false) they are V(null) and each cluster is one request.
    type: bool
    default: true
  pool_label:
    description: The node label whose value names the node's pool (groups C(pool_<value>), C(gpuops_pool)).
    type: str
    default: gpuops.dev/pool
  host_labels:
    description: Node labels to copy into C(gpuops_labels) (for O(compose), O(groups) and O(keyed_groups)).
    type: list
    elements: str
    default: []
  cluster_hosts:
    description: Also add one host per cluster, named after the cluster, in the group C(gpu_clusters).
    type: bool
    default: false
notes:
  - Needs RBAC C(list) on C(nodes), C(resourceslices) and C(resourceclaims) (C(resource.k8s.io); without it the DRA
    view is left out) and, unless O(include_pods=false), C(list) on C(pods) in all namespaces (the
    C(gpuops-gpu-report) ClusterRole of the collection's C(docs/rbac.md) is enough).
  - A source that cannot be read (a cluster that is down, a bad option) is a warning of C(ansible-inventory) and
    an empty inventory unless E(ANSIBLE_INVENTORY_UNPARSED_FAILED) is true; an AWX/AAP inventory sync sets it, so
    the sync fails with the plugin's message.
  - Node hosts are not reachable over SSH by default. Plays that use them talk to the Kubernetes API, with
    C(connection=local) in the play, or set C(ansible_connection) with O(compose).
seealso:
  - module: gpuops.gpu.gpu_nodes_info
'''

EXAMPLES = r'''
---
# prod.gpu_nodes.yml: the cluster of the K8S_AUTH_* environment (an AWX credential) or of a kubeconfig
plugin: gpuops.gpu.gpu_nodes
kubeconfig: /home/ops/.kube/prod
cluster_name: prod
host_labels:
  - topology.kubernetes.io/zone

---
# fleet.gpu_nodes.yml: two clusters, hosts named <cluster>_<node>, one host per cluster, cached for 10 minutes
plugin: gpuops.gpu.gpu_nodes
connections:
  - name: prod
    kubeconfig: /home/ops/.kube/prod
  - name: lab
    kubeconfig: /home/ops/.kube/lab
    context: lab-admin
    label_selector: gpuops.dev/pool=training
cluster_hosts: true
include_pods: false
cache: true
cache_plugin: ansible.builtin.jsonfile
cache_connection: /tmp/gpuops-inventory
cache_timeout: 600

---
# Constructed groups and variables from the host variables
plugin: gpuops.gpu.gpu_nodes
compose:
  ansible_connection: "'local'"
  gpus_free: gpuops_free['nvidia.com/gpu'] | default(0)
groups:
  gpus_idle: (gpuops_requested or {}) | length == 0
keyed_groups:
  - key: gpuops_labels['topology.kubernetes.io/zone'] | default('none')
    prefix: zone
host_labels:
  - topology.kubernetes.io/zone
'''

import re

from ansible.errors import AnsibleParserError
from ansible.plugins.inventory import BaseInventoryPlugin, Cacheable, Constructable
from ansible.utils.unsafe_proxy import wrap_var

from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import inventory_groups as groups
from ansible_collections.gpuops.gpu.plugins.module_utils.common.errors import GpuOpsError
from ansible_collections.gpuops.gpu.plugins.module_utils.ops.inventory import read_cluster

NAME = 'gpuops.gpu.gpu_nodes'
_TEMPLATE_CHARS = re.compile('[{}]')


def unsafe(value):
    """``value`` with every string that could be read as a template marked unsafe (never templated); other
    strings stay plain, so ``ansible-inventory --list`` shows them as they are."""
    if isinstance(value, dict):
        return dict((unsafe(k), unsafe(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [unsafe(v) for v in value]
    if isinstance(value, str) and _TEMPLATE_CHARS.search(value):
        return wrap_var(value)
    return value


class InventoryModule(BaseInventoryPlugin, Constructable, Cacheable):
    """Thin: options in, ``ops/inventory.py`` reads each cluster, ``gpu/inventory_groups.py`` names the
    hosts and groups, the result goes into Ansible's inventory."""

    NAME = NAME

    def verify_file(self, path):
        return super(InventoryModule, self).verify_file(path) and path.endswith(('gpu_nodes.yml', 'gpu_nodes.yaml'))

    def parse(self, inventory, loader, path, cache=True):
        super(InventoryModule, self).parse(inventory, loader, path, cache)
        self._read_config_data(path)
        try:
            clusters = self._cached_clusters(path, cache)
            built = groups.build_inventory(clusters, pool_label=self.get_option('pool_label'),
                                           cluster_hosts=self.get_option('cluster_hosts'))
        except GpuOpsError as exc:
            raise AnsibleParserError('%s: %s' % (NAME, exc))
        self._populate(built)

    def _cached_clusters(self, path, cache):
        """The clusters as read (no secret in them), from the inventory cache when it is on and fresh."""
        key = self.get_cache_key(path)
        use_cache = self.get_option('cache')
        if use_cache and cache:
            try:
                return self._cache[key]
            except KeyError:
                pass
        clusters = [self._read_cluster(*conn) for conn in self._connections()]
        if use_cache:
            self._cache[key] = clusters
        return clusters

    def _connections(self):
        """``(name or None, kubernetes.core connection settings, label selector, the settings the source itself
        gives)`` per cluster. Only these become the cluster group's variables: a setting from the K8S_AUTH_*
        environment (an AWX credential) is the environment of this inventory update, and a job gets its own."""
        selector = self.get_option('label_selector')
        entries = self.get_option('connections')
        if not entries:
            keys = [key for key in groups.AUTH_KEYS if key not in ('proxy', 'no_proxy')]
            given = dict((key, self.get_option_and_origin(key)) for key in keys)
            auth = dict((key, value) for key, (value, _origin) in given.items())
            shown = dict((key, value) for key, (value, origin) in given.items() if not str(origin).startswith('env'))
            return [(self.get_option('cluster_name'), auth, selector, shown)]
        errors = groups.connection_errors(entries)
        if errors:
            raise GpuOpsError('the option connections is not valid: %s' % '; '.join(errors))
        out = []
        for entry in entries:
            auth = dict((key, entry.get(key)) for key in groups.AUTH_KEYS)
            out.append((entry['name'], auth, entry.get('label_selector') or selector, auth))
        return out

    def _read_cluster(self, name, auth, selector, shown):
        """One cluster's GPU nodes: ``{'name', 'server', 'settings', 'nodes'}``."""
        label_keys = list(self.get_option('host_labels') or []) + [self.get_option('pool_label')]
        try:
            server, nodes = read_cluster(auth, label_selector=selector, include_pods=self.get_option('include_pods'),
                                         label_keys=label_keys)
        except GpuOpsError as exc:
            raise GpuOpsError('%s%s' % ('cluster %s: ' % name if name else '', exc))
        return {'name': name or groups.cluster_name_from_server(server), 'server': server,
                'settings': groups.public_settings(shown), 'nodes': nodes}

    def _populate(self, built):
        for group, variables in built['group_vars'].items():
            self.inventory.add_group(group)
            for key, value in variables.items():
                self.inventory.set_variable(group, key, unsafe(value))
        for host, variables in built['hosts'].items():
            self.inventory.add_host(host)
            for key, value in variables.items():
                self.inventory.set_variable(host, key, unsafe(value))
        for group, hosts in built['groups'].items():
            self.inventory.add_group(group)
            for host in hosts:
                self.inventory.add_child(group, host)
        strict = self.get_option('strict')
        for host, variables in built['hosts'].items():
            self._set_composite_vars(self.get_option('compose'), variables, host, strict=strict)
            self._add_host_to_composed_groups(self.get_option('groups'), variables, host, strict=strict)
            self._add_host_to_keyed_groups(self.get_option('keyed_groups'), variables, host, strict=strict)
