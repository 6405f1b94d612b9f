# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_nodes_info main(): argument handling and result shaping, with a fake CoreV1Api."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json

import pytest

from ansible.module_utils import _internal, basic
from ansible.module_utils.common import warnings as module_warnings
from ansible.module_utils.common.text.converters import to_bytes

from ansible_collections.gpuops.gpu.plugins.modules import gpu_nodes_info
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.gpu_cluster_data import (
    GPU, NODES, PODS, FakeApiError, FakeCore,
)

try:
    from ansible.module_utils.testing import patch_module_args
except ImportError:  # ansible-core < 2.19
    patch_module_args = None


@pytest.fixture(autouse=True)
def fresh_warnings(monkeypatch):
    """Warnings are process-global in a module; each test starts with none. Other tests in the
    session may have loaded controller code, which reroutes module warnings to the display."""
    if hasattr(_internal, 'is_controller'):
        monkeypatch.setattr(_internal, 'is_controller', False)
    getattr(module_warnings, '_global_warnings').clear()
    yield
    getattr(module_warnings, '_global_warnings').clear()


def warning_texts(result):
    """Warnings as strings (ansible-core 2.19 returns WarningSummary dicts)."""
    return [w['event']['msg'] if isinstance(w, dict) else w for w in result.get('warnings', [])]


class FakeConnection(object):
    def __init__(self, core):
        self.core = core


def run_module(monkeypatch, capsys, args, core):
    monkeypatch.setattr(gpu_nodes_info, 'connect', lambda module: FakeConnection(core))
    if patch_module_args is not None:
        with patch_module_args(args):
            with pytest.raises(SystemExit) as exit_info:
                gpu_nodes_info.main()
    else:
        monkeypatch.setattr(basic, '_ANSIBLE_ARGS', to_bytes(json.dumps({'ANSIBLE_MODULE_ARGS': args})))
        with pytest.raises(SystemExit) as exit_info:
            gpu_nodes_info.main()
    return exit_info.value.code, json.loads(capsys.readouterr().out)


def test_defaults(monkeypatch, capsys):
    core = FakeCore(NODES, PODS)
    code, result = run_module(monkeypatch, capsys, {}, core)
    assert code == 0
    assert result['changed'] is False
    assert [n['name'] for n in result['nodes']] == ['a100-0', 'h100-0', 'l40s-0', 'plain-0', 't4-0']
    assert result['summary']['requested'][GPU] == 6
    assert result['api_requests'] == 2
    assert (result['not_found'], result['not_gpu']) == ([], [])
    assert 'warnings' not in result


def test_check_mode_is_the_same_read(monkeypatch, capsys):
    code, result = run_module(monkeypatch, capsys, {'_ansible_check_mode': True}, FakeCore(NODES, PODS))
    assert (code, result['changed'], len(result['nodes']), result['api_requests']) == (0, False, 5, 2)


def test_options_and_warnings(monkeypatch, capsys):
    core = FakeCore(NODES, PODS)
    code, result = run_module(monkeypatch, capsys, {
        'label_selector': 'gpuops.dev/pool=inference', 'names': ['t4-0', 'cpu-0', 'a100-0'],
        'include_pods': False}, core)
    assert code == 0
    assert [kind for kind, _kw in core.calls] == ['NodeList']
    assert core.calls[0][1]['label_selector'] == 'gpuops.dev/pool=inference'
    assert [n['name'] for n in result['nodes']] == ['t4-0']
    assert result['nodes'][0]['requested'] is None
    assert result['not_found'] == ['a100-0', 'cpu-0']
    assert warning_texts(result) == ['No node named a100-0, cpu-0 matches gpuops.dev/pool=inference.']


def test_non_gpu_node_named(monkeypatch, capsys):
    code, result = run_module(monkeypatch, capsys, {'names': ['cpu-0']}, FakeCore(NODES, PODS))
    assert (code, result['nodes'], result['not_gpu']) == (0, [], ['cpu-0'])
    assert warning_texts(result) == ['Left out, no NVIDIA GPUs: cpu-0 (set only_gpu_nodes=false to include them).']
    code, result = run_module(monkeypatch, capsys, {'names': ['cpu-0'], 'only_gpu_nodes': False},
                              FakeCore(NODES, PODS))
    assert [(n['name'], n['gpu_node']) for n in result['nodes']] == [('cpu-0', False)]


def test_api_error_fails_the_module(monkeypatch, capsys):
    core = FakeCore(NODES, PODS, fail={('PodList', 1): FakeApiError(403, 'Forbidden', 'pods is forbidden')})
    code, result = run_module(monkeypatch, capsys, {}, core)
    assert code == 1
    assert result['failed'] is True
    assert result['msg'] == 'Could not list pods: 403 Forbidden: pods is forbidden'


def test_bad_option_type(monkeypatch, capsys):
    code, result = run_module(monkeypatch, capsys, {'include_pods': 'maybe'}, FakeCore(NODES, PODS))
    assert code == 1
    assert 'include_pods' in result['msg']
