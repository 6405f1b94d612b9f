# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Input checks of the nfd and gpu_operator roles, and the install_input_errors filter."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.gpu.plugins.filter.install import install_input_errors
from ansible_collections.gpuops.gpu.plugins.module_utils.plans import install as install_inputs

NFD = {'nfd_install_method': 'olm', 'nfd_namespace': 'openshift-nfd',
       'nfd_namespace_labels': {'openshift.io/cluster-monitoring': 'true'},
       'nfd_worker_tolerations': [{'key': 'dedicated', 'operator': 'Equal', 'value': 'gpu', 'effect': 'NoSchedule'}],
       'nfd_worker_node_selector': {'node-role.kubernetes.io/worker': ''},
       'nfd_gpu_node_selector': 'gpuops.dev/pool in (training,inference),!cordoned', 'nfd_olm_config': {},
       'nfd_instance_overrides': {}, 'nfd_helm_values': {}, 'nfd_helm_chart_ref': ''}
GPU = {'gpu_operator_install_method': 'olm', 'gpu_operator_namespace': 'nvidia-gpu-operator',
       'gpu_operator_namespace_labels': {'openshift.io/cluster-monitoring': 'true'}, 'gpu_operator_olm_config': {},
       'gpu_operator_cluster_policy_overrides': {'mig': {'strategy': 'mixed'}},
       'gpu_operator_daemonset_tolerations': [], 'gpu_operator_mig_strategy': '', 'gpu_operator_helm_values': {},
       'gpu_operator_helm_chart_ref': ''}


def test_good_inputs():
    assert install_inputs.role_input_errors(NFD, 'nfd') == []
    assert install_inputs.role_input_errors(GPU, 'gpu_operator') == []


@pytest.mark.parametrize('change, needle', [
    ({'nfd_worker_tolerations': [{'key': 'a', 'operator': 'Exists', 'value': 'b'}]},
     'nfd_worker_tolerations[0]: operator Exists must not set value'),
    ({'nfd_worker_node_selector': {'pool': 1}}, 'nfd_worker_node_selector.pool must be a string'),
    ({'nfd_gpu_node_selector': 'Bad Key=1'}, "nfd_gpu_node_selector: cannot parse label selector 'Bad Key=1'"),
    ({'nfd_gpu_node_selector': 'x/y/z'}, "nfd_gpu_node_selector: label selector 'x/y/z': key 'x/y/z'"),
    ({'nfd_gpu_node_selector': ['a']}, 'nfd_gpu_node_selector: a label selector must be a string'),
    ({'nfd_namespace': 'openshift.nfd'}, "nfd_namespace 'openshift.nfd' is not a valid namespace name"),
    ({'nfd_install_method': 'helm'}, 'nfd_install_method helm needs nfd_helm_chart_ref'),
    ({'nfd_olm_config': {'tolerations': [{'key': 'a', 'operator': 'exists'}]}}, 'nfd_olm_config.tolerations[0].operator'),
    ({'nfd_instance_overrides': ['x']}, 'nfd_instance_overrides must be a mapping'),
])
def test_nfd_errors_name_the_variable(change, needle):
    errors = install_inputs.role_input_errors(dict(NFD, **change), 'nfd')
    assert any(needle in e for e in errors), errors


@pytest.mark.parametrize('change, needle', [
    ({'gpu_operator_cluster_policy_overrides': {'mig': 'mixed'}}, 'gpu_operator_cluster_policy_overrides.mig must be a mapping'),
    ({'gpu_operator_cluster_policy_overrides': {'daemonsets': {'tolerations': [{'operator': 'Exists', 'value': 'x'}]}}},
     'gpu_operator_cluster_policy_overrides.daemonsets.tolerations[0]: operator Exists must not set value'),
    ({'gpu_operator_daemonset_tolerations': [{'key': 'a', 'effect': 'NoExec'}]}, 'gpu_operator_daemonset_tolerations[0].effect'),
    ({'gpu_operator_mig_strategy': 'Mixed'}, 'gpu_operator_mig_strategy must be none, single or mixed'),
    ({'gpu_operator_install_method': 'helm'}, 'needs gpu_operator_helm_chart_ref'),
    ({'gpu_operator_namespace_labels': {'openshift.io/cluster-monitoring': True}}, 'must be a string'),
])
def test_gpu_operator_errors_name_the_variable(change, needle):
    errors = install_inputs.role_input_errors(dict(GPU, **change), 'gpu_operator')
    assert any(needle in e for e in errors), errors


def test_filter():
    assert install_input_errors(NFD, 'nfd') == []
    with pytest.raises(AnsibleFilterError, match='role must be one of nfd, gpu_operator'):
        install_input_errors(NFD, 'mig')
    with pytest.raises(AnsibleFilterError, match='mapping of role variables'):
        install_input_errors([], 'nfd')
