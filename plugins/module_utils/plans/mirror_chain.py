# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""From the mirror role to the install roles: what the mirror published, and what nfd and gpu_operator
take from it. Pure, no I/O.

The mirror role publishes ``mirror_result`` (``result_fact``); the nfd and gpu_operator roles call
``install_sources`` (filter ``gpuops.gpu.install_mirror_defaults``) for their OLM CatalogSource and, with
the Helm method on Kubernetes, the chart values that pull from the mirror. Precedence, highest first:
a role variable the user set (non-empty), then ``mirror_result``, then the public default catalog.

Facts used (docs/facts.md#air-gapped-mirrors): a Subscription must name the mirrored CatalogSource as
``source`` once the default sources are disabled; the gpu-operator chart's operand values
(NVIDIA/gpu-operator ``deployments/gpu-operator/values.yaml``) carry ``repository`` and, for most
operands, ``imagePullSecrets`` (Secret names); the node-feature-discovery chart
(kubernetes-sigs/node-feature-discovery ``deployment/helm/node-feature-discovery/values.yaml``) has one
``image.repository`` for all its pods and one ``imagePullSecrets`` list of ``{name}`` references, which a
pod resolves in its own namespace.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.module_utils.common import image_ref
from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import type_name
from ansible_collections.gpuops.gpu.plugins.module_utils.common.merge import set_path

MARKETPLACE = 'openshift-marketplace'

# role -> (package variable, default package, source variable, source namespace variable, public catalog)
ROLES = {
    'nfd': ('nfd_olm_package', 'nfd', 'nfd_olm_source', 'nfd_olm_source_namespace', 'redhat-operators'),
    'gpu_operator': ('gpu_operator_olm_package', 'gpu-operator-certified', 'gpu_operator_olm_source',
                     'gpu_operator_olm_source_namespace', 'certified-operators'),
}

# gpu-operator chart values with an image repository (NVIDIA/gpu-operator deployments/gpu-operator/values.yaml):
# value path -> (default repository, the value has imagePullSecrets).
CHART_REPOSITORIES = (
    (('operator',), 'nvcr.io/nvidia', True),
    (('operator', 'initContainer'), 'nvcr.io/nvidia', False),
    (('validator',), 'nvcr.io/nvidia', True),
    (('driver',), 'nvcr.io/nvidia', True),
    (('driver', 'manager'), 'nvcr.io/nvidia/cloud-native', False),
    (('toolkit',), 'nvcr.io/nvidia/k8s', True),
    (('devicePlugin',), 'nvcr.io/nvidia', True),
    (('dcgm',), 'nvcr.io/nvidia/cloud-native', False),
    (('dcgmExporter',), 'nvcr.io/nvidia/k8s', False),
    (('gfd',), 'nvcr.io/nvidia', True),
    (('migManager',), 'nvcr.io/nvidia/cloud-native', True),
    (('nodeStatusExporter',), 'nvcr.io/nvidia', True),
    (('gds',), 'nvcr.io/nvidia/cloud-native', True),
    (('gdrcopy',), 'nvcr.io/nvidia/cloud-native', True),
    (('vgpuManager', 'driverManager'), 'nvcr.io/nvidia/cloud-native', False),
    (('vgpuDeviceManager',), 'nvcr.io/nvidia/cloud-native', True),
    (('vfioManager',), 'nvcr.io/nvidia', True),
    (('vfioManager', 'driverManager'), 'nvcr.io/nvidia/cloud-native', False),
    (('kataManager',), 'nvcr.io/nvidia/cloud-native', True),
    (('sandboxDevicePlugin',), 'nvcr.io/nvidia', True),
    (('ccManager',), 'nvcr.io/nvidia/cloud-native', True),
)

# The node-feature-discovery chart's one image (kubernetes-sigs/node-feature-discovery
# deployment/helm/node-feature-discovery/values.yaml `image.repository`; the tag defaults to the chart's appVersion).
NFD_CHART_REPOSITORY = 'registry.k8s.io/nfd/node-feature-discovery'


def result_fact(plan, config, image_list_path=None):
    """``mirror_result``, the mirror role's published fact, from its plan and settings (no credentials)."""
    platform = config.get('platform') or 'openshift'
    pull_secret = None
    if config.get('pull_secret_names'):
        pull_secret = ({'name': 'pull-secret', 'namespace': 'openshift-config'} if platform == 'openshift' else
                       {'name': config['pull_secret_names'][0], 'namespace': config.get('operator_namespace')})
    return {'platform': platform,
            'registry': config.get('registry') or '',
            'catalog_sources': list(plan.get('catalog_sources') or []),
            'repositories': list(plan.get('repositories') or []),
            'pull_secret': pull_secret,
            'image_list_path': image_list_path or None,
            'related_images': len(plan.get('related_images') or []),
            'warnings': list(plan.get('warnings') or [])}


def install_sources(role, variables, mirror_result=None):
    """What the ``role`` (nfd, gpu_operator) installs from, given its variables and ``mirror_result``.

    Returns ``{source, source_namespace, origin, helm_values, errors, warnings}``: ``origin`` is ``variable``
    (the user named the CatalogSource), ``mirror`` (a mirrored CatalogSource whose ``packages`` list the role's
    package) or ``default`` (the public catalog). ``helm_values`` (on a Kubernetes mirror) points the chart's
    images at the mirror with its pull Secret: the gpu-operator chart's operand repositories, or the
    node-feature-discovery chart's image (``variables`` may give ``nfd_namespace`` and ``nfd_helm_values``); the
    role merges its own Helm values over it. ``errors``: when the mirror published catalogs but none carries the
    package. ``warnings`` (nfd, for its Helm method): what the mirror leaves public.
    """
    if role not in ROLES:
        raise ValueError('role must be one of %s' % ', '.join(sorted(ROLES)))
    if not isinstance(variables, dict):
        raise ValueError('the input must be a mapping of role variables')
    package_var, package_default, source_var, namespace_var, public = ROLES[role]
    package = variables.get(package_var) or package_default
    source, namespace = variables.get(source_var) or '', variables.get(namespace_var) or ''
    out = {'source': source, 'source_namespace': namespace, 'origin': 'variable', 'helm_values': {},
           'errors': [], 'warnings': []}
    mirror = mirror_result if isinstance(mirror_result, dict) else {}
    if mirror_result not in (None, '', {}) and not isinstance(mirror_result, dict):
        out['errors'].append('mirror_result must be the mapping the mirror role sets, got %s'
                             % type_name(mirror_result))
    catalogs = [c for c in mirror.get('catalog_sources') or [] if isinstance(c, dict) and c.get('name')]
    if not source:
        carrying = [c for c in catalogs if package in (c.get('packages') or [])]
        if carrying:
            out.update(source=carrying[0]['name'], origin='mirror')
            namespace = namespace or carrying[0].get('namespace') or MARKETPLACE
        elif catalogs:
            out['errors'].append(
                'the mirror role published the CatalogSources %s, none of them lists package %s in its packages: '
                'set %s (and %s), or add %s to the packages of its mirror_catalog_sources entry'
                % (', '.join(c['name'] for c in catalogs), package, source_var, namespace_var, package))
        else:
            out.update(source=public, origin='default')
    elif not namespace:
        named = [c for c in catalogs if c['name'] == source]
        namespace = named[0].get('namespace') if named else None
    out['source_namespace'] = namespace or MARKETPLACE
    if role == 'gpu_operator' and mirror.get('platform') == 'kubernetes':
        out['helm_values'] = chart_mirror_values(mirror.get('repositories') or [], mirror.get('pull_secret'))
    if role == 'nfd' and mirror.get('platform') == 'kubernetes':
        out['helm_values'], out['warnings'] = nfd_chart_mirror_values(
            mirror.get('repositories') or [], mirror.get('pull_secret'), variables.get('nfd_namespace'),
            variables.get('nfd_helm_values'))
    return out


def nfd_chart_mirror_values(rules, pull_secret=None, namespace=None, own_values=None):
    """``(values, warnings)``: node-feature-discovery chart values pulling its image through the mirror ``rules``,
    and the pull Secret (``{name, namespace}``) in ``imagePullSecrets`` when it lives in the chart's ``namespace``
    (a pod only reads pull Secrets of its own namespace). What the user's own chart values (``own_values``)
    set is not warned about: they are merged over these."""
    own = own_values if isinstance(own_values, dict) else {}
    own_image = own.get('image') if isinstance(own.get('image'), dict) else {}
    values, warnings = {}, []
    mirrored = image_ref.mirror_reference(NFD_CHART_REPOSITORY, rules)
    if mirrored is not None:
        values['image'] = {'repository': mirrored}
    elif not own_image.get('repository'):
        warnings.append('no mirror rule (mirror_repositories) covers the node-feature-discovery image %s, so the '
                        'chart pulls it from the public registry: add a rule for it or set '
                        'nfd_helm_values.image.repository' % NFD_CHART_REPOSITORY)
    secret = pull_secret if isinstance(pull_secret, dict) and pull_secret.get('name') else None
    if secret and (secret.get('namespace') in (None, '', namespace)):
        values['imagePullSecrets'] = [{'name': secret['name']}]
    elif secret and 'imagePullSecrets' not in own:
        warnings.append('the mirror pull Secret %s/%s is not in the NFD namespace %s and pods only use pull Secrets '
                        'of their own namespace: copy it to %s and set nfd_helm_values.imagePullSecrets to '
                        '[{name: %s}]' % (secret.get('namespace'), secret['name'], namespace, namespace,
                                          secret['name']))
    return values, warnings


def chart_mirror_values(rules, pull_secret=None):
    """gpu-operator chart values: each operand repository the mirror ``rules`` cover, rewritten, and the
    pull Secret (``{name}``) in the ``imagePullSecrets`` of those that have them."""
    values = {}
    secret = (pull_secret or {}).get('name') if isinstance(pull_secret, dict) else None
    for path, repository, has_secrets in CHART_REPOSITORIES:
        mirrored = image_ref.mirror_reference(repository, rules) if rules else None
        if mirrored is None:
            continue
        set_path(values, path + ('repository',), mirrored)
        if secret and has_secrets:
            set_path(values, path + ('imagePullSecrets',), [secret])
    return values
