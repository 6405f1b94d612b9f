# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_smoke_test main() through DRA (mode dra / both) on a fake DRA cluster: check mode plans after reading only,
a run creates and deletes its claim templates, Jobs, fill claims and pods, bad input is refused before anything is
created, and everything is cleaned up when a case fails or a creation is refused."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu.plugins.modules import gpu_smoke_test
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.plans.smoke_dra_fakes import NODES, FakeDra

READS = [('list', 'deviceclasses'), ('list', 'resourceclaimtemplates'), ('list', 'resourceslices'),
         ('list', 'resourceclaims')]


@pytest.fixture
def smoke(run_module):
    def run(args, cluster, check=False):
        args = dict({'nodes': NODES, 'mode': 'dra', 'poll_interval': 0.01, 'expect_output': 'Test PASSED'}, **args)
        return run_module(gpu_smoke_test, args, check=check, core=cluster, batch=cluster, custom=cluster)
    return run


def cases(result, key='dra_cases'):
    return dict(((c.get('kind'), c['resource']), c) for c in result[key])


def test_check_mode_reads_plans_and_creates_nothing(smoke):
    cluster = FakeDra()
    code, result = smoke({'fill': True}, cluster, check=True)
    assert code == 0 and result['changed'] is False, result.get('msg')
    assert cluster.calls == READS and cluster.created == []
    got = cases(result)
    assert got[('class', 't4.example.com')]['job'] == got[('class', 't4.example.com')]['claim_template']
    assert got[('extended-resource', 'nvidia.com/gpu')]['claim_template'] is None
    fills = dict((c['device_class'], c) for c in result['dra_fill_cases'])
    assert len(fills['mig.nvidia.com']['claims']) == 4   # 3 free MIG devices + 1
    assert result['cases'] == [] and result['summary'] == {'planned': 7}
    assert result['table'].startswith('DRA (DeviceClasses') and 'DRA fill test' in result['table']


def test_a_run_passes_every_case_and_leaves_nothing(smoke):
    cluster = FakeDra()
    code, result = smoke({}, cluster)
    assert code == 0, result.get('msg')
    got = cases(result)
    assert set(c['status'] for c in got.values()) == {'passed'}, got
    t4 = got[('class', 't4.example.com')]
    assert (t4['ran_on'], t4['claim'], t4['device']) == ('t4-0', t4['pod'] + '-gpu-x1', 't4-0/gpu-0')
    assert t4['log'].endswith('Done\n') and t4['detail'] == "completed; output has 'Test PASSED'"
    ext = got[('extended-resource', 'example.com/t4')]
    assert ext['claim'] == ext['pod'] + '-extended-resources-x1'
    assert ('resourceclaimtemplates', t4['claim_template']) in cluster.created
    assert cluster.left() == [] and result['changed'] is False and result['summary'] == {'passed': 7}


def test_the_fill_test_one_class_at_a_time(smoke):
    cluster = FakeDra()
    code, result = smoke({'fill': True, 'device_classes': ['mig.nvidia.com', 't4.example.com']}, cluster)
    assert code == 0, result.get('msg')
    fills = dict((c['device_class'], c) for c in result['dra_fill_cases'])
    assert fills['mig.nvidia.com']['status'] == 'passed' and fills['t4.example.com']['status'] == 'passed'
    assert fills['mig.nvidia.com']['detail'] == (
        '3 claims allocated, 3 pods bound, 1 Pending (Unschedulable); expected 3 and 1; the scheduler: 0/4 nodes are '
        'available: 2 cannot allocate all claims.')
    assert fills['t4.example.com']['pending_reason'] == '0/4 nodes are available: 2 cannot allocate all claims.'
    created = [name for plural, name in cluster.created if plural == 'resourceclaims']
    # every claim of the first class was deleted before the second class started
    assert created[:4] == fills['mig.nvidia.com']['claims'] and created[4:6] == fills['t4.example.com']['claims']
    assert cluster.left() == []


def test_bad_input_is_refused_before_anything_is_created(smoke):
    cluster = FakeDra()
    code, result = smoke({'device_classes': ['t4.example.co'], 'claim_templates': ['team-a/one-t5']}, cluster)
    assert code == 1
    assert result['msg'] == (
        'GPU smoke test through DRA: nothing was created; device_classes: DeviceClass t4.example.co does not exist; '
        'did you mean t4.example.com?; claim_templates: ResourceClaimTemplate team-a/one-t5 does not exist; did you '
        'mean team-a/one-t4?')
    assert cluster.created == []
    code, result = smoke({}, FakeDra(served=False))
    assert code == 1 and result['msg'].startswith('the smoke test through DRA needs resource.k8s.io/v1, which this '
                                                  'cluster does not serve')
    code, result = smoke({}, FakeDra(forbidden=True))
    assert code == 1 and 'the account may not' in result['msg']
    code, result = smoke({'load': {'image': 'registry.example.com/burn:1'}}, FakeDra())
    assert code == 1 and result['msg'].startswith('load runs on the resources the device plugin advertises')
    code, result = smoke({'mode': 'device-plugin', 'nodes': []}, FakeDra())
    assert code == 1 and 'no GPU resource to test' in result['msg']


def test_a_refused_creation_and_an_unschedulable_case_fail_and_leave_nothing(smoke):
    cluster = FakeDra(fail_create=('resourceclaimtemplates',))
    code, result = smoke({'device_classes': ['t4.example.com'], 'extended_resources': False}, cluster)
    assert code == 1 and 'could not create ResourceClaimTemplate' in result['msg']
    assert cases(result)[('class', 't4.example.com')]['status'] == 'error'
    assert cluster.left() == [] and cluster.jobs == {}
    cluster = FakeDra(served_ext=False)
    code, result = smoke({'device_classes': ['t4.example.com'], 'stuck_timeout': 1}, cluster)
    assert code == 1
    ext = cases(result)[('extended-resource', 'example.com/t4')]
    assert ext['status'] == 'unschedulable' and ext['detail'] == 'Insufficient example.com/t4'
    assert result['msg'].startswith('GPU smoke test: 1 of 2 cases did not pass: extended-resource test example.com/t4 '
                                    ': unschedulable Insufficient example.com/t4')
    assert cluster.left() == []
    cluster = FakeDra(fail_create=('resourceclaims',))
    code, result = smoke({'device_classes': ['t4.example.com'], 'fill': True}, cluster)
    assert code == 1 and result['dra_fill_cases'][0]['status'] == 'error'
    assert cluster.left() == []


def test_both_modes_together(smoke):
    cluster = FakeDra()
    code, result = smoke({'mode': 'both', 'device_classes': ['t4.example.com'], 'expect_output': ''}, cluster)
    assert code == 0, result.get('msg')
    assert [(c['resource'], c['status']) for c in result['cases']] == [('nvidia.com/gpu', 'passed')]
    assert [c['status'] for c in result['dra_cases']] == ['passed', 'passed']
    assert result['summary'] == {'passed': 3}
    assert result['table'].index('RESOURCE') < result['table'].index('DRA (DeviceClasses')
    assert cluster.left() == []
