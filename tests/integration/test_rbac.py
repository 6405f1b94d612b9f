"""Least privilege on the virtual cluster's real RBAC: the gpuops.gpu.rbac role (idempotent, check mode,
bad inputs fail before writing), then a MIG rollout (gpuops.gpu.mig_rollout) as a ServiceAccount bound only to
gpuops-gpu-rollout, authenticated with its token the way AWX's bearer-token credential does
(K8S_AUTH_HOST / K8S_AUTH_API_KEY / K8S_AUTH_SSL_CA_CERT, no kubeconfig), and the same account refused
everything outside that role."""

import base64
import os

import pytest
import yaml
from kubernetes import client

from ansible_run import run_play, run_role
from conftest import wait_until

SA, SA_NS = 'gpuops-rollout', 'gpuops-automation'
MANAGED = 'app.kubernetes.io/managed-by=gpuops.gpu'


def role_vars(testbed, **extra):
    out = {'rbac_operator_namespace': testbed.config['cluster'].get('operator_namespace', 'gpu-operator'),
           'rbac_service_accounts': [{'name': SA, 'namespace': SA_NS, 'access': ['rollout'], 'token_secret': True}]}
    out.update(extra)
    return out


def managed_objects(api_client):
    """Everything the role may write, by kind/namespace/name → resourceVersion."""
    rbac = client.RbacAuthorizationV1Api(api_client)
    core = client.CoreV1Api(api_client)
    out = {}
    for kind, items in (('ClusterRole', rbac.list_cluster_role(label_selector=MANAGED).items),
                        ('ClusterRoleBinding', rbac.list_cluster_role_binding(label_selector=MANAGED).items),
                        ('Role', rbac.list_role_for_all_namespaces(label_selector=MANAGED).items),
                        ('RoleBinding', rbac.list_role_binding_for_all_namespaces(label_selector=MANAGED).items),
                        ('ServiceAccount', core.list_service_account_for_all_namespaces(label_selector=MANAGED).items),
                        ('Secret', core.list_secret_for_all_namespaces(label_selector=MANAGED).items)):
        for item in items:
            out['%s/%s/%s' % (kind, item.metadata.namespace or '', item.metadata.name)] = item.metadata.resource_version
    out['namespaces'] = sorted(n.metadata.name for n in core.list_namespace().items)
    return out


def changed(results):
    return sorted(name for name, res in results.items() if res.get('changed'))


@pytest.fixture(scope='module')
def applied(testbed, api_client):
    rc, results, raw = run_role(testbed.kubeconfig, 'rbac', role_vars(testbed))
    assert rc == 0, raw[-4000:]
    return results


@pytest.fixture(scope='module')
def token(testbed, core, applied):
    secret = core.read_namespaced_secret(SA + '-token', SA_NS)
    return base64.b64decode(secret.data['token']).decode()


@pytest.fixture(scope='module')
def sa_client(testbed, token):
    """A client that holds nothing but the ServiceAccount token and the cluster CA."""
    with open(testbed.kubeconfig) as handle:
        server = yaml.safe_load(handle)['clusters'][0]['cluster']['server']
    conf = client.Configuration()
    conf.host = server
    conf.api_key = {'authorization': 'Bearer ' + token}
    conf.ssl_ca_cert = os.path.join(testbed.state_dir, 'pki', 'ca.crt')
    conf.verify_ssl = True
    return client.ApiClient(conf)


def test_role_applies_roles_account_and_token(testbed, api_client, applied, token, sa_client):
    rbac = client.RbacAuthorizationV1Api(api_client)
    names = set(r.metadata.name for r in rbac.list_cluster_role(label_selector=MANAGED).items)
    assert names == {'gpuops-gpu-report', 'gpuops-gpu-rollout', 'gpuops-gpu-rollout-force', 'gpuops-gpu-install'}
    bindings = rbac.list_cluster_role_binding(label_selector=MANAGED).items
    assert [(b.role_ref.name, b.subjects[0].namespace, b.subjects[0].name) for b in bindings] == \
        [('gpuops-gpu-rollout', SA_NS, SA)], 'bound only to gpuops-gpu-rollout (no force, no install)'
    operator_ns = role_vars(testbed)['rbac_operator_namespace']
    assert [b.role_ref.name for b in rbac.list_namespaced_role_binding(operator_ns, label_selector=MANAGED).items] == \
        ['gpuops-gpu-rollout']
    review = client.AuthenticationV1Api(sa_client).create_self_subject_review(
        client.V1SelfSubjectReview(api_version='authentication.k8s.io/v1', kind='SelfSubjectReview'))
    assert review.status.user_info.username == 'system:serviceaccount:%s:%s' % (SA_NS, SA)


def test_role_second_run_changes_nothing_and_check_mode_writes_nothing(testbed, api_client, applied, token):
    before = managed_objects(api_client)
    rc, results, raw = run_role(testbed.kubeconfig, 'rbac', role_vars(testbed))
    assert rc == 0, raw[-3000:]
    assert changed(results) == [], raw[-3000:]
    assert token not in raw, 'the token must never show up in what the role prints or returns'
    # check mode with a second account: reports the change, writes nothing
    more = role_vars(testbed)
    more['rbac_service_accounts'] = more['rbac_service_accounts'] + [
        {'name': 'gpuops-report', 'namespace': 'gpuops-check', 'access': ['report'], 'token_secret': True}]
    rc, results, raw = run_role(testbed.kubeconfig, 'rbac', more, check=True, diff=True)
    assert rc == 0, raw[-3000:]
    assert changed(results), 'check mode must report what it would create'
    assert managed_objects(api_client) == before


@pytest.mark.parametrize('bad, message', [
    ({'rbac_service_accounts': [{'name': 'x', 'namespace': 'gpuops-automation', 'access': ['admin']}]}, 'access'),
    ({'rbac_service_accounts': [{'name': 'Bad_Name', 'namespace': 'gpuops-automation', 'access': ['report']}]},
     'not a valid ServiceAccount name'),
    ({'rbac_operator_namespace': 'no-such-operator-ns'}, 'does not exist'),
    ({'rbac_cluster_roles': ['report'],
      'rbac_service_accounts': [{'name': 'inst', 'namespace': 'gpuops-automation', 'access': ['install']}]},
     'add them to rbac_cluster_roles'),
], ids=['unknown-access', 'bad-name', 'missing-operator-namespace', 'role-not-applied'])
def test_bad_input_fails_before_writing(testbed, api_client, applied, bad, message):
    before = managed_objects(api_client)
    rc, results, raw = run_role(testbed.kubeconfig, 'rbac', role_vars(testbed, **bad))
    assert rc != 0
    assert message in raw, raw[-3000:]
    assert managed_objects(api_client) == before


def test_mig_rollout_succeeds_with_only_the_rollout_role(testbed, core, token):
    wait_until('GFD labels on a100-0',
               lambda: (core.read_node('a100-0').metadata.labels or {}).get('nvidia.com/gpu.product'), 180)
    with open(testbed.kubeconfig) as handle:
        server = yaml.safe_load(handle)['clusters'][0]['cluster']['server']
    env = {'K8S_AUTH_HOST': server, 'K8S_AUTH_API_KEY': token, 'K8S_AUTH_VERIFY_SSL': 'true',
           'K8S_AUTH_SSL_CA_CERT': os.path.join(testbed.state_dir, 'pki', 'ca.crt'),
           # were the kubeconfig used, the run would fail: the token is the only way in
           'K8S_AUTH_KUBECONFIG': '/nonexistent/kubeconfig'}
    task = {'name': 'rollout', 'gpuops.gpu.mig_rollout': {
        'assignments': [{'nodes': ['a100-0'], 'config': 'all-1g.5gb'}],
        'operator_namespace': role_vars(testbed)['rbac_operator_namespace'],
        'poll_interval': 0.3, 'state_timeout': 120, 'verify_timeout': 120}}
    rc, results, raw = run_play(testbed.kubeconfig, [task], extra_env=env)
    assert rc == 0, raw[-4000:]
    res = results['rollout']
    assert res['changed'] is True
    assert not res.get('warnings'), res.get('warnings')  # events were recorded, nothing was refused
    node = core.read_node('a100-0')
    assert node.metadata.labels['nvidia.com/mig.config'] == 'all-1g.5gb'
    assert node.metadata.labels['nvidia.com/mig.config.state'] == 'success'
    assert not node.spec.unschedulable
    events = core.list_namespaced_event('default', field_selector='involvedObject.name=a100-0').items
    assert any(e.reason == 'GpuopsDone' for e in events)


def _status(call):
    try:
        call()
    except client.ApiException as exc:
        return exc.status
    return 200


def test_same_account_is_refused_outside_its_role(testbed, sa_client):
    core = client.CoreV1Api(sa_client)
    apps = client.AppsV1Api(sa_client)
    rbac = client.RbacAuthorizationV1Api(sa_client)
    operator_ns = role_vars(testbed)['rbac_operator_namespace']
    # allowed: what a rollout needs
    assert _status(core.list_node) == 200
    assert _status(lambda: core.list_namespaced_config_map(operator_ns)) == 200
    refused = {
        'create a Namespace': lambda: core.create_namespace(client.V1Namespace(metadata={'name': 'gpuops-nope'})),
        'list Secrets cluster-wide': core.list_secret_for_all_namespaces,
        'read Secrets in the operator namespace': lambda: core.list_namespaced_secret(operator_ns),
        'read its own token Secret': lambda: core.read_namespaced_secret(SA + '-token', SA_NS),
        'delete pods outside the operator namespace': lambda: core.delete_collection_namespaced_pod('default'),
        'write ConfigMaps outside the operator namespace': lambda: core.create_namespaced_config_map(
            'default', client.V1ConfigMap(metadata={'name': 'gpuops-nope'})),
        'delete a node': lambda: core.delete_node('cpu-0'),
        'patch DaemonSets': lambda: apps.patch_namespaced_daemon_set('x', operator_ns, {}),
        'bind itself to cluster-admin': lambda: rbac.create_cluster_role_binding(client.V1ClusterRoleBinding(
            metadata={'name': 'gpuops-nope'}, role_ref=client.V1RoleRef(
                api_group='rbac.authorization.k8s.io', kind='ClusterRole', name='cluster-admin'),
            subjects=[client.RbacV1Subject(kind='ServiceAccount', name=SA, namespace=SA_NS)])),
    }
    statuses = dict((what, _status(call)) for what, call in refused.items())
    assert statuses == dict((what, 403) for what in refused), statuses


def test_same_account_is_refused_through_ansible(testbed, token):
    """The refusal as a playbook user sees it: the task fails with the API's Forbidden."""
    with open(testbed.kubeconfig) as handle:
        server = yaml.safe_load(handle)['clusters'][0]['cluster']['server']
    env = {'K8S_AUTH_HOST': server, 'K8S_AUTH_API_KEY': token,
           'K8S_AUTH_SSL_CA_CERT': os.path.join(testbed.state_dir, 'pki', 'ca.crt'),
           'K8S_AUTH_KUBECONFIG': '/nonexistent/kubeconfig'}
    task = {'name': 'namespace', 'kubernetes.core.k8s': {
        'definition': {'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': 'gpuops-nope'}}}}
    rc, results, raw = run_play(testbed.kubeconfig, [task], extra_env=env)
    assert rc != 0
    assert results['namespace'].get('failed') is True
    assert 'forbidden' in raw.lower(), raw[-3000:]
