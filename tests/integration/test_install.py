"""Install through OLM on the virtual GPU cluster: the nfd and gpu_operator roles (olm_operator +
cluster_policy) against the real apiserver, the simulated OLM (Subscription -> InstallPlan -> CSV
from NVIDIA's and Red Hat's bundles in the Go module cache) and the REAL gpu-operator controller,
which reconciles the ClusterPolicy the role creates from the CSV's alm-examples.

The cluster runs gpusim's NFD in `on-cr` mode: nodes get feature.node.kubernetes.io/pci-10de.present
only once a NodeFeatureDiscovery instance exists, so the nfd role's wait is real.
"""

import json
import os
import tempfile
import time

import pytest
import yaml
from kubernetes import client

import conftest
from ansible_run import include, run_play_stats
from cluster_snapshot import changes, settled_snapshot
from cluster_snapshot import snapshot as cluster_snapshot
from policy_helpers import CP, DEDICATED, GPU_TOL, INSTALL_ROLES, INSTALL_VARS
from role_cases import assert_failed, failure_cases

OLM = ('operators.coreos.com', 'v1alpha1')
GPU_NS = 'nvidia-gpu-operator'
PINNED = 'gpu-operator-certified.v25.10.1'
HEAD = 'gpu-operator-certified.v26.7.0'
PCI = 'feature.node.kubernetes.io/pci-10de.present'
GPU_NODES = ['a100-0', 'a100-1', 'h100-0', 'h100-1', 'l40s-0', 't4-0']

VARS = dict(INSTALL_VARS, nfd_wait_timeout=60, gpu_operator_olm_channel='stable',
            gpu_operator_olm_starting_csv=PINNED)


@pytest.fixture(scope='module')
def _on_cr_config():
    """This module's cluster: the default config with NFD labels only while an NFD instance exists."""
    with open(conftest.DEFAULT_CONFIG) as f:
        cfg = yaml.safe_load(f)
    cfg.setdefault('simulation', {})['nfd'] = 'on-cr'
    fd, path = tempfile.mkstemp(suffix='.yaml', prefix='gpuops-install-')
    with os.fdopen(fd, 'w') as f:
        yaml.safe_dump(cfg, f)
    old = os.environ.get('GPUOPS_TESTBED_CONFIG')
    os.environ['GPUOPS_TESTBED_CONFIG'] = path
    yield path
    if old is None:
        os.environ.pop('GPUOPS_TESTBED_CONFIG', None)
    else:
        os.environ['GPUOPS_TESTBED_CONFIG'] = old
    os.unlink(path)


@pytest.fixture(scope='module')
def testbed(_on_cr_config, testbed):  # noqa: F811 - the conftest fixture, started with this module's config
    return testbed


def items(custom, plural, namespace=None, version='v1alpha1', group='operators.coreos.com'):
    if namespace:
        return custom.list_namespaced_custom_object(group, version, namespace, plural)['items']
    return custom.list_cluster_custom_object(group, version, plural)['items']


def namespaces(core):
    return {n.metadata.name for n in core.list_namespace().items if n.status.phase == 'Active'}


def snapshot(custom, core):
    """resourceVersions of everything the roles write."""
    out = {}
    for plural, version in (('subscriptions', 'v1alpha1'), ('operatorgroups', 'v1'), ('installplans', 'v1alpha1')):
        for obj in items(custom, plural, version=version):
            out['%s/%s/%s' % (plural, obj['metadata']['namespace'], obj['metadata']['name'])] = \
                obj['metadata']['resourceVersion']
    for obj in items(custom, 'nodefeaturediscoveries', version='v1', group='nfd.openshift.io'):
        out['nfd/' + obj['metadata']['name']] = obj['metadata']['resourceVersion']
    for obj in items(custom, 'clusterpolicies', version='v1', group='nvidia.com'):
        out['clusterpolicy/' + obj['metadata']['name']] = obj['metadata']['resourceVersion']
    for name in (GPU_NS, 'openshift-nfd'):
        if name in namespaces(core):
            out['ns/' + name] = core.read_namespace(name).metadata.resource_version
    return out


# ---------------------------------------------------------------------------------------------

@pytest.fixture(scope='module', autouse=True)
def default_catalogs(testbed, custom):
    """The simulated marketplace creates the default CatalogSources shortly after `up`."""
    conftest.wait_until('the default CatalogSources', lambda: {'certified-operators', 'redhat-operators'} <= set(
        c['metadata']['name'] for c in items(custom, 'catalogsources', 'openshift-marketplace')), 120)


def test_without_the_package_api_an_unknown_package_is_removed_again(testbed, custom, core):
    """No PackageManifest API (plain OLM): OLM's ResolutionFailed is reported and what the run
    created (Namespace, OperatorGroup, Subscription) is deleted again."""
    task = {'name': 'olm', 'gpuops.gpu.olm_operator': {
        'package': 'gpu-operator-certifed', 'namespace': 't-olm-typo', 'source': 'certified-operators',
        'poll_interval': 0.5, 'wait_timeout': 60}, 'ignore_errors': True}
    rc, results, _stats, raw = run_play_stats(testbed.kubeconfig, [task])
    res = results['olm']
    assert res.get('failed'), raw
    assert 'constraints not satisfiable: no operators found in package gpu-operator-certifed' in res['msg']
    assert 'removed again what this run created' in res['msg']
    assert res['rolled_back'] == ['Subscription gpu-operator-certifed', 'OperatorGroup t-olm-typo', 'Namespace t-olm-typo']
    assert items(custom, 'subscriptions', 't-olm-typo') == []
    ns = [n for n in core.list_namespace().items if n.metadata.name == 't-olm-typo']
    assert not ns or ns[0].status.phase == 'Terminating'


@pytest.fixture(scope='module')
def package_api(testbed, extensions, custom):
    """Serve packages.operators.coreos.com/v1 PackageManifest, as OpenShift's packageserver does
    (an aggregated API there; a CRD stand-in here), and let gpusim's OLM publish the catalog's
    packages into it (it does so on an OperatorHub change)."""
    crd = {'apiVersion': 'apiextensions.k8s.io/v1', 'kind': 'CustomResourceDefinition',
           'metadata': {'name': 'packagemanifests.packages.operators.coreos.com'},
           'spec': {'group': 'packages.operators.coreos.com', 'scope': 'Namespaced',
                    'names': {'kind': 'PackageManifest', 'listKind': 'PackageManifestList',
                              'plural': 'packagemanifests', 'singular': 'packagemanifest'},
                    'versions': [{'name': 'v1', 'served': True, 'storage': True, 'subresources': {'status': {}},
                                  'schema': {'openAPIV3Schema': {'type': 'object',
                                                                 'x-kubernetes-preserve-unknown-fields': True}}}]}}
    try:
        extensions.create_custom_resource_definition(crd)
    except client.ApiException as exc:
        if exc.status != 409:
            raise
    conftest.wait_until('the PackageManifest CRD to be served', lambda: _served(custom), 30)
    hub = {'apiVersion': 'config.openshift.io/v1', 'kind': 'OperatorHub', 'metadata': {'name': 'cluster'},
           'spec': {'sources': [{'name': 'community-operators', 'disabled': True}]}}
    try:
        custom.create_cluster_custom_object('config.openshift.io', 'v1', 'operatorhubs', hub)
    except client.ApiException as exc:
        if exc.status != 409:
            raise
    conftest.wait_until('gpusim to publish the PackageManifests', lambda: len(items(
        custom, 'packagemanifests', 'openshift-marketplace', 'v1', 'packages.operators.coreos.com')) >= 2, 60)


def _served(custom):
    try:
        items(custom, 'packagemanifests', 'openshift-marketplace', 'v1', 'packages.operators.coreos.com')
        return True
    except client.ApiException:
        return False


@pytest.fixture
def broken_catalog(testbed, admission, custom):
    """A CatalogSource that stays TRANSIENT_FAILURE: gpusim's OLM marks every CatalogSource READY,
    so a ValidatingAdmissionPolicy (a real apiserver feature) refuses that one update for it."""
    name = 'broken-operators'
    policy = {'apiVersion': 'admissionregistration.k8s.io/v1', 'kind': 'ValidatingAdmissionPolicy',
              'metadata': {'name': 'gpuops-test-catalog-down'},
              'spec': {'failurePolicy': 'Fail',
                       'matchConstraints': {'resourceRules': [{
                           'apiGroups': ['operators.coreos.com'], 'apiVersions': ['*'],
                           'operations': ['CREATE', 'UPDATE'],
                           'resources': ['catalogsources', 'catalogsources/status']}]},
                       'validations': [{'expression': (
                           "object.metadata.name != '%s' || !has(object.status) || "
                           "!has(object.status.connectionState) || "
                           "object.status.connectionState.lastObservedState != 'READY'" % name),
                           'message': 'this test catalog stays down'}]}}
    binding = {'apiVersion': 'admissionregistration.k8s.io/v1', 'kind': 'ValidatingAdmissionPolicyBinding',
               'metadata': {'name': 'gpuops-test-catalog-down'},
               'spec': {'policyName': 'gpuops-test-catalog-down', 'validationActions': ['Deny']}}
    admission.create_validating_admission_policy(policy)
    admission.create_validating_admission_policy_binding(binding)
    custom.create_namespaced_custom_object(*OLM, 'openshift-marketplace', 'catalogsources', {
        'apiVersion': 'operators.coreos.com/v1alpha1', 'kind': 'CatalogSource',
        'metadata': {'name': name, 'namespace': 'openshift-marketplace'},
        'spec': {'sourceType': 'grpc', 'image': 'catalog.invalid/broken:latest'}})

    def down():
        # (re)assert the failure until the policy is in force and the state sticks
        custom.patch_namespaced_custom_object_status(*OLM, 'openshift-marketplace', 'catalogsources', name, {
            'status': {'connectionState': {'address': 'broken', 'lastObservedState': 'TRANSIENT_FAILURE'}}})
        time.sleep(1.0)
        state = custom.get_namespaced_custom_object(*OLM, 'openshift-marketplace', 'catalogsources', name)
        return state['status']['connectionState']['lastObservedState'] == 'TRANSIENT_FAILURE'
    conftest.wait_until('the test CatalogSource to stay TRANSIENT_FAILURE', down, 30)
    yield name
    custom.delete_namespaced_custom_object(*OLM, 'openshift-marketplace', 'catalogsources', name)
    admission.delete_validating_admission_policy_binding('gpuops-test-catalog-down')
    admission.delete_validating_admission_policy('gpuops-test-catalog-down')


BAD_CASES = [
    # (case, role, vars, what the message must say)
    ('unknown package', 'gpu_operator', {'gpu_operator_olm_package': 'gpu-operator-certifed'},
     "has no package 'gpu-operator-certifed'; did you mean 'gpu-operator-certified'?"),
    ('unknown channel', 'gpu_operator', {'gpu_operator_olm_channel': 'v1.11'}, "has no channel 'v1.11'"),
    ('pinned CSV not in channel', 'gpu_operator', {'gpu_operator_olm_channel': 'v26.7'},
     'channel v26.7 of package gpu-operator-certified has no CSV gpu-operator-certified.v25.10.1'),
    ('missing CatalogSource', 'gpu_operator', {'gpu_operator_olm_source': 'mirror-certified-operators'},
     'CatalogSource mirror-certified-operators not found in namespace openshift-marketplace'),
    ('CatalogSource not READY', 'gpu_operator', {'gpu_operator_olm_source': 'broken-operators',
                                                 'gpu_operator_olm_catalog_timeout': 3},
     'CatalogSource openshift-marketplace/broken-operators is not READY (connectionState.lastObservedState: '
     'TRANSIENT_FAILURE) after 3s'),
    ('override of the wrong type', 'gpu_operator', {'gpu_operator_cluster_policy_overrides': {'mig': 'mixed'}},
     "gpu_operator_cluster_policy_overrides.mig must be a mapping (ClusterPolicy spec.mig is an object)"),
    ('override the CRD schema refuses', 'gpu_operator',
     {'gpu_operator_cluster_policy_overrides': {'driver': {'enabled': 'yes'}, 'devicePlugn': {'enabled': True}}},
     "unknown field 'devicePlugn'; did you mean 'devicePlugin'?"),
    ('toleration with Exists and a value', 'gpu_operator',
     {'gpu_operator_daemonset_tolerations': [{'key': 'dedicated', 'operator': 'Exists', 'value': 'gpu',
                                             'effect': 'NoSchedule'}]},
     'gpu_operator_daemonset_tolerations[0]: operator Exists must not set value'),
    ('NFD worker toleration with Exists and a value', 'nfd',
     {'nfd_worker_tolerations': [{'key': 'dedicated', 'operator': 'Exists', 'value': 'gpu'}]},
     'nfd_worker_tolerations[0]: operator Exists must not set value'),
    ('NFD unknown channel', 'nfd', {'nfd_olm_channel': '4.8'}, "package nfd has no channel '4.8'"),
]


def test_bad_inputs_fail_before_writing(testbed, package_api, broken_catalog, custom, core):
    before = snapshot(custom, core)
    ns_before = namespaces(core)
    runs = dict((case, (role, case_vars)) for case, role, case_vars, _needle in BAD_CASES)
    got, raw = failure_cases(testbed.kubeconfig, runs, VARS)
    assert_failed(got, raw, dict((case, needle) for case, _r, _v, needle in BAD_CASES))
    assert snapshot(custom, core) == before, 'a bad input wrote something'
    assert namespaces(core) == ns_before
    assert items(custom, 'clusterpolicies', version='v1', group='nvidia.com') == []


def test_install_pins_the_csv_and_the_real_operator_reconciles_the_cluster_policy(testbed, package_api, custom, core,
                                                                                  apps):
    assert not [n for n in core.list_node().items if (n.metadata.labels or {}).get(PCI)], \
        'NFD labels before NFD is installed: the cluster is not in on-cr mode'
    rc, results, stats, raw = run_play_stats(testbed.kubeconfig, INSTALL_ROLES, vars=VARS)
    assert rc == 0, raw

    # NFD: operator installed, instance from the CSV example with the merged worker tolerations,
    # and the simulated nfd-worker labelled the GPU nodes (not the CPU node)
    nfd = items(custom, 'nodefeaturediscoveries', 'openshift-nfd', 'v1', 'nfd.openshift.io')
    assert [n['metadata']['name'] for n in nfd] == ['nfd-instance']
    assert nfd[0]['spec']['operand']['workerTolerations'] == [DEDICATED, GPU_TOL]
    assert 'deviceClassWhitelist' in nfd[0]['spec']['workerConfig']['configData']  # from the CSV's example
    labelled = sorted(n.metadata.name for n in core.list_node().items if (n.metadata.labels or {}).get(PCI) == 'true')
    assert labelled == GPU_NODES
    assert [c['status']['phase'] for c in items(custom, 'clusterserviceversions', 'openshift-nfd')] == ['Succeeded']

    # GPU operator: monitored namespace, OwnNamespace OperatorGroup, pinned Manual Subscription
    ns = core.read_namespace(GPU_NS)
    assert ns.metadata.labels.get('openshift.io/cluster-monitoring') == 'true'
    groups = items(custom, 'operatorgroups', GPU_NS, 'v1')
    assert [g['spec'].get('targetNamespaces') for g in groups] == [[GPU_NS]]
    sub = custom.get_namespaced_custom_object(*OLM, GPU_NS, 'subscriptions', 'gpu-operator-certified')
    assert sub['spec'] == {'name': 'gpu-operator-certified', 'channel': 'stable', 'source': 'certified-operators',
                           'sourceNamespace': 'openshift-marketplace', 'installPlanApproval': 'Manual',
                           'startingCSV': PINNED}
    assert sub['status']['installedCSV'] == PINNED
    # only the pinned InstallPlan was approved; OLM's upgrade to the channel head is held
    plans = {tuple(p['spec']['clusterServiceVersionNames']): p for p in items(custom, 'installplans', GPU_NS)}
    assert plans[(PINNED,)]['spec']['approved'] is True and plans[(PINNED,)]['status']['phase'] == 'Complete'
    assert plans[(HEAD,)]['spec']['approved'] is False
    csvs = {c['metadata']['name']: c for c in items(custom, 'clusterserviceversions', GPU_NS)}
    assert list(csvs) == [PINNED] and csvs[PINNED]['status']['phase'] == 'Succeeded'

    # ClusterPolicy: the CSV's alm-examples + overrides + merged tolerations, reconciled by the real operator
    example = next(e for e in json.loads(csvs[PINNED]['metadata']['annotations']['alm-examples'])
                   if e['kind'] == 'ClusterPolicy')
    policy = custom.get_cluster_custom_object(*CP, 'gpu-cluster-policy')
    spec = policy['spec']
    assert spec['mig'] == {'strategy': 'mixed'}
    assert spec['daemonsets']['tolerations'] == [DEDICATED, GPU_TOL]
    for key in ('driver', 'devicePlugin', 'dcgmExporter', 'validator', 'sandboxWorkloads'):
        for field, value in example['spec'][key].items():
            assert spec[key][field] == value, (key, field)
    assert policy['status']['state'] == 'ready'
    ds = apps.read_namespaced_daemon_set('nvidia-device-plugin-daemonset', 'gpu-operator')
    tolerations = [t.to_dict() for t in ds.spec.template.spec.tolerations]
    assert any(t['key'] == 'nvidia.com/gpu' and t['operator'] == 'Exists' for t in tolerations)
    assert any(t['key'] == 'dedicated' and t['value'] == 'gpu' for t in tolerations)

    olm = next(r for name, r in results.items() if 'Install the operator' in name)
    assert olm['csv'] == PINNED and olm['related_images'] and olm['install_plan']


def test_second_run_changes_nothing(testbed, package_api, custom, core):
    before = snapshot(custom, core)
    rc, _results, stats, raw = run_play_stats(testbed.kubeconfig, INSTALL_ROLES, vars=VARS)
    assert rc == 0, raw
    assert stats.get('changed') == 0, raw
    assert snapshot(custom, core) == before


def test_check_mode_writes_nothing(testbed, package_api, custom, core):
    before = snapshot(custom, core)
    changed_vars = dict(VARS, gpu_operator_mig_strategy='single',
                        gpu_operator_daemonset_tolerations=[DEDICATED, {'key': 'spot', 'operator': 'Exists',
                                                                        'effect': 'NoSchedule'}],
                        nfd_worker_node_selector={'node-role.kubernetes.io/worker': ''})
    rc, results, stats, raw = run_play_stats(testbed.kubeconfig, INSTALL_ROLES, check=True, diff=True,
                                             vars=changed_vars)
    assert rc == 0, raw
    assert stats.get('changed', 0) >= 2, raw
    policy = next(r for name, r in results.items() if 'Create or patch the ClusterPolicy' in name)
    assert policy['changed'] and policy['patch']['mig'] == {'strategy': 'single'}
    assert policy['diff']['before']['spec']['mig'] == {'strategy': 'mixed'}
    assert policy['diff']['after']['spec']['daemonsets']['tolerations'][-1]['key'] == 'spot'
    assert snapshot(custom, core) == before


def test_existing_policy_is_patched_only_where_asked(testbed, package_api, custom, core):
    """Another role (mig, sharing) or an administrator changed the ClusterPolicy: re-running the
    install with other overrides patches those only and never reverts the rest to the example."""
    custom.patch_cluster_custom_object(*CP, 'gpu-cluster-policy',
                                       {'spec': {'devicePlugin': {'config': {'name': 'sharing', 'default': 'none'}}}})
    task = {'name': 'policy', 'gpuops.gpu.cluster_policy': {
        'overrides': {'dcgmExporter': {'serviceMonitor': {'enabled': False}}}, 'poll_interval': 0.5,
        'wait_timeout': 120}}
    rc, results, _stats, raw = run_play_stats(testbed.kubeconfig, [task])
    assert rc == 0, raw
    assert results['policy']['patch'] == {'dcgmExporter': {'serviceMonitor': {'enabled': False}}}
    spec = custom.get_cluster_custom_object(*CP, 'gpu-cluster-policy')['spec']
    assert spec['devicePlugin']['config'] == {'name': 'sharing', 'default': 'none'}
    assert spec['mig'] == {'strategy': 'mixed'} and spec['daemonsets']['tolerations'] == [DEDICATED, GPU_TOL]
    assert results['policy']['state'] == 'ready'


# --- uninstall (these run last: they remove what the cases above installed, then install it again) -----------

UNINSTALL = [include('uninstall')]
USER_LABEL = ('gpuops.dev/team', 'ml')


def _uninstall_state(custom, core):
    """What the uninstall removes or must leave alone."""
    return {'namespaces': sorted(namespaces(core) & {GPU_NS, 'openshift-nfd'}),
            'subscriptions': sorted(s['metadata']['name'] for s in items(custom, 'subscriptions')),
            'csvs': sorted(c['metadata']['name'] for ns in (GPU_NS, 'openshift-nfd') if ns in namespaces(core)
                           for c in items(custom, 'clusterserviceversions', ns)),
            'policies': [p['metadata']['name'] for p in items(custom, 'clusterpolicies', version='v1', group='nvidia.com')]}


@pytest.fixture(scope='module')
def user_objects(testbed, core):
    """A ConfigMap and a node label of the user's, which the uninstall must leave alone."""
    core.create_namespaced_config_map('default', client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name='gpu-notes', labels={'team': 'ml'}), data={'a': 'b'}))
    core.patch_node('t4-0', {'metadata': {'labels': dict([USER_LABEL])}})
    return 'gpu-notes'


def test_uninstall_check_mode_prints_the_plan_and_writes_nothing(testbed, package_api, custom, core, user_objects):
    before, state = snapshot(custom, core), _uninstall_state(custom, core)
    assert state['namespaces'] == [GPU_NS, 'openshift-nfd'] and state['policies'] == ['gpu-cluster-policy']
    rc, results, stats, raw = run_play_stats(testbed.kubeconfig, UNINSTALL, check=True, diff=True)
    assert rc == 0, raw
    plan = results['Show the plan']['msg']
    assert plan[0] == 'custom resources: ClusterPolicy gpu-cluster-policy', plan
    assert plan[-1] == 'namespaces: Namespace %s, Namespace openshift-nfd' % GPU_NS, plan
    olm = results['operator | Remove the OLM Subscription, its CSV and the OperatorGroup gpuops.gpu created']
    assert olm['changed'] and olm['actions'][:2] == [
        'delete Subscription %s/gpu-operator-certified' % GPU_NS, 'delete ClusterServiceVersion %s/%s' % (GPU_NS, PINNED)], olm
    assert stats.get('changed', 0) >= 4, raw
    assert snapshot(custom, core) == before and _uninstall_state(custom, core) == state


def test_uninstall_refuses_while_a_gpu_pod_runs(testbed, package_api, custom, core, user_objects):
    pod = client.V1Pod(metadata=client.V1ObjectMeta(name='train', namespace='default'), spec=client.V1PodSpec(
        node_name='t4-0', tolerations=[client.V1Toleration(**GPU_TOL), client.V1Toleration(**DEDICATED)],
        containers=[client.V1Container(name='c', image='registry.invalid/cuda:12', resources=client.V1ResourceRequirements(
            limits={'nvidia.com/gpu': '1'}))]))
    core.create_namespaced_pod('default', pod)
    try:
        before = snapshot(custom, core)
        rc, results, _stats, raw = run_play_stats(testbed.kubeconfig, UNINSTALL)
        assert rc != 0, raw
        msg = ' '.join(results['Refuse while GPU workloads run (nothing was changed)']['msg'])
        assert 'default/train on t4-0 (nvidia.com/gpu)' in msg and 'uninstall_force: true' in msg, msg
        assert snapshot(custom, core) == before
    finally:
        core.delete_namespaced_pod('train', 'default', grace_period_seconds=0)
    conftest.wait_until('the GPU pod to be gone', lambda: not [
        p for p in core.list_namespaced_pod('default').items if p.metadata.name == 'train'], 30)


def test_uninstall_removes_what_gpuops_created_and_leaves_user_objects(testbed, package_api, custom, core,
                                                                       user_objects):
    rc, results, stats, raw = run_play_stats(testbed.kubeconfig, UNINSTALL)
    assert rc == 0, raw
    assert _uninstall_state(custom, core) == {'namespaces': [], 'subscriptions': [], 'csvs': [], 'policies': []}
    assert not [og for og in items(custom, 'operatorgroups', version='v1')
                if og['metadata']['namespace'] in (GPU_NS, 'openshift-nfd')]
    assert core.read_namespaced_config_map(user_objects, 'default').data == {'a': 'b'}
    assert core.read_node('t4-0').metadata.labels.get(USER_LABEL[0]) == USER_LABEL[1]
    # the catalogs (not created by gpuops.gpu) stay
    assert {'certified-operators', 'redhat-operators'} <= set(
        c['metadata']['name'] for c in items(custom, 'catalogsources', 'openshift-marketplace'))


def test_second_uninstall_changes_nothing(testbed, package_api, custom, core, user_objects, api_client):
    """The second uninstall reports no change and writes nothing: every object of the cluster, compared before and
    after (cluster_snapshot: what the cluster rewrites by itself left out), as the other idempotence tests compare
    theirs; a run that re-deleted, recreated or patched anything while reporting ok fails here."""
    before = settled_snapshot(api_client, what='the cluster after the uninstall')
    rc, _results, stats, raw = run_play_stats(testbed.kubeconfig, UNINSTALL)
    assert rc == 0, raw
    assert stats.get('changed') == 0, raw
    changed, _moved = changes(before, cluster_snapshot(api_client))
    assert changed == [], changed


def test_install_again_after_uninstall_converges(testbed, package_api, custom, core, user_objects):
    rc, _results, _stats, raw = run_play_stats(testbed.kubeconfig, INSTALL_ROLES, vars=VARS)
    assert rc == 0, raw
    state = _uninstall_state(custom, core)
    assert state['namespaces'] == [GPU_NS, 'openshift-nfd'] and state['policies'] == ['gpu-cluster-policy']
    assert PINNED in state['csvs']
    assert custom.get_cluster_custom_object(*CP, 'gpu-cluster-policy')['status']['state'] == 'ready'
    assert core.read_node('t4-0').metadata.labels.get(USER_LABEL[0]) == USER_LABEL[1]
