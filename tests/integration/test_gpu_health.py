"""GPU nodes that go bad, on the small virtual GPU cluster (an A100 node, a T4 node): the simulated device plugin
marks one of a100-0's GPUs unhealthy (gpusim.gpuops.dev/unhealthy-gpus: allocatable drops below capacity, an
XidCriticalError Event), and the gpu_health role takes exactly that node out of service (check mode plans it,
apply cordons it, records the reason and moves its GPU pod off; t4-0 and its pod stay as they are; a second run
changes nothing), then, after the simulated repair, returns it to service. Nothing else on any node changes.
While another run (a MIG rollout) holds the rollout lock, the quarantine is refused before any write, naming that
run and its purpose; check mode still plans and reports the lock; the lock is released after the apply.

DCGM XID metrics through the real Prometheus server (built from its Go module, tests/testbed/prometheus/build.sh)
scraping the simulator's DCGM exporter on loopback every second: a critical XID on a100-0 is one more reason; an
application XID on t4-0 (the device plugin ignores it, so only DCGM knows) counts only when ignored_xids says so;
a URL that does not answer, or that is not Prometheus, stops the run before any write; the return waits while DCGM
still reports a counted XID."""

import datetime
import json
import os
import socket
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request

import pytest
import yaml

from kubernetes import client

from ansible_run import changed_tasks, facts_diff, node_facts, run_play, run_role
from conftest import REPO, create_namespace, gpu_pod, read_lease, wait_until
from dra_helpers import devices, helm_install, wait_pools, write_chart


def _testbed_config():
    """The small cluster with the DeviceTaintRule API on (beta and off by default in Kubernetes 1.36)."""
    with open(os.path.join(REPO, 'tests', 'testbed', 'configs', 'tiny.yaml')) as f:
        config = yaml.safe_load(f)
    config['cluster'].update(feature_gates={'DRADeviceTaintRules': True},
                             runtime_config=['resource.k8s.io/v1beta2=true'])
    path = os.path.join(tempfile.mkdtemp(prefix='gpuops-gpu-health-'), 'gpu-health.yaml')
    with open(path, 'w') as f:
        yaml.safe_dump(config, f)
    return path


TESTBED_CONFIG = _testbed_config()
BAD, GOOD = 'a100-0', 't4-0'
UNHEALTHY = 'gpusim.gpuops.dev/unhealthy-gpus'
ANN = 'gpuops.gpu/gpu-health'
TASK = 'Find the GPU nodes with unhealthy GPUs and apply the policy'
GPU = 'nvidia.com/gpu'
LEASE = 'gpuops-gpu-rollout'


def allocatable(core, name):
    return (core.read_node(name).status.allocatable or {}).get(GPU)


def pods(core, ns):
    return sorted((p.metadata.name, p.spec.node_name) for p in core.list_namespaced_pod(ns).items
                  if not p.metadata.deletion_timestamp)


def health(testbed, policy, check=False, fails=False, **variables):
    """(the module's result, every task's result) of one run of the role."""
    variables.update(gpu_health_policy=policy,
                     gpu_health_operator_namespace=testbed.config['cluster'].get('operator_namespace'))
    rc, results, raw = run_role(testbed.kubeconfig, 'gpu_health', variables, check=check, diff=True)
    assert (rc != 0) == fails, raw[-4000:]
    return results[TASK], results


def hold_lock(coordination, ns, holder):
    """Another run (a MIG rollout on both nodes) holds the rollout lock now, for ten minutes."""
    now = datetime.datetime.now(datetime.timezone.utc)
    return coordination.create_namespaced_lease(ns, client.V1Lease(
        metadata=client.V1ObjectMeta(name=LEASE, annotations={
            'gpuops.gpu/lock-purpose': 'mig_rollout of 2 node(s)', 'gpuops.gpu/lock-nodes': '%s,%s' % (BAD, GOOD),
            'gpuops.gpu/lock-who': 'ops@ctl pid 7'}),
        spec=client.V1LeaseSpec(holder_identity=holder, lease_duration_seconds=600, acquire_time=now,
                                renew_time=now)))


def other_changes(core, before):
    """What differs on the nodes from ``before``, once it is one line (our record on the returned node)."""
    diff = facts_diff(before, node_facts(core))
    return diff if len(diff) == 1 else None


def test_unhealthy_gpu_node_is_quarantined_then_returned_and_nothing_else_changes(testbed, core, api_client,
                                                                                  operator_ns):
    coordination = client.CoordinationV1Api(api_client)
    wait_until('GPUs advertised', lambda: allocatable(core, BAD) == '8' and allocatable(core, GOOD) == '1', 120)
    ns = create_namespace(core, 'gpu-health-it')
    core.create_namespaced_pod(ns, gpu_pod('train', BAD))
    core.create_namespaced_pod(ns, gpu_pod('serve', GOOD))
    wait_until('pods running', lambda: all(p.status.phase == 'Running' for p in core.list_namespaced_pod(ns).items)
               and len(core.list_namespaced_pod(ns).items) == 2, 60)
    before = node_facts(core)
    core.patch_node(BAD, {'metadata': {'annotations': {UNHEALTHY: '1'}}})
    wait_until('one GPU of %s unhealthy' % BAD, lambda: allocatable(core, BAD) == '7', 30, 0.2)

    plan = health(testbed, 'quarantine', check=True)[0]
    assert plan['unhealthy'] == [BAD] and plan['changed']
    [action] = plan['actions']
    assert (action['node'], action['action'], action['would_evict']) == (BAD, 'quarantine', [ns + '/train'])
    assert 'nvidia.com/gpu allocatable 7 < capacity 8' in action['reason']
    assert sorted(plan['diff']['after']) == [BAD] and plan['diff']['after'][BAD]['unschedulable'] is True
    assert plan['lock']['state'] == 'free' and plan['lock']['lease'] == '%s/%s' % (operator_ns, LEASE)
    assert facts_diff(before, node_facts(core)) == [], 'check mode wrote'

    # a MIG rollout holds the rollout lock: refused before any write, naming it; check mode still plans
    version = hold_lock(coordination, operator_ns, 'mig-run-7').metadata.resource_version
    try:
        refused = health(testbed, 'quarantine', fails=True)[0]
        for words in ('holds the rollout lock', 'mig_rollout of 2 node(s)', 'ops@ctl pid 7', 'mig-run-7',
                      'nothing was changed'):
            assert words in refused['msg'], refused['msg']
        assert refused['changed'] is False and facts_diff(before, node_facts(core)) == []
        held = health(testbed, 'quarantine', check=True)[0]
        assert held['lock']['state'] == 'held' and held['unhealthy'] == [BAD]
        assert read_lease(coordination, operator_ns).metadata.resource_version == version, 'the lock was written'
    finally:
        coordination.delete_namespaced_lease(LEASE, operator_ns)

    applied = health(testbed, 'quarantine')[0]
    assert applied['changed'] and applied['evicted'] == {BAD: [ns + '/train']}
    assert pods(core, ns) == [('serve', GOOD)]
    assert read_lease(coordination, operator_ns) is None, 'the rollout lock was not released'
    record = json.loads(core.read_node(BAD).metadata.annotations[ANN])
    assert record['state'] == 'quarantined' and record['cordoned'] is True and record['since']
    assert 'nvidia.com/gpu allocatable 7 < capacity 8' in record['reason']
    # the cordon, our record, and the taint Kubernetes' node lifecycle controller puts on every cordoned node
    assert sorted(facts_diff(before, node_facts(core))) == [
        "%s annotation %s: None -> %r" % (BAD, ANN, core.read_node(BAD).metadata.annotations[ANN]),
        "%s taints: [] -> [('node.kubernetes.io/unschedulable', None, 'NoSchedule')]" % BAD,
        '%s unschedulable: False -> True' % BAD]

    again, results = health(testbed, 'quarantine')
    assert not again['changed'] and changed_tasks(results) == [], again
    early = health(testbed, 'return')[0]
    assert early['actions'] == [] and not early['changed'], 'returned while still broken'

    core.patch_node(BAD, {'metadata': {'annotations': {UNHEALTHY: None}}})   # the repair
    wait_until('%s repaired' % BAD, lambda: allocatable(core, BAD) == '8', 30, 0.2)
    back = health(testbed, 'return')[0]
    assert [(a['node'], a['action']) for a in back['actions']] == [(BAD, 'return')] and back['changed']
    assert not core.read_node(BAD).spec.unschedulable
    assert json.loads(core.read_node(BAD).metadata.annotations[ANN])['state'] == 'returned'
    # the XID Event of the failure is older than the return: a new quarantine run leaves the node alone
    after, results = health(testbed, 'quarantine')
    assert after['unhealthy'] == [] and not after['changed'] and changed_tasks(results) == []
    diff = wait_until('the unschedulable taint gone', lambda: other_changes(core, before), 30, 0.2)
    assert diff[0].startswith('%s annotation %s: None -> ' % (BAD, ANN)), diff
    assert pods(core, ns) == [('serve', GOOD)]
    core.delete_namespace(ns)


def free_port():
    sock = socket.socket()
    sock.bind(('127.0.0.1', 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def promql(url, query):
    """The instant vector of ``query`` as {(Hostname, gpu): value}."""
    with urllib.request.urlopen('%s/api/v1/query?%s' % (url, urllib.parse.urlencode({'query': query})), timeout=5) as r:
        answer = json.loads(r.read())
    return dict(((s['metric'].get('Hostname'), s['metric'].get('gpu')), s['value'][1])
                for s in answer['data']['result'])


def answers(proc, url):
    """Prometheus runs and has scraped the exporter (a series of t4-0)."""
    assert proc.poll() is None, 'prometheus exited with %s' % proc.returncode
    try:
        return bool(promql(url, 'DCGM_FI_DEV_XID_ERRORS{Hostname="%s"}' % GOOD))
    except OSError:  # not listening yet
        return False


@pytest.fixture(scope='module')
def exporter(testbed):
    """The base URL of the simulator's DCGM exporter (gpusim's dcgm-exporter agent writes its URL on start)."""
    path = os.path.join(testbed.state_dir, 'dcgm-exporter.url')
    wait_until('the simulated DCGM exporter', lambda: os.path.exists(path), 60)
    with open(path) as handle:
        return handle.read().strip().rsplit('/metrics', 1)[0]


@pytest.fixture(scope='module')
def prometheus(exporter, tmp_path_factory):
    """The URL of a real Prometheus (v0.316.0, built once and cached) scraping the DCGM exporter every second."""
    started = time.monotonic()
    binary = subprocess.run(['bash', os.path.join(REPO, 'tests', 'testbed', 'prometheus', 'build.sh')], check=True,
                            stdout=subprocess.PIPE, text=True).stdout.strip().splitlines()[-1]
    built = time.monotonic() - started
    folder = tmp_path_factory.mktemp('prometheus')
    config = folder / 'prometheus.yml'
    config.write_text(json.dumps({'global': {'scrape_interval': '1s', 'evaluation_interval': '1s'}, 'scrape_configs': [
        {'job_name': 'dcgm-exporter', 'static_configs': [{'targets': [exporter.split('//', 1)[1]]}]}]}))
    url = 'http://127.0.0.1:%d' % free_port()
    proc = subprocess.Popen([binary, '--config.file=%s' % config, '--storage.tsdb.path=%s' % (folder / 'data'),
                             '--web.listen-address=%s' % url.split('//', 1)[1], '--log.level=warn',
                             # the scrape manager applies new targets after this; 5s by default (a hidden flag)
                             '--scrape.discovery-reload-interval=100ms'],
                            stdout=subprocess.DEVNULL, stderr=open(str(folder / 'prometheus.log'), 'w'))
    try:
        started = time.monotonic()
        wait_until('Prometheus scraped the DCGM exporter', lambda: answers(proc, url), 30, 0.1)
        print('prometheus: build step %.1fs, start to first scrape %.1fs' % (built, time.monotonic() - started))
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


def health_task(name, operator_ns, check=False, **args):
    args.update(operator_namespace=operator_ns, window_minutes=0, poll_interval=0.2)
    return {'name': name, 'gpuops.gpu.gpu_health': args, 'ignore_errors': True, 'check_mode': check}


def xid_seen(url, node, value):
    return promql(url, 'DCGM_FI_DEV_XID_ERRORS{Hostname="%s",gpu="0"}' % node).get((node, '0')) == str(value)


def test_dcgm_xid_metrics_through_prometheus(testbed, core, exporter, prometheus, operator_ns):
    kc = testbed.kubeconfig
    wait_until('GPUs advertised', lambda: allocatable(core, BAD) == '8' and allocatable(core, GOOD) == '1', 120)
    core.patch_node(BAD, {'metadata': {'annotations': {UNHEALTHY: '1:79'}}})    # GPU 0 fell off the bus
    core.patch_node(GOOD, {'metadata': {'annotations': {UNHEALTHY: '1:13'}}})   # an application's fault
    wait_until('both XIDs scraped', lambda: xid_seen(prometheus, BAD, 79) and xid_seen(prometheus, GOOD, 13), 30, 0.2)
    assert allocatable(core, BAD) == '7' and allocatable(core, GOOD) == '1', 'the device plugin ignores XID 13'
    before = node_facts(core)
    dead = 'http://127.0.0.1:%d' % free_port()
    rc, results, raw = run_play(kc, [
        health_task('dead', operator_ns, prometheus_url=dead),
        health_task('not prometheus', operator_ns, prometheus_url=exporter),
        health_task('plan', operator_ns, check=True, prometheus_url=prometheus),
        health_task('plan every xid', operator_ns, check=True, prometheus_url=prometheus, ignored_xids=[])])
    assert results['dead']['failed'] and results['not prometheus']['failed'], raw[-3000:]
    assert 'prometheus_url %s: does not answer' % dead in results['dead']['msg']
    assert ('prometheus_url %s: not the Prometheus HTTP API: GET /api/v1/query answered HTTP 404' % exporter
            in results['not prometheus']['msg'])
    assert not results['dead']['changed'] and facts_diff(before, node_facts(core)) == [], 'written before the check'
    plan, every = results['plan'], results['plan every xid']
    assert plan['unhealthy'] == [BAD] and plan['dcgm']['reporting'] == [BAD, GOOD] and plan['dcgm']['missing'] == []
    [action] = plan['actions']
    assert 'nvidia.com/gpu allocatable 7 < capacity 8' in action['reason']
    assert 'DCGM: GPU 0 (GPU-' in action['reason'] and ') last XID 79' in action['reason']
    assert every['unhealthy'] == [BAD, GOOD]
    assert [a['reason'] for a in every['actions'] if a['node'] == GOOD][0].startswith('DCGM: GPU 0 (GPU-')

    applied = health(testbed, 'quarantine', gpu_health_prometheus_url=prometheus, gpu_health_window_minutes=0)[0]
    assert [(a['node'], a['action']) for a in applied['actions']] == [(BAD, 'quarantine')] and applied['changed']
    assert core.read_node(BAD).spec.unschedulable and not core.read_node(GOOD).spec.unschedulable

    # the GPU is back, its last XID now one that does not count by default: returned unless every XID counts
    core.patch_node(BAD, {'metadata': {'annotations': {UNHEALTHY: '1:13'}}})
    wait_until('%s repaired' % BAD, lambda: allocatable(core, BAD) == '8' and xid_seen(prometheus, BAD, 13), 30, 0.2)
    rc, results, raw = run_play(kc, [
        health_task('held', operator_ns, check=True, policy='return', prometheus_url=prometheus, ignored_xids=[]),
        health_task('return', operator_ns, policy='return', prometheus_url=prometheus)])
    assert results['held']['actions'] == [] and not results['return'].get('failed'), raw[-3000:]
    assert [(a['node'], a['action']) for a in results['return']['actions']] == [(BAD, 'return')]
    assert not core.read_node(BAD).spec.unschedulable
    assert [line for line in facts_diff(before, node_facts(core)) if not line.startswith(BAD)] == []
    for name in (BAD, GOOD):
        core.patch_node(name, {'metadata': {'annotations': {UNHEALTHY: None}}})


def claim_pod(core, custom, ns, name, cel):
    """A ResourceClaim for one device of a100-0 matching ``cel`` and a pod that uses it."""
    custom.create_namespaced_custom_object('resource.k8s.io', 'v1', ns, 'resourceclaims', {
        'apiVersion': 'resource.k8s.io/v1', 'kind': 'ResourceClaim', 'metadata': {'name': name},
        'spec': {'devices': {'requests': [{'name': 'gpu', 'exactly': {
            'deviceClassName': 'gpu.nvidia.com', 'selectors': [{'cel': {'expression': cel}}]}}]}}})
    core.create_namespaced_pod(ns, {'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': name}, 'spec': {
        'terminationGracePeriodSeconds': 0, 'nodeSelector': {'kubernetes.io/hostname': BAD},
        'resourceClaims': [{'name': 'gpu', 'resourceClaimName': name}],
        'containers': [{'name': 'cuda', 'image': 'cuda:12.4.0-base-ubi9', 'resources': {'claims': [{'name': 'gpu'}]}}]}})


def allocated(custom, ns, name):
    claim = custom.get_namespaced_custom_object('resource.k8s.io', 'v1', ns, 'resourceclaims', name)
    return [r['device'] for r in (((claim.get('status') or {}).get('allocation') or {}).get('devices') or {}).get(
        'results') or []]


def test_dra_device_taint_rule_takes_only_the_bad_gpu_out_of_service(testbed, core, api_client, helm, prometheus,
                                                                     operator_ns, tmp_path_factory):
    """With NVIDIA's DRA driver (the stand-in chart; gpusim publishes a100-0's slice) beside the device plugin, the
    GPU DCGM reports XID 79 for is quarantined alone: one DeviceTaintRule, no cordon, no drain; the real
    kube-scheduler then allocates every GPU of the node but that one, and allocates it again after the return."""
    custom = client.CustomObjectsApi(api_client)
    kc = testbed.kubeconfig
    assert 'v1beta2' in [v.version for g in client.ApisApi(api_client).get_api_versions().groups
                         if g.name == 'resource.k8s.io' for v in g.versions]
    helm_install(helm, kc, write_chart(tmp_path_factory.mktemp('chart')),
                 {'kubeletPlugin': {'nodeSelector': {'kubernetes.io/hostname': BAD}}})
    wait_pools(custom, [BAD])
    uuid = devices(custom, BAD)['gpu-0']['attributes']['uuid']['string']
    core.patch_node(BAD, {'metadata': {'annotations': {UNHEALTHY: '1:79'}}})
    wait_until('XID 79 scraped', lambda: xid_seen(prometheus, BAD, 79), 30, 0.2)
    before = node_facts(core)
    rc, results, raw = run_play(kc, [
        health_task('plan', operator_ns, check=True, prometheus_url=prometheus, dra_device_taints=True),
        health_task('apply', operator_ns, prometheus_url=prometheus, dra_device_taints=True),
        health_task('again', operator_ns, prometheus_url=prometheus, dra_device_taints=True)])
    plan, apply, again = results['plan'], results['apply'], results['again']
    assert not plan.get('failed') and not apply.get('failed'), raw[-4000:]
    rule = 'gpuops-gpu-health-%s-gpu-0' % BAD
    [action] = apply['actions']
    assert (action['node'], action['action'], action['mode'], action['device_taint_rules']) == (
        BAD, 'quarantine', 'devices', [rule])
    assert [(a['node'], a['mode']) for a in plan['actions']] == [(BAD, 'devices')]
    assert apply['changed'] and not again['changed'], raw[-4000:]
    assert not core.read_node(BAD).spec.unschedulable, 'a device quarantine does not cordon the node'
    rules = custom.list_cluster_custom_object('resource.k8s.io', 'v1beta2', 'devicetaintrules')['items']
    assert [(r['metadata']['name'], r['spec']['deviceSelector'], r['spec']['taint']['key'],
             r['spec']['taint']['effect']) for r in rules] == [
        (rule, {'driver': 'gpu.nvidia.com', 'pool': BAD, 'device': 'gpu-0'}, 'gpuops.gpu/gpu-unhealthy', 'NoSchedule')]
    assert [line for line in facts_diff(before, node_facts(core)) if not line.startswith(BAD + ' annotation')] == []

    ns = create_namespace(core, 'gpu-health-dra')
    claim_pod(core, custom, ns, 'any', "device.attributes['gpu.nvidia.com'].type == 'gpu'")
    wait_until('the claim "any" allocated', lambda: allocated(custom, ns, 'any'), 60, 0.2)
    assert allocated(custom, ns, 'any') != ['gpu-0']
    claim_pod(core, custom, ns, 'bad', "device.attributes['gpu.nvidia.com'].uuid == '%s'" % uuid)
    time.sleep(5)   # the scheduler has tried (and retries on every slice or rule change)
    assert allocated(custom, ns, 'bad') == [] and core.read_namespaced_pod('bad', ns).spec.node_name is None

    core.patch_node(BAD, {'metadata': {'annotations': {UNHEALTHY: '1:13'}}})   # repaired: an application XID now
    wait_until('%s repaired' % BAD, lambda: allocatable(core, BAD) == '8' and xid_seen(prometheus, BAD, 13), 30, 0.2)
    rc, results, raw = run_play(kc, [health_task('return', operator_ns, policy='return', prometheus_url=prometheus,
                                                 dra_device_taints=True)])
    back = results['return']
    assert [(a['node'], a['action'], a['deleted_device_taint_rules']) for a in back['actions']] == [
        (BAD, 'return', [rule])], raw[-4000:]
    assert custom.list_cluster_custom_object('resource.k8s.io', 'v1beta2', 'devicetaintrules')['items'] == []
    wait_until('the claim "bad" allocated gpu-0 after the return', lambda: allocated(custom, ns, 'bad') == ['gpu-0'],
               60, 0.2)
    core.patch_node(BAD, {'metadata': {'annotations': {UNHEALTHY: None}}})
