# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests for module_utils.gpu.sharing: reading a device-plugin config (shared seed configs live here)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.sharing import (
    effective_mig_strategy, is_mig_resource, mps_max_replicas, normalise_resource_name, parse_compute_capability,
    replicas_by_resource, sharing_strategy)
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.gpu.sharing_data import (
    MIG_MIXED_TS, MPS_10_RENAMED, TS_A100, TS_T4, _ts)


# --- strategy -------------------------------------------------------------------------------

@pytest.mark.parametrize('config, expected', [
    (TS_T4, 'time-slicing'),
    (TS_A100, 'time-slicing'),
    (MPS_10_RENAMED, 'mps'),
    (MIG_MIXED_TS, 'time-slicing'),
    ({}, 'none'),
    ({'version': 'v1', 'flags': {'migStrategy': 'single'}}, 'none'),
    ({'sharing': {'timeSlicing': TS_T4['sharing']['timeSlicing'], 'mps': MPS_10_RENAMED['sharing']['mps']}}, 'mps'),
    ('not a config', 'none'),
])
def test_sharing_strategy(config, expected):
    assert sharing_strategy(config) == expected


def test_replicas_by_resource():
    assert replicas_by_resource(TS_T4) == {'nvidia.com/gpu': 4}
    assert replicas_by_resource(MIG_MIXED_TS) == {
        'nvidia.com/gpu': 2, 'nvidia.com/mig-1g.5gb': 2, 'nvidia.com/mig-2g.10gb': 2,
        'nvidia.com/mig-3g.20gb': 3, 'nvidia.com/mig-7g.40gb': 7}
    assert replicas_by_resource(_ts(3, name='gpu')) == {'nvidia.com/gpu': 3}
    assert replicas_by_resource({}) == {}


def test_replicas_follow_mps_when_both_blocks_are_present():
    # Invalid config, but the plugin's rule (mps wins, timeSlicing ignored) is what a node would show.
    both = {'sharing': {'timeSlicing': TS_T4['sharing']['timeSlicing'], 'mps': MPS_10_RENAMED['sharing']['mps']}}
    assert replicas_by_resource(both) == {'nvidia.com/gpu': 10}


# --- helpers --------------------------------------------------------------------------------

@pytest.mark.parametrize('value, expected', [
    ('8.0', (8, 0)), (7.5, (7, 5)), ('9', (9, 0)), ((12, 1), (12, 1)), ('10.0', (10, 0)), (8, (8, 0)),
    ('ampere', None), (True, None), (None, None), ('8.x', None),
])
def test_parse_compute_capability(value, expected):
    assert parse_compute_capability(value) == expected


@pytest.mark.parametrize('capability, expected', [
    (None, 48), ('7.5', 48), ('9.0', 48), ('7.0', 16), ('6.1', 16), ('garbage', 48),
])
def test_mps_max_replicas(capability, expected):
    assert mps_max_replicas(capability) == expected


def test_effective_mig_strategy_argument_wins_over_flags():
    assert effective_mig_strategy(MIG_MIXED_TS) == 'mixed'
    assert effective_mig_strategy(MIG_MIXED_TS, 'single') == 'single'
    assert effective_mig_strategy({}) == 'none'
    assert effective_mig_strategy({}, 'bogus') == 'none'


def test_resource_name_helpers():
    assert normalise_resource_name('gpu') == 'nvidia.com/gpu'
    assert normalise_resource_name('nvidia.com/gpu') == 'nvidia.com/gpu'
    assert is_mig_resource('nvidia.com/mig-1g.5gb')
    assert is_mig_resource('nvidia.com/mig-1g.10gb.me')
    assert not is_mig_resource('nvidia.com/mig-1c.2g.10gb')
    assert not is_mig_resource('nvidia.com/gpu')
    assert not is_mig_resource(None)
