# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import LABEL_MANAGED_BY, MANAGED_BY
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.quota import (
    quota_plan, replicas_errors, replicas_from_nodes)

NAMESPACES = ['team-a', 'team-b', 'ml-1', 'ml-2']
SELECTED = {'team=ml': ['ml-1', 'ml-2'], 'team=none': []}


def managed(namespace, name='gpu-quota'):
    return {'metadata': {'namespace': namespace, 'name': name, 'labels': {LABEL_MANAGED_BY: MANAGED_BY}}}


def foreign(namespace, name='gpu-quota'):
    return {'metadata': {'namespace': namespace, 'name': name, 'labels': {'owner': 'someone'}}}


def plan(entries, **kwargs):
    kwargs.setdefault('selected', SELECTED)
    return quota_plan(entries, NAMESPACES, **kwargs)


# --- replicas ---------------------------------------------------------------------------------

def test_replicas_from_nodes_takes_the_largest_shared_value():
    nodes = [{'metadata': {'labels': {'nvidia.com/gpu.replicas': '4'}}},
             {'metadata': {'labels': {'nvidia.com/gpu.replicas': '10', 'nvidia.com/mig-1g.5gb.replicas': '2'}}},
             {'nvidia.com/gpu.replicas': '1', 'nvidia.com/mig-2g.10gb.replicas': '1'},
             {'metadata': {'labels': {'nvidia.com/gpu.replicas': 'x'}}},
             {'metadata': {}}]
    assert replicas_from_nodes(nodes) == {'nvidia.com/gpu': 10, 'nvidia.com/mig-1g.5gb': 2}


def test_replicas_from_unshared_nodes_is_empty():
    assert replicas_from_nodes([{'metadata': {'labels': {'nvidia.com/gpu.replicas': '1'}}}]) == {}
    assert replicas_from_nodes(None) == {}


def test_replicas_errors():
    assert replicas_errors(4) == [] and replicas_errors({'nvidia.com/gpu': 2}) == [] and replicas_errors(None) == []
    assert replicas_errors('4') and replicas_errors({'nvidia.com/gpu': '2'})


# --- present ----------------------------------------------------------------------------------

def test_manifests_for_namespaces_and_selector_with_normalised_hard():
    result = plan([{'namespaces': ['team-a'], 'namespace_selector': 'team=ml',
                    'hard': {'nvidia.com/gpu': 4, 'requests.cpu': '64'}}])
    assert result['errors'] == []
    assert [(q['metadata']['namespace'], q['metadata']['name']) for q in result['quotas']] == [
        ('team-a', 'gpu-quota'), ('ml-1', 'gpu-quota'), ('ml-2', 'gpu-quota')]
    quota = result['quotas'][0]
    assert quota == {'apiVersion': 'v1', 'kind': 'ResourceQuota',
                     'metadata': {'name': 'gpu-quota', 'namespace': 'team-a', 'labels': {LABEL_MANAGED_BY: MANAGED_BY}},
                     'spec': {'hard': {'requests.nvidia.com/gpu': '4', 'requests.cpu': '64'}}}
    assert len(result['notes']) == 1 and 'normalised to requests.nvidia.com/gpu' in result['notes'][0]


def test_name_scopes_labels_annotations_and_single_namespace():
    result = plan([{'name': 'mig', 'namespace': 'team-b', 'hard': {'requests.nvidia.com/mig-1g.5gb': 14},
                    'scopes': ['NotBestEffort'], 'labels': {'team': 'b'}, 'annotations': {'why': 'budget'},
                    'scope_selector': {'matchExpressions': [{'scopeName': 'PriorityClass', 'operator': 'In',
                                                             'values': ['high']}]}}])
    assert result['errors'] == []
    (quota,) = result['quotas']
    assert quota['metadata'] == {'name': 'mig', 'namespace': 'team-b', 'labels': {'team': 'b', LABEL_MANAGED_BY: MANAGED_BY},
                                 'annotations': {'why': 'budget'}}
    assert quota['spec']['scopes'] == ['NotBestEffort']
    assert quota['spec']['scopeSelector']['matchExpressions'][0]['scopeName'] == 'PriorityClass'


def test_existing_managed_quota_is_updated_foreign_one_refused():
    assert plan([{'namespace': 'team-a', 'hard': {'requests.nvidia.com/gpu': 1}}],
                existing=[managed('team-a')])['quotas']
    result = plan([{'namespace': 'team-a', 'hard': {'requests.nvidia.com/gpu': 1}}], existing=[foreign('team-a')])
    assert result['quotas'] == []
    assert 'not created by gpuops.gpu' in result['errors'][0]


def test_timeslicing_warning_names_the_quota():
    result = plan([{'namespace': 'team-a', 'hard': {'requests.nvidia.com/gpu': 8}}], replicas={'nvidia.com/gpu': 4})
    assert len(result['warnings']) == 1
    assert result['warnings'][0].startswith("quota[0] 'gpu-quota': requests.nvidia.com/gpu: 8")
    assert 'equivalent of 2 physical' in result['warnings'][0]


def test_normalise_false_rejects_bare_keys():
    result = plan([{'namespace': 'team-a', 'hard': {'nvidia.com/gpu': 2}}], normalise=False)
    assert result['quotas'] == [] and 'write requests.nvidia.com/gpu' in result['errors'][0]


BAD = [
    ([{'namespace': 'team-a', 'hard': {'limits.nvidia.com/gpu': 4}}], 'never enforced'),
    ([{'namespace': 'team-a', 'hard': {'requests.nvidia.com/gpus': 4}}], 'not a GPU resource'),
    ([{'namespace': 'team-a', 'hard': {'requests.nvidia.com/gpu': '1.5'}}], 'whole number'),
    ([{'namespace': 'team-a', 'hard': {'requests.nvidia.com/gpu': -1}}], 'negative'),
    ([{'namespace': 'team-a', 'hard': {'requests.nvidia.com/gpu': 'lots'}}], 'not a Kubernetes quantity'),
    ([{'namespace': 'team-a', 'hard': {}}], 'non-empty mapping'),
    ([{'namespace': 'team-a'}], 'non-empty mapping'),
    ([{'namespace': 'nope', 'hard': {'requests.nvidia.com/gpu': 1}}], "namespace 'nope' not found"),
    ([{'namespace': 'Team_A', 'hard': {'requests.nvidia.com/gpu': 1}}], 'not a valid namespace name'),
    ([{'namespace_selector': 'team=none', 'hard': {'requests.nvidia.com/gpu': 1}}], 'matches no namespace'),
    ([{'namespace_selector': 'team=unresolved', 'hard': {'requests.nvidia.com/gpu': 1}}], 'not resolved'),
    ([{'hard': {'requests.nvidia.com/gpu': 1}}], 'set namespace, namespaces or namespace_selector'),
    ([{'namespace': 'team-a', 'hard': {'requests.nvidia.com/gpu': 1}, 'namespace_selectors': 'x'}],
     "did you mean 'namespace_selector'"),
    ([{'name': 'GPU', 'namespace': 'team-a', 'hard': {'requests.nvidia.com/gpu': 1}}], 'DNS subdomain'),
    ([{'namespace': 'team-a', 'hard': {'requests.nvidia.com/gpu': 1}},
      {'namespaces': ['team-a'], 'hard': {'requests.nvidia.com/gpu': 2}}], 'declared once'),
    ([{'namespace': 'team-a', 'hard': {'requests.nvidia.com/gpu': 1}, 'scopes': ['Gpu']}], 'unknown scope'),
    ([{'namespace': 'team-a', 'hard': {'requests.nvidia.com/gpu': 1}, 'labels': {LABEL_MANAGED_BY: 'me'}}],
     'cannot be overridden'),
    ([{'namespace': 'team-a', 'hard': {'requests.nvidia.com/gpu': 1}, 'labels': {'team': 5}}], 'must be a string'),
    ([{'namespace': 'team-a', 'hard': {'nvidia.com/gpu': 1, 'requests.nvidia.com/gpu': 2}}], 'keep one'),
    (['team-a'], 'must be a mapping'),
    ({'namespace': 'team-a'}, 'must be a list'),
]


@pytest.mark.parametrize('entries,fragment', BAD)
def test_bad_input_gives_errors_and_nothing_to_write(entries, fragment):
    result = plan(entries)
    assert result['quotas'] == [] and result['delete'] == []
    assert any(fragment in e for e in result['errors']), result['errors']


def test_all_errors_are_reported_at_once():
    result = plan([{'namespace': 'nope', 'hard': {'limits.nvidia.com/gpu': 1}},
                   {'namespace': 'team-a', 'hard': {'requests.nvidia.com/gpu': 1}, 'scopes': ['X']}])
    assert len(result['errors']) == 3


# --- absent -----------------------------------------------------------------------------------

def test_absent_deletes_only_existing_managed_quotas():
    existing = [managed('team-a'), foreign('team-b'), managed('ml-1', 'other')]
    result = plan([{'namespaces': ['team-a', 'team-b', 'gone'], 'namespace_selector': 'team=ml'}],
                  state='absent', existing=existing)
    assert result['errors'] == []
    assert result['delete'] == [{'namespace': 'team-a', 'name': 'gpu-quota'}]
    assert any('team-b/gpu-quota' in n and 'left in place' in n for n in result['notes'])


def test_absent_with_selector_matching_nothing_is_fine():
    result = plan([{'namespace_selector': 'team=none'}], state='absent')
    assert result == {'quotas': [], 'delete': [], 'errors': [], 'notes': [], 'warnings': []}


def test_unknown_state():
    assert 'state must be one of' in plan([], state='gone')['errors'][0]
