# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The mirror's air-gap check: every place in a set of Kubernetes objects that still names a public
registry. Pure, no I/O.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.gpuops.gpu.plugins.module_utils.common.image_ref import (
    DOCKER_HUB, SCHEME_RE, is_host_name, is_public_host, is_registry_host, is_under)
from ansible_collections.gpuops.gpu.plugins.module_utils.common.objects import meta_of

# Characters that cannot be part of an image reference: they separate references in free text
# (command lines, JSON in annotations, config files).
_TOKEN_SPLIT_RE = re.compile(r'[\s"\'`,;=()\[\]{}<>|\\]+')

# Kubernetes objects whose fields name a public registry ON PURPOSE: the source side of a
# mirror rule. (kind, path pattern) with '*' for any list index.
_MIRROR_SOURCE_PATHS = {
    'ImageDigestMirrorSet': ('spec', 'imageDigestMirrors', '*', 'source'),
    'ImageTagMirrorSet': ('spec', 'imageTagMirrors', '*', 'source'),
    'ImageContentSourcePolicy': ('spec', 'repositoryDigestMirrors', '*', 'source'),
}


def _object_label(obj):
    md = meta_of(obj)
    name = md.get('name', '?')
    if md.get('namespace'):
        name = '%s/%s' % (md['namespace'], name)
    return '%s %s' % (obj.get('kind', 'object'), name)


def _is_mirror_source(kind, path):
    pattern = _MIRROR_SOURCE_PATHS.get(kind)
    if not pattern or len(pattern) != len(path):
        return False
    return all(p == '*' and isinstance(q, int) or p == q for p, q in zip(pattern, path))


def _token_registry(token):
    token = SCHEME_RE.sub('', token.strip('.:'))
    if not token:
        return None
    host = token.split('/', 1)[0].lower()
    if not is_registry_host(host) or not is_host_name(host):
        return None
    return host


def _walk(value, path):
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _walk(item, path + (key,))
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            yield from _walk(item, path + (index,))
    else:
        yield path, value


def _path_text(path):
    out = ''
    for part in path:
        out += '[%d]' % part if isinstance(part, int) else ('.' if out else '') + str(part)
    return out


def _parent(obj, path):
    node = obj
    for part in path[:-1]:
        node = node[part]
    return node


def public_registry_references(objects, mirror=None, public_registries=None):
    """Every string in ``objects`` that names a public registry; [] when the set is air-gap clean.

    Looks at every string value (image fields, command lines, JSON in annotations alike), split
    into tokens; a token whose first component is a public registry host (or a subdomain) is a
    reference, unless it lies under one of the ``mirror`` prefixes. Image fields without a
    registry (``repository: nvidia``, ``image: nvidia/cuda``) pull from Docker Hub and count too.
    Not counted: the ``source`` side of ImageDigestMirrorSet / ImageTagMirrorSet /
    ImageContentSourcePolicy rules (naming the public source is their purpose) and Secret
    ``data`` (credentials, base64).

    Returns ``[{'object', 'path', 'value', 'registry'}]``.
    """
    mirrors = [m for m in ([mirror] if isinstance(mirror, str) else (mirror or [])) if m]
    found = []
    for obj in objects or []:
        if not isinstance(obj, dict):
            continue
        kind = obj.get('kind', '')
        label = _object_label(obj)
        for path, value in _walk(obj, ()):
            if not isinstance(value, str) or not value:
                continue
            if _is_mirror_source(kind, path):
                continue
            if kind == 'Secret' and path and path[0] == 'data':
                continue
            registry = _value_public_registry(obj, path, value, mirrors, public_registries)
            if registry:
                found.append({'object': label, 'path': _path_text(path), 'value': value,
                              'registry': registry})
    return found


def _value_public_registry(obj, path, value, mirrors, public_registries):
    for token in _TOKEN_SPLIT_RE.split(value):
        host = _token_registry(token) if token else None
        if host and is_public_host(host, public_registries):
            bare = SCHEME_RE.sub('', token)
            if not any(is_under(bare.split('@')[0], m.rstrip('/')) or bare.startswith(m.rstrip('/') + ':')
                       for m in mirrors):
                return host.split(':')[0]
    key = path[-1] if path else None
    if key in ('repository', 'image') and not SCHEME_RE.match(value) and ' ' not in value.strip():
        parent = _parent(obj, path)
        if key == 'image' and isinstance(parent, dict) and (parent.get('repository') or parent.get('version')):
            return None  # ClusterPolicy style: image is a name joined to repository
        if not is_registry_host(value.split('/', 1)[0]) and is_public_host(DOCKER_HUB, public_registries):
            return DOCKER_HUB
    return None
