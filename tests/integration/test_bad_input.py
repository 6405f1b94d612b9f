"""Bad input on the virtual GPU cluster: inputs to gpuops.gpu.mig_rollout and gpuops.gpu.sharing_rollout whose
refusal depends on what the cluster holds, and bad input to the mig, sharing and reset roles, each refused BEFORE any
write with a message that says what to fix. Malformed module options and assignments, refused whatever the cluster
holds, are the modules' unit tests (tests/unit/plugins/modules/test_mig_rollout.py, test_sharing_rollout.py).

Fast by construction: the module cases run as tasks of two playbooks (ignore_errors + register, compared per case
here), the role cases as block/rescue cases of two more (role_cases.failure_cases), the four at the same time.
"Before any write" is read off the cluster before and after them: every label, annotation, cordon and taint of every node (node_facts; a node's
resourceVersion also moves with the simulated agents' heartbeats, so it cannot be compared), the resourceVersion
of every ConfigMap and Lease in the operator namespace (the rollout lock is a Lease), the ClusterPolicy's
generation, spec, labels and annotations (the operator keeps writing its status), and the rollout's Events.
A case passes when it failed, changed nothing, and its message holds the words that say what to fix."""

import base64
import json
import os
from concurrent.futures import ThreadPoolExecutor

import kubernetes
import pytest
import yaml

from ansible_run import bare_name, facts_diff, include, node_facts, run_play, run_role, task_results
from conftest import wait_until
from policy_helpers import (
    CP, MANAGED, POLICY_NAME, enable_time_slicing, ensure_cluster_policy, time_slicing_config, wait_quiet)
from role_cases import failure_cases

NS = 'gpu-operator'
CM = 'gpuops-device-plugin-config'
LABEL_DP = 'nvidia.com/device-plugin.config'
LABEL_MIG = 'nvidia.com/mig.config'
CONTROL_PLANE = 'cpu-0'          # the testbed's node without GPUs, labelled as a control-plane node below
CORDONED = 'h100-1'              # cordoned "by an admin" below, and already at its MIG config and sharing profile
GPU_NODES = ('a100-0', 'a100-1', 'h100-0', 'h100-1', 't4-0', 'l40s-0')
COMMON = {'operator_namespace': NS, 'poll_interval': 0.3, 'state_timeout': 60, 'verify_timeout': 60}
MIG = {'assignments': [{'nodes': ['a100-0'], 'config': 'all-1g.5gb'}]}
SHARING = {'assignments': [{'nodes': ['l40s-0'], 'profile': 'ts'}]}
BIG = 10 ** 12
REFUSED = 'nothing was changed; fix these first'


def ts(replicas):
    resource = {'name': 'nvidia.com/gpu', 'replicas': replicas}
    return {'version': 'v1', 'sharing': {'timeSlicing': {'resources': [resource]}}}


def assign(key, value, **where):
    return {'assignments': [dict(where, **{key: value})]}


def m(**args):
    return ('mig_rollout', dict(MIG, **args))


def s(**args):
    return ('sharing_rollout', dict(SHARING, **args))


# case -> ((module, arguments over COMMON), words the message must hold): the inputs whose refusal depends on what
# the cluster holds (its nodes and their labels, the ConfigMaps, the ClusterPolicy, a cordon). The first words of a
# refusal by gpuops.gpu are REFUSED (checked below). Malformed options and assignments, refused whatever the cluster
# holds, are the modules' unit tests (tests/unit/plugins/modules/test_mig_rollout.py, test_sharing_rollout.py).
MODULE_CASES = {
    # objects that are not there
    'mig config_map missing': (m(config_map='no-such-configs'), ['no-such-configs not found', 'create it first']),
    'sharing cluster_policy missing': (s(cluster_policy='no-such-policy'), ["ClusterPolicy 'no-such-policy' not "
                                                                            "found"]),
    'mig label_selector matches nothing': (m(**assign('config', 'all-1g.5gb', label_selector='gpuops.dev/pool=x')),
                                           ["label selector 'gpuops.dev/pool=x' matches no node"]),
    'sharing label_selector matches nothing': (s(**assign('profile', 'ts', label_selector='nope')),
                                               ["label selector 'nope' matches no node"]),
    'mig node not found': (m(**assign('config', 'all-1g.5gb', nodes=['a100-9'])), ['node(s) not found: a100-9']),
    'mig node unicode': (m(**assign('config', 'all-1g.5gb', nodes=['\u00e4100-0'])),
                         ['node(s) not found: \u00e4100-0']),
    # nodes no GPU change belongs on (the control-plane label set on cpu-0 below), or that cannot take it
    'mig control-plane node': (m(**assign('config', 'all-disabled', nodes=[CONTROL_PLANE])),
                               ['node cpu-0 is a control-plane node (label node-role.kubernetes.io/control-plane) '
                                'without NVIDIA GPUs', 'leave it out of the assignments']),
    'sharing control-plane selector': (s(**assign('profile', 'ts',
                                                  label_selector='node-role.kubernetes.io/control-plane')),
                                       ['node cpu-0 is a control-plane node']),
    'mig config not MIG capable': (m(**assign('config', 'all-1g.5gb', nodes=['t4-0'])),
                                   ['node t4-0', "only 'all-disabled' can be applied"]),
    # profiles against the device-plugin ConfigMap (once replicas 10^12 relabelled nodes, and inline profiles
    # missing from the ConfigMap crash-looped the device plugin)
    'sharing profile 0o17': (s(**assign('profile', '0o17', nodes=['l40s-0'])),
                             ["profile '0o17' is not a key of the device-plugin ConfigMap"]),
    'sharing profile unknown': (s(**assign('profile', 'ts-99', nodes=['l40s-0'])),
                                ["profile 'ts-99' is not a key of the device-plugin ConfigMap (profiles:"]),
    'sharing replicas 10^12 in the ConfigMap': (s(**assign('profile', 'huge', nodes=['l40s-0'])),
                                                ['replicas 1000000000000 is more than 256', 'lower replicas']),
    'sharing inline profile not in the ConfigMap': (
        s(config_map=CM, profiles={'ts-8': ts(8)}, **assign('profile', 'ts-8', nodes=['l40s-0'])),
        ['profiles ts-8 are missing from the device-plugin ConfigMap gpu-operator/gpuops-device-plugin-config',
         'write the profiles there first']),
    'sharing inline profile differs': (s(config_map=CM, profiles={'ts': ts(6)}),
                                       ['profiles ts differ from the device-plugin ConfigMap', 'check mode']),
    # an admin-cordoned node already at target (once an uncaught "outside this rollout")
    'mig admin-cordoned node at target': (
        m(assignments=[{'nodes': [CORDONED], 'config': '{{ __at_target }}'},
                       {'nodes': ['a100-0'], 'config': 'all-1g.5gb'}]),
        ['already unavailable (h100-1: cordoned', 'uncordon them (kubectl uncordon) or raise max_unavailable']),
    'sharing admin-cordoned node at target': (
        s(assignments=[{'nodes': [CORDONED], 'profile': 'none'}, {'nodes': ['l40s-0'], 'profile': 'ts'}]),
        ['already unavailable (h100-1: cordoned', 'uncordon them']),
}
OWN_WORDS = {'mig config_map missing', 'sharing cluster_policy missing'}  # refused by a read, in their own words

# case -> (role, role variables, task the failure must come from, words of the message). The module checks behind
# these tasks have their own unit tests; here one run per refusing task sets every variable that task checks wrong at
# once: each error in the message proves the role hands that variable over, and the snapshot that it stops before
# writing.
ROLE_CASES = {
    'role mig options out of range': ('mig', {'mig_state_timeout': 0, 'mig_poll_interval': 0, 'mig_drain_timeout': -1,
                                              'mig_operator_namespace': ''}, 'Validate every assignment', [
        'state_timeout must be between 1', 'poll_interval must be between 0.1', 'drain_timeout must be between 0',
        "operator_namespace '' is not a namespace name"]),
    'role mig max_unavailable 150% and a selector comma': ('mig', {
        'mig_max_unavailable': '150%',
        'mig_assignments': [{'selector': {'gpuops.dev/pool': 'training,x'}, 'config': 'all-1g.5gb'}]},
        'Validate every assignment', ['max_unavailable', 'between 1% and 100%', 'one value per key']),
    'role mig argument types': ('mig', {'mig_strategy': 'double', 'mig_verify_timeout': 'abc'}, 'Validating arguments',
                                ['mig_strategy', 'mig_verify_timeout']),
    'role sharing options out of range': ('sharing', {'sharing_state_timeout': 0, 'sharing_poll_interval': -1},
                                          'Check the node assignments', ['state_timeout must be between 1',
                                                                         'poll_interval must be between 0.1']),
    'role sharing control-plane node': ('sharing', {'sharing_assignments': [{'nodes': [CONTROL_PLANE],
                                                                             'profile': 'ts'}]},
                                        'Check the node assignments', ['node cpu-0 is a control-plane node']),
    'role sharing replicas 10^12': ('sharing', {'sharing_profiles': {'huge': ts(BIG)}, 'sharing_assignments': [
        {'nodes': ['l40s-0'], 'profile': 'huge'}]}, 'Check the inputs', ['replicas 1000000000000 is more than 256']),
    'role reset argument types': ('reset', {'reset_poll_interval': 'fast', 'reset_nodes': {'a100-0': True}},
                                  'Validating arguments', ['reset_poll_interval', 'reset_nodes']),
}
# Inputs that name someone else's objects, or redefine a built-in one: refused in the role's first checks (or, for a
# ConfigMap that exists, once it is read), in a real run and in check mode alike. Before, the mig role wrote its configs
# into the operator's default-mig-parted-config (or a script the operator's privileged DaemonSets run), the sharing
# role set /etc as the MPS root, and a MIG-enabled all-disabled replaced the built-in one. No node assignments, so
# that on the old code each case "only" writes the ConfigMap and the ClusterPolicy. Which names and MPS roots the
# checks refuse is unit-tested (common/test_ownership.py, gpu/test_sharing_checks.py); here each role variable once.
MIG_ENABLED = [{'devices': 'all', 'mig-enabled': True, 'mig-devices': {}}]
MPS = {'version': 'v1', 'sharing': {'mps': {'resources': [{'name': 'nvidia.com/gpu', 'replicas': 4}]}}}
UNLABELLED_CM = 'user-mig-parted-config'      # created below without the collection's label
OWNED_CM = 'gpuops-owned-by-policy'           # created below with the label and an owner reference to the policy


def mig_cm(name):
    return {'mig_custom_configs': {'gpuops-bad-input': MIG_ENABLED}, 'mig_assignments': [], 'mig_config_map_name': name}


def sharing_in(**variables):
    return dict({'sharing_profiles': {'mps-4': MPS}, 'sharing_assignments': []}, **variables)


OWNED_CASES = {
    'role mig operator\'s ConfigMap and a built-in config redefined': ('mig', {
        'mig_config_map_name': 'default-mig-parted-config', 'mig_custom_configs': {'all-disabled': MIG_ENABLED},
        'mig_assignments': []}, 'Check the inputs', [
        "mig_config_map_name: ConfigMap 'default-mig-parted-config' belongs to the GPU operator (its built-in MIG "
        "configs", 'choose a name of your own',
        "mig_custom_configs.all-disabled: 'all-disabled' is the name of one of the GPU operator's built-in MIG configs",
        'mig_allow_builtin_override: true']),
    'role mig ConfigMap not the collection\'s': ('mig', mig_cm(UNLABELLED_CM), 'Check that the ConfigMap is not', [
        'ConfigMap %s/%s exists and gpuops.gpu did not create it' % (NS, UNLABELLED_CM), 'to hand it over']),
    'role mig ConfigMap owned by the policy': ('mig', mig_cm(OWNED_CM), 'Check that the ConfigMap is not', [
        'ConfigMap %s/%s belongs to ClusterPolicy %s (owner reference)' % (NS, OWNED_CM, POLICY_NAME)]),
    'role sharing MPS root /etc and the operator\'s ConfigMap': ('sharing', sharing_in(
        sharing_mps_root='/etc', sharing_config_map_name='default-gpu-clients'), 'Check the inputs', [
        'sharing_mps_root must be /run/nvidia/mps', "got '/etc'",
        "sharing_config_map_name: ConfigMap 'default-gpu-clients' belongs to the GPU operator"]),
}
ROLE_CASES.update(OWNED_CASES)
# the same, in check mode (before, check mode accepted them all)
ROLE_CHECK_CASES = dict((case + ' (check mode)', spec) for case, spec in OWNED_CASES.items())

ROLE_BASE = {'mig_operator_namespace': NS, 'mig_assignments': MIG['assignments'], 'mig_poll_interval': 0.3,
             'sharing_operator_namespace': NS, 'sharing_assignments': SHARING['assignments'],
             'sharing_poll_interval': 0.3, 'reset_operator_namespace': NS}


def labels(core, name):
    return core.read_node(name).metadata.labels or {}


@pytest.fixture(scope='module', autouse=True)
def bad_input_cluster(testbed, core, custom):
    """A ready ClusterPolicy; the device-plugin ConfigMap with the profile 'ts' (time-slicing 4) and 'huge'
    (10^12 replicas, written the way a hand edit would); cpu-0 labelled as a control-plane node; h100-1 at MIG
    config all-disabled, then cordoned by an admin; then quiet, so that nothing else writes while the cases run."""
    ensure_cluster_policy(custom)
    wait_until('GFD labels', lambda: all(labels(core, n).get('nvidia.com/gpu.product') for n in GPU_NODES), 180)
    enable_time_slicing(core, custom, NS, [], replicas=4, cm_name=CM, key='ts')
    core.patch_namespaced_config_map(CM, NS, {'data': {'huge': time_slicing_config(BIG)}})
    policy = custom.get_cluster_custom_object(*CP, POLICY_NAME)['metadata']
    core.create_namespaced_config_map(NS, {'metadata': {'name': UNLABELLED_CM}, 'data': {'config.yaml': 'a user\'s'}})
    core.create_namespaced_config_map(NS, {'metadata': {'name': OWNED_CM, 'labels': MANAGED, 'ownerReferences': [
        {'apiVersion': 'nvidia.com/v1', 'kind': 'ClusterPolicy', 'name': POLICY_NAME, 'uid': policy['uid']}]}})
    core.patch_node(CONTROL_PLANE, {'metadata': {'labels': {'node-role.kubernetes.io/control-plane': ''}}})
    core.patch_node(CORDONED, {'metadata': {'labels': {LABEL_MIG: 'all-disabled'}}})
    wait_until('%s at MIG config all-disabled' % CORDONED,
               lambda: labels(core, CORDONED).get(LABEL_MIG + '.state') == 'success', 90)
    core.patch_node(CORDONED, {'spec': {'unschedulable': True}})
    wait_quiet(core)


def snapshot(core, custom, coordination):
    policy = custom.get_cluster_custom_object(*CP, POLICY_NAME)
    meta = policy['metadata']
    return {
        'nodes': node_facts(core),
        'config maps': dict((c.metadata.name, c.metadata.resource_version)
                            for c in core.list_namespaced_config_map(NS).items),
        'leases': dict((le.metadata.name, le.metadata.resource_version)
                       for le in coordination.list_namespaced_lease(NS).items),
        'cluster policy': (meta.get('generation'), meta.get('labels'), meta.get('annotations'), policy['spec']),
        'rollout events': sorted(e.metadata.uid for e in core.list_event_for_all_namespaces().items
                                 if (e.reason or '').startswith('Gpuops')),
    }


def assert_unchanged(before, after):
    assert facts_diff(before['nodes'], after['nodes']) == []
    for what in ('config maps', 'leases', 'cluster policy', 'rollout events'):
        assert after[what] == before[what], what


@pytest.fixture(scope='module')
def coordination(api_client):
    return kubernetes.client.CoordinationV1Api(api_client)


def halves(items):
    return items[::2], items[1::2]


def module_task(case, module, args):
    return {'name': case, 'gpuops.gpu.' + module: dict(COMMON, **args), 'ignore_errors': True}


@pytest.fixture(scope='module')
def runs(testbed, core, custom, coordination):
    """The module cases and the role cases, each in two plays, the four at the same time (none writes; most of a
    module case is the rollout action polling its job, so four processes keep both cores busy), between one snapshot
    of the cluster before and one after."""
    cordoned = labels(core, CORDONED)
    at_target = cordoned.get(LABEL_MIG)
    # the admin-cordoned cases need the node at its MIG config and unshared; else they would write
    state = dict((k, v) for k, v in cordoned.items() if k.startswith(('nvidia.com/mig', 'nvidia.com/gpu.s', LABEL_DP)))
    assert at_target and cordoned.get(LABEL_MIG + '.state') == 'success', state
    assert cordoned.get('nvidia.com/gpu.sharing-strategy') == 'none' and LABEL_DP not in cordoned, state
    before = snapshot(core, custom, coordination)
    tasks = [module_task(case, module, args) for case, ((module, args), _words) in MODULE_CASES.items()]
    role_runs = [(case, (role, variables)) for case, (role, variables, _t, _w) in ROLE_CASES.items()]
    role_runs += [(case, (role, variables, True)) for case, (role, variables, _t, _w) in ROLE_CHECK_CASES.items()]
    with ThreadPoolExecutor(max_workers=4) as pool:
        module_plays = [pool.submit(run_play, testbed.kubeconfig, part, vars={'__at_target': at_target})
                        for part in halves(tasks)]
        role_plays = [pool.submit(failure_cases, testbed.kubeconfig, dict(part), ROLE_BASE) for part in halves(role_runs)]
        module_results, role_results, module_raw, role_raw = {}, {}, '', ''
        for play in module_plays:
            _rc, results, raw = play.result()
            module_results.update(results)
            module_raw += raw
        for play in role_plays:
            results, raw = play.result()
            role_results.update(results)
            role_raw += raw
    return {'before': before, 'after': snapshot(core, custom, coordination),
            'modules': (module_results, module_raw), 'roles': (role_results, role_raw)}


def test_module_cases_fail_before_any_write(runs):
    results, raw = runs['modules']
    wrong = []
    for case, ((_module, _args), words) in MODULE_CASES.items():
        res = results.get(case)
        if res is None:
            wrong.append('%s: did not run' % case)
            continue
        msg = str(res.get('msg', ''))
        missing = [w for w in words if w not in msg]
        if res.get('failed') is not True or res.get('changed') or missing:
            wrong.append('%s: failed=%s changed=%s missing %s in: %s' % (case, res.get('failed'), res.get('changed'),
                                                                         missing, msg[:600]))
        if case not in OWN_WORDS and not msg.startswith(REFUSED):
            wrong.append('%s: does not start with %r: %s' % (case, REFUSED, msg[:300]))
        if 'Traceback' in msg or 'HTTP response headers' in msg:
            wrong.append('%s: raw error: %s' % (case, msg[:600]))
    assert wrong == [], '\n'.join(wrong) + '\n' + raw[-2000:]
    assert_unchanged(runs['before'], runs['after'])


def test_role_cases_fail_before_any_write(runs):
    got, raw = runs['roles']
    wrong = []
    for case, (_role, _variables, task, words) in list(ROLE_CASES.items()) + list(ROLE_CHECK_CASES.items()):
        if case not in got:
            wrong.append('%s: did not fail' % case)
            continue
        failed_in = bare_name(got[case]['task'])
        missing = [w for w in words if w not in got[case]['msg']]
        if not failed_in.startswith(task) or missing:
            wrong.append('%s: failed in %r, missing %s in: %s' % (case, failed_in, missing, got[case]['msg'][:600]))
    assert wrong == [], '\n'.join(wrong) + '\n' + raw[-2000:]
    assert_unchanged(runs['before'], runs['after'])


def test_each_bad_input_gets_its_own_message(runs):
    """No two cases of one module or role (real runs) are refused with the same message: a generic refusal, or a
    check that answers for another, fails here although each message holds its case's words. (The same cluster fact
    reached through two modules, e.g. the control-plane node, may read the same.)"""
    messages = dict((case, (MODULE_CASES[case][0][0], str(res.get('msg'))))
                    for case, res in runs['modules'][0].items() if case in MODULE_CASES)
    messages.update((case, (ROLE_CASES[case][0], got['msg'])) for case, got in runs['roles'][0].items()
                    if case in ROLE_CASES)
    assert sorted(messages) == sorted(list(MODULE_CASES) + list(ROLE_CASES))
    by_text = {}
    for case, where_and_msg in messages.items():
        by_text.setdefault(where_and_msg, []).append(case)
    assert [cases for cases in by_text.values() if len(cases) > 1] == []


# ------------------------------------------------------ a run the API server refuses writes nothing before it

SA, SA_NS = 'gpuops-bad-input', 'gpuops-automation'
DENY = 'gpuops-test-deny-clusterpolicy'
REFUSAL = 'refused for this test: this account may not change the ClusterPolicy'
TOKEN_CM = 'gpuops-token-device-plugin-config'


def _server(testbed):
    with open(testbed.kubeconfig) as handle:
        return yaml.safe_load(handle)['clusters'][0]['cluster']['server']


def _sa_client(testbed, token):
    conf = kubernetes.client.Configuration()
    conf.host = _server(testbed)
    conf.api_key = {'authorization': 'Bearer ' + token}
    conf.ssl_ca_cert = os.path.join(testbed.state_dir, 'pki', 'ca.crt')
    conf.verify_ssl = True
    return kubernetes.client.ApiClient(conf)


def _refused(sa_custom):
    """The API server's message when the account's ClusterPolicy change is refused (server-side dry run), else ''."""
    try:
        sa_custom.patch_cluster_custom_object(*CP, POLICY_NAME, {'spec': {'devicePlugin': {'config': {
            'name': TOKEN_CM, 'default': ''}}}}, dry_run='All')
    except kubernetes.client.ApiException as exc:
        return json.loads(exc.body).get('message', '')
    return ''


@pytest.fixture
def refused_token(testbed, core, api_client):
    """The token of a ServiceAccount bound to the rollout account's roles (the rbac role, as an admin would), and an
    admission policy of this test's own that refuses that account any ClusterPolicy change, dry runs included: the
    role run with it is refused on the ClusterPolicy and only there (its ConfigMap it may write)."""
    rc, _results, raw = run_role(testbed.kubeconfig, 'rbac', {'rbac_operator_namespace': NS, 'rbac_service_accounts': [
        {'name': SA, 'namespace': SA_NS, 'access': ['rollout'], 'token_secret': True}]})
    assert rc == 0, raw[-4000:]
    token = base64.b64decode(core.read_namespaced_secret(SA + '-token', SA_NS).data['token']).decode()
    admission = kubernetes.client.AdmissionregistrationV1Api(api_client)
    admission.create_validating_admission_policy({
        'apiVersion': 'admissionregistration.k8s.io/v1', 'kind': 'ValidatingAdmissionPolicy', 'metadata': {'name': DENY},
        'spec': {'failurePolicy': 'Fail',
                 'matchConstraints': {'resourceRules': [{'apiGroups': ['nvidia.com'], 'apiVersions': ['*'],
                                                         'resources': ['clusterpolicies'], 'operations': ['UPDATE']}]},
                 'matchConditions': [{'name': 'this-account', 'expression':
                                      "request.userInfo.username == 'system:serviceaccount:%s:%s'" % (SA_NS, SA)}],
                 'validations': [{'expression': 'false', 'message': REFUSAL, 'reason': 'Forbidden'}]}})
    admission.create_validating_admission_policy_binding({
        'apiVersion': 'admissionregistration.k8s.io/v1', 'kind': 'ValidatingAdmissionPolicyBinding',
        'metadata': {'name': DENY}, 'spec': {'policyName': DENY, 'validationActions': ['Deny']}})
    try:
        sa_custom = kubernetes.client.CustomObjectsApi(_sa_client(testbed, token))
        wait_until('the test policy refuses the account', lambda: REFUSAL in _refused(sa_custom), 60)
        yield token
    finally:
        admission.delete_validating_admission_policy_binding(DENY)
        admission.delete_validating_admission_policy(DENY)


def test_a_run_the_api_server_refuses_writes_nothing_before_it(testbed, core, custom, coordination, refused_token):
    """The sharing role as an account the API server refuses the ClusterPolicy change: its dry run fails first, with
    the API server's message in one line, and the device-plugin ConfigMap is never written. Before, the role wrote the
    ConfigMap, took the lock, then failed on the patch with a raw b'{"kind":"Status",...}' body, the ConfigMap left
    behind."""
    env = {'K8S_AUTH_HOST': _server(testbed), 'K8S_AUTH_API_KEY': refused_token,
           'K8S_AUTH_SSL_CA_CERT': os.path.join(testbed.state_dir, 'pki', 'ca.crt'),
           'K8S_AUTH_KUBECONFIG': '/nonexistent/kubeconfig'}  # the token is the only way in
    variables = {'sharing_operator_namespace': NS, 'sharing_config_map_name': TOKEN_CM,
                 'sharing_profiles': {'ts-4': ts(4)}, 'sharing_poll_interval': 0.3}
    before = snapshot(core, custom, coordination)
    rc, _results, raw = run_play(testbed.kubeconfig, [include('sharing')], vars=variables, extra_env=env)
    after = snapshot(core, custom, coordination)
    failed = [(name, result) for name, result in task_results(raw) if result.get('failed')]
    assert rc != 0 and len(failed) == 1, raw[-4000:]
    name, result = failed[0]
    assert name == 'preflight | Check the ClusterPolicy change with the API server before any write (server-side dry run)', name
    msg = str(result.get('msg'))
    assert msg.startswith('the apiserver refuses this change to ClusterPolicy %s (server-side dry run): ' % POLICY_NAME)
    assert REFUSAL in msg and msg.endswith('nothing was changed'), msg
    assert '\n' not in msg and 'kind' not in msg and "b'" not in msg, 'one line, the message and no raw body: ' + msg
    assert TOKEN_CM not in after['config maps'], 'the ConfigMap was written before the refused ClusterPolicy change'
    assert_unchanged(before, after)
