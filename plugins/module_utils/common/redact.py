# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Redaction of secret-looking values in what is read from a cluster (objects and log text). Pure,
no I/O. Used by the diagnostics archive (``ops/diagnostics.py``); the rules are in docs/diagnostics.md.

Rules, in order of strength:

* **By name** (``secret_name``): a mapping key, an environment variable name (``{name, value}``
  entries, as in a container's ``env`` or a ClusterPolicy's ``env`` lists) or a ConfigMap data key
  that contains ``TOKEN``, ``PASSWORD``, ``PASSWD``, ``SECRET``, ``KEY``, ``CREDENTIAL`` or ``AUTH``
  (any case, so ``client_configuration_token.tok``, ``AWS_SECRET_ACCESS_KEY``, docker ``auths``) has
  its value replaced by ``REDACTED``, whatever it is (a string, a number, a whole mapping or list).
  Not secrets, kept: references to secrets and structural fields (``key`` of a toleration or a
  selector, ``topologyKey``, a projected ``serviceAccountToken`` volume source, ``secretName``,
  ``secretKeyRef``, ``imagePullSecrets``, any name ending in ``Name``, ``Ref``, ``Refs``, ``Secrets``,
  ``Path``, ``File``), which name a secret without holding it.
* **In any text** (``redact_text``, applied to every string that is kept): bearer and basic
  ``Authorization`` values, JSON Web Tokens (``eyJ...``: service-account and licensing tokens),
  PEM private-key blocks, passwords in URLs (``scheme://user:password@``), ``NAME=value`` and
  ``name: value`` / ``"name": "value"`` pairs whose name is secret-looking as above, and
  ``{"name": "X_TOKEN", "value": "..."}`` pairs in JSON text.

Redaction errs on the side of removing: a value that only looks like a secret is removed too.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

REDACTED = '<redacted>'

_WORDS = r'token|password|passwd|secret|key|credential|auth'
_SECRET_NAME = re.compile(r'(%s)' % _WORDS, re.IGNORECASE)
# names that are structure (a toleration's or selector's key) or refer to a secret rather than hold it
# (serviceAccountToken: a projected volume source, {audience, expirationSeconds, path}, never a token)
_STRUCTURAL = re.compile(r'^(key|keys|topologyKey|labelKey|matchLabelKeys|mismatchLabelKeys|serviceAccountToken)$',
                         re.IGNORECASE)
_REFERENCE = re.compile(r'(name|names|ref|refs|secrets|path|file)$', re.IGNORECASE)

_TEXT_RULES = (
    # Authorization: Bearer <token> / Basic <base64>, also "bearer token" in a log line
    (re.compile(r'(?i)\b(bearer|basic)(\s+)[A-Za-z0-9._~+/=-]{8,}'), r'\1\2' + REDACTED),
    # JSON Web Tokens (service-account tokens, NVIDIA licensing client tokens)
    (re.compile(r'eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*'), REDACTED),
    # PEM private keys
    (re.compile(r'-----BEGIN ([A-Z ]*)PRIVATE KEY-----.*?(-----END \1PRIVATE KEY-----|$)', re.DOTALL),
     '-----BEGIN PRIVATE KEY-----' + REDACTED + '-----END PRIVATE KEY-----'),
    # scheme://user:password@host
    (re.compile(r'([A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]+:)[^@\s/]+@'), r'\1' + REDACTED + '@'),
    # {"name": "SOME_TOKEN", "value": "..."} in JSON text (env lists in logs, last-applied annotations)
    (re.compile(r'(?i)("name"\s*:\s*"[^"]*(?:%s)[^"]*"\s*,\s*"value"\s*:\s*")((?:[^"\\]|\\.)*)(")' % _WORDS),
     r'\1' + REDACTED + r'\3'),
    # YAML env entries: "name: X_TOKEN" then "value: ..." on the next line
    (re.compile(r'(?i)(name:[ \t]*["\']?[\w.-]*(?:%s)[\w.-]*["\']?[ \t]*\r?\n[ \t]*value:[ \t]*)(?!%s)(\S[^\r\n]*)'
                % (_WORDS, re.escape(REDACTED))), r'\1' + REDACTED),
    # name: value, name=value, "name": "value", with a secret-looking name (secret_name decides)
    (re.compile(r'\b([\w.-]+)(["\']?[ \t]*[:=][ \t]*["\']?)(?![\s"\'{\[]|%s|(?i:bearer|basic)\b)([^\s"\',;}\]]+)'
                % re.escape(REDACTED)), lambda m: m.group(1) + m.group(2) + (REDACTED if secret_name(m.group(1)) else m.group(3))),
)


def secret_name(name):
    """Whether a key or variable ``name`` holds a secret by its name (see the module docstring); for a
    prefixed key (``example.com/api-token``) the part after the last ``/`` counts."""
    if not isinstance(name, str):
        return False
    last = name.rstrip('/').rsplit('/', 1)[-1]
    if _STRUCTURAL.match(last) or _REFERENCE.search(last):
        return False
    return bool(_SECRET_NAME.search(last))


def redact_text(text):
    """``text`` with every secret-looking value replaced by REDACTED (see the module docstring)."""
    if not isinstance(text, str) or not text:
        return text
    for pattern, replacement in _TEXT_RULES:
        text = pattern.sub(replacement, text)
    return text


def _is_env_entry(value):
    return isinstance(value, dict) and isinstance(value.get('name'), str) and 'value' in value


def redact(data):
    """A copy of ``data`` (dicts, lists, scalars as decoded from JSON or YAML) with secret values
    replaced: by key name, by environment variable name, and in every string by ``redact_text``."""
    if isinstance(data, dict):
        out = {}
        for key, value in data.items():
            hidden = secret_name(key) and not isinstance(value, bool) and value not in (None, '', {}, [])
            out[key] = REDACTED if hidden else redact(value)
        if _is_env_entry(data) and secret_name(data['name']) and data['value'] not in (None, ''):
            out['value'] = REDACTED
        return out
    if isinstance(data, (list, tuple)):
        return [redact(item) for item in data]
    if isinstance(data, str):
        return redact_text(data)
    return data
