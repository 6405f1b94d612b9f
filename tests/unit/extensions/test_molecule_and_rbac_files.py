# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Static checks of the molecule scenarios (extensions/molecule) and the RBAC manifests (roles/rbac/files);
their behaviour is proven by `molecule test` and tests/integration/test_rbac.py on the virtual cluster."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import ast
import glob
import os

import pytest
import yaml

from ansible_collections.gpuops.gpu.plugins.module_utils.common import names
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import dra
from ansible_collections.gpuops.gpu.plugins.module_utils.plans import gpu_health_dra
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.rbac import OPERATOR_NAMESPACE
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout import stack_kind

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
MOLECULE = os.path.join(REPO, 'extensions', 'molecule')
SCENARIOS = sorted(os.path.basename(os.path.dirname(p)) for p in glob.glob(os.path.join(MOLECULE, '*', 'molecule.yml')))
RBAC = os.path.join(REPO, 'roles', 'rbac', 'files')


def _load(path):
    with open(path) as handle:
        return yaml.safe_load(handle)


def test_expected_scenarios_exist():
    assert {'default', 'mig'} <= set(SCENARIOS)


@pytest.mark.parametrize('scenario', SCENARIOS)
def test_scenario_runs_the_full_sequence_on_its_own_cluster(scenario):
    config = _load(os.path.join(MOLECULE, scenario, 'molecule.yml'))
    sequence = config['scenario']['test_sequence']
    for step in ('create', 'prepare', 'converge', 'idempotence', 'verify'):
        assert step in sequence, '%s: %s missing from test_sequence' % (scenario, step)
    assert sequence[-1] == 'destroy' and sequence.index('converge') < sequence.index('idempotence') < sequence.index('verify')
    playbooks = config['ansible']['playbooks']
    assert playbooks['create'] == '../utils/create.yml' and playbooks['destroy'] == '../utils/destroy.yml'
    for name in playbooks.values():
        assert os.path.isfile(os.path.join(MOLECULE, scenario, name)), name
    assert config['ansible']['env']['K8S_AUTH_KUBECONFIG'] == '${MOLECULE_EPHEMERAL_DIRECTORY}/kubeconfig'
    converge = _load(os.path.join(MOLECULE, scenario, playbooks['converge']))
    # converge runs a playbook of the collection, as users do
    target = converge[0]['ansible.builtin.import_playbook']
    assert os.path.isfile(os.path.normpath(os.path.join(MOLECULE, scenario, target))), target
    verify = yaml.safe_dump(_load(os.path.join(MOLECULE, scenario, playbooks['verify'])))
    assert 'kubernetes.core.k8s_info' in verify and 'ansible.builtin.assert' in verify


def _rules(name):
    return _load(os.path.join(RBAC, name))['rules']


def test_rollout_role_is_least_privilege():
    cluster = _rules('gpuops-gpu-rollout.yml')
    granted = set((g, r, v) for rule in cluster for g in rule['apiGroups'] for r in rule['resources'] for v in rule['verbs'])
    assert ('', 'pods/eviction', 'create') in granted
    assert ('', 'nodes', 'patch') in granted and ('nvidia.com', 'clusterpolicies', 'patch') in granted
    for group, resource, verb in granted:
        assert '*' not in (group, resource, verb)
        assert resource not in ('secrets', 'clusterroles', 'clusterrolebindings')
        if resource == 'pods':
            assert verb in ('get', 'list', 'watch'), 'cluster-wide pods may only be read (evictions respect PDBs)'
        if verb in ('create', 'delete', 'update', 'patch', 'deletecollection'):
            assert (resource, verb) in (('pods/eviction', 'create'), ('events', 'create'), ('nodes', 'patch'),
                                        ('clusterpolicies', 'patch'), ('devicetaintrules', 'create'),
                                        ('devicetaintrules', 'update'), ('devicetaintrules', 'delete')), \
                (resource, verb)
    # namespaces: only kube-system read by name (the cluster's identity, gpuops.gpu.plan_approval)
    assert [(r['verbs'], r.get('resourceNames')) for r in cluster if 'namespaces' in r['resources']] == [
        (['get'], ['kube-system'])]
    namespaced = _rules('gpuops-gpu-rollout-namespace.yml')
    assert set(r for rule in namespaced for r in rule['resources']) == {'configmaps', 'pods', 'leases'}
    leases = [rule for rule in namespaced if rule['resources'] == ['leases']]
    assert [r['verbs'] for r in leases if not r.get('resourceNames')] == [['create']]  # the rest: the lock's name only
    assert all(r['resourceNames'] == ['gpuops-gpu-rollout'] for r in leases if r['verbs'] != ['create'])
    assert _load(os.path.join(RBAC, 'gpuops-gpu-rollout-namespace.yml'))['kind'] == 'Role'


def _granted(name):
    return set((g, r, v) for rule in _rules(name) if not rule.get('resourceNames')
               for g in rule['apiGroups'] for r in rule['resources'] for v in rule['verbs'])


def test_roles_grant_the_dra_resources_the_code_reads_and_writes():
    """The DRA rules name the group and resources of the code: the report and rollout accounts read the driver's
    ResourceSlices and the ResourceClaims (gpu_nodes_info's DRA view), the rollout account reads ResourceQuotas
    (MIG from demand) and writes gpu_health's DeviceTaintRules, the install account writes the dra role's
    DeviceClasses, ResourceClaimTemplates and quotas."""
    group, reads = dra.API_GROUP, ('get', 'list', 'watch')
    assert gpu_health_dra.GROUP == group
    for role in ('gpuops-gpu-report.yml', 'gpuops-gpu-rollout.yml'):
        granted = _granted(role)
        assert set((group, r, v) for r in (dra.RESOURCE_SLICES, dra.RESOURCE_CLAIMS) for v in reads) <= granted, role
        writes = set((g, r, v) for g, r, v in granted if g == group and v not in reads)
        assert writes == (set((group, gpu_health_dra.RULES, v) for v in ('create', 'update', 'delete'))
                          if role == 'gpuops-gpu-rollout.yml' else set()), role
    rollout = _granted('gpuops-gpu-rollout.yml')
    assert set(('', 'resourcequotas', v) for v in reads) <= rollout
    assert set((group, gpu_health_dra.RULES, v) for v in ('get', 'list')) <= rollout
    assert not [g for g, r, v in rollout if r == 'resourcequotas' and v not in reads]
    install = _granted('gpuops-gpu-install.yml')
    for resource in ('deviceclasses', 'resourceclaimtemplates', dra.RESOURCE_CLAIMS):
        assert (group, resource, '*') in install, resource
    assert ('', 'resourcequotas', '*') in install


def test_report_role_is_read_only():
    for rule in _rules('gpuops-gpu-report.yml'):
        assert set(rule['verbs']) <= {'get', 'list', 'watch'}


def test_install_role_says_it_is_cluster_admin_like():
    with open(os.path.join(RBAC, 'gpuops-gpu-install.yml')) as handle:
        text = handle.read()
    assert 'CLUSTER-ADMIN-LIKE' in text and 'escalate' in text


def test_every_manifest_is_labelled_and_applied_by_the_role():
    defaults = _load(os.path.join(REPO, 'roles', 'rbac', 'defaults', 'main.yml'))
    for name in defaults['rbac_cluster_roles']:
        manifest = _load(os.path.join(RBAC, 'gpuops-gpu-%s.yml' % name))
        assert manifest['kind'] == 'ClusterRole' and manifest['metadata']['name'] == 'gpuops-gpu-' + name
        assert manifest['metadata']['labels']['app.kubernetes.io/managed-by'] == 'gpuops.gpu'


def _markers(name):
    """The verbs a ClusterRole grants on the admission marker (gpuops.gpu/admission, not an API)."""
    return set(v for rule in _rules(name) if 'gpuops.gpu' in rule['apiGroups'] and 'admission' in rule['resources']
               for v in rule['verbs'])


def test_admission_policies_restrict_the_rollout_account_only():
    with open(os.path.join(RBAC, 'gpuops-gpu-rollout-admission.yml')) as handle:
        manifest = yaml.safe_load(handle)
    assert manifest['kind'] == 'List'
    docs = manifest['items']
    policies = dict((d['metadata']['name'], d) for d in docs if d['kind'] == 'ValidatingAdmissionPolicy')
    assert sorted(policies) == ['gpuops-gpu-rollout-clusterpolicy', 'gpuops-gpu-rollout-configmaps',
                                'gpuops-gpu-rollout-leases', 'gpuops-gpu-rollout-nodes', 'gpuops-gpu-rollout-pods']
    bindings = sorted((d['spec']['policyName'], d['spec']['validationActions'])
                      for d in docs if d['kind'] == 'ValidatingAdmissionPolicyBinding')
    assert bindings == [(name, ['Deny']) for name in sorted(policies)]
    for doc in docs:
        assert doc['apiVersion'] == 'admissionregistration.k8s.io/v1'
        assert doc['metadata']['labels']['app.kubernetes.io/managed-by'] == 'gpuops.gpu'
    for policy in policies.values():
        spec = policy['spec']
        assert spec['failurePolicy'] == 'Fail'
        assert all(v['reason'] == 'Forbidden' for v in spec['validations'])
        [condition] = spec['matchConditions']
        assert "check('restricted').allowed()" in condition['expression']
        assert "!authorizer.group('gpuops.gpu').resource('admission').check('unrestricted')" in condition['expression']
    # who is restricted: the rollout ClusterRole holds the marker, the install one the exemption, no other either
    assert _markers('gpuops-gpu-rollout.yml') == {'restricted'}
    assert _markers('gpuops-gpu-install.yml') == {'unrestricted'}
    assert _markers('gpuops-gpu-report.yml') == _markers('gpuops-gpu-rollout-force.yml') == set()


def _policy_variable(policy, name):
    """A list or string literal a ValidatingAdmissionPolicy variable holds (CEL literals read as Python ones)."""
    docs = _load(os.path.join(RBAC, 'gpuops-gpu-rollout-admission.yml'))['items']
    [doc] = [d for d in docs if d['kind'] == 'ValidatingAdmissionPolicy' and d['metadata']['name'] == policy]
    [expression] = [v['expression'] for v in doc['spec']['variables'] if v['name'] == name]
    return ast.literal_eval(expression.strip())


def test_admission_policies_name_what_the_code_writes():
    """The policies' lists are the collection's constants: a new node annotation, a restarted operand or an
    operator ConfigMap name added to the code without the policy (or the reverse) fails here."""
    assert _policy_variable('gpuops-gpu-rollout-nodes', 'annotations') == list(names.NODE_ANNOTATIONS)
    switches = dict((key, sorted(set(t[key] for t in stack_kind.TARGET_LABELS.values() if t[key] is not None),
                                 reverse=True)) for key in (dra.DEVICE_PLUGIN_DEPLOY_LABEL, dra.DRA_NODE_LABEL))
    assert _policy_variable('gpuops-gpu-rollout-nodes', 'labels') == [
        names.LABEL_MIG_CONFIG, names.LABEL_MIG_STATE, names.LABEL_DP_CONFIG] + list(switches)
    assert _policy_variable('gpuops-gpu-rollout-nodes', 'switches') == switches
    assert _policy_variable('gpuops-gpu-rollout-pods', 'operands') == list(names.RESTARTED_OPERANDS)
    assert _policy_variable('gpuops-gpu-rollout-configmaps', 'operatorNames') == list(names.OPERATOR_CONFIGMAPS)
    assert _policy_variable('gpuops-gpu-rollout-configmaps', 'operatorPattern') == names.OPERATOR_CONFIGMAP_PATTERN
    assert _policy_variable('gpuops-gpu-rollout-clusterpolicy', 'mpsRoot') == names.MPS_ROOT


def test_pod_restarts_are_limited_to_the_operator_namespace_by_the_role():
    """Only the pods policy's binding is namespaced, through the placeholder the rbac_objects filter fills."""
    docs = _load(os.path.join(RBAC, 'gpuops-gpu-rollout-admission.yml'))['items']
    scoped = dict((d['metadata']['name'], d['spec']['matchResources']['namespaceSelector']['matchLabels'])
                  for d in docs if d['kind'] == 'ValidatingAdmissionPolicyBinding' and d['spec'].get('matchResources'))
    assert scoped == {'gpuops-gpu-rollout-pods': {'kubernetes.io/metadata.name': OPERATOR_NAMESPACE}}
