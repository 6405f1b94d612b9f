# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The OpenShift objects of the mirror role: CatalogSources, mirror sets, registry CA. Pure, no I/O.

Facts used (docs/facts.md#olm-packages, #air-gapped-mirrors; openshift/api config/v1 and
operator/v1alpha1 CRDs): CatalogSources for the mirrored ``redhat-operator-index`` (nfd) and
``certified-operator-index`` (gpu-operator-certified); ImageDigestMirrorSet / ImageTagMirrorSet
(``spec.image{Digest,Tag}Mirrors[{source, mirrors, mirrorSourcePolicy}]``), or
ImageContentSourcePolicy (``spec.repositoryDigestMirrors``) before they existed; the registry CA in
a ConfigMap in ``openshift-config`` whose key is the registry host with ``..`` for the ``:`` of a
port, referenced by ``image.config.openshift.io/cluster`` ``spec.additionalTrustedCA.name``;
``operatorhub.config.openshift.io/cluster`` ``spec.disableAllDefaultSources``.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.gpuops.gpu.plugins.module_utils.common import image_ref
from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import (
    is_dns_subdomain, type_name, unknown_key_errors)
from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import managed_by_labels

MARKETPLACE = 'openshift-marketplace'
OPENSHIFT_CONFIG = 'openshift-config'
INDEX_REPOSITORY = 'registry.redhat.io/redhat'
DEFAULT_CATALOGS = (
    {'name': 'redhat-operators-mirror', 'index': 'redhat-operator-index',
     'display_name': 'Red Hat Operators (mirror)', 'packages': ['nfd']},
    {'name': 'certified-operators-mirror', 'index': 'certified-operator-index',
     'display_name': 'Certified Operators (mirror)', 'packages': ['gpu-operator-certified']},
)

_CATALOG_KEYS = ('name', 'namespace', 'index', 'source_image', 'image', 'display_name', 'publisher',
                 'poll_interval', 'packages')
_VERSION_RE = re.compile(r'^v?([0-9]+)\.([0-9]+)(\.[0-9]+.*)?$')
_DURATION_RE = re.compile(r'^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$')


def openshift_minor(version):
    """'4.18.3' / 'v4.18' / '4.18' -> '4.18'; None when not a version."""
    match = _VERSION_RE.match(str(version or '').strip())
    return '%s.%s' % (match.group(1), match.group(2)) if match else None


def ca_config_map_key(registry):
    """ConfigMap key OpenShift expects for a registry CA: the host, '..' instead of ':port'."""
    return image_ref.registry_of(registry).replace(':', '..')


def openshift_objects(plan, config, cluster, rules):
    """Add the OpenShift objects to ``plan`` (objects, catalog_sources, openshift_version, errors)."""
    version = openshift_minor(config.get('openshift_version')) or _cluster_version(cluster.get('cluster_version'))
    plan['openshift_version'] = version
    _catalog_sources(plan, config, version, rules)
    plan['objects'].extend(_mirror_sets(config, rules, plan['warnings']))
    if config.get('disable_default_sources', True):
        plan['objects'].append({'apiVersion': 'config.openshift.io/v1', 'kind': 'OperatorHub',
                                'metadata': {'name': 'cluster'}, 'spec': {'disableAllDefaultSources': True}})
    if config.get('ca_bundle'):
        plan['objects'].extend(_trusted_ca(config, cluster.get('image_config') or {}, plan['warnings']))


def _catalog_sources(plan, config, version, rules):
    errors = plan['errors']
    catalogs = config.get('catalog_sources')
    if catalogs is None:
        catalogs = [dict(c) for c in DEFAULT_CATALOGS]
    if not isinstance(catalogs, (list, tuple)):
        errors.append('mirror_catalog_sources must be a list, got %s' % type_name(catalogs))
        catalogs = []
    names = set()
    for index, entry in enumerate(catalogs):
        source, source_image = _catalog_source(entry, index, version, rules, errors)
        if source is None:
            continue
        if source['metadata']['name'] in names:
            errors.append('mirror_catalog_sources[%d]: name %s is used twice' % (index, source['metadata']['name']))
            continue
        names.add(source['metadata']['name'])
        plan['objects'].append(source)
        plan['catalog_sources'].append({'name': source['metadata']['name'],
                                        'namespace': source['metadata']['namespace'],
                                        'image': source['spec']['image'],
                                        'source_image': source_image,
                                        'packages': list(entry.get('packages') or [])})


def _mirror_sets(config, rules, warnings):
    """ImageDigestMirrorSet and ImageTagMirrorSet, or one ImageContentSourcePolicy (use_icsp)."""
    set_name = config.get('mirror_set_name') or 'gpuops-mirror'
    policy = config.get('source_policy') or None
    if config.get('use_icsp'):
        if policy:
            warnings.append('ImageContentSourcePolicy has no mirrorSourcePolicy; source_policy '
                            'is ignored with use_icsp')
        return [_with_meta({'apiVersion': 'operator.openshift.io/v1alpha1', 'kind': 'ImageContentSourcePolicy',
                            'spec': {'repositoryDigestMirrors': image_ref.mirror_set_entries(rules)}}, set_name)]
    out = []
    for option, kind, field in (('image_digest_mirror_set', 'ImageDigestMirrorSet', 'imageDigestMirrors'),
                                ('image_tag_mirror_set', 'ImageTagMirrorSet', 'imageTagMirrors')):
        if config.get(option, True):
            out.append(_with_meta({'apiVersion': 'config.openshift.io/v1', 'kind': kind,
                                   'spec': {field: image_ref.mirror_set_entries(rules, policy)}}, set_name))
    return out


def _trusted_ca(config, image_config, warnings):
    """The CA ConfigMap (a new one, or the key added to the one already trusted) and image.config."""
    bundle = config['ca_bundle']
    key = ca_config_map_key(config['registry'])
    current = ((image_config.get('spec') or {}).get('additionalTrustedCA') or {}).get('name')
    cm_name = current or config.get('ca_config_map_name') or 'gpuops-mirror-ca'
    if current and current != config.get('ca_config_map_name'):
        warnings.append('image.config.openshift.io/cluster already trusts the CAs in ConfigMap '
                        '%s; the mirror CA is added to it as key %s' % (current, key))
    metadata = {'name': cm_name, 'namespace': OPENSHIFT_CONFIG}
    if not current:
        metadata['labels'] = managed_by_labels()
    return [{'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': metadata, 'data': {key: bundle}},
            {'apiVersion': 'config.openshift.io/v1', 'kind': 'Image', 'metadata': {'name': 'cluster'},
             'spec': {'additionalTrustedCA': {'name': cm_name}}}]


def _cluster_version(cluster_version):
    if not cluster_version:
        return None
    status = cluster_version.get('status') or {}
    desired = (status.get('desired') or {}).get('version')
    return openshift_minor(desired)


def _catalog_images(entry, path, version, rules, errors):
    """(index image to use, public index image or None) of one mirror_catalog_sources entry; (None, None) on
    error: ``index`` is the Red Hat index of the cluster's OpenShift ``version``, a public ``source_image`` is
    taken from the mirror (``rules``), a mirrored ``image`` is used as it is."""
    name = entry.get('name')
    image = entry.get('image')
    source_image = None
    if entry.get('index'):
        if not version:
            errors.append('%s (%s): the OpenShift version is unknown (no ClusterVersion); set '
                          'mirror_openshift_version, for example 4.18' % (path, name))
            return None, None
        source_image = '%s/%s:v%s' % (INDEX_REPOSITORY, entry['index'], version)
    elif entry.get('source_image'):
        source_image = entry['source_image']
    if source_image:
        try:
            image_ref.parse_image(source_image)
        except image_ref.ImageRefError as exc:
            errors.append('%s.source_image: %s' % (path, exc))
            return None, None
        image = image_ref.mirror_reference(source_image, rules)
        if image is None:
            errors.append('%s (%s): no mirror_repositories entry covers %s; add its registry or '
                          'repository (for example registry.redhat.io)' % (path, name, source_image))
            return None, None
    else:
        try:
            image_ref.parse_image(image)
        except image_ref.ImageRefError as exc:
            errors.append('%s.image: %s' % (path, exc))
            return None, None
    return image, source_image


def _catalog_source(entry, index, version, rules, errors):
    """(CatalogSource, public index image or None) for one mirror_catalog_sources entry; (None, None) on error."""
    path = 'mirror_catalog_sources[%d]' % index
    if not isinstance(entry, dict):
        errors.append('%s must be a mapping with name and index, source_image or image, got %s'
                      % (path, type_name(entry)))
        return None, None
    errors.extend(unknown_key_errors(entry, _CATALOG_KEYS, path))
    name = entry.get('name')
    if not is_dns_subdomain(name) or len(name) > 63:
        errors.append("%s.name '%s' must be a lowercase DNS label of at most 63 characters" % (path, name))
        return None, None
    given = [k for k in ('index', 'source_image', 'image') if entry.get(k)]
    if len(given) != 1:
        errors.append('%s (%s) needs exactly one of index (a Red Hat index name such as '
                      'certified-operator-index), source_image (the public index image) or image (the '
                      'mirrored index image), got %s' % (path, name, ', '.join(given) or 'none'))
        return None, None
    image, source_image = _catalog_images(entry, path, version, rules, errors)
    if image is None:
        return None, None
    interval = entry.get('poll_interval')
    if interval and not _DURATION_RE.match(str(interval)):
        errors.append("%s.poll_interval '%s' must be a duration such as 30m or 1h" % (path, interval))
        return None, None
    spec = {'sourceType': 'grpc', 'image': image,
            'displayName': entry.get('display_name') or name,
            'publisher': entry.get('publisher') or 'gpuops.gpu mirror'}
    if interval:
        spec['updateStrategy'] = {'registryPoll': {'interval': str(interval)}}
    namespace = entry.get('namespace') or MARKETPLACE
    return {'apiVersion': 'operators.coreos.com/v1alpha1', 'kind': 'CatalogSource',
            'metadata': {'name': name, 'namespace': namespace, 'labels': managed_by_labels()},
            'spec': spec}, source_image


def _with_meta(obj, name):
    obj['metadata'] = {'name': name, 'labels': managed_by_labels()}
    return obj


def isc_operators(plan):
    """oc-mirror operator entries: the public index image and packages of each CatalogSource."""
    out = []
    for source in plan['catalog_sources']:
        if not source.get('source_image') or not source.get('packages'):
            continue
        out.append({'catalog': source['source_image'],
                    'packages': [{'name': p} for p in source['packages']]})
    return out
