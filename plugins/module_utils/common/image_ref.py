# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Container image references, registries and docker pull-secret documents. Pure, no I/O.

- ``parse_image``: split ``[registry/]path[:tag][@digest]`` the way the container runtimes do
  (distribution/reference): the first component is a registry only when it contains a ``.`` or a
  ``:`` or is ``localhost``; otherwise the image is on Docker Hub (``docker.io``, single names
  under ``library/``).
- ``mirror_reference``: rewrite a reference or repository through ``{source, mirror}`` prefixes
  (longest source first, matching whole path components), like CRI-O's registries.conf mirrors
  that ImageDigestMirrorSet / ImageTagMirrorSet generate.
- ``public_registry_references``: every place in a set of Kubernetes objects that still names a
  public registry (the air-gap check).
- ``merge_docker_config``: add registry credentials to a ``.dockerconfigjson`` without dropping
  or rewriting the entries already there (no change when the same auth is already present).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import base64
import binascii
import json
import re

from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.tolerations import type_name

DOCKER_HUB = 'docker.io'

# Registries reachable only from the internet. Subdomains count too (us.gcr.io, cdn.quay.io,
# registry-1.docker.io). Container registries, used here as data for the air-gap check.
PUBLIC_REGISTRIES = (
    'nvcr.io',
    'registry.redhat.io',
    'registry.access.redhat.com',
    'registry.connect.redhat.com',
    'registry.ci.openshift.org',
    'quay.io',
    'docker.io',
    'gcr.io',
    'ghcr.io',
    'registry.k8s.io',
    'k8s.gcr.io',
    'mcr.microsoft.com',
    'public.ecr.aws',
    'pkg.dev',
)

_HOST_RE = re.compile(r'^(localhost|[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)(:[0-9]{1,5})?$')
_PATH_COMPONENT_RE = re.compile(r'^[a-z0-9]+(([._]|__|[-]+)[a-z0-9]+)*$')
_TAG_RE = re.compile(r'^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$')
_DIGEST_RE = re.compile(r'^[a-z0-9]+([+._-][a-z0-9]+)*:[0-9a-fA-F]{32,}$')
# Characters that cannot be part of an image reference: they separate references in free text
# (command lines, JSON in annotations, config files).
_TOKEN_SPLIT_RE = re.compile(r'[\s"\'`,;=()\[\]{}<>|\\]+')
_SCHEME_RE = re.compile(r'^[a-z][a-z0-9+.-]*://')

# Kubernetes objects whose fields name a public registry ON PURPOSE: the source side of a
# mirror rule. (kind, path pattern) with '*' for any list index.
_MIRROR_SOURCE_PATHS = {
    'ImageDigestMirrorSet': ('spec', 'imageDigestMirrors', '*', 'source'),
    'ImageTagMirrorSet': ('spec', 'imageTagMirrors', '*', 'source'),
    'ImageContentSourcePolicy': ('spec', 'repositoryDigestMirrors', '*', 'source'),
}


class ImageRefError(ValueError):
    """An image reference or repository that cannot be parsed."""


# --- parsing ---------------------------------------------------------------------------------

def is_registry_host(component):
    """True when ``component`` (the first path component) names a registry, as runtimes decide."""
    return component == 'localhost' or '.' in component or ':' in component


def host_errors(host):
    """Reasons why ``host`` is not a registry ``name[:port]``; [] when valid."""
    if not isinstance(host, str) or not host:
        return ['must be a non-empty string such as registry.example.com:8443']
    if host != host.lower():
        return ["'%s' must be lowercase" % host]
    if not _HOST_RE.match(host):
        return ["'%s' is not a registry host name[:port] (letters, digits, '-' and '.', "
                "optional :port)" % host]
    port = host.rpartition(':')[2] if ':' in host else None
    if port is not None and not 0 < int(port) < 65536:
        return ["'%s' has a port outside 1-65535" % host]
    return []


def parse_image(ref):
    """``{'registry', 'path', 'tag', 'digest', 'explicit_registry'}`` for an image reference.

    ``registry`` is ``docker.io`` when the reference names none (``explicit_registry`` False);
    ``path`` is the repository path inside the registry (``library/`` added for single names on
    Docker Hub). Raises ImageRefError.
    """
    if not isinstance(ref, str) or not ref.strip():
        raise ImageRefError('an image reference must be a non-empty string, got %s' % type_name(ref))
    if ref != ref.strip() or any(c.isspace() for c in ref):
        raise ImageRefError("image reference '%s' contains white space" % ref)
    rest, _sep, digest = ref.partition('@')
    if _sep and not _DIGEST_RE.match(digest):
        raise ImageRefError("image reference '%s' has an invalid digest '%s' (expected "
                            "sha256:<hex>)" % (ref, digest))
    name, tag = rest, None
    last = rest.rsplit('/', 1)[-1]
    if ':' in last:
        name, tag = rest.rsplit(':', 1)
        if not _TAG_RE.match(tag):
            raise ImageRefError("image reference '%s' has an invalid tag '%s'" % (ref, tag))
    first, _slash, remainder = name.partition('/')
    if _slash and is_registry_host(first):
        registry, path, explicit = first, remainder, True
        errors = host_errors(registry)
        if errors:
            raise ImageRefError("image reference '%s': registry %s" % (ref, errors[0]))
    else:
        registry, path, explicit = DOCKER_HUB, name, False
        if '/' not in path:
            path = 'library/' + path
    for component in path.split('/'):
        if not _PATH_COMPONENT_RE.match(component):
            raise ImageRefError("image reference '%s': path component '%s' must be lowercase "
                                "letters and digits separated by '.', '_', '__' or '-'" % (ref, component))
    return {'registry': registry, 'path': path, 'tag': tag, 'digest': digest or None,
            'explicit_registry': explicit}


def image_name(ref):
    """Fully qualified repository (``registry/path``) of a reference, without tag or digest."""
    parsed = parse_image(ref)
    return '%s/%s' % (parsed['registry'], parsed['path'])


def normalize_image(ref):
    """The reference with its registry made explicit (``nvidia/cuda:12`` → ``docker.io/nvidia/cuda:12``)."""
    parsed = parse_image(ref)
    out = '%s/%s' % (parsed['registry'], parsed['path'])
    if parsed['tag']:
        out += ':' + parsed['tag']
    if parsed['digest']:
        out += '@' + parsed['digest']
    return out


def repository_errors(repo, what='repository'):
    """Reasons why ``repo`` is not ``host[:port][/path]`` (a registry or a repository prefix)."""
    if not isinstance(repo, str) or not repo:
        return ['%s must be a non-empty string such as registry.example.com/nvidia, got %s'
                % (what, type_name(repo) if not isinstance(repo, str) else "''")]
    if repo != repo.strip() or any(c.isspace() for c in repo):
        return ["%s '%s' contains white space" % (what, repo)]
    if _SCHEME_RE.match(repo):
        return ["%s '%s' must not have a scheme: drop '%s'" % (what, repo, repo.split('://')[0] + '://')]
    if '@' in repo or ('/' in repo and ':' in repo.split('/')[-1]):
        return ["%s '%s' must be a registry or repository prefix, without tag or digest" % (what, repo)]
    host, _sep, path = repo.partition('/')
    errors = ['%s %s' % (what, e) for e in host_errors(host)]
    if not errors and not is_registry_host(host):
        errors.append("%s '%s' must start with a registry host (with a '.' or a ':port', or "
                      "localhost), for example docker.io/%s" % (what, repo, repo))
    if path:
        for component in path.rstrip('/').split('/'):
            if not _PATH_COMPONENT_RE.match(component):
                errors.append("%s '%s': path component '%s' must be lowercase letters and digits "
                              "separated by '.', '_', '__' or '-'" % (what, repo, component))
    return errors


def registry_of(repo):
    """``host[:port]`` of a ``host[:port][/path]`` string."""
    return repo.split('/', 1)[0]


def is_public_host(host, public_registries=None):
    """True when ``host`` (port ignored) is, or is a subdomain of, a public registry."""
    name = host.lower().split(':', 1)[0]
    for public in public_registries if public_registries is not None else PUBLIC_REGISTRIES:
        public = public.lower()
        if name == public or name.endswith('.' + public):
            return True
    return False


def _under(name, prefix):
    """``name`` equals ``prefix`` or continues it at a '/' boundary."""
    prefix = prefix.rstrip('/')
    return name == prefix or name.startswith(prefix + '/')


# --- mirroring -------------------------------------------------------------------------------

def mirror_reference(ref, repositories):
    """``ref`` (image reference or repository) rewritten through the first matching mirror rule.

    ``repositories``: list of ``{'source': ..., 'mirror': ...}``; the longest matching source
    wins. Returns None when no rule matches. Tag and digest are kept.
    """
    if not isinstance(ref, str) or not ref:
        return None
    rest, _at, digest = ref.partition('@')
    suffix = '@' + digest if _at else ''
    last = rest.rsplit('/', 1)[-1]
    head = last.split(':', 1)[0]
    # 'name:tag' unless it is a bare 'host:port' ('registry.example.com:5000', 'localhost:5000')
    if ':' in last and ('/' in rest or not ('.' in head or head == 'localhost')):
        rest, tag = rest.rsplit(':', 1)
        suffix = ':' + tag + suffix
    first, slash = rest.split('/', 1)[0], '/' in rest
    if not is_registry_host(first):  # Docker Hub: 'nvidia/cuda', 'busybox'
        rest = DOCKER_HUB + '/' + (rest if slash else 'library/' + rest)
    best = None
    for rule in repositories or []:
        source = rule['source'].rstrip('/')
        if _under(rest, source) and (best is None or len(source) > len(best['source'].rstrip('/'))):
            best = rule
    if best is None:
        return None
    source = best['source'].rstrip('/')
    return best['mirror'].rstrip('/') + rest[len(source):] + suffix


def default_mirror(source, mirror_registry, keep_source_host=False):
    """Where ``source`` lives in the mirror: oc-mirror's layout (source path under the mirror,
    registry host dropped) or, with ``keep_source_host``, the full source under the mirror."""
    base = mirror_registry.rstrip('/')
    host, _sep, path = source.rstrip('/').partition('/')
    if keep_source_host:
        return '%s/%s' % (base, source.rstrip('/'))
    return '%s/%s' % (base, path) if path else base


def normalize_repositories(repositories, mirror_registry, keep_source_host=False):
    """(rules, errors): ``repositories`` (strings or ``{source, mirror?}``) as ``{source, mirror}``."""
    rules, errors, seen = [], [], {}
    if not isinstance(repositories, (list, tuple)):
        return [], ['mirror repositories must be a list, got %s' % type_name(repositories)]
    for index, entry in enumerate(repositories):
        path = 'repositories[%d]' % index
        if isinstance(entry, str):
            entry = {'source': entry}
        if not isinstance(entry, dict):
            errors.append('%s must be a source repository or a mapping with source and mirror, got %s'
                          % (path, type_name(entry)))
            continue
        unknown = sorted(set(entry) - {'source', 'mirror'})
        if unknown:
            errors.append("%s: unknown key(s) %s (known keys: source, mirror)" % (path, ', '.join(unknown)))
        source_errors = repository_errors(entry.get('source'), '%s.source' % path)
        errors.extend(source_errors)
        if source_errors:
            continue
        source = entry['source'].rstrip('/')
        mirror = entry.get('mirror') or default_mirror(source, mirror_registry or '', keep_source_host)
        mirror_errors = repository_errors(mirror, '%s.mirror' % path)
        if not entry.get('mirror') and not mirror_registry:
            mirror_errors = ['%s.mirror is needed when no mirror registry is set' % path]
        errors.extend(mirror_errors)
        if mirror_errors:
            continue
        if source in seen:
            errors.append('%s.source %s is already mapped by %s' % (path, source, seen[source]))
            continue
        if _under(mirror.rstrip('/'), source):
            errors.append('%s: mirror %s lies inside its own source %s' % (path, mirror, source))
            continue
        seen[source] = path
        rules.append({'source': source, 'mirror': mirror.rstrip('/')})
    return rules, errors


def mirror_set_entries(rules, source_policy=None):
    """``imageDigestMirrors`` / ``imageTagMirrors`` entries, sorted by source (stable output)."""
    entries = []
    for rule in sorted(rules, key=lambda r: r['source']):
        entry = {'source': rule['source'], 'mirrors': [rule['mirror']]}
        if source_policy:
            entry['mirrorSourcePolicy'] = source_policy
        entries.append(entry)
    return entries


# --- the air-gap check -----------------------------------------------------------------------

def _object_label(obj):
    md = obj.get('metadata') or {}
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
    token = _SCHEME_RE.sub('', token.strip('.:'))
    if not token:
        return None
    host = token.split('/', 1)[0].lower()
    if not is_registry_host(host) or not _HOST_RE.match(host):
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
            bare = _SCHEME_RE.sub('', token)
            if not any(_under(bare.split('@')[0], m.rstrip('/')) or bare.startswith(m.rstrip('/') + ':')
                       for m in mirrors):
                return host.split(':')[0]
    key = path[-1] if path else None
    if key in ('repository', 'image') and not _SCHEME_RE.match(value) and ' ' not in value.strip():
        parent = _parent(obj, path)
        if key == 'image' and isinstance(parent, dict) and (parent.get('repository') or parent.get('version')):
            return None  # ClusterPolicy style: image is a name joined to repository
        if not is_registry_host(value.split('/', 1)[0]) and is_public_host(DOCKER_HUB, public_registries):
            return DOCKER_HUB
    return None


# --- pull secrets ----------------------------------------------------------------------------

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
        unknown = sorted(set(entry) - {'registry', 'username', 'password', 'auth', 'email'})
        if unknown:
            errors.append('%s: unknown key(s) %s (known keys: registry, username, password)'
                          % (item, ', '.join(unknown)))
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
