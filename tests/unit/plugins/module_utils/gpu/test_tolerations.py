# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.tolerations import (
    GPU_TOLERATION, merge_tolerations, taint_errors, toleration_errors, toleration_identity, tolerates,
    tolerations_for_taints)

GPU = {'key': 'nvidia.com/gpu', 'operator': 'Exists', 'effect': 'NoSchedule'}
DEDICATED = {'key': 'dedicated', 'operator': 'Equal', 'value': 'gpu', 'effect': 'NoSchedule'}
MASTER = {'key': 'node-role.kubernetes.io/master', 'operator': 'Exists', 'effect': 'NoSchedule'}
UNREACHABLE = {'key': 'node.kubernetes.io/unreachable', 'operator': 'Exists', 'effect': 'NoExecute',
               'tolerationSeconds': 300}


# --- merge ----------------------------------------------------------------------------------

def test_gpu_constant_is_the_operator_default():
    assert GPU_TOLERATION == GPU


def test_merge_adds_gpu_when_user_replaces_the_list():
    assert merge_tolerations([], [DEDICATED]) == [DEDICATED, GPU]


def test_merge_of_nothing_is_just_gpu():
    assert merge_tolerations(None, None) == [GPU]
    assert merge_tolerations([]) == [GPU]


def test_merge_keeps_gpu_already_present_once():
    assert merge_tolerations([GPU, DEDICATED], [GPU]) == [GPU, DEDICATED]


def test_merge_without_keep_gpu():
    assert merge_tolerations([DEDICATED], [MASTER], keep_gpu=False) == [DEDICATED, MASTER]


def test_merge_dedupes_with_kubernetes_defaults():
    implicit = {'key': 'dedicated', 'value': 'gpu', 'effect': 'NoSchedule'}  # operator defaults to Equal
    assert merge_tolerations([DEDICATED], [implicit], keep_gpu=False) == [implicit]


def test_merge_treats_missing_and_empty_effect_alike():
    a = {'key': 'nvidia.com/gpu', 'operator': 'Exists'}
    b = {'key': 'nvidia.com/gpu', 'operator': 'Exists', 'effect': ''}
    assert merge_tolerations([a], [b], keep_gpu=False) == [b]


def test_merge_later_entry_wins_content_first_wins_position():
    longer = dict(UNREACHABLE, tolerationSeconds=3600)
    assert merge_tolerations([UNREACHABLE, DEDICATED], [longer], keep_gpu=False) == [longer, DEDICATED]


def test_merge_keeps_distinct_effects_and_values():
    no_exec = dict(GPU, effect='NoExecute')
    other_value = dict(DEDICATED, value='ml')
    result = merge_tolerations([GPU, DEDICATED], [no_exec, other_value])
    assert result == [GPU, DEDICATED, no_exec, other_value]


def test_merge_is_idempotent():
    once = merge_tolerations([MASTER], [DEDICATED, UNREACHABLE])
    assert merge_tolerations(once, [DEDICATED, UNREACHABLE]) == once
    assert once == [MASTER, DEDICATED, UNREACHABLE, GPU]


def test_merge_does_not_modify_inputs():
    existing, extra = [copy.deepcopy(DEDICATED)], [copy.deepcopy(UNREACHABLE)]
    result = merge_tolerations(existing, extra)
    result[0]['value'] = 'changed'
    assert existing == [DEDICATED] and extra == [UNREACHABLE]


@pytest.mark.parametrize('existing, extra, fragment', [
    ({'key': 'x'}, None, 'existing must be a list, got mapping'),
    ([], ['nvidia.com/gpu'], r'extra\[0\] must be a mapping'),
    ([], [{'key': 'nvidia.com/gpu', 'operator': 'exists'}], "operator must be Exists or Equal"),
])
def test_merge_rejects_invalid_tolerations(existing, extra, fragment):
    with pytest.raises(ValueError, match=fragment):
        merge_tolerations(existing, extra)


def test_identity_applies_defaults():
    assert toleration_identity({'key': 'a'}) == ('a', 'Equal', '', '')
    assert toleration_identity(GPU) == ('nvidia.com/gpu', 'Exists', '', 'NoSchedule')


# --- toleration validation ------------------------------------------------------------------

@pytest.mark.parametrize('tolerations', [
    None,
    [],
    [GPU, DEDICATED, MASTER, UNREACHABLE],
    [{'operator': 'Exists'}],
    [{'key': 'nvidia.com/gpu', 'operator': 'Exists'}],
    [{'key': 'dedicated', 'value': 'gpu'}],
    [{'key': 'example.com/x', 'operator': 'Equal', 'value': '', 'effect': 'PreferNoSchedule'}],
    [{'key': 'x', 'operator': 'Exists', 'effect': 'NoExecute', 'tolerationSeconds': -1}],
])
def test_valid_tolerations(tolerations):
    assert toleration_errors(tolerations) == []


@pytest.mark.parametrize('tolerations, fragment', [
    ('nvidia.com/gpu', 'tolerations must be a list, got string'),
    ([None], 'tolerations[0] must be a mapping'),
    ([{'key': 'a', 'operator': 'In'}], "operator must be Exists or Equal (case-sensitive), got 'In'"),
    ([{'key': 'a', 'operator': 'exists'}], "got 'exists'"),
    ([{'key': 'nvidia.com/gpu', 'operator': 'Exists', 'value': 'present'}], 'operator Exists must not set value'),
    ([{'key': 'a', 'value': 'b', 'effect': 'NoSchedul'}], 'effect must be one of NoSchedule, PreferNoSchedule'),
    ([{'key': 'a', 'value': 'b', 'effect': 'NoSchedule', 'tolerationSeconds': 60}],
     'tolerationSeconds applies only to effect NoExecute'),
    ([{'key': 'a', 'value': 'b', 'effect': 'NoExecute', 'tolerationSeconds': '60'}],
     'tolerationSeconds must be an integer'),
    ([{'key': 'a', 'operator': 'Equal', 'value': True}], 'value must be a string, got boolean (quote it in YAML)'),
    ([{'key': 'a', 'operator': 'Equal', 'value': 'has space'}], "value 'has space' must be at most 63"),
    ([{'operator': 'Equal', 'value': 'x'}], 'an empty key matches all taints and needs operator Exists'),
    ([{'key': 'Bad_Prefix.com/x', 'operator': 'Exists'}], "prefix 'Bad_Prefix.com' must be a lowercase DNS"),
    ([{'key': 'a/b/c', 'operator': 'Exists'}], "prefix 'a/b' must be a lowercase DNS subdomain"),
    ([{'key': 'x' * 64, 'operator': 'Exists'}], 'must be at most 63 characters'),
    ([{'key': 'a', 'operator': 'Exists', 'tolerationseconds': 5}], "did you mean 'tolerationSeconds'"),
    ([GPU, {'key': 'a', 'Effect': 'NoSchedule'}], "tolerations[1]: unknown key 'Effect'; did you mean 'effect'"),
])
def test_invalid_tolerations(tolerations, fragment):
    errors = toleration_errors(tolerations)
    assert any(fragment in error for error in errors), errors


def test_toleration_error_uses_given_path():
    assert toleration_errors([{'key': 'a', 'operator': 'In'}], 'daemonsets.tolerations') == [
        "daemonsets.tolerations[0].operator must be Exists or Equal (case-sensitive), got 'In'"]


# --- taints ---------------------------------------------------------------------------------

GPU_TAINT = {'key': 'nvidia.com/gpu', 'value': 'true', 'effect': 'NoSchedule'}


def test_tolerations_for_taints_use_exists():
    assert tolerations_for_taints([GPU_TAINT]) == [GPU]


def test_tolerations_for_taints_match_value():
    assert tolerations_for_taints([GPU_TAINT], match_value=True) == [
        {'key': 'nvidia.com/gpu', 'operator': 'Equal', 'value': 'true', 'effect': 'NoSchedule'}]


def test_tolerations_for_taints_without_value_use_exists_even_with_match_value():
    taint = {'key': 'dedicated', 'effect': 'NoExecute'}
    assert tolerations_for_taints([taint], match_value=True) == [
        {'key': 'dedicated', 'operator': 'Exists', 'effect': 'NoExecute'}]


def test_tolerations_for_taints_dedupe_same_key_and_effect_across_values():
    taints = [GPU_TAINT, {'key': 'dedicated', 'value': 'ml', 'effect': 'NoSchedule'}]
    result = tolerations_for_taints(taints)
    assert result == [GPU, {'key': 'dedicated', 'operator': 'Exists', 'effect': 'NoSchedule'}]
    assert tolerations_for_taints(None) == []


def test_tolerations_for_invalid_taints_raise():
    with pytest.raises(ValueError, match=r'taints\[0\].effect must be one of'):
        tolerations_for_taints([{'key': 'nvidia.com/gpu', 'effect': 'Never'}])


@pytest.mark.parametrize('taints', [
    None,
    [],
    [GPU_TAINT],
    [GPU_TAINT, dict(GPU_TAINT, effect='NoExecute')],
    [{'key': 'dedicated', 'effect': 'PreferNoSchedule', 'timeAdded': '2026-01-01T00:00:00Z'}],
])
def test_valid_taints(taints):
    assert taint_errors(taints) == []


@pytest.mark.parametrize('taints, fragment', [
    ({'key': 'a'}, 'taints must be a list'),
    (['nvidia.com/gpu=true:NoSchedule'], 'taints[0] must be a mapping'),
    ([{'value': 'x', 'effect': 'NoSchedule'}], 'taints[0].key is required'),
    ([{'key': 'a'}], "taints[0].effect must be one of NoSchedule, PreferNoSchedule, NoExecute, got 'None'"),
    ([{'key': 'a', 'effect': ''}], 'effect must be one of'),
    ([{'key': 'a', 'value': 'x y', 'effect': 'NoSchedule'}], 'taints[0].value'),
    ([{'key': 'a', 'value': 'x', 'effect': 'NoSchedule', 'operator': 'Equal'}], "unknown key 'operator'"),
    ([GPU_TAINT, dict(GPU_TAINT, value='false')], 'taints[1] duplicates taints[0]'),
])
def test_invalid_taints(taints, fragment):
    errors = taint_errors(taints)
    assert any(fragment in error for error in errors), errors


# --- tolerates ---------------------------------------------------------------

_DEDICATED = {'key': 'dedicated', 'value': 'gpu', 'effect': 'NoExecute'}


@pytest.mark.parametrize('toleration, taint, expected', [
    ({'operator': 'Exists'}, _DEDICATED, True),                                   # empty key + Exists: everything
    ({'operator': 'Exists', 'effect': 'NoSchedule'}, _DEDICATED, False),          # NFD's built-in one
    ({'key': 'dedicated', 'operator': 'Exists', 'effect': 'NoExecute'}, _DEDICATED, True),
    ({'key': 'dedicated', 'operator': 'Equal', 'value': 'gpu', 'effect': 'NoExecute'}, _DEDICATED, True),
    ({'key': 'dedicated', 'value': 'cpu', 'effect': 'NoExecute'}, _DEDICATED, False),
    ({'key': 'dedicated', 'operator': 'Exists'}, _DEDICATED, True),               # any effect
    ({'key': 'nvidia.com/gpu', 'operator': 'Exists'}, _DEDICATED, False),
    ({'key': '', 'operator': 'Equal'}, _DEDICATED, False),
    # the cases the copy in plans/autoscaling.py tested
    ({'operator': 'Exists'}, {'key': 'k', 'effect': 'NoSchedule'}, True),
    ({'key': 'k', 'value': 'a'}, {'key': 'k', 'value': 'b', 'effect': 'NoSchedule'}, False),
])
def test_tolerates(toleration, taint, expected):
    assert tolerates(toleration, taint) is expected
