"""The inventory plugin gpuops.gpu.gpu_nodes on the virtual GPU cluster: ``ansible-inventory --list`` with a
kubeconfig at a path of its own or with the K8S_AUTH_* variables only (never ~/.kube/config: HOME is empty),
several clusters in one source, clear failures, and an AWX-style job through ansible-runner whose play targets
a product group of the inventory source.

What the groups and variables must be is derived from the testbed's config (node groups, products, GPUs per
node, labels) and from the cluster as the kubernetes client reads it, not from the plugin's code.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml
from awx_job import account_token, bearer_token_credential, run_job
from conftest import REPO, gpu_pod, wait_until

SA, SA_NS = 'gpuops-inventory', 'gpuops-inventory'
# the source of the AWX inventory the collection defines (extensions/awx/inventories.yml)
AWX_SOURCE = os.path.join(REPO, 'extensions', 'awx', 'inventory', 'gpu_fleet.gpu_nodes.yml')
GROUP_LABEL = 'gpuops.dev/node-group'
POOL_LABEL = 'gpuops.dev/pool'
NOT_TERMINAL = ('Succeeded', 'Failed')


def safe(value):
    """Group-name part: lowercase, other characters than [a-z0-9_] as one '_' (docs/inventory.md)."""
    return re.sub(r'[^a-z0-9_]+', '_', value.lower()).strip('_')


def gpu_groups(testbed):
    return [g for g in testbed.config['node_groups'] if int(g.get('gpus_per_node') or 0) and int(g['count'])]


@pytest.fixture(scope='module')
def gpu_nodes(testbed, core):
    """{node name: its testbed node group} of the GPU nodes, once GFD labelled them and the device plugin
    advertised their GPUs."""
    groups = dict((g['name'], g) for g in gpu_groups(testbed))

    def labelled():
        nodes = [n for n in core.list_node().items if (n.metadata.labels or {}).get(GROUP_LABEL) in groups]
        done = all((n.metadata.labels or {}).get('nvidia.com/gpu.product') and
                   (n.status.allocatable or {}).get('nvidia.com/gpu') for n in nodes)
        return done and dict((n.metadata.name, groups[n.metadata.labels[GROUP_LABEL]]) for n in nodes)
    return wait_until('GFD labels and GPU allocatable on every GPU node', labelled, 180)


@pytest.fixture(scope='module')
def token(testbed, core):
    """A ServiceAccount token bound only to the read-only gpuops-gpu-report ClusterRole (roles/rbac)."""
    return account_token(testbed, core, SA, SA_NS, ['report'])


def bearer_env(testbed, token, tmp_path):
    """What AWX's bearer-token credential injects: K8S_AUTH_HOST, _API_KEY, _VERIFY_SSL, _SSL_CA_CERT."""
    cred = bearer_token_credential(testbed.kubeconfig, token)
    ca_file = tmp_path / 'ca.crt'
    ca_file.write_text(cred['ssl_ca_cert'])
    return {'K8S_AUTH_HOST': cred['host'], 'K8S_AUTH_API_KEY': token, 'K8S_AUTH_VERIFY_SSL': 'true',
            'K8S_AUTH_SSL_CA_CERT': str(ca_file)}


def inventory(tmp_path, source, env_vars, name='gpu.gpu_nodes.yml'):
    """``ansible-inventory -i <source> --list``: (rc, parsed output or None, stdout + stderr). The cluster is
    reached only through ``env_vars`` and the source: no K8S_AUTH_*/KUBECONFIG of the test, an empty HOME."""
    path = tmp_path / name
    path.write_text(yaml.safe_dump(source))
    home = tmp_path / 'home'
    home.mkdir(exist_ok=True)
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith('K8S_AUTH_') and k != 'KUBECONFIG')
    env.update(env_vars, HOME=str(home), ANSIBLE_INVENTORY_UNPARSED_FAILED='true', ANSIBLE_NOCOLOR='1')
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-inventory'), '-i', str(path),
                           '--list'], env=env, capture_output=True, text=True, timeout=120, check=False)
    data = plain(json.loads(proc.stdout)) if proc.returncode == 0 else None
    return proc.returncode, data, proc.stdout + proc.stderr


def plain(value):
    """ansible-inventory's JSON with strings as they are: ansible-core 2.19 writes every host variable string an
    inventory plugin set as {"__ansible_unsafe": "..."} (never templated); earlier versions only the unsafe ones."""
    if isinstance(value, dict):
        if set(value) == {'__ansible_unsafe'}:
            return value['__ansible_unsafe']
        return dict((k, plain(v)) for k, v in value.items())
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def hosts_of(data, group):
    return sorted((data.get(group) or {}).get('hosts') or [])


def expected_requested(core, node):
    """nvidia.com/gpu the non-terminal pods bound to ``node`` ask for (limits: the test's pods set only those)."""
    total = 0
    for pod in core.list_pod_for_all_namespaces(field_selector='spec.nodeName=%s' % node).items:
        if pod.status.phase in NOT_TERMINAL:
            continue
        for ctr in pod.spec.containers:
            total += int(((ctr.resources and ctr.resources.limits) or {}).get('nvidia.com/gpu', 0))
    return total


def test_kubeconfig_source_groups_and_host_variables(testbed, core, gpu_nodes, namespace, tmp_path):
    kubeconfig = tmp_path / 'clusters' / 'prod.kubeconfig'
    kubeconfig.parent.mkdir()
    shutil.copy(testbed.kubeconfig, kubeconfig)
    cordoned = sorted(gpu_nodes)[-1]
    busy = sorted(gpu_nodes)[0]
    core.create_namespaced_pod(namespace, gpu_pod('train', busy, limits={'nvidia.com/gpu': '2'}))
    core.patch_node(cordoned, {'spec': {'unschedulable': True}})
    try:
        rc, data, raw = inventory(tmp_path, {
            'plugin': 'gpuops.gpu.gpu_nodes', 'cluster_name': 'prod', 'host_labels': [GROUP_LABEL],
            'kubeconfig': str(kubeconfig),
            'compose': {'gpus_total': "gpuops_allocatable['nvidia.com/gpu'] | default(0)"},
            'groups': {'eight_gpus': 'gpuops_gpu_count == 8'},
            'keyed_groups': [{'key': "gpuops_labels['%s']" % GROUP_LABEL, 'prefix': 'group'}],
        }, {})
    finally:
        core.patch_node(cordoned, {'spec': {'unschedulable': False}})
    assert rc == 0, raw[-4000:]
    hostvars = data['_meta']['hostvars']
    assert sorted(hostvars) == sorted(gpu_nodes) == hosts_of(data, 'gpu_nodes') == hosts_of(data, 'cluster_prod')
    for group in gpu_groups(testbed):
        members = sorted(n for n, g in gpu_nodes.items() if g['name'] == group['name'])
        assert hosts_of(data, 'group_' + group['name']) == members  # keyed_groups on a chosen label
        assert hosts_of(data, 'product_' + safe(group['gpu_product'])) == sorted(
            n for n, g in gpu_nodes.items() if g['gpu_product'] == group['gpu_product'])
        pool = (group.get('labels') or {}).get(POOL_LABEL)
        assert hosts_of(data, 'pool_' + safe(pool or 'none')) == sorted(
            n for n, g in gpu_nodes.items() if pool and (g.get('labels') or {}).get(POOL_LABEL) == pool)
    assert hosts_of(data, 'sharing_none') == sorted(gpu_nodes)  # nothing shared on a fresh cluster
    assert hosts_of(data, 'eight_gpus') == sorted(n for n, g in gpu_nodes.items() if int(g['gpus_per_node']) == 8)
    assert hosts_of(data, 'cordoned') == [cordoned]
    assert hosts_of(data, 'ready') == sorted(gpu_nodes)
    for name, group in gpu_nodes.items():
        node = core.read_node(name)
        host = hostvars[name]
        assert host['gpuops_cluster'] == 'prod' and host['gpuops_node_name'] == name
        assert host['gpuops_product'] == group['gpu_product']
        assert host['gpuops_gpu_count'] == int(group['gpus_per_node'])
        assert host['gpuops_pool'] == (group.get('labels') or {}).get(POOL_LABEL)
        assert host['gpuops_labels'][GROUP_LABEL] == group['name']
        assert host['gpuops_allocatable'] == dict(
            (k, int(v)) for k, v in node.status.allocatable.items() if k.startswith('nvidia.com/'))
        assert host['gpus_total'] == int(node.status.allocatable['nvidia.com/gpu'])
        assert host['gpuops_requested'].get('nvidia.com/gpu', 0) == expected_requested(core, name)
        assert host['gpuops_kubeconfig'] == str(kubeconfig)  # the cluster group's variable, as the playbooks read it
    assert hostvars[busy]['gpuops_requested']['nvidia.com/gpu'] >= 2
    assert hostvars[cordoned]['gpuops_cordoned'] is True


def test_bearer_token_environment_and_several_clusters(testbed, gpu_nodes, token, tmp_path):
    env = bearer_env(testbed, token, tmp_path)
    # as an AWX inventory update runs it (ansible/awx awx/main/constants.py STANDARD_INVENTORY_UPDATE_ENV)
    rc, data, raw = inventory(tmp_path, {'plugin': 'gpuops.gpu.gpu_nodes'},
                              dict(env, ANSIBLE_INVENTORY_EXPORT='True', ANSIBLE_VERBOSE_TO_STDERR='True'))
    assert rc == 0, raw[-4000:]
    derived = 'cluster_' + safe(re.sub(r'^https?://', '', env['K8S_AUTH_HOST']))
    assert hosts_of(data, derived) == hosts_of(data, 'gpu_nodes') == sorted(gpu_nodes)
    assert data[derived]['vars']['gpuops_cluster_server'] == env['K8S_AUTH_HOST'].rstrip('/')
    assert data['_meta']['hostvars'][sorted(gpu_nodes)[0]]['gpuops_allocatable']['nvidia.com/gpu'] > 0
    assert token not in raw
    # the same cluster twice, once from a kubeconfig and once from a token (in the source, not the environment)
    rc, data, raw = inventory(tmp_path, {
        'plugin': 'gpuops.gpu.gpu_nodes', 'cluster_hosts': True, 'include_pods': False,
        'connections': [{'name': 'site-a', 'kubeconfig': testbed.kubeconfig},
                        {'name': 'site-b', 'host': env['K8S_AUTH_HOST'], 'api_key': token,
                         'ca_cert': env['K8S_AUTH_SSL_CA_CERT'], 'label_selector': POOL_LABEL + '=training'}],
    }, {}, name='fleet.gpu_nodes.yml')
    assert rc == 0, raw[-4000:]
    training = sorted(n for n, g in gpu_nodes.items() if (g.get('labels') or {}).get(POOL_LABEL) == 'training')
    assert training, 'the default testbed config has a training pool'
    assert hosts_of(data, 'cluster_site_a') == sorted(['site-a'] + ['site-a_' + n for n in gpu_nodes])
    assert hosts_of(data, 'cluster_site_b') == sorted(['site-b'] + ['site-b_' + n for n in training])
    assert hosts_of(data, 'gpu_clusters') == ['site-a', 'site-b']
    assert hosts_of(data, 'pool_training') == sorted(['site-a_' + n for n in training] +
                                                     ['site-b_' + n for n in training])
    hostvars = data['_meta']['hostvars']
    assert hostvars['site-b']['gpuops_fleet_summary']['gpu_nodes'] == len(training)
    assert hostvars['site-b_' + training[0]]['gpuops_requested'] is None  # include_pods: false
    assert hostvars['site-b_' + training[0]]['gpuops_cluster'] == 'site-b'
    assert token not in raw, 'a token is never an inventory variable'


@pytest.mark.parametrize('source, message', [
    ({'connections': [{'name': 'down', 'host': 'https://127.0.0.1:1', 'api_key': 'x'}]},
     'gpuops.gpu.gpu_nodes: cluster down: Could not connect to the Kubernetes API'),
    ({'kubeconfig': '/nonexistent/kubeconfig'},
     'gpuops.gpu.gpu_nodes: the kubeconfig file /nonexistent/kubeconfig does not exist'),
    ({'connections': [{'name': 'a', 'kubeconfig': '/k'}, {'name': 'a', 'contxt': 'c'}]},
     "unknown key 'contxt'; did you mean 'context'?"),
])
def test_clear_failures(tmp_path, source, message):
    rc, _data, raw = inventory(tmp_path, dict(source, plugin='gpuops.gpu.gpu_nodes'), {})
    assert rc != 0 and message in raw, raw[-3000:]
    assert 'Traceback' not in raw


def test_awx_job_targets_a_product_group_of_the_inventory_source(testbed, gpu_nodes, token, tmp_path):
    product = sorted(g['gpu_product'] for g in gpu_groups(testbed))[0]
    members = sorted(n for n, g in gpu_nodes.items() if g['gpu_product'] == product)
    play = [{'name': 'One line per %s node' % product, 'hosts': 'product_' + safe(product), 'connection': 'local',
             'gather_facts': False, 'tasks': [{'name': 'Report the node', 'ansible.builtin.debug': {
                 'msg': '{{ gpuops_node_name }} {{ gpuops_pool }} {{ gpuops_allocatable | to_json }}'}}]}]
    job = run_job(tmp_path, {'name': 'gpu inventory report', 'playbook': 'playbooks/inventory_report.yml'},
                  bearer_token_credential(testbed.kubeconfig, token), ident='inventory',
                  project_files={'playbooks/inventory_report.yml': yaml.safe_dump(play)},
                  inventory_files={'gpu_fleet.gpu_nodes.yml': open(AWX_SOURCE).read()})
    assert (job.status, job.rc) == ('successful', 0), job.stdout[-4000:]
    reported = dict((e['event_data']['host'], e['event_data']['res']['msg']) for e in job.events
                    if e.get('event') == 'runner_on_ok' and e['event_data'].get('task') == 'Report the node')
    assert sorted(reported) == members
    for name in members:
        assert reported[name].startswith('%s %s {' % (name, (gpu_nodes[name].get('labels') or {}).get(POOL_LABEL)))
    # the source's cluster host (group gpu_clusters) is what every playbook of the collection targets with
    # gpuops_clusters=gpu_clusters (docs/multi-cluster.md): the fleet report runs once, for that cluster
    job = run_job(tmp_path, {'name': 'report', 'playbook': 'playbooks/report.yml',
                             'extra_vars': {'gpuops_clusters': 'gpu_clusters'}},
                  bearer_token_credential(testbed.kubeconfig, token), ident='clusters',
                  inventory_files={'gpu_fleet.gpu_nodes.yml': open(AWX_SOURCE).read(),
                                   # the EE's python3 is the one with the kubernetes library; here, the test's
                                   'group_vars/gpu_clusters.yml': 'ansible_python_interpreter: %s\n' % sys.executable})
    assert (job.status, job.rc) == ('successful', 0), job.stdout[-4000:]
    recap = [e['event_data'] for e in job.events if e['event'] == 'playbook_on_stats'][-1]
    assert len(recap['ok']) == 1 and not set(recap['ok']) & set(gpu_nodes), recap['ok']
