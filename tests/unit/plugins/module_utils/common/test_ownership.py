# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Who owns a ConfigMap the collection is asked to write (common/ownership.py)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.module_utils.common import names, ownership

ENTRYPOINTS = ('nvidia-container-toolkit-entrypoint', 'nvidia-device-plugin-entrypoint',
               'nvidia-mig-manager-entrypoint', 'nvidia-kata-manager-entrypoint')


def _cm(labels=None, owners=None):
    meta = {'name': 'x', 'namespace': 'gpu-operator'}
    if labels is not None:
        meta['labels'] = labels
    if owners is not None:
        meta['ownerReferences'] = owners
    return {'metadata': meta, 'data': {}}


def test_operator_configmaps_are_refused_by_name_naming_their_owner():
    for name in names.OPERATOR_CONFIGMAPS + ENTRYPOINTS:
        errors = ownership.configmap_write_errors(name, 'mig_config_map_name')
        assert len(errors) == 1, name
        assert errors[0].startswith("mig_config_map_name: ConfigMap '%s' belongs to " % name)
        assert 'choose a name of your own' in errors[0]
    assert 'the GPU operator (its built-in MIG configs' in ownership.configmap_owner('default-mig-parted-config')
    assert 'entrypoint script' in ownership.configmap_owner('nvidia-device-plugin-entrypoint')
    assert ownership.configmap_owner('kube-root-ca.crt').startswith('Kubernetes')
    assert ownership.configmap_owner('openshift-service-ca.crt').startswith('OpenShift')


def test_names_like_the_operators_but_not_theirs_pass():
    for name in ('gpuops-mig-parted-config', 'gpuops-device-plugin-config', 'nvidia-entrypoint',
                 'my-nvidia-device-plugin-entrypoint', 'nvidia-device-plugin-entrypoint-v2', 'default-mig-parted'):
        assert ownership.configmap_owner(name) is None, name
        assert ownership.configmap_write_errors(name, 'opt') == [], name
    assert ownership.configmap_owner(None) is None and ownership.configmap_owner(3) is None


def test_the_name_rule_matches_the_policy_pattern():
    """The pattern is matched as the admission policy's CEL matches() does: a search, anchored by ^ and $."""
    assert names.OPERATOR_CONFIGMAP_PATTERN.startswith('^') and names.OPERATOR_CONFIGMAP_PATTERN.endswith('$')
    assert len(set(names.OPERATOR_CONFIGMAPS)) == len(names.OPERATOR_CONFIGMAPS)


def test_an_existing_configmap_is_written_only_when_gpuops_created_it():
    managed = {names.LABEL_MANAGED_BY: names.MANAGED_BY}
    assert ownership.configmap_write_errors('mine', 'opt', 'ns', None) == []
    assert ownership.configmap_write_errors('mine', 'opt', 'ns', []) == []
    assert ownership.configmap_write_errors('mine', 'opt', 'ns', [_cm(managed)]) == []
    assert ownership.configmap_write_errors('mine', 'opt', 'ns', _cm(managed)) == []
    [unlabelled] = ownership.configmap_write_errors('mine', 'sharing_config_map_name', 'ns', [_cm({'app': 'x'})])
    assert unlabelled.startswith('sharing_config_map_name: ConfigMap ns/mine exists and gpuops.gpu did not create it')
    assert 'label it app.kubernetes.io/managed-by=gpuops.gpu to hand it over' in unlabelled
    assert ownership.configmap_write_errors('mine', 'opt', 'ns', [_cm({names.LABEL_MANAGED_BY: 'Helm'})])
    assert ownership.configmap_write_errors('mine', 'opt', 'ns', [_cm()])


def test_an_owned_configmap_is_refused_even_when_labelled():
    owners = [{'apiVersion': 'nvidia.com/v1', 'kind': 'ClusterPolicy', 'name': 'gpu-cluster-policy', 'uid': 'u'}]
    managed = {names.LABEL_MANAGED_BY: names.MANAGED_BY}
    [error] = ownership.configmap_write_errors('mine', 'opt', 'ns', [_cm(managed, owners)])
    assert error == ('opt: ConfigMap ns/mine belongs to ClusterPolicy gpu-cluster-policy (owner reference); '
                     'gpuops.gpu never writes it: choose a name of your own')
