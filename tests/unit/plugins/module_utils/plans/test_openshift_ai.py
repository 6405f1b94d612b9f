# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.plans.openshift_ai import (
    advertised_resources, default_display_name, openshift_ai_plan, profile_kind, profile_name)

NS = 'redhat-ods-applications'
GPU_TAINT = {'key': 'nvidia.com/gpu', 'effect': 'NoSchedule'}
DEDICATED = {'key': 'dedicated', 'value': 'gpu', 'effect': 'NoExecute'}
GPU_TOL = {'key': 'nvidia.com/gpu', 'operator': 'Exists', 'effect': 'NoSchedule'}
DEDICATED_TOL = {'key': 'dedicated', 'operator': 'Exists', 'effect': 'NoExecute'}
OURS = {'app.kubernetes.io/managed-by': 'gpuops.gpu'}


def node(name, allocatable):
    return {'metadata': {'name': name}, 'status': {'allocatable': dict(allocatable, cpu='8')}}


NODES = [node('a100-0', {'nvidia.com/gpu': '8'}), node('a100-1', {'nvidia.com/gpu': '4', 'nvidia.com/mig-1g.10gb': '7'}),
         node('cpu-0', {}), node('h100-0', {'nvidia.com/mig-3g.40gb': '0'})]
CONFIG = {'namespace': NS, 'kind': 'accelerator_profile', 'taints': [GPU_TAINT, DEDICATED]}


def profile(name, labels=None, spec=None):
    return {'metadata': {'name': name, 'namespace': NS, 'labels': labels or {}}, 'spec': spec or {}}


def created(plan):
    return dict((a['name'], a['definition']) for a in plan['apply'])


def test_one_accelerator_profile_per_advertised_resource_with_the_taint_tolerations():
    plan = openshift_ai_plan(CONFIG, {'nodes': NODES})
    assert plan['errors'] == [] and plan['changed']
    assert plan['resources'] == {'nvidia.com/gpu': 8, 'nvidia.com/mig-1g.10gb': 7}  # zero counts left out
    defs = created(plan)
    assert sorted(defs) == ['gpuops-gpu', 'gpuops-mig-1g-10gb']
    gpu = defs['gpuops-gpu']
    assert gpu['apiVersion'] == 'dashboard.opendatahub.io/v1' and gpu['kind'] == 'AcceleratorProfile'
    assert gpu['metadata'] == {'name': 'gpuops-gpu', 'namespace': NS, 'labels': OURS}
    assert gpu['spec']['identifier'] == 'nvidia.com/gpu' and gpu['spec']['enabled'] is True
    assert gpu['spec']['displayName'] == 'NVIDIA GPU'
    assert gpu['spec']['tolerations'] == [GPU_TOL, DEDICATED_TOL]
    assert defs['gpuops-mig-1g-10gb']['spec']['displayName'] == 'NVIDIA MIG 1g.10gb'
    assert plan['summary'] == ['create gpuops-gpu (nvidia.com/gpu)', 'create gpuops-mig-1g-10gb (nvidia.com/mig-1g.10gb)']


def test_hardware_profile_carries_names_in_annotations_and_node_scheduling():
    config = dict(CONFIG, kind='hardware_profile', enabled=False, display_names={'nvidia.com/gpu': 'A100'},
                  resources=['nvidia.com/gpu'])
    plan = openshift_ai_plan(config, {'nodes': NODES})
    assert plan['errors'] == []
    hw = created(plan)['gpuops-gpu']
    assert hw['apiVersion'] == 'infrastructure.opendatahub.io/v1' and hw['kind'] == 'HardwareProfile'
    assert hw['metadata']['annotations']['opendatahub.io/display-name'] == 'A100'
    assert hw['metadata']['annotations']['opendatahub.io/disabled'] == 'true'
    assert hw['spec']['identifiers'] == [{'displayName': 'A100', 'identifier': 'nvidia.com/gpu',
                                          'resourceType': 'Accelerator', 'minCount': 1, 'defaultCount': 1,
                                          'maxCount': 8}]
    assert hw['spec']['scheduling'] == {'type': 'Node', 'node': {'tolerations': [GPU_TOL, DEDICATED_TOL]}}


def test_second_run_is_unchanged_and_a_changed_spec_is_an_update():
    first = openshift_ai_plan(CONFIG, {'nodes': NODES})
    existing = [copy.deepcopy(d) for d in created(first).values()]
    for obj in existing:  # what the API server adds does not count
        obj['metadata'].update(uid='x', resourceVersion='1')
    again = openshift_ai_plan(CONFIG, {'nodes': NODES, 'profiles': existing})
    assert [a['action'] for a in again['apply']] == ['unchanged', 'unchanged'] and not again['changed']
    existing[0]['spec']['tolerations'] = [GPU_TOL]
    changed = openshift_ai_plan(CONFIG, {'nodes': NODES, 'profiles': existing})
    assert [a['action'] for a in changed['apply']] == ['update', 'unchanged'] and changed['changed']


def test_ours_no_longer_advertised_is_deleted_foreign_ones_kept():
    profiles = [profile('gpuops-mig-2g-20gb', OURS), profile('team-a-gpu'), profile('gpuops-gpu', OURS)]
    plan = openshift_ai_plan(dict(CONFIG, resources=['nvidia.com/gpu']), {'nodes': NODES, 'profiles': profiles})
    assert plan['errors'] == []
    assert plan['delete'] == ['gpuops-mig-2g-20gb'] and plan['kept'] == ['team-a-gpu']
    assert [a['action'] for a in plan['apply']] == ['update']


def test_absent_deletes_only_ours():
    profiles = [profile('gpuops-gpu', OURS), profile('team-a-gpu', {'app.kubernetes.io/managed-by': 'someone'})]
    plan = openshift_ai_plan(dict(CONFIG, state='absent'), {'profiles': profiles, 'crd_present': True})
    assert plan['errors'] == [] and plan['delete'] == ['gpuops-gpu'] and plan['kept'] == ['team-a-gpu']
    assert plan['apply'] == [] and plan['changed']
    assert not openshift_ai_plan(dict(CONFIG, state='absent'), {'profiles': [], 'crd_present': False})['changed']
    assert openshift_ai_plan(dict(CONFIG, state='absent'), {'crd_present': False})['errors'] == []


def test_name_clash_with_a_foreign_profile_fails_and_writes_nothing():
    plan = openshift_ai_plan(CONFIG, {'nodes': NODES, 'profiles': [profile('gpuops-gpu')]})
    assert len(plan['errors']) == 1 and 'not managed by gpuops.gpu' in plan['errors'][0]
    assert 'openshift_ai_name_prefix' in plan['errors'][0]
    assert plan['apply'] == [] and plan['delete'] == [] and not plan['changed']


@pytest.mark.parametrize('change, cluster, expected', [
    ({'kind': 'accelerator'}, None, 'openshift_ai_kind must be one of accelerator_profile, hardware_profile, '
                                    'hardware_profile_v1alpha1'),
    ({'state': 'gone'}, None, 'openshift_ai_state must be one of present, absent'),
    ({'namespace': 'Bad_NS'}, None, 'openshift_ai_namespace must be a namespace name'),
    ({'name_prefix': 'Gpu Ops'}, None, 'openshift_ai_name_prefix must be lowercase'),
    ({'enabled': 'yes'}, None, 'openshift_ai_enabled must be true or false'),
    ({'display_names': {'gpu': 'x'}}, None, "openshift_ai_display_names: 'gpu' is not a GPU resource"),
    ({'resources': ['amd.com/gpu']}, None, 'openshift_ai_resources[0] must be a GPU resource'),
    ({'resources': ['nvidia.com/mig-7g.80gb']}, None, 'no node advertises nvidia.com/mig-7g.80gb'),
    ({'taints': [{'key': 'nvidia.com/gpu', 'effect': 'NoSchedul'}]}, None, 'openshift_ai_taints[0].effect must be'),
    ({'tolerations': [{'key': 'x', 'operator': 'In'}]}, None, 'openshift_ai_tolerations[0].operator must be'),
    ({}, {'nodes': [node('cpu-0', {})]}, 'no node advertises a GPU resource'),
    ({}, {'nodes': NODES, 'crd_present': False}, 'does not serve dashboard.opendatahub.io/v1 AcceleratorProfile'),
])
def test_bad_input_is_reported_before_any_write(change, cluster, expected):
    plan = openshift_ai_plan(dict(CONFIG, **change), cluster if cluster is not None else {'nodes': NODES})
    assert any(expected in e for e in plan['errors']), plan['errors']
    assert plan['apply'] == [] and plan['delete'] == []


def test_helpers():
    assert profile_name('gpuops', 'nvidia.com/gpu.shared') == 'gpuops-gpu-shared'
    assert default_display_name('nvidia.com/gpu.shared') == 'NVIDIA GPU (shared)'
    assert advertised_resources([node('a', {'nvidia.com/gpu': '2'}), node('b', {'nvidia.com/gpu': '4'})]) == \
        {'nvidia.com/gpu': 4}
    assert profile_kind('hardware_profile')['crd'] == 'hardwareprofiles.infrastructure.opendatahub.io'
    with pytest.raises(ValueError):
        profile_kind('nope')


def test_auto_picks_hardware_profile_v1_where_the_cluster_serves_it():
    """Open Data Hub / OpenShift AI 3 serve infrastructure.opendatahub.io/v1 HardwareProfile and refuse new
    AcceleratorProfiles; 2.x serve AcceleratorProfile (and HardwareProfile only in v1alpha1)."""
    assert profile_kind('auto', True) == {'option': 'hardware_profile', 'api_version': 'infrastructure.opendatahub.io/v1',
                                          'kind': 'HardwareProfile',
                                          'crd': 'hardwareprofiles.infrastructure.opendatahub.io'}
    assert profile_kind('auto', False)['option'] == 'accelerator_profile'
    assert profile_kind('hardware_profile', False)['api_version'] == 'infrastructure.opendatahub.io/v1', 'asked for'
    assert profile_kind('hardware_profile_v1alpha1')['api_version'] == 'infrastructure.opendatahub.io/v1alpha1'
    with pytest.raises(ValueError, match='auto needs to know'):
        profile_kind('auto')
    config = dict(CONFIG, kind='hardware_profile_v1alpha1')
    hw = openshift_ai_plan(config, {'nodes': NODES})['apply'][0]['definition']
    assert hw['apiVersion'] == 'infrastructure.opendatahub.io/v1alpha1' and 'identifiers' in hw['spec']
    assert openshift_ai_plan('x')['errors'] == ['the settings must be a mapping, got string']
