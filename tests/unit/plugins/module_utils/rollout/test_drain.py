# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Which pods a rollout moves and which PodDisruptionBudgets would block them."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.rollout import drain


def pdb(name, selector, allowed=0, namespace='ml'):
    return {'metadata': {'namespace': namespace, 'name': name}, 'spec': {'selector': selector},
            'status': {'disruptionsAllowed': allowed}}


def test_pdb_with_no_disruptions_blocks():
    pod = {'metadata': {'namespace': 'ml', 'name': 'p', 'labels': {'app': 'train'}}}
    pdbs = [pdb('strict', {'matchLabels': {'app': 'train'}}),
            pdb('loose', {'matchLabels': {'app': 'train'}}, allowed=1),
            pdb('x', {'matchLabels': {'app': 'train'}}, namespace='other'),
            pdb('expr', {'matchExpressions': [{'key': 'app', 'operator': 'In', 'values': ['train']}]}),
            pdb('other-app', {'matchLabels': {'app': 'serve'}}),
            pdb('no-selector', {}),
            pdb('all-in-namespace', {'matchLabels': {}}),
            pdb('unknown-operator', {'matchExpressions': [{'key': 'app', 'operator': 'Gt', 'values': ['1']}]})]
    assert drain.blocking_pdbs(pod, pdbs) == ['ml/strict', 'ml/expr', 'ml/all-in-namespace']


@pytest.mark.parametrize('expression,labels,blocks', [
    ({'key': 'tier', 'operator': 'NotIn', 'values': ['web']}, {}, True),          # absent: NotIn holds
    ({'key': 'tier', 'operator': 'NotIn', 'values': ['web']}, {'tier': 'web'}, False),
    ({'key': 'tier', 'operator': 'Exists'}, {'tier': 'x'}, True),
    ({'key': 'tier', 'operator': 'DoesNotExist'}, {'tier': 'x'}, False),
    ({'key': 'tier', 'operator': 'In', 'values': ['a', 'b']}, {}, False),
])
def test_match_expressions(expression, labels, blocks):
    pod = {'metadata': {'namespace': 'ml', 'name': 'p', 'labels': labels}}
    assert drain.blocking_pdbs(pod, [pdb('e', {'matchExpressions': [expression]})]) == (['ml/e'] if blocks else [])


def test_selected_pods_are_gpu_pods_plus_the_selector():
    def pod(name, labels, gpu, owner=None):
        meta = {'name': name, 'namespace': 'ml', 'labels': labels}
        if owner:
            meta['ownerReferences'] = [{'kind': owner, 'name': 'x'}]
        limits = {'nvidia.com/gpu': '1'} if gpu else {}
        return {'metadata': meta, 'spec': {'containers': [{'name': 'c', 'resources': {'limits': limits}}]},
                'status': {'phase': 'Running'}}
    pods = [pod('gpu', {}, True), pod('helper', {'role': 'cache'}, False), pod('other', {}, False),
            pod('ds', {'role': 'cache'}, False, owner='DaemonSet')]
    assert [p['metadata']['name'] for p in drain.selected_pods(pods)] == ['gpu']
    assert [p['metadata']['name'] for p in drain.selected_pods(pods, {'role': 'cache'})] == ['gpu', 'helper']
    claims = pod('claim', {'role': 'cache'}, False)
    claims['spec']['resourceClaims'] = [{'name': 'gpu', 'resourceClaimTemplateName': 'one-gpu'}]
    ds_claims = pod('ds-claim', {}, False, owner='DaemonSet')
    ds_claims['spec']['resourceClaims'] = claims['spec']['resourceClaims']
    pods += [claims, ds_claims]
    assert [p['metadata']['name'] for p in drain.selected_pods(pods)] == ['gpu', 'claim']
    assert [p['metadata']['name'] for p in drain.selected_pods(pods, {'role': 'cache'})] == ['gpu', 'claim', 'helper']
