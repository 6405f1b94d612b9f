# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""gpuops.gpu.plan_approval through its main(): the plan handed on in check mode, the apply refused on another
cluster or plan, and nothing written in any case."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.modules import plan_approval
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.rollout.fake_api import FakeApi

PLAN = {'batches': [{'batch': 1, 'nodes': [{'node': 'a100-0', 'from': 'all-disabled', 'to': 'all-1g.5gb'}]}]}


def test_check_mode_hands_on_the_plan_and_the_apply_checks_it(run_module):
    api = FakeApi([])
    code, planned = run_module(plan_approval, {'kind': 'mig', 'plan': PLAN}, check=True, core=api)
    assert code == 0 and planned['changed'] is False and planned['cluster']['uid'] == 'uid-ns-kube-system'
    approved = planned['approved_plan']
    assert approved['changes'] == PLAN and approved['cluster']['uid'] == 'uid-ns-kube-system'
    code, applied = run_module(plan_approval, {'kind': 'mig', 'plan': PLAN, 'approved': approved}, core=api)
    assert code == 0 and applied['approved_plan'] == approved
    other = dict(PLAN, batches=[{'batch': 1, 'nodes': [{'node': 'a100-1', 'from': 'all-disabled', 'to': 'x'}]}])
    code, refused = run_module(plan_approval, {'kind': 'mig', 'plan': other, 'approved': approved}, core=api)
    assert code == 1 and 'the mig plan changed since it was approved' in refused['msg'], refused
    assert refused['approved'] == approved and refused['changed'] is False and api.writes() == []


def test_bad_input_and_an_unknown_cluster_are_refused(run_module):
    api = FakeApi([])
    code, result = run_module(plan_approval, {'kind': 'mig', 'approved': {'kind': 'mig'}}, core=api)
    assert code == 1 and result['msg'].startswith('nothing was changed; fix these first: approved_plan lacks digest')
    code, result = run_module(plan_approval, {'kind': 'mig', 'expected_cluster': {'uid': 'uid-of-prod'}},
                              check=True, core=api)
    assert code == 1 and 'kube-system namespace UID uid-ns-kube-system' in result['msg']
    api.missing_namespaces = ('kube-system',)
    code, result = run_module(plan_approval, {'kind': 'mig'}, check=True, core=api)
    assert code == 1 and 'the cluster cannot be identified' in result['msg']
