# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Air-gapped installs from a registry mirror (Artifactory, Quay, Nexus, NGC proxy). Pure, no I/O.

``mirror_plan(config, cluster)`` turns the ``gpuops.gpu.mirror`` role's variables and what it
read from the cluster into the objects to write, the ClusterPolicy patch, the image list for
oc-mirror and the problems to fix first; ``role_errors`` adds what the role found on the controller and the
cluster, so the role stops before its first write with every problem at once. Credentials never pass through here (see
``docker_config.merge_docker_config``). The OpenShift objects are built in ``mirror_openshift``, the
ClusterPolicy operand images (Kubernetes) in ``mirror_operands``.

Facts used (docs/facts.md#air-gapped-mirrors): oc-mirror v2 ``ImageSetConfiguration``
``mirror.openshift.io/v2alpha1`` with ``mirror.operators[{catalog, packages[{name, channels[{name}]}]}]``
and ``mirror.additionalImages[{name}]``; ``mirror.helm`` for the collection's charts (``mirror_images``).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.gpuops.gpu.plugins.module_utils.common import image_ref
from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import is_dns_subdomain, type_name
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.mirror_air_gap import public_registry_references
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.mirror_chain import result_fact
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.mirror_images import collection_images
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.mirror_openshift import isc_operators, openshift_objects
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.mirror_operands import kubernetes_cluster_policy

PLATFORMS = ('openshift', 'kubernetes')
SOURCE_POLICIES = ('', 'AllowContactingSource', 'NeverContactSource')
_PEM_RE = re.compile(r'-----BEGIN CERTIFICATE-----\s+[A-Za-z0-9+/=\s]+-----END CERTIFICATE-----')
_ENV_IMAGE_RE = re.compile(r'^[A-Z][A-Z0-9_]*_IMAGE$')


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
    additional_images, collection_values (the other roles' image and chart variables as set, by name:
    ``mirror_images.variable_names()``).
    ``cluster`` keys: image_config, cluster_policy, csv, cluster_version (objects or None).
    ``result``: what the role publishes as ``mirror_result`` for the install roles (``mirror_chain``).
    """
    config = dict(config or {})
    cluster = dict(cluster or {})
    plan = {'errors': [], 'warnings': [], 'objects': [], 'cluster_policy_patch': {},
            'cluster_policy_effective': None, 'catalog_sources': [], 'repositories': [],
            'related_images': [], 'operand_images': {}, 'image_set_configuration': None,
            'public_references': [], 'openshift_version': None, 'collection_images': [], 'result': None}
    platform = config.get('platform', 'openshift')
    if platform not in PLATFORMS:
        plan['errors'].append("mirror_platform must be openshift or kubernetes, got '%s'" % platform)
        return plan
    registry = config.get('registry') or ''
    rules = _input_errors(plan, config, registry)
    plan['operand_images'] = _operand_images(config, cluster, plan['errors'])
    plan['related_images'] = related_images(cluster.get('csv'))
    collection = collection_images(config.get('collection_values'))
    plan['errors'].extend(collection['errors'])
    plan['warnings'].extend(collection['warnings'])
    plan['collection_images'] = collection['images']
    if plan['errors']:
        return plan

    if platform == 'openshift':
        openshift_objects(plan, config, cluster, rules)
    else:
        kubernetes_cluster_policy(plan, config, cluster, rules, plan['operand_images'])
    plan['image_set_configuration'] = image_set_configuration(
        plan['related_images'] + list(config.get('additional_images') or []) + collection['images'],
        isc_operators(plan) if platform == 'openshift' else [], collection['charts'])
    if config.get('air_gapped', True):
        checked = list(plan['objects'])
        if plan['cluster_policy_effective']:
            checked.append(plan['cluster_policy_effective'])
        plan['public_references'] = public_registry_references(
            checked, [r['mirror'] for r in rules] + ([registry] if registry else []))
    plan['result'] = result_fact(plan, config)
    return plan


def _input_errors(plan, config, registry):
    """Check the role's variables into ``plan['errors']``; returns the mirror rules (``plan['repositories']``)."""
    errors = plan['errors']
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
    return rules


def role_errors(plan, checks):
    """Every error that stops the mirror role before its first write, in this order: the plan's (``mirror_plan``),
    the ClusterPolicy read's, then what the role found on the controller and the cluster. ``checks``:
    ``cluster_policy_errors``; ``username`` and ``password``, whether each is given (never the password);
    ``ca_file`` and ``csv_file`` (controller paths, '' when unset) and ``files`` (path -> whether it exists);
    ``platform``; ``pull_secret_found``; ``operator_namespace`` and ``namespace_found``; ``image_list_path``,
    ``image_list_format`` and ``additional_images``."""
    errors = list(plan.get('errors') or []) + list(checks.get('cluster_policy_errors') or [])
    if bool(checks.get('username')) != bool(checks.get('password')):
        errors.append('set both mirror_registry_username and mirror_registry_password, or neither')
    for key in ('ca_file', 'csv_file'):
        path = checks.get(key)
        if path and not (checks.get('files') or {}).get(path):
            errors.append('mirror_%s %s does not exist on the controller' % (key, path))
    platform = checks.get('platform')
    if platform == 'openshift' and checks.get('username') and not checks.get('pull_secret_found'):
        errors.append('openshift-config/pull-secret not found: is this OpenShift? (use mirror_platform: kubernetes '
                      'otherwise)')
    if platform == 'kubernetes' and not checks.get('namespace_found'):
        errors.append('namespace %s does not exist: install the GPU operator first or set mirror_operator_namespace'
                      % checks.get('operator_namespace'))
    if (checks.get('image_list_path') and checks.get('image_list_format') == 'list'
            and not plan.get('related_images') and not checks.get('additional_images')):
        errors.append('mirror_image_list_path is set but there is no image to list: give mirror_csv_file or install '
                      'the GPU operator first (its CSV relatedImages), or mirror_additional_images')
    return errors


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


def image_set_configuration(images, operators=None, charts=None):
    """oc-mirror v2 ``ImageSetConfiguration`` for ``images`` (and operator catalogs/packages, and Helm
    charts ``{'repositories': [...], 'local': [...]}``)."""
    mirror = {}
    if operators:
        mirror['operators'] = operators
    helm = dict((key, value) for key, value in (charts or {}).items() if value)
    if helm:
        mirror['helm'] = helm
    unique = sorted(set(i for i in images or [] if i))
    if unique:
        mirror['additionalImages'] = [{'name': i} for i in unique]
    return {'apiVersion': 'mirror.openshift.io/v2alpha1', 'kind': 'ImageSetConfiguration',
            'mirror': mirror}
