# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_nodes_info main(): argument handling and result shaping, with a fake CoreV1Api."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.modules import gpu_nodes_info
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.gpu_cluster_data import (
    GPU, NO_DRA, NODES, PODS, FakeApiError, FakeCore,
)


def warning_texts(result):
    """Warnings as strings (ansible-core 2.19 returns WarningSummary dicts)."""
    return [w['event']['msg'] if isinstance(w, dict) else w for w in result.get('warnings', [])]


def test_defaults(run_module):
    core = FakeCore(NODES, PODS)
    code, result = run_module(gpu_nodes_info, {}, core=core, custom=NO_DRA)
    assert code == 0
    assert result['changed'] is False
    assert [n['name'] for n in result['nodes']] == ['a100-0', 'h100-0', 'l40s-0', 'plain-0', 't4-0']
    assert result['summary']['requested'][GPU] == 6
    assert result['api_requests'] == 3
    assert result['dra'] == {'served': False}
    assert (result['not_found'], result['not_gpu']) == ([], [])
    assert 'warnings' not in result


def test_check_mode_is_the_same_read(run_module):
    code, result = run_module(gpu_nodes_info, {}, check=True, core=FakeCore(NODES, PODS), custom=NO_DRA)
    assert (code, result['changed'], len(result['nodes']), result['api_requests']) == (0, False, 5, 3)


def test_options_and_warnings(run_module):
    core = FakeCore(NODES, PODS)
    code, result = run_module(gpu_nodes_info, {
        'label_selector': 'gpuops.dev/pool=inference', 'names': ['t4-0', 'cpu-0', 'a100-0'],
        'include_pods': False}, core=core, custom=NO_DRA)
    assert code == 0
    assert [kind for kind, _kw in core.calls] == ['NodeList']
    assert core.calls[0][1]['label_selector'] == 'gpuops.dev/pool=inference'
    assert [n['name'] for n in result['nodes']] == ['t4-0']
    assert result['nodes'][0]['requested'] is None
    assert result['not_found'] == ['a100-0', 'cpu-0']
    assert warning_texts(result) == ['No node named a100-0, cpu-0 matches gpuops.dev/pool=inference.']


def test_non_gpu_node_named(run_module):
    code, result = run_module(gpu_nodes_info, {'names': ['cpu-0']}, core=FakeCore(NODES, PODS), custom=NO_DRA)
    assert (code, result['nodes'], result['not_gpu']) == (0, [], ['cpu-0'])
    assert warning_texts(result) == ['Left out, no NVIDIA GPUs: cpu-0 (set only_gpu_nodes=false to include them).']
    code, result = run_module(gpu_nodes_info, {'names': ['cpu-0'], 'only_gpu_nodes': False},
                              core=FakeCore(NODES, PODS), custom=NO_DRA)
    assert [(n['name'], n['gpu_node']) for n in result['nodes']] == [('cpu-0', False)]


def test_api_error_fails_the_module(run_module):
    core = FakeCore(NODES, PODS, fail={('PodList', 1): FakeApiError(403, 'Forbidden', 'pods is forbidden')})
    code, result = run_module(gpu_nodes_info, {}, core=core, custom=NO_DRA)
    assert code == 1
    assert result['failed'] is True
    assert result['msg'] == 'Could not list pods: 403 Forbidden: pods is forbidden'


def test_bad_option_type(run_module):
    code, result = run_module(gpu_nodes_info, {'include_pods': 'maybe'}, core=FakeCore(NODES, PODS), custom=NO_DRA)
    assert code == 1
    assert 'include_pods' in result['msg']
