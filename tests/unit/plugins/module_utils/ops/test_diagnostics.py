# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""ops.diagnostics against fake API objects: what is read (GETs and LISTs only, never a Secret), an
item that cannot be read is noted and the rest still written, and no planted secret reaches the archive."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import tarfile

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.k8s.client import Connection
from ansible_collections.gpuops.gpu.plugins.module_utils.common.errors import InputError
from ansible_collections.gpuops.gpu.plugins.module_utils.ops import diagnostics
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.gpu_cluster_data import FakeApiError
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.ops.diagnostics_fakes import (
    FakeCore, FakeCustom, PLANTED)

NS = 'gpu-operator'


def params(tmp_path, **kw):
    out = {'operator_namespace': NS, 'label_selector': None, 'log_lines': 50, 'max_log_pods': 5, 'event_limit': 100,
           'dest': str(tmp_path / 'out' / 'case.tar.gz')}
    out.update(kw)
    return out


def extract(path):
    with tarfile.open(path) as tar:
        return dict((m.name, tar.extractfile(m).read().decode()) for m in tar.getmembers())


def test_archive_holds_every_item_and_no_planted_secret(tmp_path):
    core = FakeCore()
    result = diagnostics.run(Connection(core=core, custom=FakeCustom()), params(tmp_path))
    files = extract(result['path'])
    assert sorted(files) == ['case/' + p for p in [
        'clusterpolicies.yaml', 'configmaps/lic-cm.yaml', 'configmaps/mig-cm.yaml', 'events.yaml',
        'logs/mig-manager/nvidia-mig-manager-x_mig.log', 'nodes.yaml', 'pods.yaml', 'summary.txt']]
    assert result['files'] == sorted(files)
    assert not any(PLANTED in text for text in files.values())
    assert result['redacted'] >= 5 and 'Bearer <redacted>' in files['case/logs/mig-manager/nvidia-mig-manager-x_mig.log']
    assert 'a100-0' in files['case/nodes.yaml'] and 'cpu-0' not in files['case/nodes.yaml']
    assert 'e2' in files['case/events.yaml'] and 'e3' not in files['case/events.yaml']
    summary = files['case/summary.txt']
    assert 'nvidiadrivers.yaml: NVIDIADrivers (spec and status), not found' in summary
    assert 'configmaps/dp-cm.yaml: device-plugin ConfigMap gpu-operator/dp-cm, not found' in summary
    assert 'lease.yaml' in summary and 'leases is forbidden' in summary
    assert result['warnings'] == [w for w in result['warnings'] if 'lease.yaml' in w] and len(result['warnings']) == 1
    assert not any('secret' in call[0] for call in core.calls)
    assert ('read_namespaced_pod_log', 'nvidia-mig-manager-x', 'mig', 50) in core.calls
    assert result['changed'] is False
    assert oct(os.stat(result['path']).st_mode & 0o777) == '0o600'


def test_a_log_that_cannot_be_read_is_noted(tmp_path):
    core = FakeCore(log_error=FakeApiError(500, 'Internal Server Error', 'dial tcp 127.0.0.1:10250: connect refused'))
    result = diagnostics.run(Connection(core=core, custom=FakeCustom(drivers_crd=True)), params(tmp_path))
    files = extract(result['path'])
    assert 'case/nvidiadrivers.yaml' in files
    assert not any('/logs/' in name for name in files)
    assert 'connect refused' in files['case/summary.txt']


def test_bad_inputs_fail_before_any_request(tmp_path):
    core = FakeCore()
    with pytest.raises(InputError) as err:
        diagnostics.run(Connection(core=core, custom=FakeCustom()), params(tmp_path, log_lines=0, dest='/tmp/x.zip'))
    assert 'log_lines' in str(err.value) and 'dest' in str(err.value)
    assert core.calls == []
