# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""gpuops.gpu.gpu_diagnostics through its main(): the archive in check mode too, changed=false, no planted
secret in the module result, bad inputs fail cleanly (the logic: module_utils/ops/test_diagnostics.py)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import os

from ansible_collections.gpuops.gpu.plugins.modules import gpu_diagnostics
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.ops.diagnostics_fakes import (
    PLANTED, FakeCore, FakeCustom)


def test_check_mode_writes_the_archive_and_changes_nothing(run_module, tmp_path):
    dest = str(tmp_path / 'd.tgz')
    code, result = run_module(gpu_diagnostics, {'dest': dest, 'operator_namespace': 'gpu-operator'}, check=True,
                              core=FakeCore(), custom=FakeCustom())
    assert code == 0 and result['changed'] is False and result['path'] == dest and os.path.isfile(dest)
    assert PLANTED not in json.dumps(result)
    assert 'd/summary.txt' in result['files'] and result['api_requests'] > 5


def test_bad_input_fails_without_traceback(run_module, tmp_path):
    code, result = run_module(gpu_diagnostics, {'dest': str(tmp_path / 'd.zip'), 'log_lines': 0},
                              core=FakeCore(), custom=FakeCustom())
    assert code == 1 and result['failed'] is True and result['changed'] is False
    assert 'dest must be the path of the archive' in result['msg'] and 'log_lines' in result['msg']
