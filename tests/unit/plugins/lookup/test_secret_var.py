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


@pytest.mark.parametrize('value', ['Pw{{ 6*7 }}x', 'Pw{{ undefined_name }}x', '{% raw %}{{', 'a}}{{b', '{{',
                                   'x{{ a }} {{ b }}', 'lookup(x) {{', "Pa55'\"\\$word"])
def test_any_value_but_a_reference_or_an_expression_is_the_secret_itself(value):
    assert literal('pw', {'pw': value, 'a': 'A', 'b': 'B'}) == value


VAULT_LOOKUP = "{{ lookup('community.hashi_vault.vault_kv2_get', 'gpu/registry', token='Tok-SENTINEL-91').secret.pw }}"


@pytest.mark.parametrize('variables, chain', [
    ({'pw': VAULT_LOOKUP}, 'pw'),
    ({'pw': '{{ vault_x }}', 'vault_x': VAULT_LOOKUP}, 'pw through {{ vault_x }}'),
    ({'pw': '{{ a }}', 'a': '{{b}}', 'b': ' {{ vault_x | trim }}\n'}, 'pw through {{ a }} through {{ b }}'),
    ({'pw': 'pre-{{ query("env", "Tok-SENTINEL-91") }}'}, 'pw'),
    ({'pw': "{{ q('file', 'x') }}-post"}, 'pw'),
    ({'pw': '{{ a }} {{ b }}'}, 'pw'),
    ({'pw': '{{ 6*7 }}'}, 'pw'),
])
def test_a_value_still_holding_jinja_fails_with_how_to_pass_it(variables, chain):
    with pytest.raises(ValueError) as info:
        literal('pw', variables, ['ENV_PW'], environ={'ENV_PW': 'from-env'})
    message = str(info.value)
    assert message.startswith(chain + ' is a Jinja expression, which is never templated here')
    assert 'set_fact' in message and 'no_log' in message and 'environment variable' in message
    assert 'SENTINEL' not in message and 'lookup(' not in message and 'vault_kv2_get' not in message


def test_a_resolved_secret_through_a_reference_is_taken_literally():
    # what set_fact of a lookup leaves: the secret itself, even when it holds '{{'
    assert literal('pw', {'pw': '{{ resolved }}', 'resolved': 'V{{ 6*7 }}v'}) == 'V{{ 6*7 }}v'


def test_the_lookup_error_names_the_variable_never_the_value(monkeypatch):
    from ansible.errors import AnsibleLookupError
    from ansible_collections.gpuops.gpu.plugins.lookup.secret_var import LookupModule
    monkeypatch.setattr(LookupModule, 'set_options', lambda self, **kwargs: None)
    monkeypatch.setattr(LookupModule, 'get_option', lambda self, name: {'env': [], 'default': ''}[name])
    with pytest.raises(AnsibleLookupError) as info:
        LookupModule().run(['pw'], variables={'pw': '{{ vault_x }}', 'vault_x': VAULT_LOOKUP})
    assert str(info.value).startswith('secret_var: pw through {{ vault_x }} is a Jinja expression')
    assert 'SENTINEL' not in str(info.value)


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
