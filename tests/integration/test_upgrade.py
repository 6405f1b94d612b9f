"""The upgrade role on the virtual GPU cluster: the GPU operator installed through the simulated OLM pinned to an
older CSV of the `stable` channel (v25.10.1; the catalog also offers v26.3.3 and the head v26.7.0, and OLM offers
the head's InstallPlan as soon as the pinned CSV is installed), then upgraded to the head with only that
InstallPlan approved, with the real gpu-operator reconciling the ClusterPolicy before and after. Then NFD the same
way: installed pinned to the first CSV of its `stable` channel (nfd.4.18.0-202509100907) and upgraded to the next
(nfd.4.18.0-202510211040), its NodeFeatureDiscovery instance served throughout. One small cluster
(tests/testbed/configs/upgrade.yaml: two T4 nodes) for the module."""

import datetime
import os

import pytest
from kubernetes import client

import conftest
from ansible_run import include, run_play_stats
from policy_helpers import CP, POLICY_NAME
from role_cases import assert_failed, failure_cases

TESTBED_CONFIG = os.path.join(conftest.REPO, 'tests', 'testbed', 'configs', 'upgrade.yaml')
OLM = ('operators.coreos.com', 'v1alpha1')
PKG = ('packages.operators.coreos.com', 'v1', 'openshift-marketplace', 'packagemanifests')
GPU_NS = 'nvidia-gpu-operator'
OLD = 'gpu-operator-certified.v25.10.1'
MID = 'gpu-operator-certified.v26.3.3'
NEW = 'gpu-operator-certified.v26.7.0'
NFD_NS = 'openshift-nfd'
NFD_OLD = 'nfd.4.18.0-202509100907'
NFD_NEW = 'nfd.4.18.0-202510211040'
NFD_API = ('nfd.openshift.io', 'v1', NFD_NS, 'nodefeaturediscoveries')
GPU_NODES = ['t4-0', 't4-1']  # tests/testbed/configs/upgrade.yaml
UPGRADE_STATE = 'nvidia.com/gpu-driver-upgrade-state'
ROLE = [include('upgrade')]
VARS = {'upgrade_gpu_operator_csv': NEW, 'upgrade_poll_interval': 1, 'upgrade_ready_timeout': 180,
        'upgrade_wait_timeout': 120}
POLICY = {'auto_upgrade': True, 'max_parallel_upgrades': 1, 'max_unavailable': '50%',
          'drain': {'enable': True, 'timeout_seconds': 300, 'delete_empty_dir': False}}


def driver_upgrade_states(core):
    """[{'node', 'state'}] of the nodes labelled nvidia.com/gpu-driver-upgrade-state, by name, read from the API."""
    labelled = [(n.metadata.name, (n.metadata.labels or {}).get(UPGRADE_STATE)) for n in core.list_node().items]
    return [{'node': name, 'state': state} for name, state in sorted(labelled) if state is not None]


def items(custom, plural, namespace=GPU_NS):
    return custom.list_namespaced_custom_object(*OLM, namespace, plural)['items']


def snapshot(custom):
    """resourceVersions of what an upgrade may write: Subscriptions, InstallPlans, CSVs, the ClusterPolicy."""
    out = dict(('%s/%s' % (plural, o['metadata']['name']), o['metadata']['resourceVersion'])
               for plural in ('subscriptions', 'installplans', 'clusterserviceversions') for o in items(custom, plural))
    out['clusterpolicy'] = custom.get_cluster_custom_object(*CP, POLICY_NAME)['metadata']['resourceVersion']
    return out


def approved(custom):
    return sorted(tuple(p['spec']['clusterServiceVersionNames']) for p in items(custom, 'installplans')
                  if p['spec'].get('approved'))


@pytest.fixture(scope='module')
def installed(testbed, extensions, custom):
    """The PackageManifest API (a CRD stand-in for OpenShift's packageserver, filled by the simulated OLM on an
    OperatorHub change), then the gpu_operator role pinned to the old CSV, ClusterPolicy ready."""
    conftest.wait_until('the default CatalogSources', lambda: 'certified-operators' in [
        c['metadata']['name'] for c in items(custom, 'catalogsources', 'openshift-marketplace')], 120)
    crd = {'apiVersion': 'apiextensions.k8s.io/v1', 'kind': 'CustomResourceDefinition',
           'metadata': {'name': 'packagemanifests.packages.operators.coreos.com'},
           'spec': {'group': PKG[0], 'scope': 'Namespaced',
                    'names': {'kind': 'PackageManifest', 'listKind': 'PackageManifestList',
                              'plural': 'packagemanifests', 'singular': 'packagemanifest'},
                    'versions': [{'name': 'v1', 'served': True, 'storage': True, 'subresources': {'status': {}},
                                  'schema': {'openAPIV3Schema': {'type': 'object',
                                                                 'x-kubernetes-preserve-unknown-fields': True}}}]}}
    extensions.create_custom_resource_definition(crd)
    conftest.wait_until('the PackageManifest CRD to be served', lambda: _served(custom), 30)
    custom.create_cluster_custom_object('config.openshift.io', 'v1', 'operatorhubs', {
        'apiVersion': 'config.openshift.io/v1', 'kind': 'OperatorHub', 'metadata': {'name': 'cluster'},
        'spec': {'sources': [{'name': 'community-operators', 'disabled': True}]}})
    conftest.wait_until('gpusim to publish the PackageManifests', lambda: len(
        custom.list_namespaced_custom_object(*PKG)['items']) >= 2, 60)
    rc, _results, _stats, raw = run_play_stats(testbed.kubeconfig, [include('gpu_operator')], vars={
        'gpu_operator_olm_channel': 'stable', 'gpu_operator_olm_starting_csv': OLD, 'gpu_operator_poll_interval': 1,
        'gpu_operator_ready_timeout': 180})
    assert rc == 0, raw[-4000:]
    conftest.wait_until('OLM to offer the upgrade to %s' % NEW, lambda: any(
        p['spec']['clusterServiceVersionNames'] == [NEW] for p in items(custom, 'installplans')), 30)
    return custom


def _served(custom):
    try:
        custom.list_namespaced_custom_object(*PKG)
        return True
    except client.ApiException:
        return False


def test_check_mode_prints_the_plan_and_writes_nothing(testbed, installed):
    before = snapshot(installed)
    rc, results, _stats, raw = run_play_stats(testbed.kubeconfig, ROLE, check=True, diff=True,
                                              vars=dict(VARS, upgrade_driver_upgrade_policy=POLICY))
    assert rc == 0, raw[-4000:]
    plan = next(r for name, r in results.items() if name.endswith('The plan'))
    assert any(line.startswith('gpu_operator: approve InstallPlan %s/install-' % GPU_NS) and
               line.endswith('to go from %s to %s' % (OLD, NEW)) for line in plan['msg']), plan['msg']
    approve = next(r for name, r in results.items() if 'Approve the target' in name)['results'][0]
    assert approve['changed'] and any(a.startswith('approve InstallPlan') for a in approve['actions'])
    assert snapshot(installed) == before


def test_an_upgrade_that_cannot_go_ahead_stops_before_any_write(testbed, installed):
    """Not in the catalog, not the version OLM offers, a rollout holding the lock: each stops with its reason."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%S.%fZ')
    lock_ns = installed.get_cluster_custom_object(*CP, POLICY_NAME)['status']['namespace']
    installed.create_namespaced_custom_object('coordination.k8s.io', 'v1', lock_ns, 'leases', {
        'apiVersion': 'coordination.k8s.io/v1', 'kind': 'Lease',
        'metadata': {'name': 'gpuops-gpu-rollout', 'annotations': {'gpuops.gpu/lock-purpose': 'mig_rollout of 1 node'}},
        'spec': {'holderIdentity': 'another-run', 'leaseDurationSeconds': 600, 'acquireTime': now, 'renewTime': now}})
    before = snapshot(installed)
    try:
        got, raw = failure_cases(testbed.kubeconfig, {
            'not in the catalog': ('upgrade', {'upgrade_gpu_operator_csv': 'gpu-operator-certified.v99.1.0'}),
            'not offered': ('upgrade', {'upgrade_gpu_operator_csv': MID}),
            'rollout in progress': ('upgrade', {}),
        }, VARS)
    finally:
        installed.delete_namespaced_custom_object('coordination.k8s.io', 'v1', lock_ns, 'leases', 'gpuops-gpu-rollout')
    assert_failed(got, raw, {
        'not in the catalog': 'channel stable of package gpu-operator-certified has no CSV '
                              'gpu-operator-certified.v99.1.0',
        'not offered': 'OLM offers no InstallPlan for %s (unapproved InstallPlans: install-' % MID,
        'rollout in progress': 'the rollout lock (Lease gpuops-gpu-rollout) is held by',
    }, task='preflight | Stop before writing anything')
    assert 'mig_rollout of 1 node' in got['rollout in progress']['msg']
    assert snapshot(installed) == before
    assert approved(installed) == [(OLD,)]


def test_upgrade_approves_only_the_targets_install_plan(testbed, installed, core):
    rc, results, _stats, raw = run_play_stats(testbed.kubeconfig, ROLE, vars=dict(
        VARS, upgrade_driver_upgrade_policy=POLICY))
    assert rc == 0, raw[-4000:]
    sub = installed.get_namespaced_custom_object(*OLM, GPU_NS, 'subscriptions', 'gpu-operator-certified')
    assert sub['status']['installedCSV'] == NEW and sub['spec']['startingCSV'] == NEW
    csvs = dict((c['metadata']['name'], c['status']['phase']) for c in items(installed, 'clusterserviceversions'))
    assert csvs == {NEW: 'Succeeded'}
    assert approved(installed) == [(OLD,), (NEW,)]
    assert [p['spec']['clusterServiceVersionNames'] for p in items(installed, 'installplans')
            if not p['spec'].get('approved')] == []
    policy = installed.get_cluster_custom_object(*CP, POLICY_NAME)
    assert policy['status']['state'] == 'ready'
    upgrade_policy = policy['spec']['driver']['upgradePolicy']  # the CSV example's, with what was asked set
    assert dict((k, upgrade_policy[k]) for k in ('autoUpgrade', 'maxParallelUpgrades', 'maxUnavailable')) == {
        'autoUpgrade': True, 'maxParallelUpgrades': 1, 'maxUnavailable': '50%'}
    assert upgrade_policy['drain'] == {'enable': True, 'force': False, 'timeoutSeconds': 300, 'deleteEmptyDir': False}
    summary = next(r for name, r in results.items() if name.endswith('driver upgrade state per node'))
    assert summary['msg']['installed'] == [NEW] and summary['msg']['cluster_policy'] == 'ready'
    # each GPU node with the state the operator's upgrade controller wrote on it (it labels every GPU node while
    # autoUpgrade is on), as the nodes carry it now
    assert summary['msg']['driver_upgrade_state'] == driver_upgrade_states(core)
    assert [n['node'] for n in summary['msg']['driver_upgrade_state']] == GPU_NODES


def test_rerun_at_the_target_changes_nothing(testbed, installed):
    before = snapshot(installed)
    rc, results, stats, raw = run_play_stats(testbed.kubeconfig, ROLE, vars=dict(
        VARS, upgrade_driver_upgrade_policy=POLICY))
    assert rc == 0, raw[-4000:]
    assert stats.get('changed') == 0, raw[-4000:]
    plan = next(r for name, r in results.items() if name.endswith('The plan'))
    assert plan['msg'] == ['gpu_operator: at %s already, nothing to do' % NEW,
                           'ClusterPolicy: set driver.upgradePolicy {"autoUpgrade": true, "drain": {"deleteEmptyDir": '
                           'false, "enable": true, "timeoutSeconds": 300}, "maxParallelUpgrades": 1, '
                           '"maxUnavailable": "50%"} (where it differs)']
    assert snapshot(installed) == before


# --- NFD ---------------------------------------------------------------------------------------

@pytest.fixture(scope='module')
def nfd_installed(testbed, installed):
    """The nfd role pinned to the first CSV of the channel, its NodeFeatureDiscovery instance created; OLM then
    offers the next CSV's InstallPlan."""
    rc, _results, _stats, raw = run_play_stats(testbed.kubeconfig, [include('nfd')], vars={
        'nfd_olm_starting_csv': NFD_OLD, 'nfd_gpu_node_selector': 'gpuops.dev/pool', 'nfd_poll_interval': 1,
        'nfd_wait_timeout': 60, 'nfd_olm_wait_timeout': 120})
    assert rc == 0, raw[-4000:]
    conftest.wait_until('OLM to offer the upgrade to %s' % NFD_NEW, lambda: any(
        p['spec']['clusterServiceVersionNames'] == [NFD_NEW] for p in items(installed, 'installplans', NFD_NS)), 30)
    return installed


def nfd_snapshot(custom):
    """resourceVersions of what an NFD upgrade may write, and of the NodeFeatureDiscovery instance."""
    out = dict(('%s/%s' % (plural, o['metadata']['name']), o['metadata']['resourceVersion'])
               for plural in ('subscriptions', 'installplans', 'clusterserviceversions')
               for o in items(custom, plural, NFD_NS))
    out.update(('nfd/' + o['metadata']['name'], o['metadata']['resourceVersion'])
               for o in custom.list_namespaced_custom_object(*NFD_API)['items'])
    return out


def test_nfd_upgrade_approves_only_the_targets_install_plan(testbed, nfd_installed):
    custom = nfd_installed
    instance = custom.get_namespaced_custom_object(*NFD_API, 'nfd-instance')
    gpu_before = snapshot(custom)
    rc, results, _stats, raw = run_play_stats(testbed.kubeconfig, ROLE, vars=dict(
        VARS, upgrade_gpu_operator_csv='', upgrade_nfd_csv=NFD_NEW))
    assert rc == 0, raw[-4000:]
    plan = next(r for name, r in results.items() if name.endswith('The plan'))
    assert len(plan['msg']) == 1 and plan['msg'][0].startswith('nfd: approve InstallPlan %s/install-' % NFD_NS)
    assert plan['msg'][0].endswith('to go from %s to %s' % (NFD_OLD, NFD_NEW)), plan['msg']
    sub = custom.get_namespaced_custom_object(*OLM, NFD_NS, 'subscriptions', 'nfd')
    assert sub['status']['installedCSV'] == NFD_NEW and sub['spec']['startingCSV'] == NFD_NEW
    csvs = dict((c['metadata']['name'], (c['status']['phase'], c['spec']['version'], c['spec'].get('replaces')))
                for c in items(custom, 'clusterserviceversions', NFD_NS))
    assert csvs == {NFD_NEW: ('Succeeded', '4.18.0-202510211040', NFD_OLD)}
    plans = sorted((tuple(p['spec']['clusterServiceVersionNames']), p['spec']['approved'])
                   for p in items(custom, 'installplans', NFD_NS))
    assert plans == [((NFD_OLD,), True), ((NFD_NEW,), True)]
    # the operator's API and the instance the nfd role created are still served, unchanged
    after = custom.get_namespaced_custom_object(*NFD_API, 'nfd-instance')
    assert after['metadata']['resourceVersion'] == instance['metadata']['resourceVersion']
    assert after['spec'] == instance['spec']
    summary = next(r for name, r in results.items() if name.endswith('driver upgrade state per node'))
    assert summary['msg']['installed'] == [NFD_NEW] and summary['msg']['cluster_policy'] == 'ready'
    assert snapshot(custom) == gpu_before  # the GPU operator was left alone


def test_nfd_rerun_at_the_target_changes_nothing(testbed, nfd_installed):
    before = nfd_snapshot(nfd_installed)
    rc, results, stats, raw = run_play_stats(testbed.kubeconfig, ROLE, vars=dict(
        VARS, upgrade_gpu_operator_csv='', upgrade_nfd_csv=NFD_NEW))
    assert rc == 0, raw[-4000:]
    assert stats.get('changed') == 0, raw[-4000:]
    plan = next(r for name, r in results.items() if name.endswith('The plan'))
    assert plan['msg'] == ['nfd: at %s already, nothing to do' % NFD_NEW]
    assert nfd_snapshot(nfd_installed) == before
