# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Who owns a ConfigMap the collection is asked to write: the GPU operator's and the API server's own
(common/names.py OPERATOR_CONFIGMAPS, OPERATOR_CONFIGMAP_PATTERN), one with an owner reference, one
the collection did not create. The same rule as the rollout account's ConfigMap admission policy.
Pure, standard library only."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import (
    DEFAULT_MIG_CONFIG_MAP, LABEL_MANAGED_BY, MANAGED_BY, OPERATOR_CONFIGMAP_PATTERN, OPERATOR_CONFIGMAPS, is_managed)
from ansible_collections.gpuops.gpu.plugins.module_utils.common.objects import meta_of

_OPERATOR = 'the GPU operator (%s; it replaces the content on every reconcile)'
_CONFIGMAP_OWNERS = {
    DEFAULT_MIG_CONFIG_MAP: _OPERATOR % 'its built-in MIG configs',
    'default-gpu-clients': _OPERATOR % 'the GPU clients its MIG manager stops',
    'default-vgpu-devices-config': _OPERATOR % 'its built-in vGPU device configs',
    'nvidia-vfio-manager': _OPERATOR % 'the script its privileged VFIO manager runs',
    'nvidia-dcgm-exporter': _OPERATOR % 'the entrypoint script of dcgm-exporter on OpenShift',
    'nvidia-kata-manager-config': _OPERATOR % 'the Kata manager config',
    'gpu-operator-trusted-ca': _OPERATOR % 'the trusted CA bundle of its driver pods on OpenShift',
    'kube-root-ca.crt': "Kubernetes (the cluster's root CA bundle, published in every namespace)",
    'openshift-service-ca.crt': 'OpenShift (the service CA bundle, published in every namespace)',
}
_ENTRYPOINT_OWNER = _OPERATOR % 'the entrypoint script of one of its privileged operands'


def configmap_owner(name):
    """Who owns the ConfigMap called ``name`` when it is one of OPERATOR_CONFIGMAPS or matches
    OPERATOR_CONFIGMAP_PATTERN (words for a message), else None."""
    if not isinstance(name, str):
        return None
    if name in OPERATOR_CONFIGMAPS:
        return _CONFIGMAP_OWNERS[name]
    return _ENTRYPOINT_OWNER if re.search(OPERATOR_CONFIGMAP_PATTERN, name) else None


def configmap_write_errors(name, option, namespace='', existing=None):
    """Why the collection may not write the ConfigMap ``name`` that the input ``option`` names ([] when it may).

    It writes only the ConfigMaps it created: never one of OPERATOR_CONFIGMAPS or OPERATOR_CONFIGMAP_PATTERN, and,
    when ``existing`` (the ConfigMap as read from the cluster, None or [] when it does not exist) is given, never one
    that has an owner reference or lacks the label app.kubernetes.io/managed-by: gpuops.gpu. The same rule as the
    rollout account's ConfigMap admission policy, so a run as an admin and a run as that account agree.
    """
    where = '%s/%s' % (namespace, name) if namespace else str(name)
    owner = configmap_owner(name)
    if owner:
        return ["%s: ConfigMap '%s' belongs to %s; gpuops.gpu never writes it: choose a name of your own"
                % (option, name, owner)]
    return existing_write_errors('ConfigMap', where, option, existing)


def existing_write_errors(kind, where, option, existing):
    """Why the collection may not write over ``existing`` (the ``kind`` object ``where`` as read, None or [] when
    there is none): it writes only the objects it created (label app.kubernetes.io/managed-by: gpuops.gpu, no owner
    reference)."""
    if isinstance(existing, list):
        existing = existing[0] if existing else None
    if not existing:
        return []
    meta = meta_of(existing)
    owners = ['%s %s' % (o.get('kind'), o.get('name')) for o in meta.get('ownerReferences') or []]
    if owners:
        return ['%s: %s %s belongs to %s (owner reference); gpuops.gpu never writes it: choose a name of your '
                'own' % (option, kind, where, ', '.join(owners))]
    if not is_managed(meta.get('labels')):
        return ['%s: %s %s exists and gpuops.gpu did not create it (no label %s=%s), and gpuops.gpu writes only '
                'the %ss it created: choose another name, or label it %s=%s to hand it over'
                % (option, kind, where, LABEL_MANAGED_BY, MANAGED_BY, kind, LABEL_MANAGED_BY, MANAGED_BY)]
    return []
