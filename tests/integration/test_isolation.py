"""Isolation by construction on TWO virtual GPU clusters: the default kubeconfig and context (KUBECONFIG,
~/.kube/config in a private HOME, the current context of the kubeconfig the run is given) point at cluster B;
every playbook (site.yml with every switch on, validate.yml included, then quotas, rbac, report, hami and
reset) runs at cluster A, once through `-e gpuops_kubeconfig=... -e gpuops_context=...` (ansible-playbook) and once with
the K8S_AUTH_KUBECONFIG / K8S_AUTH_CONTEXT environment alone (ansible-runner, as an AWX job with a
kubeconfig credential). Afterwards B must be exactly as before: every object of every listable API
resource, compared by resourceVersion; an object whose resourceVersion moved must differ in nothing but its
status and the heartbeats of the simulated node agents (the exact rules: cluster_snapshot.fingerprint()). A must show
the work done (Helm releases, ClusterPolicy, quotas, ServiceAccount).

The Helm paths are the ones that went to the default cluster before meta/runtime.yml's action group
extended kubernetes.core.helm: nfd and gpu_operator with install_method helm, the console-plugin chart
(monitoring), HAMi (hami, and reset removing it)."""

import os
import subprocess
import sys
import time

import pytest
import yaml
from kubernetes import config

from ansible_run import callback_output, task_results
from awx_job import kubeconfig_credential, run_job
from cluster_policy_example import gpu_operator_csv_path, gpu_operator_module_dir
from conftest import REPO, create_namespace, virtual_gpu_cluster
from policy_helpers import CP, INSTALL_VARS, openshift_console
from hami_helpers import STANDIN_CHART as HAMI_STANDIN_CHART
from cluster_snapshot import changes, settled_snapshot, snapshot

OP_NS = 'gpu-operator'
PLAYBOOKS = ('site.yml', 'quotas.yml', 'rbac.yml', 'report.yml', 'hami.yml', 'reset.yml')  # site.yml runs validate.yml
CONSOLE_PLUGIN_CHART = {
    'Chart.yaml': {'apiVersion': 'v2', 'name': 'console-plugin-nvidia-gpu', 'version': '0.0.1-gpuops-standin'},
    'values.yaml': {},
    'templates/consoleplugin.yaml': '''apiVersion: console.openshift.io/v1
kind: ConsolePlugin
metadata:
  name: {{ .Release.Name }}
spec:
  displayName: NVIDIA GPU
  backend:
    type: Service
    service: {name: {{ .Release.Name }}, namespace: {{ .Release.Namespace }}, port: 9443, basePath: /}
'''}
# ---------------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope='module')
def cluster_b(testbed):
    """The second virtual GPU cluster, the one every default points at."""
    with virtual_gpu_cluster(testbed.name + '-b') as other:
        yield other


@pytest.fixture(scope='module')
def api_b(cluster_b):
    return config.new_client_from_config(config_file=cluster_b.kubeconfig)


@pytest.fixture(scope='module')
def contexts(testbed, cluster_b, tmp_path_factory):
    """One kubeconfig naming both clusters, current context B; and B's own kubeconfig (the defaults)."""
    merged = {'apiVersion': 'v1', 'kind': 'Config', 'clusters': [], 'contexts': [], 'users': []}
    for cluster in (testbed, cluster_b):
        with open(cluster.kubeconfig) as handle:
            config = yaml.safe_load(handle)
        for key in ('clusters', 'contexts', 'users'):
            merged[key] += config[key]
    merged['current-context'] = cluster_b.name
    home = tmp_path_factory.mktemp('home')
    (home / '.kube').mkdir()
    (home / '.kube' / 'config').write_text(yaml.safe_dump(merged))
    path = tmp_path_factory.mktemp('kube') / 'both-clusters'
    path.write_text(yaml.safe_dump(merged))
    return {'both': str(path), 'both_text': yaml.safe_dump(merged), 'a': testbed.name, 'b': cluster_b.name,
            'home': str(home), 'b_only': cluster_b.kubeconfig}


def _write_chart(root, files):
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content if isinstance(content, str) else yaml.safe_dump(content))
    return str(root)


@pytest.fixture(scope='module')
def cluster_a(testbed, core, custom, extensions):
    """A made OpenShift-like where the roles need it: console CRDs and the Console (monitoring's console
    plugin), a MachineSet (autoscaling), the namespaces the quotas name."""
    openshift_console(testbed, core, custom, extensions)
    create_namespace(core, 'openshift-machine-api')
    labels = {'machine.openshift.io/cluster-api-cluster': 'ocp',
              'machine.openshift.io/cluster-api-machineset': 'ocp-gpu-us-east-1a'}
    custom.create_namespaced_custom_object('machine.openshift.io', 'v1beta1', 'openshift-machine-api', 'machinesets', {
        'apiVersion': 'machine.openshift.io/v1beta1', 'kind': 'MachineSet',
        'metadata': {'name': 'ocp-gpu-us-east-1a', 'labels': {'machine.openshift.io/cluster-api-cluster': 'ocp'}},
        'spec': {'replicas': 0, 'selector': {'matchLabels': labels},
                 'template': {'metadata': {'labels': labels}, 'spec': {'providerSpec': {'value': {
                     'apiVersion': 'machine.openshift.io/v1beta1', 'kind': 'AWSMachineProviderConfig',
                     'instanceType': 'p4d.24xlarge',
                     'placement': {'availabilityZone': 'us-east-1a', 'region': 'us-east-1'}}}}}}})
    create_namespace(core, 'qa-isolation')
    if OP_NS not in [n.metadata.name for n in core.list_namespace().items]:
        create_namespace(core, OP_NS)


@pytest.fixture(scope='module')
def variables(cluster_a, helm, tmp_path_factory):
    """Every switch of site.yml on, plus the variables of quotas, rbac, hami and reset."""
    charts = tmp_path_factory.mktemp('charts')
    token = tmp_path_factory.mktemp('vgpu') / 'client_configuration_token.tok'
    token.write_text('eyJhbGciOiJSUzI1NiJ9.ISOLATION-TOKEN.c2ln\n')
    chart = os.path.join(gpu_operator_module_dir(), 'deployments', 'gpu-operator')
    out = dict(INSTALL_VARS)
    out.update({
        # mirror (plain Kubernetes: the pull Secret; the ClusterPolicy does not exist yet)
        'mirror_registry': 'mirror.example.com:8443', 'mirror_platform': 'kubernetes',
        'mirror_operator_namespace': OP_NS, 'mirror_cluster_policy': False, 'mirror_repositories': ['nvcr.io/nvidia'],
        'mirror_registry_username': 'svc-mirror', 'mirror_registry_password': 'Isolation-Pa55',
        'mirror_csv_file': gpu_operator_csv_path(), 'mirror_ca_bundle': '',
        # install with Helm
        'gpuops_install': True, 'nfd_install_method': 'helm', 'nfd_namespace': 'node-feature-discovery',
        'nfd_namespace_labels': {}, 'nfd_helm_chart_ref': os.path.join(chart, 'charts', 'node-feature-discovery'),
        'nfd_helm_binary': helm, 'gpu_operator_install_method': 'helm', 'gpu_operator_namespace': OP_NS,
        'gpu_operator_namespace_labels': {}, 'gpu_operator_helm_chart_ref': chart, 'gpu_operator_helm_binary': helm,
        'gpu_operator_helm_values': {'nfd': {'enabled': False}, 'operator': {'upgradeCRD': False}},
        # placement: t4-0 tainted, the ClusterPolicy tolerates it
        'gpu_node_placement_nodes': ['t4-0'], 'gpu_node_placement_layers': ['cluster_policy'],
        'gpu_node_placement_operator_namespace': OP_NS,
        # vGPU licensing and driver image
        'vgpu_operator_namespace': OP_NS, 'vgpu_token_file': str(token),
        'vgpu_driver_repository': 'registry.example.com:5000/nvidia-vgpu', 'vgpu_driver_version': '580.95.05-grid',
        # MIG on the H100 nodes, time-slicing on the L40S node
        'mig_operator_namespace': OP_NS, 'mig_strategy': 'mixed', 'mig_assignments': [
            {'nodes': ['h100-0', 'h100-1'], 'config': 'all-1g.10gb'}], 'mig_max_unavailable': 2,
        'mig_poll_interval': 0.5, 'mig_state_timeout': 240, 'mig_verify_timeout': 120,
        'sharing_operator_namespace': OP_NS, 'sharing_mig_strategy': 'mixed', 'sharing_profiles': {
            'ts-4': {'sharing': {'timeSlicing': {'resources': [{'name': 'nvidia.com/gpu', 'replicas': 4}]}}}},
        'sharing_assignments': [{'nodes': ['l40s-0'], 'profile': 'ts-4'}], 'sharing_poll_interval': 0.5,
        # autoscaling
        'autoscaling_machine_sets': [{'name': 'ocp-gpu-us-east-1a', 'accelerator': 'nvidia-a100', 'gpus': 8,
                                      'vcpu': 96, 'memory_mb': 1179648, 'min_replicas': 0, 'max_replicas': 1}],
        # monitoring, with the console-plugin chart
        'gpuops_monitoring': True, 'monitoring_wait_timeout': 120, 'monitoring_console_plugin': True,
        'monitoring_console_plugin_install': True,
        'monitoring_console_plugin_chart_ref': _write_chart(charts / 'console-plugin', CONSOLE_PLUGIN_CHART),
        # validation workloads
        'gpuops_validate': True, 'smoke_test_poll_interval': 0.5, 'smoke_test_timeout': 180,
        'smoke_test_stuck_timeout': 60,
        # quotas, rbac
        'quotas_resource_quotas': [{'namespace': 'qa-isolation', 'hard': {'nvidia.com/gpu': 4}}],
        'rbac_operator_namespace': OP_NS,
        'rbac_service_accounts': [{'name': 'gpuops-iso', 'namespace': 'gpuops-iso', 'access': ['rollout']}],
        # HAMi on the A100 nodes (after site.yml's validate: it switches the operator's device plugin off)
        'hami_chart_ref': _write_chart(charts / 'hami', HAMI_STANDIN_CHART), 'hami_helm_binary': helm,
        'hami_namespace': 'hami-system', 'hami_nodes': ['a100-0', 'a100-1'],
        'hami_disable_operator_device_plugin': True, 'hami_wait_timeout': 120,
        # reset: MIG, sharing and HAMi back (the reset removes only the HAMi release it is given)
        'reset_hami_namespace': 'hami-system',
        'reset_operator_namespace': OP_NS, 'reset_helm_binary': helm, 'reset_max_unavailable': 2,
        'reset_poll_interval': 0.5, 'reset_state_timeout': 240, 'reset_verify_timeout': 120,
    })
    return out


def all_playbooks(playbook_dir):
    """One playbook importing the others, in the order that lets each find what it needs."""
    return yaml.safe_dump([{'name': 'isolation: ' + name,
                            'ansible.builtin.import_playbook': os.path.join(playbook_dir, name)}
                           for name in PLAYBOOKS])


def env_without_connection(home, **extra):
    """os.environ without any connection setting, HOME private; helm is on PATH (as in the EE) through
    monkeypatch in the tests: the console-plugin chart has no binary variable."""
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith('K8S_AUTH_') and k != 'KUBECONFIG')
    env.update({'HOME': home, 'ANSIBLE_STDOUT_CALLBACK': 'ansible.posix.json', 'ANSIBLE_LOCALHOST_WARNING': 'false',
                'ANSIBLE_INVENTORY_UNPARSED_WARNING': 'false', 'ANSIBLE_PYTHON_INTERPRETER': sys.executable})
    env.update(extra)
    return env


def did_the_work(core, custom):
    """What the run leaves on A: the releases that stay, the ClusterPolicy, the quota, the ServiceAccount."""
    releases = sorted(set(s.metadata.labels['name'] for s in core.list_secret_for_all_namespaces(
        label_selector='owner=helm').items))
    assert releases == ['console-plugin-nvidia-gpu', 'gpu-operator', 'node-feature-discovery'], releases
    assert custom.list_cluster_custom_object(*CP)['items'], 'no ClusterPolicy on A'
    assert [q.metadata.name for q in core.list_namespaced_resource_quota('qa-isolation').items]
    assert core.read_namespaced_service_account('gpuops-iso', 'gpuops-iso')
    assert not [n.metadata.name for n in core.list_node().items if n.spec.unschedulable]


def b_untouched(before, api_b, run_failures):
    """Cluster B is as ``before`` (checked first: whatever else went wrong, a write to B is the finding)."""
    changed, moved = changes(before, snapshot(api_b))
    print('B: %d objects, %d moved by status/heartbeat only' % (len(before), moved))
    assert changed == [], 'cluster B was written:\n%s\n\nthe run (failed tasks):\n%s' % (
        '\n'.join(changed), run_failures)


@pytest.fixture
def helm_on_path(helm, monkeypatch):
    monkeypatch.setenv('PATH', os.path.dirname(helm) + os.pathsep + os.environ.get('PATH', ''))


def failed_tasks(raw):
    return '\n'.join('%s: %s' % (name, str(res.get('msg'))[:600])
                     for name, res in task_results(raw) if res.get('failed'))


# ---------------------------------------------------------------------------------------- tests


def test_every_playbook_from_ansible_playbook_leaves_b_alone(testbed, cluster_b, api_b, contexts, variables,
                                                             core, custom, tmp_path, helm_on_path):
    before = settled_snapshot(api_b, what='cluster B')
    (tmp_path / 'all.yml').write_text(all_playbooks(os.path.join(REPO, 'playbooks')))
    (tmp_path / 'vars.yml').write_text(yaml.safe_dump(variables))
    start = time.monotonic()
    proc = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), str(tmp_path / 'all.yml'),
         '-e', '@' + str(tmp_path / 'vars.yml'), '-e', 'gpuops_kubeconfig=' + contexts['both'],
         '-e', 'gpuops_context=' + contexts['a']],
        env=env_without_connection(contexts['home'], KUBECONFIG=contexts['b_only']),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=840, check=False)
    raw = proc.stdout + proc.stderr
    print('ansible-playbook took %.0fs' % (time.monotonic() - start))
    b_untouched(before, api_b, failed_tasks(proc.stdout))
    assert proc.returncode == 0, failed_tasks(proc.stdout) + '\n' + raw[-3000:]
    assert callback_output(proc.stdout).get('stats', {}).get('localhost', {}).get('changed', 0) > 0
    did_the_work(core, custom)


def test_every_playbook_as_an_awx_job_with_k8s_auth_only_leaves_b_alone(
        testbed, cluster_b, api_b, contexts, variables, core, custom, tmp_path, helm_on_path):
    before = settled_snapshot(api_b, what='cluster B')
    template = {'name': 'isolation', 'playbook': 'playbooks/isolation.yml', 'extra_vars': variables,
                'timeout': 840}
    start = time.monotonic()
    job = run_job(tmp_path, template, kubeconfig_credential(contexts['both_text'], contexts['a']),
                  project_files={'playbooks/isolation.yml': all_playbooks('.')}, home=contexts['home'], timeout=840)
    print('AWX-style job took %.0fs' % (time.monotonic() - start))
    b_untouched(before, api_b, job.stdout[-3000:])
    assert (job.status, job.rc) == ('successful', 0), job.stdout[-6000:]
    did_the_work(core, custom)
