"""Install with Helm (plain Kubernetes) on the virtual GPU cluster: the nfd and gpu_operator roles
with kubernetes.core.helm, the helm CLI built from its Go module (tests/testbed/hack/install-helm.sh)
and the charts shipped inside the gpu-operator Go module (deployments/gpu-operator and its
node-feature-discovery subchart), read from the module cache. The REAL gpu-operator controller
reconciles the ClusterPolicy the chart renders, patched by cluster_policy with the overrides.

The NFD worker of the chart does not run on KWOK nodes; the PCI labels come from gpusim's
simulated nfd-worker (default config: every GPU node), so the label wait passes at once here."""

import os

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.plans.mirror_air_gap import public_registry_references
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.mirror import mirror_plan
from ansible_run import include, run_play_stats
from cluster_policy_example import gpu_operator_module_dir
from cluster_snapshot import changes, settled_snapshot
from cluster_snapshot import snapshot as cluster_snapshot
from policy_helpers import CP, DEDICATED, GPU_TOL, INSTALL_ROLES, INSTALL_VARS, MANAGED


@pytest.fixture(scope='module')
def chart():
    return os.path.join(gpu_operator_module_dir(), 'deployments', 'gpu-operator')


@pytest.fixture(scope='module')
def variables(helm, chart):
    return dict(
        INSTALL_VARS,
        nfd_install_method='helm',
        nfd_namespace='node-feature-discovery',
        nfd_namespace_labels={},
        nfd_helm_chart_ref=os.path.join(chart, 'charts', 'node-feature-discovery'),
        nfd_helm_binary=helm,
        gpu_operator_install_method='helm',
        gpu_operator_namespace='gpu-operator',   # where the testbed's operator runs its operands
        gpu_operator_namespace_labels={},
        gpu_operator_helm_chart_ref=chart,
        gpu_operator_helm_binary=helm,
        # NFD comes from the nfd role; the CRD upgrade hook is a Job for a real cluster
        gpu_operator_helm_values={'nfd': {'enabled': False}, 'operator': {'upgradeCRD': False}},
    )


def releases(core):
    """Helm releases as helm stores them (Secrets owner=helm), name -> latest revision."""
    out = {}
    for secret in core.list_secret_for_all_namespaces(label_selector='owner=helm').items:
        labels = secret.metadata.labels
        out[labels['name']] = max(out.get(labels['name'], 0), int(labels['version']))
    return out


def test_helm_install_then_no_change_and_check_mode(testbed, variables, core, apps, custom):

    rc, _results, _stats, raw = run_play_stats(testbed.kubeconfig, INSTALL_ROLES, vars=variables)
    assert rc == 0, raw
    assert releases(core) == {'node-feature-discovery': 1, 'gpu-operator': 1}
    worker = apps.read_namespaced_daemon_set('node-feature-discovery-worker', 'node-feature-discovery')
    assert [t.to_dict() for t in worker.spec.template.spec.tolerations] == [
        dict(DEDICATED, toleration_seconds=None), dict(GPU_TOL, value=None, toleration_seconds=None)]
    policy = custom.get_cluster_custom_object(*CP, 'cluster-policy')
    assert policy['status']['state'] == 'ready'
    assert policy['spec']['mig'] == {'strategy': 'mixed'}           # chart default single, override mixed
    assert policy['spec']['daemonsets']['tolerations'] == [DEDICATED, GPU_TOL]   # set through the chart values
    assert policy['spec']['daemonsets']['priorityClassName'] == 'system-node-critical'  # chart value kept
    rv = policy['metadata']['resourceVersion']

    rc, _results, stats, raw = run_play_stats(testbed.kubeconfig, INSTALL_ROLES, vars=variables)
    assert rc == 0 and stats.get('changed') == 0, raw

    rc, _results, stats, raw = run_play_stats(testbed.kubeconfig, INSTALL_ROLES, check=True,
                                              vars=dict(variables, gpu_operator_mig_strategy='single'))
    assert rc == 0 and stats.get('changed', 0) >= 1, raw
    assert releases(core) == {'node-feature-discovery': 1, 'gpu-operator': 1}
    policy = custom.get_cluster_custom_object(*CP, 'cluster-policy')
    assert policy['metadata']['resourceVersion'] == rv and policy['spec']['mig'] == {'strategy': 'mixed'}


DRIVERS = ('nvidia.com', 'v1alpha1', 'nvidiadrivers')
DRIVER_SETTINGS = {
    'gpu_operator_driver_version': '580.95.05',
    'gpu_operator_driver_kernel_module_type': 'open',
    'gpu_operator_driver_rdma_enabled': True,
    'gpu_operator_driver_rdma_use_host_mofed': True,
    'gpu_operator_driver_pools': [
        {'name': 'training', 'node_selector': {'gpuops.dev/pool': 'training'}},
        {'name': 'inference', 'node_selector': {'gpuops.dev/pool': 'inference'}, 'version': '570.172.08',
         'kernel_module_type': 'proprietary', 'spec': {'priorityClassName': 'system-node-critical'}},
    ],
}
FLEET_TASKS = [
    {'name': 'fleet', 'gpuops.gpu.gpu_nodes_info': {}, 'register': 'fleet'},
    {'name': 'table', 'ansible.builtin.debug': {'msg': '{{ fleet | gpuops.gpu.gpu_fleet_table }}'}},
]


def drivers(custom):
    return dict((d['metadata']['name'], d) for d in custom.list_cluster_custom_object(*DRIVERS)['items'])


def test_typed_driver_settings_and_pools_then_no_change_and_bad_input_writes_nothing(testbed, variables, custom):
    settings = dict(variables, **DRIVER_SETTINGS)
    rc, _results, _stats, raw = run_play_stats(testbed.kubeconfig, [include('gpu_operator')], vars=settings)
    assert rc == 0, raw
    policy = custom.get_cluster_custom_object(*CP, 'cluster-policy')
    driver = policy['spec']['driver']
    assert (driver['version'], driver['kernelModuleType'], driver['useNvidiaDriverCRD']) == ('580.95.05', 'open', True)
    assert driver['rdma'] == {'enabled': True, 'useHostMofed': True}
    assert policy['spec']['mig'] == {'strategy': 'mixed'}                 # the raw settings still apply
    pools = drivers(custom)
    assert sorted(pools) == ['inference', 'training']
    assert pools['training']['spec']['nodeSelector'] == {'gpuops.dev/pool': 'training'}
    assert (pools['training']['spec']['version'], pools['training']['spec']['kernelModuleType']) == ('580.95.05', 'open')
    assert (pools['inference']['spec']['version'], pools['inference']['spec']['kernelModuleType'],
            pools['inference']['spec']['priorityClassName']) == ('570.172.08', 'proprietary', 'system-node-critical')
    assert pools['inference']['metadata']['labels']['app.kubernetes.io/managed-by'] == 'gpuops.gpu'
    rv = policy['metadata']['resourceVersion']
    pool_rvs = dict((name, d['metadata']['resourceVersion']) for name, d in pools.items())

    # again: nothing changes; the fleet table shows each node's driver as GFD labels it
    rc, results, stats, raw = run_play_stats(testbed.kubeconfig, [include('gpu_operator')] + FLEET_TASKS,
                                             vars=settings)
    assert rc == 0 and stats.get('changed') == 0, raw
    table = results['table']['msg'].split('\n')
    col = table[0].index('DRIVER')
    assert table[0][col:].split()[:2] == ['DRIVER', 'CUDA']
    rows = dict((line.split()[0], line[col:].split()[:2]) for line in table[1:] if line and line[0] != ' ')
    assert rows['a100-0'] == ['580.95.05', '13.0'], table          # gpusim's configured driver (simulation.driver)
    assert all(n['driver_version'] == '580.95.05' for n in results['fleet']['nodes']), results['fleet']['nodes']

    # bad input fails before any write: NVIDIA's rule (precompiled needs the branch) ...
    rc, _results, _stats, raw = run_play_stats(testbed.kubeconfig, [include('gpu_operator')], vars=dict(
        settings, gpu_operator_driver_use_precompiled=True, gpu_operator_driver_version=''))
    assert rc != 0 and 'usePrecompiled needs' in raw, raw
    # ... and pools whose nodes overlap, with a field the NVIDIADriver schema does not know
    bad_pools = DRIVER_SETTINGS['gpu_operator_driver_pools'] + [
        {'name': 'all-gpus', 'spec': {'priorityClass': 'x'}}]
    rc, _results, _stats, raw = run_play_stats(testbed.kubeconfig, [include('gpu_operator')], vars=dict(
        settings, gpu_operator_driver_pools=bad_pools, gpu_operator_driver_version='580.126.09'))
    assert rc != 0, raw
    assert "node a100-0 is selected by pool 'training' and pool 'all-gpus'" in raw, raw
    assert "unknown field 'priorityClass'; did you mean 'priorityClassName'?" in raw, raw
    policy = custom.get_cluster_custom_object(*CP, 'cluster-policy')
    assert policy['metadata']['resourceVersion'] == rv and policy['spec']['driver']['version'] == '580.95.05'
    assert dict((name, d['metadata']['resourceVersion']) for name, d in drivers(custom).items()) == pool_rvs


def test_nfd_chart_pulls_from_a_kubernetes_mirror(testbed, variables, core, apps):
    """After the mirror role on Kubernetes (its published mirror_result, from the real planner), the nfd role's
    chart pulls its one image through the mirror, with the pull Secret of its namespace; nothing NFD renders
    names a public registry."""
    mirror = 'mirror.example.com:8443'
    ns = variables['nfd_namespace']
    plan = mirror_plan({'platform': 'kubernetes', 'registry': mirror, 'operator_namespace': ns,
                        'cluster_policy': False, 'repositories': ['nvcr.io/nvidia', 'registry.k8s.io/nfd'],
                        'pull_secret_names': ['gpuops-mirror-pull']})
    assert plan['errors'] == []
    rc, results, _stats, raw = run_play_stats(testbed.kubeconfig, [include('nfd')], vars=dict(
        variables, mirror_result=plan['result']))
    assert rc == 0, raw
    assert not any(name.endswith('What the mirror leaves public') and not r.get('skipped')
                   for name, r in results.items()), raw
    rendered = apps.list_namespaced_daemon_set(ns).items + apps.list_namespaced_deployment(ns).items
    assert sorted(o.metadata.name for o in rendered) == [
        'node-feature-discovery-gc', 'node-feature-discovery-master', 'node-feature-discovery-worker']
    for obj in rendered:
        pod = obj.spec.template.spec
        assert all(c.image.startswith(mirror + '/nfd/node-feature-discovery:') for c in pod.containers), obj
        assert [s.name for s in pod.image_pull_secrets] == ['gpuops-mirror-pull'], obj.metadata.name
    worker = apps.read_namespaced_daemon_set('node-feature-discovery-worker', ns)
    assert [t.key for t in worker.spec.template.spec.tolerations] == [DEDICATED['key'], GPU_TOL['key']]
    objects = [apps.api_client.sanitize_for_serialization(o) for o in rendered]
    assert public_registry_references(objects, [mirror]) == []
    assert releases(core)['node-feature-discovery'] == 2


def driver_rvs(custom):
    """Each NVIDIADriver by generation, labels and spec: what a write of ours changes. Not by resourceVersion,
    which the GPU operator's own status writes move at any time."""
    out = {}
    for name, driver in drivers(custom).items():
        meta = driver['metadata']
        out[name] = (meta.get('generation'), meta.get('labels'), driver['spec'])
    return out


USERS_DRIVER = {'apiVersion': 'nvidia.com/v1alpha1', 'kind': 'NVIDIADriver',
                'metadata': {'name': 'users-own', 'labels': {'team': 'ml'}},
                'spec': {'driverType': 'gpu', 'nodeSelector': {'gpuops.dev/pool': 'nobody'}}}
UNINSTALL = [include('uninstall')]
DELETE_STALE = 'driver_pools | Delete the NVIDIADrivers of pools no longer declared'


def test_removed_pool_deletes_its_nvidiadriver_only_then_no_change(testbed, variables, custom):
    custom.create_cluster_custom_object(*DRIVERS, USERS_DRIVER)         # not ours: no managed-by label
    settings = dict(variables, **DRIVER_SETTINGS)
    settings['gpu_operator_driver_pools'] = DRIVER_SETTINGS['gpu_operator_driver_pools'][:1]   # inference removed
    before = driver_rvs(custom)
    assert sorted(before) == ['inference', 'training', 'users-own']

    rc, results, _stats, raw = run_play_stats(testbed.kubeconfig, [include('gpu_operator')], check=True, vars=settings)
    assert rc == 0, raw
    assert [(r['item'], r['changed']) for r in results[DELETE_STALE]['results']] == [('inference', True)], raw
    assert driver_rvs(custom) == before                                  # check mode wrote nothing

    rc, results, _stats, raw = run_play_stats(testbed.kubeconfig, [include('gpu_operator')], vars=settings)
    assert rc == 0, raw
    after = driver_rvs(custom)
    assert sorted(after) == ['training', 'users-own'], after
    assert after == dict((k, v) for k, v in before.items() if k != 'inference')  # the others untouched

    rc, results, stats, raw = run_play_stats(testbed.kubeconfig, [include('gpu_operator')], vars=settings)
    assert rc == 0 and stats.get('changed') == 0, raw
    assert results[DELETE_STALE].get('skipped') or not results[DELETE_STALE].get('results'), results[DELETE_STALE]


# --- uninstall of the Helm releases (these run last: they remove what the cases above installed) -------------

def stack(custom, core, apps):
    """What the Helm uninstall removes or must leave alone."""
    names = set(n.metadata.name for n in core.list_namespace().items if n.status.phase == 'Active')
    ours = sorted(names & {'gpu-operator', 'node-feature-discovery'})
    return {'releases': releases(core),
            'policies': sorted(p['metadata']['name'] for p in custom.list_cluster_custom_object(*CP)['items']),
            'drivers': sorted(drivers(custom)),
            'namespaces': ours,
            'config_maps': sorted(c.metadata.name for c in core.list_namespaced_config_map('gpu-operator').items
                                  if c.metadata.name.startswith('gpuops-test-')),
            'workloads': sorted('%s/%s' % (w.metadata.namespace, w.metadata.name) for ns in ours
                                for w in apps.list_namespaced_deployment(ns).items
                                + apps.list_namespaced_daemon_set(ns).items
                                if (w.metadata.labels or {}).get('app.kubernetes.io/managed-by') == 'Helm')}


@pytest.fixture(scope='module')
def uninstall_vars(helm):
    return {'uninstall_gpu_operator_install_method': 'helm', 'uninstall_gpu_operator_namespace': 'gpu-operator',
            'uninstall_nfd_install_method': 'helm', 'uninstall_nfd_namespace': 'node-feature-discovery',
            'uninstall_helm_binary': helm, 'uninstall_poll_interval': 1}


def test_helm_uninstall_check_mode_then_removes_only_ours_then_no_change(
        testbed, variables, uninstall_vars, core, apps, custom, api_client):
    # a ConfigMap of the user's and one gpuops.gpu wrote (as the MIG and sharing roles do), in the operator namespace
    for name, labels in (('gpuops-test-users', {'team': 'ml'}), ('gpuops-test-ours', dict(MANAGED))):
        core.create_namespaced_config_map('gpu-operator', {'metadata': {'name': name, 'labels': labels}, 'data': {}})
    before = stack(custom, core, apps)
    assert 'gpu-operator/gpu-operator' in before['workloads'], before
    assert sorted(before['releases']) == ['gpu-operator', 'node-feature-discovery']
    assert before['policies'] == ['cluster-policy'] and before['drivers'] == ['training', 'users-own']
    policy_rv = custom.get_cluster_custom_object(*CP, 'cluster-policy')['metadata']['resourceVersion']

    rc, results, stats, raw = run_play_stats(testbed.kubeconfig, UNINSTALL, check=True, vars=uninstall_vars)
    assert rc == 0, raw
    plan = results['Show the plan']['msg']
    assert plan[:2] == ['custom resources: NVIDIADriver training, NVIDIADriver users-own, ClusterPolicy cluster-policy',
                        'GPU operator: uninstall the Helm release gpu-operator/gpu-operator'], plan
    assert 'Node Feature Discovery: uninstall the Helm release node-feature-discovery/node-feature-discovery' in plan
    assert 'config maps: ConfigMap gpu-operator/gpuops-test-ours' in plan, plan
    assert 'Namespace gpu-operator: not created by gpuops.gpu' in ' '.join(plan), plan
    assert results['operator | Uninstall the Helm release']['changed'], raw
    assert stack(custom, core, apps) == before
    assert custom.get_cluster_custom_object(*CP, 'cluster-policy')['metadata']['resourceVersion'] == policy_rv

    rc, _results, _stats, raw = run_play_stats(testbed.kubeconfig, UNINSTALL, vars=uninstall_vars)
    assert rc == 0, raw
    # the releases and what they installed, the custom resources and our ConfigMap are gone; the namespaces
    # (the Helm install does not label them as ours) and the user's ConfigMap stay
    assert stack(custom, core, apps) == dict(before, releases={}, policies=[], drivers=[], workloads=[],
                                             config_maps=['gpuops-test-users'])

    # a second uninstall reports no change and writes nothing: every object of the cluster compared before and after
    before = settled_snapshot(api_client, what='the cluster after the uninstall')
    rc, _results, stats, raw = run_play_stats(testbed.kubeconfig, UNINSTALL, vars=uninstall_vars)
    assert rc == 0 and stats.get('changed') == 0, raw
    changed, _moved = changes(before, cluster_snapshot(api_client))
    assert changed == [], changed
