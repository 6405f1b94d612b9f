"""Bad input, wider: malformed inputs to gpuops.gpu.mig_rollout, gpuops.gpu.sharing_rollout and the mig, sharing
and reset roles, each refused BEFORE any write with a message that says what to fix, on the virtual GPU cluster.

Fast by construction: the module cases run as tasks of ONE playbook (ignore_errors + register, compared per case
here), the role cases as block/rescue cases of one more (role_cases.failure_cases), both at the same time. "Before any write" is read off
the cluster before and after both: every label, annotation, cordon and taint of every node (node_facts; a node's
resourceVersion also moves with the simulated agents' heartbeats, so it cannot be compared), the resourceVersion
of every ConfigMap and Lease in the operator namespace (the rollout lock is a Lease), the ClusterPolicy's
generation, spec, labels and annotations (the operator keeps writing its status), and the rollout's Events.
A case passes when it failed, changed nothing, and its message holds the words that say what to fix."""

from concurrent.futures import ThreadPoolExecutor

import pytest

from ansible_run import facts_diff, node_facts, run_play
from conftest import wait_until
from policy_helpers import CP, POLICY_NAME, enable_time_slicing, ensure_cluster_policy, time_slicing_config, wait_quiet
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


# case -> ((module, arguments over COMMON), words the message must hold). The first words of a refusal by
# gpuops.gpu itself are REFUSED (checked below); the others come from Ansible's argument spec.
MODULE_CASES = {
    # durations and poll_interval (issue 17: state_timeout 0 cordoned and labelled, poll_interval 0 made
    # thousands of requests, negative timeouts gave misleading errors)
    'mig state_timeout 0': (m(state_timeout=0), ['state_timeout must be between 1 and 604800 seconds']),
    'sharing state_timeout 0': (s(state_timeout=0), ['state_timeout must be between 1']),
    'mig state_timeout negative': (m(state_timeout=-5), ['state_timeout must be between 1', 'got -5']),
    'mig verify_timeout negative': (m(verify_timeout=-1), ['verify_timeout must be between 1']),
    'sharing verify_timeout negative': (s(verify_timeout=-1), ['verify_timeout must be between 1']),
    'mig drain_timeout negative': (m(drain_timeout=-1), ['drain_timeout must be between 0']),
    'sharing drain_timeout negative': (s(drain_timeout=-30), ['drain_timeout must be between 0']),
    'mig api_timeout negative': (m(api_timeout=-1), ['api_timeout must be between 1']),
    'sharing api_timeout 0': (s(api_timeout=0), ['api_timeout must be between 1']),
    'mig reboot_timeout negative': (m(reboot_timeout=-1), ['reboot_timeout must be between 1']),
    'mig grace_period negative': (m(grace_period=-1), ['grace_period must be between 0']),
    'mig poll_interval 0': (m(poll_interval=0), ['poll_interval must be between 0.1 and 300.0 seconds']),
    'sharing poll_interval 0': (s(poll_interval=0), ['poll_interval must be between 0.1']),
    'mig poll_interval negative': (m(poll_interval=-1), ['poll_interval must be between 0.1']),
    'mig poll_interval absurd': (m(poll_interval=1e9), ['poll_interval must be between 0.1']),
    'sharing poll_interval a day': (s(poll_interval=86400), ['poll_interval must be between 0.1']),
    'mig poll_interval .nan': (m(poll_interval=float('nan')), ['poll_interval must be between 0.1']),
    'mig state_timeout huge': (m(state_timeout=BIG), ['state_timeout must be between 1 and 604800']),
    'sharing verify_timeout huge': (s(verify_timeout=10 ** 15), ['verify_timeout must be between 1']),
    'mig grace_period beyond int64': (m(grace_period=2 ** 64), ['grace_period must be between 0']),
    # max_unavailable
    'mig max_unavailable negative': (m(max_unavailable=-1), ['max_unavailable must allow at least one node']),
    'mig max_unavailable 0': (m(max_unavailable=0), ['max_unavailable must allow at least one node']),
    'sharing max_unavailable 0%': (s(max_unavailable='0%'), ['between 1% and 100%']),
    'mig max_unavailable 101%': (m(max_unavailable='101%'), ['between 1% and 100%']),
    'mig max_unavailable abc': (m(max_unavailable='abc'), ["a positive integer or a percentage like '25%'"]),
    'mig max_unavailable 10.5%': (m(max_unavailable='10.5%'), ["a positive integer or a percentage like '25%'"]),
    'sharing max_unavailable yes': (s(max_unavailable=True), ['a positive integer or a percentage', 'boolean']),
    'mig max_unavailable list': (m(max_unavailable=[1]), ['a positive integer or a percentage', 'list']),
    'sharing max_unavailable 1.5': (s(max_unavailable=1.5), ['a positive integer or a percentage', 'float']),
    # names (issue 17: operator_namespace '' was a raw 400 from the API)
    'mig operator_namespace empty': (m(operator_namespace=''),
                                     ["operator_namespace '' is not a namespace name", 'e.g. nvidia-gpu-operator']),
    'sharing operator_namespace empty': (s(operator_namespace=''), ["operator_namespace '' is not a namespace"]),
    'mig operator_namespace spaces': (m(operator_namespace='GPU Operator'), ['is not a namespace name']),
    'mig operator_namespace unicode': (m(operator_namespace='n\u00e4mespace'), ['is not a namespace name']),
    'mig cluster_policy spaces': (m(cluster_policy='My Policy'), ["cluster_policy 'My Policy' is not a Kubernetes "
                                                                  "object name"]),
    'sharing config_map spaces': (s(config_map='device plugin'), ["config_map 'device plugin' is not a Kubernetes"]),
    'mig config_map missing': (m(config_map='no-such-configs'), ['no-such-configs not found', 'create it first']),
    'sharing cluster_policy missing': (s(cluster_policy='no-such-policy'), ["ClusterPolicy 'no-such-policy' not "
                                                                            "found"]),
    # selectors (issue 17: a selector value with a comma became two terms; a pod_selector list was accepted)
    'mig selector comma': (m(**assign('config', 'all-1g.5gb', selector={'gpuops.dev/pool': 'training,inference'})),
                           ["label_selector 'gpuops.dev/pool in (training,inference)'"]),
    'sharing selector comma': (s(**assign('profile', 'ts', selector={'gpuops.dev/pool': 'inference,x'})),
                               ['one value per key']),
    'mig selector list value': (m(**assign('config', 'all-1g.5gb', selector={'gpuops.dev/pool': ['training']})),
                                ["selector.gpuops.dev/pool: must be a string, got list"]),
    'mig selector bad key': (m(**assign('config', 'all-1g.5gb', selector={'bad key!': 'x'})),
                             ["key 'bad key!'"]),
    'mig pod_selector list value': (m(pod_selector={'app': ['a', 'b']}), ['pod_selector.app: must be a string']),
    'sharing pod_selector comma': (s(pod_selector={'app': 'a,b'}), ['pod_selector.app', 'one value per key']),
    'sharing restart_pod_selector': (s(restart_pod_selector='app in ('), ['restart_pod_selector: cannot parse']),
    'mig label_selector matches nothing': (m(**assign('config', 'all-1g.5gb', label_selector='gpuops.dev/pool=x')),
                                           ["label selector 'gpuops.dev/pool=x' matches no node"]),
    'sharing label_selector matches nothing': (s(**assign('profile', 'ts', label_selector='nope')),
                                               ["label selector 'nope' matches no node"]),
    'mig label_selector unparsable': (m(**assign('config', 'all-1g.5gb', label_selector='a==,=')),
                                      ['cannot parse label selector']),
    'mig control-plane node': (m(**assign('config', 'all-disabled', nodes=[CONTROL_PLANE])),
                               ['node cpu-0 is a control-plane node (label node-role.kubernetes.io/control-plane) '
                                'without NVIDIA GPUs', 'leave it out of the assignments']),
    'sharing control-plane selector': (s(**assign('profile', 'ts',
                                                  label_selector='node-role.kubernetes.io/control-plane')),
                                       ['node cpu-0 is a control-plane node']),
    # assignments (issue 17: assignments [] was accepted)
    'mig assignments empty': (m(assignments=[]), ['assignments is empty: give at least one item']),
    'sharing assignments empty': (s(assignments=[]), ['assignments is empty']),
    'mig node named twice': (m(**assign('config', 'all-1g.5gb', nodes=['a100-0', 'a100-0'])),
                             ["node 'a100-0' is named twice", 'name each node once']),
    'sharing node named twice': (s(assignments=[{'nodes': ['l40s-0'], 'profile': 'ts'},
                                                {'nodes': ['l40s-0'], 'profile': 'ts'}]),
                                 ["node 'l40s-0' is named twice (assignments[0].nodes and assignments[1].nodes)"]),
    'mig node not found': (m(**assign('config', 'all-1g.5gb', nodes=['a100-9'])), ['node(s) not found: a100-9']),
    'mig node unicode': (m(**assign('config', 'all-1g.5gb', nodes=['\u00e4100-0'])), ['node(s) not found']),
    'mig nodes and selector missing': (m(assignments=[{'config': 'all-1g.5gb'}]),
                                       ['give nodes or a label_selector/selector']),
    'mig config with spaces': (m(**assign('config', 'all 1g.5gb', nodes=['a100-0'])),
                               ["assignments[0].config: 'all 1g.5gb' must be", 'it becomes a node label value']),
    'sharing profile with spaces': (s(**assign('profile', 'time sliced', nodes=['l40s-0'])),
                                    ["assignments[0].profile: 'time sliced' must be"]),
    'mig config unicode': (m(**assign('config', '\u00e4ll-1g', nodes=['a100-0'])), ['it becomes a node label value']),
    'mig config ~': (m(**assign('config', '~', nodes=['a100-0'])), ["'~' must be"]),
    'mig config yes': (m(**assign('config', 'yes', nodes=['a100-0'])), ["'yes'"]),
    'mig config null string': (m(**assign('config', 'null', nodes=['a100-0'])), ["'null'"]),
    'sharing profile 0o17': (s(**assign('profile', '0o17', nodes=['l40s-0'])),
                             ["profile '0o17' is not a key of the device-plugin ConfigMap"]),
    'mig config not MIG capable': (m(**assign('config', 'all-1g.5gb', nodes=['t4-0'])),
                                   ["only 'all-disabled' can be applied"]),
    'sharing profile unknown': (s(**assign('profile', 'ts-99', nodes=['l40s-0'])),
                                ["profile 'ts-99' is not a key of the device-plugin ConfigMap (profiles:"]),
    # profiles (issue 17: replicas 10^12 relabelled nodes; inline profiles missing from the ConfigMap
    # crash-looped the device plugin)
    'sharing replicas 10^12 in the ConfigMap': (s(**assign('profile', 'huge', nodes=['l40s-0'])),
                                                ['is more than 256', 'lower replicas']),
    'sharing inline replicas 10^12': (s(config_map=CM, profiles={'ts': ts(BIG)}), ['is more than 256']),
    'sharing inline profile not in the ConfigMap': (
        s(config_map=CM, profiles={'ts-8': ts(8)}, **assign('profile', 'ts-8', nodes=['l40s-0'])),
        ['profiles ts-8 are missing from the device-plugin ConfigMap gpu-operator/gpuops-device-plugin-config',
         'write the profiles there first']),
    'sharing inline profile differs': (s(config_map=CM, profiles={'ts': ts(6)}),
                                       ['profiles ts differ from the device-plugin ConfigMap', 'check mode']),
    'sharing inline profile reserved': (s(config_map=CM, profiles={'none': {}}), ["profile name 'none' is reserved"]),
    # an admin-cordoned node already at target (issue 17: uncaught "outside this rollout")
    'mig admin-cordoned node at target': (
        m(assignments=[{'nodes': [CORDONED], 'config': '{{ __at_target }}'},
                       {'nodes': ['a100-0'], 'config': 'all-1g.5gb'}]),
        ['already unavailable (h100-1: cordoned', 'uncordon them (kubectl uncordon) or raise max_unavailable']),
    'sharing admin-cordoned node at target': (
        s(assignments=[{'nodes': [CORDONED], 'profile': 'none'}, {'nodes': ['l40s-0'], 'profile': 'ts'}]),
        ['already unavailable (h100-1: cordoned', 'uncordon them']),
    # types and values Ansible's argument spec refuses (ARG_SPEC: counted, each is a distinct malformed input)
    'mig assignments a dict': (m(assignments={'nodes': ['a100-0'], 'config': 'all-1g.5gb'}),
                               ['assignments', 'list']),
    'mig assignments of lists': (m(assignments=[['a100-0']]), ["sub parameter field 'assignments'"]),
    'mig config null': (m(assignments=[{'nodes': ['a100-0'], 'config': None}]), ['config']),
    'mig selector a list': (m(**assign('config', 'all-1g.5gb', selector=['gpuops.dev/pool=training'])),
                            ['selector', 'dict']),
    'mig state_timeout words': (m(state_timeout='soon'), ['state_timeout', 'int']),
    'mig state_timeout 1.5': (m(state_timeout=1.5), ['state_timeout', 'int']),
    'sharing drain maybe': (s(drain='maybe'), ['drain', 'bool']),
    'mig mig_strategy double': (m(mig_strategy='double'), ['mig_strategy', 'none, single, mixed']),
    'mig misspelt option': (m(max_unavailble=2), ['max_unavailble']),
    'sharing pod_selector a list': (s(pod_selector=['app=a']), ['pod_selector', 'dict']),
}

ARG_SPEC = set(list(MODULE_CASES)[list(MODULE_CASES).index('mig assignments a dict'):])
OWN_WORDS = {'mig config_map missing', 'sharing cluster_policy missing'}  # refused by a read, in their own words

# case -> (role, role variables, task the failure must come from, words of the message)
ROLE_CASES = {
    'role mig state_timeout 0': ('mig', {'mig_state_timeout': 0}, 'Validate every assignment',
                                 ['state_timeout must be between 1']),
    'role mig poll_interval 0': ('mig', {'mig_poll_interval': 0}, 'Validate every assignment',
                                 ['poll_interval must be between 0.1']),
    'role mig drain_timeout negative': ('mig', {'mig_drain_timeout': -1}, 'Validate every assignment',
                                        ['drain_timeout must be between 0']),
    'role mig max_unavailable 150%': ('mig', {'mig_max_unavailable': '150%'}, 'Validate every assignment',
                                      ['between 1% and 100%']),
    'role mig selector comma': ('mig', {'mig_assignments': [{'selector': {'gpuops.dev/pool': 'training,x'},
                                                             'config': 'all-1g.5gb'}]},
                                'Validate every assignment', ['one value per key']),
    'role mig operator_namespace empty': ('mig', {'mig_operator_namespace': ''}, 'Validate every assignment',
                                          ["operator_namespace '' is not a namespace name"]),
    'role mig strategy double': ('mig', {'mig_strategy': 'double'}, 'Validating arguments', ['mig_strategy']),
    'role mig verify_timeout words': ('mig', {'mig_verify_timeout': 'abc'}, 'Validating arguments',
                                      ['mig_verify_timeout']),
    'role sharing state_timeout 0': ('sharing', {'sharing_state_timeout': 0}, 'Check the node assignments',
                                     ['state_timeout must be between 1']),
    'role sharing poll_interval negative': ('sharing', {'sharing_poll_interval': -1}, 'Check the node assignments',
                                            ['poll_interval must be between 0.1']),
    'role sharing control-plane node': ('sharing', {'sharing_assignments': [{'nodes': [CONTROL_PLANE],
                                                                             'profile': 'ts'}]},
                                        'Check the node assignments', ['is a control-plane node']),
    'role sharing replicas 10^12': ('sharing', {'sharing_profiles': {'huge': ts(BIG)}, 'sharing_assignments': [
        {'nodes': ['l40s-0'], 'profile': 'huge'}]}, 'Check the inputs', ['is more than 256']),
    'role reset poll_interval words': ('reset', {'reset_poll_interval': 'fast'}, 'Validating arguments',
                                       ['reset_poll_interval']),
    'role reset nodes a dict': ('reset', {'reset_nodes': {'a100-0': True}}, 'Validating arguments',
                                ['reset_nodes']),
}
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
    import kubernetes

    return kubernetes.client.CoordinationV1Api(api_client)


def module_task(case, module, args):
    return {'name': case, 'gpuops.gpu.' + module: dict(COMMON, **args), 'ignore_errors': True}


def test_at_least_fifty_distinct_bad_inputs():
    assert len(MODULE_CASES) - len(ARG_SPEC) >= 50      # refused by gpuops.gpu's own checks
    assert len(MODULE_CASES) + len(ROLE_CASES) >= 80
    assert len(set(repr(v[0]) for v in MODULE_CASES.values())) == len(MODULE_CASES)


@pytest.fixture(scope='module')
def runs(testbed, core, custom, coordination):
    """The module play and the role play, run at the same time (neither writes; two processes use both
    cores), between one snapshot of the cluster before and one after."""
    cordoned = labels(core, CORDONED)
    at_target = cordoned.get(LABEL_MIG)
    # the admin-cordoned cases need the node at its MIG config and unshared; else they would write
    state = dict((k, v) for k, v in cordoned.items() if k.startswith(('nvidia.com/mig', 'nvidia.com/gpu.s', LABEL_DP)))
    assert at_target and cordoned.get(LABEL_MIG + '.state') == 'success', state
    assert cordoned.get('nvidia.com/gpu.sharing-strategy') == 'none' and LABEL_DP not in cordoned, state
    before = snapshot(core, custom, coordination)
    tasks = [module_task(case, module, args) for case, ((module, args), _words) in MODULE_CASES.items()]
    role_runs = dict((case, (role, variables)) for case, (role, variables, _t, _w) in ROLE_CASES.items())
    with ThreadPoolExecutor(max_workers=2) as pool:
        modules = pool.submit(run_play, testbed.kubeconfig, tasks, vars={'__at_target': at_target})
        roles = pool.submit(failure_cases, testbed.kubeconfig, role_runs, ROLE_BASE)
        _rc, module_results, module_raw = modules.result()
        role_results, role_raw = roles.result()
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
        if case not in ARG_SPEC | OWN_WORDS and not msg.startswith(REFUSED):
            wrong.append('%s: does not start with %r: %s' % (case, REFUSED, msg[:300]))
        if 'Traceback' in msg or 'HTTP response headers' in msg:
            wrong.append('%s: raw error: %s' % (case, msg[:600]))
    assert wrong == [], '\n'.join(wrong) + '\n' + raw[-2000:]
    assert_unchanged(runs['before'], runs['after'])


def test_role_cases_fail_before_any_write(runs):
    got, raw = runs['roles']
    wrong = []
    for case, (_role, _variables, task, words) in ROLE_CASES.items():
        if case not in got:
            wrong.append('%s: did not fail' % case)
            continue
        failed_in = got[case]['task'].rsplit(' : ', 1)[-1]
        missing = [w for w in words if w not in got[case]['msg']]
        if not failed_in.startswith(task) or missing:
            wrong.append('%s: failed in %r, missing %s in: %s' % (case, failed_in, missing, got[case]['msg'][:600]))
    assert wrong == [], '\n'.join(wrong) + '\n' + raw[-2000:]
    assert_unchanged(runs['before'], runs['after'])
