# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""OLM decisions (pure): catalog readiness, package/channel checks, InstallPlan selection, CSV phases."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.plans import olm

PINNED = 'gpu-operator-certified.v25.10.1'
NEWER = 'gpu-operator-certified.v26.7.0'


def params(**kw):
    base = {'package': 'gpu-operator-certified', 'namespace': 'nvidia-gpu-operator', 'source': 'certified-operators',
            'source_namespace': 'openshift-marketplace', 'approval': 'Manual', 'channel': None, 'starting_csv': None,
            'namespace_labels': {}, 'target_namespaces': None, 'config': None}
    base.update(kw)
    return base


def plan(name, csvs, approved=False, approval='Manual', phase='RequiresApproval', owner='gpu-operator-certified'):
    return {'metadata': {'name': name, 'ownerReferences': [{'kind': 'Subscription', 'name': owner}]},
            'spec': {'approval': approval, 'approved': approved, 'clusterServiceVersionNames': csvs},
            'status': {'phase': phase}}


def sub(installed=None, current=None, conditions=None, ref=None, name='gpu-operator-certified'):
    status = {}
    if installed:
        status['installedCSV'] = installed
    if current:
        status['currentCSV'] = current
    if conditions:
        status['conditions'] = conditions
    if ref:
        status['installPlanRef'] = {'name': ref}
    return {'metadata': {'name': name}, 'spec': {'name': 'gpu-operator-certified'}, 'status': status}


def manifest():
    return {'metadata': {'name': 'gpu-operator-certified'},
            'status': {'packageName': 'gpu-operator-certified', 'catalogSource': 'certified-operators',
                       'defaultChannel': 'v26.7',
                       'channels': [
                           {'name': 'stable', 'currentCSV': NEWER,
                            'currentCSVDesc': {'installModes': [{'type': 'OwnNamespace', 'supported': True},
                                                                {'type': 'AllNamespaces', 'supported': False}],
                                               'annotations': {'alm-examples': json.dumps([{'kind': 'ClusterPolicy'}])}},
                            'entries': [{'name': NEWER}, {'name': PINNED}]},
                           {'name': 'v26.7', 'currentCSV': NEWER, 'entries': [{'name': NEWER}]},
                       ]}}


# --- inputs ---------------------------------------------------------------------------------

def test_valid_inputs_have_no_errors():
    assert olm.input_errors(params(starting_csv=PINNED, namespace_labels={'openshift.io/cluster-monitoring': 'true'},
                                   config={'tolerations': [{'key': 'a', 'operator': 'Exists', 'effect': 'NoSchedule'}],
                                           'nodeSelector': {'node-role.kubernetes.io/infra': ''}})) == []


@pytest.mark.parametrize('override, needle', [
    ({'namespace': 'Bad_NS'}, "namespace 'Bad_NS'"),
    ({'approval': 'manual'}, 'approval must be Manual or Automatic'),
    ({'namespace_labels': {'openshift.io/cluster-monitoring': True}}, 'must be a string'),
    ({'config': {'tolerations': [{'key': 'a', 'operator': 'Exists', 'value': 'b'}]}}, 'Exists must not set value'),
    ({'config': {'nodeselector': {}}}, "unknown key 'nodeselector'"),
    ({'config': {'nodeSelector': 'infra'}}, 'nodeSelector must be a mapping'),
    ({'starting_csv': 'v25.10.1'}, 'does not look like a CSV name'),
    ({'target_namespaces': ['ok', 'Not OK']}, "target_namespaces: 'Not OK'"),
])
def test_bad_inputs_are_named(override, needle):
    errors = olm.input_errors(params(**override))
    assert any(needle in e for e in errors), errors


# --- OperatorGroup --------------------------------------------------------------------------

@pytest.mark.parametrize('targets, mode', [
    (['ns'], 'OwnNamespace'), (['other'], 'SingleNamespace'), ([], 'AllNamespaces'), (None, 'AllNamespaces'),
    (['a', 'b'], 'MultiNamespace'), ([''], 'AllNamespaces'),
])
def test_install_mode(targets, mode):
    assert olm.install_mode(targets, 'ns') == mode


def test_install_mode_error_only_for_unsupported_modes():
    assert olm.install_mode_error('OwnNamespace', ['OwnNamespace', 'SingleNamespace'], 'x.v1') is None
    assert olm.install_mode_error('AllNamespaces', [], 'x.v1') is None  # unknown: OLM decides
    msg = olm.install_mode_error('AllNamespaces', ['OwnNamespace', 'SingleNamespace'], 'x.v1')
    assert 'not AllNamespaces' in msg and 'target_namespaces' in msg


def test_desired_operator_group():
    assert olm.desired_operator_group('og', 'ns', ['ns'])['spec'] == {'targetNamespaces': ['ns']}
    assert olm.desired_operator_group('og', 'ns', [])['spec'] == {}


# --- catalog and package --------------------------------------------------------------------

def test_catalog_ready_reads_last_observed_state():
    ready = {'status': {'connectionState': {'lastObservedState': 'READY'}}}
    failing = {'status': {'connectionState': {'lastObservedState': 'TRANSIENT_FAILURE'}}}
    assert olm.catalog_ready(ready)
    assert not olm.catalog_ready(failing) and olm.catalog_state(failing) == 'TRANSIENT_FAILURE'
    assert not olm.catalog_ready({}) and olm.catalog_state({}) is None


def test_package_channel_default_and_named():
    assert olm.package_channel(manifest(), None)[0] == 'v26.7'
    name, channel = olm.package_channel(manifest(), 'stable', PINNED)
    assert name == 'stable' and channel['currentCSV'] == NEWER


def test_unknown_channel_lists_the_channels():
    with pytest.raises(olm.OlmError, match=r"no channel 'v9'.*stable, v26.7 \(default v26.7\)"):
        olm.package_channel(manifest(), 'v9')


def test_starting_csv_must_be_in_the_channel():
    with pytest.raises(olm.OlmError, match='channel v26.7 of package gpu-operator-certified has no CSV'):
        olm.package_channel(manifest(), 'v26.7', PINNED)


def test_channel_head_install_modes_and_examples():
    _name, channel = olm.package_channel(manifest(), 'stable')
    assert olm.channel_install_modes(channel) == ['OwnNamespace']
    assert olm.channel_alm_examples(channel) == [{'kind': 'ClusterPolicy'}]


# --- Subscription ---------------------------------------------------------------------------

def test_desired_subscription_spec():
    spec = olm.desired_subscription_spec(params(channel='stable', starting_csv=PINNED,
                                                config={'nodeSelector': {'a': 'b'}}))
    assert spec == {'name': 'gpu-operator-certified', 'source': 'certified-operators',
                    'sourceNamespace': 'openshift-marketplace', 'installPlanApproval': 'Manual',
                    'channel': 'stable', 'startingCSV': PINNED, 'config': {'nodeSelector': {'a': 'b'}}}
    assert 'channel' not in olm.desired_subscription_spec(params())


def test_spec_patch_only_differences_and_never_drops():
    current = {'name': 'p', 'channel': 'stable', 'config': {'nodeSelector': {'a': 'b'}, 'env': [1]}}
    assert olm.spec_patch(current, {'name': 'p', 'channel': 'stable'}) == {}
    assert olm.spec_patch(current, {'channel': 'v26.7'}) == {'channel': 'v26.7'}
    assert olm.spec_patch(current, {'config': {'nodeSelector': {'a': 'c'}}}) == {'config': {'nodeSelector': {'a': 'c'}}}


def test_subscription_conflicts():
    subs = [sub(name='gpu-operator-certified'), sub(name='other-name')]
    assert olm.subscription_conflicts(subs, 'gpu-operator-certified', 'gpu-operator-certified') == ['other-name']


def test_resolution_and_plan_failures_from_conditions():
    failed = sub(conditions=[{'type': 'ResolutionFailed', 'status': 'True', 'message': 'no operators found'}])
    assert olm.resolution_error(failed) == 'no operators found'
    assert olm.resolution_error(sub(conditions=[{'type': 'ResolutionFailed', 'status': 'False'}])) is None
    assert olm.install_plan_failed(sub(conditions=[{'type': 'InstallPlanFailed', 'status': 'True',
                                                    'reason': 'InstallComponentFailed'}])) == 'InstallComponentFailed'
    assert olm.catalog_unhealthy(sub(conditions=[{'type': 'CatalogSourcesUnhealthy', 'status': 'True',
                                                  'message': 'targeted catalogsource x missing'}]))


# --- InstallPlans ---------------------------------------------------------------------------

def test_only_the_plan_with_the_pinned_csv_is_approved():
    plans = [plan('install-new', [NEWER]), plan('install-pin', [PINNED])]
    approve, held = olm.plans_to_approve(plans, PINNED)
    assert approve == [{'name': 'install-pin', 'csvs': [PINNED]}]
    assert held == [{'name': 'install-new', 'csvs': [NEWER]}]


def test_the_newer_plan_is_never_approved_after_install():
    plans = [plan('install-pin', [PINNED], approved=True, phase='Complete'), plan('install-new', [NEWER])]
    approve, held = olm.plans_to_approve(plans, olm.pinned_csv(params(), sub(installed=PINNED, current=NEWER)))
    assert approve == [] and held == [{'name': 'install-new', 'csvs': [NEWER]}]


def test_approved_automatic_and_finished_plans_are_ignored():
    plans = [plan('a', [PINNED], approved=True), plan('b', [PINNED], approval='Automatic'),
             plan('c', [PINNED], phase='Failed')]
    assert olm.plans_to_approve(plans, PINNED) == ([], [])


def test_no_pin_approves_nothing():
    assert olm.plans_to_approve([plan('a', [PINNED])], None) == ([], [{'name': 'a', 'csvs': [PINNED]}])


def test_pinned_csv():
    assert olm.pinned_csv(params(starting_csv=PINNED), sub(installed=NEWER)) == PINNED
    assert olm.pinned_csv(params(), sub(current=NEWER)) == NEWER          # first install: what OLM resolved
    assert olm.pinned_csv(params(), sub(installed=PINNED, current=NEWER)) == PINNED  # then: what is installed
    assert olm.pinned_csv(params(), None) is None


def test_subscription_plans_by_owner_or_reference():
    mine = plan('mine', [PINNED])
    referenced = plan('ref', [PINNED], owner='someone-else')
    other = plan('other', [PINNED], owner='someone-else')
    assert olm.subscription_plans([mine, referenced, other], sub(ref='ref')) == [mine, referenced]


def test_plan_for_csv_prefers_the_complete_one():
    plans = [plan('b-pending', [PINNED]), plan('a-done', [PINNED], approved=True, phase='Complete')]
    assert olm.plan_for_csv(plans, PINNED) == 'a-done'
    assert olm.plan_for_csv(plans, NEWER) is None


# --- CSV ------------------------------------------------------------------------------------

@pytest.mark.parametrize('status, outcome', [
    ({'phase': 'Succeeded'}, 'succeeded'),
    ({'phase': 'Failed', 'reason': 'UnsupportedOperatorGroup'}, 'failed'),
    ({'phase': 'Failed', 'reason': 'TooManyOperatorGroups'}, 'failed'),
    ({'phase': 'Failed', 'reason': 'InstallCheckFailed'}, 'waiting'),   # OLM retries these
    ({'phase': 'Installing'}, 'waiting'),
    ({'phase': 'Pending', 'reason': 'RequirementsUnknown'}, 'waiting'),
    ({}, 'waiting'),
])
def test_csv_outcome(status, outcome):
    assert olm.csv_outcome({'status': status}) == outcome


def test_csv_phase_triplet():
    assert olm.csv_phase({'status': {'phase': 'Failed', 'reason': 'R', 'message': 'M'}}) == ('Failed', 'R', 'M')
    assert olm.csv_phase(None) == ('', '', '')


def test_alm_examples_parsing():
    csv = {'metadata': {'annotations': {'alm-examples': json.dumps([{'kind': 'ClusterPolicy', 'spec': {}}])}}}
    assert olm.csv_alm_examples(csv) == [{'kind': 'ClusterPolicy', 'spec': {}}]
    assert olm.csv_alm_examples({'metadata': {}}) == []
    assert olm.parse_alm_examples('{"kind": "X"}') == [{'kind': 'X'}]
    with pytest.raises(olm.OlmError, match='not valid JSON'):
        olm.parse_alm_examples('[{')
    with pytest.raises(olm.OlmError, match='not a list'):
        olm.parse_alm_examples('"text"')


def test_related_images_and_examples_by_kind():
    csv = {'spec': {'relatedImages': [{'name': 'driver', 'image': 'r/driver@sha256:1'}, {'name': 'empty'}, 'junk']}}
    assert olm.csv_related_images(csv) == [{'name': 'driver', 'image': 'r/driver@sha256:1'}]
    assert olm.example_of_kind([{'kind': 'A'}, {'kind': 'ClusterPolicy', 'n': 1}], 'ClusterPolicy') == {
        'kind': 'ClusterPolicy', 'n': 1}
    assert olm.example_of_kind([], 'ClusterPolicy') is None


def test_describe_wait_names_everything_known():
    text = olm.describe_wait(sub(installed=PINNED, current=NEWER,
                                 conditions=[{'type': 'InstallPlanPending', 'status': 'True', 'reason': 'RequiresApproval'}]),
                             [plan('install-new', [NEWER])],
                             {'metadata': {'name': PINNED}, 'status': {'phase': 'Installing'}})
    for part in ('installedCSV ' + PINNED, 'InstallPlanPending (RequiresApproval)',
                 'InstallPlan install-new RequiresApproval for ' + NEWER + ' (not approved)', 'phase Installing'):
        assert part in text, text
