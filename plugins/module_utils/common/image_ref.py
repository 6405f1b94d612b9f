# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Container image references, registries and mirror rules. Pure, no I/O.

- ``parse_image``: split ``[registry/]path[:tag][@digest]`` the way the container runtimes do
  (distribution/reference): the first component is a registry only when it contains a ``.`` or a
  ``:`` or is ``localhost``; otherwise the image is on Docker Hub (``docker.io``, single names
  under ``library/``).
- ``mirror_reference``: rewrite a reference or repository through ``{source, mirror}`` prefixes
  (longest source first, matching whole path components), like CRI-O's registries.conf mirrors
  that ImageDigestMirrorSet / ImageTagMirrorSet generate.

The mirror's air-gap check (``plans/mirror_air_gap.py``) and pull-secret documents
(``docker_config``) build on these.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import type_name, unknown_key_error
from ansible_collections.gpuops.gpu.plugins.module_utils.common.errors import InputError

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
SCHEME_RE = re.compile(r'^[a-z][a-z0-9+.-]*://')


class ImageRefError(InputError, ValueError):
    """An image reference or repository that cannot be parsed."""


# --- parsing ---------------------------------------------------------------------------------

def is_registry_host(component):
    """True when ``component`` (the first path component) names a registry, as runtimes decide."""
    return component == 'localhost' or '.' in component or ':' in component


def is_host_name(host):
    """True when ``host`` has the shape of a registry ``name[:port]`` (port range not checked)."""
    return bool(_HOST_RE.match(host))


def host_errors(host):
    """Reasons why ``host`` is not a registry ``name[:port]``; [] when valid."""
    if not isinstance(host, str) or not host:
        return ['must be a non-empty string such as registry.example.com:8443']
    if host != host.lower():
        return ["'%s' must be lowercase" % host]
    if not is_host_name(host):
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
    if SCHEME_RE.match(repo):
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


def is_under(name, prefix):
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
        if is_under(rest, source) and (best is None or len(source) > len(best['source'].rstrip('/'))):
            best = rule
    if best is None:
        return None
    source = best['source'].rstrip('/')
    return best['mirror'].rstrip('/') + rest[len(source):] + suffix


def default_mirror(source, mirror_registry, keep_source_host=False):
    """Where ``source`` lives in the mirror: oc-mirror's layout (source path under the mirror,
    registry host dropped) or, with ``keep_source_host``, the full source under the mirror."""
    base = mirror_registry.rstrip('/')
    _host, _sep, path = source.rstrip('/').partition('/')
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
        errors.extend(unknown_key_error(key, ('source', 'mirror'), path)
                      for key in sorted(entry, key=str) if key not in ('source', 'mirror'))
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
        if is_under(mirror.rstrip('/'), source):
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
