# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Air-gapped installs from a registry mirror (Artifactory, Quay, Nexus, NGC proxy). Pure, no I/O.

``mirror_plan(config, cluster)`` turns the ``gpuops.gpu.mirror`` role's variables and what it
read from the cluster into the objects to write, the ClusterPolicy patch, the image list for
oc-mirror and the problems to fix first. Credentials never pass through here (see
``image_ref.merge_docker_config``).

Facts used (nvidia-facts.md §3 and §5; gpu-operator v25.10 ``api/nvidia/v1/clusterpolicy_types.go``
``imagePath``/``ImagePath``; openshift/api config/v1 and operator/v1alpha1 CRDs):
- OpenShift: CatalogSources for the mirrored ``redhat-operator-index`` (nfd) and
  ``certified-operator-index`` (gpu-operator-certified); ImageDigestMirrorSet /
  ImageTagMirrorSet (``spec.image{Digest,Tag}Mirrors[{source, mirrors, mirrorSourcePolicy}]``),
  or ImageContentSourcePolicy (``spec.repositoryDigestMirrors``) before they existed; the
  registry CA in a ConfigMap in ``openshift-config`` whose key is the registry host with ``..``
  for the ``:`` of a port, referenced by ``image.config.openshift.io/cluster``
  ``spec.additionalTrustedCA.name``; ``operatorhub.config.openshift.io/cluster``
  ``spec.disableAllDefaultSources``.
- ClusterPolicy operand image = ``repository/image:version`` (``@version`` for ``sha256:``
  versions) when repository or version is set, else ``image`` as a full path, else the
  operator's environment (``DRIVER_IMAGE``, ... set by OLM from the CSV). Each operand has
  ``imagePullSecrets`` ([]string).
- oc-mirror v2: ``ImageSetConfiguration`` ``mirror.openshift.io/v2alpha1`` with
  ``mirror.operators[{catalog, packages[{name, channels[{name}]}]}]`` and
  ``mirror.additionalImages[{name}]``.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import re

from ansible_collections.gpuops.gpu.plugins.module_utils.common import image_ref
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.tolerations import (
    is_dns_subdomain, type_name, unknown_key_errors)

PLATFORMS = ('openshift', 'kubernetes')
SOURCE_POLICIES = ('', 'AllowContactingSource', 'NeverContactSource')
MARKETPLACE = 'openshift-marketplace'
OPENSHIFT_CONFIG = 'openshift-config'
MANAGED_BY = {'app.kubernetes.io/managed-by': 'gpuops.gpu'}
INDEX_REPOSITORY = 'registry.redhat.io/redhat'

# ClusterPolicy operands with image fields: spec path -> operator environment variable that
# supplies the image when the ClusterPolicy names none (clusterpolicy_types.go ImagePath).
OPERANDS = (
    (('driver',), 'DRIVER_IMAGE'),
    (('driver', 'manager'), 'DRIVER_MANAGER_IMAGE'),
    (('toolkit',), 'CONTAINER_TOOLKIT_IMAGE'),
    (('devicePlugin',), 'DEVICE_PLUGIN_IMAGE'),
    (('dcgmExporter',), 'DCGM_EXPORTER_IMAGE'),
    (('dcgm',), 'DCGM_IMAGE'),
    (('gfd',), 'GFD_IMAGE'),
    (('migManager',), 'MIG_MANAGER_IMAGE'),
    (('nodeStatusExporter',), 'VALIDATOR_IMAGE'),
    (('validator',), 'VALIDATOR_IMAGE'),
    (('operator', 'initContainer'), 'CUDA_BASE_IMAGE'),
    (('vgpuManager',), 'VGPU_MANAGER_IMAGE'),
    (('vgpuManager', 'driverManager'), 'DRIVER_MANAGER_IMAGE'),
    (('vgpuDeviceManager',), 'VGPU_DEVICE_MANAGER_IMAGE'),
    (('vfioManager',), 'VFIO_MANAGER_IMAGE'),
    (('vfioManager', 'driverManager'), 'DRIVER_MANAGER_IMAGE'),
    (('sandboxDevicePlugin',), 'SANDBOX_DEVICE_PLUGIN_IMAGE'),
    (('gds',), 'GDS_IMAGE'),
    (('gdrcopy',), 'GDRCOPY_IMAGE'),
    (('kataManager',), 'KATA_MANAGER_IMAGE'),
    (('ccManager',), 'CC_MANAGER_IMAGE'),
)

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
_PEM_RE = re.compile(r'-----BEGIN CERTIFICATE-----\s+[A-Za-z0-9+/=\s]+-----END CERTIFICATE-----')
_ENV_IMAGE_RE = re.compile(r'^[A-Z][A-Z0-9_]*_IMAGE$')


def openshift_minor(version):
    """'4.18.3' / 'v4.18' / '4.18' -> '4.18'; None when not a version."""
    match = _VERSION_RE.match(str(version or '').strip())
    return '%s.%s' % (match.group(1), match.group(2)) if match else None


def ca_config_map_key(registry):
    """ConfigMap key OpenShift expects for a registry CA: the host, '..' instead of ':port'."""
    return image_ref.registry_of(registry).replace(':', '..')


def ca_bundle_errors(bundle):
    if bundle in (None, ''):
        return []
    if not isinstance(bundle, str):
        return ['ca_bundle must be PEM text, got %s' % type_name(bundle)]
    if not _PEM_RE.search(bundle):
        return ['ca_bundle must hold at least one PEM certificate (-----BEGIN CERTIFICATE----- ... '
                '-----END CERTIFICATE-----); a path belongs in mirror_ca_file']
    return []


# --- the plan --------------------------------------------------------------------------------

def mirror_plan(config, cluster=None):
    """Objects, patches and image lists for the mirror role (see the module docstring).

    ``config`` keys: platform, registry, repositories, keep_source_host, air_gapped,
    catalog_sources, openshift_version, image_digest_mirror_set, image_tag_mirror_set, use_icsp,
    mirror_set_name, source_policy, disable_default_sources, ca_bundle, ca_config_map_name,
    operator_namespace, pull_secret_names, auth_host, cluster_policy, operand_images,
    additional_images.
    ``cluster`` keys: image_config, cluster_policy, csv, cluster_version (objects or None).
    """
    config = dict(config or {})
    cluster = dict(cluster or {})
    plan = {'errors': [], 'warnings': [], 'objects': [], 'cluster_policy_patch': {},
            'cluster_policy_effective': None, 'catalog_sources': [], 'repositories': [],
            'related_images': [], 'operand_images': {}, 'image_set_configuration': None,
            'public_references': [], 'openshift_version': None}
    errors = plan['errors']
    platform = config.get('platform', 'openshift')
    if platform not in PLATFORMS:
        errors.append("mirror_platform must be openshift or kubernetes, got '%s'" % platform)
        return plan
    registry = config.get('registry') or ''
    errors.extend(image_ref.repository_errors(registry, 'mirror_registry'))
    rules, rule_errors = image_ref.normalize_repositories(
        config.get('repositories') or [], registry if registry else None,
        bool(config.get('keep_source_host')))
    errors.extend('mirror_' + e for e in rule_errors)
    plan['repositories'] = rules
    if not rules and not rule_errors:
        errors.append('mirror_repositories is empty: list the public repositories to mirror '
                      '(for example nvcr.io/nvidia)')
    policy = config.get('source_policy') or ''
    if policy not in SOURCE_POLICIES:
        errors.append("mirror_source_policy must be AllowContactingSource or NeverContactSource (or empty), "
                      "got '%s'" % policy)
    for name in ('mirror_set_name', 'ca_config_map_name', 'operator_namespace'):
        value = config.get(name)
        if value and not is_dns_subdomain(value):
            errors.append("mirror_%s '%s' must be a lowercase DNS name" % (name, value))
    for secret in config.get('pull_secret_names') or []:
        if not is_dns_subdomain(secret):
            errors.append("mirror_pull_secret_name '%s' must be a lowercase DNS name" % secret)
    errors.extend(ca_bundle_errors(config.get('ca_bundle')))
    if config.get('auth_host'):
        errors.extend(image_ref.repository_errors(config['auth_host'], 'mirror_registry_auth_host'))
    operand_images = _operand_images(config, cluster, errors)
    plan['operand_images'] = operand_images
    plan['related_images'] = related_images(cluster.get('csv'))
    if errors:
        return plan

    if platform == 'openshift':
        _openshift_objects(plan, config, cluster, rules)
    else:
        _kubernetes_cluster_policy(plan, config, cluster, rules, operand_images)
    plan['image_set_configuration'] = image_set_configuration(
        plan['related_images'] + list(config.get('additional_images') or []),
        _isc_operators(plan, config) if platform == 'openshift' else [])
    if config.get('air_gapped', True):
        checked = list(plan['objects'])
        if plan['cluster_policy_effective']:
            checked.append(plan['cluster_policy_effective'])
        plan['public_references'] = image_ref.public_registry_references(
            checked, [r['mirror'] for r in rules] + ([registry] if registry else []))
    return plan


def _operand_images(config, cluster, errors):
    images = {}
    csv_env = csv_operand_images(cluster.get('csv'))
    images.update(csv_env)
    given = config.get('operand_images') or {}
    if not isinstance(given, dict):
        errors.append('mirror_operand_images must be a mapping of operator environment variable to image, '
                      'got %s' % type_name(given))
        return images
    for key, value in given.items():
        if not _ENV_IMAGE_RE.match(str(key)):
            errors.append("mirror_operand_images key '%s' must be an operator image variable such as "
                          "DRIVER_IMAGE" % key)
            continue
        try:
            image_ref.parse_image(value)
        except image_ref.ImageRefError as exc:
            errors.append('mirror_operand_images.%s: %s' % (key, exc))
            continue
        images[key] = value
    return images


def _openshift_objects(plan, config, cluster, rules):
    errors = plan['errors']
    objects = plan['objects']
    version = openshift_minor(config.get('openshift_version')) or _cluster_version(cluster.get('cluster_version'))
    plan['openshift_version'] = version
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
        objects.append(source)
        plan['catalog_sources'].append({'name': source['metadata']['name'],
                                        'namespace': source['metadata']['namespace'],
                                        'image': source['spec']['image'],
                                        'source_image': source_image,
                                        'packages': list(entry.get('packages') or [])})
    set_name = config.get('mirror_set_name') or 'gpuops-mirror'
    policy = config.get('source_policy') or None
    if config.get('use_icsp'):
        if policy:
            plan['warnings'].append('ImageContentSourcePolicy has no mirrorSourcePolicy; source_policy '
                                    'is ignored with use_icsp')
        objects.append(_meta({'apiVersion': 'operator.openshift.io/v1alpha1', 'kind': 'ImageContentSourcePolicy',
                              'spec': {'repositoryDigestMirrors': image_ref.mirror_set_entries(rules)}}, set_name))
    else:
        if config.get('image_digest_mirror_set', True):
            objects.append(_meta({'apiVersion': 'config.openshift.io/v1', 'kind': 'ImageDigestMirrorSet',
                                  'spec': {'imageDigestMirrors': image_ref.mirror_set_entries(rules, policy)}},
                                 set_name))
        if config.get('image_tag_mirror_set', True):
            objects.append(_meta({'apiVersion': 'config.openshift.io/v1', 'kind': 'ImageTagMirrorSet',
                                  'spec': {'imageTagMirrors': image_ref.mirror_set_entries(rules, policy)}},
                                 set_name))
    if config.get('disable_default_sources', True):
        objects.append({'apiVersion': 'config.openshift.io/v1', 'kind': 'OperatorHub',
                        'metadata': {'name': 'cluster'}, 'spec': {'disableAllDefaultSources': True}})
    bundle = config.get('ca_bundle')
    if bundle:
        image_config = cluster.get('image_config') or {}
        current = ((image_config.get('spec') or {}).get('additionalTrustedCA') or {}).get('name')
        cm_name = current or config.get('ca_config_map_name') or 'gpuops-mirror-ca'
        if current and current != config.get('ca_config_map_name'):
            plan['warnings'].append('image.config.openshift.io/cluster already trusts the CAs in ConfigMap '
                                    '%s; the mirror CA is added to it as key %s'
                                    % (current, ca_config_map_key(config['registry'])))
        objects.append({'apiVersion': 'v1', 'kind': 'ConfigMap',
                        'metadata': {'name': cm_name, 'namespace': OPENSHIFT_CONFIG,
                                     'labels': dict(MANAGED_BY)} if not current else
                        {'name': cm_name, 'namespace': OPENSHIFT_CONFIG},
                        'data': {ca_config_map_key(config['registry']): bundle}})
        objects.append({'apiVersion': 'config.openshift.io/v1', 'kind': 'Image',
                        'metadata': {'name': 'cluster'},
                        'spec': {'additionalTrustedCA': {'name': cm_name}}})


def _cluster_version(cluster_version):
    if not cluster_version:
        return None
    status = cluster_version.get('status') or {}
    desired = (status.get('desired') or {}).get('version')
    return openshift_minor(desired)


def _catalog_source(entry, index, version, rules, errors):
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
            'metadata': {'name': name, 'namespace': namespace, 'labels': dict(MANAGED_BY)},
            'spec': spec}, source_image


def _meta(obj, name):
    obj['metadata'] = {'name': name, 'labels': dict(MANAGED_BY)}
    return obj


def _isc_operators(plan, config):
    out = []
    for source in plan['catalog_sources']:
        if not source.get('source_image') or not source.get('packages'):
            continue
        out.append({'catalog': source['source_image'],
                    'packages': [{'name': p} for p in source['packages']]})
    return out


# --- ClusterPolicy on Kubernetes -------------------------------------------------------------

def _get(spec, path):
    node = spec
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def _set(patch, path, key, value):
    node = patch
    for part in path:
        node = node.setdefault(part, {})
    node[key] = value


def cluster_policy_mirror_patch(spec, rules, pull_secrets=None, operand_images=None):
    """Merge patch for ``spec`` pointing every operand at the mirror, and its pull secrets.

    Returns ``{'patch', 'errors', 'unresolved'}``. Per operand present in ``spec``:
    ``repository`` rewritten through ``rules`` (a Docker Hub repository without registry counts
    as ``docker.io/...``); else a full-path ``image`` rewritten; else, when ``operand_images``
    (operator environment, e.g. from the CSV) has its variable, ``image`` set to the mirrored
    full reference; else the operand is listed in ``unresolved``. Operands absent from ``spec``
    get an ``image`` only when ``operand_images`` has one. ``imagePullSecrets`` gets
    ``pull_secrets`` appended (existing ones kept, no duplicates).
    """
    spec = spec or {}
    operand_images = operand_images or {}
    pull_secrets = [s for s in (pull_secrets or []) if s]
    patch, errors, unresolved = {}, [], []
    for path, env in OPERANDS:
        component = _get(spec, path)
        dotted = '.'.join(path)
        if component is not None and not isinstance(component, dict):
            continue
        if component is None and env not in operand_images:
            continue
        component = component or {}
        repo, image, version = (component.get(k) or '' for k in ('repository', 'image', 'version'))
        if repo and _mirrored(repo, rules) or not repo and image and not version and _mirrored(image, rules):
            pass  # already pointing at the mirror (a re-run)
        elif repo:
            new = image_ref.mirror_reference(repo, rules)
            if new is None and not _is_public(repo):
                pass  # a private registry (e.g. a vGPU driver repository): not ours to move
            elif new is None:
                errors.append('ClusterPolicy spec.%s.repository %s has no mirror: add a mirror_repositories '
                              'entry covering it' % (dotted, repo))
            elif new != repo:
                _set(patch, path, 'repository', new)
        elif image and not version:
            new = image_ref.mirror_reference(image, rules)
            if new is None and not _is_public(image):
                pass
            elif new is None:
                errors.append('ClusterPolicy spec.%s.image %s has no mirror: add a mirror_repositories '
                              'entry covering it' % (dotted, image))
            elif new != image:
                _set(patch, path, 'image', new)
        elif env in operand_images:
            new = image_ref.mirror_reference(operand_images[env], rules)
            if new is None:
                errors.append('ClusterPolicy spec.%s: the operator image %s (%s) has no mirror: add a '
                              'mirror_repositories entry covering it' % (dotted, operand_images[env], env))
            else:
                _set(patch, path, 'image', new)
        elif component.get('enabled') is not False:
            unresolved.append('%s (%s)' % (dotted, env))
        if pull_secrets:
            current = list(component.get('imagePullSecrets') or [])
            merged = current + [s for s in pull_secrets if s not in current]
            if merged != current:
                _set(patch, path, 'imagePullSecrets', merged)
    return {'patch': patch, 'errors': errors, 'unresolved': unresolved}


def _is_public(ref):
    first = ref.split('/', 1)[0]
    host = first if image_ref.is_registry_host(first) and '/' in ref else image_ref.DOCKER_HUB
    return image_ref.is_public_host(host)


def _mirrored(ref, rules):
    name = ref.split('@', 1)[0]
    return any(name == r['mirror'] or name.startswith(r['mirror'] + '/') or name.startswith(r['mirror'] + ':')
               for r in rules)


def deep_merge(base, patch):
    """JSON merge patch (RFC 7386) of ``patch`` onto a copy of ``base``."""
    out = copy.deepcopy(base) if isinstance(base, dict) else {}
    for key, value in (patch or {}).items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict):
            out[key] = deep_merge(out.get(key), value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _kubernetes_cluster_policy(plan, config, cluster, rules, operand_images):
    policy = cluster.get('cluster_policy')
    if not config.get('cluster_policy', True):
        return
    if not policy:
        plan['errors'].append('no ClusterPolicy found: install the GPU operator first (its operands are '
                              'pointed at the mirror), or set mirror_cluster_policy: false')
        return
    result = cluster_policy_mirror_patch(policy.get('spec'), rules, config.get('pull_secret_names'),
                                         operand_images)
    plan['errors'].extend(result['errors'])
    for item in result['unresolved']:
        plan['warnings'].append('ClusterPolicy spec.%s takes its image from the operator environment; '
                                'mirror it through the operator install (Helm values) or give '
                                'mirror_operand_images' % item)
    plan['cluster_policy_patch'] = result['patch']
    effective = copy.deepcopy(policy)
    effective['spec'] = deep_merge(policy.get('spec') or {}, result['patch'])
    for key in ('status',):
        effective.pop(key, None)
    effective['metadata'] = {'name': (policy.get('metadata') or {}).get('name')}
    plan['cluster_policy_effective'] = effective


# --- image lists -----------------------------------------------------------------------------

def related_images(csv):
    """Images of a ClusterServiceVersion: ``spec.relatedImages``, the deployment containers and
    their ``*_IMAGE`` environment, unique and sorted."""
    if not isinstance(csv, dict):
        return []
    images = set()
    spec = csv.get('spec') or {}
    for item in spec.get('relatedImages') or []:
        if isinstance(item, dict) and item.get('image'):
            images.add(item['image'])
    for env_image in csv_operand_images(csv, all_variants=True).values():
        images.add(env_image)
    for dep in ((spec.get('install') or {}).get('spec') or {}).get('deployments') or []:
        pod = ((dep.get('spec') or {}).get('template') or {}).get('spec') or {}
        for container in (pod.get('containers') or []) + (pod.get('initContainers') or []):
            if container.get('image'):
                images.add(container['image'])
    return sorted(images)


def csv_operand_images(csv, all_variants=False):
    """``{ENV_NAME: image}`` from the ``*_IMAGE`` environment of a CSV's deployments (what OLM
    gives the operator). ``all_variants`` keeps names such as ``DRIVER_IMAGE-570`` too."""
    out = {}
    if not isinstance(csv, dict):
        return out
    spec = csv.get('spec') or {}
    for dep in ((spec.get('install') or {}).get('spec') or {}).get('deployments') or []:
        pod = ((dep.get('spec') or {}).get('template') or {}).get('spec') or {}
        for container in pod.get('containers') or []:
            for env in container.get('env') or []:
                name, value = env.get('name') or '', env.get('value')
                if not value or not isinstance(value, str):
                    continue
                if _ENV_IMAGE_RE.match(name) or (all_variants and '_IMAGE' in name):
                    out[name] = value
    return out


def image_set_configuration(images, operators=None):
    """oc-mirror v2 ``ImageSetConfiguration`` for ``images`` (and operator catalogs/packages)."""
    mirror = {}
    if operators:
        mirror['operators'] = operators
    unique = sorted(set(i for i in images or [] if i))
    if unique:
        mirror['additionalImages'] = [{'name': i} for i in unique]
    return {'apiVersion': 'mirror.openshift.io/v2alpha1', 'kind': 'ImageSetConfiguration',
            'mirror': mirror}
