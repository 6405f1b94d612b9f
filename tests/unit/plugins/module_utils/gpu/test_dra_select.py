# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu/dra_select.py: which published devices a CEL device selector selects (the collection's own expressions, the
driver chart's classes, common hand-written ones), CEL's error semantics, and what it refuses to guess."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import dra_select as X
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.dra_cel import selector_expression
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.gpu.dra_data import H100, gpu, mig

DRIVER = 'gpu.nvidia.com'
A100_GPU = gpu(0, 'GPU-a0')
H100_GPU = gpu(1, 'GPU-h1', H100, '80Gi')
MIG_1G = mig(2, 'GPU-a2', '1g.5gb', 19, 0, 'MIG-1', 4864)
MIG_3G = mig(2, 'GPU-a2', '3g.20gb', 9, 4, 'MIG-3', 19968)
DEVICES = {'a100': A100_GPU, 'h100': H100_GPU, 'mig-1g': MIG_1G, 'mig-3g': MIG_3G}


def picked(expressions):
    selector = X.Selector(expressions, DRIVER)
    return sorted(name for name, device in DEVICES.items() if selector.select(device))


def typed(**fields):
    expression, errors = selector_expression(fields, 'test')
    assert not errors, errors
    return expression


@pytest.mark.parametrize('fields, want', [
    ({}, ['a100', 'h100', 'mig-1g', 'mig-3g']),
    ({'type': 'gpu'}, ['a100', 'h100']),
    ({'mig_profile': '1g.5gb'}, ['mig-1g']),
    ({'mig_profile': ['1g.5gb', '3g.20gb']}, ['mig-1g', 'mig-3g']),
    ({'type': 'gpu', 'product_name': H100}, ['h100']),
    ({'type': 'gpu', 'memory_min': '40Gi'}, ['a100', 'h100']),
    ({'type': 'gpu', 'memory_min': '41Gi'}, ['h100']),
    ({'memory_min': '10Gi'}, ['a100', 'h100', 'mig-3g']),
    ({'cuda_compute_capability_min': '8.0', 'architecture': ['Ampere', 'Hopper']}, ['a100', 'h100', 'mig-1g', 'mig-3g']),
    ({'cuda_compute_capability_min': '9.0'}, []),
    ({'driver_version_min': '550.54.15', 'driver_version_max': '580.95.5'}, ['a100', 'h100', 'mig-1g', 'mig-3g']),
    ({'driver_version_max': '580.95.4'}, []),
    ({'type': 'gpu', 'cel': "device.attributes['gpu.nvidia.com'].uuid.startsWith('GPU-h')"}, ['h100']),
])
def test_the_collections_own_expressions(fields, want):
    """Every selector gpu/dra_cel.py writes from typed fields is understood and selects what it says."""
    assert picked([typed(**fields)]) == want


def test_the_driver_charts_classes_and_several_selectors_and_ed():
    gpu_class = "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"
    mig_class = "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'"
    assert picked([gpu_class]) == ['a100', 'h100']
    assert picked([mig_class]) == ['mig-1g', 'mig-3g']
    assert picked([gpu_class, mig_class]) == []
    assert picked([gpu_class, "device.capacity['gpu.nvidia.com'].memory.isGreaterThan(quantity('40Gi'))"]) == ['h100']
    assert picked([]) == ['a100', 'h100', 'mig-1g', 'mig-3g']  # a class without selectors takes every device


@pytest.mark.parametrize('expression, want', [
    ("device.driver != 'gpu.nvidia.com'", []),
    ("device.attributes['gpu.nvidia.com']['productName'] in ['NVIDIA A100-SXM4-40GB', 'x']", ['a100', 'mig-1g', 'mig-3g']),
    ("'profile' in device.attributes['gpu.nvidia.com']", ['mig-1g', 'mig-3g']),
    ("!('profile' in device.attributes['gpu.nvidia.com'])", ['a100', 'h100']),
    ("device.attributes['gpu.nvidia.com'].type == 'gpu' || device.attributes['gpu.nvidia.com'].profile == '3g.20gb'",
     ['a100', 'h100', 'mig-3g']),
    ("device.capacity['gpu.nvidia.com'].multiprocessors.compareTo(quantity('14')) == 0", ['mig-1g', 'mig-3g']),
    ("device.attributes['gpu.nvidia.com'].driverVersion.isLessThan(semver('600.0.0'))", ['a100', 'h100', 'mig-1g',
                                                                                         'mig-3g']),
    ('device.attributes["gpu.nvidia.com"].brand.contains("vid") && true', ['a100', 'h100', 'mig-1g', 'mig-3g']),
])
def test_hand_written_expressions(expression, want):
    assert picked([expression]) == want


def test_errors_follow_cel_and_are_never_counted_as_a_match():
    """A missing attribute is a runtime error: absorbed by a decisive other side of && or ||, else the device cannot
    be judged (None), as the scheduler would report an error rather than choose."""
    profile = "device.attributes['gpu.nvidia.com'].profile == '1g.5gb'"
    selector = X.Selector([profile], DRIVER)
    assert selector.select(A100_GPU) is None and selector.select(MIG_1G) is True and selector.select(MIG_3G) is False
    guarded = X.Selector(["device.attributes['gpu.nvidia.com'].type == 'mig' && " + profile], DRIVER)
    assert guarded.select(A100_GPU) is False  # the type test first: false && error is false
    commuted = X.Selector([profile + " && device.attributes['gpu.nvidia.com'].type == 'mig'"], DRIVER)
    assert commuted.select(A100_GPU) is False  # error && false is false too (CEL's && commutes)
    assert X.Selector([profile + " || true"], DRIVER).select(A100_GPU) is True
    # a domain nothing is published in is an empty map; a name missing from it is the error
    assert X.Selector(["'x' in device.attributes['other.example.com']"], DRIVER).select(A100_GPU) is False
    assert X.Selector(["device.attributes['other.example.com'].x == 1"], DRIVER).select(A100_GPU) is None
    assert X.Selector(["device.attributes['gpu.nvidia.com'].type < 3"], DRIVER).select(A100_GPU) is None
    assert X.Selector(["device.driver"], DRIVER).select(A100_GPU) is None  # not a boolean


@pytest.mark.parametrize('expression', [
    "device.attributes['gpu.nvidia.com'].productName.lowerAscii() == 'a100'",
    "size(device.attributes['gpu.nvidia.com']) > 1",
    "device.attributes['gpu.nvidia.com'].profile.matches('^1g')",
    "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('1Gi')) >= -1",
    "device.driver == 'gpu.nvidia.com' &&",
    "device.driver == 'gpu.nvidia.com' ? true : false",
    "1.5 > 1",
    '',
])
def test_what_is_not_understood_is_never_guessed(expression):
    selector = X.Selector(["device.driver == 'gpu.nvidia.com'", expression], DRIVER)
    assert selector.problem.startswith('selector not understood')
    assert all(selector.select(device) is None for device in DEVICES.values())


def test_values_as_the_api_publishes_them():
    env = X.device_env({'attributes': {'resource.kubernetes.io/pciBusID': {'string': '0000:10:00.0'},
                                       'gpu.nvidia.com/index': {'int': 3}, 'healthy': {'bool': True},
                                       'driverVersion': {'version': '580.95.5-rc1'}},
                        'capacity': {'memory': {'value': '40Gi'}, 'bad': {'value': 'lots'}}}, DRIVER)
    assert env['attributes']['resource.kubernetes.io'] == {'pciBusID': '0000:10:00.0'}
    assert env['attributes'][DRIVER]['index'] == 3 and env['attributes'][DRIVER]['healthy'] is True
    assert isinstance(env['attributes'][DRIVER]['driverVersion'], X.Version)
    assert env['capacity'][DRIVER] == {'memory': X.Quantity(40 << 30)}
    release, candidate = X.Version.parse('580.95.5'), X.Version.parse('580.95.5-rc1')
    assert candidate.key() < release.key() and X.Version.parse('v9') == X.Version((9, 0, 0, ''))
    assert X.Version.parse('nine') is None
    assert X.selector_expressions([{'cel': {'expression': 'a'}}, {}]) == ['a', None]
