"""Install with Helm (plain Kubernetes) on the virtual GPU cluster: the nfd and gpu_operator roles
with kubernetes.core.helm, the helm CLI built from its Go module (tests/testbed/hack/install-helm.sh)
and the charts shipped inside the gpu-operator Go module (deployments/gpu-operator and its
node-feature-discovery subchart), read from the module cache. The REAL gpu-operator controller
reconciles the ClusterPolicy the chart renders, patched by cluster_policy with the overrides.

The NFD worker of the chart does not run on KWOK nodes; the PCI labels come from gpusim's
simulated nfd-worker (default config: every GPU node), so the label wait passes at once here."""

import datetime
import functools
import http.server
import json
import os
import shutil
import subprocess
import threading

import pytest
import yaml
from kubernetes.client.rest import ApiException

from ansible_collections.gpuops.gpu.plugins.module_utils.plans.mirror_air_gap import public_registry_references
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.mirror import mirror_plan
from ansible_run import callback_output, include, run_play, run_play_stats, task_results
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


# --- Helm upgrade of the releases (the upgrade role, upgrade_method: helm; these run before the uninstall) ------------

# The repository: the charts the releases run, packaged at their own versions, and a "next" version of each (a new
# default value, and for the GPU operator a CRD that carries an annotation, so that the CRDs-first step shows); NFD
# also at two more release lines, for the jump the role refuses. Served by helm's own index over loopback HTTP.
NEXT = {'gpu-operator': 'v1.1.0', 'node-feature-discovery': '0.19.0'}
NFD_FAR = ('0.20.0', '0.21.0')
CRD_MARK = 'gpuops.dev/test-chart-version'
DRIVERS_CRD = 'nvidiadrivers.nvidia.com'
NODE_FEATURE_RULES = 'nodefeaturerules.nfd.k8s-sigs.io'
LOCK = ('coordination.k8s.io', 'v1', 'gpu-operator', 'leases', 'gpuops-gpu-rollout')
PLAN_TASK = 'helm_preflight | The plan and the values diff (computed values, installed -> target)'


def writable_copy(src, dst):
    """A copy of a chart folder of the (read-only) Go module cache that can be changed."""
    shutil.copytree(src, dst, copy_function=shutil.copyfile)
    for folder, _dirs, _files in os.walk(dst):
        os.chmod(folder, 0o755)
    return dst


def next_chart(src, dst, crd=None):
    """``src`` with one more default value, and an annotation on CRD file ``crd``; without one (NFD), the
    NodeFeatureRule CRD namespaced as the testbed serves it (the NFD operator's CRDs, installed before the chart, so
    the chart's cluster-scoped one was never applied): the scope of a CRD cannot change, and the role refuses such a
    chart before any write (test_helm_upgrade_refuses_before_any_write)."""
    writable_copy(src, dst)
    with open(os.path.join(dst, 'values.yaml'), 'a') as handle:
        handle.write('\ngpuopsUpgradeTest:\n  marker: next\n')
    if not crd:
        path = os.path.join(dst, 'crds', 'nfd-api-crds.yaml')
        with open(path) as handle:
            docs = [doc for doc in yaml.safe_load_all(handle) if doc]
        for doc in docs:
            if doc['metadata']['name'] == NODE_FEATURE_RULES:
                doc['spec']['scope'] = 'Namespaced'
        with open(path, 'w') as handle:
            yaml.safe_dump_all(docs, handle)
    else:
        path = os.path.join(dst, 'crds', crd)
        with open(path) as handle:
            doc = yaml.safe_load(handle)
        doc['metadata'].setdefault('annotations', {})[CRD_MARK] = NEXT['gpu-operator']
        with open(path, 'w') as handle:
            yaml.safe_dump(doc, handle)
    return dst


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope='module')
def chart_repo(helm, chart, tmp_path_factory):
    """The URL of a chart repository (helm repo index) on 127.0.0.1, served while this module's tests run."""
    root, work = tmp_path_factory.mktemp('chart-repo'), tmp_path_factory.mktemp('chart-src')
    nfd = os.path.join(chart, 'charts', 'node-feature-discovery')
    packages = [(chart, None), (next_chart(chart, str(work / 'gpu-operator'), 'nvidia.com_nvidiadrivers.yaml'),
                                NEXT['gpu-operator']),
                (nfd, None), (next_chart(nfd, str(work / 'node-feature-discovery')), NEXT['node-feature-discovery'])]
    packages += [(nfd, version) for version in NFD_FAR]
    for path, version in packages:
        subprocess.run([helm, 'package', path, '-d', str(root)] + (['--version', version] if version else []),
                       check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), functools.partial(_Quiet, directory=str(root)))
    url = 'http://127.0.0.1:%d' % server.server_address[1]
    subprocess.run([helm, 'repo', 'index', str(root), '--url', url], check=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield url
    server.shutdown()
    server.server_close()


@pytest.fixture(scope='module')
def upgrade_vars(helm, chart_repo):
    return {'upgrade_method': 'helm', 'upgrade_helm_binary': helm,
            'upgrade_gpu_operator_namespace': 'gpu-operator', 'upgrade_nfd_namespace': 'node-feature-discovery',
            'upgrade_gpu_operator_helm_chart_ref': 'gpu-operator', 'upgrade_nfd_helm_chart_ref': 'node-feature-discovery',
            'upgrade_gpu_operator_helm_chart_repo_url': chart_repo, 'upgrade_nfd_helm_chart_repo_url': chart_repo,
            'upgrade_gpu_operator_helm_chart_version': NEXT['gpu-operator'],
            'upgrade_nfd_helm_chart_version': NEXT['node-feature-discovery'],
            'upgrade_gpu_operator_helm_values': {'operator': {'logging': {'level': 'debug'}}},
            'upgrade_wait_timeout': 300}


def upgrade(testbed, check=False, vars=None):
    """(rc, results by task name, the play's stats, the whole output) of one run of the upgrade role; the output
    whole, for task_results (run_play_stats keeps its end only)."""
    rc, results, raw = run_play(testbed.kubeconfig, [include('upgrade')], check=check, vars=vars)
    return rc, results, callback_output(raw).get('stats', {}).get('localhost', {}), raw


def report(raw):
    """The failed tasks with their messages, then the end of the output: an assertion's message."""
    return '\n'.join('%s: %s' % (name, r.get('msg')) for name, r in task_results(raw) if r.get('failed')) + raw[-3000:]


def helm_releases(helm, testbed):
    """name -> (chart, revision, status) as `helm list` shows them."""
    out = subprocess.run([helm, 'list', '-A', '-o', 'json', '--kubeconfig', testbed.kubeconfig], check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    return dict((r['name'], (r['chart'], int(r['revision']), r['status'])) for r in json.loads(out))


def crd_state(api_client):
    crd = api_client.call_api('/apis/apiextensions.k8s.io/v1/customresourcedefinitions/' + DRIVERS_CRD, 'GET',
                              response_type='object', _return_http_data_only=True)
    managers = sorted((f['manager'], f['operation']) for f in crd['metadata'].get('managedFields') or [])
    return crd['metadata']['resourceVersion'], (crd['metadata'].get('annotations') or {}).get(CRD_MARK), managers


def lease_absent(custom):
    try:
        custom.get_namespaced_custom_object(*LOCK)
    except ApiException as exc:
        return exc.status == 404
    return False


def test_helm_upgrade_check_mode_shows_the_plan_and_values_diff_and_writes_nothing(
        testbed, helm, upgrade_vars, custom, api_client):
    before, crd = helm_releases(helm, testbed), crd_state(api_client)
    assert before['gpu-operator'][0] == 'gpu-operator-v1.0.0-devel', before
    nfd_revision, gpu_revision = before['node-feature-discovery'][1], before['gpu-operator'][1]

    rc, results, _stats, raw = upgrade(testbed, check=True, vars=upgrade_vars)
    assert rc == 0, report(raw)
    shown = results[PLAN_TASK]['msg']
    assert shown['plan'] == [
        'Node Feature Discovery: upgrade Helm release node-feature-discovery/node-feature-discovery from chart '
        'node-feature-discovery 0.18.2 (revision %d) to 0.19.0: the CRDs first (nfd-api-crds.yaml), then helm '
        'upgrade; undo: helm rollback node-feature-discovery %d -n node-feature-discovery'
        % (nfd_revision, nfd_revision),
        'GPU operator: upgrade Helm release gpu-operator/gpu-operator from chart gpu-operator v1.0.0-devel '
        '(revision %d) to v1.1.0: the CRDs first (nvidia.com_clusterpolicies.yaml, nvidia.com_nvidiadrivers.yaml), '
        'then helm upgrade; undo: helm rollback gpu-operator %d -n gpu-operator' % (gpu_revision, gpu_revision)]
    # the computed values, installed -> target, as helm get values --all will show them: the new chart default
    # and the value changed with the upgrade, nothing else
    assert shown['values_diff'] == {
        'nfd': ['+ gpuopsUpgradeTest.marker: "next"'],
        'gpu_operator': ['+ gpuopsUpgradeTest.marker: "next"', '~ operator.logging.level: "info" -> "debug"']}
    assert shown['warnings'] == [] and shown['errors'] == []
    assert helm_releases(helm, testbed) == before and crd_state(api_client) == crd and lease_absent(custom)


def test_helm_upgrade_crds_first_then_helm_upgrade_then_no_change_and_the_rollback_command_works(
        testbed, helm, upgrade_vars, custom, api_client):
    before = helm_releases(helm, testbed)
    rc, results, _stats, raw = upgrade(testbed, vars=upgrade_vars)
    assert rc == 0, report(raw)
    # per release, NFD first: its CRDs by server-side apply, then helm upgrade
    order = [(name.split(' | ')[-1], sorted(i['__upgrade_helm_crd'].rsplit('/', 1)[-1] for i in r.get('results', [])))
             for name, r in task_results(raw) if name.startswith('helm_apply | ') and 'Record' not in name]
    assert order == [("Apply the target chart's CRDs first (server-side apply)", ['nfd-api-crds.yaml']),
                     ('Run helm upgrade to the target chart', []), ('Read the release after the upgrade', []),
                     ("Apply the target chart's CRDs first (server-side apply)",
                      ['nvidia.com_clusterpolicies.yaml', 'nvidia.com_nvidiadrivers.yaml']),
                     ('Run helm upgrade to the target chart', []), ('Read the release after the upgrade', [])], order
    after = helm_releases(helm, testbed)
    assert after == {'node-feature-discovery': ('node-feature-discovery-0.19.0',
                                                before['node-feature-discovery'][1] + 1, 'deployed'),
                     'gpu-operator': ('gpu-operator-v1.1.0', before['gpu-operator'][1] + 1, 'deployed')}
    _rv, mark, managers = crd_state(api_client)
    assert mark == 'v1.1.0' and ('gpuops.gpu', 'Apply') in managers, managers
    result = results['helm_summary | Releases, revisions and how to roll back']['msg']
    rollback = ['helm rollback node-feature-discovery %d -n node-feature-discovery' % before['node-feature-discovery'][1],
                'helm rollback gpu-operator %d -n gpu-operator' % before['gpu-operator'][1]]
    assert result['rollback'] == rollback, result
    assert [(r['release'], r['chart'], r['revision']) for r in result['releases']] == [
        ('node-feature-discovery/node-feature-discovery', 'node-feature-discovery-0.19.0',
         after['node-feature-discovery'][1]),
        ('gpu-operator/gpu-operator', 'gpu-operator-v1.1.0', after['gpu-operator'][1])], result['releases']
    assert 'nvidia.com_nvidiadrivers.yaml' in result['releases'][1]['crds_changed'], result['releases']
    assert lease_absent(custom)

    # again at the target: nothing changes
    rc, results, stats, raw = upgrade(testbed, vars=upgrade_vars)
    assert rc == 0 and stats.get('changed') == 0, report(raw)
    assert all(line.endswith('with these values already: nothing to do') for line in results[PLAN_TASK]['msg']['plan'])
    assert helm_releases(helm, testbed) == after

    # the commands the result gave take both releases back to the charts they ran
    for command in rollback:
        subprocess.run([helm] + command.split()[1:] + ['--kubeconfig', testbed.kubeconfig], check=True,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    back = helm_releases(helm, testbed)
    assert dict((name, chart) for name, (chart, _rev, _status) in back.items()) == {
        'node-feature-discovery': before['node-feature-discovery'][0], 'gpu-operator': before['gpu-operator'][0]}


def test_helm_upgrade_refuses_before_any_write(testbed, helm, upgrade_vars, custom, api_client):
    """A version the repository does not offer, a jump over three release lines and a held rollout lock: every
    reason in one message, nothing pulled or written; then a CRD the cluster would refuse, nothing written."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%S.%fZ')
    custom.create_namespaced_custom_object(*LOCK[:4], {
        'apiVersion': 'coordination.k8s.io/v1', 'kind': 'Lease',
        'metadata': {'name': LOCK[4], 'annotations': {'gpuops.gpu/lock-purpose': 'mig_rollout of 1 node'}},
        'spec': {'holderIdentity': 'another-run', 'leaseDurationSeconds': 600, 'acquireTime': now, 'renewTime': now}})
    before, crd = helm_releases(helm, testbed), crd_state(api_client)
    try:
        rc, results, _stats, raw = upgrade(testbed, vars=dict(
            upgrade_vars, upgrade_gpu_operator_helm_chart_version='v9.9.9', upgrade_nfd_helm_chart_version=NFD_FAR[1]))
    finally:
        custom.delete_namespaced_custom_object(*LOCK)
    assert rc != 0, report(raw)
    failed = results['helm_preflight | Stop before pulling or writing anything when the upgrade cannot go ahead']
    assert failed['msg'][:3] == [
        'Nothing was changed and the installed releases keep serving; fix these first:',
        'Node Feature Discovery: 0.18.2 -> 0.21.0 crosses 3 release lines the repository offers (0.19, 0.20, 0.21), '
        'more than upgrade_helm_max_release_lines (2); upgrade to 0.20.0 first, or raise '
        'upgrade_helm_max_release_lines when the release notes of every line in between allow it',
        'GPU operator: chart gpu-operator version v9.9.9 is not in the repository %s (it offers v1.1.0, v1.0.0-devel)'
        % upgrade_vars['upgrade_gpu_operator_helm_chart_repo_url']], report(raw)
    assert len(failed['msg']) == 4, failed['msg']
    assert failed['msg'][3].startswith('the rollout lock (Lease gpuops-gpu-rollout) is held by'), failed['msg']
    assert 'mig_rollout of 1 node' in failed['msg'][3], failed['msg']
    assert not any(name.startswith('helm_preflight | Pull each') and not r.get('skipped')
                   for name, r in task_results(raw)), report(raw)
    assert helm_releases(helm, testbed) == before and crd_state(api_client) == crd

    # a chart whose CRD the cluster cannot take (NFD's cluster-scoped NodeFeatureRule over the testbed's namespaced
    # one): found by a server-side dry run once the chart is pulled; neither release moves
    rc, results, _stats, raw = upgrade(testbed, vars=dict(upgrade_vars, upgrade_nfd_helm_chart_version=NFD_FAR[0]))
    assert rc != 0, report(raw)
    failed = results['helm_preflight | Stop before writing anything when the upgrade cannot go ahead']
    assert failed['msg'] == [
        'Nothing was changed and the installed releases keep serving; fix these first:',
        'Node Feature Discovery: the cluster refuses nfd-api-crds.yaml of chart node-feature-discovery 0.20.0 '
        '(server-side apply, dry run): CustomResourceDefinition.apiextensions.k8s.io "%s" is invalid: spec.scope: '
        'Invalid value: "Cluster": field is immutable' % NODE_FEATURE_RULES], report(raw)
    assert helm_releases(helm, testbed) == before and crd_state(api_client) == crd


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
