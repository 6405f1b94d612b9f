# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The ClusterPolicy fields the mig role sets (plans/mig.py) and its filter."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.gpu.plugins.filter.mig_document import FilterModule
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.mig import policy_patch

PATCH = FilterModule().filters()['mig_policy_patch']


def test_nothing_asked_patches_nothing():
    assert policy_patch() == {}
    assert policy_patch(strategy='', config_map='') == {}


def test_a_strategy_is_set_alone():
    assert policy_patch(strategy='mixed') == {'mig': {'strategy': 'mixed'}}


def test_custom_configs_name_their_config_map_with_all_disabled_for_unlabelled_nodes():
    assert policy_patch(config_map='gpuops-mig-parted-config') == {
        'migManager': {'config': {'name': 'gpuops-mig-parted-config', 'default': 'all-disabled'}}}


def test_both():
    assert policy_patch(strategy='single', config_map='cm') == {
        'mig': {'strategy': 'single'}, 'migManager': {'config': {'name': 'cm', 'default': 'all-disabled'}}}


def test_an_unknown_strategy_is_refused():
    with pytest.raises(ValueError, match='double'):
        policy_patch(strategy='double')


def test_the_filter_takes_the_settings_as_a_mapping():
    assert PATCH({'strategy': 'none', 'config_map': ''}) == {'mig': {'strategy': 'none'}}
    with pytest.raises(AnsibleFilterError, match='expects'):
        PATCH('mixed')
    with pytest.raises(AnsibleFilterError, match='double'):
        PATCH({'strategy': 'double'})
    with pytest.raises(AnsibleFilterError, match='unexpected'):
        PATCH({'stratgy': 'mixed'})
