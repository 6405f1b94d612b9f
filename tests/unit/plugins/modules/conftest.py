# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one harness for module unit tests: run a module's main() with arguments, a fake connection in
place of the Kubernetes API, and read back its exit code and JSON result.

    def test_x(run_module):
        code, result = run_module(gpu_nodes_info, {'names': ['a']}, check=True, core=FakeCore(...))

The keyword arguments after ``diff`` become the attributes of the fake connection (``core``, ``custom``,
``dynamic``, ...): whatever the module reads from the object ``connect()`` returns."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import sys

import pytest

from ansible.module_utils import basic
from ansible.module_utils.common import warnings as module_warnings
from ansible.module_utils.common.text.converters import to_bytes

from ansible_collections.gpuops.gpu.plugins.module_utils.k8s import client as k8s_client

try:
    from ansible.module_utils.testing import patch_module_args
    from ansible.module_utils import _internal
except ImportError:  # ansible-core < 2.19
    patch_module_args = _internal = None

PLUGINS = 'ansible_collections.gpuops.gpu.plugins.'


class FakeConnection(k8s_client.Connection):
    """k8s.client.Connection over the given fake API objects (``core``, ``custom``, ``policy``,
    ``batch``, ``dynamic``): requests are made and counted as with a real connection."""


@pytest.fixture(autouse=True)
def fresh_warnings(monkeypatch):
    """Warnings are process-global in a module; each test starts with none. Other tests in the
    session may have loaded controller code, which reroutes module warnings to the display."""
    if hasattr(_internal, 'is_controller'):
        monkeypatch.setattr(_internal, 'is_controller', False)
    getattr(module_warnings, '_global_warnings').clear()
    yield
    getattr(module_warnings, '_global_warnings').clear()


def _patch_connect(monkeypatch, connection):
    """``connect`` answers with ``connection`` in k8s.client and in every plugin module that imported
    it by name (modules, runners), so the harness does not depend on where the call is made."""
    original = k8s_client.connect
    for name, loaded in list(sys.modules.items()):
        if name.startswith(PLUGINS) and getattr(loaded, 'connect', None) is original:
            monkeypatch.setattr(loaded, 'connect', lambda module: connection)


@pytest.fixture
def run_module(monkeypatch, capsys):
    """run_module(module, args, check=False, diff=False, **apis) -> (exit code, result dict)."""
    def run(module, args, check=False, diff=False, **apis):
        _patch_connect(monkeypatch, FakeConnection(**apis))
        args = dict(args, _ansible_check_mode=check, _ansible_diff=diff)
        if patch_module_args is not None:
            with patch_module_args(args):
                with pytest.raises(SystemExit) as exit_info:
                    module.main()
        else:
            monkeypatch.setattr(basic, '_ANSIBLE_ARGS', to_bytes(json.dumps({'ANSIBLE_MODULE_ARGS': args})))
            with pytest.raises(SystemExit) as exit_info:
                module.main()
        return exit_info.value.code, json.loads(capsys.readouterr().out)
    return run
