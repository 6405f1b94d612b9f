# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.gpu.plugins.filter.quota import FilterModule

FILTERS = FilterModule().filters()
SHARED_4 = [{'metadata': {'name': 'n1', 'labels': {'nvidia.com/gpu.replicas': '4'}}}]


def test_filter_names():
    assert sorted(FILTERS) == ['gpu_quota_errors', 'gpu_quota_hard', 'gpu_quota_notes', 'gpu_quota_plan',
                               'gpu_quota_replicas', 'gpu_quota_timeslicing_warnings']


def test_hard_normalises_and_fails_on_errors():
    assert FILTERS['gpu_quota_hard']({'nvidia.com/gpu': 4, 'cpu': '2'}) == {'requests.nvidia.com/gpu': '4', 'cpu': '2'}
    with pytest.raises(AnsibleFilterError, match='never enforced'):
        FILTERS['gpu_quota_hard']({'limits.nvidia.com/gpu': 4})


def test_errors_and_notes():
    assert FILTERS['gpu_quota_errors']({'requests.nvidia.com/gpu': 4}) == []
    assert 'never enforced' in FILTERS['gpu_quota_errors']({'limits.nvidia.com/gpu': 4})[0]
    assert 'must be a mapping' in FILTERS['gpu_quota_errors']('nvidia.com/gpu=4')[0]
    assert FILTERS['gpu_quota_notes']({'requests.nvidia.com/gpu': 4}) == []
    assert 'normalised' in FILTERS['gpu_quota_notes']({'nvidia.com/gpu': 4})[0]


@pytest.mark.parametrize('replicas', [4, {'nvidia.com/gpu': 4}, {'gpu': 4}, SHARED_4,
                                      [{'nvidia.com/gpu.replicas': '4'}]])
def test_timeslicing_warnings_accept_int_mapping_and_nodes(replicas):
    (warning,) = FILTERS['gpu_quota_timeslicing_warnings']({'nvidia.com/gpu': 8}, replicas)
    assert 'shared 4 ways' in warning and 'equivalent of 2 physical' in warning


def test_timeslicing_warnings_empty_when_unshared_and_errors_on_bad_replicas():
    assert FILTERS['gpu_quota_timeslicing_warnings']({'nvidia.com/gpu': 8}, 1) == []
    assert FILTERS['gpu_quota_timeslicing_warnings']({'nvidia.com/gpu': 8}, []) == []
    with pytest.raises(AnsibleFilterError):
        FILTERS['gpu_quota_timeslicing_warnings']({'nvidia.com/gpu': 8}, 'four')


def test_replicas():
    assert FILTERS['gpu_quota_replicas'](SHARED_4) == {'nvidia.com/gpu': 4}
    with pytest.raises(AnsibleFilterError):
        FILTERS['gpu_quota_replicas']({'a': 1})


def test_plan_accepts_namespace_objects_and_nodes():
    result = FILTERS['gpu_quota_plan']([{'namespace': 'a', 'hard': {'nvidia.com/gpu': 8}}],
                                       [{'metadata': {'name': 'a'}}], replicas=SHARED_4)
    assert result['errors'] == [] and len(result['quotas']) == 1 and len(result['warnings']) == 1
