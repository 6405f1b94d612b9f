# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests for the MIG filters (plugins/filter/mig.py); their sidecar docs: test_sidecar_docs.py."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.gpu.plugins.filter import mig as mig_filters

FILTERS = mig_filters.FilterModule().filters()
A100 = 'NVIDIA-A100-SXM4-40GB'


def test_filter_names():
    assert sorted(FILTERS) == ['mig_capacity', 'mig_claim_demand', 'mig_geometry_errors', 'mig_parted_errors',
                               'mig_pending_demand', 'mig_plan', 'mig_profiles', 'mig_quota_demand']


def test_mig_geometry_errors():
    assert FILTERS['mig_geometry_errors']({'1g.5gb': 2, '2g.10gb': 1, '3g.20gb': 1}, A100) == []
    errors = FILTERS['mig_geometry_errors']({'2g.5gb': 1}, A100)
    assert errors == ["profile '2g.5gb' is not valid for A100-SXM4-40GB; valid: 1g.5gb, 1g.5gb+me, 1g.10gb, "
                      "2g.10gb, 3g.20gb, 4g.20gb, 7g.40gb"]


def test_mig_geometry_errors_overrides_keyword():
    overrides = {'A100-SXM4-40GB': {'renames': {'7g.40gb': '7g.39gb'}}}
    assert FILTERS['mig_geometry_errors']({'7g.39gb': 1}, A100, overrides=overrides) == []


def test_mig_capacity():
    assert FILTERS['mig_capacity']({'1g.5gb': 2, '2g.10gb': 1, '3g.20gb': 1}, A100, strategy='mixed', gpus=8) == {
        'nvidia.com/mig-1g.5gb': 16, 'nvidia.com/mig-2g.10gb': 8, 'nvidia.com/mig-3g.20gb': 8}
    assert FILTERS['mig_capacity']({'1g.5gb+me': 1}, A100) == {'nvidia.com/mig-1g.5gb.me': 1}
    assert FILTERS['mig_capacity']({'1g.5gb': 7}, A100, 'single', 2) == {'nvidia.com/gpu': 14}
    assert FILTERS['mig_capacity']({}, 'Tesla-T4', gpus=4) == {'nvidia.com/gpu': 4}


@pytest.mark.parametrize('args,kwargs,fragment', [
    (({'1g.5gb': 2, '2g.10gb': 1}, A100), {'strategy': 'single'}, "strategy 'single' needs one MIG profile"),
    (({'3g.20gb': 2, '1g.5gb': 1}, A100), {}, 'does not fit on one A100-SXM4-40GB'),
    (({}, 'V100'), {}, "unknown GPU product 'V100'"),
    (({}, A100), {'gpus': 0}, 'gpus must be a positive integer'),
])
def test_mig_capacity_errors_are_filter_errors(args, kwargs, fragment):
    with pytest.raises(AnsibleFilterError) as exc:
        FILTERS['mig_capacity'](*args, **kwargs)
    assert fragment in str(exc.value)


def test_mig_profiles():
    entry = FILTERS['mig_profiles'](A100)
    assert entry['product'] == 'A100-SXM4-40GB'
    assert entry['profiles']['3g.20gb'] == {'gi_id': 9, 'size': 4, 'placements': [0, 4], 'max': 2,
                                            'compute_slices': 3, 'memory_mib': 19968}
    assert FILTERS['mig_profiles']('Tesla-T4')['mig_capable'] is False
    assert FILTERS['mig_profiles']('NVIDIA-A100-SXM4-40GB-MIG-1g.5gb-SHARED')['product'] == 'A100-SXM4-40GB'


def test_mig_profiles_overrides():
    entry = FILTERS['mig_profiles']('NVIDIA-A40', overrides={'NVIDIA-A40': {'memory_mib': 46068}})
    assert entry['memory_mib'] == 46068 and entry['mig_capable'] is False


@pytest.mark.parametrize('product,overrides,fragment', [
    ('NVIDIA-V100', None, "unknown GPU product 'NVIDIA-V100'; known: A10, "),
    (None, None, 'GPU product must be a string'),
    (A100, {'A100-SXM4-40GB': {'bogus': 1}}, "overrides for 'A100-SXM4-40GB': unknown key 'bogus'"),
])
def test_mig_profiles_errors(product, overrides, fragment):
    with pytest.raises(AnsibleFilterError) as exc:
        FILTERS['mig_profiles'](product, overrides=overrides)
    assert fragment in str(exc.value)


def test_mig_parted_errors():
    doc = {'version': 'v1', 'mig-configs': {
        'good': [{'devices': 'all', 'mig-enabled': True, 'mig-devices': {'1g.5gb': 7}}],
        'bad': [{'devices': 'all', 'mig-enabled': True, 'mig-devices': {'3g.20gb': 3}}],
    }}
    assert FILTERS['mig_parted_errors'](doc, {'good': [A100]}) == []
    assert FILTERS['mig_parted_errors'](doc, {'bad': [A100]}) == [
        'mig-configs.bad[0].mig-devices on A100-SXM4-40GB: 3g.20gb: 3 requested, at most 2 fit on one '
        'A100-SXM4-40GB']
    assert FILTERS['mig_parted_errors']({'version': 'v1'}) == [
        "'mig-configs' must be a non-empty mapping of config name -> entries"]


def test_mig_plan_takes_the_gpu_nodes_info_result_and_adds_the_table():
    document = {'version': 'v1', 'mig-configs': {
        'all-disabled': [{'devices': 'all', 'mig-enabled': False}],
        'all-1g.5gb': [{'devices': 'all', 'mig-enabled': True, 'mig-devices': {'1g.5gb': 7}}]}}
    nodes = [{'name': 'a%d' % i, 'product': A100, 'count': 2, 'mig_config': 'all-disabled', 'mig_state': 'success',
              'requested': {}, 'gpu_pods': [], 'allocatable': {'nvidia.com/gpu': 2}} for i in range(3)]
    plan = FILTERS['mig_plan']({'nodes': nodes, 'summary': {}}, document, {'nvidia.com/mig-1g.5gb': 20})
    assert plan['errors'] == [] and plan['assignments'] == [{'nodes': ['a0', 'a1'], 'config': 'all-1g.5gb'}]
    assert plan['table'][0].split() == ['NODE', 'FROM', '->', 'TO', 'CAPACITY', 'DELTA', 'PODS', 'AFFECTED']
    assert FILTERS['mig_plan'](nodes, document, {'nvidia.com/gpu': 'x'})['table'] == [
        'ERROR: demand: nvidia.com/gpu must be a non-negative integer, got \'x\'']


def test_mig_pending_demand_takes_the_gpu_nodes_info_result():
    pod = {'metadata': {'namespace': 'a', 'name': 'p'}, 'status': {'phase': 'Pending'},
           'spec': {'containers': [{'name': 'c', 'resources': {'limits': {'nvidia.com/mig-1g.5gb': 2}}}]}}
    info = {'nodes': [{'name': 'n', 'requested': {'nvidia.com/mig-1g.5gb': 1}}]}
    assert FILTERS['mig_pending_demand']([pod], info) == {'demand': {'nvidia.com/mig-1g.5gb': 3}, 'pending': ['a/p']}
    with pytest.raises(AnsibleFilterError, match='pods and nodes must be lists'):
        FILTERS['mig_pending_demand']({'resources': []}, info)


def test_mig_claim_demand_takes_the_k8s_info_and_gpu_nodes_info_results():
    cel = "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].profile == '1g.5gb'"
    claim = {'metadata': {'namespace': 'a', 'name': 'p-gpu', 'ownerReferences': [{'kind': 'Pod', 'name': 'p'}]},
             'spec': {'devices': {'requests': [{'name': 'gpu', 'exactly': {'deviceClassName': 'mig.nvidia.com',
                                                                           'count': 2}}]}}}
    mig_class = {'metadata': {'name': 'mig.nvidia.com'}, 'spec': {'selectors': [{'cel': {'expression': cel}}]}}
    pod = {'metadata': {'namespace': 'a', 'name': 'p'}, 'status': {'phase': 'Pending'}, 'spec': {}}
    info = {'nodes': [{'name': 'n', 'requested': {}, 'gpu_pods': [], 'dra_devices': [
        {'type': 'mig', 'profile': '1g.5gb', 'allocated': True, 'pods': ['a/q']}]}]}
    result = FILTERS['mig_claim_demand']({'resources': [claim]}, info, classes=[mig_class], pods=[pod])
    assert result == {'demand': {'nvidia.com/mig-1g.5gb': 2}, 'claims': ['a/p-gpu'], 'unread': [], 'nodes': [
        dict(info['nodes'][0], requested={'nvidia.com/mig-1g.5gb': 1}, gpu_pods=['a/q'])]}
    assert FILTERS['mig_pending_demand']([pod], result['nodes'], claimed=result['demand'])['demand'] == {
        'nvidia.com/mig-1g.5gb': 3}
    assert FILTERS['mig_claim_demand']([], info)['demand'] == {}
    with pytest.raises(AnsibleFilterError, match='must be lists'):
        FILTERS['mig_claim_demand']([claim], info, classes='mig.nvidia.com')


def test_mig_quota_demand_takes_the_k8s_info_result():
    quota = {'metadata': {'namespace': 'a', 'name': 'q'}, 'spec': {'hard': {'requests.nvidia.com/mig-1g.5gb': '3'}}}
    assert FILTERS['mig_quota_demand']({'resources': [quota]}) == {
        'demand': {'nvidia.com/mig-1g.5gb': 3}, 'quotas': ['a/q'], 'errors': []}
    assert FILTERS['mig_quota_demand']([quota], declared={'nvidia.com/mig-1g.5gb': 5})['demand'] == {
        'nvidia.com/mig-1g.5gb': 5}
    with pytest.raises(AnsibleFilterError, match='must be the ResourceQuotas'):
        FILTERS['mig_quota_demand']('team-a')
    with pytest.raises(AnsibleFilterError, match='declared must be a demand'):
        FILTERS['mig_quota_demand']([quota], declared=['x'])
