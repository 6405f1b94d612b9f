# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.mig_kind import MigKind


def node(name='n1', product='NVIDIA-A100-SXM4-40GB', count='8', config=None, state=None, extra=None, ann=None):
    labels = {'nvidia.com/gpu.product': product, 'nvidia.com/gpu.count': count}
    if config:
        labels['nvidia.com/mig.config'] = config
    if state:
        labels['nvidia.com/mig.config.state'] = state
    labels.update(extra or {})
    return {'metadata': {'name': name, 'labels': labels, 'annotations': ann or {}}, 'spec': {}, 'status': {}}


DOC = {'version': 'v1', 'mig-configs': {
    'all-disabled': [{'devices': 'all', 'mig-enabled': False}],
    'balanced': [{'devices': 'all', 'mig-enabled': True, 'mig-devices': {'1g.5gb': 2, '2g.10gb': 1, '3g.20gb': 1}}],
    'too-big': [{'devices': 'all', 'mig-enabled': True, 'mig-devices': {'3g.20gb': 2, '1g.5gb': 1}}],
    'seven': [{'devices': 'all', 'mig-enabled': True, 'mig-devices': {'1g.5gb': 7}}],
}}


class TestMigKindValidate(object):
    def test_fitting_config_on_mixed_is_valid(self):
        assert MigKind(DOC, 'mixed').validate(node(), 'balanced') == []

    def test_heterogeneous_config_refused_in_single(self):
        errors = MigKind(DOC, 'single').validate(node(), 'balanced')
        assert len(errors) == 1 and 'node n1' in errors[0] and 'single' in errors[0]

    def test_geometry_that_does_not_fit_is_refused(self):
        errors = MigKind(DOC, 'mixed').validate(node(), 'too-big')
        assert errors and 'n1' in errors[0]

    def test_unknown_config_is_refused(self):
        errors = MigKind(DOC, 'mixed').validate(node(), 'nope')
        assert errors and "'nope'" in errors[0]

    def test_unknown_product(self):
        errors = MigKind(DOC, 'mixed').validate(node(product='NVIDIA-Quantum-9000'), 'balanced')
        assert 'not in the MIG catalog' in errors[0]

    def test_non_mig_gpu_accepts_only_all_disabled(self):
        kind = MigKind(DOC, 'mixed')
        assert kind.validate(node(product='Tesla-T4', count='1'), 'all-disabled') == []
        assert 'not MIG capable' in kind.validate(node(product='Tesla-T4', count='1'), 'seven')[0]

    def test_missing_product_label(self):
        bare = {'metadata': {'name': 'x', 'labels': {}}}
        assert 'has no nvidia.com/gpu.product' in MigKind(DOC, 'mixed').validate(bare, 'seven')[0]

    def test_builtin_configs_when_no_document(self):
        kind = MigKind(None, 'single')
        assert kind.validate(node(), 'all-1g.5gb') == []
        assert kind.expected_allocatable(node(), 'all-1g.5gb') == {'nvidia.com/gpu': 56}


class TestMigKindProgress(object):
    kind = MigKind(DOC, 'mixed')

    @pytest.mark.parametrize('state,verdict', [(None, 'wait'), ('pending', 'wait'), ('rebooting', 'rebooting'),
                                               ('failed', 'failed'), ('success', 'done')])
    def test_states(self, state, verdict):
        assert self.kind.progress(node(config='seven', state=state), 'seven')[0] == verdict

    def test_success_with_paused_clients_is_not_done(self):
        n = node(config='seven', state='success', extra={'nvidia.com/gpu.deploy.device-plugin': 'paused-for-mig-change'})
        verdict, detail = self.kind.progress(n, 'seven')
        assert verdict == 'wait' and 'device-plugin' in detail

    def test_label_changed_by_someone_else(self):
        assert self.kind.progress(node(config='balanced', state='success'), 'seven')[0] == 'failed'

    def test_one_patch_sets_config_and_clears_state(self):
        assert self.kind.label_patch('seven') == {'nvidia.com/mig.config': 'seven', 'nvidia.com/mig.config.state': None}

    def test_needs_label(self):
        assert self.kind.needs_label(node(config='balanced', state='success'), 'seven')
        assert not self.kind.needs_label(node(config='seven', state='pending'), 'seven')
        assert self.kind.needs_label(node(config='seven', state='failed'), 'seven')


class TestPhysicalGpus(object):
    def test_plain_count(self):
        assert MigKind(DOC, 'single').physical_gpus(node(count='8')) == 8

    def test_single_strategy_counts_mig_devices(self):
        n = node(product='NVIDIA-A100-SXM4-40GB-MIG-1g.5gb', count='56', config='seven', state='success')
        assert MigKind(DOC, 'single').physical_gpus(n) == 8

    def test_annotation_wins(self):
        n = node(product='NVIDIA-A100-SXM4-40GB-MIG-1g.5gb', count='56', ann={'gpuops.gpu/physical-gpus': '4'})
        assert MigKind(DOC, 'single').physical_gpus(n) == 4


class TestExpected(object):
    def test_mixed_capacity(self):
        assert MigKind(DOC, 'mixed').expected_allocatable(node(count='2'), 'balanced') == {
            'nvidia.com/mig-1g.5gb': 4, 'nvidia.com/mig-2g.10gb': 2, 'nvidia.com/mig-3g.20gb': 2}

    def test_disabled_is_full_gpus(self):
        assert MigKind(DOC, 'mixed').expected_allocatable(node(count='8'), 'all-disabled') == {'nvidia.com/gpu': 8}


class TestOncePerDistinctKey(object):
    """A fleet shares a few (product, config, GPU count, strategy) combinations: the kind validates and
    predicts once per combination, and every node still gets its own answer (its name in the message)."""

    @pytest.fixture
    def calls(self, monkeypatch):
        from ansible_collections.gpuops.gpu.plugins.module_utils.rollout import mig_kind
        seen = []

        def counting(*args):
            seen.append(args[1:5])
            return real(*args)
        real = mig_kind.config_capacity
        monkeypatch.setattr(mig_kind, 'config_capacity', counting)
        return seen

    def test_two_nodes_with_the_same_product_and_config_validate_once(self, calls):
        kind = MigKind(DOC, 'mixed')
        assert kind.validate(node('a'), 'balanced') == [] and kind.validate(node('b'), 'balanced') == []
        assert calls == [('balanced', 'NVIDIA-A100-SXM4-40GB', 8, 'mixed')]
        assert kind.memo.computed == 2  # the capacity and the catalog entry

    def test_another_config_count_or_strategy_is_computed_again(self, calls):
        kind = MigKind(DOC, 'mixed')
        kind.validate(node('a'), 'balanced')
        kind.validate(node('b', count='4'), 'balanced')
        kind.validate(node('c'), 'seven')
        kind.strategy = 'single'
        kind.validate(node('d'), 'seven')
        assert calls == [('balanced', 'NVIDIA-A100-SXM4-40GB', 8, 'mixed'), ('balanced', 'NVIDIA-A100-SXM4-40GB', 4, 'mixed'),
                         ('seven', 'NVIDIA-A100-SXM4-40GB', 8, 'mixed'), ('seven', 'NVIDIA-A100-SXM4-40GB', 8, 'single')]

    def test_a_remembered_error_names_each_node(self, calls):
        kind = MigKind(DOC, 'mixed')
        first, second = kind.validate(node('a'), 'too-big'), kind.validate(node('b'), 'too-big')
        assert len(calls) == 1
        assert first == MigKind(DOC, 'mixed').validate(node('a'), 'too-big')
        assert second == [first[0].replace('node a ', 'node b ', 1)] and 'node b ' in second[0]

    def test_answers_are_unchanged_and_not_shared(self):
        kind = MigKind(DOC, 'mixed')
        first = kind.expected_allocatable(node('a', count='2'), 'balanced')
        first['nvidia.com/mig-1g.5gb'] = 99  # a caller changing its answer changes nobody else's
        assert kind.expected_allocatable(node('b', count='2'), 'balanced') == \
            MigKind(DOC, 'mixed').expected_allocatable(node('b', count='2'), 'balanced') == {
                'nvidia.com/mig-1g.5gb': 4, 'nvidia.com/mig-2g.10gb': 2, 'nvidia.com/mig-3g.20gb': 2}


DRA_LABELS = {'nvidia.com/gpu.deploy.device-plugin': 'false', 'gpuops.gpu/dra-kubelet-plugin': 'true'}


def dra_slice(*devices):
    """One slice of NVIDIA's DRA driver with ``devices`` as (type, profile or None)."""
    out = []
    for index, (kind, profile) in enumerate(devices):
        attributes = {'type': {'string': kind}}
        if profile:
            attributes['profile'] = {'string': profile}
        out.append({'name': 'd%d' % index, 'attributes': attributes})
    return {'spec': {'driver': 'gpu.nvidia.com', 'nodeName': 'n1', 'pool': {'name': 'n1'}, 'devices': out}}


class TestMigOnDraNodes(object):
    """A node the DRA driver serves: no extended resources, the slice follows the layout."""

    def kind(self, *devices):
        return MigKind(DOC, 'mixed', slices_of=lambda name: [dra_slice(*devices)] if devices else [])

    def test_done_only_when_the_slice_lists_the_config_devices(self):
        dra_node = node(count='1', config='balanced', state='success', extra=DRA_LABELS)
        old = self.kind(('gpu', None))
        verdict, detail = old.progress(dra_node, 'balanced')
        assert verdict == 'wait'
        assert 'lists 1 gpu, not 2 1g.5gb, 1 2g.10gb, 1 3g.20gb' in detail
        new = self.kind(('mig', '1g.5gb'), ('mig', '1g.5gb'), ('mig', '2g.10gb'), ('mig', '3g.20gb'))
        assert new.progress(dra_node, 'balanced') == (
            'done', 'success, the ResourceSlice of gpu.nvidia.com lists 2 1g.5gb, 1 2g.10gb, 1 3g.20gb')

    def test_no_allocatable_is_expected_and_no_sharing_profile_checked(self):
        dra_node = node(count='1', extra=DRA_LABELS)
        kind = self.kind()
        assert kind.expected_allocatable(dra_node, 'seven') == {}
        assert kind.validate(dra_node, 'seven') == []
        assert kind.dra_devices(dra_node, 'all-disabled') == {'gpu': 1}

    def test_a_device_plugin_node_is_verified_by_its_allocatable_as_before(self):
        plugin_node = node(count='1', config='seven', state='success')
        kind = self.kind(('gpu', None))
        assert kind.progress(plugin_node, 'seven') == ('done', 'success')
        assert kind.expected_allocatable(plugin_node, 'seven') == {'nvidia.com/mig-1g.5gb': 7}
