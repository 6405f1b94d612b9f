# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests for module_utils.common.names: the shared names and the ownership label helpers."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.module_utils.common import names


def test_managed_by_labels_is_a_new_dict_each_time():
    labels = names.managed_by_labels()
    assert labels == {'app.kubernetes.io/managed-by': 'gpuops.gpu'}
    labels['x'] = 'y'
    assert names.managed_by_labels() == {'app.kubernetes.io/managed-by': 'gpuops.gpu'}


def test_managed_by_labels_keeps_given_labels_and_wins():
    given = {'team': 'ml', names.LABEL_MANAGED_BY: 'someone-else'}
    assert names.managed_by_labels(given) == {'team': 'ml', 'app.kubernetes.io/managed-by': 'gpuops.gpu'}
    assert given[names.LABEL_MANAGED_BY] == 'someone-else'


def test_is_managed():
    assert names.is_managed({'app.kubernetes.io/managed-by': 'gpuops.gpu'})
    assert not names.is_managed({'app.kubernetes.io/managed-by': 'helm'})
    assert not names.is_managed(None) and not names.is_managed({})


def test_cluster_policy_coordinates():
    assert names.CLUSTER_POLICY == ('nvidia.com', 'v1', 'clusterpolicies')
    assert names.CLUSTER_POLICY_API_VERSION == 'nvidia.com/v1'
    assert names.CLUSTER_POLICY_CRD == 'clusterpolicies.nvidia.com'


def test_resource_and_label_names_share_the_nvidia_domain():
    for name in (names.GPU_RESOURCE, names.SHARED_RESOURCE, names.MIG_RESOURCE_PREFIX) + names.HAMI_RESOURCES:
        assert name.startswith(names.RESOURCE_PREFIX)
    for name in (names.ANN_ROLLOUT_TARGET, names.ANN_ROLLOUT_PHASE, names.ANN_ROLLOUT_REASON,
                 names.ANN_CORDONED_BY_ROLLOUT, names.ANN_ROLLOUT_UPDATED, names.ANN_PHYSICAL_GPUS):
        assert name.startswith('gpuops.gpu/')


# --- the MPS root ----------------------------------------------------------------------------


def test_mps_root_is_the_device_plugins():
    assert names.MPS_ROOT == '/run/nvidia/mps'
