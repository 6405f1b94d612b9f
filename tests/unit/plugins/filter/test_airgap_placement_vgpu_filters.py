# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import base64
import json

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.gpu.plugins.filter import mirror, placement, vgpu

FILTERS = {}
for _module in (mirror, placement, vgpu):
    FILTERS.update(_module.FilterModule().filters())
MIRROR = 'mirror.example.com:8443'


def test_filter_names():
    assert sorted(FILTERS) == ['daemonsets_not_ready_for', 'docker_config_merge', 'gpu_node_placement_plan',
                               'mirror_image_variables', 'mirror_input_errors', 'mirror_plan',
                               'public_registry_references', 'taint_errors', 'tolerations_for_taints', 'vgpu_plan']


def test_mirror_plan_filter():
    plan = FILTERS['mirror_plan']({'platform': 'openshift', 'registry': MIRROR, 'repositories': ['nvcr.io/nvidia',
                                   'registry.redhat.io'], 'openshift_version': '4.18'})
    assert plan['errors'] == [] and len(plan['objects']) == 5
    with pytest.raises(AnsibleFilterError):
        FILTERS['mirror_plan']('x')


def test_public_registry_references_filter_accepts_one_object():
    obj = {'kind': 'Pod', 'metadata': {'name': 'p'}, 'spec': {'containers': [{'image': 'nvcr.io/nvidia/cuda:12'}]}}
    assert FILTERS['public_registry_references'](obj, MIRROR)[0]['path'] == 'spec.containers[0].image'


def test_docker_config_merge_filter():
    out = FILTERS['docker_config_merge']('', [{'registry': MIRROR, 'username': 'u', 'password': 'SECRET'}])
    assert out['changed'] and MIRROR in json.loads(base64.b64decode(out['data']))['auths']
    with pytest.raises(AnsibleFilterError) as info:
        FILTERS['docker_config_merge']('', [{'registry': MIRROR, 'username': '', 'password': 'SECRET'}])
    assert 'SECRET' not in str(info.value)
    with pytest.raises(AnsibleFilterError) as info:
        FILTERS['docker_config_merge']('%%%', [{'registry': MIRROR, 'username': 'u', 'password': 'SECRET'}])
    assert 'SECRET' not in str(info.value)


def test_placement_filters():
    assert FILTERS['taint_errors']([{'key': 'a', 'effect': 'NoSchedule'}]) == []
    assert FILTERS['taint_errors']([{'key': 'a', 'effect': 'Nope'}])
    assert FILTERS['tolerations_for_taints']([{'key': 'a', 'value': 'b', 'effect': 'NoSchedule'}]) == [
        {'key': 'a', 'operator': 'Exists', 'effect': 'NoSchedule'}]
    assert FILTERS['tolerations_for_taints']([{'key': 'a', 'value': 'b', 'effect': 'NoSchedule'}], keep_gpu=True)[-1] \
        == {'key': 'nvidia.com/gpu', 'operator': 'Exists', 'effect': 'NoSchedule'}
    with pytest.raises(AnsibleFilterError):
        FILTERS['tolerations_for_taints']([{'key': 'a', 'effect': 'Nope'}])
    plan = FILTERS['gpu_node_placement_plan']({'taints': [], 'layers': []}, {})
    assert plan['errors'] == [] and plan['patches'] == []
    with pytest.raises(AnsibleFilterError):
        FILTERS['gpu_node_placement_plan'](None)


def test_vgpu_plan_filter():
    plan = FILTERS['vgpu_plan']({'secret_name': 'licensing-config', 'token_file': '/t'},
                                {'cluster_policies': [{'metadata': {'name': 'p'}, 'spec': {}}],
                                 'token': {'exists': True, 'isreg': True, 'size': 1}})
    assert plan['errors'] == []
    with pytest.raises(AnsibleFilterError):
        FILTERS['vgpu_plan']([])


def test_daemonsets_not_ready_for_filter():
    taint = {'key': 'dedicated', 'value': 'gpu', 'effect': 'NoExecute'}
    ds = {'metadata': {'name': 'd', 'namespace': 'n', 'generation': 1},
          'spec': {'template': {'spec': {'tolerations': []}}}, 'status': {'observedGeneration': 1}}
    assert FILTERS['daemonsets_not_ready_for']([ds], [taint]) == ['n/d']
    assert FILTERS['daemonsets_not_ready_for']([ds], [taint], owner_kind='ClusterPolicy') == []
