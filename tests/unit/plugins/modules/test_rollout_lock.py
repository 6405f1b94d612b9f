# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""gpuops.gpu.rollout_lock through its main(): options, check mode, diff, the failure of a held lock
(the logic itself: tests/unit/plugins/module_utils/rollout/test_lock.py)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.modules import rollout_lock
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.rollout.fake_api import FakeApi

KEY = ('gpu-operator', 'gpuops-gpu-rollout')


def test_take_renew_release_and_a_held_lock(run_module):
    api = FakeApi([])
    args = {'operator_namespace': 'gpu-operator', 'purpose': 'reset of 2 node(s)', 'nodes': ['a', 'b']}
    code, planned = run_module(rollout_lock, args, check=True, diff=True, custom=api)
    assert code == 0 and planned['changed'] is True and api.leases == {}
    assert planned['diff'] == {'before': {'state': 'free', 'holder': None, 'who': None, 'purpose': None,
                                          'nodes': None, 'since': None},
                               'after': dict(planned['diff']['after'], state='ours', purpose='reset of 2 node(s)',
                                             nodes='a,b')}
    code, taken = run_module(rollout_lock, args, custom=api)
    assert code == 0 and taken['changed'] is True and api.leases[KEY]['spec']['holderIdentity'] == taken['holder']
    code, renewed = run_module(rollout_lock, dict(args, holder=taken['holder']), custom=api)
    assert code == 0 and renewed['changed'] is False and api.leases[KEY]['metadata']['resourceVersion'] == '2'
    code, refused = run_module(rollout_lock, args, custom=api)
    assert code == 1 and refused['changed'] is False and 'reset of 2 node(s) on nodes a,b' in refused['msg']
    code, released = run_module(rollout_lock, dict(args, state='absent', holder=taken['holder']), custom=api)
    assert code == 0 and released['changed'] is True and api.leases == {}
