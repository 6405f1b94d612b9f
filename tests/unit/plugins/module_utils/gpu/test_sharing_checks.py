# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests for module_utils.gpu.sharing_checks: validation of sharing configs and named profiles."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.sharing_checks import profile_errors, sharing_config_errors, sharing_config_warnings
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.sharing_checks import mps_root_errors
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.gpu.sharing_data import MPS_10_RENAMED, PROFILES, SEEDS, TS_T4, _mps, _ts


# --- valid configs --------------------------------------------------------------------------

@pytest.mark.parametrize('config', SEEDS)
def test_seed_configs_are_valid(config):
    assert sharing_config_errors(config) == []


@pytest.mark.parametrize('config, kwargs', [
    ({}, {}),
    ({'version': ''}, {}),
    ({'version': 'v1', 'flags': {'migStrategy': 'single'}}, {}),
    (_ts(2, name='gpu'), {}),
    (_ts(4, renameByDefault=False, failRequestsGreaterThanOne=True), {}),
    (_mps(48), {}),
    (_mps(48, failRequestsGreaterThanOne=False), {'compute_capability': '7.5'}),
    (_mps(16), {'compute_capability': '7.0'}),
    (_mps(10), {'mig_strategy': 'single'}),
    (_ts(4, name='nvidia.com/mig-1g.10gb.me'), {'mig_strategy': 'mixed'}),
    (_ts(4, name='nvidia.com/mig-1g.23gb.me.all'), {'mig_strategy': 'mixed'}),
    (_ts(4, name='nvidia.com/mig-1g.24gb.gfx'), {'mig_strategy': 'mixed'}),
    (_ts(4, name='nvidia.com/mig-1g.23gb-me'), {'mig_strategy': 'mixed'}),
    (_ts(4), {'mig_strategy': 'mixed'}),
    ({'sharing': {'timeSlicing': {'resources': [{'name': 'nvidia.com/gpu', 'replicas': 2, 'devices': 'all'}]}}}, {}),
    ({'sharing': {'timeSlicing': {'resources': [{'name': 'nvidia.com/gpu', 'replicas': 2, 'devices': 2}]}}}, {}),
    ({'sharing': {'timeSlicing': {'resources': [{'name': 'nvidia.com/gpu', 'replicas': 2,
                                                 'devices': [0, '1', '0:1', 'GPU-b1028956-cfa2-0990-bf4a-5da9abb51763',
                                                             'MIG-GPU-b1028956-cfa2-0990-bf4a-5da9abb51763/3/0']}]}}},
     {}),
    ({'flags': {'migStrategy': 'none', 'failOnInitError': True, 'mpsRoot': '/run/nvidia/mps',
                'plugin': {'passDeviceSpecs': True, 'deviceListStrategy': ['envvar', 'cdi-cri'],
                           'deviceIDStrategy': 'uuid', 'sharedDevicesAllocationPolicy': 'packed'},
                'gfd': {'oneshot': False, 'sleepInterval': '60s'}},
      'imex': {'channelIDs': [0], 'required': False}}, {}),
])
def test_valid_configs(config, kwargs):
    assert sharing_config_errors(config, **kwargs) == []


# --- invalid configs: (config, kwargs, fragment, number of errors) ----------------------------

def _res(**resource):
    return {'sharing': {'timeSlicing': {'resources': [resource]}}}


BAD = [
    ('list instead of mapping', [TS_T4], {}, 'must be a mapping', 1),
    ('null config', None, {}, 'must be a mapping', 1),
    ('yaml text instead of dict', 'version: v1', {}, 'got string', 1),
    ('wrong version', {'version': 'v2'}, {}, 'version must be v1', 1),
    ('mis-cased timeSlicing', {'sharing': {'timeslicing': TS_T4['sharing']['timeSlicing']}}, {},
     "did you mean 'timeSlicing'", 1),
    ('mis-cased top-level key', {'Sharing': {}}, {}, "did you mean 'sharing'", 1),
    ('mis-cased renameByDefault', _ts(4, renamebydefault=True), {}, "did you mean 'renameByDefault'", 1),
    ('typo in replicas key', _res(name='nvidia.com/gpu', replica=4), {}, "did you mean 'replicas'", 2),
    ('replicas 1', _ts(1), {}, 'replicas must be an integer >= 2', 1),
    ('replicas as string', _ts('4'), {}, "got string '4'", 1),
    ('replicas as boolean', _ts(True), {}, 'got boolean', 1),
    ('replicas missing', _res(name='nvidia.com/gpu'), {}, 'replicas is required', 1),
    ('name missing', _res(replicas=4), {}, 'name is required', 1),
    ('resources empty', {'sharing': {'timeSlicing': {'resources': []}}}, {}, 'must not be empty', 1),
    ('resources missing', {'sharing': {'mps': {'renameByDefault': True}}}, {}, 'resources is required', 1),
    ('resources not a list', {'sharing': {'timeSlicing': {'resources': {'name': 'nvidia.com/gpu'}}}}, {},
     'resources must be a list', 1),
    ('resource entry not a mapping', {'sharing': {'timeSlicing': {'resources': ['nvidia.com/gpu']}}}, {},
     'resources[0] must be a mapping', 1),
    ('null timeSlicing', {'sharing': {'timeSlicing': None}}, {}, 'no resources specified', 1),
    ('sharing is a list', {'sharing': [TS_T4['sharing']]}, {}, 'sharing must be a mapping', 1),
    ('renameByDefault yes-string', _ts(4, renameByDefault='yes'), {}, 'renameByDefault must be true or false', 1),
    ('failRequestsGreaterThanOne as int', _ts(4, failRequestsGreaterThanOne=1), {},
     'failRequestsGreaterThanOne must be true or false', 1),
    ('mis-cased migStrategy value', {'flags': {'migStrategy': 'Mixed'}}, {}, 'must be one of none, single, mixed', 1),
    ('MPS with flags mixed', dict(_mps(4), flags={'migStrategy': 'mixed'}), {},
     'sharing.mps cannot be used with MIG strategy mixed', 1),
    ('MPS with cluster strategy mixed', _mps(4), {'mig_strategy': 'mixed'},
     'sharing.mps cannot be used with MIG strategy mixed', 1),
    ('MPS on a MIG resource', _mps(4, name='nvidia.com/mig-1g.5gb'), {'mig_strategy': 'single'},
     'MPS cannot share MIG devices', 1),
    ('MPS over 48', _mps(49), {}, 'exceeds the MPS limit of 48', 1),
    ('MPS over 16 before 7.5', _mps(17), {'compute_capability': '7.0'}, 'exceeds the MPS limit of 16', 1),
    ('time-slicing and MPS together',
     {'sharing': {'timeSlicing': TS_T4['sharing']['timeSlicing'], 'mps': MPS_10_RENAMED['sharing']['mps']}}, {},
     'not both', 1),
    ('MIG resource with strategy none', _ts(4, name='nvidia.com/mig-1g.5gb'), {},
     'only advertised with MIG strategy mixed (the MIG strategy is none', 1),
    ('MIG resource with strategy single', _ts(4, name='nvidia.com/mig-1g.5gb'), {'mig_strategy': 'single'},
     'the MIG strategy is single, which advertises MIG devices as nvidia.com/gpu', 1),
    ('shared name as the resource', _ts(4, name='nvidia.com/gpu.shared'), {}, 'come from renameByDefault', 1),
    ('unknown nvidia resource', _ts(4, name='nvidia.com/gpus'), {}, 'is not a resource the device plugin advertises', 1),
    ('foreign resource prefix', _ts(4, name='amd.com/gpu'), {}, 'amd.com/gpu: the device plugin only shares nvidia.com/', 1),
    ('slash in resource name', _ts(4, name='nvidia.com/gpu/0'), {}, 'nvidia.com/gpu/0 is not a valid resource name', 1),
    ('upper-case resource', _ts(4, name='nvidia.com/GPU'), {}, 'is not a valid resource name', 1),
    ('duplicate resource (short and full name)',
     {'sharing': {'timeSlicing': {'resources': [{'name': 'gpu', 'replicas': 2},
                                                {'name': 'nvidia.com/gpu', 'replicas': 4}]}}}, {},
     'nvidia.com/gpu is listed twice', 1),
    ('bad rename', _res(name='nvidia.com/gpu', replicas=2, rename='Bad_Name'), {}, 'rename nvidia.com/Bad_Name', 1),
    ('devices as word', _res(name='nvidia.com/gpu', replicas=2, devices='some'), {}, "must be 'all', a count", 1),
    ('devices zero', _res(name='nvidia.com/gpu', replicas=2, devices=0), {}, "must be 'all', a count", 1),
    ('devices bad uuid', _res(name='nvidia.com/gpu', replicas=2, devices=['GPU-123']), {}, "must be 'all', a count", 1),
    ('bad deviceIDStrategy', {'flags': {'plugin': {'deviceIDStrategy': 'serial'}}}, {},
     'deviceIDStrategy must be one of uuid, index', 1),
    ('bad deviceListStrategy', {'flags': {'plugin': {'deviceListStrategy': ['envvar', 'cdi']}}}, {},
     'deviceListStrategy must be one', 1),
    ('bad sleepInterval', {'flags': {'gfd': {'sleepInterval': 'soon'}}}, {}, 'must be a duration', 1),
    ('bad imex channel', {'imex': {'channelIDs': [1]}}, {}, 'must be [] or [0]', 1),
    ('flags vs cluster strategy', {'flags': {'migStrategy': 'mixed'}}, {'mig_strategy': 'single'},
     "the operator's MIG_STRATEGY wins", 1),
    ('bad mig_strategy argument', TS_T4, {'mig_strategy': 'MIXED'}, 'mig_strategy must be one of', 1),
    ('bad compute capability', TS_T4, {'compute_capability': 'Ampere'}, 'compute_capability must look like', 1),
]


@pytest.mark.parametrize('config, kwargs, fragment, count', [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_invalid_configs(config, kwargs, fragment, count):
    errors = sharing_config_errors(config, **kwargs)
    assert any(fragment in error for error in errors), errors
    assert len(errors) == count, errors


def test_at_least_twenty_bad_configs():
    assert len(BAD) >= 20


def test_error_names_the_path_and_the_fix():
    errors = sharing_config_errors(_ts(1))
    assert errors == ['sharing.timeSlicing.resources[0].replicas must be an integer >= 2 (to stop sharing, remove '
                      'the resource or the whole sharing block), got integer 1']


def test_unknown_key_lists_known_keys():
    errors = sharing_config_errors({'sharing': {'timeslicing': {}}})
    assert errors == ["sharing: unknown key 'timeslicing'; did you mean 'timeSlicing'? (known keys: timeSlicing, mps)"]


def test_unknown_key_without_close_match_has_no_hint():
    errors = sharing_config_errors({'gpu': True})
    assert errors == ["top level: unknown key 'gpu' (known keys: version, flags, resources, sharing, imex)"]


def test_mps_on_mig_with_mixed_reports_both_problems():
    errors = sharing_config_errors(_mps(4, name='nvidia.com/mig-1g.5gb'), mig_strategy='mixed')
    assert len(errors) == 2
    assert 'cannot be used with MIG strategy mixed' in errors[0]
    assert 'MPS cannot share MIG devices' in errors[1]


# --- warnings -------------------------------------------------------------------------------

def test_warnings_for_ignored_fields():
    config = {'resources': {'gpus': [{'pattern': '*', 'name': 'gpu'}]},
              'sharing': {'timeSlicing': {'resources': [
                  {'name': 'nvidia.com/gpu', 'replicas': 2, 'rename': 'nvidia.com/gpu.ts', 'devices': [0]}]}}}
    assert sharing_config_errors(config) == []
    warnings = sharing_config_warnings(config)
    assert len(warnings) == 3
    assert "top-level 'resources' section is ignored" in warnings[0]
    assert 'sharing.timeSlicing.resources[0].rename is ignored' in warnings[1]
    assert 'sharing.timeSlicing.resources[0].devices is ignored' in warnings[2]


def test_no_warning_for_rename_the_plugin_would_choose_anyway():
    config = _ts(4, renameByDefault=True)
    config['sharing']['timeSlicing']['resources'][0]['rename'] = 'nvidia.com/gpu.shared'
    assert sharing_config_warnings(config) == []
    config['sharing']['timeSlicing']['renameByDefault'] = False
    assert len(sharing_config_warnings(config)) == 1


def test_warning_mps_with_single():
    assert sharing_config_warnings(MPS_10_RENAMED) == []
    warnings = sharing_config_warnings(MPS_10_RENAMED, mig_strategy='single')
    assert warnings == ['MPS with MIG strategy single works only on nodes whose GPUs have MIG disabled; '
                        'the plugin fails on MIG-enabled GPUs']


@pytest.mark.parametrize('config', SEEDS)
def test_seeds_have_no_warnings(config):
    assert sharing_config_warnings(config) == []


@pytest.mark.parametrize('profiles, kwargs, fragment', [
    ({}, {}, 'got an empty mapping'),
    ([TS_T4], {}, 'got list'),
    ({'ts/4': TS_T4}, {}, 'must be a ConfigMap key'),
    ({'ts 4': TS_T4}, {}, 'must be a ConfigMap key'),
    ({'-ts': TS_T4}, {}, 'nvidia.com/device-plugin.config'),
    ({'x' * 64: TS_T4}, {}, 'at most 63 characters'),
    ({'ts-4': _ts(1)}, {}, "profile 'ts-4': sharing.timeSlicing.resources[0].replicas"),
    ({'mps': _mps(4)}, {'mig_strategy': 'mixed'}, "profile 'mps': sharing.mps cannot be used with MIG strategy mixed"),
    ({'mps': _mps(20)}, {'compute_capability': '7.0'}, 'exceeds the MPS limit of 16'),
    ({'ts-4': TS_T4}, {'default': 'ts-8'}, "default profile 'ts-8' is not one of the profiles (ts-4)"),
])
def test_profile_errors(profiles, kwargs, fragment):
    errors = profile_errors(profiles, **kwargs)
    assert any(fragment in error for error in errors), errors


def test_profile_errors_accept_valid_profiles():
    assert profile_errors(PROFILES, default='unshared') == []
    assert profile_errors({'a.b_c-1': TS_T4}) == []


# --- ClusterPolicy devicePlugin.mps.root ----------------------------------------------------

@pytest.mark.parametrize('value', ['/run/nvidia/mps', '', None])
def test_mps_root_accepts_the_device_plugins_directory_or_nothing(value):
    assert mps_root_errors(value) == []


@pytest.mark.parametrize('value', ['/etc', '/run/nvidia/../etc', 'run/nvidia/mps', 'mps', '/run/nvidia/mps/',
                                   '/run/nvidia/mps/..', '/run/nvidia/driver', '/run/nvidia/validations',
                                   '/run/nvidia/toolkit', '/run/nvidia//mps', '/', ' /run/nvidia/mps', 7, True])
def test_mps_root_refuses_anything_else_naming_the_accepted_value(value):
    [error] = mps_root_errors(value)
    assert error.startswith('sharing_mps_root must be /run/nvidia/mps (the host directory of the NVIDIA device '
                            'plugin and its MPS control daemon')
    assert error.endswith('got %s' % (repr(value) if isinstance(value, str) else '%s %r' % (
        'boolean' if value is True else 'integer', value)))
    assert mps_root_errors(value, 'mps_root')[0].startswith('mps_root must be')
