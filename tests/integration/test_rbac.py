"""Least privilege on the virtual cluster's real RBAC: the gpuops.gpu.rbac role (idempotent, check mode,
bad inputs fail before writing), then a MIG rollout (gpuops.gpu.mig_rollout) as a ServiceAccount bound only to
gpuops-gpu-rollout, authenticated with its token the way AWX's bearer-token credential does
(K8S_AUTH_HOST / K8S_AUTH_API_KEY / K8S_AUTH_SSL_CA_CERT, no kubeconfig), and the same account refused
everything outside that role. What RBAC cannot narrow, the role's ValidatingAdmissionPolicies do, on the real
apiserver: the same token may patch only the ClusterPolicy fields and node labels/annotations/cordon a MIG or
sharing rollout writes, and only on GPU nodes (every request below is a server-side dry run, so the
policies and RBAC judge it and nothing is written). The real MIG rollout through the mig role, ClusterPolicy
patch included, as such an account: tests/integration/test_awx_jobs.py."""

import base64
import json
import os

import pytest
import yaml
from kubernetes import client

from ansible_collections.gpuops.gpu.plugins.module_utils.common import names
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import dra
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.sharing_kind import ANN_HASH
from ansible_run import run_play, run_role
from cluster_policy_example import clusterpolicy_example
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
    admission = client.AdmissionregistrationV1Api(api_client)
    out = {}
    for kind, items in (('ClusterRole', rbac.list_cluster_role(label_selector=MANAGED).items),
                        ('ClusterRoleBinding', rbac.list_cluster_role_binding(label_selector=MANAGED).items),
                        ('Role', rbac.list_role_for_all_namespaces(label_selector=MANAGED).items),
                        ('RoleBinding', rbac.list_role_binding_for_all_namespaces(label_selector=MANAGED).items),
                        ('ServiceAccount', core.list_service_account_for_all_namespaces(label_selector=MANAGED).items),
                        ('Secret', core.list_secret_for_all_namespaces(label_selector=MANAGED).items),
                        ('ValidatingAdmissionPolicy', admission.list_validating_admission_policy(
                            label_selector=MANAGED).items),
                        ('ValidatingAdmissionPolicyBinding', admission.list_validating_admission_policy_binding(
                            label_selector=MANAGED).items)):
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
    admission = client.AdmissionregistrationV1Api(api_client)
    policies = [p.metadata.name for p in admission.list_validating_admission_policy(label_selector=MANAGED).items]
    assert sorted(policies) == ['gpuops-gpu-rollout-clusterpolicy', 'gpuops-gpu-rollout-configmaps',
                                'gpuops-gpu-rollout-leases', 'gpuops-gpu-rollout-nodes', 'gpuops-gpu-rollout-pods']
    bound = [(b.spec.policy_name, b.spec.validation_actions)
             for b in admission.list_validating_admission_policy_binding(label_selector=MANAGED).items]
    assert sorted(bound) == [(p, ['Deny']) for p in sorted(policies)]


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


def test_same_account_is_refused_through_ansible(testbed, token, cluster_policy):
    """The refusals as a playbook user sees them: the task fails with the API's Forbidden, and for the
    ClusterPolicy with the admission policy's message saying what the account may change."""
    with open(testbed.kubeconfig) as handle:
        server = yaml.safe_load(handle)['clusters'][0]['cluster']['server']
    env = {'K8S_AUTH_HOST': server, 'K8S_AUTH_API_KEY': token,
           'K8S_AUTH_SSL_CA_CERT': os.path.join(testbed.state_dir, 'pki', 'ca.crt'),
           'K8S_AUTH_KUBECONFIG': '/nonexistent/kubeconfig'}
    tasks = [{'name': 'namespace', 'ignore_errors': True, 'kubernetes.core.k8s': {
        'definition': {'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': 'gpuops-nope'}}}},
        {'name': 'driver image', 'ignore_errors': True, 'kubernetes.core.k8s': {
            'state': 'patched', 'api_version': 'nvidia.com/v1', 'kind': 'ClusterPolicy', 'name': cluster_policy,
            'merge_type': 'merge', 'definition': {'spec': PRIVILEGED_POLICY_PATCHES['driver image']}}}]
    rc, results, raw = run_play(testbed.kubeconfig, tasks, extra_env=env)
    assert results['namespace'].get('failed') is True
    assert 'forbidden' in json.dumps(results['namespace']).lower(), raw[-3000:]
    assert results['driver image'].get('failed') is True
    assert 'may change only spec.mig.strategy' in json.dumps(results['driver image']), raw[-3000:]


def _can_i(authz, user, verb, resource, group=''):
    """``kubectl auth can-i`` as an admin asks it for ``user``: a SubjectAccessReview, judged by the API's own
    RBAC authorizer (it answers for resources the cluster does not serve, DeviceTaintRule among them)."""
    review = authz.create_subject_access_review(client.V1SubjectAccessReview(spec=client.V1SubjectAccessReviewSpec(
        user=user, groups=['system:authenticated'] + (['system:serviceaccounts'] if ':serviceaccount:' in user else []),
        resource_attributes=client.V1ResourceAttributes(group=group, resource=resource, verb=verb))))
    return review.status.allowed


REPORT_USER = 'gpuops-test-report'
READ = ('get', 'list', 'watch')


@pytest.fixture(scope='module')
def report_user(api_client, applied):
    """A user bound to gpuops-gpu-report only (unlabelled: not one of the role's objects), removed after."""
    rbac = client.RbacAuthorizationV1Api(api_client)
    rbac.create_cluster_role_binding(client.V1ClusterRoleBinding(
        metadata={'name': REPORT_USER}, role_ref=client.V1RoleRef(
            api_group='rbac.authorization.k8s.io', kind='ClusterRole', name='gpuops-gpu-report'),
        subjects=[client.RbacV1Subject(kind='User', name=REPORT_USER, api_group='rbac.authorization.k8s.io')]))
    yield REPORT_USER
    rbac.delete_cluster_role_binding(REPORT_USER)


def test_accounts_hold_the_dra_permissions_their_jobs_use(api_client, applied, report_user):
    """DRA and quotas as the jobs use them: the rollout account reads ResourceQuotas and DeviceClasses (MIG from
    demand), the driver's ResourceSlices and the ResourceClaims (gpu_nodes_info's DRA view), and writes gpu_health's DeviceTaintRules but no
    other DRA object; the report account only reads slices and claims."""
    authz = client.AuthorizationV1Api(api_client)
    rollout = 'system:serviceaccount:%s:%s' % (SA_NS, SA)
    group = 'resource.k8s.io'
    asked = {}
    for verb in READ:
        for who in (rollout, report_user):
            asked[(who, verb, 'resourceslices')] = True
            asked[(who, verb, 'resourceclaims')] = True
        asked[(rollout, verb, 'resourcequotas')] = True
        asked[(rollout, verb, 'deviceclasses')] = True
        asked[(report_user, verb, 'resourcequotas')] = False
    for verb in ('get', 'list', 'create', 'update', 'delete'):
        asked[(rollout, verb, 'devicetaintrules')] = True
        asked[(report_user, verb, 'devicetaintrules')] = False
    for verb in ('patch', 'deletecollection'):
        asked[(rollout, verb, 'devicetaintrules')] = False
    for resource in ('resourceslices', 'resourceclaims', 'resourceclaimtemplates', 'deviceclasses', 'resourcequotas'):
        for verb in ('create', 'update', 'patch', 'delete'):
            asked[(rollout, verb, resource)] = asked[(report_user, verb, resource)] = False
    answers = dict((key, _can_i(authz, key[0], key[1], key[2], '' if key[2] == 'resourcequotas' else group))
                   for key in asked)
    assert answers == asked, sorted(key for key in asked if answers[key] != asked[key])


# -------------------------------------------------- what RBAC cannot narrow: the rollout's admission policies

POLICY = 'gpu-cluster-policy'
CONTROL_PLANE = 'gpuops-control-plane-0'
# What the roles patch into the ClusterPolicy's spec (merge patches, as roles/mig, roles/sharing and roles/reset
# build them): all allowed to the rollout account.
ROLE_POLICY_PATCHES = {
    'mig role: strategy and custom configs': {'mig': {'strategy': 'mixed'}, 'migManager': {'config': {
        'name': 'gpuops-mig-parted-config', 'default': 'all-disabled'}}},
    'sharing role: device-plugin profiles and MPS root': {'devicePlugin': {
        'config': {'name': 'gpuops-device-plugin-config', 'default': 'ts'}, 'mps': {'root': '/run/nvidia/mps'}}},
    'reset: stop the default profile': {'devicePlugin': {'config': {'default': ''}}},
    'reset: remove the custom configs': {'migManager': {'config': None}, 'devicePlugin': {'config': None}},
}
# What would change what the operator runs (privileged DaemonSets on every GPU node): all refused.
PRIVILEGED_POLICY_PATCHES = {
    'driver image': {'driver': {'repository': 'registry.example.com/evil', 'image': 'driver', 'version': '1'}},
    'toolkit env': {'toolkit': {'env': [{'name': 'CONTAINERD_CONFIG', 'value': '/etc/evil.toml'}]}},
    'device-plugin image beside its config': {'devicePlugin': {'repository': 'registry.example.com/evil',
                                                               'config': {'name': 'x', 'default': ''}}},
    'MIG manager env': {'migManager': {'env': [{'name': 'WITH_REBOOT', 'value': 'true'}]}},
    'validator version': {'validator': {'version': 'v0.0.1'}},
    'switch an operand on': {'gds': {'enabled': True}},
    'a new operand section': {'kataManager': {'enabled': True}},
    'sandbox workloads': {'sandboxWorkloads': {'enabled': True}},
    'host root': {'hostPaths': {'rootFS': '/'}},
    'daemonset settings': {'daemonsets': {'priorityClassName': 'system-node-critical'}},
    'switch the device plugin off': {'devicePlugin': {'enabled': False}},
    'MPS root outside /run/nvidia': {'devicePlugin': {'mps': {'root': '/'}}},
    'MPS root escaping /run/nvidia': {'devicePlugin': {'mps': {'root': '/run/nvidia/../../etc'}}},
    "MPS root in the driver's directory": {'devicePlugin': {'mps': {'root': '/run/nvidia/driver'}}},
    "MPS root in the validator's directory": {'devicePlugin': {'mps': {'root': '/run/nvidia/validations'}}},
    "MPS root in the toolkit's directory": {'devicePlugin': {'mps': {'root': '/run/nvidia/toolkit'}}},
    'remove a section': {'gds': None},
}


@pytest.fixture(scope='module')
def cluster_policy(custom):
    """NVIDIA's example ClusterPolicy, what an install leaves. Its reconcile is not waited for: the requests
    against it are refused or dry runs."""
    if not custom.list_cluster_custom_object(*names.CLUSTER_POLICY).get('items'):
        custom.create_cluster_custom_object(*names.CLUSTER_POLICY, clusterpolicy_example(POLICY))
    return POLICY


@pytest.fixture(scope='module')
def control_plane_node(core):
    """A control-plane Node without GPUs (no kubelet behind it; its taint keeps pods away), removed after."""
    core.create_node(client.V1Node(
        metadata=client.V1ObjectMeta(name=CONTROL_PLANE, labels={'node-role.kubernetes.io/control-plane': ''}),
        spec=client.V1NodeSpec(taints=[client.V1Taint(key='node-role.kubernetes.io/control-plane',
                                                      effect='NoSchedule')])))
    yield CONTROL_PLANE
    core.delete_node(CONTROL_PLANE)


def _dry(call, *args):
    """(HTTP status, message) of a server-side dry run: admission and RBAC judge it, nothing is stored."""
    try:
        call(*args, dry_run='All')
    except client.ApiException as exc:
        try:
            return exc.status, json.loads(exc.body).get('message', '')
        except ValueError:
            return exc.status, exc.body
    return 200, ''


def _verdicts(results, policy):
    """{what: 'allowed' | 'refused by <policy>' | other status and message}"""
    out = {}
    for what, (status, message) in results.items():
        if status == 200:
            out[what] = 'allowed'
        elif status == 403 and "ValidatingAdmissionPolicy '%s'" % policy in message:
            out[what] = 'refused by ' + policy
        else:
            out[what] = '%s %s' % (status, message)
    return out


def test_rollout_account_may_change_only_the_rollout_fields_of_the_cluster_policy(sa_client, custom, cluster_policy):
    sa = client.CustomObjectsApi(sa_client)

    def patch(body):
        return _dry(sa.patch_cluster_custom_object, *(names.CLUSTER_POLICY + (cluster_policy, body)))

    policy = 'gpuops-gpu-rollout-clusterpolicy'
    allowed = _verdicts(dict((what, patch({'spec': body})) for what, body in ROLE_POLICY_PATCHES.items()), policy)
    assert allowed == dict((what, 'allowed') for what in ROLE_POLICY_PATCHES)
    refused = dict((what, patch({'spec': body})) for what, body in PRIVILEGED_POLICY_PATCHES.items())
    refused['label the ClusterPolicy'] = patch({'metadata': {'labels': {'example.com/owner': 'me'}}})
    assert _verdicts(refused, policy) == dict((what, 'refused by ' + policy) for what in refused)
    assert 'spec.driver' in refused['driver image'][1], 'the message names what may not change'
    # the policy restricts the rollout account only: an admin (and the operator, and the install account) may
    assert _dry(custom.patch_cluster_custom_object, *(names.CLUSTER_POLICY + (cluster_policy, {
        'spec': PRIVILEGED_POLICY_PATCHES['driver image']}))) == (200, '')


def _rollout_node_writes():
    """The node patches a MIG or sharing rollout sends (rollout/node.py, rollout/drain.py)."""
    now = '2026-01-01T00:00:00Z'
    return {
        'cordon': {'spec': {'unschedulable': True}, 'metadata': {'annotations': {
            names.ANN_ROLLOUT_TARGET: 'nvidia.com/mig.config=all-1g.5gb', names.ANN_ROLLOUT_PHASE: 'cordoned',
            names.ANN_ROLLOUT_REASON: None, names.ANN_ROLLOUT_UPDATED: now, names.ANN_PHYSICAL_GPUS: '8',
            names.ANN_CORDONED_BY_ROLLOUT: 'true'}}},
        'MIG config label': {'metadata': {
            'labels': {names.LABEL_MIG_CONFIG: 'all-1g.5gb', names.LABEL_MIG_STATE: None},
            'annotations': {names.ANN_ROLLOUT_PHASE: 'labelled', names.ANN_ROLLOUT_UPDATED: now}}},
        'device-plugin config label': {'metadata': {'labels': {names.LABEL_DP_CONFIG: 'ts'}}},
        'DRA cutover to dra': {'metadata': {'labels': {dra.DEVICE_PLUGIN_DEPLOY_LABEL: 'false', dra.DRA_NODE_LABEL: 'true'}}},
        'DRA cutover back': {'metadata': {'labels': {dra.DEVICE_PLUGIN_DEPLOY_LABEL: 'true', dra.DRA_NODE_LABEL: None}}},
        'device-plugin restart record': {'metadata': {'annotations': {ANN_HASH: 'abc123'}}},
        'failure reason': {'metadata': {'annotations': {names.ANN_ROLLOUT_PHASE: 'failed',
                                                        names.ANN_ROLLOUT_REASON: 'stuck after 90s'}}},
        'uncordon': {'spec': {'unschedulable': False},
                     'metadata': {'annotations': {names.ANN_CORDONED_BY_ROLLOUT: None}}},
    }


def test_rollout_account_may_patch_only_gpu_nodes_and_only_the_rollout_fields(sa_client, core, control_plane_node):
    sa = client.CoreV1Api(sa_client)
    gpu_node = 'a100-1'
    assert core.read_node(gpu_node).metadata.labels.get(names.LABEL_PRESENT) == 'true'
    policy = 'gpuops-gpu-rollout-nodes'
    writes = _rollout_node_writes()
    allowed = _verdicts(dict((what, _dry(sa.patch_node, gpu_node, body)) for what, body in writes.items()), policy)
    assert allowed == dict((what, 'allowed') for what in writes)
    refused = {
        'cordon a node without GPUs': _dry(sa.patch_node, 'cpu-0', writes['cordon']),
        'cordon a control-plane node': _dry(sa.patch_node, control_plane_node, writes['cordon']),
        'label a control-plane node': _dry(sa.patch_node, control_plane_node, writes['MIG config label']),
    }
    for what, body in {
            'any label': {'metadata': {'labels': {'example.com/team': 'mine'}}},
            'the GPU product label': {'metadata': {'labels': {names.LABEL_PRODUCT: 'NVIDIA-H100-80GB-HBM3'}}},
            'remove nvidia.com/gpu.present': {'metadata': {'labels': {names.LABEL_PRESENT: None}}},
            'an operand switch label': {'metadata': {'labels': {names.DEPLOY_LABEL_PREFIX + 'driver': 'false'}}},
            'the device-plugin switch to another value': {'metadata': {'labels': {
                dra.DEVICE_PLUGIN_DEPLOY_LABEL: 'paused-for-mig-change'}}},
            'the DRA switch to false': {'metadata': {'labels': {dra.DRA_NODE_LABEL: 'false'}}},
            'the workload config label': {'metadata': {'labels': {names.LABEL_WORKLOAD_CONFIG: 'vm-passthrough'}}},
            'a taint': {'spec': {'taints': [{'key': 'example.com/mine', 'effect': 'NoSchedule'}]}},
            'another annotation': {'metadata': {'annotations': {'example.com/note': 'x'}}},
            'a gpuops.gpu annotation that is not a rollout marker': {'metadata': {'annotations': {
                'gpuops.gpu/hami-release': 'gpu-operator/gpu-operator', 'gpuops.gpu/hami-labels': 'nvidia.com/gpu.deploy.driver'}}},
            'a finalizer': {'metadata': {'finalizers': ['example.com/keep']}}}.items():
        refused['GPU node: ' + what] = _dry(sa.patch_node, gpu_node, body)
    assert _verdicts(refused, policy) == dict((what, 'refused by ' + policy) for what in refused)
    assert 'example.com/team' in refused['GPU node: any label'][1], 'the message names what may not change'
    assert 'may set gpuops.gpu/dra-kubelet-plugin only to true' in refused['GPU node: the DRA switch to false'][1]
    # the policies are not the account's to remove
    admission = client.AdmissionregistrationV1Api(sa_client)
    assert _status(lambda: admission.delete_validating_admission_policy(policy)) == 403
    assert _status(lambda: admission.delete_validating_admission_policy_binding(policy)) == 403
    # and they restrict the rollout account only: an admin labels any node
    assert _dry(core.patch_node, 'cpu-0', {'metadata': {'labels': {'example.com/team': 'mine'}}}) == (200, '')


# -------------------------------------------------- an attacker holding the rollout token
# For each write the rollout account has, the nearest thing it must not do, as server-side dry runs (the
# policies and RBAC judge them, nothing is stored). The operator's own objects are the real gpu-operator's,
# reconciled from the example ClusterPolicy.

ATTACK = 'gpuops-attack'


def _operator_objects(core, namespace):
    """The operator's entrypoint ConfigMaps and the operand pods of its DaemonSets, once it created them."""
    def ready():
        maps = [c for c in core.list_namespaced_config_map(namespace).items if c.metadata.name.endswith('-entrypoint')]
        pods = dict((p.metadata.labels.get('app'), p.metadata.name)
                    for p in core.list_namespaced_pod(namespace).items if (p.metadata.labels or {}).get('app'))
        wanted = ('nvidia-device-plugin-daemonset', 'nvidia-container-toolkit-daemonset')
        return (maps, pods) if maps and all(a in pods for a in wanted) else None
    return wait_until('the GPU operator\'s entrypoint ConfigMaps and operand pods in %s' % namespace, ready, 240)


@pytest.fixture(scope='module')
def operator_objects(testbed, core, cluster_policy):
    namespace = role_vars(testbed)['rbac_operator_namespace']
    maps, pods = _operator_objects(core, namespace)
    labels = {'app.kubernetes.io/managed-by': 'gpuops.gpu'}
    own = client.V1ConfigMap(metadata=client.V1ObjectMeta(name=ATTACK + '-own', labels=labels), data={'a': 'b'})
    user = client.V1ConfigMap(metadata=client.V1ObjectMeta(name=ATTACK + '-user'), data={'a': 'b'})
    for body in (own, user):
        core.create_namespaced_config_map(namespace, body)
    yield {'namespace': namespace, 'entrypoints': sorted(c.metadata.name for c in maps), 'pods': pods}
    for body in (own, user):
        core.delete_namespaced_config_map(body.metadata.name, namespace)


def _config_map(name, managed=True, data=None):
    labels = {'app.kubernetes.io/managed-by': 'gpuops.gpu'} if managed else {}
    return {'metadata': {'name': name, 'labels': labels}, 'data': data or {'config.yaml': 'version: v1'}}


def test_rollout_token_writes_only_the_configmaps_the_collection_creates(sa_client, core, operator_objects):
    sa = client.CoreV1Api(sa_client)
    ns = operator_objects['namespace']
    entrypoint = operator_objects['entrypoints'][0]
    script = {'data': {'entrypoint.sh': '#!/bin/sh\nchroot /host sh -c "id > /tmp/owned"\n'}}
    policy = 'gpuops-gpu-rollout-configmaps'
    allowed = {
        'create a config of its own': _dry(sa.create_namespaced_config_map, ns, _config_map(ATTACK + '-new')),
        'change a config of its own': _dry(sa.patch_namespaced_config_map, ATTACK + '-own', ns, {'data': {'x': 'y'}}),
        'delete a config of its own': _dry(sa.delete_namespaced_config_map, ATTACK + '-own', ns),
    }
    assert _verdicts(allowed, policy) == dict((what, 'allowed') for what in allowed)
    refused = {
        "rewrite the operator's entrypoint script": _dry(sa.patch_namespaced_config_map, entrypoint, ns, script),
        "label the operator's entrypoint as its own": _dry(sa.patch_namespaced_config_map, entrypoint, ns, {
            'metadata': {'labels': {'app.kubernetes.io/managed-by': 'gpuops.gpu'}}}),
        "delete the operator's entrypoint": _dry(sa.delete_namespaced_config_map, entrypoint, ns),
        "create an entrypoint before the operator does": _dry(sa.create_namespaced_config_map, ns, _config_map(
            'nvidia-mig-manager-entrypoint', data=script['data'])),
        "write the operator's default MIG configs": _dry(sa.create_namespaced_config_map, ns, _config_map(
            'default-mig-parted-config')),
        "write the operator's GPU clients": _dry(sa.create_namespaced_config_map, ns, _config_map('default-gpu-clients')),
        "rewrite the cluster CA bundle": _dry(sa.patch_namespaced_config_map, 'kube-root-ca.crt', ns, {
            'data': {'ca.crt': 'forged'}}),
        "delete the cluster CA bundle": _dry(sa.delete_namespaced_config_map, 'kube-root-ca.crt', ns),
        'create a ConfigMap without the managed-by label': _dry(sa.create_namespaced_config_map, ns, _config_map(
            ATTACK + '-unlabelled', managed=False)),
        "take over a user's ConfigMap by labelling it": _dry(sa.patch_namespaced_config_map, ATTACK + '-user', ns, {
            'metadata': {'labels': {'app.kubernetes.io/managed-by': 'gpuops.gpu'}}}),
        "delete a user's ConfigMap": _dry(sa.delete_namespaced_config_map, ATTACK + '-user', ns),
        'hand its own config to another owner': _dry(sa.patch_namespaced_config_map, ATTACK + '-own', ns, {
            'metadata': {'ownerReferences': [{'apiVersion': 'v1', 'kind': 'Namespace', 'name': ns,
                                              'uid': core.read_namespace(ns).metadata.uid}]}}),
    }
    assert _verdicts(refused, policy) == dict((what, 'refused by ' + policy) for what in refused)
    assert 'belongs to ClusterPolicy gpu-cluster-policy' in refused["rewrite the operator's entrypoint script"][1], \
        'the message names the owner'
    assert 'the name belongs to the GPU operator' in refused["create an entrypoint before the operator does"][1]


def test_rollout_token_restarts_only_the_operands_a_sharing_rollout_restarts(sa_client, operator_objects):
    sa = client.CoreV1Api(sa_client)
    ns, pods = operator_objects['namespace'], operator_objects['pods']
    policy = 'gpuops-gpu-rollout-pods'
    allowed = {'restart a device-plugin pod': _dry(sa.delete_namespaced_pod, pods['nvidia-device-plugin-daemonset'], ns)}
    assert _verdicts(allowed, policy) == {'restart a device-plugin pod': 'allowed'}
    refused = dict(('restart the %s pod' % app, _dry(sa.delete_namespaced_pod, name, ns)) for app, name in pods.items()
                   if app not in names.RESTARTED_OPERANDS)
    assert 'restart the nvidia-container-toolkit-daemonset pod' in refused
    assert _verdicts(refused, policy) == dict((what, 'refused by ' + policy) for what in refused)


def test_rollout_token_writes_only_the_rollout_lock_lease(testbed, sa_client):
    coordination = client.CoordinationV1Api(sa_client)
    ns = role_vars(testbed)['rbac_operator_namespace']

    def lease(name):
        return {'metadata': {'name': name}, 'spec': {'holderIdentity': 'attacker', 'leaseDurationSeconds': 31536000}}
    policy = 'gpuops-gpu-rollout-leases'
    allowed = {'create the rollout lock': _dry(coordination.create_namespaced_lease, ns, lease(names.LOCK_LEASE_NAME))}
    assert _verdicts(allowed, policy) == {'create the rollout lock': 'allowed'}
    refused = {"create the operator's leader-election Lease": _dry(coordination.create_namespaced_lease, ns,
                                                                   lease('53822513.nvidia.com')),
               'create any other Lease': _dry(coordination.create_namespaced_lease, ns, lease('gpuops-gpu-rollout-2'))}
    assert _verdicts(refused, policy) == dict((what, 'refused by ' + policy) for what in refused)


def test_rollout_token_is_refused_the_next_verb_of_each_permission(testbed, sa_client, cluster_policy, operator_objects):
    """RBAC: every permission the account holds, and the verb or resource next to it that it does not."""
    core = client.CoreV1Api(sa_client)
    policy_api = client.PolicyV1Api(sa_client)
    custom = client.CustomObjectsApi(sa_client)
    coordination = client.CoordinationV1Api(sa_client)
    ns, pods = operator_objects['namespace'], operator_objects['pods']
    pod = pods['nvidia-device-plugin-daemonset']
    refused = {
        'nodes patch -> delete a node': lambda: core.delete_node('a100-1', dry_run='All'),
        'pods get -> read a pod log': lambda: core.read_namespaced_pod_log(pod, ns),
        'pods get -> exec into a pod': lambda: core.connect_get_namespaced_pod_exec(pod, ns, command=['id']),
        'pods get -> create a pod': lambda: core.create_namespaced_pod(ns, client.V1Pod(
            metadata={'name': ATTACK}, spec={'containers': [{'name': 'c', 'image': 'busybox'}]}), dry_run='All'),
        'pods delete (operator namespace) -> patch a pod': lambda: core.patch_namespaced_pod(
            pod, ns, {'metadata': {'labels': {'app': 'x'}}}, dry_run='All'),
        'poddisruptionbudgets get -> delete one': lambda: policy_api.delete_collection_namespaced_pod_disruption_budget(
            'default', dry_run='All'),
        'events create -> delete events': lambda: core.delete_collection_namespaced_event('default', dry_run='All'),
        'clusterpolicies patch -> delete the ClusterPolicy': lambda: custom.delete_cluster_custom_object(
            *(names.CLUSTER_POLICY + (cluster_policy,)), dry_run='All'),
        'clusterpolicies patch -> create a ClusterPolicy': lambda: custom.create_cluster_custom_object(
            *(names.CLUSTER_POLICY + (clusterpolicy_example(ATTACK),)), dry_run='All'),
        'configmaps (operator namespace) -> Secrets there': lambda: core.create_namespaced_secret(
            ns, client.V1Secret(metadata={'name': ATTACK}), dry_run='All'),
        'configmaps (operator namespace) -> delete them all at once': lambda:
            core.delete_collection_namespaced_config_map(ns, dry_run='All'),
        'leases (the lock) -> read another Lease': lambda: coordination.list_namespaced_lease(ns),
        'leases (the lock) -> a Lease elsewhere': lambda: coordination.create_namespaced_lease(
            'default', {'metadata': {'name': names.LOCK_LEASE_NAME}, 'spec': {}}, dry_run='All'),
    }
    statuses = dict((what, _status(call)) for what, call in refused.items())
    assert statuses == dict((what, 403) for what in refused), statuses
