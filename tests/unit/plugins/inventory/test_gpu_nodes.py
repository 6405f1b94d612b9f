# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The inventory plugin gpuops.gpu.gpu_nodes over fake clusters: options to connections, the cache, and what
lands in Ansible's inventory (with constructed variables and groups). On the virtual GPU cluster through
ansible-inventory and ansible-runner: tests/integration/test_inventory_plugin.py."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import types

import pytest

from ansible.errors import AnsibleParserError
from ansible.inventory.data import InventoryData
from ansible.parsing.dataloader import DataLoader

try:  # ansible-core 2.19: templates from a file the loader read are trusted; here they are given, so trust them
    from ansible.template import trust_as_template
except ImportError:  # older ansible-core templates every string
    def trust_as_template(value):
        return value

from ansible_collections.gpuops.gpu.plugins.inventory import gpu_nodes
from ansible_collections.gpuops.gpu.plugins.module_utils.k8s import client as k8s_client
from ansible_collections.gpuops.gpu.plugins.module_utils.ops import inventory as ops_inventory
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.gpu_cluster_data import (
    NO_DRA, NODES, PODS, FakeApiError, FakeCore,
)

OPTIONS = dict(connections=None, kubeconfig=None, context=None, host=None, api_key=None, username=None,
               password=None, client_cert=None, client_key=None, ca_cert=None, validate_certs=None,
               cluster_name=None, label_selector=None, include_pods=True, pool_label='gpuops.dev/pool',
               host_labels=[], cluster_hosts=False, cache=False, compose={}, groups={}, keyed_groups=[],
               strict=False, use_extra_vars=False, leading_separator=True)


@pytest.fixture
def opened(monkeypatch):
    """Every Connection the plugin opens: its auth settings; each reads NODES and PODS (or ``fail``)."""
    made = []
    real = k8s_client.Connection

    def connection(auth=None):
        conn = real(core=FakeCore(NODES, PODS, fail=opened_fail.get(auth.get('host'))), custom=NO_DRA)
        conn.client = types.SimpleNamespace(configuration=types.SimpleNamespace(
            host=auth.get('host') or 'https://api.%s.example.com:6443' % (auth.get('context') or 'default')))
        made.append(auth)
        return conn
    opened_fail = {}
    monkeypatch.setattr(k8s_client, 'Connection', connection)
    monkeypatch.setattr(ops_inventory.os.path, 'isfile', lambda path: path != '/missing')
    return types.SimpleNamespace(auth=made, fail=opened_fail)


def plugin(origins=None, **options):
    """The plugin with these options; ``origins``: where some came from (ansible's origin strings), else 'Direct'."""
    inv = gpu_nodes.InventoryModule()
    inv._load_name = 'gpuops.gpu.gpu_nodes'  # what the plugin loader sets (ansible-core < 2.19 reads it)
    inv._options = dict(OPTIONS, **options)
    inv._origins = dict(dict.fromkeys(inv._options, 'Direct'), **(origins or {}))
    inv.loader = DataLoader()
    inv.inventory = InventoryData()
    inv._vars = {}
    inv._cache = {}
    inv.get_cache_key = lambda path: 'key-' + path
    return inv


def run(inv, cache=True):
    clusters = inv._cached_clusters('fleet.gpu_nodes.yml', cache)
    inv._populate(gpu_nodes.groups.build_inventory(clusters, pool_label=inv.get_option('pool_label'),
                                                   cluster_hosts=inv.get_option('cluster_hosts')))
    return inv.inventory


def members(inventory, group):
    return sorted(h.name for h in inventory.groups[group].get_hosts()) if group in inventory.groups else []


def test_one_cluster_from_the_options(opened):
    inventory = run(plugin(kubeconfig='~/kube/prod', context='admin', cluster_name='prod'))
    assert len(opened.auth) == 1 and opened.auth[0]['context'] == 'admin'
    assert opened.auth[0]['kubeconfig'].endswith('/kube/prod') and not opened.auth[0]['kubeconfig'].startswith('~')
    assert sorted(inventory.hosts) == ['a100-0', 'h100-0', 'l40s-0', 'plain-0', 't4-0']
    assert members(inventory, 'product_nvidia_h100_80gb_hbm3') == ['h100-0']
    assert members(inventory, 'cluster_prod') == sorted(inventory.hosts)
    assert inventory.groups['cluster_prod'].vars['gpuops_context'] == 'admin'
    assert inventory.hosts['a100-0'].vars['gpuops_requested'] == {'nvidia.com/gpu': 4}


def test_settings_from_the_environment_are_not_cluster_variables(opened):
    """An AWX inventory update gets its credential as K8S_AUTH_* (a kubeconfig in a private file of that update):
    the cluster group must not name that file, the job that targets the cluster gets its own credential."""
    inventory = run(plugin(origins={'kubeconfig': 'env: K8S_AUTH_KUBECONFIG'}, kubeconfig='/runner/env/tmp1a2b',
                           context='admin', cluster_name='prod'))
    assert opened.auth[0]['kubeconfig'] == '/runner/env/tmp1a2b', 'the update itself reads through it'
    assert inventory.groups['cluster_prod'].vars.get('gpuops_kubeconfig') is None
    assert inventory.groups['cluster_prod'].vars['gpuops_context'] == 'admin', 'the source file gave this one'


def test_without_a_name_the_cluster_is_named_after_its_server(opened):
    inventory = run(plugin(host='https://10.0.0.1:6443', api_key='sEcReT'))
    assert 'cluster_10_0_0_1_6443' in inventory.groups
    assert 'sEcReT' not in repr(inventory.groups['cluster_10_0_0_1_6443'].vars)
    assert opened.auth[0]['api_key'] == 'sEcReT'


def test_several_clusters_with_their_own_selector(opened):
    inventory = run(plugin(label_selector='gpuops.dev/pool', cluster_hosts=True, connections=[
        {'name': 'prod', 'context': 'prod'},
        {'name': 'lab', 'context': 'lab', 'label_selector': 'gpuops.dev/pool=inference'}]))
    assert [a['context'] for a in opened.auth] == ['prod', 'lab']
    assert members(inventory, 'cluster_lab') == ['lab', 'lab_t4-0']
    assert members(inventory, 'cluster_prod') == ['prod', 'prod_a100-0', 'prod_h100-0', 'prod_t4-0']
    assert members(inventory, 'gpu_clusters') == ['lab', 'prod']
    assert inventory.hosts['lab'].vars['gpuops_fleet_summary']['gpu_nodes'] == 1
    assert inventory.hosts['lab_t4-0'].vars['gpuops_node_name'] == 't4-0'


def test_constructed_variables_and_groups(opened):
    trusted = trust_as_template
    inventory = run(plugin(cluster_name='prod', host_labels=['kubernetes.io/os'], strict=True,
                           compose={'free_gpus': trusted("gpuops_free['nvidia.com/gpu'] | default(0)")},
                           groups={'idle': trusted('gpuops_gpu_pods | length == 0')},
                           keyed_groups=[{'key': trusted("gpuops_labels['kubernetes.io/os']"), 'prefix': 'os'}]))
    assert inventory.hosts['a100-0'].vars['free_gpus'] == 52
    assert members(inventory, 'idle') == ['plain-0']
    assert members(inventory, 'os_linux') == sorted(inventory.hosts)


def test_the_cache_is_used_and_refreshed(opened):
    inv = plugin(cluster_name='prod', cache=True)
    first = inv._cached_clusters('fleet.gpu_nodes.yml', True)
    assert len(opened.auth) == 1 and inv._cache['key-fleet.gpu_nodes.yml'] == first
    assert inv._cached_clusters('fleet.gpu_nodes.yml', True) == first and len(opened.auth) == 1
    inv._cached_clusters('fleet.gpu_nodes.yml', False)  # --flush-cache
    assert len(opened.auth) == 2
    off = plugin(cluster_name='prod')
    off._cached_clusters('fleet.gpu_nodes.yml', True)
    assert off._cache == {} and len(opened.auth) == 3


@pytest.mark.parametrize('options, message', [
    ({'connections': [{'name': 'a'}, {'name': 'a'}]}, "the name 'a' is used by entries 0, 1"),
    ({'kubeconfig': '/missing'}, 'the kubeconfig file /missing does not exist'),
    ({'connections': [{'name': 'prod', 'host': 'https://down'}]},
     'cluster prod: Could not list nodes: 403 Forbidden: nodes is forbidden'),
])
def test_errors_are_parser_errors_with_the_reason(opened, monkeypatch, options, message):
    opened.fail['https://down'] = {('NodeList', 1): FakeApiError(403, 'Forbidden', 'nodes is forbidden')}
    inv = plugin(**options)
    monkeypatch.setattr(inv, '_read_config_data', lambda path: None)
    with pytest.raises(AnsibleParserError) as err:
        inv.parse(InventoryData(), DataLoader(), 'fleet.gpu_nodes.yml')
    assert str(err.value).startswith('gpuops.gpu.gpu_nodes: ') and message in str(err.value)


def test_only_gpu_nodes_files(tmp_path):
    for name, ok in (('prod.gpu_nodes.yml', True), ('gpu_nodes.yaml', True), ('prod.k8s.yml', False)):
        path = tmp_path / name
        path.write_text('plugin: gpuops.gpu.gpu_nodes\n')
        assert gpu_nodes.InventoryModule().verify_file(str(path)) is ok


def test_only_strings_that_look_like_templates_are_marked_unsafe(monkeypatch):
    monkeypatch.setattr(gpu_nodes, 'wrap_var', lambda value: ('UNSAFE', value))
    value = gpu_nodes.unsafe({'a': ['plain', '{{ lookup("pipe", "id") }}'], 'b': {'c': 'x}'}, 'n': 3})
    assert value == {'a': ['plain', ('UNSAFE', '{{ lookup("pipe", "id") }}')], 'b': {'c': ('UNSAFE', 'x}')}, 'n': 3}
