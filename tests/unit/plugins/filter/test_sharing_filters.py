# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest
import yaml

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.gpu.plugins.filter.sharing import FilterModule

FILTERS = FilterModule().filters()

TS_10 = {'version': 'v1', 'sharing': {'timeSlicing': {'resources': [{'name': 'nvidia.com/gpu', 'replicas': 10}]}}}
MPS_10_RENAMED = {'version': 'v1', 'sharing': {'mps': {'renameByDefault': True, 'resources': [
    {'name': 'nvidia.com/gpu', 'replicas': 10}]}}}
GPU = {'key': 'nvidia.com/gpu', 'operator': 'Exists', 'effect': 'NoSchedule'}


def test_filter_names():
    assert sorted(FILTERS) == ['merge_tolerations', 'sharing_capacity', 'sharing_config_errors',
                               'sharing_mps_root_errors', 'sharing_profile_errors', 'sharing_profiles_data']


def test_sharing_mps_root_errors():
    assert FILTERS['sharing_mps_root_errors']('/run/nvidia/mps') == []
    assert FILTERS['sharing_mps_root_errors']('/run/nvidia/../etc')[0].startswith('sharing_mps_root must be '
                                                                                  '/run/nvidia/mps')


def test_sharing_config_errors_valid_and_invalid():
    errors_filter = FILTERS['sharing_config_errors']
    assert errors_filter(TS_10) == []
    assert errors_filter({'sharing': {'timeslicing': {}}}) == [
        "sharing: unknown key 'timeslicing'; did you mean 'timeSlicing'? (known keys: timeSlicing, mps)"]


def test_sharing_config_errors_positional_arguments():
    errors = FILTERS['sharing_config_errors'](MPS_10_RENAMED, 'mixed')
    assert len(errors) == 1 and 'cannot be used with MIG strategy mixed' in errors[0]
    mps_20 = {'sharing': {'mps': {'resources': [{'name': 'nvidia.com/gpu', 'replicas': 20}]}}}
    assert FILTERS['sharing_config_errors'](mps_20, None, '7.0') == [
        'sharing.mps.resources[0].replicas 20 exceeds the MPS limit of 16 clients per GPU '
        '(compute capability < 7.5); lower replicas']


def test_sharing_capacity():
    capacity = FILTERS['sharing_capacity']
    assert capacity(TS_10, gpus=8) == {'nvidia.com/gpu': 80}
    assert capacity(MPS_10_RENAMED, gpus=8) == {'nvidia.com/gpu.shared': 80}
    mig_ts = {'sharing': {'timeSlicing': {'resources': [{'name': 'nvidia.com/mig-1g.5gb', 'replicas': 4}]}}}
    assert capacity(mig_ts, strategy='mixed', mig_resources={'nvidia.com/mig-1g.5gb': 14,
                                                             'nvidia.com/mig-2g.10gb': 6}) == {
        'nvidia.com/mig-1g.5gb': 56, 'nvidia.com/mig-2g.10gb': 6}


@pytest.mark.parametrize('config, kwargs, fragment', [
    ({'sharing': {'timeSlicing': {'resources': [{'name': 'nvidia.com/gpu', 'replicas': 1}]}}}, {'gpus': 1},
     'replicas must be an integer >= 2'),
    (TS_10, {'gpus': -1}, 'gpus must be an integer >= 0'),
    ('version: v1', {}, 'must be a mapping'),
])
def test_sharing_capacity_raises_filter_error(config, kwargs, fragment):
    with pytest.raises(AnsibleFilterError, match='sharing_capacity: .*' + fragment):
        FILTERS['sharing_capacity'](config, **kwargs)


def test_merge_tolerations_keeps_gpu_and_dedupes():
    merge = FILTERS['merge_tolerations']
    dedicated = {'key': 'dedicated', 'operator': 'Equal', 'value': 'gpu', 'effect': 'NoSchedule'}
    assert merge([dedicated], [dedicated]) == [dedicated, GPU]
    assert merge([GPU], [dedicated]) == [GPU, dedicated]
    assert merge([dedicated], None, keep_gpu=False) == [dedicated]


def test_merge_tolerations_raises_filter_error():
    with pytest.raises(AnsibleFilterError, match='merge_tolerations: .*operator Exists must not set value'):
        FILTERS['merge_tolerations']([], [{'key': 'nvidia.com/gpu', 'operator': 'Exists', 'value': 'present'}])


def test_sharing_profile_errors_and_reserved_names():
    errors = FILTERS['sharing_profile_errors']({'none': {}, 'ts': {'sharing': {'timeSlicing': {'resources': [
        {'name': 'nvidia.com/gpu', 'replicas': 1}]}}}}, 'single', 'ts')
    assert len(errors) == 2 and 'replicas' in errors[0] and "'none' is reserved" in errors[1]
    assert FILTERS['sharing_profile_errors']({'ts-10': TS_10}, 'single', '') == []
    assert "default profile 'x'" in FILTERS['sharing_profile_errors']({'ts-10': TS_10}, None, 'x')[0]


def test_sharing_profiles_data_is_byte_stable():
    one = FILTERS['sharing_profiles_data']({'ts-10': TS_10, 'mps': MPS_10_RENAMED, 'plain': {}})
    reordered = {'plain': {}, 'mps': {'sharing': {'mps': {'resources': [{'replicas': 10, 'name': 'nvidia.com/gpu'}],
                                                          'renameByDefault': True}}, 'version': 'v1'},
                 'ts-10': TS_10}
    assert one == FILTERS['sharing_profiles_data'](reordered)
    assert one['plain'] == "version: 'v1'\n"
    assert yaml.safe_load(one['mps']) == MPS_10_RENAMED
    with pytest.raises(AnsibleFilterError, match='sharing_profiles_data'):
        FILTERS['sharing_profiles_data']({'x': {'sharing': {'mps': {}, 'timeSlicing': {}}}})
