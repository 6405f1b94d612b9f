"""Bad input, wider: malformed inputs to gpuops.gpu.mig_rollout, gpuops.gpu.sharing_rollout and the mig, sharing
and reset roles, each refused BEFORE any write with a message that says what to fix, on the virtual GPU cluster.

Fast by construction: the module cases run as tasks of ONE playbook (ignore_errors + register, compared per case
here), the role cases as block/rescue cases of one more (role_cases.failure_cases), both at the same time. "Before any write" is read off
the cluster before and after both: every label, annotation, cordon and taint of every node (node_facts; a node's
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


# case -> ((module, arguments over COMMON), words the message must hold). The first words of a refusal by
# gpuops.gpu itself are REFUSED (checked below); the others come from Ansible's argument spec.
MODULE_CASES = {
    # durations and poll_interval (once accepted: state_timeout 0 cordoned and labelled, poll_interval 0 made
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
    # digits of other scripts, which Python's int() reads: Arabic-Indic 3, full-width 2 (once a rollout of 3 nodes)
    'mig max_unavailable Arabic-Indic 3': (m(max_unavailable='\u0663'), ["got '\u0663': write it with the digits 0-9"]),
    'sharing max_unavailable full-width 2%': (s(max_unavailable='\uff12%'),
                                              ["got '\uff12%': write it with the digits 0-9"]),
    # names (operator_namespace '' was once a raw 400 from the API)
    'mig operator_namespace empty': (m(operator_namespace=''),
                                     ["operator_namespace '' is not a namespace name", 'e.g. nvidia-gpu-operator']),
    'sharing operator_namespace empty': (s(operator_namespace=''), ["operator_namespace '' is not a namespace"]),
    'mig operator_namespace spaces': (m(operator_namespace='GPU Operator'), ['is not a namespace name']),
    'mig operator_namespace unicode': (m(operator_namespace='n\u00e4mespace'), ['is not a namespace name']),
    'mig cluster_policy spaces': (m(cluster_policy='My Policy'), ["cluster_policy 'My Policy' is not a Kubernetes "
                                                                  "object name"]),
    'sharing config_map spaces': (s(config_map='device plugin'), ["config_map 'device plugin' is not a Kubernetes"]),
    'mig config_map missing': (m(config_map='no-such-configs'), ['no-such-configs not found', 'create it first']),
    # the GPU operator's own ConfigMaps (once read and rolled out against)
    'mig config_map the operator\'s': (m(config_map='default-mig-parted-config'), [
        "config_map: ConfigMap 'default-mig-parted-config' belongs to the GPU operator",
        'leave config_map unset']),
    'sharing config_map an entrypoint': (s(config_map='nvidia-device-plugin-entrypoint'), [
        "config_map: ConfigMap 'nvidia-device-plugin-entrypoint' belongs to the GPU operator (the entrypoint script"]),
    'sharing cluster_policy missing': (s(cluster_policy='no-such-policy'), ["ClusterPolicy 'no-such-policy' not "
                                                                            "found"]),
    # selectors (once a selector value with a comma became two terms and a pod_selector list was accepted)
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
    # assignments (assignments [] was once accepted)
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
    # profiles (once replicas 10^12 relabelled nodes, and inline profiles missing from the ConfigMap
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
    # an admin-cordoned node already at target (once an uncaught "outside this rollout")
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
# Inputs that name someone else's objects, or redefine a built-in one: refused in the role's first checks (or, for a
# ConfigMap that exists, once it is read), in a real run and in check mode alike. Before, the mig role wrote its configs
# into the operator's default-mig-parted-config (or a script the operator's privileged DaemonSets run), the sharing
# role set /etc as the MPS root, and a MIG-enabled all-disabled replaced the built-in one. No node assignments, so
# that on the old code each case "only" writes the ConfigMap and the ClusterPolicy.
MIG_ENABLED = [{'devices': 'all', 'mig-enabled': True, 'mig-devices': {}}]
MPS = {'version': 'v1', 'sharing': {'mps': {'resources': [{'name': 'nvidia.com/gpu', 'replicas': 4}]}}}
UNLABELLED_CM = 'user-mig-parted-config'      # created below without the collection's label
OWNED_CM = 'gpuops-owned-by-policy'           # created below with the label and an owner reference to the policy


def mig_cm(name):
    return {'mig_custom_configs': {'gpuops-bad-input': MIG_ENABLED}, 'mig_assignments': [], 'mig_config_map_name': name}


def sharing_in(**variables):
    return dict({'sharing_profiles': {'mps-4': MPS}, 'sharing_assignments': []}, **variables)


OWNED_CASES = {
    'role mig ConfigMap default-mig-parted-config': ('mig', mig_cm('default-mig-parted-config'), 'Check the inputs', [
        "mig_config_map_name: ConfigMap 'default-mig-parted-config' belongs to the GPU operator (its built-in MIG "
        "configs", 'choose a name of your own']),
    'role mig ConfigMap an entrypoint': ('mig', mig_cm('nvidia-mig-manager-entrypoint'), 'Check the inputs', [
        "ConfigMap 'nvidia-mig-manager-entrypoint' belongs to the GPU operator (the entrypoint script"]),
    'role mig ConfigMap not the collection\'s': ('mig', mig_cm(UNLABELLED_CM), 'Check that the ConfigMap is not', [
        'ConfigMap %s/%s exists and gpuops.gpu did not create it' % (NS, UNLABELLED_CM), 'to hand it over']),
    'role mig ConfigMap owned by the policy': ('mig', mig_cm(OWNED_CM), 'Check that the ConfigMap is not', [
        'ConfigMap %s/%s belongs to ClusterPolicy %s (owner reference)' % (NS, OWNED_CM, POLICY_NAME)]),
    'role mig custom all-disabled': ('mig', {'mig_custom_configs': {'all-disabled': MIG_ENABLED}, 'mig_assignments': []},
                                     'Check the inputs', [
        "mig_custom_configs.all-disabled: 'all-disabled' is the name of one of the GPU operator's built-in MIG configs",
        'mig_allow_builtin_override: true']),
    'role sharing MPS root /etc': ('sharing', sharing_in(sharing_mps_root='/etc'), 'Check the inputs', [
        'sharing_mps_root must be /run/nvidia/mps', "got '/etc'"]),
    'role sharing MPS root escaping /run/nvidia': ('sharing', sharing_in(sharing_mps_root='/run/nvidia/../etc'),
                                                   'Check the inputs', ["got '/run/nvidia/../etc'"]),
    'role sharing MPS root relative': ('sharing', sharing_in(sharing_mps_root='run/nvidia/mps'), 'Check the inputs',
                                       ["got 'run/nvidia/mps'"]),
    'role sharing ConfigMap default-gpu-clients': ('sharing', sharing_in(sharing_config_map_name='default-gpu-clients'),
                                                   'Check the inputs', [
        "sharing_config_map_name: ConfigMap 'default-gpu-clients' belongs to the GPU operator"]),
    'role sharing ConfigMap kube-root-ca.crt': ('sharing', sharing_in(sharing_config_map_name='kube-root-ca.crt'),
                                                'Check the inputs', ["ConfigMap 'kube-root-ca.crt' belongs to Kubernetes"]),
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
    role_runs.update((case, (role, variables, True)) for case, (role, variables, _t, _w) in ROLE_CHECK_CASES.items())
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
