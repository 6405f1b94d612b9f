# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The Helm upgrade planner: versions, the supported jump, refusals (one message each), the plan with the pulled
chart (values diff, CRDs first) and the rollback command."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.plans import helm_upgrade as hu

URL = 'https://helm.ngc.nvidia.com/nvidia'
OFFERED = ['v25.10.1', 'v25.10.0', 'v25.3.4', 'v25.3.0', 'v24.9.2', 'v24.6.2', 'v26.3.0-rc.1']
FREE = {'state': 'free'}


def status(chart='gpu-operator-v25.3.4', revision='4', state='deployed', values=None):
    return {'status': {'chart': chart, 'revision': revision, 'status': state, 'values': values or {}}}


def release(**kw):
    out = {'operator': 'gpu_operator', 'var_prefix': 'upgrade_gpu_operator', 'release': 'gpu-operator',
           'namespace': 'gpu-operator', 'chart_ref': 'gpu-operator', 'repo_url': URL, 'target': 'v25.10.1',
           'values': {}, 'info': status(values={'driver': {'version': '570'}}),
           'computed': {'driver': {'version': '570'}, 'operator': {'level': 'info'}}, 'offered': OFFERED}
    out.update(kw)
    return out


DEFAULTS = {'driver': {'version': '580'}, 'operator': {'level': 'info'}, 'nfd': {'enabled': False}}


def pulled(version='v25.10.1', values=None, crds=('/tmp/x/crds/b.yaml', '/tmp/x/crds/a.yaml'), **kw):
    chart = {'chart': {'name': 'gpu-operator', 'version': version,
                       'dependencies': [{'name': 'node-feature-discovery', 'condition': 'nfd.enabled'}]},
             'values': values if values is not None else DEFAULTS,
             'crds': list(crds),
             'subcharts': [{'chart': {'name': 'node-feature-discovery'}, 'values': {'w': 1},
                            'crds': ['/tmp/x/charts/node-feature-discovery/crds/nfd.yaml']}],
             'archives': []}
    chart.update(kw)
    return chart


def plan(*releases, **kw):
    request = {'releases': list(releases), 'lock': FREE, 'nodes': []}
    request.update(kw)
    return hu.helm_upgrade_plan(request)


# --- versions ------------------------------------------------------------------------------------

@pytest.mark.parametrize('older, newer', [
    ('v25.3.4', 'v25.10.0'), ('0.18.2', '0.18.10'), ('1.0.0-rc.1', '1.0.0'), ('1.0.0-alpha', '1.0.0-alpha.1'),
    ('1.0.0-alpha.1', '1.0.0-beta'), ('1.0.0-2', '1.0.0-10'), ('v1.0.0-devel', 'v1.1.0'), ('1', '1.0.1'),
])
def test_version_order(older, newer):
    assert hu.version_key(older) < hu.version_key(newer)


def test_versions_that_are_not_semantic():
    assert [hu.version_key(v) for v in ('latest', '', None, 'v1.2.3.4', '١.٢.٣')] == [None] * 5
    assert hu.version_key('v25.10.1+build.5') == hu.version_key('25.10.1')


@pytest.mark.parametrize('chart, expected, out', [
    ('gpu-operator-v25.10.1', 'gpu-operator', ('gpu-operator', 'v25.10.1')),
    ('gpu-operator-v1.0.0-devel', None, ('gpu-operator', 'v1.0.0-devel')),
    ('node-feature-discovery-0.18.2', 'node-feature-discovery', ('node-feature-discovery', '0.18.2')),
    ('k8s-2-tool-1.2.3', 'k8s-2-tool', ('k8s-2-tool', '1.2.3')),
    ('other-chart-1.2.3', 'gpu-operator', ('other-chart', '1.2.3')),
])
def test_split_chart(chart, expected, out):
    assert hu.split_chart(chart, expected) == out


def test_chart_name_and_the_repository_s_spelling():
    assert [hu.chart_name(r) for r in ('gpu-operator', 'nvidia/gpu-operator', 'oci://reg/charts/gpu-operator/')] == [
        'gpu-operator'] * 3
    assert hu.offered_match('25.10.1', OFFERED) == 'v25.10.1' and hu.offered_match('v9.9.9', OFFERED) is None


# --- inputs --------------------------------------------------------------------------------------

def test_bad_variables_are_named():
    errors = hu.input_errors({'releases': [release(target='latest', release='Bad_Name', namespace='Gpu Operator',
                                                   values=[1])],
                              'max_release_lines': -1, 'allow_downgrade': 'yes'})
    assert errors == [
        "upgrade_gpu_operator_helm_chart_version 'latest' is not a chart version (semantic versioning, for example "
        "v25.10.1 or 0.18.2)",
        "upgrade_gpu_operator_helm_release_name 'Bad_Name' is not a Helm release name (lowercase letters, digits, - "
        "and ., at most 53 characters)",
        "upgrade_gpu_operator_namespace 'Gpu Operator' is not a namespace name",
        'upgrade_gpu_operator_helm_values must be a mapping, got list',
        'upgrade_helm_max_release_lines must be a whole number of 0 or more (0 = no limit), got -1',
        "upgrade_helm_allow_downgrade must be true or false, got string 'yes'"]


@pytest.mark.parametrize('ref, url, message', [
    ('oci://reg/charts/gpu-operator', URL, 'upgrade_gpu_operator_helm_chart_repo_url must be empty with an oci://'),
    ('gpu-operator', '', 'upgrade_gpu_operator_helm_chart_repo_url must be the http(s) URL of the chart repository or '
                         'mirror that serves index.yaml, for example https://helm.ngc.nvidia.com/nvidia (or give'),
    ('gpu-operator', 'file:///srv/charts', 'upgrade_gpu_operator_helm_chart_repo_url must be the http(s) URL'),
    ('./deployments/gpu-operator', URL, "upgrade_gpu_operator_helm_chart_ref './deployments/gpu-operator': with"),
    ('', URL, 'upgrade_gpu_operator_helm_chart_ref must name the chart the release runs, for example gpu-operator (with '
              'upgrade_gpu_operator_helm_chart_repo_url https://helm.ngc.nvidia.com/nvidia or its mirror), or an oci:// '
              "reference; got ''"),
])
def test_where_the_chart_comes_from(ref, url, message):
    errors = hu.input_errors({'releases': [release(chart_ref=ref, repo_url=url)]})
    assert len(errors) == 1 and errors[0].startswith(message), errors


def test_input_errors_stop_the_plan_before_anything_else():
    out = plan(release(target='x'))
    assert out['releases'] == [] and len(out['errors']) == 1 and not out['changes']


# --- one release ---------------------------------------------------------------------------------

def test_upgrade_plan_before_the_chart_is_pulled():
    out = plan(release(values={'operator': {'level': 'debug'}}))
    assert out['errors'] == [] and out['changes']
    rel = out['releases'][0]
    assert (rel['action'], rel['from_version'], rel['to_version'], rel['from_revision']) == (
        'upgrade', 'v25.3.4', 'v25.10.1', 4)
    assert rel['values'] == {'driver': {'version': '570'}, 'operator': {'level': 'debug'}}
    assert rel['rollback'] == 'helm rollback gpu-operator 4 -n gpu-operator'
    assert out['pulls'] == [{'operator': 'gpu_operator', 'chart_ref': 'gpu-operator', 'repo_url': URL,
                             'version': 'v25.10.1', 'chart': 'gpu-operator'}]
    assert out['values_diff'] == {'gpu_operator': ['+ operator.level: "debug"']}      # the user's part, so far
    assert out['actions'] == [
        'GPU operator: upgrade Helm release gpu-operator/gpu-operator from chart gpu-operator v25.3.4 (revision 4) '
        'to v25.10.1: the CRDs of the chart first, then helm upgrade; undo: helm rollback gpu-operator 4 -n '
        'gpu-operator']


def test_the_pulled_chart_gives_the_values_diff_and_the_crds_first():
    out = plan(release(values={'operator': {'level': 'debug'}}, chart=pulled(), pull_error=None))
    assert out['errors'] == [] and out['warnings'] == []
    rel = out['upgrades'][0]
    assert rel['crds'] == ['/tmp/x/crds/a.yaml', '/tmp/x/crds/b.yaml']      # nfd.enabled false: not the subchart's
    assert out['values_diff'] == {'gpu_operator': ['+ nfd.enabled: false', '~ operator.level: "info" -> "debug"']}
    assert 'the CRDs first (a.yaml, b.yaml), then helm upgrade' in out['actions'][0]


def test_an_enabled_subchart_s_crds_come_too_and_its_archives_are_named():
    chart = pulled(values={'driver': {'version': '570'}, 'operator': {'level': 'info'}}, archives=['x-1.0.0.tgz'])
    out = plan(release(chart=chart, pull_error=None))
    rel = out['upgrades'][0]
    assert rel['crds'][-1] == '/tmp/x/charts/node-feature-discovery/crds/nfd.yaml'
    assert out['values_diff'] == {'gpu_operator': ['+ node-feature-discovery.global: {}',
                                                   '+ node-feature-discovery.w: 1']}
    assert out['warnings'] == ['GPU operator: subchart archives x-1.0.0.tgz were not opened: their default values '
                               'are not in the values diff and their CRDs are not applied first']


@pytest.mark.parametrize('extra, message', [
    ({'pull_error': 'Error: chart "gpu-operator" version "v25.10.1" not found', 'chart': None},
     'GPU operator: could not pull chart gpu-operator v25.10.1 from %s: Error: chart "gpu-operator" version '
     '"v25.10.1" not found' % URL),
    ({'pull_error': None, 'chart': pulled(version='v25.10.0')},
     'GPU operator: the pulled chart is gpu-operator v25.10.0, not gpu-operator v25.10.1'),
])
def test_a_pull_that_fails_or_brings_another_chart(extra, message):
    out = plan(release(**extra))
    assert out['errors'] == [message] and out['upgrades'] == [] and out['pulls'] == []


def test_at_the_target_nothing_to_do_and_nothing_pulled():
    out = plan(release(info=status(chart='gpu-operator-v25.10.1', values={'a': 1}), values={'a': 1}))
    assert out['errors'] == [] and not out['changes'] and out['pulls'] == [] and out['values_diff'] == {}
    assert out['actions'] == ['GPU operator: Helm release gpu-operator/gpu-operator runs chart gpu-operator v25.10.1 '
                              '(revision 4) with these values already: nothing to do']


def test_same_version_with_new_values_is_an_upgrade_of_the_values():
    out = plan(release(info=status(chart='gpu-operator-v25.10.1'), values={'a': 1}))
    assert out['upgrades'][0]['action'] == 'values'
    assert out['actions'][0].startswith('GPU operator: new values for Helm release gpu-operator/gpu-operator')


def test_the_repository_s_spelling_of_the_target_is_used():
    out = plan(release(target='25.10.1'))
    assert out['upgrades'][0]['to_version'] == 'v25.10.1' and out['pulls'][0]['version'] == 'v25.10.1'


# --- refusals ------------------------------------------------------------------------------------

def test_not_installed_by_helm():
    out = plan(release(info={}))
    assert out['errors'] == [
        'GPU operator: no Helm release gpu-operator in namespace gpu-operator: it was not installed with Helm there '
        '(installed through OLM? use upgrade_method: olm), or set upgrade_gpu_operator_helm_release_name and '
        'upgrade_gpu_operator_namespace']


@pytest.mark.parametrize('state, hint', [
    ('failed', 'roll it back to its last good revision first (helm history gpu-operator -n gpu-operator, then helm '
               'rollback gpu-operator <revision> -n gpu-operator)'),
    ('pending-upgrade', 'another Helm operation on it is running or was interrupted; let it finish, or roll it back'),
    ('uninstalling', 'it is being or was uninstalled'),
])
def test_a_release_that_is_not_deployed(state, hint):
    out = plan(release(info=status(state=state)))
    assert out['errors'] == ['GPU operator: Helm release gpu-operator/gpu-operator is %s (revision 4), not '
                             'deployed; %s' % (state, hint)]


def test_a_release_of_another_chart():
    out = plan(release(info=status(chart='other-chart-1.0.0')))
    assert out['errors'] == ['GPU operator: Helm release gpu-operator/gpu-operator runs chart other-chart-1.0.0, not '
                             'gpu-operator; set upgrade_gpu_operator_helm_chart_ref to the chart it runs']


def test_an_installed_version_that_is_not_semantic():
    out = plan(release(info=status(chart='gpu-operator-vmain')))
    assert out['errors'][0].startswith('GPU operator: Helm release gpu-operator/gpu-operator runs chart')


def test_a_version_the_repository_does_not_offer():
    out = plan(release(target='v25.10.9'))
    assert out['errors'] == ['GPU operator: chart gpu-operator version v25.10.9 is not in the repository %s (it '
                             'offers v26.3.0-rc.1, v25.10.1, v25.10.0, v25.3.4, v25.3.0, v24.9.2, v24.6.2)' % URL]
    many = ['0.%d.0' % i for i in range(20)]
    out = plan(release(info=status(chart='gpu-operator-0.18.0'), target='0.99.0', offered=many))
    assert out['errors'][0].endswith('(it offers 0.19.0, 0.18.0, 0.17.0, 0.16.0, 0.15.0, 0.14.0, 0.13.0, 0.12.0, ...)')
    assert plan(release(offered=[]))['errors'][0].endswith('(it offers no version of that chart)')


def test_an_index_that_could_not_be_read():
    assert plan(release(offered=None))['errors'] == [
        'GPU operator: could not read the chart repository index %s/index.yaml (the warning above gives the reason); '
        'check upgrade_gpu_operator_helm_chart_repo_url and that the repository or mirror answers' % URL]


def test_an_oci_chart_is_checked_by_pulling_it():
    out = plan(release(chart_ref='oci://reg.example.com/charts/gpu-operator', repo_url='', offered=None))
    assert out['errors'] == [] and out['pulls'][0]['chart_ref'] == 'oci://reg.example.com/charts/gpu-operator'
    assert out['warnings'] == ['GPU operator: an OCI registry lists no chart versions: '
                               'oci://reg.example.com/charts/gpu-operator v25.10.1 is checked by pulling it, and the '
                               'release lines between are not counted']


def test_a_downgrade_is_refused_unless_allowed_and_then_leaves_the_crds():
    out = plan(release(target='v24.9.2'))
    assert out['errors'] == ['GPU operator: the target v24.9.2 is older than the installed v25.3.4; a downgrade needs '
                             'upgrade_helm_allow_downgrade: true (to undo an upgrade, rather run helm rollback '
                             'gpu-operator 4 -n gpu-operator)']
    out = plan(release(target='v24.9.2', chart=pulled(version='v24.9.2'), pull_error=None), allow_downgrade=True)
    assert out['errors'] == [] and out['upgrades'][0]['action'] == 'downgrade' and out['upgrades'][0]['crds'] == []
    assert out['warnings'] == ['GPU operator: downgrade from v25.3.4 to v24.9.2: the CRDs stay at the installed version']


@pytest.mark.parametrize('installed, target, limit, message', [
    ('v24.6.2', 'v25.3.4', 2, None),                   # 24.9, 25.3
    ('v24.6.2', 'v25.10.1', 2, 'GPU operator: v24.6.2 -> v25.10.1 crosses 3 release lines the repository offers '
                               '(24.9, 25.3, 25.10), more than upgrade_helm_max_release_lines (2); upgrade to '
                               'v25.3.4 first, or raise upgrade_helm_max_release_lines when the release notes of '
                               'every line in between allow it'),
    ('v24.6.2', 'v25.10.1', 3, None),
    ('v24.6.2', 'v25.10.1', 0, None),                  # no limit
    ('v25.3.0', 'v25.3.4', 1, None),                   # a patch of the installed line
    ('v25.3.4', 'v25.10.1', 1, None),
    ('v24.9.2', 'v25.10.1', 1, 'GPU operator: v24.9.2 -> v25.10.1 crosses 2 release lines the repository offers '
                               '(25.3, 25.10), more than upgrade_helm_max_release_lines (1); upgrade to v25.3.4 first'),
])
def test_the_supported_jump(installed, target, limit, message):
    out = plan(release(info=status(chart='gpu-operator-' + installed), target=target), max_release_lines=limit)
    if message is None:
        assert out['errors'] == [], out['errors']
    else:
        assert len(out['errors']) == 1 and out['errors'][0].startswith(message), out['errors']


def test_a_prerelease_line_is_not_counted_unless_it_is_the_target():
    offered = ['1.0.0', '1.1.0-rc.1', '1.2.0', '1.3.0']
    assert plan(release(info=status(chart='gpu-operator-1.0.0'), target='1.2.0', offered=offered),
                max_release_lines=1)['errors'] == []
    assert plan(release(info=status(chart='gpu-operator-1.0.0'), target='1.3.0', offered=offered),
                max_release_lines=1)['errors'][0].startswith('GPU operator: 1.0.0 -> 1.3.0 crosses 2 release lines')


def test_the_rollout_lock_and_every_reason_at_once():
    lock = {'state': 'held', 'who': 'ann@laptop', 'holder': 'h-1', 'purpose': 'mig_rollout of 1 node'}
    nfd = release(operator='nfd', var_prefix='upgrade_nfd', release='node-feature-discovery', namespace='nfd',
                  chart_ref='node-feature-discovery', info={}, target='0.19.0')
    out = plan(nfd, release(target='v9.9.9'), lock=lock)
    assert [e.split(':')[0] for e in out['errors'][:2]] == ['Node Feature Discovery', 'GPU operator']
    assert out['errors'][2] == ('the rollout lock (Lease gpuops-gpu-rollout) is held by ann@laptop (holder h-1) for '
                                'mig_rollout of 1 node; wait until that rollout ends')
    assert out['upgrades'] == [] and out['pulls'] == [] and not out['changes']
    assert out['actions'] == ['Node Feature Discovery: Helm release nfd/node-feature-discovery: refused (below)',
                              'GPU operator: Helm release gpu-operator/gpu-operator: refused (below)']


def test_a_node_in_a_rollout_stops_the_upgrade():
    node = {'metadata': {'name': 'a100-0', 'annotations': {'gpuops.gpu/rollout-target': 'all-1g.10gb'}}}
    out = plan(release(), nodes=[node])
    assert len(out['errors']) == 1 and out['errors'][0].startswith('node a100-0 is in a rollout')


STATUS_ERROR = ('Failed to apply object: b\'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
                '"message":"CustomResourceDefinition.apiextensions.k8s.io \\\\"rules.x.io\\\\" is invalid: spec.scope: '
                'Invalid value: \\\\"Cluster\\\\": field is immutable","reason":"Invalid","code":422}\\n\'')


def test_a_crd_the_cluster_refuses_in_the_dry_run():
    checks = [{'item': [{'operator': 'gpu_operator'}, '/tmp/x/crds/a.yaml'], 'failed': False, 'result': {}},
              {'item': [{'operator': 'gpu_operator'}, '/tmp/x/crds/b.yaml'], 'failed': False, 'msg': STATUS_ERROR},
              {'item': [{'operator': 'nfd'}, '/n.yaml'], 'skipped': True}]
    refusals = hu.crd_refusals(checks)
    assert refusals == {'gpu_operator': [('/tmp/x/crds/b.yaml', STATUS_ERROR)]}
    out = plan(release(chart=pulled(), pull_error=None, crd_refusals=refusals['gpu_operator']))
    assert out['errors'] == [
        'GPU operator: the cluster refuses b.yaml of chart gpu-operator v25.10.1 (server-side apply, dry run): '
        'CustomResourceDefinition.apiextensions.k8s.io "rules.x.io" is invalid: spec.scope: Invalid value: '
        '"Cluster": field is immutable']
    assert out['upgrades'] == [] and not out['changes']


def test_an_error_that_is_not_a_status_is_kept_short():
    assert hu.crd_errors({'label': 'L', 'chart': 'c', 'to_version': '1.0.0'}, [('/a.yaml', 'x' * 500)])[0].endswith(
        'x' * 394 + '...')
