# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.mig_kind import MigKind
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.engine import (
    NodeRollout, _lines, _parse_selector, resolve_assignments)


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


NODES = dict((n['metadata']['name'], n) for n in [
    node('a1', extra={'pool': 'train'}), node('a2', extra={'pool': 'train'}),
    node('b1', extra={'pool': 'infer', 'zone': 'z1'}), node('t1', product='Tesla-T4', count='1')])


class TestResolveAssignments(object):
    def test_names_and_selectors(self):
        out, errors = resolve_assignments([{'label_selector': 'pool=train', 'config': 'seven'},
                                           {'nodes': ['b1'], 'config': 'balanced'}], NODES, 'config')
        assert errors == [] and out == {'a1': 'seven', 'a2': 'seven', 'b1': 'balanced'}

    def test_dict_selector(self):
        out, errors = resolve_assignments([{'selector': {'pool': 'infer', 'zone': 'z1'}, 'config': 'x'}], NODES, 'config')
        assert out == {'b1': 'x'} and errors == []

    def test_conflict_is_an_error(self):
        _out, errors = resolve_assignments([{'label_selector': 'pool=train', 'config': 'seven'},
                                            {'nodes': ['a1'], 'config': 'balanced'}], NODES, 'config')
        assert errors == ["node a1 is assigned both 'seven' and 'balanced'"]

    def test_missing_node_and_empty_selector(self):
        _out, errors = resolve_assignments([{'nodes': ['zz'], 'config': 'a'},
                                            {'label_selector': 'pool=none', 'config': 'a'},
                                            {'config': 'a'}, {'nodes': ['a1']}], NODES, 'config')
        assert errors == ['assignments[0]: node(s) not found: zz',
                          "assignments[1]: label selector 'pool=none' matches no node",
                          'assignments[2]: give nodes or a label_selector/selector',
                          'assignments[3]: config is required']


class TestSelector(object):
    @pytest.mark.parametrize('selector,expected', [
        ('pool=train', True), ('pool==train', True), ('pool!=train', False), ('pool', True), ('!pool', False),
        ('pool in (a,train)', True), ('pool notin (train)', False), ('pool=train,zone', False), ('', True)])
    def test_terms(self, selector, expected):
        assert _parse_selector(selector)({'pool': 'train'}) is expected

    def test_garbage(self):
        with pytest.raises(ValueError, match='cannot parse'):
            _parse_selector('a=b=c')


class TestBlockingPdbs(object):
    def test_pdb_with_no_disruptions_blocks(self):
        pod = {'metadata': {'namespace': 'ml', 'name': 'p', 'labels': {'app': 'train'}}}
        pdbs = [{'metadata': {'namespace': 'ml', 'name': 'strict'}, 'spec': {'selector': {'matchLabels': {'app': 'train'}}},
                 'status': {'disruptionsAllowed': 0}},
                {'metadata': {'namespace': 'ml', 'name': 'loose'}, 'spec': {'selector': {'matchLabels': {'app': 'train'}}},
                 'status': {'disruptionsAllowed': 1}},
                {'metadata': {'namespace': 'other', 'name': 'x'}, 'spec': {'selector': {'matchLabels': {'app': 'train'}}},
                 'status': {'disruptionsAllowed': 0}},
                {'metadata': {'namespace': 'ml', 'name': 'expr'}, 'spec': {'selector': {'matchExpressions': [
                    {'key': 'app', 'operator': 'In', 'values': ['train']}]}}, 'status': {'disruptionsAllowed': 0}}]
        assert NodeRollout.blocking_pdbs(pod, pdbs) == ['ml/strict', 'ml/expr']


class _Stream(object):
    """A watch response body arriving in arbitrary chunks (as urllib3 hands them over)."""

    def __init__(self, chunks):
        self.chunks = chunks

    def stream(self, amt=None, decode_content=False):
        return iter(self.chunks)


@pytest.mark.parametrize('chunks', [
    [b'{"a": 1}\n{"b": 2}\n'],
    [b'{"a"', b': 1}\n{"b": ', b'2}\n'],
    [b'{"a": 1}\n', b'\n', b'{"b": 2}\n{"c": 3}'],   # blank line skipped; no newline yet: not a line
    ['{"a": 1}\n', '{"b": 2}\n'],                      # str chunks
])
def test_watch_lines_reassemble_chunks(chunks):
    lines = list(_lines(_Stream(chunks)))
    assert lines[:2] == [b'{"a": 1}', b'{"b": 2}']
    assert len(lines) == 2
