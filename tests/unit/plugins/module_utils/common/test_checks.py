# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests for module_utils.common.checks: type names, unknown keys, Kubernetes names, the schema."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import datetime

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import (
    Fields, Items, as_number, bool_errors, is_dns_label, is_dns_subdomain, is_int, join_path, label_key_errors,
    label_value_errors, one_of, optional_list, string_errors, suggest, type_name, unknown_key_error,
    unknown_key_errors)


class _TaggedStr(str):
    """Stands in for ansible-core 2.19's tagged string."""


class _TaggedDict(dict):
    pass


# --- values ---------------------------------------------------------------------------------

@pytest.mark.parametrize('value, expected', [
    (None, 'null'), (True, 'boolean'), ('x', 'string'), (1, 'integer'), (1.5, 'float'), ({}, 'mapping'),
    ([], 'list'), ((), 'list'), (_TaggedStr('x'), 'string'), (_TaggedDict(), 'mapping'),
    (datetime.date(2026, 1, 1), 'date'), (set(), 'set'),
])
def test_type_name_one_wording(value, expected):
    """One wording for every message (the MIG catalog used to say str/int/dict/NoneType)."""
    assert type_name(value) == expected


def test_is_int():
    assert is_int(4) and is_int(0)
    assert not is_int(True) and not is_int(4.0) and not is_int('4')


@pytest.mark.parametrize('value, kind, expected', [
    (3, int, 3), ('3', int, 3), ('2.5', float, 2.5), (True, int, None), ('x', float, None), (None, int, None),
    (' 8 ', int, 8), ('4.0', int, None),
])
def test_as_number(value, kind, expected):
    assert as_number(value, kind) == expected


def test_as_number_default():
    assert as_number('x', int, 1) == 1 and as_number(None, int, 0) == 0 and as_number('7', int, 1) == 7


def test_optional_list():
    assert optional_list(None, 'p') == ([], [])
    assert optional_list(['a'], 'p') == ([(0, 'a')], [])
    assert optional_list('a', 'p') == ([], ['p must be a list, got string'])


# --- unknown keys ---------------------------------------------------------------------------

def test_unknown_key_message_style():
    """The one style (the MIG geometry said "unexpected field ... (allowed: ...)", the catalog
    "unknown key(s) ... (allowed: ...)")."""
    assert unknown_key_error('mig-device', ('devices', 'mig-devices'), 'p') == \
        "p: unknown key 'mig-device'; did you mean 'mig-devices'? (known keys: devices, mig-devices)"
    assert unknown_key_error('zzz', ('a', 'b'), 'p') == "p: unknown key 'zzz' (known keys: a, b)"


def test_unknown_key_errors_in_mapping_order():
    assert unknown_key_errors({'b': 1, 'x': 2, 'a': 3, 'Name': 4}, ('name',), 'p') == [
        "p: unknown key 'b' (known keys: name)", "p: unknown key 'x' (known keys: name)",
        "p: unknown key 'a' (known keys: name)",
        "p: unknown key 'Name'; did you mean 'name'? (known keys: name)"]


def test_suggest():
    assert suggest('timeslicing', ('timeSlicing', 'mps')) == 'timeSlicing'
    assert suggest('replica', ('name', 'replicas')) == 'replicas'
    assert suggest('zzz', ('name', 'replicas')) is None
    assert suggest(42, ('name',)) is None


# --- Kubernetes names -----------------------------------------------------------------------

@pytest.mark.parametrize('value, subdomain, label', [
    ('gpu-operator', True, True), ('a.b', True, False), ('A', False, False), ('-a', False, False),
    ('x' * 63, True, True), ('x' * 64, True, False), ('x' * 254, False, False), (None, False, False),
])
def test_dns_names(value, subdomain, label):
    assert is_dns_subdomain(value) is subdomain
    assert is_dns_label(value) is label


@pytest.mark.parametrize('key, valid', [
    ('nvidia.com/gpu', True), ('dedicated', True), ('node-role.kubernetes.io/master', True),
    ('a.b_c-d', True), ('', False), ('-a', False), ('example.com/', False), ('UPPER.com/x', False),
    (None, False),
])
def test_label_key_errors(key, valid):
    assert (label_key_errors(key) == []) is valid


@pytest.mark.parametrize('value, valid', [
    ('', True), ('true', True), ('A100-SXM4-40GB', True), ('x' * 63, True), ('x' * 64, False), ('a b', False),
    ('-a', False), (1, False),
])
def test_label_value_errors(value, valid):
    assert (label_value_errors(value) == []) is valid


# --- structural schema ----------------------------------------------------------------------

SCHEMA = Fields({'name': string_errors, 'on': bool_errors, 'mode': one_of('a', 'b'),
                 'items': Items(Fields({'n': string_errors}), non_empty='list one item')},
                required={'name': 'the name'}, not_null={'mode': 'pick a or b'})


def test_schema_valid():
    assert SCHEMA({'name': 'x', 'on': True, 'mode': 'a', 'items': [{'n': 'y'}]}, '') == []


def test_schema_messages():
    assert SCHEMA({'nam': 'x', 'on': 'yes', 'mode': None, 'items': []}, '') == [
        "top level: unknown key 'nam'; did you mean 'name'? (known keys: name, on, mode, items)",
        'name is required: the name',
        'mode is empty (null): pick a or b',
        "on must be true or false, got string 'yes'",
        'items must not be empty: list one item']
    assert SCHEMA({'name': 1, 'mode': 'c', 'items': [3]}, 'cfg') == [
        'cfg.name must be a string, got integer', "cfg.mode must be one of a, b, got 'c'",
        'cfg.items[0] must be a mapping, got integer']
    assert SCHEMA([], 'cfg') == ['cfg must be a mapping, got list']
    assert Items(string_errors)('x', 'p') == ['p must be a list, got string']


def test_join_path():
    assert join_path('', 'a') == 'a' and join_path('a', 'b') == 'a.b'


def test_is_ascii_digits():
    from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import is_ascii_digits
    assert is_ascii_digits('0') and is_ascii_digits('0123456789')
    for value in ('', ' 1', '1 ', '-1', '1.5', '\u0663', '\uff12', '\u00b2', '1\u0660', '1\n', 1, None, b'1'):
        assert not is_ascii_digits(value), repr(value)


@pytest.mark.parametrize('value', ['\u0663', '\uff12', '\u00b2', '\uff11.\uff15', '1\u0660'])
def test_as_number_refuses_other_scripts_digits(value):
    assert as_number(value, int) is None and as_number(value, float, 7) == 7
    assert as_number('12', int) == 12 and as_number(' 1.5 ') == 1.5
