"""The diagnostics role on the virtual GPU cluster, as the read-only gpuops-gpu-report account: the
archive holds every listed item (ClusterPolicy and NVIDIADriver status, operator/operand pods and their logs or
why a log could not be read, GPU node labels/annotations/allocatable/conditions, events of the operator namespace
and of the GPU nodes, the ConfigMaps the ClusterPolicy names, the rollout lock's Lease, summary.txt), and secrets
planted in a pod's env, a pod annotation, a node annotation, an event message and the vGPU licensing ConfigMap
the ClusterPolicy names never appear in any file of it, nor does the account's own token. Nothing on the cluster
changes; the check-mode run writes its archive into ansible-runner's artifacts directory (AWX_ISOLATED_DATA_DIR)."""

import base64
import os
import tarfile

import pytest
import yaml
from kubernetes import client

from ansible_run import changed_tasks, include, node_facts, run_play
from awx_job import account_token
from conftest import wait_until
from policy_helpers import CP, POLICY_NAME, ensure_cluster_policy, wait_quiet

PLANTED = 'gpuops-planted-s3cret-4f1c'
SA, SA_NS = 'gpuops-diagnostics', 'gpuops-diagnostics'
LICENSING_CM = 'gpuops-diag-licensing'
LOCK = 'gpuops-gpu-rollout'


@pytest.fixture(scope='module')
def planted(testbed, core, custom, operator_ns):
    """The ClusterPolicy ready and naming a licensing ConfigMap; secrets planted where the role reads."""
    ensure_cluster_policy(custom)
    core.create_namespaced_config_map(operator_ns, {'metadata': {'name': LICENSING_CM}, 'data': {
        'client_configuration_token.tok': PLANTED, 'gridd.conf': 'FeatureType=1\n'}})
    custom.patch_cluster_custom_object(*CP, POLICY_NAME, {'spec': {'driver': {'licensingConfig': {
        'configMapName': LICENSING_CM, 'nlsEnabled': True}}}})
    core.create_namespaced_pod(operator_ns, {
        # app=gpu-operator: the operator runs outside the cluster here, so no controller adopts this pod
        'metadata': {'name': 'gpu-operator-planted', 'labels': {'app': 'gpu-operator'},
                     'annotations': {'example.com/api-token': PLANTED}},
        'spec': {'nodeName': 'a100-0', 'tolerations': [{'operator': 'Exists'}],
                 'containers': [{'name': 'gpu-operator', 'image': 'example.invalid/gpu-operator:1',
                                 'env': [{'name': 'SOME_TOKEN', 'value': PLANTED}]}]}})
    core.patch_node('a100-0', {'metadata': {'annotations': {'example.com/registry-password': PLANTED}}})
    core.create_namespaced_event(operator_ns, {
        'metadata': {'name': 'gpuops-diag-planted'}, 'reason': 'GpuopsDiagPlanted', 'type': 'Warning',
        'message': 'pull failed: Authorization: Bearer %s' % PLANTED,
        'involvedObject': {'kind': 'Pod', 'namespace': operator_ns, 'name': 'gpu-operator-planted'}})
    core.create_namespaced_event('default', {
        'metadata': {'name': 'gpuops-diag-node'}, 'reason': 'GpuopsDiagNode', 'type': 'Normal', 'message': 'node event',
        'involvedObject': {'kind': 'Node', 'name': 'a100-0'}})
    coordination_lease = {'apiVersion': 'coordination.k8s.io/v1', 'kind': 'Lease', 'metadata': {'name': LOCK},
                          'spec': {'holderIdentity': 'diagnostics-test', 'leaseDurationSeconds': 60}}
    custom.create_namespaced_custom_object('coordination.k8s.io', 'v1', operator_ns, 'leases', coordination_lease)
    wait_until('GFD labels on a100-0',
               lambda: (core.read_node('a100-0').metadata.labels or {}).get('nvidia.com/gpu.product'), 180)
    wait_quiet(core)
    return PLANTED


@pytest.fixture(scope='module')
def report_env(testbed, core, operator_ns):
    """AWX's bearer-token credential for a ServiceAccount bound only to gpuops-gpu-report; no kubeconfig."""
    token = account_token(testbed, core, SA, SA_NS, ['report'])
    with open(testbed.kubeconfig) as handle:
        server = yaml.safe_load(handle)['clusters'][0]['cluster']['server']
    return {'K8S_AUTH_HOST': server, 'K8S_AUTH_API_KEY': token, 'K8S_AUTH_VERIFY_SSL': 'true',
            'K8S_AUTH_SSL_CA_CERT': os.path.join(testbed.state_dir, 'pki', 'ca.crt'),
            'K8S_AUTH_KUBECONFIG': '/nonexistent/kubeconfig'}


def extract(path):
    with tarfile.open(path) as tar:
        members = tar.getmembers()
        assert len(set(m.name.split('/')[0] for m in members)) == 1, 'one top directory'
        return dict((m.name.split('/', 1)[1], tar.extractfile(m).read().decode()) for m in members if m.isfile())


def run(testbed, variables, env, check=False):
    rc, results, raw = run_play(testbed.kubeconfig, [include('diagnostics')], check=check, vars=variables,
                                extra_env=env)
    assert rc == 0, raw[-4000:]
    return results


def test_archive_has_every_item_and_no_planted_secret(testbed, core, operator_ns, planted, report_env, tmp_path):
    before = node_facts(core)
    dest = str(tmp_path / 'case' / 'gpu-diagnostics.tar.gz')
    results = run(testbed, {'diagnostics_dest': dest, 'diagnostics_operator_namespace': operator_ns,
                            'diagnostics_log_lines': 50, 'diagnostics_max_log_pods': 2}, report_env)
    assert changed_tasks(results) == []
    result = results['Collect the diagnostics archive (read-only on the cluster)']
    assert result['path'] == dest and not result.get('warnings'), result.get('warnings')
    stats = results['Publish the archive path as a job artifact']['ansible_stats']['data']
    assert stats['gpuops_diagnostics']['path'] == dest
    files = extract(dest)
    for name in ('summary.txt', 'clusterpolicies.yaml', 'nvidiadrivers.yaml', 'nodes.yaml', 'pods.yaml',
                 'events.yaml', 'lease.yaml', 'configmaps/default-mig-parted-config.yaml',
                 'configmaps/%s.yaml' % LICENSING_CM):
        assert name in files, (name, sorted(files))
    [policy] = yaml.safe_load(files['clusterpolicies.yaml'])
    # the state as the operator reports it (the licensing change above rolls the driver DaemonSet: ready or notReady)
    assert policy['metadata']['name'] == POLICY_NAME and policy['status']['state'] in ('ready', 'notReady')
    assert policy['spec']['driver']['licensingConfig']['configMapName'] == LICENSING_CM
    nodes = dict((n['name'], n) for n in yaml.safe_load(files['nodes.yaml']))
    assert {'a100-0', 'h100-0', 't4-0'} <= set(nodes) and 'cpu-0' not in nodes
    a100 = nodes['a100-0']
    assert a100['labels']['nvidia.com/gpu.product'] and a100['allocatable']['nvidia.com/gpu']
    assert a100['annotations']['example.com/registry-password'] == '<redacted>'
    assert any(c['type'] == 'Ready' for c in a100['conditions'])
    reasons = [e.get('reason') for e in yaml.safe_load(files['events.yaml'])]
    assert 'GpuopsDiagPlanted' in reasons and 'GpuopsDiagNode' in reasons
    assert yaml.safe_load(files['lease.yaml'])['spec']['holderIdentity'] == 'diagnostics-test'
    summary = files['summary.txt']
    pods = yaml.safe_load(files['pods.yaml'])
    apps = {'gpu-operator': 'gpu-operator', 'mig-manager': 'nvidia-mig-manager',
            'device-plugin': 'nvidia-device-plugin-daemonset', 'gpu-feature-discovery': 'gpu-feature-discovery',
            'dcgm-exporter': 'nvidia-dcgm-exporter'}
    for component, app in apps.items():
        # the operator's DaemonSet pods are in pods.yaml; KWOK runs no containers, so each log is either in the
        # archive or summary.txt names it with the reason it could not be read
        names = [p['metadata']['name'] for p in pods if p['metadata'].get('labels', {}).get('app') == app]
        assert names, (component, 'no pod in pods.yaml')
        listed = [line for line in summary.splitlines() if line.strip().startswith('logs/%s/' % component)]
        assert any(name in line for name in names for line in listed), (component, summary)
    assert 'logs/gpu-operator/gpu-operator-planted_gpu-operator.log' in summary
    assert 'gpu-operator-planted' in files['pods.yaml']
    leaked = [name for name, text in files.items() if PLANTED in text or report_env['K8S_AUTH_API_KEY'] in text]
    assert leaked == []
    assert result['redacted'] >= 5
    assert node_facts(core) == before


def test_check_mode_writes_into_the_runner_artifacts_dir(testbed, core, operator_ns, planted, report_env, tmp_path):
    before = node_facts(core)
    artifacts = tmp_path / 'artifacts' / 'job-1'
    results = run(testbed, {'diagnostics_operator_namespace': operator_ns, 'diagnostics_max_log_pods': 1},
                  dict(report_env, AWX_ISOLATED_DATA_DIR=str(artifacts)), check=True)
    assert changed_tasks(results) == []
    written = os.listdir(str(artifacts))
    assert len(written) == 1 and written[0].startswith('gpuops-diagnostics-') and written[0].endswith('.tar.gz')
    files = extract(str(artifacts / written[0]))
    assert 'summary.txt' in files and 'nodes.yaml' in files
    assert not any(PLANTED in text for text in files.values())
    assert node_facts(core) == before


def publish_role(core, namespace):
    """The Role docs/awx.md shows, bound to the report account in ``namespace`` only."""
    rbac = client.RbacAuthorizationV1Api(core.api_client)
    rbac.create_namespaced_role(namespace, {'metadata': {'name': 'gpuops-gpu-report-publish'}, 'rules': [
        {'apiGroups': [''], 'resources': ['configmaps', 'secrets'], 'verbs': ['get', 'create', 'update', 'patch']}]})
    rbac.create_namespaced_role_binding(namespace, {
        'metadata': {'name': 'gpuops-gpu-report-publish'},
        'roleRef': {'apiGroup': 'rbac.authorization.k8s.io', 'kind': 'Role', 'name': 'gpuops-gpu-report-publish'},
        'subjects': [{'kind': 'ServiceAccount', 'name': SA, 'namespace': SA_NS}]})


def test_archive_published_into_a_secret(testbed, core, operator_ns, planted, report_env, namespace, tmp_path):
    publish_role(core, namespace)
    dest = str(tmp_path / 'gpu-diagnostics.tar.gz')
    variables = {'diagnostics_dest': dest, 'diagnostics_operator_namespace': operator_ns, 'diagnostics_log_lines': 20,
                 'diagnostics_max_log_pods': 1}
    core.create_namespaced_secret(namespace, {'metadata': {'name': 'theirs'}, 'stringData': {'a': 'b'}})
    rc, results, raw = run_play(testbed.kubeconfig, [include('diagnostics')], extra_env=report_env,
                                vars=dict(variables, diagnostics_publish_secret=namespace + '/theirs'))
    assert rc != 0 and 'Secret %s/theirs exists and gpuops.gpu did not create it' % namespace in raw, raw[-3000:]
    assert 'Write the archive into the Secret' not in results
    assert core.read_namespaced_secret('theirs', namespace).data == {'a': base64.b64encode(b'b').decode()}

    rc, results, raw = run_play(testbed.kubeconfig, [include('diagnostics')], extra_env=report_env,
                                vars=dict(variables, diagnostics_publish_secret=namespace + '/gpuops-diag'))
    assert rc == 0, raw[-4000:]
    secret = core.read_namespaced_secret('gpuops-diag', namespace)
    assert secret.type == 'Opaque' and list(secret.data) == ['gpu-diagnostics.tar.gz']
    assert secret.metadata.labels['app.kubernetes.io/managed-by'] == 'gpuops.gpu'
    with open(dest, 'rb') as handle:
        archive = handle.read()
    assert base64.b64decode(secret.data['gpu-diagnostics.tar.gz']) == archive
    encoded = secret.data['gpu-diagnostics.tar.gz']
    assert encoded[:64] not in raw and encoded[-64:] not in raw  # the bytes never show in the output
    stats = results['Publish the archive path as a job artifact']['ansible_stats']['data']
    assert stats['gpuops_diagnostics']['published'] == 'secret/%s/gpuops-diag' % namespace
