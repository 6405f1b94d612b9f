"""Many clusters in one run (docs/multi-cluster.md): an inventory whose hosts are clusters, site.yml run once
for three virtual GPU clusters side by side (Ansible forks), each reached its own way - a kubeconfig file,
a context of a kubeconfig that names every cluster, an API URL with a ServiceAccount token and CA file -
and each configured with its own host variables (time-slicing replicas, quota). The default kubeconfig,
~/.kube/config and the current context all point at a fourth cluster, which must stay exactly as it was
(every object compared by resourceVersion, tests/integration/cluster_snapshot.py). Then the same run as an
AWX job (ansible-runner, one kubeconfig credential whose current context is the fourth cluster, a context per
inventory host) changes nothing anywhere."""

import base64
import contextlib
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
import yaml
from kubernetes import client, config

from ansible_run import callback_output
from awx_job import kubeconfig_credential, run_job
from cluster_snapshot import changes, settled_snapshot, snapshot
from conftest import REPO, create_namespace, virtual_gpu_cluster, wait_until
from policy_helpers import ensure_cluster_policy

TESTBED_CONFIG = os.path.join(os.path.dirname(__file__), '..', 'testbed', 'configs', 'tiny.yaml')
OP_NS = 'gpu-operator'
QUOTA_NS = 'qa-multi'
TARGETS = ('prod', 'staging', 'edge')
REPLICAS = {'prod': 2, 'staging': 3, 'edge': 4}  # per host: proves each cluster got its own variables
SA = 'gpuops-multi'


@pytest.fixture(scope='module')
def clusters(testbed):
    """The three target clusters (the module's ``testbed`` is the fourth, the default one), brought up side by side."""
    managers = [virtual_gpu_cluster('%s-%d' % (testbed.name, i + 1), TESTBED_CONFIG) for i in range(len(TARGETS))]
    with contextlib.ExitStack() as stack:
        with ThreadPoolExecutor(max_workers=len(managers)) as pool:
            entered = [pool.submit(manager.__enter__) for manager in managers]
        for manager, future in zip(managers, entered):
            if future.exception() is None:  # brought down on the way out, whatever else failed
                stack.push(manager)
        out = dict(zip(TARGETS, [future.result() for future in entered]))
        apis = dict((name, config.new_client_from_config(config_file=tb.kubeconfig)) for name, tb in out.items())
        with ThreadPoolExecutor(max_workers=len(apis)) as pool:  # the ClusterPolicy the roles read, ready
            list(pool.map(lambda api: ensure_cluster_policy(client.CustomObjectsApi(api)), apis.values()))
        for name, api in apis.items():
            create_namespace(client.CoreV1Api(api), QUOTA_NS)
            core = client.CoreV1Api(api)
            wait_until('GFD labels on %s' % name, lambda core=core: all(
                (core.read_node(n).metadata.labels or {}).get('nvidia.com/gpu.replicas') for n in ('a100-0', 't4-0')),
                120)
        yield out, apis


def _kubeconfig(path):
    with open(path) as handle:
        return yaml.safe_load(handle)


def _token(api):
    """A cluster-admin ServiceAccount token (how a token per cluster is usually handed out)."""
    core, rbac = client.CoreV1Api(api), client.RbacAuthorizationV1Api(api)
    create_namespace(core, SA)
    core.create_namespaced_service_account(SA, {'metadata': {'name': SA}})
    rbac.create_cluster_role_binding({
        'metadata': {'name': SA}, 'roleRef': {'apiGroup': 'rbac.authorization.k8s.io', 'kind': 'ClusterRole',
                                              'name': 'cluster-admin'},
        'subjects': [{'kind': 'ServiceAccount', 'name': SA, 'namespace': SA}]})
    core.create_namespaced_secret(SA, {'metadata': {'name': SA, 'annotations': {
        'kubernetes.io/service-account.name': SA}}, 'type': 'kubernetes.io/service-account-token'})
    data = wait_until('token of %s' % SA, lambda: core.read_namespaced_secret(SA, SA).data or {}, 60)
    return base64.b64decode(data['token']).decode()


@pytest.fixture(scope='module')
def access(testbed, clusters, tmp_path_factory):
    """How each target is reached, and the defaults that point at the fourth cluster: one kubeconfig naming all
    four clusters (current context: the fourth) as ~/.kube/config in a private HOME and as the AWX credential."""
    targets, apis = clusters
    root = tmp_path_factory.mktemp('multi')
    merged = {'apiVersion': 'v1', 'kind': 'Config', 'clusters': [], 'contexts': [], 'users': []}
    for tb in [testbed] + [targets[n] for n in TARGETS]:
        for key in ('clusters', 'contexts', 'users'):
            merged[key] += _kubeconfig(tb.kubeconfig)[key]
    merged['current-context'] = testbed.name
    home = root / 'home'
    (home / '.kube').mkdir(parents=True)
    (home / '.kube' / 'config').write_text(yaml.safe_dump(merged))
    (root / 'all-clusters').write_text(yaml.safe_dump(merged))
    edge = _kubeconfig(targets['edge'].kubeconfig)['clusters'][0]['cluster']
    (root / 'edge-ca.crt').write_bytes(base64.b64decode(edge['certificate-authority-data']))
    return {
        'home': str(home), 'merged_text': yaml.safe_dump(merged),
        'hosts': {
            'prod': {'gpuops_kubeconfig': targets['prod'].kubeconfig},
            'staging': {'gpuops_kubeconfig': str(root / 'all-clusters'), 'gpuops_context': targets['staging'].name},
            'edge': {'gpuops_k8s_host': edge['server'], 'gpuops_k8s_api_key': _token(apis['edge']),
                     'gpuops_k8s_ca_cert': str(root / 'edge-ca.crt')}},
        'contexts': dict((n, {'gpuops_context': targets[n].name}) for n in TARGETS),
    }


def inventory(host_access):
    """The inventory of docs/multi-cluster.md: a group of clusters, the roles' variables for all of them in the
    group, what differs per cluster (connection, replicas, quota) in its host variables."""
    group_vars = {
        'ansible_connection': 'local', 'ansible_python_interpreter': sys.executable,
        'mig_operator_namespace': OP_NS, 'mig_strategy': 'mixed', 'mig_poll_interval': 0.5,
        'mig_assignments': [{'nodes': ['a100-0'], 'config': 'all-1g.5gb'}],
        'sharing_operator_namespace': OP_NS, 'sharing_mig_strategy': 'mixed', 'sharing_poll_interval': 0.5,
        'sharing_profiles': {'ts': {'sharing': {'timeSlicing': {'resources': [
            {'name': 'nvidia.com/gpu', 'replicas': '{{ multi_replicas | int }}'}]}}}},
        'sharing_assignments': [{'nodes': ['t4-0'], 'profile': 'ts'}],
        'quotas_resource_quotas': [{'namespace': QUOTA_NS, 'hard': {'nvidia.com/gpu': '{{ multi_replicas | int }}'}}],
    }
    hosts = dict((name, dict(host_access[name], multi_replicas=REPLICAS[name])) for name in TARGETS)
    return yaml.safe_dump({'all': {'children': {'gpu_clusters': {'vars': group_vars, 'hosts': hosts}}}})


def configured(apis):
    """Each target shows the work with its own host's values."""
    for name in TARGETS:
        core = client.CoreV1Api(apis[name])
        t4 = core.read_node('t4-0').metadata.labels
        a100 = core.read_node('a100-0').metadata.labels
        assert t4.get('nvidia.com/gpu.replicas') == str(REPLICAS[name]), (name, t4)
        assert (a100.get('nvidia.com/mig.config'), a100.get('nvidia.com/mig.config.state')) == (
            'all-1g.5gb', 'success'), (name, a100)
        quota = core.list_namespaced_resource_quota(QUOTA_NS).items
        assert [q.spec.hard.get('requests.nvidia.com/gpu') for q in quota] == [str(REPLICAS[name])], (name, quota)
        assert not [n.metadata.name for n in core.list_node().items if n.spec.unschedulable], name


def default_untouched(before, api, what):
    changed, moved = changes(before, snapshot(api))
    print('default cluster: %d objects, %d moved by status/heartbeat only' % (len(before), moved))
    assert changed == [], 'the default cluster was written (%s):\n%s' % (what, '\n'.join(changed))


@pytest.fixture(scope='module')
def default_api(testbed):
    return config.new_client_from_config(config_file=testbed.kubeconfig)


def test_site_yml_configures_three_clusters_in_one_run(testbed, clusters, access, default_api, tmp_path):
    _targets, apis = clusters
    before = settled_snapshot(default_api, what='the default cluster')
    (tmp_path / 'clusters.yml').write_text(inventory(access['hosts']))
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith('K8S_AUTH_'))
    env.update({'HOME': access['home'], 'KUBECONFIG': testbed.kubeconfig,
                'ANSIBLE_STDOUT_CALLBACK': 'ansible.posix.json', 'ANSIBLE_INVENTORY_UNPARSED_WARNING': 'false'})
    proc = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', str(tmp_path / 'clusters.yml'),
         os.path.join(REPO, 'playbooks', 'site.yml'), '-e', 'gpuops_clusters=gpu_clusters', '--forks', '3'],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600, check=False)
    default_untouched(before, default_api, 'ansible-playbook')
    out = callback_output(proc.stdout)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    stats = out.get('stats', {})
    assert sorted(stats) == sorted(TARGETS), stats
    assert all(stats[n]['changed'] > 0 and stats[n]['failures'] == 0 for n in TARGETS), stats
    configured(apis)
    # the three rollouts ran side by side (one fork per cluster), not one after the other
    windows = {}
    for play in out.get('plays', []):
        for task in play.get('tasks', []):
            if task['task']['name'].endswith('Roll the MIG configs out to the node groups'):
                for host, res in task['hosts'].items():
                    timeline = res['nodes'][0]['timeline']
                    windows[host] = (timeline['started'], timeline['uncordoned'])
    assert sorted(windows) == sorted(TARGETS), windows
    assert max(w[0] for w in windows.values()) < min(w[1] for w in windows.values()), windows


def test_the_same_run_as_an_awx_job_changes_nothing_anywhere(testbed, clusters, access, default_api, tmp_path):
    """AWX: one kubeconfig credential naming every cluster (K8S_AUTH_KUBECONFIG, current context the default
    cluster), the inventory's hosts each naming its context; site.yml again: nothing changes, anywhere."""
    _targets, apis = clusters
    before = settled_snapshot(default_api, what='the default cluster')
    template = {'name': 'site', 'playbook': 'playbooks/site.yml', 'extra_vars': {'gpuops_clusters': 'gpu_clusters'},
                'timeout': 600}
    job = run_job(tmp_path, template, kubeconfig_credential(access['merged_text']), home=access['home'],
                  inventory_files={'clusters.yml': inventory(access['contexts'])}, timeout=600)
    default_untouched(before, default_api, 'AWX job')
    assert (job.status, job.rc) == ('successful', 0), job.stdout[-6000:]
    recap = [e['event_data'] for e in job.events if e['event'] == 'playbook_on_stats'][-1]
    assert sorted(recap.get('ok', {})) == sorted(TARGETS), recap
    assert not recap.get('changed'), 'a second run changed something: %s' % recap.get('changed')
    configured(apis)
