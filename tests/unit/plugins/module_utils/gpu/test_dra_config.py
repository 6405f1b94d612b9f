# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.dra_config import (
    config_parameters, enabled_gates, sharing_errors)

GATES = {'TimeSlicingSettings', 'MPSSupport'}


def ok(share, gates=frozenset(GATES), mig=False, count=None):
    assert sharing_errors(share, 's', gates, mig=mig, count=count) == []
    return config_parameters(share, mig=mig)


def test_time_slicing_of_whole_gpus_names_its_interval():
    assert ok({'strategy': 'TimeSlicing'}) == {
        'apiVersion': 'resource.nvidia.com/v1beta1', 'kind': 'GpuConfig',
        'sharing': {'strategy': 'TimeSlicing', 'timeSlicingConfig': {'interval': 'Default'}}}
    assert ok({'strategy': 'TimeSlicing', 'interval': 'Long'})['sharing']['timeSlicingConfig'] == {'interval': 'Long'}


def test_time_slicing_of_mig_devices_has_no_settings():
    assert ok({'strategy': 'TimeSlicing'}, mig=True) == {
        'apiVersion': 'resource.nvidia.com/v1beta1', 'kind': 'MigDeviceConfig', 'sharing': {'strategy': 'TimeSlicing'}}


def test_mps_with_every_setting():
    share = {'strategy': 'MPS', 'active_thread_percentage': 0, 'pinned_memory_limit': '10Gi',
             'per_device_pinned_memory_limit': {0: '5Gi', 'GPU-0c2b1a6e-7d5f-4a8b-9c3d-1e2f3a4b5c6d': '1Mi'}}
    assert ok(share, count=2)['sharing'] == {'strategy': 'MPS', 'mpsConfig': {
        'defaultActiveThreadPercentage': 0, 'defaultPinnedDeviceMemoryLimit': '10Gi',
        'defaultPerDevicePinnedMemoryLimit': {'0': '5Gi', 'GPU-0c2b1a6e-7d5f-4a8b-9c3d-1e2f3a4b5c6d': '1Mi'}}}
    assert ok({'strategy': 'MPS'}, mig=True) == {'apiVersion': 'resource.nvidia.com/v1beta1', 'kind': 'MigDeviceConfig',
                                                 'sharing': {'strategy': 'MPS', 'mpsConfig': {}}}


@pytest.mark.parametrize('share, gates, message', [
    ({'strategy': 'MPS'}, {'TimeSlicingSettings'},
     's: sharing with MPS needs the DRA driver feature gate MPSSupport, which is off'),
    ({'strategy': 'TimeSlicing'}, set(),
     's: sharing with TimeSlicing needs the DRA driver feature gate TimeSlicingSettings, which is off'),
    ({'strategy': 'Spatial'}, GATES, "s.strategy must be one of TimeSlicing, MPS, got 'Spatial'"),
    ({}, GATES, 's.strategy must be one of TimeSlicing, MPS, got None'),
    ('MPS', GATES, 's must be a mapping with strategy (TimeSlicing or MPS), got string'),
    ({'strategy': 'MPS', 'replicas': 2}, GATES, "s: unknown key 'replicas'"),
    ({'strategy': 'TimeSlicing', 'interval': 'Fast'}, GATES,
     "s.interval must be one of Default, Short, Medium, Long, got 'Fast'"),
    ({'strategy': 'TimeSlicing', 'active_thread_percentage': 50}, GATES,
     's.active_thread_percentage is an MPS setting; a TimeSlicing share takes only interval'),
    ({'strategy': 'MPS', 'interval': 'Long'}, GATES, 's.interval is a TimeSlicing setting'),
    ({'strategy': 'MPS', 'active_thread_percentage': 101}, GATES,
     's.active_thread_percentage must be a whole number from 0 to 100, got 101'),
    ({'strategy': 'MPS', 'active_thread_percentage': -1}, GATES, 'from 0 to 100, got -1'),
    ({'strategy': 'MPS', 'active_thread_percentage': '50'}, GATES, "from 0 to 100, got '50'"),
    ({'strategy': 'MPS', 'pinned_memory_limit': '512Ki'}, GATES,
     's.pinned_memory_limit 512Ki is below 1Mi: the driver passes the limit in whole MiB'),
    ({'strategy': 'MPS', 'pinned_memory_limit': 'lots'}, GATES,
     "s.pinned_memory_limit must be a quantity such as 10Gi, got string 'lots'"),
    ({'strategy': 'MPS', 'per_device_pinned_memory_limit': {}}, GATES,
     's.per_device_pinned_memory_limit must be a non-empty mapping of device index or UUID to a quantity'),
    ({'strategy': 'MPS', 'per_device_pinned_memory_limit': {'first': '1Gi'}}, GATES,
     "s.per_device_pinned_memory_limit: key 'first' must be a device index (0, 1, ...) or a device UUID"),
    ({'strategy': 'MPS', 'per_device_pinned_memory_limit': {2: '1Gi'}}, GATES,
     's.per_device_pinned_memory_limit: device index 2 is not among the 2 device(s) the request allocates (0..1)'),
])
def test_each_rule_of_the_driver_has_its_own_message(share, gates, message):
    errors = sharing_errors(share, 's', gates, count=2)
    assert len(errors) == 1 and message in errors[0], errors


def test_no_interval_for_mig_devices():
    errors = sharing_errors({'strategy': 'TimeSlicing', 'interval': 'Long'}, 's', GATES, mig=True)
    assert errors == ['s.interval: a MIG device has no time-slicing settings (MigDeviceConfig); leave interval out']


@pytest.mark.parametrize('gates, enabled', [
    (None, set()), ([], set()), (['MPSSupport'], {'MPSSupport'}),
    ({'MPSSupport': True, 'TimeSlicingSettings': False}, {'MPSSupport'}),
])
def test_enabled_gates(gates, enabled):
    assert enabled_gates(gates) == (enabled, [])


@pytest.mark.parametrize('gates, message', [
    ({'MPSSupport': 'yes'}, 'feature gate MPSSupport must be true or false, got string'),
    ('MPSSupport', 'a list of names or a mapping of name to true/false, got string'),
    ([1], 'got list'),
])
def test_bad_gates(gates, message):
    assert message in enabled_gates(gates)[1][0]
