# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests for module_utils.gpu.sharing_render: capacity, GFD labels and the rendered ConfigMap."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy

import pytest
import yaml

from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.sharing_checks import sharing_config_errors
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.sharing_render import (
    expected_labels, render_config, render_profiles, sanitise_product, sharing_capacity)
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.gpu.sharing_data import (
    MIG_MIXED_TS, MPS_10_RENAMED, PROFILES, TS_A100, TS_T4, _ts)


# --- capacity -------------------------------------------------------------------------------

@pytest.mark.parametrize('config, kwargs, expected', [
    (TS_A100, {'gpus': 8}, {'nvidia.com/gpu': 80}),
    (TS_T4, {'gpus': 1}, {'nvidia.com/gpu': 4}),
    (TS_T4, {}, {'nvidia.com/gpu': 4}),
    (TS_T4, {'gpus': 3}, {'nvidia.com/gpu': 12}),
    (MPS_10_RENAMED, {'gpus': 8}, {'nvidia.com/gpu.shared': 80}),
    (_ts(10, renameByDefault=True), {'gpus': 8}, {'nvidia.com/gpu.shared': 80}),
    ({}, {'gpus': 4}, {'nvidia.com/gpu': 4}),
    ({}, {'gpus': 0}, {}),
    (_ts(4), {'gpus': 7, 'strategy': 'single'}, {'nvidia.com/gpu': 28}),
    (MIG_MIXED_TS, {'mig_resources': {'nvidia.com/mig-1g.5gb': 14}}, {'nvidia.com/mig-1g.5gb': 28}),
    (MIG_MIXED_TS,
     {'gpus': 2, 'mig_resources': {'nvidia.com/mig-3g.20gb': 2, 'nvidia.com/mig-7g.40gb': 1,
                                   'nvidia.com/mig-4g.20gb': 1, 'nvidia.com/mig-2g.10gb': 0}},
     {'nvidia.com/gpu': 4, 'nvidia.com/mig-3g.20gb': 6, 'nvidia.com/mig-7g.40gb': 7, 'nvidia.com/mig-4g.20gb': 1}),
    (_ts(4, name='nvidia.com/mig-1g.5gb', renameByDefault=True),
     {'strategy': 'mixed', 'mig_resources': {'nvidia.com/mig-1g.5gb': 7, 'nvidia.com/mig-2g.10gb': 3}},
     {'nvidia.com/mig-1g.5gb.shared': 28, 'nvidia.com/mig-2g.10gb': 3}),
    ({}, {'strategy': 'mixed', 'mig_resources': {'nvidia.com/mig-1g.5gb': 7}}, {'nvidia.com/mig-1g.5gb': 7}),
])
def test_sharing_capacity(config, kwargs, expected):
    assert sharing_capacity(config, **kwargs) == expected


@pytest.mark.parametrize('config, kwargs, fragment', [
    (_ts(1), {'gpus': 8}, 'replicas must be an integer >= 2'),
    (TS_T4, {'gpus': -1}, 'gpus must be an integer >= 0'),
    (TS_T4, {'gpus': '8'}, 'gpus must be an integer >= 0'),
    (TS_T4, {'mig_resources': {'nvidia.com/mig-1g.5gb': 7}}, 'apply only with MIG strategy mixed'),
    (MIG_MIXED_TS, {'mig_resources': {'nvidia.com/gpu': 7}}, 'is not a MIG resource'),
    (MIG_MIXED_TS, {'mig_resources': {'nvidia.com/mig-1g.5gb': -1}}, 'must be an integer >= 0'),
    (MIG_MIXED_TS, {'mig_resources': [('nvidia.com/mig-1g.5gb', 7)]}, 'mig_resources must be a mapping'),
    (MIG_MIXED_TS, {'strategy': 'single'}, "MIG_STRATEGY wins"),
])
def test_sharing_capacity_rejects_invalid_input(config, kwargs, fragment):
    with pytest.raises(ValueError, match=fragment):
        sharing_capacity(config, **kwargs)


# --- labels ---------------------------------------------------------------------------------

def test_labels_time_slicing_on_t4():
    assert expected_labels(TS_T4, 'Tesla T4', 1) == {
        'nvidia.com/gpu.product': 'Tesla-T4-SHARED',
        'nvidia.com/gpu.count': '1',
        'nvidia.com/gpu.replicas': '4',
        'nvidia.com/gpu.sharing-strategy': 'time-slicing',
        'nvidia.com/mps.capable': 'false',
    }


def test_labels_mps_renamed_has_no_shared_suffix():
    assert expected_labels(MPS_10_RENAMED, 'NVIDIA A100-SXM4-40GB', 8) == {
        'nvidia.com/gpu.product': 'NVIDIA-A100-SXM4-40GB',
        'nvidia.com/gpu.count': '8',
        'nvidia.com/gpu.replicas': '10',
        'nvidia.com/gpu.sharing-strategy': 'mps',
        'nvidia.com/mps.capable': 'true',
    }


def test_labels_unshared():
    labels = expected_labels({}, 'Tesla-T4', 2)
    assert labels['nvidia.com/gpu.product'] == 'Tesla-T4'
    assert labels['nvidia.com/gpu.replicas'] == '1'
    assert labels['nvidia.com/gpu.sharing-strategy'] == 'none'
    assert labels['nvidia.com/gpu.count'] == '2'


def test_labels_accept_current_shared_label_without_doubling_suffix():
    assert expected_labels(TS_T4, 'Tesla-T4-SHARED', 1)['nvidia.com/gpu.product'] == 'Tesla-T4-SHARED'
    assert expected_labels({}, 'Tesla-T4-SHARED', 1)['nvidia.com/gpu.product'] == 'Tesla-T4'


def test_labels_single_strategy_mig_profile():
    labels = expected_labels(_ts(4), 'NVIDIA A100-SXM4-40GB', 7, mig_profile='1g.5gb', mig_strategy='single')
    assert labels['nvidia.com/gpu.product'] == 'NVIDIA-A100-SXM4-40GB-MIG-1g.5gb-SHARED'
    assert labels['nvidia.com/gpu.count'] == '7'


def test_labels_mixed_strategy_mig_resource():
    labels = expected_labels(MIG_MIXED_TS, 'NVIDIA A100-SXM4-40GB', 2, resource='nvidia.com/mig-3g.20gb')
    assert labels == {
        'nvidia.com/mig-3g.20gb.product': 'NVIDIA-A100-SXM4-40GB-MIG-3g.20gb-SHARED',
        'nvidia.com/mig-3g.20gb.count': '2',
        'nvidia.com/mig-3g.20gb.replicas': '3',
        'nvidia.com/mig-3g.20gb.sharing-strategy': 'time-slicing',
        'nvidia.com/mps.capable': 'false',
    }


def test_labels_unshared_mig_resource_in_shared_config():
    labels = expected_labels(MIG_MIXED_TS, 'NVIDIA A100-SXM4-40GB', 1, resource='nvidia.com/mig-4g.20gb')
    assert labels['nvidia.com/mig-4g.20gb.product'] == 'NVIDIA-A100-SXM4-40GB-MIG-4g.20gb'
    assert labels['nvidia.com/mig-4g.20gb.replicas'] == '1'
    assert labels['nvidia.com/mig-4g.20gb.sharing-strategy'] == 'none'


@pytest.mark.parametrize('args, fragment', [
    ((_ts(1), 'Tesla T4', 1), 'replicas must be an integer >= 2'),
    ((TS_T4, '', 1), 'product must be the GPU product name'),
    ((TS_T4, None, 1), 'product must be the GPU product name'),
    ((TS_T4, 'Tesla T4', -2), 'gpus must be an integer >= 0'),
])
def test_labels_reject_invalid_input(args, fragment):
    with pytest.raises(ValueError, match=fragment):
        expected_labels(*args)


@pytest.mark.parametrize('raw, expected', [
    ('Tesla T4', 'Tesla-T4'),
    ('NVIDIA A100 80GB PCIe', 'NVIDIA-A100-80GB-PCIe'),
    ('NVIDIA  H100 (R) NVL', 'NVIDIA-H100-R-NVL'),
    ('Tesla-T4', 'Tesla-T4'),
])
def test_sanitise_product(raw, expected):
    assert sanitise_product(raw) == expected


# --- profiles and rendering -----------------------------------------------------------------

TS_T4_TEXT = ("version: 'v1'\n"
              'sharing:\n'
              '  timeSlicing:\n'
              '    resources:\n'
              "    - name: 'nvidia.com/gpu'\n"
              '      replicas: 4\n')


def test_render_exact_text():
    assert render_profiles({'time-sliced-4': TS_T4}) == {'time-sliced-4': TS_T4_TEXT}


def test_render_is_idempotent():
    first = render_profiles(PROFILES)
    second = render_profiles(copy.deepcopy(PROFILES))
    assert first == second
    assert sorted(first) == ['mps-10', 'time-sliced-10', 'time-sliced-4', 'unshared']


def test_render_ignores_input_key_order():
    reordered = {'sharing': {'timeSlicing': {'resources': [{'replicas': 4, 'name': 'nvidia.com/gpu'}]}},
                 'version': 'v1'}
    assert render_config(reordered) == TS_T4_TEXT


def test_render_canonical_order_of_block_keys():
    config = {'sharing': {'mps': {'resources': [{'replicas': 10, 'name': 'nvidia.com/gpu'}],
                                  'failRequestsGreaterThanOne': True, 'renameByDefault': True}},
              'flags': {'migStrategy': 'none'}}
    assert render_config(config) == ("version: 'v1'\n"
                                     'flags:\n'
                                     "  migStrategy: 'none'\n"
                                     'sharing:\n'
                                     '  mps:\n'
                                     '    renameByDefault: true\n'
                                     '    failRequestsGreaterThanOne: true\n'
                                     '    resources:\n'
                                     "    - name: 'nvidia.com/gpu'\n"
                                     '      replicas: 10\n')


def test_render_adds_version_to_empty_profile():
    assert render_profiles({'unshared': {}}) == {'unshared': "version: 'v1'\n"}


def test_render_round_trips():
    for name, text in render_profiles(PROFILES).items():
        expected = dict(PROFILES[name], version='v1')
        assert yaml.safe_load(text) == expected


def test_render_converts_str_subclasses_to_plain_yaml():
    class Tagged(str):
        pass

    config = {'sharing': {'timeSlicing': {'resources': [{'name': Tagged('nvidia.com/gpu'), 'replicas': 4}]}}}
    assert render_config(config) == TS_T4_TEXT


def test_render_refuses_invalid_profiles():
    with pytest.raises(ValueError, match="profile 'bad': sharing.timeSlicing.resources.0..replicas"):
        render_profiles({'bad': _ts(1)})


def test_validation_does_not_modify_input():
    config = copy.deepcopy(MIG_MIXED_TS)
    sharing_config_errors(config)
    sharing_capacity(config, mig_resources={'nvidia.com/mig-1g.5gb': 7})
    assert config == MIG_MIXED_TS
