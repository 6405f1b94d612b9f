# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""sharing_target.SharingKind (pure) and sharing_cluster's validation before writes (fake API)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.k8s.client import Connection
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout import sharing as sharing_cluster
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.sharing_kind import (
    ANN_HASH, RESTART_SELECTOR, SharingKind, content_hash, normalise_value)
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.rollout.sharing_fakes import (
    FakeConn, LABEL, NODES, PARAMS, PROFILES, mps, node, policy, render_profiles, ts)


def kind(default='', strategy='single', profiles=None, unshared_key=None, configured=True):
    texts = render_profiles(profiles if profiles is not None else PROFILES) if configured else {}
    configs = sharing_cluster.parse_texts(texts)
    k = SharingKind(texts, configs, default, strategy, 'gpu-operator', configured=configured, unshared_key=unshared_key)
    if unshared_key is None and configured:
        k.unshared_key = sharing_cluster.pick_unshared(k, None)
    return k


def a100_mixed(label=None, ann=None, devices=56, replicas='1', alloc=None):
    extra = {'nvidia.com/mig.strategy': 'mixed', 'nvidia.com/mig.config': 'all-1g.5gb',
             'nvidia.com/mig.config.state': 'success', 'nvidia.com/mig-1g.5gb.count': str(devices),
             'nvidia.com/mig-1g.5gb.replicas': replicas, 'nvidia.com/mig-1g.5gb.sharing-strategy':
             'time-slicing' if replicas != '1' else 'none', 'nvidia.com/gpu.replicas': '0'}
    alloc = alloc or {'nvidia.com/mig-1g.5gb': str(devices * int(replicas))}
    n = node('a100-0', 'NVIDIA-A100-SXM4-40GB', 8, label=label, extra=extra, ann=ann, allocatable=alloc)
    return n


class TestValues(object):
    @pytest.mark.parametrize('value,expected', [(None, 'none'), ('', 'none'), ('  ', 'none'), ('ts-4', 'ts-4'),
                                                ('default', 'default')])
    def test_normalise(self, value, expected):
        assert normalise_value(value) == expected

    def test_hash_is_stable_and_empty_for_no_config(self):
        assert content_hash('version: v1\n') == content_hash('version: v1\n') != content_hash('version: v1\n ')
        assert content_hash(None) == ''


class TestLabels(object):
    def test_named_profile_sets_the_label(self):
        k = kind()
        assert k.desired_label(node(), 'ts-4') == 'ts-4'
        assert k.label_patch('ts-4') == {LABEL: 'ts-4'}
        assert k.needs_label(node(), 'ts-4') and not k.needs_label(node(label='ts-4'), 'ts-4')

    def test_default_removes_the_label(self):
        k = kind(default='ts-4')
        assert k.desired_label(node(label='ts-10'), 'default') is None
        assert k.label_patch('default') == {LABEL: None}
        assert k.target_key(node(label='ts-10'), 'default') == 'ts-4'

    def test_none_without_default_removes_the_label(self):
        k = kind(default='')
        assert k.desired_label(node(label='ts-4'), 'none') is None
        assert k.label_patch('none') == {LABEL: None}
        assert k.target_key(node(label='ts-4'), 'none') == ''
        assert k.target_hash(node(label='ts-4'), 'none') == ''

    def test_none_with_unshared_default_removes_the_label(self):
        k = kind(default='unshared')
        assert k.desired_label(node(label='ts-4'), 'none') is None
        assert k.target_key(node(label='ts-4'), 'none') == 'unshared'

    def test_none_with_shared_default_sets_the_unshared_profile(self):
        k = kind(default='ts-4')
        assert k.unshared_key == 'unshared'
        assert k.desired_label(node(), 'none') == 'unshared'
        assert k.label_patch('none') == {LABEL: 'unshared'}

    def test_none_keeps_an_unshared_label(self):
        k = kind(default='ts-4', profiles=dict(PROFILES, plain={'version': 'v1'}))
        assert k.desired_label(node(label='plain'), 'none') == 'plain'
        assert not k.needs_label(node(label='plain'), 'none')

    def test_same_value_is_never_cycled(self):
        assert SharingKind.cycle_same_value is False


class TestRestart(object):
    def test_restart_when_the_recorded_hash_differs(self):
        k = kind()
        spec = k.restart(node(label='ts-4'), 'ts-4')
        assert spec['selector'] == RESTART_SELECTOR and spec['namespace'] == 'gpu-operator'
        assert spec['annotations'] == {ANN_HASH: content_hash(k.texts['ts-4'])}

    def test_no_restart_when_the_hash_matches(self):
        k = kind()
        assert k.restart(node(label='ts-4', ann={ANN_HASH: content_hash(k.texts['ts-4'])}), 'ts-4') is None

    def test_unshared_without_config_needs_no_hash(self):
        assert kind().restart(node(), 'none') is None
        spec = kind().restart(node(ann={ANN_HASH: 'abc'}), 'none')
        assert spec['annotations'] == {ANN_HASH: None}

    def test_content_change_restarts(self):
        old, new = kind(), kind(profiles=dict(PROFILES, **{'ts-4': ts(6)}))
        n = node(label='ts-4', ann={ANN_HASH: content_hash(old.texts['ts-4'])})
        assert old.restart(n, 'ts-4') is None and new.restart(n, 'ts-4') is not None


class TestCapacity(object):
    def test_t4_time_sliced_4(self):
        assert kind().expected_allocatable(node(), 'ts-4') == {'nvidia.com/gpu': 4}

    def test_a100_time_sliced_10(self):
        assert kind().expected_allocatable(node('a100-0', 'NVIDIA-A100-SXM4-40GB', 8), 'ts-10') == {'nvidia.com/gpu': 80}

    def test_mps_renamed(self):
        n = node('l40s-0', 'NVIDIA-L40S', 4)
        assert kind().expected_allocatable(n, 'mps-10') == {'nvidia.com/gpu.shared': 40}
        assert kind().expected_labels(n, 'mps-10') == {'nvidia.com/gpu.replicas': '10',
                                                       'nvidia.com/gpu.sharing-strategy': 'mps'}

    def test_mixed_mig_resources_time_sliced(self):
        k = kind(strategy='mixed')
        assert k.physical(a100_mixed()) == (0, {'nvidia.com/mig-1g.5gb': 56})
        assert k.expected_allocatable(a100_mixed(), 'mig-ts-2') == {'nvidia.com/mig-1g.5gb': 112}
        assert k.expected_labels(a100_mixed(), 'mig-ts-2') == {
            'nvidia.com/mig-1g.5gb.replicas': '2', 'nvidia.com/mig-1g.5gb.sharing-strategy': 'time-slicing'}

    def test_mixed_full_gpus_from_capacity_over_replicas(self):
        n = a100_mixed(alloc={'nvidia.com/gpu': '16', 'nvidia.com/mig-1g.5gb': '28'}, devices=28)
        n['metadata']['labels']['nvidia.com/gpu.replicas'] = '4'
        assert kind(strategy='mixed').physical(n) == (4, {'nvidia.com/mig-1g.5gb': 28})

    def test_physical_counts_are_read_once(self):
        k = kind()
        assert k.physical(node(count=1)) == (1, {})
        assert k.physical(node(count=3)) == (1, {})

    def test_single_strategy_invalid_mig_layout_has_no_gpus(self):
        n = node('a100-0', 'NVIDIA-A100-SXM4-40GB-MIG-INVALID', 0)
        assert kind().physical(n) == (0, {})


class TestProgress(object):
    def test_waits_for_gfd_labels_then_done(self):
        k = kind()
        verdict, detail = k.progress(node(label='ts-4'), 'ts-4')
        assert verdict == 'wait' and 'nvidia.com/gpu.replicas=1 (want 4)' in detail
        done = node(label='ts-4', replicas='4', strategy='time-slicing')
        assert k.progress(done, 'ts-4')[0] == 'done'

    def test_label_changed_by_someone_else(self):
        assert kind().progress(node(label='ts-10'), 'ts-4')[0] == 'failed'

    def test_at_target_needs_label_hash_labels_and_capacity(self):
        k = kind()
        h = {ANN_HASH: content_hash(k.texts['ts-4'])}
        good = node(label='ts-4', replicas='4', strategy='time-slicing', ann=h, allocatable={'nvidia.com/gpu': '4'})
        assert k.at_target(good, 'ts-4')
        k = kind()
        assert not k.at_target(node(label='ts-4', replicas='4', strategy='time-slicing', ann=h), 'ts-4')  # capacity 1
        k = kind()
        assert not k.at_target(dict(good, metadata=dict(good['metadata'], annotations={})), 'ts-4')  # hash

    def test_zero_resources_left_by_kubelet_do_not_count(self):
        k = kind()
        h = {ANN_HASH: content_hash(k.texts['mps-10'])}
        n = node('l40s-0', 'NVIDIA-L40S', 4, label='mps-10', replicas='10', strategy='mps', ann=h,
                 allocatable={'nvidia.com/gpu': '0', 'nvidia.com/gpu.shared': '40'})
        assert k.at_target(n, 'mps-10')


class TestValidate(object):
    def test_valid(self):
        assert kind().validate(node(), 'ts-4') == []
        assert kind(strategy='mixed').validate(a100_mixed(), 'mig-ts-2') == []

    def test_unknown_profile(self):
        errors = kind().validate(node(), 'ts-99')
        assert len(errors) == 1 and "'ts-99' is not a key" in errors[0] and 'ts-4' in errors[0]

    def test_not_configured(self):
        errors = kind(configured=False).validate(node(), 'ts-4')
        assert 'devicePlugin.config.name' in errors[0]
        assert kind(configured=False).validate(node(), 'none') == []

    def test_mps_on_a_mig_node(self):
        n = node('a100-0', 'NVIDIA-A100-SXM4-40GB-MIG-1g.5gb', 56,
                 extra={'nvidia.com/mig.config': 'all-1g.5gb', 'nvidia.com/mig.config.state': 'success',
                        'nvidia.com/mig.strategy': 'single'})
        errors = kind().validate(n, 'mps-10')
        assert any('MPS cannot share a node with MIG enabled' in e for e in errors)

    def test_mps_with_mixed(self):
        errors = kind(strategy='mixed', profiles={'mps-10': mps(10)}).validate(
            node(extra={'nvidia.com/mig.strategy': 'mixed'}), 'mps-10')
        assert any('mixed' in e for e in errors)

    def test_mps_replica_limit_by_compute_capability(self):
        assert kind().validate(node('l40s-0', 'NVIDIA-L40S', 4), 'mps-20') == []
        v100 = node('v-0', 'Tesla-V100-SXM2-16GB', 8,
                    extra={'nvidia.com/gpu.compute.major': '7', 'nvidia.com/gpu.compute.minor': '0'})
        errors = kind().validate(v100, 'mps-20')
        assert errors and 'exceeds the MPS limit of 16' in errors[0]

    def test_mig_resource_needs_mixed(self):
        errors = kind().validate(node('a100-0', 'NVIDIA-A100-SXM4-40GB', 8), 'mig-ts-2')
        assert errors and 'only advertised with MIG strategy mixed' in errors[0]

    def test_no_gfd_labels(self):
        bare = {'metadata': {'name': 'cpu-0', 'labels': {}}}
        assert 'GPU feature discovery' in kind().validate(bare, 'ts-4')[0]

    def test_mig_reconfiguration_in_progress(self):
        n = node(extra={'nvidia.com/mig.config': 'all-1g.5gb', 'nvidia.com/mig.config.state': 'pending'})
        assert 'finish it first' in kind().validate(n, 'ts-4')[0]

    def test_strategy_not_yet_picked_up(self):
        n = node(extra={'nvidia.com/mig.strategy': 'single'})
        assert 'still reports MIG strategy single' in kind(strategy='mixed').validate(n, 'ts-4')[0]

    def test_none_with_shared_default_and_no_unshared_profile(self):
        k = kind(default='ts-4', profiles={'ts-4': ts(4)})
        assert k.unshared_key is None
        assert 'add an unshared profile' in k.validate(node(), 'none')[0]

    def test_default_missing_from_the_config_map(self):
        errors = kind(default='gone').validate(node(), 'default')
        assert "'gone'" in errors[0]

    def test_sharing_a_resource_the_node_lacks_is_a_warning(self):
        k = kind(strategy='mixed')
        n = node('h100-0', 'NVIDIA-H100-80GB-HBM3', 8, extra={'nvidia.com/mig.strategy': 'mixed'})
        assert k.validate(n, 'mig-ts-2') == []
        assert 'does not advertise' in k.warnings[0]

    def test_describe(self):
        d = kind().describe(node(), 'ts-4')
        assert d['label_to'] == 'ts-4' and d['restart_device_plugin'] is True
        assert d['expected_allocatable'] == {'nvidia.com/gpu': 4}


# ------------------------------------------------------------------------------ sharing_cluster


class TestResolve(object):
    def test_default_covers_only_unnamed_nodes(self):
        out, errors = sharing_cluster.resolve([
            {'label_selector': 'nvidia.com/gpu.present=true', 'profile': 'default'},
            {'selector': {'pool': 'training'}, 'profile': 'ts-10'}], NODES)
        assert errors == [] and out == {'t4-0': 'default', 'l40s-0': 'default', 'a100-0': 'ts-10'}

    def test_empty_profile_is_none(self):
        out, errors = sharing_cluster.resolve([{'nodes': ['t4-0'], 'profile': ''}], NODES)
        assert out == {'t4-0': 'none'} and errors == []

    def test_conflicts_and_indexes(self):
        _out, errors = sharing_cluster.resolve([
            {'selector': {'pool': 'inference'}, 'profile': 'ts-4'},
            {'label_selector': 'pool=nothing', 'profile': 'ts-4'},
            {'nodes': ['t4-0'], 'profile': 'mps-10'}], NODES)
        assert errors == ["assignments[1]: label selector 'pool=nothing' matches no node",
                          "node t4-0 is assigned both 'ts-4' and 'mps-10'"]


def run_check(assignments, conn, **extra):
    params = dict(PARAMS, assignments=assignments, **extra)
    return sharing_cluster.run(Connection(core=conn, custom=conn, policy=conn), params, check_mode=True)


class TestRunValidation(object):
    def test_plan_in_check_mode(self):
        res = run_check([{'nodes': ['t4-0'], 'profile': 'ts-4'}], FakeConn(NODES, policy(), render_profiles(PROFILES)))
        assert res['changed'] is True and res['batches'] == [['t4-0']]
        assert res['diff']['after']['t4-0'] == {LABEL: 'ts-4', 'allocatable': {'nvidia.com/gpu': 4}}
        assert res['lock'] == {'state': 'free', 'lease': 'gpu-operator/gpuops-gpu-rollout'}  # read, not taken

    @pytest.mark.parametrize('assignments,conn_args,extra,fragment', [
        ([{'nodes': ['t4-0'], 'profile': 'ts-4'}], (policy(),), {}, 'not found'),
        ([{'nodes': ['t4-0'], 'profile': 'ts-4'}], (None, {}), {}, 'no ClusterPolicy'),
        ([{'nodes': ['t4-0'], 'profile': 'ts-4'}], (policy(enabled=False), {}), {}, 'devicePlugin.enabled=false'),
        ([{'nodes': ['t4-0'], 'profile': 'x'}], (policy(), {}), {'profiles': {'x': ts(1)}}, 'replicas'),
        ([{'nodes': ['t4-0'], 'profile': 'none'}], (policy(), {}), {'profiles': {'none': {}}}, 'reserved'),
        ([{'nodes': ['t4-0'], 'profile': 'x'}], (policy(default='gone'), {'x': 'version: v1'}), {}, "'gone'"),
        ([{'nodes': ['t4-0'], 'profile': 'x'}], (policy(), {'x': 'version: v1'}), {'unshared_profile': 'y'}, "'y'"),
        ([{'nodes': ['t4-0'], 'profile': 'ts-4'}], (policy(), {'ts-4': 'version: v1'}), {'max_unavailable': '0%'},
         'max_unavailable'),
    ])
    def test_fails_before_writing(self, assignments, conn_args, extra, fragment):
        with pytest.raises(sharing_cluster.InputError, match=fragment):
            run_check(assignments, FakeConn(NODES, *conn_args), **extra)

    def test_orphan_label_is_refused(self):
        nodes = dict(NODES, **{'l40s-0': node('l40s-0', 'NVIDIA-L40S', 4, label='removed-profile')})
        with pytest.raises(sharing_cluster.InputError, match='l40s-0 is labelled'):
            run_check([{'nodes': ['t4-0'], 'profile': 'ts-4'}], FakeConn(nodes, policy(), render_profiles(PROFILES)))


def test_strategy_lag_is_only_a_warning_when_planning():
    k = kind(strategy='mixed')
    k.strict_strategy = False
    assert k.validate(node(extra={'nvidia.com/mig.strategy': 'single'}), 'ts-4') == []
    assert 'the plan assumes mixed' in k.warnings[0]


def test_default_skips_nodes_gfd_has_not_labelled():
    nodes = dict(NODES, **{'new-0': {'metadata': {'name': 'new-0', 'labels': {'nvidia.com/gpu.present': 'true'}}}})
    res = run_check([{'label_selector': 'nvidia.com/gpu.present=true', 'profile': 'default'}],
                    FakeConn(nodes, policy(default='ts-4'), render_profiles(PROFILES)))
    assert 'new-0' not in res['assignments'] and any('new-0' in w for w in res['warnings'])


class TestOncePerDistinctKey(object):
    """Thousands of nodes share a few (profile, product, GPU count, strategy) combinations: the profile
    is checked and its labels and capacity predicted once per combination, with unchanged answers."""

    def test_two_nodes_with_the_same_profile_are_checked_once(self, monkeypatch):
        from ansible_collections.gpuops.gpu.plugins.module_utils.rollout import sharing_kind
        calls = []
        real = sharing_kind.sharing_config_errors
        monkeypatch.setattr(sharing_kind, 'sharing_config_errors', lambda *a: calls.append(a[1:]) or real(*a))
        k = kind()
        assert k.validate(node('t4-0'), 'ts-4') == [] and k.validate(node('t4-1'), 'ts-4') == []
        assert calls == [('single', '7.5')]
        k.validate(node('t4-2'), 'ts-10')
        assert len(calls) == 2

    def test_answers_are_the_uncached_ones(self):
        k, fresh = kind(), kind()
        nodes = [node('t4-%d' % i, label='ts-4', replicas='4', strategy='time-slicing',
                      extra={'nvidia.com/gpu.product': 'Tesla-T4-SHARED'}, allocatable={'nvidia.com/gpu': '4'},
                      ann={ANN_HASH: content_hash(k.texts['ts-4'])}) for i in range(3)]
        for n in nodes:
            assert k.at_target(n, 'ts-4') is True
            assert k.expected_allocatable(n, 'ts-4') == {'nvidia.com/gpu': 4}
            assert k.expected_labels(n, 'ts-10') == kind().expected_labels(n, 'ts-10')
            assert k.restart(n, 'ts-10') == kind().restart(n, 'ts-10')
        assert fresh.at_target(nodes[0], 'ts-4') is True
        assert k.memo.computed < 3 * 4  # a handful of distinct answers for the three nodes

    def test_a_remembered_error_is_raised_again(self):
        k = kind(profiles={'bad': {'sharing': {'timeSlicing': {'resources': [{'name': 'nvidia.com/gpu',
                                                                              'replicas': 0}]}}}})
        for _i in range(2):
            with pytest.raises(ValueError) as exc:
                k.expected_allocatable(node(label='bad'), 'bad')
            assert 'replicas' in str(exc.value)
