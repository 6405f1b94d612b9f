"""gpuops.gpu.autoscaling on the virtual GPU cluster: the real apiserver with the real machine.openshift.io and
autoscaling.openshift.io CRD schemas, and the simulated machine-api (MachineSet replicas -> Machines -> KWOK Nodes)."""

import json
import time

import pytest

from ansible_run import changed_tasks, run_role
from conftest import wait_until
from role_cases import assert_failed, failures

NS = 'openshift-machine-api'
ACC = 'cluster-api/accelerator'
GPU_MS = 'ocp-gpu-us-east-1a'
WORKER_MS = 'ocp-worker-us-east-1a'
VSPHERE_MS = 'ocp-vsphere-worker'
VGPU_MS = 'ocp-vgpu-a100-4c'

GOOD = {
    'autoscaling_machine_sets': [
        {'name': GPU_MS, 'accelerator': 'nvidia-a100', 'gpus': 8, 'vcpu': 96, 'memory_mb': 1179648,
         'min_replicas': 0, 'max_replicas': 3, 'labels': {'gpuops.dev/pool': 'autoscaled'},
         'taints': [{'key': 'nvidia.com/gpu', 'effect': 'NoSchedule'}]},
        {'name': VGPU_MS, 'source': VSPHERE_MS, 'vgpu_profile': 'A100-4C', 'accelerator': 'nvidia-a100-4c',
         'provider_spec': {'template': 'ocp-rhcos-a100-4c'}, 'gpus': 1, 'vcpu': 8, 'memory_mb': 32768,
         'max_replicas': 2},
    ],
    'autoscaling_resource_limits': {'maxNodesTotal': 30},
}


def machineset(name, provider, annotations=None):
    labels = {'machine.openshift.io/cluster-api-cluster': 'ocp', 'machine.openshift.io/cluster-api-machineset': name}
    template_labels = dict(labels, **{'machine.openshift.io/cluster-api-machine-role': 'worker'})
    return {'apiVersion': 'machine.openshift.io/v1beta1', 'kind': 'MachineSet',
            'metadata': {'name': name, 'namespace': NS, 'annotations': annotations or {},
                         'labels': {'machine.openshift.io/cluster-api-cluster': 'ocp'}},
            'spec': {'replicas': 0, 'selector': {'matchLabels': labels},
                     'template': {'metadata': {'labels': template_labels},
                                  'spec': {'metadata': {'labels': {'node-role.kubernetes.io/worker': ''}},
                                           'providerSpec': {'value': provider}}}}}


@pytest.fixture(scope='module', autouse=True)
def machine_sets(custom, core):
    """An OpenShift-like machine-api namespace: a CPU worker (provider annotations say 0 GPUs), an AWS GPU
    MachineSet (p4d.24xlarge, annotations not filled in yet) and a vSphere worker to copy vGPU MachineSets from."""
    core.create_namespace({'metadata': {'name': NS}})
    wait_until('default ServiceAccount', lambda: core.list_namespaced_service_account(NS).items, 30)
    aws = {'apiVersion': 'machine.openshift.io/v1beta1', 'kind': 'AWSMachineProviderConfig',
           'placement': {'availabilityZone': 'us-east-1a', 'region': 'us-east-1'}}
    for obj in (machineset(WORKER_MS, dict(aws, instanceType='m6i.2xlarge'),
                           {'machine.openshift.io/GPU': '0', 'machine.openshift.io/vCPU': '8',
                            'machine.openshift.io/memoryMb': '32768'}),
                machineset(GPU_MS, dict(aws, instanceType='p4d.24xlarge')),
                machineset(VSPHERE_MS, {'apiVersion': 'machine.openshift.io/v1beta1', 'kind': 'VSphereMachineProviderSpec',
                                        'template': 'ocp-rhcos', 'numCPUs': 8, 'memoryMiB': 32768})):
        custom.create_namespaced_custom_object('machine.openshift.io', 'v1beta1', NS, 'machinesets', obj)


def snapshot(custom):
    """What the role may write: MachineSets (labels, annotations, spec: the simulated machine-api writes
    their status), MachineAutoscalers, ClusterAutoscalers."""
    ms = custom.list_namespaced_custom_object('machine.openshift.io', 'v1beta1', NS, 'machinesets')['items']
    mas = custom.list_namespaced_custom_object('autoscaling.openshift.io', 'v1beta1', NS, 'machineautoscalers')['items']
    cas = custom.list_cluster_custom_object('autoscaling.openshift.io', 'v1', 'clusterautoscalers')['items']
    return ({m['metadata']['name']: json.dumps([m['metadata'].get('labels'), m['metadata'].get('annotations'),
                                                m['spec']], sort_keys=True) for m in ms},
            sorted(m['metadata']['name'] for m in mas), [c['metadata']['name'] for c in cas])


def get_ms(custom, name):
    return custom.get_namespaced_custom_object('machine.openshift.io', 'v1beta1', NS, 'machinesets', name)


def test_bad_inputs_fail_before_writing(testbed, custom):
    before = snapshot(custom)
    gpu = GOOD['autoscaling_machine_sets'][0]
    cases = {
        'resource-name-as-type': [dict(gpu, accelerator='nvidia.com/gpu')],
        'limits-type-mismatch': GOOD['autoscaling_machine_sets'],
        'selector-matches-all': [dict({k: v for k, v in gpu.items() if k != 'name'},
                                      label_selector='machine.openshift.io/cluster-api-cluster=ocp')],
        'cpu-machineset': [dict(gpu, name=WORKER_MS, gpus=None)],
    }
    overrides = {}
    for name, machine_sets in cases.items():
        variables = {'autoscaling_machine_sets': [{k: v for k, v in m.items() if v is not None} for m in machine_sets]}
        if name == 'limits-type-mismatch':
            variables['autoscaling_gpu_limits'] = [{'type': 'nvidia-a100-sxm4', 'min': 0, 'max': 16}]
        overrides[name] = variables
    got, raw = failures(testbed.kubeconfig, 'autoscaling', {}, overrides)
    expected = {'resource-name-as-type': "'nvidia.com/gpu' is the name of the GPU resource, not a GPU type",
                'limits-type-mismatch': 'nvidia-a100-sxm4 matches no GPU MachineSet',
                'selector-matches-all': 'matches every MachineSet',
                'cpu-machineset': 'has machine.openshift.io/GPU=0'}
    assert_failed(got, raw, expected, 'Check the inputs before')
    assert snapshot(custom) == before


def test_check_mode_writes_nothing(testbed, custom):
    before = snapshot(custom)
    rc, results, raw = run_role(testbed.kubeconfig, 'autoscaling', GOOD, check=True)
    assert rc == 0, raw[-3000:]
    assert results['Label, annotate and taint the GPU MachineSets']['changed'] is True
    assert results['Write the ClusterAutoscaler with the GPU limits']['changed'] is True
    assert snapshot(custom) == before
    assert VGPU_MS not in before[0]


def test_apply_then_idempotent(testbed, custom):
    rc, results, raw = run_role(testbed.kubeconfig, 'autoscaling', GOOD)
    assert rc == 0, raw[-3000:]
    ms = get_ms(custom, GPU_MS)
    assert ms['metadata']['labels'][ACC] == 'nvidia-a100'
    ann = ms['metadata']['annotations']
    assert (ann['machine.openshift.io/GPU'], ann['machine.openshift.io/vCPU'], ann['machine.openshift.io/memoryMb']) \
        == ('8', '96', '1179648')
    assert ann['capacity.cluster-autoscaler.kubernetes.io/gpu-count'] == '8'
    assert ann['capacity.cluster-autoscaler.kubernetes.io/taints'] == 'nvidia.com/gpu:NoSchedule'
    assert 'topology.kubernetes.io/zone=us-east-1a' in ann['capacity.cluster-autoscaler.kubernetes.io/labels']
    tspec = ms['spec']['template']['spec']
    assert tspec['metadata']['labels'] == {'node-role.kubernetes.io/worker': '', ACC: 'nvidia-a100',
                                           'gpuops.dev/pool': 'autoscaled', 'topology.kubernetes.io/zone': 'us-east-1a',
                                           'topology.kubernetes.io/region': 'us-east-1'}
    assert tspec['taints'] == [{'key': 'nvidia.com/gpu', 'effect': 'NoSchedule'}]
    # the CPU worker is untouched
    worker = get_ms(custom, WORKER_MS)
    assert ACC not in (worker['metadata'].get('labels') or {})
    assert ACC not in worker['spec']['template']['spec']['metadata']['labels']
    # one MachineSet per vGPU profile, copied from the vSphere worker with its own VM template
    vgpu = get_ms(custom, VGPU_MS)
    assert vgpu['spec']['replicas'] == 0
    assert vgpu['spec']['selector']['matchLabels']['machine.openshift.io/cluster-api-machineset'] == VGPU_MS
    assert vgpu['spec']['template']['spec']['providerSpec']['value']['template'] == 'ocp-rhcos-a100-4c'
    assert vgpu['spec']['template']['spec']['metadata']['labels'][ACC] == 'nvidia-a100-4c'
    assert get_ms(custom, VSPHERE_MS)['spec']['template']['spec']['providerSpec']['value']['template'] == 'ocp-rhcos'
    # MachineAutoscalers for the GPU MachineSets only
    mas = custom.list_namespaced_custom_object('autoscaling.openshift.io', 'v1beta1', NS, 'machineautoscalers')['items']
    assert sorted((m['spec']['scaleTargetRef']['name'], m['spec']['minReplicas'], m['spec']['maxReplicas'])
                  for m in mas) == [(GPU_MS, 0, 3), (VGPU_MS, 0, 2)]
    ca = custom.get_cluster_custom_object('autoscaling.openshift.io', 'v1', 'clusterautoscalers', 'default')
    assert ca['spec']['resourceLimits'] == {'maxNodesTotal': 30, 'gpus': [
        {'type': 'nvidia-a100', 'min': 0, 'max': 24}, {'type': 'nvidia-a100-4c', 'min': 0, 'max': 2}]}
    assert ca['spec']['scaleDown']['delayAfterAdd'] == '20m' and ca['spec']['maxNodeProvisionTime'] == '30m'

    before = snapshot(custom)
    rc, results, raw = run_role(testbed.kubeconfig, 'autoscaling', GOOD)
    assert rc == 0, raw[-3000:]
    assert changed_tasks(results) == [], changed_tasks(results)
    assert snapshot(custom) == before


def test_scaled_machineset_yields_gpu_nodes_and_a_pending_gpu_pod_lands(custom, core, namespace):
    pod = {'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': 'wants-a100'},
           'spec': {'nodeSelector': {ACC: 'nvidia-a100'}, 'terminationGracePeriodSeconds': 0,
                    'tolerations': [{'key': 'nvidia.com/gpu', 'operator': 'Exists', 'effect': 'NoSchedule'}],
                    'containers': [{'name': 'cuda', 'image': 'nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0-ubuntu22.04',
                                    'resources': {'limits': {'nvidia.com/gpu': 8}}}]}}
    core.create_namespaced_pod(namespace, pod)

    def unschedulable():
        conds = core.read_namespaced_pod('wants-a100', namespace).status.conditions or []
        return any(c.type == 'PodScheduled' and c.reason == 'Unschedulable' for c in conds)
    wait_until('the GPU pod to be pending (no node with the accelerator yet)', unschedulable, 60)

    # what the cluster autoscaler does: raise the replicas of the GPU MachineSets
    for name in (GPU_MS, VGPU_MS):
        custom.patch_namespaced_custom_object('machine.openshift.io', 'v1beta1', NS, 'machinesets', name,
                                              {'spec': {'replicas': 1}})

    def gpu_node(accelerator, count):
        def find():
            for node in core.list_node(label_selector='%s=%s' % (ACC, accelerator)).items:
                if (node.status.allocatable or {}).get('nvidia.com/gpu') == str(count):
                    return node
            return None
        return find
    a100 = wait_until('a GPU node of %s with 8 GPUs' % GPU_MS, gpu_node('nvidia-a100', 8), 90)
    assert a100.metadata.name.startswith(GPU_MS + '-')
    assert a100.metadata.labels['topology.kubernetes.io/zone'] == 'us-east-1a'
    assert a100.metadata.labels['gpuops.dev/pool'] == 'autoscaled'
    # (the node lifecycle controller may still hold node.kubernetes.io/not-ready while KWOK reports Ready)
    assert [(t.key, t.effect) for t in a100.spec.taints if not t.key.startswith('node.kubernetes.io/')] == [
        ('nvidia.com/gpu', 'NoSchedule')]
    vgpu = wait_until('a vGPU node of %s with 1 GPU' % VGPU_MS, gpu_node('nvidia-a100-4c', 1), 90)
    assert vgpu.metadata.labels['gpuops.gpu/vgpu-profile'] == 'A100-4C'

    def landed():
        p = core.read_namespaced_pod('wants-a100', namespace)
        return p.status.phase == 'Running' and p.spec.node_name
    assert wait_until('the pending GPU pod to run on the new node', landed, 90) == a100.metadata.name
    core.delete_namespaced_pod('wants-a100', namespace, grace_period_seconds=0)
    time.sleep(0.5)
