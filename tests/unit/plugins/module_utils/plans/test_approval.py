# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A rollout bound to its cluster and to the approved plan (plans/approval.py)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.module_utils.plans import approval

CLUSTER = {'server': 'https://api.a.example:6443', 'uid': 'uid-a', 'name': 'a'}
OTHER = {'server': 'https://api.b.example:6443', 'uid': 'uid-b', 'name': 'b'}


def plan(to='all-1g.5gb', pods=(), patch=None):
    return {'batches': [{'batch': 1, 'nodes': [{'node': 'a100-0', 'from': 'all-disabled', 'to': to, 'resume': False,
                                                'pods_to_evict': list(pods), 'blocking_pdbs': []}]}],
            'cluster_policy_patch': patch or {'mig': {'strategy': 'mixed'}}}


def test_the_handed_on_plan_holds_the_changes_without_what_the_drain_meets():
    approved = approval.approved_plan('mig', plan(pods=['ml/train-0']), CLUSTER)
    assert approved['kind'] == 'mig' and approved['cluster'] == {'server': CLUSTER['server'], 'uid': 'uid-a'}
    assert approved['changes']['batches'][0]['nodes'] == [
        {'node': 'a100-0', 'from': 'all-disabled', 'to': 'all-1g.5gb', 'resume': False}]
    assert len(approved['digest']) == 64


def test_the_same_changes_pass_whatever_the_pods_and_the_key_order():
    approved = approval.approved_plan('mig', plan(pods=['ml/train-0']), CLUSTER)
    reordered = dict(reversed(list(plan(pods=['ml/other']).items())))
    assert approval.approval_errors('mig', reordered, CLUSTER, approved, {}) == []


def test_a_changed_plan_is_refused_with_both_change_lists():
    approved = approval.approved_plan('mig', plan(), CLUSTER)
    errors = approval.approval_errors('mig', plan(to='all-3g.20gb'), CLUSTER, approved, {})
    assert len(errors) == 1 and errors[0].startswith('the mig plan changed since it was approved (digest ')
    assert '"to":"all-1g.5gb"' in errors[0].split('Now:')[0] and '"to":"all-3g.20gb"' in errors[0].split('Now:')[1]
    patched = approval.approval_errors('mig', plan(patch={'mig': {'strategy': 'single'}}), CLUSTER, approved, {})
    assert 'changed since it was approved' in patched[0]


def test_another_cluster_or_kind_is_refused():
    approved = approval.approved_plan('mig', plan(), CLUSTER)
    errors = approval.approval_errors('mig', plan(), OTHER, approved, {})
    assert errors == [
        'this job reached the cluster with API server https://api.b.example:6443, but the approved plan names '
        "https://api.a.example:6443; nothing was changed. Check the job's credential and inventory",
        'this job reached the cluster with kube-system namespace UID uid-b, but the approved plan names uid-a; '
        "nothing was changed. Check the job's credential and inventory"]
    kind = approval.approval_errors('sharing', plan(), CLUSTER, approved, {})
    assert kind == ['the approved plan is a mig plan, this is a sharing run; nothing was changed']


def test_the_expected_cluster_is_checked_without_an_approval_and_only_for_what_it_names():
    assert approval.approval_errors('mig', plan(), CLUSTER, {}, {}) == []
    assert approval.approval_errors('mig', plan(), CLUSTER, {}, {'uid': 'uid-a'}) == []
    errors = approval.approval_errors('mig', plan(), CLUSTER, {}, {'uid': 'uid-b'})
    assert errors == ["this job reached the cluster with kube-system namespace UID uid-a, but the workflow's "
                      "inventory (gpuops_cluster) names uid-b; nothing was changed. Check the job's credential and "
                      'inventory']


def test_malformed_approvals_and_clusters_are_input_errors():
    assert approval.input_errors({}, {}) == []
    assert approval.input_errors('abc', []) == [
        'approved_plan must be a mapping (kind, digest, cluster, changes), got string',
        'expected_cluster must be a mapping (server, uid), got list']
    errors = approval.input_errors({'kind': 'mig', 'digst': 'x'}, {'url': 'x'})
    assert any('digst' in e for e in errors) and any('url' in e for e in errors)
    assert errors[-1] == ('approved_plan lacks digest, cluster, changes: pass on the gpuops_plan artifact of the '
                          'plan job unchanged')
