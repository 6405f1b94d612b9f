# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one Kubernetes label-selector parser and matcher. Pure, no I/O.

The grammar is the one the API server applies to ``labelSelector`` (``labels.Parse`` in
k8s.io/apimachinery), so a selector accepted here is accepted by ``kubectl get -l`` and the other
way round::

    <selector>    ::= "" | <requirement> ["," <selector>]
    <requirement> ::= "!" KEY | KEY | KEY ("=" | "==" | "!=") [VALUE]
                    | KEY ("in" | "notin") "(" VALUE {"," VALUE} ")"

- Blanks (space, tab, newline) separate tokens and are otherwise ignored: ``a in(x)``,
  ``a  =  b`` and ``a notin (1)`` are all valid. ``=``, ``!``, ``(``, ``)``, ``,``, ``<``, ``>``
  end a word, so ``a=b`` needs no blanks.
- KEY is a qualified name (``[DNS-subdomain/]name``, name at most 63 characters of
  ``[A-Za-z0-9-_.]`` starting and ending with a letter or digit). VALUE is a label value: empty,
  or at most 63 such characters. Both are checked: ``a=b c``, ``a=-x`` and ``-a`` are errors.
- ``a=`` and ``a!=`` compare with the empty value; ``a in ()`` is ``a in ("")``; empty items in a
  list are the empty value (``a in (x,,y)``).
- ``!`` only goes before a bare key (``!a=b`` is an error); a trailing or doubled comma is an error.
- ``in``/``notin`` are words only after a key: ``a=in`` compares with the value ``in``.
- The numeric operators ``<``/``>`` of labels.Parse are not supported (no caller needs them; they
  raise SelectorError naming the operator).
- The empty selector has no requirements and matches every label set.

Parsed form: a list of ``(key, operator, values)`` with operator one of ``'in'``, ``'notin'``,
``'exists'``, ``'!'`` (does not exist); ``=``/``==`` become ``'in'`` and ``!=`` ``'notin'`` with one
value; ``values`` is a sorted tuple without duplicates (empty for ``exists``/``!``).

Matching (as Kubernetes): ``in`` needs the key present with one of the values; ``notin`` holds
when the key is absent or its value is none of the values; ``exists``/``!`` test presence only.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import (
    label_key_errors, label_value_errors, type_name)
from ansible_collections.gpuops.gpu.plugins.module_utils.common.errors import InputError

OPERATORS = ('in', 'notin', 'exists', '!')
_SPECIAL = '=!(),<>'
_BLANK = ' \t\r\n'
_SYMBOLS = ('==', '!=', '=', '!', '(', ')', ',', '<', '>')   # longest first


class SelectorError(InputError, ValueError):
    """A label selector that is not valid Kubernetes label-selector syntax."""


def _tokens(text):
    """[(kind, literal)]: kind is 'word' or the symbol itself; ends with ('end', '')."""
    out, i = [], 0
    while i < len(text):
        char = text[i]
        if char in _BLANK:
            i += 1
        elif char in _SPECIAL:
            sym = next(s for s in _SYMBOLS if text.startswith(s, i))
            out.append((sym, sym))
            i += len(sym)
        else:
            start = i
            while i < len(text) and text[i] not in _BLANK and text[i] not in _SPECIAL:
                i += 1
            out.append(('word', text[start:i]))
    out.append(('end', ''))
    return out


class _Parser(object):
    def __init__(self, text):
        self.text = text
        self.toks = _tokens(text)
        self.pos = 0

    def peek(self):
        return self.toks[self.pos]

    def take(self):
        tok = self.toks[self.pos]
        self.pos += 1
        return tok

    def error(self, found, expected):
        return SelectorError("cannot parse label selector '%s': found '%s', expected %s"
                             % (self.text, found or 'end of string', expected))

    def requirements(self):
        out = []
        if self.peek()[0] == 'end':
            return out
        while True:
            out.append(self.requirement())
            kind, lit = self.take()
            if kind == 'end':
                return out
            if kind != ',':
                raise self.error(lit, "',' or end of string")
            if self.peek()[0] not in ('word', '!'):
                raise self.error(self.peek()[1], "'!' or a label key after ','")

    def requirement(self):
        kind, lit = self.take()
        negated = kind == '!'
        if negated:
            kind, lit = self.take()
        if kind != 'word':
            raise self.error(lit, "'!' or a label key")
        key = self.check_key(lit)
        if negated or self.peek()[0] in ('end', ','):
            return (key, '!' if negated else 'exists', ())
        kind, lit = self.take()
        if kind in ('=', '==', '!='):
            return (key, 'notin' if kind == '!=' else 'in', (self.exact_value(key),))
        if kind == 'word' and lit in ('in', 'notin'):
            return (key, lit, self.value_set(key))
        if kind in ('<', '>'):
            raise SelectorError("cannot parse label selector '%s': operator '%s' is not supported (use =, ==, !=, "
                                "in, notin, a bare key or !key)" % (self.text, kind))
        raise self.error(lit, "one of =, ==, !=, in, notin, ',' or end of string")

    def exact_value(self, key):
        if self.peek()[0] in ('end', ','):
            return ''
        kind, lit = self.take()
        if kind != 'word':
            raise self.error(lit, 'a label value')
        return self.check_value(key, lit)

    def value_set(self, key):
        kind, lit = self.take()
        if kind != '(':
            raise self.error(lit, "'('")
        values, expect_value = set(), True
        while True:
            kind, lit = self.take()
            if kind == ')':
                if expect_value:
                    values.add('')
                return tuple(sorted(values))
            if kind == ',':
                if expect_value:
                    values.add('')
                expect_value = True
            elif kind == 'word' and expect_value:
                values.add(self.check_value(key, lit))
                expect_value = False
            else:
                raise self.error(lit, "',' or ')'" if not expect_value else "a label value, ',' or ')'")

    def check_key(self, key):
        errors = label_key_errors(key)
        if errors:
            raise SelectorError("label selector '%s': key '%s': %s" % (self.text, key, '; '.join(errors)))
        return key

    def check_value(self, key, value):
        errors = label_value_errors(value)
        if errors:
            raise SelectorError("label selector '%s': value of %s: %s" % (self.text, key, '; '.join(errors)))
        return value


def parse_selector(text):
    """``text`` (a label selector string) as [(key, operator, values)]; raises SelectorError.

    ``None`` and ``''`` are the empty selector ([]). See the module docstring for the grammar.
    """
    if text is None:
        return []
    if not isinstance(text, str):
        raise SelectorError('a label selector must be a string such as "node-role.kubernetes.io/worker", '
                            'got %s' % type_name(text))
    return _Parser(text).requirements()


def selector_errors(text, name):
    """``['<name>: <why>']`` when ``text`` is not a valid label selector, else [] (None and '' are valid)."""
    try:
        parse_selector(text)
    except SelectorError as exc:
        return ['%s: %s' % (name, exc)]
    return []


def requirement_matches(requirement, labels):
    """Whether the label mapping ``labels`` satisfies one parsed requirement."""
    key, operator, values = requirement
    present = key in labels
    if operator == 'in':
        return present and labels[key] in values
    if operator == 'notin':
        return not present or labels[key] not in values
    if operator == 'exists':
        return present
    return not present


def selector_matches(requirements, labels):
    """Whether ``labels`` (a mapping, None = no labels) satisfy every parsed requirement."""
    labels = labels or {}
    return all(requirement_matches(r, labels) for r in requirements)


def selector_text(requirements):
    """The canonical selector string of parsed requirements (parses back to the same list)."""
    parts = []
    for key, operator, values in requirements:
        if operator == 'exists':
            parts.append(key)
        elif operator == '!':
            parts.append('!' + key)
        elif len(values) == 1:
            parts.append('%s%s%s' % (key, '=' if operator == 'in' else '!=', values[0]))
        else:
            parts.append('%s %s (%s)' % (key, operator, ','.join(values)))
    return ','.join(parts)


# a LabelSelector's matchExpressions operators, as requirement operators
_EXPRESSION_OPERATORS = {'In': 'in', 'NotIn': 'notin', 'Exists': 'exists', 'DoesNotExist': '!'}


def label_selector_requirements(selector):
    """A LabelSelector object (``matchLabels``, ``matchExpressions``) as requirements; None when an
    expression has an operator Kubernetes does not define (it then matches nothing)."""
    out = [(k, 'in', (v,)) for k, v in sorted((selector.get('matchLabels') or {}).items())]
    for expr in selector.get('matchExpressions') or []:
        operator = _EXPRESSION_OPERATORS.get(expr.get('operator'))
        if operator is None:
            return None
        out.append((expr.get('key'), operator, tuple(expr.get('values') or ())))
    return out


def blocking_pdbs(pod, pdbs):
    """'namespace/name' of the PodDisruptionBudgets that select ``pod`` and allow no disruption."""
    meta = pod.get('metadata') or {}
    labels = meta.get('labels') or {}
    out = []
    for pdb in pdbs:
        if pdb['metadata'].get('namespace') != meta.get('namespace'):
            continue
        sel = (pdb.get('spec') or {}).get('selector') or {}
        if not sel:
            continue
        requirements = label_selector_requirements(sel)
        if requirements is None or not selector_matches(requirements, labels):
            continue
        if (pdb.get('status') or {}).get('disruptionsAllowed', 0) < 1:
            out.append('%s/%s' % (pdb['metadata']['namespace'], pdb['metadata']['name']))
    return out
