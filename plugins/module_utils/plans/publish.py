# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Publishing a report or a diagnostics archive into the cluster, where an AWX job's user can read it: the
``<namespace>/<name>`` an option gives, whether the data fits one ConfigMap or Secret (the API server refuses
more than 1 MiB of data), and whether the collection may write that object (only one it created).
Pure, standard library only."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.gpuops.gpu.plugins.module_utils.common.ownership import configmap_write_errors, existing_write_errors

# The API server's limit on the data of one ConfigMap or Secret (keys and values together).
MAX_DATA_BYTES = 1024 * 1024
KINDS = ('ConfigMap', 'Secret')
_DNS_LABEL = r'[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?'
_DNS_SUBDOMAIN = r'(?=.{1,253}$)%s(\.%s)*' % (_DNS_LABEL, _DNS_LABEL)


def publish_target(value, option):
    """``(namespace, name, errors)`` of ``value`` in the form ``<namespace>/<name>``."""
    if not isinstance(value, str) or value.count('/') != 1:
        return None, None, ['%s: expected <namespace>/<name>, got %r' % (option, value)]
    namespace, name = value.strip().split('/')
    errors = []
    if not re.match(r'^%s$' % _DNS_LABEL, namespace):
        errors.append('%s: %r is not a namespace name (lower case letters, digits and -, at most 63)'
                      % (option, namespace))
    if not re.match(r'^%s$' % _DNS_SUBDOMAIN, name):
        errors.append('%s: %r is not an object name (lower case letters, digits, - and ., at most 253)'
                      % (option, name))
    return namespace, name, errors


def data_size(data, encoded=False):
    """Bytes of ``data`` as the API server counts them: every key and value; with ``encoded`` the values are
    base64 (a Secret's data) and count decoded."""
    total = 0
    for key, value in (data or {}).items():
        value = '' if value is None else str(value)
        if encoded:
            stripped = value.strip()
            size = len(stripped) * 3 // 4 - len(stripped) + len(stripped.rstrip('='))
        else:
            size = len(value.encode('utf-8'))
        total += len(str(key).encode('utf-8')) + size
    return total


def size_errors(data, option, kind='ConfigMap', encoded=False):
    """Why ``data`` does not fit one ``kind`` ([] when it does), naming each key's size."""
    total = data_size(data, encoded)
    if total <= MAX_DATA_BYTES:
        return []
    sizes = ', '.join('%s %d bytes' % (key, data_size({key: value}, encoded) - len(str(key).encode('utf-8')))
                      for key, value in sorted((data or {}).items()))
    return ['%s: %d bytes of data (%s) do not fit one %s (the API server takes at most %d bytes); nothing was '
            'written' % (option, total, sizes, kind, MAX_DATA_BYTES)]


def secret_write_errors(name, option, namespace='', existing=None):
    """Why the collection may not write the Secret ``name`` ([] when it may): only a Secret it created."""
    where = '%s/%s' % (namespace, name) if namespace else str(name)
    return existing_write_errors('Secret', where, option, existing)


def publish_errors(target, option, kind='ConfigMap', data=None, existing=None):
    """Every reason not to write ``data`` into the ``kind`` that ``target`` (``<namespace>/<name>``) names: a
    malformed target, too much data, an object the collection did not create. [] when it may be written.
    A Secret's ``data`` values are base64, as the API takes them."""
    if kind not in KINDS:
        raise ValueError('kind: expected one of %s, got %r' % (', '.join(KINDS), kind))
    namespace, name, errors = publish_target(target, option)
    if errors:
        return errors
    errors = size_errors(data, option, kind, encoded=kind == 'Secret')
    owner = configmap_write_errors if kind == 'ConfigMap' else secret_write_errors
    return errors + owner(name, option, namespace, existing)
