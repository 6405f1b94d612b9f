# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import dra


def test_driver_classes_and_config_names_are_nvidias():
    assert dra.DRIVER == dra.GPU_CLASS == 'gpu.nvidia.com'
    assert dra.MIG_CLASS == 'mig.nvidia.com'
    assert dra.CONFIG_API_VERSION == 'resource.nvidia.com/v1beta1'
    assert (dra.GPU_CONFIG_KIND, dra.MIG_CONFIG_KIND) == ('GpuConfig', 'MigDeviceConfig')
    assert dra.STRATEGY_GATES == {'TimeSlicing': 'TimeSlicingSettings', 'MPS': 'MPSSupport'}
    assert dra.TIME_SLICE_INTERVALS == ('Default', 'Short', 'Medium', 'Long')
    assert set(dra.STRATEGY_GATES) == set(dra.SHARING_STRATEGIES)


@pytest.mark.parametrize('name, key', [
    ('gpu.nvidia.com', 'gpu.nvidia.com.deviceclass.resource.k8s.io/devices'),
    ('h100', 'h100.deviceclass.resource.k8s.io/devices'),
])
def test_quota_key_round_trips(name, key):
    assert dra.quota_key(name) == key
    assert dra.class_of_quota_key(key) == name


@pytest.mark.parametrize('key', ['requests.nvidia.com/gpu', '.deviceclass.resource.k8s.io/devices', None, 4])
def test_a_key_that_names_no_class(key):
    assert dra.class_of_quota_key(key) is None


def test_api_server_limits():
    assert dra.CEL_MAX_LENGTH == 10240 and dra.SELECTORS_MAX == 32 and dra.OPAQUE_PARAMETERS_MAX == 10240
    assert dra.ALLOCATION_MODES == ('ExactCount', 'All')
