"""The upgrade role on the virtual GPU cluster: the GPU operator installed through the simulated OLM pinned to an
older CSV of the `stable` channel (v25.10.1; the catalog also offers v26.3.3 and the head v26.7.0, and OLM offers
the head's InstallPlan as soon as the pinned CSV is installed), then upgraded to the head with only that
InstallPlan approved, with the real gpu-operator reconciling the ClusterPolicy before and after. Then NFD the same
way: installed pinned to the first CSV of its `stable` channel (nfd.4.18.0-202509100907) and upgraded to the next
(nfd.4.18.0-202510211040), its NodeFeatureDiscovery instance served throughout. One small cluster
(tests/testbed/configs/upgrade.yaml: two T4 nodes) for the module."""

import datetime
import os
import time

import pytest
from kubernetes import client

import conftest
from ansible_run import callback_output, include, run_play, run_play_stats
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


# --- the driver, through the operator's own upgrade controller ------------------------------------
# The real operator's upgrade controller (k8s-operator-libs pkg/upgrade, docs/facts.md "Driver upgrades through the
# operator") walks each node through nvidia.com/gpu-driver-upgrade-state and restarts its driver pod; the real
# DaemonSet controller starts the new one (updateStrategy OnDelete), KWOK runs it, and the simulated GFD labels the
# driver version it runs (docs/testbed.md "Driver upgrades"). The operator runs with OLM's digest-pinned DRIVER_IMAGE,
# so the first upgrade goes from the digest to a tag.

DRIVER = '580.105.08'
DRIVER_2 = '580.126.09'
DRIVER_3 = '580.65.06'
DRIVER_TASK = 'driver_apply | Set the driver target and policy, follow the operator\'s upgrade on every node'
DRIVER_PLAN = 'driver_preflight | The driver upgrade plan'
SUMMARY = 'Show the rollout summary (node, from -> to, duration, pods evicted, result)'
PAUSED = 'gpuops.gpu/driver-upgrade-paused'
# drain off (the OLM tests above turned it on): a failed pod deletion then ends upgrade-failed at once, rather than
# after a drain that the same PodDisruptionBudget blocks for drain.timeoutSeconds
DRIVER_POLICY = {'max_parallel_upgrades': 1, 'max_unavailable': 1, 'pod_deletion': {'timeout_seconds': 5},
                 'drain': {'enable': False}}
DRIVER_VARS = dict(VARS, upgrade_gpu_operator_csv='', upgrade_driver_version=DRIVER,
                   upgrade_driver_upgrade_policy=DRIVER_POLICY, upgrade_driver_state_timeout=240)
TEAM = 'team-a'


def driver_pods(core, operator_ns):
    """{node: (image, ready)} of the driver pods that are not being deleted."""
    return dict((p.spec.node_name, (p.spec.containers[0].image,
                                    all(s.ready for s in p.status.container_statuses or [])))
                for p in core.list_namespaced_pod(operator_ns, label_selector='app=nvidia-driver-daemonset').items
                if not p.metadata.deletion_timestamp)


def driver_state(core):
    """{node: (upgrade state, cordoned, paused mark)} of the GPU nodes."""
    return dict((n.metadata.name, ((n.metadata.labels or {}).get(UPGRADE_STATE), bool(n.spec.unschedulable),
                                   (n.metadata.annotations or {}).get(PAUSED)))
                for n in core.list_node().items if n.metadata.name in GPU_NODES)


def at_driver(core, operator_ns, version):
    """Every GPU node upgrade-done, schedulable, its driver pod ready on <version>-<os tag>."""
    pods = driver_pods(core, operator_ns)
    return driver_state(core) == dict((n, ('upgrade-done', False, None)) for n in GPU_NODES) and all(
        pods.get(n) == ('nvcr.io/nvidia/driver:%s-rhcos4.18' % version, True) for n in GPU_NODES)


def driver_snapshot(custom, core):
    return (custom.get_cluster_custom_object(*CP, POLICY_NAME)['metadata']['resourceVersion'], driver_state(core),
            sorted(p.metadata.uid for p in core.list_pod_for_all_namespaces(
                label_selector='app=nvidia-driver-daemonset').items))


WAKE = 'gpuops.dev/wake-upgrade-controller'


def wait_for_upgrade_controller(core, what, done, pods, timeout):
    """Wait for ``done()`` where only the operator's upgrade controller can get there: it reconciles on a node label
    change, a ClusterPolicy or driver DaemonSet generation change and every 2 minutes (docs/facts.md), not when a
    driver pod appears. On a real node GPU feature discovery starts after the driver and labels the node, which wakes
    it; here GFD's labels are there before the driver pods. So once ``pods()`` (the driver pods, by node) has one per
    GPU node, a label change on a GPU node wakes the controller (again every 5 s while nothing is done); the label is
    removed at the end."""
    woken = [0.0]

    def check():
        if done():
            return True
        if len(pods()) == len(GPU_NODES) and time.monotonic() - woken[0] > 5:
            core.patch_node(GPU_NODES[0], {'metadata': {'labels': {WAKE: str(int(time.time() * 1000))}}})
            woken[0] = time.monotonic()
        return False
    try:
        conftest.wait_until(what, check, timeout)
    finally:
        core.patch_node(GPU_NODES[0], {'metadata': {'labels': {WAKE: None}}})


def set_pdb(api_client, present):
    """The PodDisruptionBudget that keeps the GPU workload on t4-0 from being evicted (minAvailable 1)."""
    policy = client.PolicyV1Api(api_client)
    if present:
        policy.create_namespaced_pod_disruption_budget(TEAM, {
            'metadata': {'name': 'train'}, 'spec': {'minAvailable': 1, 'selector': {'matchLabels': {'app': 'train'}}}})
        conftest.wait_until('the PDB to allow no disruption', lambda: (policy.read_namespaced_pod_disruption_budget(
            'train', TEAM).status.expected_pods or 0) == 1, 30)
    else:
        policy.delete_namespaced_pod_disruption_budget('train', TEAM)


@pytest.fixture(scope='module')
def gpu_workload(testbed, nfd_installed, core, api_client, operator_ns):
    """A GPU Deployment pinned to t4-0 (what the operator deletes there before it replaces the driver), every GPU
    node upgrade-done on the driver OLM pinned (autoUpgrade is on since test_upgrade_approves_...)."""
    wait_for_upgrade_controller(core, 'both GPU nodes upgrade-done', lambda: [
        s for s, _c, _p in driver_state(core).values()] == ['upgrade-done'] * 2, lambda: driver_pods(
            core, operator_ns), 180)
    core.create_namespace({'metadata': {'name': TEAM}})
    client.AppsV1Api(api_client).create_namespaced_deployment(TEAM, {
        'metadata': {'name': 'train'}, 'spec': {
            'replicas': 1, 'selector': {'matchLabels': {'app': 'train'}},
            'template': {'metadata': {'labels': {'app': 'train'}}, 'spec': {
                'nodeSelector': {'kubernetes.io/hostname': 't4-0'},
                'containers': [{'name': 'train', 'image': 'nvcr.io/nvidia/pytorch:25.01-py3',
                                'resources': {'limits': {'nvidia.com/gpu': 1}}}]}}}})
    conftest.wait_until('the GPU workload running on t4-0', lambda: [
        p.status.phase for p in core.list_namespaced_pod(TEAM).items] == ['Running'], 60)
    return nfd_installed


def test_driver_check_mode_plans_and_writes_nothing(testbed, gpu_workload, core, api_client):
    custom = gpu_workload
    set_pdb(api_client, True)
    try:
        before = driver_snapshot(custom, core)
        rc, results, _stats, raw = run_play_stats(testbed.kubeconfig, ROLE, check=True, diff=True, vars=DRIVER_VARS)
        assert rc == 0, raw
        after = driver_snapshot(custom, core)
    finally:
        set_pdb(api_client, False)
    assert after == before
    lines = results[DRIVER_PLAN]['msg']
    train = next(p.metadata.name for p in core.list_namespaced_pod(TEAM).items)
    assert lines[0].startswith('batch 1: t4-0 sha256:') and lines[0].endswith(' -> %s' % DRIVER), lines
    assert '  t4-0: the operator deletes GPU pod(s) %s/%s' % (TEAM, train) in lines, lines
    assert ('  t4-0: %s/%s would block: PodDisruptionBudget %s/train allows no disruption (the node would end '
            'upgrade-failed)' % (TEAM, train, TEAM)) in lines, lines
    assert any(line.startswith('batch 2: t4-1 sha256:') for line in lines), lines
    assert lines[-1] == ('ClusterPolicy: set driver.image=driver, driver.repository=nvcr.io/nvidia, '
                         'driver.upgradePolicy.drain.enable=false, driver.upgradePolicy.maxUnavailable=1, '
                         'driver.upgradePolicy.podDeletion.timeoutSeconds=5, driver.version=%s' % DRIVER), lines
    summary = results[SUMMARY]['msg']
    assert summary[0] == 'Driver upgrade: 2 node(s)' and summary[-1] == 'planned 2 (check mode: nothing was changed)'


def test_driver_upgrade_follows_every_node_to_upgrade_done(testbed, gpu_workload, core, operator_ns):
    custom = gpu_workload
    train = next(p.metadata.name for p in core.list_namespaced_pod(TEAM).items)
    rc, results, raw = run_play(testbed.kubeconfig, ROLE, vars=DRIVER_VARS,
                                extra_env={'ANSIBLE_SHOW_CUSTOM_STATS': '1'})
    assert rc == 0, raw[-6000:]
    assert at_driver(core, operator_ns, DRIVER), (driver_state(core), driver_pods(
        core, operator_ns))
    policy = custom.get_cluster_custom_object(*CP, POLICY_NAME)['spec']['driver']
    assert (policy['repository'], policy['image'], policy['version']) == ('nvcr.io/nvidia', 'driver', DRIVER)
    assert policy['upgradePolicy']['autoUpgrade'] is True and policy['upgradePolicy']['maxUnavailable'] == 1
    # the simulated GFD reports the driver that runs now
    assert all(core.read_node(n).metadata.labels['nvidia.com/cuda.driver-version.full'] == DRIVER for n in GPU_NODES)
    # progress in the job output: each node's states as they come, the status line, the end
    for node in GPU_NODES:
        assert '] %s: upgrade-done' % node in raw or '%s: upgrade-done' % node in raw, raw
    assert 'driver upgrade done: 2 node(s) at nvcr.io/nvidia/driver:%s-rhcos4.18' % DRIVER in raw, raw
    assert 'driver rollout on ' in raw and 'done: 2/2' in raw, raw
    nodes = dict((n['node'], n) for n in results[DRIVER_TASK]['nodes'])
    assert sorted(nodes) == GPU_NODES
    for node, entry in nodes.items():
        assert (entry['phase'], entry['to'], entry['state']) == ('done', DRIVER, 'upgrade-done'), entry
        assert entry['from'].startswith('sha256:'), entry
        timeline = entry['timeline']
        assert 'started' in timeline and 'uncordoned' in timeline, entry
        assert sorted(timeline.values()) == [timeline[e] for e in (
            'started', 'cordoned', 'drained', 'reported', 'verified', 'uncordoned') if e in timeline], timeline
        assert [s for s, _t in entry['states']][-1] == 'upgrade-done', entry['states']
    assert nodes['t4-0']['evicted'] == ['%s/%s' % (TEAM, train)] and nodes['t4-1']['evicted'] == []
    summary = results[SUMMARY]['msg']
    assert summary[-1] == 'done 2, held 0, gone 0, not started 0', summary
    assert any(line.startswith('t4-0  sha256:') and line.endswith('1        done') for line in summary), summary
    stats = custom_stats(raw)['gpuops_rollout']
    assert stats['kind'] == 'driver_upgrade' and sorted(n['node'] for n in stats['nodes']) == GPU_NODES
    assert all(n['timeline'] for n in stats['nodes'])
    conftest.wait_until('the GPU workload back on t4-0', lambda: [
        p.status.phase for p in core.list_namespaced_pod(TEAM).items] == ['Running'], 60)


def custom_stats(raw):
    """The set_stats data of a run (the json callback's global_custom_stats)."""
    return callback_output(raw).get('global_custom_stats') or {}


def test_driver_rerun_changes_nothing(testbed, gpu_workload, core):
    before = driver_snapshot(gpu_workload, core)
    rc, results, stats, raw = run_play_stats(testbed.kubeconfig, ROLE, vars=DRIVER_VARS)
    assert rc == 0, raw
    assert stats.get('changed') == 0, raw
    assert results[DRIVER_PLAN]['msg'] == [
        'driver: every driver node runs nvcr.io/nvidia/driver:%s-rhcos4.18 already, nothing to upgrade' % DRIVER]
    assert driver_snapshot(gpu_workload, core) == before


def test_driver_failure_is_held_with_its_reason_paused_and_resumed(
        testbed, gpu_workload, core, api_client, operator_ns):
    """The GPU workload on t4-0 is protected by a PodDisruptionBudget: the operator's pod deletion times out
    (podDeletion.timeoutSeconds 5) and it labels t4-0 upgrade-failed with a Warning Event. The run stops naming
    it, and pauses the operator's upgrades (on_failure pause); once the PDB is gone, a re-run resumes and ends
    with both nodes on the new driver and t4-0 back in service."""
    custom = gpu_workload
    variables = dict(DRIVER_VARS, upgrade_driver_version=DRIVER_2, upgrade_driver_on_failure='pause')
    set_pdb(api_client, True)
    try:
        rc, results, raw = run_play(testbed.kubeconfig, ROLE, vars=variables)
        assert rc != 0, raw[-6000:]
        failed = results[DRIVER_TASK]
        assert failed.get('failed') and failed['paused'] is True, failed
        msg = failed['msg']
        assert msg.startswith('driver upgrade held: node t4-0 (state upgrade-failed): is upgrade-failed: Failed to '
                              'delete workload pods on the node for the driver upgrade'), msg
        assert 'PodDisruptionBudget' in msg or 'global timeout reached: 5s' in msg, msg
        assert '; driver pod: nvidia-driver-daemonset-' in msg and 'Running, ready' in msg, msg
        assert "The operator's upgrades are paused (autoUpgrade false)" in msg, msg
        assert 't4-0 held: is upgrade-failed' in raw, raw[:6000]
        held = next(line for line in results[SUMMARY]['msg'] if line.startswith('t4-0 '))
        assert 'held: is upgrade-failed: Failed to delete workload pods' in held, held
        assert custom.get_cluster_custom_object(*CP, POLICY_NAME)['spec']['driver']['upgradePolicy'][
            'autoUpgrade'] is False
        # autoUpgrade false: the operator removed its state labels; t4-0 stays cordoned, marked for the resume
        conftest.wait_until('the operator to drop its state labels', lambda: all(
            s is None for s, _c, _p in driver_state(core).values()), 60)
        assert driver_state(core)['t4-0'] == (None, True, 'true')
        # the mark is also a label: its removal with the uncordon wakes the operator for the next node
        assert core.read_node('t4-0').metadata.labels.get(PAUSED) == 'true'
    finally:
        set_pdb(api_client, False)
    rc, results, raw = run_play(testbed.kubeconfig, ROLE, vars=variables)
    assert rc == 0, raw[-6000:]
    assert 'resuming after a pause: t4-0' in raw and 't4-0: uncordoned' in raw, raw[:6000]
    assert at_driver(core, operator_ns, DRIVER_2), (driver_state(core), driver_pods(
        core, operator_ns))
    assert PAUSED not in core.read_node('t4-0').metadata.labels
    assert custom.get_cluster_custom_object(*CP, POLICY_NAME)['spec']['driver']['upgradePolicy']['autoUpgrade'] is True
    assert results[SUMMARY]['msg'][-1] == 'done %d, held 0, gone 0, not started 0' % len(results[DRIVER_TASK]['nodes'])


def test_driver_failure_without_pause_is_retried_on_the_next_run(testbed, gpu_workload, core, api_client, operator_ns):
    """on_failure stop: the operator keeps its upgrades on and t4-0 stays upgrade-failed (it never leaves that state
    by itself while its old driver runs). After the fix the next run retries it as NVIDIA documents - its GPU pods
    evicted, its driver pod restarted - and the operator finishes it."""
    task = {'name': 'driver', 'gpuops.gpu.driver_upgrade': {
        'version': DRIVER_3, 'policy': DRIVER_POLICY, 'poll_interval': 1, 'state_timeout': 240,
        'operator_namespace': operator_ns}}
    conftest.wait_until('the GPU workload running on t4-0', lambda: [
        p.status.phase for p in core.list_namespaced_pod(TEAM).items] == ['Running'], 60)
    set_pdb(api_client, True)
    try:
        rc, results, raw = run_play(testbed.kubeconfig, [task])
        assert rc != 0, raw[-6000:]
        assert 'node t4-0 (state upgrade-failed)' in results['driver']['msg'], results['driver']
        assert 'fix the cause and run again to resume (an upgrade-failed node is retried' in results['driver']['msg']
        assert driver_state(core)['t4-0'] == ('upgrade-failed', True, None)
    finally:
        set_pdb(api_client, False)
    train = next(p.metadata.name for p in core.list_namespaced_pod(TEAM).items)
    rc, results, raw = run_play(testbed.kubeconfig, [task])
    assert rc == 0, raw[-6000:]
    assert "t4-0: upgrade-failed before this run: moving its GPU pods off, then restarting its driver pod" in raw, \
        raw[:6000]
    entry = next(n for n in results['driver']['nodes'] if n['node'] == 't4-0')
    assert entry['retried'] is True and entry['phase'] == 'done' and '%s/%s' % (TEAM, train) in entry['evicted'], entry
    assert at_driver(core, operator_ns, DRIVER_3), (driver_state(core), driver_pods(
        core, operator_ns))


# --- per-pool drivers (NVIDIADriver objects): the last tests of the module, they switch the driver's deployment ---

POOL_DRIVER = '580.95.05'
NVIDIA_DRIVERS = ('nvidia.com', 'v1alpha1', 'nvidiadrivers')
POOL_VARS = dict(DRIVER_VARS, upgrade_driver_version='', upgrade_driver_pools=[
    {'name': 'training', 'version': POOL_DRIVER}, {'name': 'inference', 'version': POOL_DRIVER}])


def pool_driver_pods(core, operator_ns):
    """{node: (image, ready)} of the driver pods of the NVIDIADrivers' DaemonSets, not being deleted."""
    return dict((p.spec.node_name, (p.spec.containers[0].image, all(s.ready for s in p.status.container_statuses or [])))
                for p in core.list_namespaced_pod(
                    operator_ns, label_selector='app.kubernetes.io/component=nvidia-driver').items
                if not p.metadata.deletion_timestamp and p.metadata.labels.get('app') != 'nvidia-driver-daemonset')


def pools_at(core, operator_ns, version):
    pods = pool_driver_pods(core, operator_ns)
    return [s for s, _c, _p in driver_state(core).values()] == ['upgrade-done'] * 2 and all(
        pods.get(n) == ('nvcr.io/nvidia/driver:%s-rhcos4.18' % version, True) for n in GPU_NODES)


def pools_snapshot(custom, core):
    return (custom.get_cluster_custom_object(*CP, POLICY_NAME)['metadata']['resourceVersion'],
            sorted((d['metadata']['name'], d['metadata']['generation'], d['spec']['version'])  # the operator writes
                   for d in custom.list_cluster_custom_object(*NVIDIA_DRIVERS)['items']), driver_state(core))  # status


@pytest.fixture(scope='module')
def driver_pools(testbed, gpu_workload, core, operator_ns):
    """Two NVIDIADriver pools on the driver the tests above left (t4-0 inference, t4-1 training), the ClusterPolicy
    deploying the driver from them; afterwards back to the ClusterPolicy's driver."""
    custom = gpu_workload
    core.patch_node('t4-1', {'metadata': {'labels': {'gpuops.dev/pool': 'training'}}})
    for pool in ('inference', 'training'):
        custom.create_cluster_custom_object(*NVIDIA_DRIVERS, {
            'apiVersion': 'nvidia.com/v1alpha1', 'kind': 'NVIDIADriver', 'metadata': {'name': pool},
            'spec': {'driverType': 'gpu', 'repository': 'nvcr.io/nvidia', 'image': 'driver', 'version': DRIVER_3,
                     'nodeSelector': {'gpuops.dev/pool': pool}}})
    custom.patch_cluster_custom_object(*CP, POLICY_NAME, {'spec': {'driver': {'useNvidiaDriverCRD': True}}})
    try:
        wait_for_upgrade_controller(core, 'the pools\' driver pods ready on %s' % DRIVER_3, lambda: pools_at(
            core, operator_ns, DRIVER_3), lambda: pool_driver_pods(core, operator_ns), 180)
        yield custom
    finally:
        for pool in ('inference', 'training'):
            custom.delete_cluster_custom_object(*NVIDIA_DRIVERS, pool)
        custom.patch_cluster_custom_object(*CP, POLICY_NAME, {'spec': {'driver': {'useNvidiaDriverCRD': False}}})
        core.patch_node('t4-1', {'metadata': {'labels': {'gpuops.dev/pool': 'inference'}}})


def test_nvidia_driver_pools_are_upgraded_one_after_the_other(testbed, driver_pools, core, operator_ns):
    custom = driver_pools
    before = pools_snapshot(custom, core)
    # the ClusterPolicy's driver cannot be upgraded then: the role says which pools there are, and writes nothing
    rc, results, raw = run_play(testbed.kubeconfig, ROLE, vars=dict(DRIVER_VARS, upgrade_driver_version=POOL_DRIVER))
    assert rc != 0 and ('give driver_pool, the NVIDIADriver to upgrade (one pool at a time): inference, training'
                        in raw), raw[-4000:]
    # check mode: every pool planned, nothing written
    rc, results, raw = run_play(testbed.kubeconfig, ROLE, check=True, vars=POOL_VARS)
    assert rc == 0, raw[-6000:]
    lines = results[DRIVER_PLAN]['msg']
    assert 'NVIDIADriver training: set spec.version=%s' % POOL_DRIVER in lines, lines
    assert 'NVIDIADriver inference: set spec.version=%s' % POOL_DRIVER in lines, lines
    assert lines.index('batch 1: t4-1 %s -> %s' % (DRIVER_3, POOL_DRIVER)) < lines.index(
        'batch 1: t4-0 %s -> %s' % (DRIVER_3, POOL_DRIVER)), lines
    assert pools_snapshot(custom, core) == before

    rc, results, raw = run_play(testbed.kubeconfig, ROLE, vars=POOL_VARS)
    assert rc == 0, raw[-6000:]
    assert pools_at(core, operator_ns, POOL_DRIVER), (driver_state(core), pool_driver_pods(core, operator_ns))
    assert sorted((d['metadata']['name'], d['spec']['version']) for d in custom.list_cluster_custom_object(
        *NVIDIA_DRIVERS)['items']) == [('inference', POOL_DRIVER), ('training', POOL_DRIVER)]
    assert custom.get_cluster_custom_object(*CP, POLICY_NAME)['spec']['driver'].get('version') != POOL_DRIVER
    # one pool after the other: training to upgrade-done before inference's NVIDIADriver is touched
    assert raw.index('t4-1: upgrade-done') < raw.index('NVIDIADriver inference: set spec.version=%s' % POOL_DRIVER), \
        raw[:8000]
    first = results[DRIVER_TASK]  # (the first run of the task: the results keep a task name's first)
    assert first['driver_pool'] == 'training' and [(n['node'], n['phase']) for n in first['nodes']] == [
        ('t4-1', 'done')], first
    assert results[SUMMARY]['msg'][-1] == 'done 2, held 0, gone 0, not started 0', results[SUMMARY]['msg']

    # again: nothing changes
    after = pools_snapshot(custom, core)
    rc, results, stats, raw = run_play_stats(testbed.kubeconfig, ROLE, vars=POOL_VARS)
    assert rc == 0 and stats.get('changed') == 0, raw
    assert pools_snapshot(custom, core) == after
