# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Which published devices a DRA CEL selector selects, for the expressions this collection writes
(gpu/dra_cel.py), the DeviceClasses of NVIDIA's driver chart and the usual hand-written ones. Pure, no I/O.

The scheduler evaluates a DeviceClass's (and a request's) CEL selectors against every device of the
ResourceSlices; to count the devices a class can still get (the smoke test's fill test) the collection must
do the same. This is a small evaluator of the part of CEL device selectors use, with CEL's semantics
(docs/facts.md, "Dynamic Resource Allocation"):

* ``device.driver``, ``device.attributes['<domain>'].<name>`` (or ``['<name>']``), ``device.capacity[...]``;
  an attribute or capacity published without a domain is in the driver's domain; a domain with nothing published
  is an empty map, a name missing from it an error;
* string, integer, boolean and list literals; ``semver('1.2.3')``, ``quantity('40Gi')``;
* ``!``, ``&&``, ``||`` (commutative: an error on one side is absorbed by a decisive other side),
  ``==``, ``!=``, ``<``, ``<=``, ``>``, ``>=``, ``in`` (a list, or a name in an attribute map);
* the methods ``compareTo``, ``isGreaterThan``, ``isLessThan`` (versions, quantities), ``startsWith``,
  ``endsWith``, ``contains`` (strings).

:func:`select` answers True, False or None: None when the expression uses anything else (it is not
understood) or fails on the device (a missing attribute, a type mismatch: the scheduler reports such a
runtime error instead of choosing), so that a caller never counts a device it is not sure of.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.quota import parse_quantity

_TOKEN = re.compile(r"""\s*(?:(?P<num>[0-9]+)(?![0-9A-Za-z_.])|(?P<str>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")|"""
                    r"""(?P<op>&&|\|\||==|!=|<=|>=|[<>!()\[\].,])|(?P<id>[A-Za-z_][A-Za-z0-9_]*))""")
_SEMVER = re.compile(r'^v?([0-9]+)(?:\.([0-9]+))?(?:\.([0-9]+))?(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$')
_COMPARISONS = ('==', '!=', '<', '<=', '>', '>=')
_STRING_METHODS = {'startsWith': lambda s, a: s.startswith(a), 'endsWith': lambda s, a: s.endswith(a),
                   'contains': lambda s, a: a in s}
METHODS = ('compareTo', 'isGreaterThan', 'isLessThan') + tuple(_STRING_METHODS)
VALUE_KEYS = ('string', 'version', 'int', 'bool')


class _NotUnderstood(ValueError):
    """The expression uses something outside the subset this file evaluates."""


class _Error(object):
    """A CEL runtime error (an evaluation that yields no value)."""


ERROR = _Error()


class Domains(dict):
    """``device.attributes`` / ``device.capacity``: a domain nothing is published in is an empty map, not an
    error (resource/v1 types.go, DeviceSelector CEL)."""


class Version(tuple):
    """A semantic version: (major, minor, patch, pre-release) ordered as semver orders them."""

    @classmethod
    def parse(cls, text):
        match = _SEMVER.match(str(text).strip()) if isinstance(text, str) else None
        if match is None:
            return None
        major, minor, patch, pre = match.groups()
        return cls((int(major), int(minor or 0), int(patch or 0), pre or ''))

    def key(self):
        # a version without a pre-release sorts after any of its pre-releases
        return self[:3] + ((1, '') if not self[3] else (0, self[3]))


class Quantity(object):
    """A Kubernetes quantity (an exact fraction), kept apart from CEL integers."""

    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        return isinstance(other, Quantity) and self.value == other.value

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = None

    def key(self):
        return self.value


# --- parsing -----------------------------------------------------------------------------------------------

def _tokens(text):
    out, pos = [], 0
    while pos < len(text):
        if not text[pos:].strip():
            break
        match = _TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            raise _NotUnderstood('unexpected %r' % text[pos:pos + 10].strip())
        kind = match.lastgroup
        out.append((kind, match.group(kind)))
        pos = match.end()
    return out


def _string(raw):
    body = raw[1:-1]
    return re.sub(r'\\(.)', lambda m: {'n': '\n', 't': '\t'}.get(m.group(1), m.group(1)), body)


class _Parser(object):
    """Recursive descent over the tokens into nested tuples (the expression's tree)."""

    def __init__(self, text):
        self.tokens = _tokens(text)
        self.pos = 0

    def peek(self, value=None):
        token = self.tokens[self.pos] if self.pos < len(self.tokens) else (None, None)
        return token if value is None else token[1] == value and token[0] in ('op', 'id')

    def take(self, value=None):
        token = self.peek()
        if token[0] is None or (value is not None and token[1] != value):
            raise _NotUnderstood('expected %s, got %s' % (value or 'more', token[1]))
        self.pos += 1
        return token

    def parse(self):
        tree = self.disjunction()
        if self.pos != len(self.tokens):
            raise _NotUnderstood('unexpected %s' % self.peek()[1])
        return tree

    def disjunction(self):
        return self.chain('||', 'or', self.conjunction)

    def conjunction(self):
        return self.chain('&&', 'and', self.relation)

    def chain(self, operator, tag, operand):
        """``operand (operator operand)*``, left-associative, as nested ``(tag, left, right)`` tuples."""
        tree = operand()
        while self.peek(operator):
            self.take()
            tree = (tag, tree, operand())
        return tree

    def relation(self):
        tree = self.unary()
        kind, value = self.peek()
        if (kind == 'op' and value in _COMPARISONS) or (kind == 'id' and value == 'in'):
            self.take()
            return ('cmp', value, tree, self.unary())
        return tree

    def unary(self):
        if self.peek('!'):
            self.take()
            return ('not', self.unary())
        return self.member(self.primary())

    def member(self, tree):
        while True:
            if self.peek('.'):
                self.take()
                name = self.take()
                if name[0] != 'id':
                    raise _NotUnderstood('expected a name after .')
                if self.peek('('):
                    if name[1] not in METHODS:
                        raise _NotUnderstood('the method %s is not understood' % name[1])
                    tree = ('method', tree, name[1], self.arguments())
                else:
                    tree = ('get', tree, ('lit', name[1]))
            elif self.peek('['):
                self.take()
                tree = ('get', tree, self.disjunction())
                self.take(']')
            else:
                return tree

    def arguments(self):
        self.take('(')
        return self.items(')')

    def items(self, closer):
        """Expressions separated by commas, up to and with ``closer``."""
        items = []
        while not self.peek(closer):
            items.append(self.disjunction())
            if not self.peek(closer):
                self.take(',')
        self.take(closer)
        return items

    def primary(self):
        kind, value = self.take()
        if kind == 'num':
            return ('lit', int(value))
        if kind == 'str':
            return ('lit', _string(value))
        if value == '(':
            tree = self.disjunction()
            self.take(')')
            return tree
        if value == '[':
            return ('list', self.items(']'))
        if kind == 'id' and value in ('true', 'false'):
            return ('lit', value == 'true')
        if kind == 'id' and value == 'device':
            return ('device',)
        if kind == 'id' and value in ('semver', 'quantity') and self.peek('('):
            return ('call', value, self.arguments())
        raise _NotUnderstood('%s is not understood' % value)


def parse(expression):
    """The tree of ``expression``; raises _NotUnderstood."""
    if not isinstance(expression, str) or not expression.strip():
        raise _NotUnderstood('not an expression')
    return _Parser(expression).parse()


# --- evaluation --------------------------------------------------------------------------------------------

def device_env(device, driver):
    """The ``device`` variable of CEL for a published device (as a ResourceSlice lists it)."""
    attributes, capacity = {}, {}
    for name, value in (device.get('attributes') or {}).items():
        domain, _sep, short = name.rpartition('/') if '/' in name else (driver, '/', name)
        kind = next((key for key in VALUE_KEYS if isinstance(value, dict) and key in value), None)
        if kind is not None:
            raw = value[kind]
            attributes.setdefault(domain, {})[short] = Version.parse(raw) if kind == 'version' else raw
    for name, value in (device.get('capacity') or {}).items():
        domain, _sep, short = name.rpartition('/') if '/' in name else (driver, '/', name)
        amount = parse_quantity(value.get('value')) if isinstance(value, dict) else None
        if amount is not None:
            capacity.setdefault(domain, {})[short] = Quantity(amount)
    return {'driver': driver, 'attributes': Domains(attributes), 'capacity': Domains(capacity)}


def _bool(value):
    return value if isinstance(value, bool) else ERROR


def _logic(op, left, right):
    decisive = op == 'or'  # True decides an ||, False an &&
    if left is decisive or right is decisive:
        return decisive
    if left is ERROR or right is ERROR:
        return ERROR
    return not decisive


def _same_kind(left, right):
    both = (left, right)
    return (all(isinstance(v, bool) for v in both) or all(isinstance(v, str) for v in both)
            or all(isinstance(v, int) and not isinstance(v, bool) for v in both)
            or all(isinstance(v, Version) for v in both) or all(isinstance(v, Quantity) for v in both))


def _compare(op, left, right):
    if op == 'in':
        if isinstance(right, list):
            return any(_same_kind(left, item) and left == item for item in right)
        return left in right if isinstance(right, dict) and isinstance(left, str) else ERROR
    if not _same_kind(left, right):
        return False if op == '==' else True if op == '!=' else ERROR
    if op in ('==', '!='):
        return (left == right) == (op == '==')
    if isinstance(left, (Version, Quantity)) or isinstance(left, bool):
        return ERROR  # ordered only through compareTo
    return {'<': left < right, '<=': left <= right, '>': left > right, '>=': left >= right}[op]


def _method(target, name, args):
    if len(args) != 1 or ERROR in (target, args[0]):
        return ERROR
    arg = args[0]
    if name in _STRING_METHODS and isinstance(target, str) and isinstance(arg, str):
        return _STRING_METHODS[name](target, arg)
    if name in ('compareTo', 'isGreaterThan', 'isLessThan') and isinstance(target, (Version, Quantity)) \
            and type(target) is type(arg):
        order = (target.key() > arg.key()) - (target.key() < arg.key())
        return {'compareTo': order, 'isGreaterThan': order > 0, 'isLessThan': order < 0}[name]
    return ERROR


def _call(name, args):
    if len(args) != 1 or not isinstance(args[0], str):
        return ERROR
    if name == 'semver':
        version = Version.parse(args[0])
    else:
        amount = parse_quantity(args[0])
        version = None if amount is None else Quantity(amount)
    return ERROR if version is None else version


def evaluate(tree, env):
    """The value of a parsed expression for one device (``device_env``); ERROR on a runtime error."""
    kind = tree[0]
    if kind == 'lit':
        return tree[1]
    if kind == 'device':
        return env
    if kind == 'list':
        return [evaluate(item, env) for item in tree[1]]
    if kind in ('and', 'or'):
        return _logic(kind, _bool(evaluate(tree[1], env)), _bool(evaluate(tree[2], env)))
    if kind == 'not':
        value = _bool(evaluate(tree[1], env))
        return value if value is ERROR else not value
    if kind == 'get':
        target, key = evaluate(tree[1], env), evaluate(tree[2], env)
        if isinstance(target, Domains) and isinstance(key, str):
            return target.get(key, {})
        return target[key] if isinstance(target, dict) and isinstance(key, str) and key in target else ERROR
    if kind == 'cmp':
        left, right = evaluate(tree[2], env), evaluate(tree[3], env)
        if left is ERROR or right is ERROR or (isinstance(right, list) and ERROR in right):
            return ERROR
        return _compare(tree[1], left, right)
    if kind == 'method':
        return _method(evaluate(tree[1], env), tree[2], [evaluate(a, env) for a in tree[3]])
    return _call(tree[1], [evaluate(a, env) for a in tree[2]])


class Selector(object):
    """The CEL selectors of a DeviceClass and of a request, and-ed: ``select(device)`` is True, False or None
    (not understood, or a runtime error on that device); ``problem`` says why None when known at parse time."""

    def __init__(self, expressions, driver):
        self.driver = driver
        self.trees, self.problem = [], None
        for expression in expressions:
            try:
                self.trees.append(parse(expression))
            except _NotUnderstood as exc:
                self.problem = 'selector not understood (%s): %s' % (exc, _short(expression))
                self.trees = None
                break

    def select(self, device):
        if self.trees is None:
            return None
        env = device_env(device, self.driver)
        values = [evaluate(tree, env) for tree in self.trees]
        if False in values:
            return False
        return None if ERROR in values or any(not isinstance(v, bool) for v in values) else True


def _short(expression, room=80):
    text = ' '.join(str(expression).split())
    return text if len(text) <= room else text[:room - 3] + '...'


def selector_expressions(selectors):
    """The CEL expressions of a ``selectors`` list (DeviceClass spec or an exact request)."""
    return [((s or {}).get('cel') or {}).get('expression') for s in selectors or []]
