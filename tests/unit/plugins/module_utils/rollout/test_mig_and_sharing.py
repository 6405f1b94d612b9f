# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""MIG and sharing on one node: each kind expects the allocatable of the node's WHOLE state (its MIG
config and its device-plugin sharing profile), and neither rollout takes over a node the other one
holds. Pure kinds, plus the modules' validation before writes over the fake API of test_sharing_kind.

The numbers are the device plugin's (NVIDIA/k8s-device-plugin v0.20 internal/rm/device_map.go): with
MIG strategy single every MIG device is one nvidia.com/gpu, with mixed one nvidia.com/mig-<profile>,
and time-slicing multiplies the devices of each shared resource by its replicas (renameByDefault
moves them to <resource>.shared)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.k8s.client import Connection
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout import mig as mig_cluster
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout import sharing as sharing_cluster
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.mig_kind import MigKind
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.node import held_elsewhere
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.sharing_kind import SharingKind
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.rollout.sharing_fakes import (
    PARAMS as SHARING_PARAMS, FakeConn, mps, policy, render_profiles, ts)

A100 = 'NVIDIA-A100-SXM4-40GB'
DP = 'nvidia.com/device-plugin.config'
DOC = {'version': 'v1', 'mig-configs': {
    'all-disabled': [{'devices': 'all', 'mig-enabled': False}],
    'seven': [{'devices': 'all', 'mig-enabled': True, 'mig-devices': {'1g.5gb': 7}}],
    'two': [{'devices': 'all', 'mig-enabled': True, 'mig-devices': {'3g.20gb': 2}}],
    'half': [{'devices': [0, 1, 2, 3], 'mig-enabled': True, 'mig-devices': {'1g.5gb': 7}},
             {'devices': [4, 5, 6, 7], 'mig-enabled': False}],
}}
RENAMED = {'sharing': {'timeSlicing': {'renameByDefault': True, 'resources': [{'name': 'nvidia.com/gpu', 'replicas': 4}]}}}
PROFILES = {'ts-4': ts(4), 'ts-4-renamed': RENAMED, 'mig-ts-2': ts(2, 'nvidia.com/mig-1g.5gb'), 'mps-10': mps(10),
            'unshared': {}}
TEXTS = render_profiles(PROFILES)


def profiles(strategy, default=''):
    """The device-plugin ConfigMap as rollout/mig.py reads it."""
    return SharingKind(TEXTS, sharing_cluster.parse_texts(TEXTS), default, strategy, 'gpu-operator')


def gpu_node(name='a100-0', labels=None, ann=None, allocatable=None, product=A100, count='8'):
    """A node as GFD labels it: product and count (MIG devices with strategy single, GPUs otherwise)."""
    all_labels = {'nvidia.com/gpu.product': product, 'nvidia.com/gpu.count': count}
    all_labels.update(labels or {})
    alloc = dict((k, str(v)) for k, v in (allocatable or {'nvidia.com/gpu': count}).items())
    return {'metadata': {'name': name, 'labels': all_labels, 'annotations': ann or {}}, 'spec': {},
            'status': {'allocatable': alloc, 'capacity': alloc}}


def time_sliced(profile='ts-4', replicas='4'):
    """8 full A100s after a sharing rollout: 32 nvidia.com/gpu."""
    return gpu_node(labels={DP: profile, 'nvidia.com/gpu.replicas': replicas}, product=A100 + '-SHARED',
                    allocatable={'nvidia.com/gpu': 32})


def mig_single(profile=None, replicas='1', allocatable=56):
    """8 A100s at config 'seven' with MIG strategy single: GFD counts 56 MIG devices as nvidia.com/gpu."""
    labels = {'nvidia.com/mig.config': 'seven', 'nvidia.com/mig.config.state': 'success',
              'nvidia.com/mig.strategy': 'single', 'nvidia.com/gpu.replicas': replicas}
    if profile:
        labels[DP] = profile
    return gpu_node(labels=labels, product=A100 + '-MIG-1g.5gb', count='56', allocatable={'nvidia.com/gpu': allocatable})


def mig_mixed(profile=None, devices=None):
    """8 A100s with MIG strategy mixed: .count is every GPU, MIG devices have their own counts."""
    devices = devices or {'nvidia.com/mig-1g.5gb': 56}
    labels = {'nvidia.com/mig.config': 'seven', 'nvidia.com/mig.config.state': 'success',
              'nvidia.com/mig.strategy': 'mixed', 'nvidia.com/gpu.replicas': '0'}
    labels.update(dict((k + '.count', str(v)) for k, v in devices.items() if k != 'nvidia.com/gpu'))
    if profile:
        labels[DP] = profile
    return gpu_node(labels=labels, allocatable=devices)


# ---------------------------------------------------------------------------------------- the MIG kind

class TestMigOnASharedNode(object):
    def test_the_reported_case_time_sliced_node_to_mig_single(self):
        # "allocatable {'nvidia.com/gpu': 224}, expected {'nvidia.com/gpu': 56}": 56 MIG devices x 4 replicas
        kind = MigKind(DOC, 'single', sharing=profiles('single'))
        assert kind.validate(time_sliced(), 'seven') == []
        assert kind.expected_allocatable(time_sliced(), 'seven') == {'nvidia.com/gpu': 224}

    def test_without_the_profiles_only_the_mig_devices_count(self):
        assert MigKind(DOC, 'single').expected_allocatable(time_sliced(), 'seven') == {'nvidia.com/gpu': 56}

    def test_renamed_resource(self):
        kind = MigKind(DOC, 'single', sharing=profiles('single'))
        assert kind.expected_allocatable(time_sliced('ts-4-renamed'), 'seven') == {'nvidia.com/gpu.shared': 224}

    def test_from_one_mig_config_to_another_on_a_time_sliced_node(self):
        kind = MigKind(DOC, 'single', sharing=profiles('single'))
        node = mig_single('ts-4', replicas='4', allocatable=224)
        assert kind.physical_gpus(node) == 8
        assert kind.expected_allocatable(node, 'two') == {'nvidia.com/gpu': 64}
        assert kind.expected_allocatable(node, 'all-disabled') == {'nvidia.com/gpu': 32}

    def test_the_default_profile_applies_to_an_unlabelled_node_and_the_label_wins(self):
        kind = MigKind(DOC, 'single', sharing=profiles('single', default='ts-4'))
        assert kind.expected_allocatable(gpu_node(), 'seven') == {'nvidia.com/gpu': 224}
        assert kind.expected_allocatable(gpu_node(labels={DP: 'unshared'}), 'seven') == {'nvidia.com/gpu': 56}

    def test_mixed_time_slicing_of_mig_devices(self):
        kind = MigKind(DOC, 'mixed', sharing=profiles('mixed'))
        node = gpu_node(labels={DP: 'mig-ts-2'})
        assert kind.expected_allocatable(node, 'seven') == {'nvidia.com/mig-1g.5gb': 112}
        assert kind.expected_allocatable(node, 'all-disabled') == {'nvidia.com/gpu': 8}

    def test_mixed_shares_only_the_resource_the_profile_names(self):
        kind = MigKind(DOC, 'mixed', sharing=profiles('mixed'))
        node = gpu_node(labels={DP: 'ts-4'})
        assert kind.expected_allocatable(node, 'seven') == {'nvidia.com/mig-1g.5gb': 56}
        assert kind.expected_allocatable(node, 'half') == {'nvidia.com/gpu': 16, 'nvidia.com/mig-1g.5gb': 28}

    def test_mps_profile_refuses_a_config_that_enables_mig(self):
        kind = MigKind(DOC, 'single', sharing=profiles('single'))
        node = gpu_node(labels={DP: 'mps-10'})
        errors = kind.validate(node, 'seven')
        assert len(errors) == 1 and "profile 'mps-10' (MPS)" in errors[0] and 'gpuops.gpu.sharing_rollout' in errors[0]
        assert kind.validate(node, 'all-disabled') == []
        assert kind.expected_allocatable(node, 'all-disabled') == {'nvidia.com/gpu': 80}

    def test_profile_missing_from_the_config_map(self):
        kind = MigKind(DOC, 'single', sharing=profiles('single'))
        errors = kind.validate(gpu_node(labels={DP: 'gone'}), 'seven')
        assert len(errors) == 1 and "profile 'gone'" in errors[0] and 'not a key' in errors[0]

    def test_profile_that_does_not_work_with_the_strategy(self):
        kind = MigKind(DOC, 'single', sharing=profiles('single'))
        errors = kind.validate(gpu_node(labels={DP: 'mig-ts-2'}), 'seven')
        assert len(errors) == 1 and 'MIG strategy single' in errors[0] and 'mixed' in errors[0]


# ---------------------------------------------------------------------------------------- the sharing kind

class TestSharingOnAMigNode(object):
    def test_single_time_slices_the_mig_devices(self):
        kind = profiles('single')
        assert kind.validate(mig_single(), 'ts-4') == []
        assert kind.expected_allocatable(mig_single(), 'ts-4') == {'nvidia.com/gpu': 224}
        assert kind.expected_allocatable(mig_single(), 'ts-4-renamed') == {'nvidia.com/gpu.shared': 224}

    def test_single_back_to_unshared(self):
        node = mig_single('ts-4', replicas='4', allocatable=224)
        assert profiles('single').expected_allocatable(node, 'none') == {'nvidia.com/gpu': 56}

    def test_mixed_shares_the_mig_resource_it_names(self):
        kind = profiles('mixed')
        assert kind.expected_allocatable(mig_mixed(), 'mig-ts-2') == {'nvidia.com/mig-1g.5gb': 112}
        assert kind.expected_allocatable(mig_mixed(), 'ts-4') == {'nvidia.com/mig-1g.5gb': 56}

    def test_mixed_with_full_and_mig_gpus(self):
        node = mig_mixed(devices={'nvidia.com/gpu': 4, 'nvidia.com/mig-1g.5gb': 28})
        assert profiles('mixed').expected_allocatable(node, 'ts-4') == {'nvidia.com/gpu': 16, 'nvidia.com/mig-1g.5gb': 28}

    def test_mps_is_refused_on_a_mig_node(self):
        assert any('MPS' in e for e in profiles('single').validate(mig_single(), 'mps-10'))


# ---------------------------------------------------------------------------------------- markers of the other kind

def held(label, value, phase='failed', reason='allocatable GPU resources are {}, expected {}'):
    ann = {'gpuops.gpu/rollout-target': '%s=%s' % (label, value), 'gpuops.gpu/rollout-phase': phase,
           'gpuops.gpu/cordoned-by-rollout': 'true'}
    if reason:
        ann['gpuops.gpu/rollout-reason'] = reason
    node = time_sliced()
    node['metadata']['annotations'] = ann
    node['spec'] = {'unschedulable': True}
    return node


class TestHeldByTheOtherKind(object):
    def test_a_failed_mig_rollout_holds_the_node_against_sharing(self):
        nodes = {'a100-0': held('nvidia.com/mig.config', 'seven')}
        errors = held_elsewhere(profiles('single'), nodes, ['a100-0'])
        assert len(errors) == 1
        for part in ('node a100-0', 'gpuops.gpu.mig_rollout', 'nvidia.com/mig.config=seven', 'phase failed',
                     'reason: allocatable', 'markers are kept'):
            assert part in errors[0]

    def test_an_unfinished_sharing_rollout_holds_the_node_against_mig(self):
        nodes = {'a100-0': held(DP, 'ts-4', phase='labelled', reason=None)}
        errors = held_elsewhere(MigKind(DOC, 'single'), nodes, ['a100-0'])
        assert len(errors) == 1 and 'gpuops.gpu.sharing_rollout' in errors[0] and 'phase labelled' in errors[0]
        assert 'reason' not in errors[0]

    def test_own_markers_and_free_nodes_are_not_errors(self):
        nodes = {'a100-0': held(DP, 'ts-4'), 'a100-1': time_sliced()}
        assert held_elsewhere(profiles('single'), nodes, ['a100-0', 'a100-1']) == []


# ---------------------------------------------------------------------------------------- the modules, before writes

MIG_PARAMS = dict(SHARING_PARAMS, config_document=DOC, reboot_timeout=600, retry_stuck=False, api_timeout=300)


def mig_check(node, assignments, cluster_policy):
    conn = FakeConn({'a100-0': node}, cluster_policy, TEXTS)
    params = dict(MIG_PARAMS, assignments=assignments)
    return mig_cluster.run(Connection(core=conn, custom=conn, policy=conn), params, check_mode=True)


class TestModulesBeforeWrites(object):
    def test_mig_reads_the_device_plugin_config_map_of_a_shared_node(self):
        res = mig_check(time_sliced(), [{'nodes': ['a100-0'], 'config': 'seven'}], policy())
        assert res['changed'] is True and res['batches'] == [['a100-0']]

    def test_mig_refuses_a_config_the_nodes_mps_profile_breaks(self):
        with pytest.raises(mig_cluster.InputError, match="profile 'mps-10'"):
            mig_check(gpu_node(labels={DP: 'mps-10'}), [{'nodes': ['a100-0'], 'config': 'seven'}], policy())

    def test_mig_refuses_a_node_a_sharing_rollout_holds(self):
        node = held(DP, 'ts-4')
        with pytest.raises(mig_cluster.InputError, match='gpuops.gpu.sharing_rollout'):
            mig_check(node, [{'nodes': ['a100-0'], 'config': 'seven'}], policy())

    def test_sharing_refuses_a_node_a_mig_rollout_holds(self):
        conn = FakeConn({'a100-0': held('nvidia.com/mig.config', 'seven')}, policy(), TEXTS)
        params = dict(SHARING_PARAMS, assignments=[{'nodes': ['a100-0'], 'profile': 'ts-4'}])
        with pytest.raises(sharing_cluster.InputError, match='held by an unfinished gpuops.gpu.mig_rollout'):
            sharing_cluster.run(Connection(core=conn, custom=conn, policy=conn), params, check_mode=True)


class NoPolicyReads(object):
    """A FakeConn whose ClusterPolicy must not be read: the caller handed its spec over."""

    def __init__(self, conn):
        self.conn = conn

    def __getattr__(self, name):
        if name in ('get_cluster_custom_object', 'list_cluster_custom_object'):
            raise AssertionError('the ClusterPolicy was read although cluster_policy_spec was given')
        return getattr(self.conn, name)


class TestHandedClusterPolicy(object):
    def run(self, spec, cluster_policy):
        conn = NoPolicyReads(FakeConn({'a100-0': time_sliced()}, cluster_policy, TEXTS))
        params = dict(MIG_PARAMS, assignments=[{'nodes': ['a100-0'], 'config': 'seven'}], cluster_policy_spec=spec,
                      lock_namespace='gpu-operator')  # else the lock's namespace comes from the ClusterPolicy status
        return mig_cluster.run(Connection(core=conn, custom=conn, policy=conn), params, check_mode=True)

    def test_the_handed_spec_is_used_and_the_cluster_policy_not_read(self):
        res = self.run(policy()['spec'], cluster_policy=policy(strategy='mixed'))
        assert res['mig_strategy'] == 'single' and res['batches'] == [['a100-0']]
        res = self.run(policy(strategy='mixed')['spec'], cluster_policy=policy())
        assert res['mig_strategy'] == 'mixed'
