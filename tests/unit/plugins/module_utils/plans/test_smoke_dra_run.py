# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""plans/smoke_dra_run.py: the objects of the smoke test through DRA (claim templates, Jobs, fill claims and pods),
how a case ended, the tables."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.tolerations import GPU_TOLERATION
from ansible_collections.gpuops.gpu.plugins.module_utils.plans import smoke as S
from ansible_collections.gpuops.gpu.plugins.module_utils.plans import smoke_dra as D
from ansible_collections.gpuops.gpu.plugins.module_utils.plans import smoke_dra_run as R
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.smoke_fill import FILL_LABEL
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.plans.smoke_dra_fakes import (
    CLAIMS, CLASSES, NODES, SLICES, TEMPLATES)

PLAN = D.plan(CLASSES, TEMPLATES, SLICES, CLAIMS, NODES, tolerations=[GPU_TOLERATION], fill=True)
CASES = dict(((c['kind'], c['resource']), c) for c in PLAN['cases'])
LABELS = {'app.kubernetes.io/name': 'gpuops-smoke-test', 'app.kubernetes.io/managed-by': 'gpuops.gpu',
          'gpuops.gpu/smoke-test': 'run-1'}


def test_a_class_case_runs_one_device_through_a_claim_template():
    case = CASES[('class', 't4.example.com')]
    template = R.claim_template_manifest(case, 'smoke', 'run-1')
    assert template['metadata']['name'] == R.object_name(case) == 'gpuops-dra-2-t4-example-com-%s' % (
        template['metadata']['name'].rsplit('-', 1)[-1])
    assert template['metadata']['labels'] == LABELS == template['spec']['metadata']['labels']  # the claims made too
    assert template['spec']['spec'] == {'devices': {'requests': [{'name': 'gpu', 'exactly': {
        'deviceClassName': 't4.example.com', 'allocationMode': 'ExactCount', 'count': 1}}]}}
    job = R.job_manifest(case, 'smoke', 'cuda:1', 'run-1', tolerations=[GPU_TOLERATION], node_selector={'pool': 'a'},
                         active_deadline_seconds=100)
    pod = job['spec']['template']['spec']
    assert job['metadata']['name'] == template['metadata']['name'] and len(job['metadata']['name']) <= 52
    assert pod['containers'][0]['resources'] == {'claims': [{'name': 'gpu'}]}
    assert pod['resourceClaims'] == [{'name': 'gpu', 'resourceClaimTemplateName': template['metadata']['name']}]
    assert pod['affinity'] == {'nodeAffinity': {'requiredDuringSchedulingIgnoredDuringExecution': {
        'nodeSelectorTerms': [{'matchFields': [{'key': 'metadata.name', 'operator': 'In', 'values': ['t4-0']}]}]}}}
    assert pod['tolerations'] == [GPU_TOLERATION] and pod['nodeSelector'] == {'pool': 'a'}
    assert job['spec']['template']['metadata']['annotations'] == {
        'gpuops.gpu/resource': 't4.example.com', 'gpuops.gpu/device-class': 't4.example.com',
        'gpuops.gpu/dra-case': 'class'}


def test_a_template_case_copies_the_claim_spec_and_an_extended_resource_case_asks_in_limits():
    case = CASES[('template', 'team-a/two-migs')]
    template = R.claim_template_manifest(case, 'smoke', 'run-1')
    assert template['spec']['spec'] == TEMPLATES[2]['spec']['spec']
    assert template['spec']['spec'] is not case['claim_spec']
    case = CASES[('extended-resource', 'nvidia.com/gpu')]
    job = R.job_manifest(case, 'smoke', 'cuda:1', 'run-1')
    pod = job['spec']['template']['spec']
    assert pod['containers'][0]['resources'] == {'limits': {'nvidia.com/gpu': 1}} and 'resourceClaims' not in pod
    assert [t['matchFields'][0]['values'] for t in pod['affinity']['nodeAffinity'][
        'requiredDuringSchedulingIgnoredDuringExecution']['nodeSelectorTerms']] == [['t4-0']]
    assert R.node_affinity([]) is None
    unpinned = dict(CASES[('class', 'gpu.nvidia.com')], nodes=[])
    assert 'affinity' not in R.job_manifest(unpinned, 'smoke', 'cuda:1', 'run-1')['spec']['template']['spec']


def test_fill_objects_one_claim_and_one_pod_each():
    fill = dict((c['device_class'], c) for c in PLAN['fill_cases'])['gpu.nvidia.com']
    pairs = R.fill_objects(fill, 'smoke', 'cuda:1', 'run-1-fill', tolerations=[GPU_TOLERATION],
                           image_pull_secrets=['mirror'], security_context={'privileged': True})
    assert len(pairs) == fill['expect_running'] + 1 == 3
    claim, pod = pairs[-1]
    assert claim['kind'] == 'ResourceClaim' and claim['metadata']['name'] == pod['metadata']['name']
    assert claim['metadata']['name'].startswith('gpuops-dra-fill-0-gpu-nvidia-com-') and claim['metadata'][
        'name'].endswith('-2')
    assert claim['metadata']['labels'][FILL_LABEL] == '0' and claim['spec'] == D.class_claim_spec('gpu.nvidia.com')
    spec = pod['spec']
    assert spec['resourceClaims'] == [{'name': 'gpu', 'resourceClaimName': claim['metadata']['name']}]
    assert spec['containers'][0]['command'] == ['sleep', '3600']
    assert spec['containers'][0]['securityContext'] == {'privileged': True}
    assert spec['imagePullSecrets'] == [{'name': 'mirror'}] and spec['restartPolicy'] == 'Never'
    assert [t['matchFields'][0]['values'][0] for t in spec['affinity']['nodeAffinity'][
        'requiredDuringSchedulingIgnoredDuringExecution']['nodeSelectorTerms']] == ['a100-0', 't4-0']


def pod(name, node=None, phase=None, message=None, claims=None, extended=None):
    status = {'phase': phase or ('Running' if node else 'Pending')}
    if message:
        status['conditions'] = [{'type': 'PodScheduled', 'status': 'False', 'reason': 'Unschedulable',
                                 'message': message}]
    if claims:
        status['resourceClaimStatuses'] = [{'name': 'gpu', 'resourceClaimName': claims}]
    if extended:
        status['extendedResourceClaimStatus'] = {'resourceClaimName': extended}
    return {'metadata': {'name': name, 'labels': {FILL_LABEL: '0'}}, 'spec': {'nodeName': node}, 'status': status}


def allocated(name, device=None):
    status = {'allocation': {'devices': {'results': [{'pool': 't4-0', 'device': device}]}}} if device else {}
    return {'metadata': {'name': name}, 'status': status}


def test_a_completed_case_passes_only_through_its_claim():
    case = dict(CASES[('class', 't4.example.com')])
    assert R.judge(case, S.PASSED, 'completed', pod('p', 't4-0', 'Succeeded', claims='p-gpu-x')) == (
        S.PASSED, 'completed')
    assert case['claim'] == 'p-gpu-x'
    assert R.judge(dict(case), S.PASSED, 'completed', pod('p', 't4-0', 'Succeeded')) == (
        S.FAILED, 'completed, but no ResourceClaim in its status')
    ext = dict(CASES[('extended-resource', 'nvidia.com/gpu')])
    assert R.judge(ext, S.PASSED, 'completed', pod('p', 't4-0', 'Succeeded')) == (
        S.FAILED, 'completed, but no extendedResourceClaimStatus: nvidia.com/gpu was not served through DeviceClass '
                  'gpu.nvidia.com')
    assert R.judge(ext, S.PASSED, 'completed', pod('p', 't4-0', extended='p-extended-resources-x'))[0] == S.PASSED
    assert R.judge(ext, S.UNSCHEDULABLE, 'no device', None) == (S.UNSCHEDULABLE, 'no device')
    assert R.allocated_devices(allocated('c', 'gpu-0')) == ['t4-0/gpu-0'] and R.allocated_devices(None) == []


def test_the_fill_case_settles_on_the_schedulers_word():
    case = {'expect_running': 2, 'expect_pending': 1}
    why = '0/4 nodes are available: 2 cannot allocate all claims.'
    pods = [pod('a', 't4-0'), pod('b', 't4-1'), pod('c', message=why)]
    claims = [allocated('a', 'gpu-0'), allocated('b', 'gpu-0'), allocated('c')]
    status, detail = R.classify_fill(case, pods, claims)
    assert status == S.PASSED and case['pending_reason'] == why
    assert detail == ('2 claims allocated, 2 pods bound, 1 Pending (Unschedulable); expected 2 and 1; the scheduler: '
                      + why)
    assert R.classify_fill(case, pods[:2] + [pod('c')], claims)[0] is None  # not judged by the scheduler yet
    assert R.classify_fill(case, pods[:2] + [pod('c')], claims, stuck=True)[0] == S.FAILED
    assert R.classify_fill(case, pods, claims[:1] + [allocated('b')], stuck=False)[0] is None
    status, detail = R.classify_fill(case, pods[:2] + [pod('c', 't4-2')], claims)
    assert status == S.FAILED and detail.endswith('the scheduler allocated more devices than the class had free')
    status, detail = R.classify_fill(case, pods[:2] + [pod('c', 't4-2', 'Succeeded')], claims)
    assert status == S.FAILED and '1 fill pods ended and freed their devices' in detail


def test_tables():
    run = [dict(c) for c in PLAN['cases']]
    run[0].update(status=S.PASSED, ran_on='t4-0', seconds=3.2, detail="completed; output has 'Test PASSED'")
    fills = [dict(c) for c in PLAN['fill_cases']]
    fills[0].update(status=S.PASSED, detail='2 claims allocated')
    fills.append(dict(fills[0], device_class='odd.example.com', status='skipped', detail=None,
                      reason='free devices not counted'))
    text = R.table(run, fills, fill=True, extra=1)
    lines = text.splitlines()
    assert lines[0] == 'DRA (DeviceClasses, ResourceClaimTemplates, extended resources through DRA)'
    assert lines[1].split() == ['KIND', 'NAME', 'CLASS', 'NODES', 'FREE', 'RESULT', 'RAN', 'ON', 'SECS', 'DETAIL']
    assert lines[2].split()[:8] == ['class', 'gpu.nvidia.com', 'gpu.nvidia.com', '2', '2', 'PASSED', 't4-0', '3']
    assert [line for line in lines if line.startswith('template           team-a/one-t4')][0].split()[4] == '-'
    uncounted = R.render(R.COLUMNS, [dict(run[0], countable=False)])
    assert uncounted.splitlines()[1].split()[4] == '?'
    assert '7 cases: passed 1, planned 6' in text
    assert 'DRA fill test (per DeviceClass: 1 extra claim(s) must stay unallocated)' in text
    assert lines[-1].split()[:7] == ['odd.example.com', '2', '4', '1', '-', 'SKIPPED', 'free']
    assert R.table([], [], fill=True).endswith('no DeviceClass to fill')
    assert 'fill test' not in R.table(run)
