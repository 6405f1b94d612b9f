# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import decimal
from fractions import Fraction

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.quota import (
    is_nvidia_resource, normalise_quota, parse_quantity, quota_notes, timeslicing_quota_warnings)


# --- normalise ------------------------------------------------------------------------------

def test_requests_gpu_is_kept_and_written_as_integer_string():
    assert normalise_quota({'requests.nvidia.com/gpu': 4}) == ({'requests.nvidia.com/gpu': '4'}, [])


def test_bare_gpu_is_normalised_and_noted():
    assert normalise_quota({'nvidia.com/gpu': '2'}) == ({'requests.nvidia.com/gpu': '2'}, [])
    assert quota_notes({'nvidia.com/gpu': '2'}) == [
        'nvidia.com/gpu normalised to requests.nvidia.com/gpu: a bare extended-resource name in a quota '
        'is never enforced']


def test_limits_gpu_is_rejected_with_explanation():
    result, errors = normalise_quota({'limits.nvidia.com/gpu': 4})
    assert result == {}
    assert errors == ['limits.nvidia.com/gpu is never enforced: Kubernetes quotas count extended resources only '
                      'as requests.<name> (their limits must equal their requests); use requests.nvidia.com/gpu']


@pytest.mark.parametrize('key', [
    'requests.nvidia.com/mig-1g.5gb',
    'requests.nvidia.com/mig-3g.20gb',
    'requests.nvidia.com/mig-1g.10gb.me',
    'requests.nvidia.com/gpu.shared',
    'requests.nvidia.com/mig-1g.5gb.shared',
    'requests.nvidia.com/gpumem',
    'requests.nvidia.com/gpucores',
    'requests.nvidia.com/gpumem-percentage',
])
def test_gpu_request_keys_are_accepted(key):
    assert normalise_quota({key: 10}) == ({key: '10'}, [])


def test_bare_mig_profile_is_normalised():
    assert normalise_quota({'nvidia.com/mig-1g.10gb': 3})[0] == {'requests.nvidia.com/mig-1g.10gb': '3'}


@pytest.mark.parametrize('key', ['limits.nvidia.com/gpumem', 'limits.nvidia.com/gpucores'])
def test_hami_scheduler_limits_are_kept_with_a_note(key):
    assert normalise_quota({key: 8000}) == ({key: '8000'}, [])
    notes = quota_notes({key: 8000})
    assert len(notes) == 1 and 'enforced only by hami-scheduler' in notes[0]


def test_non_gpu_keys_pass_through():
    hard = {'requests.cpu': '500m', 'limits.memory': '16Gi', 'pods': 10, 'count/deployments.apps': '3'}
    assert normalise_quota(hard) == ({'requests.cpu': '500m', 'limits.memory': '16Gi', 'pods': '10',
                                      'count/deployments.apps': '3'}, [])


def test_same_value_twice_after_normalising_is_fine():
    assert normalise_quota({'nvidia.com/gpu': 4, 'requests.nvidia.com/gpu': '4'}) == (
        {'requests.nvidia.com/gpu': '4'}, [])


def test_whole_quantity_suffixes_are_canonicalised_for_gpus():
    assert normalise_quota({'requests.nvidia.com/gpu': '1k'})[0] == {'requests.nvidia.com/gpu': '1000'}
    assert normalise_quota({'requests.nvidia.com/gpu': 2.0})[0] == {'requests.nvidia.com/gpu': '2'}


@pytest.mark.parametrize('hard, fragment', [
    ({'limits.nvidia.com/mig-1g.5gb': 2}, 'use requests.nvidia.com/mig-1g.5gb'),
    ({'limits.nvidia.com/gpu.shared': 2}, 'use requests.nvidia.com/gpu.shared'),
    ({'limits.nvidia.com/gpumem-percentage': 50}, 'limits.nvidia.com/gpumem-percentage is never enforced'),
    ({'requests.nvidia.com/gpus': 2}, "nvidia.com/gpus is not a GPU resource (did you mean 'nvidia.com/gpu'?)"),
    ({'requests.nvidia.com/mig-1g5gb': 2}, 'is not a GPU resource'),
    ({'requests.nvidia.com/gpu': 'four'}, "'four' is not a Kubernetes quantity"),
    ({'requests.nvidia.com/gpu': -1}, 'must not be negative'),
    ({'requests.nvidia.com/gpu': '500m'}, 'must be a whole number'),
    ({'requests.nvidia.com/gpu': 1.5}, 'must be a whole number'),
    ({'requests.nvidia.com/gpu': True}, 'True is not a Kubernetes quantity'),
    ({'requests.nvidia.com/gpu': None}, 'None is not a Kubernetes quantity'),
    ({'requests.cpu': '1 core'}, "'1 core' is not a Kubernetes quantity"),
    ({'nvidia.com/gpu': 2, 'requests.nvidia.com/gpu': 4}, 'both set requests.nvidia.com/gpu; keep one'),
    ({1: 2}, 'quota keys must be resource names'),
    (['requests.nvidia.com/gpu'], 'must be a mapping of resource to quantity'),
])
def test_invalid_quota(hard, fragment):
    _result, errors = normalise_quota(hard)
    assert any(fragment in error for error in errors), errors


def test_invalid_entries_are_left_out_valid_ones_kept():
    result, errors = normalise_quota({'limits.nvidia.com/gpu': 4, 'requests.nvidia.com/mig-1g.5gb': 7})
    assert result == {'requests.nvidia.com/mig-1g.5gb': '7'}
    assert len(errors) == 1


@pytest.mark.parametrize('value, expected', [
    (4, Fraction(4)), ('4', Fraction(4)), ('500m', Fraction(1, 2)), ('2Gi', Fraction(2 * 1024 ** 3)),
    ('1k', Fraction(1000)), ('1e3', Fraction(1000)), ('1.5', Fraction(3, 2)), (' 3 ', Fraction(3)),
    ('.5', Fraction(1, 2)), (0.25, Fraction(1, 4)),
    ('1 Gi', None), ('Gi', None), ('', None), (True, None), ([], None), (float('inf'), None),
    (0.1, Fraction(1, 10)), ('3E', Fraction(3 * 10 ** 18)), ('1.5Ei', Fraction(3 * 2 ** 59)), ('2n', Fraction(2, 10 ** 9)),
    # exact beyond the 28 digits of Python's default Decimal context
    ('123456789012345678901234567890Gi', Fraction(123456789012345678901234567890 * 1024 ** 3)),
    # accepted by kubernetes.utils.parse_quantity, not by the API server: not quantities here
    ('5K', None), ('1ki', None), ('1ui', None), ('NaN', None), ('Infinity', None), ('1_000', None),
])
def test_parse_quantity(value, expected):
    assert parse_quantity(value) == expected


@pytest.mark.parametrize('text', ['0', '7', '-3', '+2', '1.', '0.001', '500m', '250u', '3n', '12k', '1.5M', '2G', '4T',
                                  '5P', '6E', '1Ki', '3Mi', '1.5Gi', '2Ti', '7Pi', '1Ei', '1e3', '2E-2', '3e+4', '.25Gi'])
def test_parse_quantity_agrees_with_the_kubernetes_client(text):
    """The client's own parser (kubernetes.utils.parse_quantity, in Decimal with room for every digit) is the
    reference for every quantity the API server's grammar allows."""
    from kubernetes.utils import parse_quantity as client_parse_quantity
    with decimal.localcontext() as context:
        context.prec = 60
        assert parse_quantity(text) == Fraction(client_parse_quantity(text)), text


def test_is_nvidia_resource():
    assert is_nvidia_resource('nvidia.com/gpu')
    assert is_nvidia_resource('nvidia.com/mig-2g.10gb.shared')
    assert not is_nvidia_resource('nvidia.com/priority')
    assert not is_nvidia_resource('nvidia.com/gpu.shared.shared')


# --- time-slicing warnings ------------------------------------------------------------------

def test_timeslicing_warning_divides_by_replicas():
    assert timeslicing_quota_warnings({'requests.nvidia.com/gpu': 8}, 4) == [
        'requests.nvidia.com/gpu: 8 with nvidia.com/gpu shared 4 ways (time-slicing/MPS replicas 4) admits 8 '
        'replicas, the equivalent of 2 physical device(s); for N physical devices set 4 x N']


def test_timeslicing_warning_fractional_and_normalised_key():
    warnings = timeslicing_quota_warnings({'nvidia.com/gpu': 5}, 10)
    assert len(warnings) == 1
    assert warnings[0].startswith('requests.nvidia.com/gpu: 5 with')
    assert 'the equivalent of 0.50 physical device(s)' in warnings[0]


def test_timeslicing_warning_for_renamed_and_mig_resources():
    hard = {'requests.nvidia.com/gpu.shared': 20, 'requests.nvidia.com/mig-1g.5gb': 6,
            'requests.nvidia.com/mig-3g.20gb': 2, 'requests.cpu': 4}
    warnings = timeslicing_quota_warnings(hard, {'nvidia.com/gpu': 10, 'nvidia.com/mig-1g.5gb': 2})
    assert len(warnings) == 2
    assert 'requests.nvidia.com/gpu.shared: 20 with nvidia.com/gpu shared 10 ways' in warnings[0]
    assert 'equivalent of 2 physical' in warnings[0]
    assert 'requests.nvidia.com/mig-1g.5gb: 6 with nvidia.com/mig-1g.5gb shared 2 ways' in warnings[1]
    assert 'equivalent of 3 physical' in warnings[1]


@pytest.mark.parametrize('hard, replicas', [
    ({'requests.nvidia.com/gpu': 8}, 1),
    ({'requests.nvidia.com/gpu': 8}, {}),
    ({'requests.nvidia.com/gpumem': 8000}, 4),
    ({'limits.nvidia.com/gpu': 8}, 4),
    ({}, 4),
    ('not a quota', 4),
])
def test_no_timeslicing_warning(hard, replicas):
    assert timeslicing_quota_warnings(hard, replicas) == []


def test_timeslicing_warning_accepts_short_resource_names():
    assert len(timeslicing_quota_warnings({'requests.nvidia.com/gpu': 8}, {'gpu': 4})) == 1


@pytest.mark.parametrize('replicas', ['4', None, {'nvidia.com/gpu': '4'}])
def test_timeslicing_warning_rejects_bad_replicas(replicas):
    with pytest.raises(ValueError, match='replicas must be an integer or a mapping'):
        timeslicing_quota_warnings({'requests.nvidia.com/gpu': 8}, replicas)
