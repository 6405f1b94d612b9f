# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

DOCUMENTATION = r'''
name: secret_var
author:
  - gpuops.gpu contributors (@gpuops)
version_added: 0.1.0
short_description: The value of a secret variable, taken literally (never templated)
description:
  - Returns the value of each variable named in the terms exactly as it was written (a vars file, C(-e),
    inventory, an C(!vault) value decrypted), marked unsafe, so that Ansible never templates it. A password such
    as C(Pw{{ 6*7 }}x) stays C(Pw{{ 6*7 }}x), and one with C({{ undefined_name }}) in it is neither an error nor
    echoed in one. Ansible itself templates a variable's value when it is used (ansible-core 2.19 and later also
    for values from vars files), which is how a secret would be changed or shown.
  - A value that is exactly one variable reference, C({{ name }}), is followed to the value of that variable,
    read the same literal way (the usual C(password "{{ vault_password }}") pattern).
  - A value that, after those references, is still a Jinja expression fails, naming the variable (never the
    value), so that the text of a lookup is never stored as the secret. It is an expression when the whole value
    is one C({{ ... }}) (such as C({{ lookup('community.hashi_vault.vault_kv2_get', ...) }}) or
    C({{ vault_x | trim }})) or when a C({{ ... }}) in it calls C(lookup), C(query) or C(q). Resolve such a
    secret first, in a C(no_log) task (C(ansible.builtin.set_fact) of a variable to the lookup, then refer to
    that variable), or pass it in an environment variable of O(env) or a vars file.
  - Any other value, with or without C({{), is the secret itself (C(Pw{{ 6*7 }}x)).
  - When the variable is empty or not defined, the first non-empty environment variable of O(env) on the
    controller is taken, literally (an AWX/AAP credential injects secrets as environment variables).
  - A value that is not a string (numbers are turned into strings) fails with the variable's name, never the value.
options:
  _terms:
    description: Names of the variables.
    required: true
  env:
    description: Environment variables to take the value from, in order, when the variable is empty or not defined.
    type: list
    elements: str
    default: []
  default:
    description: The value when neither the variable nor an environment variable of O(env) is set.
    type: str
    default: ''
notes:
  - The roles of this collection read every secret variable through this lookup, in a C(no_log) task.
'''

EXAMPLES = r'''
- name: Read the registry password literally
  ansible.builtin.set_fact:
    __password: "{{ lookup('gpuops.gpu.secret_var', 'mirror_registry_password', env=['GPUOPS_REGISTRY_PASSWORD']) }}"
  no_log: true
'''

RETURN = r'''
_raw:
  description: The literal values, one per term, marked unsafe (never templated).
  type: list
  elements: str
'''

import os
import re

from ansible.errors import AnsibleLookupError
from ansible.module_utils.six import string_types
from ansible.plugins.lookup import LookupBase
from ansible.utils.unsafe_proxy import wrap_var

# exactly one variable reference: '{{ name }}' (the whole value)
_REFERENCE = re.compile(r'^\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}$')
_MAX_REFERENCES = 10
# still Jinja after the references: a whole '{{ ... }}', or a '{{ ... }}' that calls a lookup
_EXPRESSION = re.compile(r'^\s*\{\{.*\}\}\s*$', re.DOTALL)
_LOOKUP_CALL = re.compile(r'\{\{[^}]*\b(lookup|query|q)\s*\(')
_RESOLVE_FIRST = ('%s is a Jinja expression, which is never templated here (its text would become the secret): '
                  'resolve it first in a no_log task (set_fact of a variable to the lookup, then refer to that '
                  'variable with {{ name }}), or pass the secret in an environment variable or a vars file')


def _text(name, value):
    """The value as a plain str: strings, vaulted strings (decrypted) and numbers; else a ValueError that
    names the variable, never the value."""
    if isinstance(value, bool) or value is None:
        raise ValueError('%s must be a string' % name)
    if isinstance(value, string_types):
        return u''.join([value])  # a plain str copy (no subclass, no tags)
    if isinstance(value, (int, float)):
        return str(value)
    if hasattr(value, 'lower') and hasattr(value, '__iter__'):  # vaulted: EncryptedString (2.19+), AnsibleVaultEncryptedUnicode
        return u''.join(value)
    raise ValueError('%s must be a string' % name)


def literal(name, variables, env=(), environ=None, default=''):
    """The literal value of the variable ``name`` in ``variables`` (one '{{ other }}' reference followed),
    else of the first non-empty environment variable of ``env``, else ``default``."""
    seen = []
    value = variables.get(name)
    while value is not None:
        text = _text(seen[-1] if seen else name, value)
        match = _REFERENCE.match(text)
        if not match:
            if _EXPRESSION.match(text) or _LOOKUP_CALL.search(text):
                raise ValueError(_RESOLVE_FIRST % ''.join([name] + [' through {{ %s }}' % ref for ref in seen]))
            if text:
                return text
            break
        ref = match.group(1)
        if ref in seen or len(seen) >= _MAX_REFERENCES:
            raise ValueError('%s refers to itself through {{ %s }}' % (name, ref))
        if ref not in variables:
            raise ValueError('%s refers to {{ %s }}, which is not defined' % (name, ref))
        seen.append(ref)
        value = variables[ref]
    environ = os.environ if environ is None else environ
    for key in env or ():
        if environ.get(key):
            return environ[key]
    return default


class LookupModule(LookupBase):

    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        env, default = self.get_option('env'), self.get_option('default')
        out = []
        for term in terms:
            if not isinstance(term, string_types):
                raise AnsibleLookupError('secret_var: a term is a variable name, not %s' % type(term).__name__)
            try:
                out.append(wrap_var(literal(term, variables or {}, env, default=default)))
            except ValueError as exc:
                raise AnsibleLookupError('secret_var: %s' % exc)
        return out
