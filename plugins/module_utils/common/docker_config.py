# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Docker pull-secret documents (``.dockerconfigjson``). Pure, no I/O.

``merge_docker_config`` adds registry credentials without dropping or rewriting the entries
already there (no change when the same auth is already present); messages never contain a
password.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import base64
import binascii
import json

from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import type_name, unknown_key_error
from ansible_collections.gpuops.gpu.plugins.module_utils.common.image_ref import repository_errors


def docker_auth(username, password):
    """The ``auth`` value of a docker config entry: base64 of ``username:password``."""
    raw = ('%s:%s' % (username, password)).encode('utf-8')
    return base64.b64encode(raw).decode('ascii')


def credential_errors(entries, path='credentials'):
    """Validate ``[{registry, username, password}]``; messages never contain the password."""
    if entries is None:
        return []
    if not isinstance(entries, (list, tuple)):
        return ['%s must be a list, got %s' % (path, type_name(entries))]
    errors, seen = [], set()
    for index, entry in enumerate(entries):
        item = '%s[%d]' % (path, index)
        if not isinstance(entry, dict):
            errors.append('%s must be a mapping with registry, username and password' % item)
            continue
        # auth and email are accepted silently (docker config.json fields), not suggested
        errors.extend(unknown_key_error(key, ('registry', 'username', 'password'), item)
                      for key in sorted(entry, key=str) if key not in ('registry', 'username', 'password', 'auth', 'email'))
        registry = entry.get('registry')
        reg_errors = repository_errors(registry, '%s.registry' % item)
        errors.extend(reg_errors)
        if not reg_errors and registry in seen:
            errors.append('%s.registry %s appears twice' % (item, registry))
        seen.add(registry)
        if entry.get('auth'):
            continue
        for field in ('username', 'password'):
            value = entry.get(field)
            if not isinstance(value, str) or not value:
                errors.append('%s.%s is required (a non-empty string)' % (item, field))
        if isinstance(entry.get('username'), str) and ':' in entry['username']:
            errors.append("%s.username must not contain ':'" % item)
    return errors


def _decode_config(existing_b64):
    if not existing_b64:
        return {'auths': {}}
    try:
        text = base64.b64decode(existing_b64, validate=True).decode('utf-8')
        doc = json.loads(text)
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise ValueError('the existing .dockerconfigjson is not base64-encoded JSON; fix or '
                         'recreate the pull secret first')
    if not isinstance(doc, dict) or not isinstance(doc.get('auths', {}), dict):
        raise ValueError("the existing .dockerconfigjson has no 'auths' mapping")
    doc.setdefault('auths', {})
    return doc


def merge_docker_config(existing_b64, entries):
    """Add ``entries`` to a base64 ``.dockerconfigjson`` without dropping existing registries.

    Returns ``{'changed', 'data', 'added', 'updated'}``: ``data`` is the base64 document to
    write (the existing bytes untouched when nothing changed, so a re-run is a no-op whatever
    the existing formatting), ``added``/``updated`` the registry names (never credentials).
    Raises ValueError (without secret content) on an unreadable existing document.
    """
    doc = _decode_config(existing_b64)
    auths = doc['auths']
    added, updated = [], []
    for entry in entries or []:
        registry = entry['registry']
        auth = entry.get('auth') or docker_auth(entry['username'], entry['password'])
        current = auths.get(registry)
        if isinstance(current, dict) and current.get('auth') == auth:
            continue
        new = dict(current) if isinstance(current, dict) else {}
        new.pop('username', None)
        new.pop('password', None)
        new['auth'] = auth
        if entry.get('email'):
            new['email'] = entry['email']
        (updated if current is not None else added).append(registry)
        auths[registry] = new
    if not added and not updated and existing_b64:
        return {'changed': False, 'data': existing_b64, 'added': [], 'updated': []}
    data = base64.b64encode(json.dumps(doc, separators=(',', ':')).encode('utf-8')).decode('ascii')
    return {'changed': True, 'data': data, 'added': added, 'updated': updated}


def docker_config_registries(existing_b64):
    """Registry names in a base64 ``.dockerconfigjson`` (no credentials)."""
    return list(_decode_config(existing_b64)['auths'])
