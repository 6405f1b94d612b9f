# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""autoscaling_plan: validation before any write and the objects planned for GPU MachineSets."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy

import pytest

from ansible_collections.gpuops.gpu.plugins.filter.autoscaling import FilterModule
from ansible_collections.gpuops.gpu.plugins.module_utils.common import names
from ansible_collections.gpuops.gpu.plugins.module_utils.common.merge import deep_merge
from ansible_collections.gpuops.gpu.plugins.module_utils.plans import autoscaling as A
from ansible_collections.gpuops.gpu.plugins.module_utils.plans import machineset as M

NS = 'openshift-machine-api'


def machineset(name, provider=None, annotations=None, labels=None, node_labels=None, taints=None):
    tspec = {'metadata': {'labels': dict(node_labels or {'node-role.kubernetes.io/worker': ''})},
             'providerSpec': {'value': provider or {'kind': 'AWSMachineProviderConfig', 'instanceType': 'p4d.24xlarge',
                                                    'placement': {'availabilityZone': 'us-east-1a',
                                                                  'region': 'us-east-1'}}}}
    if taints:
        tspec['taints'] = taints
    return {'apiVersion': 'machine.openshift.io/v1beta1', 'kind': 'MachineSet',
            'metadata': {'name': name, 'namespace': NS, 'uid': 'u-' + name, 'resourceVersion': '7',
                         'labels': dict(labels or {'machine.openshift.io/cluster-api-cluster': 'ocp'}),
                         'annotations': dict(annotations or {})},
            'spec': {'replicas': 0,
                     'selector': {'matchLabels': {M.MACHINESET_LABEL: name}},
                     'template': {'metadata': {'labels': {M.MACHINESET_LABEL: name}}, 'spec': tspec}},
            'status': {'replicas': 0}}


WORKER = machineset('ocp-worker-a', annotations={M.ANN_GPU: '0', M.ANN_VCPU: '8', M.ANN_MEMORY: '32768'},
                    labels={'machine.openshift.io/cluster-api-cluster': 'ocp', 'role': 'worker'},
                    provider={'kind': 'AWSMachineProviderConfig', 'instanceType': 'm6i.2xlarge'})
GPU = machineset('ocp-gpu-a', labels={'machine.openshift.io/cluster-api-cluster': 'ocp', 'gpu': 'a100'})
GPU_B = machineset('ocp-gpu-b', labels={'machine.openshift.io/cluster-api-cluster': 'ocp', 'gpu': 'a100'},
                   annotations={M.ANN_GPU: '8', M.ANN_VCPU: '96', M.ANN_MEMORY: '1179648',
                                M.ANN_CAP_LABELS: 'kubernetes.io/arch=amd64'},
                   provider={'kind': 'AWSMachineProviderConfig', 'instanceType': 'p4d.24xlarge',
                             'placement': {'availabilityZone': 'us-east-1b', 'region': 'us-east-1'}})
VSPHERE = machineset('ocp-vsphere-worker', provider={'kind': M.VSPHERE_KIND, 'template': 'rhcos', 'numCPUs': 8})
EXISTING = [WORKER, GPU, GPU_B, VSPHERE]


def plan(entries, **kwargs):
    kwargs.setdefault('existing_machine_sets', copy.deepcopy(EXISTING))
    return A.autoscaling_plan(entries, **kwargs)


def ok(result):
    assert result['errors'] == [], result['errors']
    return result


def by_name(result):
    return dict((p['name'], p) for p in result['machine_sets'])


# --- the happy path --------------------------------------------------------------------------------

def test_by_name_labels_annotations_taints_zone():
    result = ok(plan([{'name': 'ocp-gpu-a', 'accelerator': 'nvidia-a100', 'gpus': 8, 'vcpu': 96,
                       'memory_mb': 1179648, 'max_replicas': 3, 'sharing_config': 'ts-4',
                       'taints': [{'key': 'nvidia.com/gpu', 'effect': 'NoSchedule'}]}],
                     sharing_keys=['ts-4']))
    ms = by_name(result)['ocp-gpu-a']
    assert ms['create'] is False and ms['definition'] is None
    patch = ms['patch']
    assert patch['metadata']['labels'] == {M.ACCELERATOR_LABEL: 'nvidia-a100'}
    ann = patch['metadata']['annotations']
    assert ann[M.ANN_GPU] == '8' and ann[M.ANN_VCPU] == '96' and ann[M.ANN_MEMORY] == '1179648'
    assert ann[M.ANN_CAP_GPU_COUNT] == '8' and ann[M.ANN_CAP_GPU_TYPE] == 'nvidia.com/gpu'
    assert ann[M.ANN_CAP_MEMORY] == '1179648Mi' and ann[M.ANN_CAP_CPU] == '96'
    assert ann[M.ANN_CAP_TAINTS] == 'nvidia.com/gpu:NoSchedule'
    assert 'cluster-api/accelerator=nvidia-a100' in ann[M.ANN_CAP_LABELS]
    assert 'topology.kubernetes.io/zone=us-east-1a' in ann[M.ANN_CAP_LABELS]
    tspec = patch['spec']['template']['spec']
    assert tspec['metadata']['labels'] == {
        M.ACCELERATOR_LABEL: 'nvidia-a100', M.LABEL_ZONE: 'us-east-1a', M.LABEL_REGION: 'us-east-1',
        names.LABEL_DP_CONFIG: 'ts-4'}
    assert tspec['taints'] == [{'key': 'nvidia.com/gpu', 'effect': 'NoSchedule'}]
    assert 'providerSpec' not in tspec
    assert result['machine_autoscalers'] == [{
        'apiVersion': 'autoscaling.openshift.io/v1beta1', 'kind': 'MachineAutoscaler',
        'metadata': {'name': 'ocp-gpu-a', 'namespace': NS, 'labels': {names.LABEL_MANAGED_BY: names.MANAGED_BY}},
        'spec': {'minReplicas': 0, 'maxReplicas': 3,
                 'scaleTargetRef': {'apiVersion': 'machine.openshift.io/v1beta1', 'kind': 'MachineSet',
                                    'name': 'ocp-gpu-a'}}}]
    assert result['gpu_limits'] == [{'type': 'nvidia-a100', 'min': 0, 'max': 24}]
    assert result['cluster_autoscaler']['spec']['resourceLimits']['gpus'] == result['gpu_limits']
    assert result['cluster_autoscaler']['metadata']['name'] == 'default'


def test_second_run_has_nothing_to_patch():
    entry = {'name': 'ocp-gpu-a', 'accelerator': 'nvidia-a100', 'gpus': 8, 'max_replicas': 3,
             'taints': [{'key': 'nvidia.com/gpu', 'effect': 'NoSchedule'}], 'labels': {'team': 'ml'}}
    first = ok(plan([entry]))
    patched = deep_merge(copy.deepcopy(GPU), first['machine_sets'][0]['patch'])
    second = ok(plan([entry], existing_machine_sets=[WORKER, patched, GPU_B, VSPHERE]))
    assert second['machine_sets'][0]['patch'] == {}


def test_label_selector_picks_only_matching_and_keeps_provider_labels():
    result = ok(plan([{'label_selector': 'gpu=a100', 'accelerator': 'nvidia-a100', 'max_replicas': 2, 'gpus': 8}]))
    assert sorted(by_name(result)) == ['ocp-gpu-a', 'ocp-gpu-b']
    ann_b = by_name(result)['ocp-gpu-b']['patch']['metadata']['annotations']
    # provider values equal to ours are not rewritten; the arch pair the provider wrote is kept
    assert M.ANN_GPU not in ann_b
    assert ann_b[M.ANN_CAP_LABELS].startswith('kubernetes.io/arch=amd64,')
    assert result['gpu_limits'] == [{'type': 'nvidia-a100', 'min': 0, 'max': 32}]
    assert [m['metadata']['name'] for m in result['machine_autoscalers']] == ['ocp-gpu-a', 'ocp-gpu-b']


def test_gpu_count_from_provider_annotation_derives_limit():
    result = ok(plan([{'name': 'ocp-gpu-b', 'accelerator': 'nvidia-a100', 'max_replicas': 4}]))
    assert result['gpu_limits'] == [{'type': 'nvidia-a100', 'min': 0, 'max': 32}]
    assert result['warnings'] == []


def test_vsphere_vgpu_clone_per_profile():
    entries = [
        {'name': 'ocp-vgpu-a100-4c', 'source': 'ocp-vsphere-worker', 'vgpu_profile': 'A100-4C',
         'accelerator': 'nvidia-a100-4c', 'provider_spec': {'template': 'rhcos-a100-4c'}, 'gpus': 1,
         'max_replicas': 2},
        {'name': 'ocp-vgpu-a100-8c', 'source': 'ocp-vsphere-worker', 'vgpu_profile': 'A100-8C',
         'accelerator': 'nvidia-a100-8c', 'provider_spec': {'template': 'rhcos-a100-8c'}, 'gpus': 1,
         'max_replicas': 2, 'replicas': 1},
    ]
    result = ok(plan(entries))
    new = by_name(result)['ocp-vgpu-a100-8c']
    assert new['create'] is True and new['patch'] == {}
    d = new['definition']
    assert d['metadata']['name'] == 'ocp-vgpu-a100-8c' and 'uid' not in d['metadata'] and 'status' not in d
    assert d['spec']['replicas'] == 1
    assert d['spec']['selector']['matchLabels'][M.MACHINESET_LABEL] == 'ocp-vgpu-a100-8c'
    assert d['spec']['template']['metadata']['labels'][M.MACHINESET_LABEL] == 'ocp-vgpu-a100-8c'
    value = d['spec']['template']['spec']['providerSpec']['value']
    assert value == {'kind': M.VSPHERE_KIND, 'template': 'rhcos-a100-8c', 'numCPUs': 8}
    labels = d['spec']['template']['spec']['metadata']['labels']
    assert labels[M.ACCELERATOR_LABEL] == 'nvidia-a100-8c' and labels[M.LABEL_VGPU_PROFILE] == 'A100-8C'
    assert {g['type'] for g in result['gpu_limits']} == {'nvidia-a100-4c', 'nvidia-a100-8c'}


def test_clone_drops_source_capacity_annotations():
    result = ok(plan([{'name': 'ocp-gpu-c', 'source': 'ocp-gpu-b', 'accelerator': 'nvidia-h100',
                       'provider_spec': {'instanceType': 'p5.48xlarge'}, 'max_replicas': 1, 'min_replicas': 1}],
                     gpu_limits=[{'type': 'nvidia-h100', 'min': 0, 'max': 8}]))
    d = by_name(result)['ocp-gpu-c']['definition']
    assert M.ANN_GPU not in d['metadata'].get('annotations', {})
    assert d['metadata']['labels'].get(M.ACCELERATOR_LABEL) == 'nvidia-h100'
    assert result['warnings'] == []  # min 1: no scale from zero to warn about
    # no GPU count known: no limit can be derived
    assert any('cannot derive' in e for e in A.autoscaling_plan(
        [{'name': 'ocp-gpu-c', 'source': 'ocp-gpu-b', 'accelerator': 'nvidia-h100', 'max_replicas': 1}],
        existing_machine_sets=EXISTING)['errors'])


def test_existing_cluster_autoscaler_fields_and_other_gpu_types_kept():
    existing = {'metadata': {'name': 'default', 'resourceVersion': '3'},
                'spec': {'podPriorityThreshold': -10,
                         'resourceLimits': {'maxNodesTotal': 20, 'gpus': [{'type': 'amd-mi300', 'min': 0, 'max': 8},
                                                                          {'type': 'nvidia-a100', 'min': 0, 'max': 1}]},
                         'scaleDown': {'enabled': True, 'utilizationThreshold': '0.4'}}}
    result = ok(plan([{'name': 'ocp-gpu-a', 'accelerator': 'nvidia-a100', 'gpus': 8, 'max_replicas': 2}],
                     existing_cluster_autoscaler=existing, scale_down={'enabled': True, 'delayAfterAdd': '20m'},
                     max_node_provision_time='30m'))
    spec = result['cluster_autoscaler']['spec']
    assert spec['podPriorityThreshold'] == -10 and spec['resourceLimits']['maxNodesTotal'] == 20
    assert spec['resourceLimits']['gpus'] == [{'type': 'amd-mi300', 'min': 0, 'max': 8},
                                              {'type': 'nvidia-a100', 'min': 0, 'max': 16}]
    assert spec['scaleDown'] == {'enabled': True, 'utilizationThreshold': '0.4', 'delayAfterAdd': '20m'}
    assert spec['maxNodeProvisionTime'] == '30m'
    assert any('amd-mi300' in w for w in result['warnings'])
    assert 'labels' not in result['cluster_autoscaler']['metadata']


def test_explicit_limit_and_existing_machine_autoscaler_adopted():
    autoscalers = [{'metadata': {'name': 'legacy-ma', 'namespace': NS},
                    'spec': {'scaleTargetRef': {'kind': 'MachineSet', 'name': 'ocp-gpu-a'}}}]
    result = ok(plan([{'name': 'ocp-gpu-a', 'accelerator': 'nvidia-a100', 'gpus': 8, 'max_replicas': 2}],
                     gpu_limits=[{'type': 'nvidia-a100', 'min': 0, 'max': 12}],
                     existing_machine_autoscalers=autoscalers))
    assert result['gpu_limits'] == [{'type': 'nvidia-a100', 'min': 0, 'max': 12}]
    assert result['machine_autoscalers'][0]['metadata']['name'] == 'legacy-ma'


def test_limit_for_type_of_unmanaged_labelled_machineset_is_accepted():
    other = machineset('ocp-h100', node_labels={M.ACCELERATOR_LABEL: 'nvidia-h100'})
    result = ok(plan([{'name': 'ocp-gpu-a', 'accelerator': 'nvidia-a100', 'gpus': 8, 'max_replicas': 2}],
                     existing_machine_sets=EXISTING + [other],
                     gpu_limits=[{'type': 'nvidia-h100', 'min': 0, 'max': 16}]))
    assert {g['type'] for g in result['gpu_limits']} == {'nvidia-a100', 'nvidia-h100'}


def test_machine_autoscaler_can_be_skipped_and_cluster_autoscaler_unmanaged():
    result = ok(plan([{'name': 'ocp-gpu-a', 'accelerator': 'nvidia-a100', 'machine_autoscaler': False}],
                     manage_cluster_autoscaler=False))
    assert result['machine_autoscalers'] == [] and result['cluster_autoscaler'] is None


def test_warnings_scale_from_zero_and_untolerated_taint():
    result = ok(plan([{'name': 'ocp-gpu-a', 'accelerator': 'nvidia-a100', 'max_replicas': 2,
                       'taints': [{'key': 'dedicated', 'value': 'ml', 'effect': 'NoSchedule'}]}],
                     gpu_limits=[{'type': 'nvidia-a100', 'min': 0, 'max': 16}],
                     tolerations=[{'key': 'nvidia.com/gpu', 'operator': 'Exists', 'effect': 'NoSchedule'}]))
    text = ' '.join(result['warnings'])
    assert 'scale it up from zero' in text and 'do not tolerate the taint dedicated:NoSchedule' in text


def test_filter_is_registered():
    assert FilterModule().filters()['autoscaling_plan']([], existing_machine_sets=[])['errors'] == []


# --- bad inputs: every one is an error, nothing planned --------------------------------------------

BAD = [
    ({'name': 'ocp-gpu-a', 'accelerator': 'nvidia.com/gpu', 'max_replicas': 2}, "'nvidia.com/gpu' is the name of the GPU resource"),
    ({'name': 'ocp-gpu-a', 'accelerator': 'NVIDIA A100!', 'max_replicas': 2}, 'must be at most 63 characters'),
    ({'name': 'ocp-gpu-a', 'max_replicas': 2}, 'accelerator is required'),
    ({'accelerator': 'nvidia-a100', 'max_replicas': 2}, 'exactly one of name'),
    ({'name': 'ocp-gpu-a', 'label_selector': 'gpu=a100', 'accelerator': 'a', 'max_replicas': 2}, 'exactly one of name'),
    ({'label_selector': 'machine.openshift.io/cluster-api-cluster=ocp', 'accelerator': 'nvidia-a100', 'max_replicas': 2},
     'matches every MachineSet'),
    ({'label_selector': 'gpu=h100', 'accelerator': 'nvidia-a100', 'max_replicas': 2}, 'matches no MachineSet'),
    ({'label_selector': '   ', 'accelerator': 'nvidia-a100', 'max_replicas': 2}, 'must be a non-empty string'),
    ({'label_selector': 'a b c', 'accelerator': 'nvidia-a100', 'max_replicas': 2}, "cannot parse label selector 'a b c'"),
    ({'label_selector': 'x in y', 'accelerator': 'nvidia-a100', 'max_replicas': 2}, 'label_selector: cannot parse'),
    ({'name': 'ocp-missing', 'accelerator': 'nvidia-a100', 'max_replicas': 2}, 'does not exist'),
    ({'name': 'ocp-new', 'source': 'ocp-missing', 'accelerator': 'nvidia-a100', 'max_replicas': 2}, 'source: MachineSet'),
    ({'name': 'ocp-worker-a', 'accelerator': 'nvidia-a100', 'max_replicas': 2}, 'has machine.openshift.io/GPU=0'),
    ({'name': 'ocp-gpu-a', 'accelerator': 'nvidia-a100', 'gpus': 8, 'max_replicas': 2, 'min_replicas': 3},
     'min_replicas 3 is greater than max_replicas 2'),
    ({'name': 'ocp-gpu-a', 'accelerator': 'nvidia-a100', 'gpus': 8}, 'max_replicas is required'),
    ({'name': 'ocp-gpu-a', 'accelerator': 'nvidia-a100', 'gpus': '8', 'max_replicas': 2}, 'gpus must be an integer'),
    ({'name': 'ocp-gpu-a', 'accelerator': 'nvidia-a100', 'gpus': 8, 'max_replicas': 2, 'mig_config': 'all-1g.5gb'},
     'gpu-operator#2670'),
    ({'name': 'ocp-gpu-a', 'accelerator': 'nvidia-a100', 'gpus': 8, 'max_replicas': 2,
      'taints': [{'key': 'nvidia.com/gpu', 'effect': 'NoSchedul'}]}, 'effect must be one of'),
    ({'name': 'ocp-gpu-a', 'accelerator': 'nvidia-a100', 'gpus': 8, 'max_replicas': 2, 'maxReplicas': 3},
     "unknown key 'maxReplicas'; did you mean 'max_replicas'"),
    ({'name': 'ocp-gpu-a', 'accelerator': 'nvidia-a100', 'gpus': 8, 'max_replicas': 2, 'replicas': 2},
     'replicas is only used when the MachineSet is created'),
    ({'name': 'ocp-gpu-a', 'accelerator': 'nvidia-a100', 'gpus': 8, 'max_replicas': 2, 'vgpu_profile': 'A100-4C'},
     'vgpu_profile is for vSphere'),
    ({'name': 'ocp-vgpu', 'source': 'ocp-vsphere-worker', 'accelerator': 'v', 'gpus': 1, 'max_replicas': 2,
      'vgpu_profile': 'A100-4C', 'provider_spec': {'template': None}}, 'needs the VM template'),
    ({'name': 'ocp-gpu-a', 'accelerator': 'nvidia-a100', 'gpus': 8, 'max_replicas': 2, 'sharing_config': 'ts-9'},
     'ts-9 is not a key of the device-plugin ConfigMap'),
    ({'name': 'ocp-gpu-a', 'accelerator': 'nvidia-a100', 'gpus': 8, 'max_replicas': 2,
      'labels': {'cluster-api/accelerator': 'x'}}, 'set the GPU type with accelerator'),
]


@pytest.mark.parametrize('entry,message', BAD, ids=[m[:40] for _e, m in BAD])
def test_bad_entries(entry, message):
    result = plan([entry], sharing_keys=['ts-4'])
    assert result['errors'], 'expected an error'
    assert any(message in e for e in result['errors']), result['errors']
    assert result['machine_sets'] == [] or result['errors']
    assert result['cluster_autoscaler'] is None or result['errors']


def test_type_mismatch_between_limits_and_labels_is_an_error():
    result = plan([{'name': 'ocp-gpu-a', 'accelerator': 'nvidia-a100', 'gpus': 8, 'max_replicas': 2}],
                  gpu_limits=[{'type': 'nvidia-a100-40gb', 'min': 0, 'max': 16}])
    assert any('matches no GPU MachineSet' in e and 'mismatch' in e for e in result['errors'])


@pytest.mark.parametrize('limits,message', [
    ([{'type': 'nvidia-a100', 'min': 4, 'max': 2}], 'min 4 is greater than max 2'),
    ([{'type': 'nvidia-a100', 'min': 0, 'max': 4}], 'less than the 8 GPUs of one machine'),
    ([{'type': 'nvidia-a100', 'min': 0, 'max': 16}, {'type': 'nvidia-a100', 'min': 0, 'max': 8}], 'listed twice'),
    ([{'type': 'nvidia.com/gpu', 'min': 0, 'max': 16}], 'not a GPU type'),
    ({'type': 'nvidia-a100'}, 'must be a list'),
    ([{'type': ['nvidia-a100'], 'min': 0, 'max': 16}], 'autoscaling_gpu_limits[0].type must be a string'),
])
def test_bad_limits(limits, message):
    result = plan([{'name': 'ocp-gpu-a', 'accelerator': 'nvidia-a100', 'gpus': 8, 'max_replicas': 2}], gpu_limits=limits)
    assert any(message in e for e in result['errors']), result['errors']


def test_same_machineset_twice_and_shared_vm_template():
    result = plan([{'name': 'ocp-gpu-a', 'accelerator': 'nvidia-a100', 'gpus': 8, 'max_replicas': 2},
                   {'label_selector': 'gpu=a100', 'accelerator': 'nvidia-a100', 'gpus': 8, 'max_replicas': 2}])
    assert any('already chosen' in e for e in result['errors'])
    result = plan([
        {'name': 'v1', 'source': 'ocp-vsphere-worker', 'vgpu_profile': 'A100-4C', 'accelerator': 'a',
         'provider_spec': {'template': 'same'}, 'gpus': 1, 'max_replicas': 1},
        {'name': 'v2', 'source': 'ocp-vsphere-worker', 'vgpu_profile': 'A100-8C', 'accelerator': 'b',
         'provider_spec': {'template': 'same'}, 'gpus': 1, 'max_replicas': 1}])
    assert any('one MachineSet per vGPU profile' in e for e in result['errors'])


def test_mig_preset_allowed_is_checked_against_configs():
    entry = {'name': 'ocp-gpu-a', 'accelerator': 'nvidia-a100', 'gpus': 8, 'max_replicas': 2,
             'mig_config': 'all-1g.5gb', 'allow_mig_preset': True}
    result = ok(plan([entry], mig_configs=['all-disabled', 'all-1g.5gb']))
    assert by_name(result)['ocp-gpu-a']['node_labels'][names.LABEL_MIG_CONFIG] == 'all-1g.5gb'
    assert any('all-7g' in e for e in plan([dict(entry, mig_config='all-7g')], mig_configs=['all-1g.5gb'])['errors'])


def test_not_a_list():
    assert plan({'name': 'x'})['errors'] == ['autoscaling_machine_sets must be a list, got mapping']


def test_inputs_only_checks_shapes_without_the_cluster():
    entry = {'name': 'anything', 'accelerator': 'nvidia-a100', 'gpus': 8, 'max_replicas': 2}
    assert A.autoscaling_plan([entry], inputs_only=True) == A.autoscaling_plan([], inputs_only=True)
    errors = A.autoscaling_plan([dict(entry, accelerator='nvidia.com/gpu')], inputs_only=True)['errors']
    assert len(errors) == 1 and 'not a GPU type' in errors[0]
    assert A.autoscaling_plan([entry], gpu_limits=[{'type': 'x', 'min': 3, 'max': 1}], inputs_only=True)['errors']
