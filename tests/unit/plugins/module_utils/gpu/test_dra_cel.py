# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.dra_cel import (
    cel_string, has_selector, selector_expression, selects_mig, semver)

A = "device.attributes['gpu.nvidia.com']"
C = "device.capacity['gpu.nvidia.com']"
DRIVER = "device.driver == 'gpu.nvidia.com'"


def expr(**spec):
    expression, errors = selector_expression(spec, 'x')
    assert errors == []
    return expression


def errors_of(**spec):
    expression, errors = selector_expression(spec, 'x')
    assert expression is None
    return errors


def test_no_field_selects_every_device_of_the_driver():
    assert expr() == DRIVER


def test_whole_gpus_of_one_product():
    assert expr(type='gpu', product_name='NVIDIA H100 80GB HBM3') == (
        DRIVER + " && %s.type == 'gpu' && %s.productName == 'NVIDIA H100 80GB HBM3'" % (A, A))


def test_a_list_is_any_of():
    assert expr(product_name=['NVIDIA A100-SXM4-40GB', 'NVIDIA A100-SXM4-80GB']) == (
        DRIVER + " && %s.productName in ['NVIDIA A100-SXM4-40GB', 'NVIDIA A100-SXM4-80GB']" % A)
    assert expr(architecture=['Hopper', 'Ampere']) == DRIVER + " && %s.architecture in ['Hopper', 'Ampere']" % A


def test_a_mig_profile_implies_mig_devices():
    assert expr(mig_profile='1g.10gb') == DRIVER + " && %s.type == 'mig' && %s.profile == '1g.10gb'" % (A, A)
    assert expr(type='mig', mig_profile=['1g.10gb', '1g.10gb+me']).endswith(
        "%s.profile in ['1g.10gb', '1g.10gb+me']" % A)


def test_memory_at_least_compares_the_capacity_as_a_quantity():
    assert expr(memory_min='40Gi') == DRIVER + " && %s.memory.compareTo(quantity('40Gi')) >= 0" % C


@pytest.mark.parametrize('field, attribute, op', [
    ('cuda_compute_capability_min', 'cudaComputeCapability', '>='),
    ('driver_version_min', 'driverVersion', '>='),
    ('driver_version_max', 'driverVersion', '<='),
])
def test_versions_compare_as_semantic_versions(field, attribute, op):
    assert expr(**{field: '9.0'}) == DRIVER + " && %s.%s.compareTo(semver('9.0.0')) %s 0" % (A, attribute, op)


def test_the_escape_hatch_is_anded_in_parentheses():
    assert expr(type='gpu', cel="a || b") == DRIVER + " && %s.type == 'gpu' && (a || b)" % A


def test_every_field_in_one_order():
    expression = expr(type='gpu', product_name='P', architecture='Hopper', memory_min='80Gi',
                      cuda_compute_capability_min='9.0', driver_version_min='550.54.15', driver_version_max='580',
                      cel='true')
    order = ['type', 'productName', 'architecture', 'memory', 'cudaComputeCapability', "semver('550.54.15')) >=",
             "semver('580.0.0')) <=", '(true)']
    positions = [expression.index(word) for word in order]
    assert positions == sorted(positions), expression


@pytest.mark.parametrize('value, version', [
    ('8.0', '8.0.0'), (550, '550.0.0'), (9.0, '9.0.0'), ('535.104.05', '535.104.5'), (' 12.4.1 ', '12.4.1'),
    ('1.2.3.4', None), ('v550', None), ('', None), (True, None), (None, None), ('5\u0665', None),
])
def test_semver(value, version):
    assert semver(value) == version


def test_strings_are_quoted_for_cel():
    assert cel_string("it's a \\ test") == "'it\\'s a \\\\ test'"
    assert expr(product_name="O'Brien GPU").endswith("productName == 'O\\'Brien GPU'")


@pytest.mark.parametrize('spec, message', [
    ({'type': 'vfio'}, "x.type must be one of gpu, mig, got 'vfio'"),
    ({'type': 'gpu', 'mig_profile': '1g.10gb'}, 'x: mig_profile selects MIG devices, but type is gpu'),
    ({'mig_profile': '1g10gb'}, "x.mig_profile '1g10gb' is not a MIG profile name such as 1g.10gb"),
    ({'product_name': ''}, 'x.product_name must be a non-empty string or a list of them (a product name)'),
    ({'product_name': []}, 'x.product_name must name at least one product name'),
    ({'product_name': ['A', 3]}, 'x.product_name must be a non-empty string or a list of them (a product name), got '
                                 'integer 3'),
    ({'architecture': 'Hop\nper'}, "x.architecture 'Hop\\nper' holds a control character"),
    ({'memory_min': '40GB'}, "x.memory_min must be a positive quantity such as 40Gi or 80Gi, got '40GB'"),
    ({'memory_min': 0}, 'x.memory_min must be a positive quantity'),
    ({'memory_min': True}, 'x.memory_min must be a positive quantity'),
    ({'driver_version_min': 'r550'}, "x.driver_version_min must be a version such as 550.54.15 or 9.0"),
    ({'cuda_compute_capability_min': [9]}, 'x.cuda_compute_capability_min must be a version'),
    ({'driver_version_min': '560', 'driver_version_max': '550.1'},
     'x: driver_version_min 560.0.0 is above driver_version_max 550.1.0; no driver matches'),
    ({'cel': ''}, 'x.cel must be a non-empty CEL expression (a string)'),
    ({'cel': 5}, 'x.cel must be a non-empty CEL expression (a string), got integer 5'),
    ({'product_name': ['p' * 100] * 120}, 'over the API server limit of 10240'),
])
def test_each_bad_field_has_its_own_message(spec, message):
    errors = errors_of(**spec)
    assert len(errors) == 1 and message in errors[0], errors


def test_every_error_at_once():
    assert len(errors_of(type='x', memory_min='no', driver_version_max='x', cel=1)) == 4


def test_helpers():
    assert has_selector({'cel': 'true'}) and not has_selector({'name': 'x', 'count': 2})
    assert selects_mig({'mig_profile': '1g.10gb'}) and selects_mig({'type': 'mig'}) and not selects_mig({'type': 'gpu'})
