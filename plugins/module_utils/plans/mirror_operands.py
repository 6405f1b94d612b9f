# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The GPU operator's operand images pointed at a registry mirror (Kubernetes platform). Pure, no I/O.

Facts used (docs/facts.md#clusterpolicy-fields-we-set; gpu-operator v25.10
``api/nvidia/v1/clusterpolicy_types.go`` ``imagePath``/``ImagePath``): a ClusterPolicy operand
image is ``repository/image:version`` (``@version`` for ``sha256:`` versions) when repository or
version is set, else ``image`` as a full path, else the operator's environment (``DRIVER_IMAGE``,
... set by OLM from the CSV). Each operand has ``imagePullSecrets`` ([]string).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy

from ansible_collections.gpuops.gpu.plugins.module_utils.common import image_ref
from ansible_collections.gpuops.gpu.plugins.module_utils.common.merge import deep_merge, get_path, set_path
from ansible_collections.gpuops.gpu.plugins.module_utils.common.objects import name_of

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
        component = get_path(spec, path)
        if component is not None and not isinstance(component, dict):
            continue
        if component is None and env not in operand_images:
            continue
        component = component or {}
        dotted = '.'.join(path)
        change, error = _operand_change(component, dotted, env, rules, operand_images)
        if change == 'unresolved':
            unresolved.append('%s (%s)' % (dotted, env))
        elif change:
            set_path(patch, path + (change[0],), change[1])
        if error:
            errors.append(error)
        if pull_secrets:
            current = list(component.get('imagePullSecrets') or [])
            merged = current + [s for s in pull_secrets if s not in current]
            if merged != current:
                set_path(patch, path + ('imagePullSecrets',), merged)
    return {'patch': patch, 'errors': errors, 'unresolved': unresolved}


def _operand_change(component, dotted, env, rules, operand_images):
    """(change, error): change is (field, mirrored value), 'unresolved' or None."""
    repo, image, version = (component.get(k) or '' for k in ('repository', 'image', 'version'))
    if repo and _mirrored(repo, rules) or not repo and image and not version and _mirrored(image, rules):
        return None, None  # already pointing at the mirror (a re-run)
    if repo:
        return _rewrite(repo, 'repository', dotted, rules)
    if image and not version:
        return _rewrite(image, 'image', dotted, rules)
    if env in operand_images:
        new = image_ref.mirror_reference(operand_images[env], rules)
        if new is None:
            return None, ('ClusterPolicy spec.%s: the operator image %s (%s) has no mirror: add a '
                          'mirror_repositories entry covering it' % (dotted, operand_images[env], env))
        return ('image', new), None
    return ('unresolved' if component.get('enabled') is not False else None), None


def _rewrite(ref, field, dotted, rules):
    """``ref`` through the mirror rules; a private registry (e.g. a vGPU driver repository) is left alone."""
    new = image_ref.mirror_reference(ref, rules)
    if new is None and not _is_public(ref):
        return None, None
    if new is None:
        return None, ('ClusterPolicy spec.%s.%s %s has no mirror: add a mirror_repositories '
                      'entry covering it' % (dotted, field, ref))
    return ((field, new) if new != ref else None), None


def _is_public(ref):
    first = ref.split('/', 1)[0]
    host = first if image_ref.is_registry_host(first) and '/' in ref else image_ref.DOCKER_HUB
    return image_ref.is_public_host(host)


def _mirrored(ref, rules):
    name = ref.split('@', 1)[0]
    return any(name == r['mirror'] or name.startswith(r['mirror'] + '/') or name.startswith(r['mirror'] + ':')
               for r in rules)


def kubernetes_cluster_policy(plan, config, cluster, rules, operand_images):
    """Add the ClusterPolicy patch (and the policy as it will be) to ``plan``; Kubernetes platform."""
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
    effective.pop('status', None)
    effective['metadata'] = {'name': name_of(policy)}
    plan['cluster_policy_effective'] = effective
