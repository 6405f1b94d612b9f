# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpuops.gpu.secret_var: a secret variable's value exactly as written. The end-to-end proof (a vars file
through ansible-playbook into a Secret, never templated, never echoed) is
tests/integration/test_secrets_literal.py."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu.plugins.lookup.secret_var import literal


@pytest.mark.parametrize('value', ['Pw{{ 6*7 }}x', 'Pw{{ undefined_name }}x', '{% raw %}{{', '{{ a }} {{ b }}',
                                   '{{ lookup("env", "HOME") }}', '{{ 6*7 }}', "Pa55'\"\\$word"])
def test_any_value_but_one_reference_is_the_secret_itself(value):
    assert literal('pw', {'pw': value, 'a': 'A', 'b': 'B'}) == value


def test_one_reference_is_followed_literally():
    variables = {'pw': '{{ vault_pw }}', 'vault_pw': '{{vault_inner}}', 'vault_inner': 'V{{ 6*7 }}v'}
    assert literal('pw', variables) == 'V{{ 6*7 }}v'


def test_reference_errors_name_variables_never_values():
    with pytest.raises(ValueError, match=r'^pw refers to \{\{ missing \}\}, which is not defined$'):
        literal('pw', {'pw': '{{ missing }}'})
    with pytest.raises(ValueError, match='refers to itself'):
        literal('pw', {'pw': '{{ a }}', 'a': '{{ pw }}'})


@pytest.mark.parametrize('value', [['Secret-1'], {'k': 'Secret-1'}, True])
def test_non_strings_fail_with_the_name_only(value):
    with pytest.raises(ValueError) as info:
        literal('pw', {'pw': value})
    assert str(info.value) == 'pw must be a string'


def test_numbers_become_strings():
    assert literal('pw', {'pw': 123456}) == '123456'


def test_environment_fallback_in_order_and_default():
    env = {'A': '', 'B': 'B{{ x }}', 'C': 'c'}
    assert literal('pw', {'pw': ''}, ['A', 'B', 'C'], environ=env) == 'B{{ x }}'
    assert literal('pw', {}, ['A', 'C'], environ=env) == 'c'
    assert literal('pw', {'pw': 'set'}, ['C'], environ=env) == 'set'
    assert literal('pw', {'pw': None}, ['A'], environ=env, default='none') == 'none'
    assert literal('pw', {'pw': '{{ empty }}', 'empty': ''}, ['C'], environ=env) == 'c'
