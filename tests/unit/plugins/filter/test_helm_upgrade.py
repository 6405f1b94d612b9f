# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The Helm upgrade filters: helm_info and helm_pull loop results in, the plan out; the versions of an index."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.gpu.plugins.filter.helm_upgrade import FilterModule

FILTERS = FilterModule().filters()
URL = 'http://127.0.0.1:8000'
NFD = {'operator': 'nfd', 'var_prefix': 'upgrade_nfd', 'release': 'node-feature-discovery',
       'namespace': 'node-feature-discovery', 'chart_ref': 'node-feature-discovery', 'repo_url': URL,
       'target': '0.19.0', 'values': {}}
INDEX = {'apiVersion': 'v1', 'entries': {'node-feature-discovery': [{'version': '0.19.0'}, {'version': '0.18.2'}],
                                         'gpu-operator': [{'version': 'v1.1.0'}]}}


def info(values, chart='node-feature-discovery-0.18.2'):
    return {'item': NFD, 'status': {'chart': chart, 'revision': '2', 'status': 'deployed', 'values': values}}


def reads(**kw):
    out = {'releases': [NFD], 'infos': [info({'a': 1})], 'computed': [info({'a': 1, 'b': 2})],
           'offered': {'nfd': ['0.19.0', '0.18.2']}, 'lock': {'changed': False, 'lock': {'state': 'free'}},
           'nodes': []}
    out.update(kw)
    return out


def test_plan_from_helm_info_results():
    plan = FILTERS['helm_upgrade_plan'](reads())
    assert plan['errors'] == [] and plan['pulls'][0]['version'] == '0.19.0'
    assert plan['releases'][0]['user_values'] == {'a': 1} and plan['releases'][0]['rollback'] == (
        'helm rollback node-feature-discovery 2 -n node-feature-discovery')


def test_plan_with_the_pulled_chart():
    chart = {'chart': {'name': 'node-feature-discovery', 'version': '0.19.0'}, 'values': {'b': 3}, 'crds': ['/c.yaml'],
             'subcharts': [], 'archives': []}
    plan = FILTERS['helm_upgrade_plan'](reads(pulls=[{'item': {'operator': 'nfd'}, 'failed': False, 'rc': 0}],
                                              charts={'nfd': chart}))
    assert plan['errors'] == [] and plan['values_diff'] == {'nfd': ['~ b: 2 -> 3']}
    assert plan['upgrades'][0]['crds'] == ['/c.yaml']


def test_a_failed_pull_is_an_error_with_helm_s_message():
    plan = FILTERS['helm_upgrade_plan'](reads(pulls=[{'item': {'operator': 'nfd'}, 'failed': True, 'rc': 1,
                                                      'stderr': 'Error: no such chart\n'}]))
    assert plan['errors'] == ['Node Feature Discovery: could not pull chart node-feature-discovery 0.19.0 from %s: '
                              'Error: no such chart' % URL]


def test_a_release_helm_info_did_not_find():
    plan = FILTERS['helm_upgrade_plan'](reads(infos=[{'item': NFD}], computed=[{'item': NFD}]))
    assert plan['errors'][0].startswith('Node Feature Discovery: no Helm release node-feature-discovery')


@pytest.mark.parametrize('bad', [None, [], {'infos': []}])
def test_bad_reads(bad):
    with pytest.raises(AnsibleFilterError, match='helm_upgrade_plan: expects a mapping with the list releases'):
        FILTERS['helm_upgrade_plan'](bad)


def test_input_errors():
    assert FILTERS['helm_upgrade_input_errors']({'releases': [NFD]}) == []
    assert FILTERS['helm_upgrade_input_errors']({'releases': [dict(NFD, target='next')]})[0].startswith(
        "upgrade_nfd_helm_chart_version 'next' is not a chart version")
    with pytest.raises(AnsibleFilterError):
        FILTERS['helm_upgrade_input_errors']([])


def test_chart_versions_of_an_index():
    versions = FILTERS['helm_chart_versions']
    assert versions(INDEX, 'node-feature-discovery') == ['0.19.0', '0.18.2']
    assert versions(INDEX, 'nvidia/gpu-operator') == ['v1.1.0']
    assert versions(INDEX, 'other') == [] and versions({'entries': None}, 'x') == []
    assert versions(None, 'gpu-operator') is None and versions('', 'gpu-operator') is None


def test_crds_the_dry_run_refused():
    chart = {'chart': {'name': 'node-feature-discovery', 'version': '0.19.0'}, 'values': {}, 'crds': ['/c.yaml'],
             'subcharts': [], 'archives': []}
    checks = [{'item': [{'operator': 'nfd'}, '/c.yaml'], 'failed': False, 'msg': 'Failed to apply object: forbidden'}]
    plan = FILTERS['helm_upgrade_plan'](reads(pulls=[{'item': {'operator': 'nfd'}, 'failed': False, 'rc': 0}],
                                              charts={'nfd': chart}, crd_checks=checks))
    assert plan['errors'] == ['Node Feature Discovery: the cluster refuses c.yaml of chart node-feature-discovery '
                              '0.19.0 (server-side apply, dry run): Failed to apply object: forbidden']
