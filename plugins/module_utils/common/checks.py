# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Generic input checks with one message style. Pure, standard library only.

Every planner, filter and module of the collection words its input errors with these helpers,
so users read one style everywhere:

- a value's type is named the way YAML users think of it: ``null``, ``boolean``, ``string``,
  ``integer``, ``float``, ``mapping``, ``list`` (:func:`type_name`);
- a key that is not allowed reads ``<path>: unknown key '<key>'; did you mean '<hint>'? (known
  keys: a, b, c)`` (:func:`unknown_key_errors`);
- Kubernetes names (label keys and values, RFC 1123 DNS subdomains and labels) are checked by
  the rules the API server applies.

The small structural schema (:class:`Fields`, :class:`Items`, :func:`one_of`, :func:`bool_errors`,
:func:`string_errors`) describes a nested configuration as checks that each take
``(value, path)`` and return a list of messages.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import difflib
import re

_DNS_LABEL = r'[a-z0-9]([-a-z0-9]*[a-z0-9])?'
_DNS_LABEL_RE = re.compile(r'^%s$' % _DNS_LABEL)
_DNS_SUBDOMAIN_RE = re.compile(r'^%s(\.%s)*$' % (_DNS_LABEL, _DNS_LABEL))
_NAME_RE = re.compile(r'^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$')
_LABEL_VALUE_RE = re.compile(r'^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$')

_TYPE_NAMES = ((bool, 'boolean'), (str, 'string'), (int, 'integer'), (float, 'float'), (dict, 'mapping'),
               (list, 'list'), (tuple, 'list'))


# --- values ---------------------------------------------------------------------------------

def type_name(value):
    """Name of a value's type the way YAML users think of it (for messages).

    ``null``, ``boolean``, ``string``, ``integer``, ``float``, ``mapping`` or ``list``; Ansible's
    tagged subclasses (ansible-core 2.19) read as their builtin type; anything else by the name of
    its nearest builtin class.
    """
    if value is None:
        return 'null'
    for klass, name in _TYPE_NAMES:
        if isinstance(value, klass):
            return name
    for klass in type(value).__mro__:
        if klass.__module__ == 'builtins' and klass is not object:
            return klass.__name__
    return type(value).__name__


def is_int(value):
    """True for a real integer (YAML ``4``), False for booleans, floats and strings."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_ascii_digits(text):
    """True for a string of the digits 0-9 only (at least one). Python's ``int()``, ``str.isdigit()`` and ``\\d``
    also take other scripts' digits ('\u0663', '\uff12', '\u00b2'), which no Kubernetes field or NVIDIA tool reads
    as a number: every count parsed from text goes through this (or a regular expression with ``re.ASCII``)."""
    return isinstance(text, str) and text.isascii() and text.isdigit()


def as_number(value, kind=float, default=None):
    """``value`` as ``kind`` (int or float) when it is a number or a numeric string (ASCII digits only), else
    ``default`` (booleans are not numbers). For role variables that Jinja may hand over as strings, and for
    label values such as ``nvidia.com/gpu.count: '8'``."""
    if isinstance(value, bool) or (isinstance(value, str) and not value.isascii()):
        return default
    try:
        return kind(value)
    except (TypeError, ValueError):
        return default


def optional_list(values, path):
    """``(enumerated items, errors)`` for an optional list argument (None means empty)."""
    if values is None:
        return [], []
    if not isinstance(values, (list, tuple)):
        return [], ['%s must be a list, got %s' % (path, type_name(values))]
    return list(enumerate(values)), []


# --- keys -----------------------------------------------------------------------------------

def suggest(word, candidates):
    """The candidate ``word`` was most likely meant to be (case-insensitive first), or None."""
    word = str(word)
    for candidate in candidates:
        if candidate.lower() == word.lower():
            return candidate
    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return close[0] if close else None


def unknown_key_error(key, known, path):
    """The one message for a key that is not in ``known`` (with a 'did you mean' hint)."""
    hint = suggest(key, known)
    return "%s: unknown key '%s'%s (known keys: %s)" % (
        path, key, "; did you mean '%s'?" % hint if hint else '', ', '.join(known))


def unknown_key_errors(mapping, known, path):
    """One message per key of ``mapping`` not in ``known``, in the mapping's order."""
    return [unknown_key_error(key, known, path) for key in mapping if key not in known]


# --- Kubernetes names -----------------------------------------------------------------------

def is_dns_subdomain(value):
    """RFC 1123 subdomain (lowercase alphanumerics, '-' and '.'), at most 253 characters."""
    return isinstance(value, str) and len(value) <= 253 and bool(_DNS_SUBDOMAIN_RE.match(value))


def is_dns_label(value):
    """RFC 1123 label (lowercase alphanumerics and '-'), at most 63 characters: a namespace name."""
    return isinstance(value, str) and len(value) <= 63 and bool(_DNS_LABEL_RE.match(value))


def label_key_errors(key):
    """Reasons why ``key`` is not a valid label/taint key ('[prefix/]name'); [] when valid."""
    if not isinstance(key, str) or not key:
        return ['must be a non-empty string']
    prefix, _sep, name = key.rpartition('/')
    errors = []
    if _sep and not is_dns_subdomain(prefix):
        errors.append("prefix '%s' must be a lowercase DNS subdomain such as 'example.com'" % prefix)
    if len(name) > 63 or not _NAME_RE.match(name):
        errors.append("name '%s' must be at most 63 characters of [A-Za-z0-9-_.], "
                      "starting and ending with a letter or digit" % name)
    return errors


def label_value_errors(value):
    """Reasons why ``value`` is not a valid label value; [] when valid (empty is valid)."""
    if not isinstance(value, str):
        return ['must be a string, got %s (quote it in YAML)' % type_name(value)]
    if len(value) > 63 or not _LABEL_VALUE_RE.match(value):
        return ["'%s' must be at most 63 characters of [A-Za-z0-9-_.], starting and ending "
                "with a letter or digit" % value]
    return []


# --- structural schema ----------------------------------------------------------------------

def join_path(path, key):
    """``path.key``, or ``key`` at the top level."""
    return '%s.%s' % (path, key) if path else key


class Fields(object):
    """Check a mapping: unknown keys (with hints), required keys, then each known key.

    ``fields`` maps each allowed key to its check; ``required`` and ``not_null`` map keys to the
    hint given when the key is missing (or null) and when it is present but null.
    """

    def __init__(self, fields, required=None, not_null=None):
        self.fields = fields
        self.required = required or {}
        self.not_null = not_null or {}

    def __call__(self, value, path):
        if not isinstance(value, dict):
            return ['%s must be a mapping, got %s' % (path or 'the value', type_name(value))]
        errors = unknown_key_errors(value, tuple(self.fields), path or 'top level')
        for key, hint in self.required.items():
            if value.get(key) is None:
                errors.append('%s is required: %s' % (join_path(path, key), hint))
        for key, hint in self.not_null.items():
            if key in value and value[key] is None:
                errors.append('%s is empty (null): %s' % (join_path(path, key), hint))
        for key, check in self.fields.items():
            if value.get(key) is not None:
                errors.extend(check(value[key], join_path(path, key)))
        return errors


class Items(object):
    """Check a list and each item; ``non_empty`` is the hint given when it is empty."""

    def __init__(self, item, non_empty=None):
        self.item = item
        self.non_empty = non_empty

    def __call__(self, value, path):
        if not isinstance(value, list):
            return ['%s must be a list, got %s' % (path, type_name(value))]
        if not value and self.non_empty:
            return ['%s must not be empty: %s' % (path, self.non_empty)]
        errors = []
        for index, item in enumerate(value):
            errors.extend(self.item(item, '%s[%d]' % (path, index)))
        return errors


def one_of(*allowed):
    """A check that accepts exactly the ``allowed`` values."""
    def check(value, path):
        if value in allowed:
            return []
        return ["%s must be one of %s, got %r" % (path, ', '.join(allowed), value)]
    return check


def bool_errors(value, path):
    """A check for true/false (not the strings 'yes' or 'true')."""
    if isinstance(value, bool):
        return []
    return ['%s must be true or false, got %s %r' % (path, type_name(value), value)]


def string_errors(value, path):
    """A check for a string."""
    if isinstance(value, str):
        return []
    return ['%s must be a string, got %s' % (path, type_name(value))]
