"""The fleet in DRA terms on the virtual GPU cluster: gpu_nodes_info, the gpu_nodes inventory plugin and the fleet
report (playbooks/report.yml) show which stack serves each node and its DRA devices, allocated or free.

The node side is made here through the API, shaped as NVIDIA's DRA driver publishes it (driver gpu.nvidia.com,
one pool per node named after it, device names and attributes as in docs/facts.md "Dynamic Resource
Allocation"): a ResourceSlice for a new KWOK node that has no device plugin (a DRA node) and one for a100-0,
whose device plugin keeps advertising nvidia.com/gpu (both stacks); t4-0 keeps the device plugin only. An
older generation of the DRA node's pool lists a device that must not be shown. The real kube-scheduler
allocates two ResourceClaims (a whole GPU with a time-slicing GpuConfig, a MIG device) for pods pinned to the
DRA node; what the collection reports is checked against the claims' allocation as the API returns it."""

import json
import os
import subprocess
import sys
import tempfile

import pytest
import yaml

from kubernetes import client

from ansible_run import run_play
from browser_helpers import screenshot
from conftest import REPO, create_namespace, wait_until

# The small cluster (an A100 node, a T4 node), with the simulated agents that predate DRA only: here the test itself
# is NVIDIA's DRA driver, and no simulated kubelet plugin may reconcile the slices it publishes.
AGENTS = ['nfd', 'gfd', 'mig-manager', 'olm', 'machine-api', 'workload-logs']


def _testbed_config():
    with open(os.path.join(REPO, 'tests', 'testbed', 'configs', 'tiny.yaml')) as f:
        config = yaml.safe_load(f)
    config.setdefault('simulation', {})['agents'] = AGENTS
    path = os.path.join(tempfile.mkdtemp(prefix='gpuops-dra-fleet-'), 'dra-fleet.yaml')
    with open(path, 'w') as f:
        yaml.safe_dump(config, f)
    return path


TESTBED_CONFIG = _testbed_config()
RESOURCE = ('resource.k8s.io', 'v1')
DRIVER = 'gpu.nvidia.com'
DRA_NODE = 'dra-fleet-0'
BOTH_NODE = 'a100-0'
PLUGIN_NODE = 't4-0'
A100 = 'NVIDIA A100-SXM4-40GB'
CLASSES = {'dra-fleet-it-gpu': "device.attributes['gpu.nvidia.com'].type == 'gpu'",
           'dra-fleet-it-mig': ("device.attributes['gpu.nvidia.com'].type == 'mig' && "
                                "device.attributes['gpu.nvidia.com'].profile == '1g.5gb'")}
TIME_SLICING = {'strategy': 'TimeSlicing', 'timeSlicingConfig': {'interval': 'Long'}}


def attributes(kind, uuid, **extra):
    out = {'type': {'string': kind}, 'uuid': {'string': uuid}, 'productName': {'string': A100},
           'brand': {'string': 'Nvidia'}, 'architecture': {'string': 'Ampere'},
           'cudaComputeCapability': {'version': '8.0.0'}, 'driverVersion': {'version': '580.95.5'},
           'cudaDriverVersion': {'version': '13.0.0'}}
    out.update((k, {'string': v}) for k, v in extra.items())
    return out


def whole_gpu(minor, uuid):
    return {'name': 'gpu-%d' % minor, 'attributes': attributes('gpu', uuid), 'capacity': {'memory': {'value': '40Gi'}}}


def mig_device(minor, parent_uuid, start, uuid):
    """A static 1g.5gb MIG device (GPU instance profile 19) of GPU ``minor`` at placement ``start``."""
    return {'name': 'gpu-%d-mig-1g5gb-19-%d' % (minor, start),
            'attributes': attributes('mig', uuid, parentUUID=parent_uuid, profile='1g.5gb'),
            'capacity': {'memory': {'value': str(4864 * 1048576)}, 'multiprocessors': {'value': '14'}}}


def resource_slice(node, generation, devices):
    return {'apiVersion': 'resource.k8s.io/v1', 'kind': 'ResourceSlice',
            'metadata': {'name': 'dra-fleet-%s-%d' % (node, generation)},
            'spec': {'driver': DRIVER, 'nodeName': node, 'devices': devices,
                     'pool': {'name': node, 'generation': generation, 'resourceSliceCount': 1}}}


SLICES = [
    resource_slice(DRA_NODE, 2, [whole_gpu(0, 'GPU-dra-0'), mig_device(1, 'GPU-dra-1', 0, 'MIG-dra-1-0'),
                                 mig_device(1, 'GPU-dra-1', 1, 'MIG-dra-1-1')]),
    resource_slice(DRA_NODE, 1, [whole_gpu(7, 'GPU-dra-old')]),  # stale: an older generation of the pool
    resource_slice(BOTH_NODE, 1, [whole_gpu(0, 'GPU-both-0'), whole_gpu(1, 'GPU-both-1')]),
]


def kwok_node(name):
    """A KWOK node with no GPU annotation (the simulated device plugin and GFD leave it alone)."""
    res = {'cpu': '32', 'memory': '256Gi', 'pods': '110'}
    return {'apiVersion': 'v1', 'kind': 'Node',
            'metadata': {'name': name, 'annotations': {'kwok.x-k8s.io/node': 'fake'},
                         'labels': {'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux', 'type': 'kwok'}},
            'spec': {}, 'status': {'capacity': res, 'allocatable': res}}


def claim(name, device_class, config=None):
    spec = {'devices': {'requests': [{'name': 'gpu', 'exactly': {'deviceClassName': device_class}}]}}
    if config:
        spec['devices']['config'] = [{'requests': ['gpu'], 'opaque': {'driver': DRIVER, 'parameters': dict(
            config, apiVersion='resource.nvidia.com/v1beta1')}}]
    return {'apiVersion': 'resource.k8s.io/v1', 'kind': 'ResourceClaim', 'metadata': {'name': name}, 'spec': spec}


def claim_pod(name, claim_name):
    return {'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': name},
            'spec': {'nodeSelector': {'kubernetes.io/hostname': DRA_NODE}, 'terminationGracePeriodSeconds': 0,
                     'resourceClaims': [{'name': 'gpu', 'resourceClaimName': claim_name}],
                     'containers': [{'name': 'cuda', 'image': 'nvcr.io/nvidia/cuda:12.4.0-base-ubi9',
                                     'resources': {'claims': [{'name': 'gpu'}]}}]}}


@pytest.fixture(scope='module')
def dra_fleet(testbed, core, custom):
    """The DRA node, the slices and the DeviceClasses; removed afterwards."""
    wait_until('GPU allocatable on %s and %s' % (BOTH_NODE, PLUGIN_NODE), lambda: all(
        (core.read_node(n).status.allocatable or {}).get('nvidia.com/gpu') for n in (BOTH_NODE, PLUGIN_NODE)), 180)
    core.create_node(kwok_node(DRA_NODE))
    for item in SLICES:
        custom.create_cluster_custom_object(*RESOURCE, 'resourceslices', item)
    for name, expression in CLASSES.items():
        custom.create_cluster_custom_object(*RESOURCE, 'deviceclasses', {
            'apiVersion': 'resource.k8s.io/v1', 'kind': 'DeviceClass', 'metadata': {'name': name},
            'spec': {'selectors': [{'cel': {'expression': "device.driver == 'gpu.nvidia.com' && " + expression}}]}})
    wait_until('%s Ready' % DRA_NODE, lambda: any(
        c.type == 'Ready' and c.status == 'True' for c in core.read_node(DRA_NODE).status.conditions or []), 60)
    yield
    for name in CLASSES:
        custom.delete_cluster_custom_object(*RESOURCE, 'deviceclasses', name)
    for item in SLICES:
        custom.delete_cluster_custom_object(*RESOURCE, 'resourceslices', item['metadata']['name'])
    core.delete_node(DRA_NODE)


@pytest.fixture(scope='module')
def allocated(dra_fleet, core, custom):
    """Two claims on the DRA node, allocated by the kube-scheduler for two pods: {claim name: claim as read}."""
    namespace = create_namespace(core, 'dra-fleet-it')
    custom.create_namespaced_custom_object(*RESOURCE, namespace, 'resourceclaims',
                                           claim('train', 'dra-fleet-it-gpu', dict(kind='GpuConfig', sharing=TIME_SLICING)))
    custom.create_namespaced_custom_object(*RESOURCE, namespace, 'resourceclaims', claim('notebook', 'dra-fleet-it-mig'))
    core.create_namespaced_pod(namespace, claim_pod('train-0', 'train'))
    core.create_namespaced_pod(namespace, claim_pod('notebook-0', 'notebook'))

    def both_allocated():
        claims = dict((c['metadata']['name'], c) for c in custom.list_namespaced_custom_object(
            *RESOURCE, namespace, 'resourceclaims')['items'])
        done = all((c.get('status') or {}).get('allocation') and (c.get('status') or {}).get('reservedFor')
                   for c in claims.values())
        return done and len(claims) == 2 and claims
    claims = wait_until('the scheduler to allocate both claims', both_allocated, 90)
    yield claims
    core.delete_namespace(namespace)


def allocated_devices(claims):
    """{(pool, device): 'namespace/claim'} from the claims' allocation as the API returns it."""
    return dict(((r['pool'], r['device']), '%s/%s' % (c['metadata']['namespace'], c['metadata']['name']))
                for c in claims.values() for r in c['status']['allocation']['devices']['results'])


def test_gpu_nodes_info_shows_the_stack_and_the_devices(testbed, api_client, allocated):
    taken = allocated_devices(allocated)
    # the scheduler chose from the pool's newest generation: the whole GPU and one of the two MIG devices
    assert sorted(taken)[0] == (DRA_NODE, 'gpu-0') and len(taken) == 2
    rc, results, raw = run_play(testbed.kubeconfig, [
        {'name': 'fleet', 'gpuops.gpu.gpu_nodes_info': {}, 'register': 'fleet'},
        {'name': 'device taints', 'gpuops.gpu.gpu_health': {'dra_device_taints': True}, 'ignore_errors': True}])
    assert rc == 0, raw[-4000:]
    # Kubernetes 1.36 serves resource.k8s.io/v1 only: DeviceTaintRule (v1beta2, v1alpha3) is off by default, and
    # gpu_health refuses to quarantine device by device before it writes anything (test_gpu_health.py turns it on)
    assert [v.version for g in client.ApisApi(api_client).get_api_versions().groups if g.name == 'resource.k8s.io'
            for v in g.versions] == ['v1']
    taints = results['device taints']
    assert taints['failed'] and not taints['changed']
    assert 'dra_device_taints needs the DeviceTaintRule API' in taints['msg']
    fleet = results['fleet']
    nodes = dict((n['name'], n) for n in fleet['nodes'])
    assert dict((n, nodes[n]['stack']) for n in (DRA_NODE, BOTH_NODE, PLUGIN_NODE)) == {
        DRA_NODE: 'dra', BOTH_NODE: 'both', PLUGIN_NODE: 'device-plugin'}
    assert fleet['dra']['served'] is True and fleet['dra']['stale_slices'] == 1
    devices = dict((d['name'], d) for d in nodes[DRA_NODE]['dra_devices'])
    assert sorted(devices) == ['gpu-0', 'gpu-1-mig-1g5gb-19-0', 'gpu-1-mig-1g5gb-19-1']  # not the stale gpu-7
    assert dict((name, d['claims']) for name, d in devices.items() if d['allocated']) == dict(
        (device, [holder]) for (pool, device), holder in taken.items())
    train = devices['gpu-0']
    assert (train['product'], train['memory_mib'], train['sharing']) == (A100, 40960, TIME_SLICING)
    assert train['pods'] == [train['claims'][0].split('/')[0] + '/train-0']
    mig = [d for d in devices.values() if d['type'] == 'mig' and d['allocated']][0]
    assert (mig['profile'], mig['parent'], mig['memory_mib'], mig['sharing']) == ('1g.5gb', 'gpu-1', 4864, None)
    assert [d['allocated'] for d in nodes[BOTH_NODE]['dra_devices']] == [False, False]
    assert fleet['summary']['stacks'] == {'dra': 1, 'both': 1, 'device-plugin': 1}
    assert fleet['summary']['dra_devices'] == {A100: {'total': 3, 'allocated': 1, 'free': 2},
                                               A100 + ' MIG 1g.5gb': {'total': 2, 'allocated': 1, 'free': 1}}


def test_inventory_groups_per_stack(testbed, dra_fleet, tmp_path):
    source = tmp_path / 'dra.gpu_nodes.yml'
    source.write_text(yaml.safe_dump({'plugin': 'gpuops.gpu.gpu_nodes', 'kubeconfig': testbed.kubeconfig,
                                      'cluster_name': 'lab'}))
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith('K8S_AUTH_') and k != 'KUBECONFIG')
    env.update(ANSIBLE_INVENTORY_UNPARSED_FAILED='true', ANSIBLE_NOCOLOR='1', HOME=str(tmp_path))
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-inventory'), '-i', str(source),
                           '--list'], env=env, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    data = json.loads(proc.stdout)
    groups = dict((g, sorted(data[g]['hosts'])) for g in data if g.startswith('gpu_stack_'))
    assert groups == {'gpu_stack_dra': [DRA_NODE], 'gpu_stack_both': [BOTH_NODE],
                      'gpu_stack_device_plugin': [PLUGIN_NODE]}
    hostvars = data['_meta']['hostvars'][DRA_NODE]
    stack = hostvars['gpuops_stack']
    assert (stack.get('__ansible_unsafe', stack) if isinstance(stack, dict) else stack) == 'dra'
    assert len(hostvars['gpuops_dra_devices']) == 3


def test_fleet_report_shows_the_stack_and_the_dra_devices(testbed, allocated, tmp_path):
    variables = tmp_path / 'vars.json'
    variables.write_text(json.dumps({'gpuops_kubeconfig': testbed.kubeconfig, 'gpuops_report_dir': str(tmp_path)}))
    env = dict(os.environ, ANSIBLE_NOCOLOR='1', ANSIBLE_LOCALHOST_WARNING='false',
               ANSIBLE_INVENTORY_UNPARSED_WARNING='false', ANSIBLE_PYTHON_INTERPRETER=sys.executable)
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'),
                           os.path.join(REPO, 'playbooks', 'report.yml'), '-e', '@%s' % variables],
                          env=env, capture_output=True, text=True, timeout=300, check=False, cwd=str(tmp_path))
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert 'stacks: both x1, device-plugin x1, dra x1' in proc.stdout  # the text table's totals
    rows = [line.split(',') for line in (tmp_path / 'fleet.csv').read_text().splitlines()]
    stack = rows[0].index('STACK')
    assert dict((r[0], r[stack]) for r in rows[1:]) == {DRA_NODE: 'dra', BOTH_NODE: 'both', PLUGIN_NODE: 'device-plugin'}
    dra_cell = rows[[r[0] for r in rows].index(DRA_NODE)][rows[0].index('DRA USED/ALL')]
    assert dra_cell == 'gpu:1/1 mig-1g.5gb:1/2'
    page = (tmp_path / 'fleet-report.html').read_text()
    taken = allocated_devices(allocated)
    for (pool, device), holder in taken.items():
        assert '<tr class="allocated"><td>%s</td><td>%s</td>' % (pool, device) in page
        assert '<td>%s</td>' % holder in page
    assert page.count('<tr class="free">') == 3  # one MIG device on the DRA node, both GPUs of a100-0
    saved = json.loads((tmp_path / 'fleet.json').read_text())
    assert [n['stack'] for n in saved['nodes'] if n['name'] == DRA_NODE] == ['dra']
    # the mixed fleet in the browser (GPUOPS_DRA_REPORT_SCREENSHOT=<path> keeps it: docs/images/fleet-report-dra.png)
    screenshot(tmp_path, tmp_path / 'fleet-report.html', 'GPUOPS_DRA_REPORT_SCREENSHOT')
