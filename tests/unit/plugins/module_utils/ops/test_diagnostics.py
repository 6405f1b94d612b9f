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
from ansible_collections.gpuops.gpu.plugins.module_utils.k8s.errors import InputError
from ansible_collections.gpuops.gpu.plugins.module_utils.ops import diagnostics
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.gpu_cluster_data import FakeApiError

PLANTED = 'pl4nted-t0ken-value'
NS = 'gpu-operator'
POLICY = {'metadata': {'name': 'gpu-cluster-policy', 'managedFields': [{}]}, 'status': {'state': 'ready'},
          'spec': {'migManager': {'config': {'name': 'mig-cm'}}, 'devicePlugin': {'config': {'name': 'dp-cm'}},
                   'driver': {'licensingConfig': {'configMapName': 'lic-cm'}}}}
GPU_NODE = {'metadata': {'name': 'a100-0', 'labels': {'nvidia.com/gpu.present': 'true'},
                         'annotations': {'example.com/api-token': PLANTED}}, 'spec': {}, 'status': {}}
CPU_NODE = {'metadata': {'name': 'cpu-0', 'labels': {}}, 'spec': {}, 'status': {}}
POD = {'metadata': {'name': 'nvidia-mig-manager-x', 'labels': {'app': 'nvidia-mig-manager'}},
       'spec': {'nodeName': 'a100-0', 'containers': [{'name': 'mig', 'env': [{'name': 'SOME_TOKEN', 'value': PLANTED}]}]},
       'status': {}}


class Raw(object):
    def __init__(self, data):
        self.data = data


class FakeCore(object):
    def __init__(self, log_error=None):
        self.calls = []
        self.log_error = log_error

    def _seen(self, name, *args):
        self.calls.append((name,) + args)

    def list_node(self, **kw):
        self._seen('list_node')
        return {'items': [GPU_NODE, CPU_NODE]}

    def list_namespaced_pod(self, namespace, **kw):
        self._seen('list_namespaced_pod', namespace)
        return {'items': [POD]}

    def read_namespaced_pod_log(self, name, namespace, **kw):
        self._seen('read_namespaced_pod_log', name, kw['container'], kw['tail_lines'])
        if self.log_error:
            raise self.log_error
        return Raw(('I1124 started\nGET with Authorization: Bearer %s\n' % PLANTED).encode())

    def list_namespaced_event(self, namespace, **kw):
        self._seen('list_namespaced_event', namespace)
        return {'items': [{'metadata': {'uid': 'e1'}, 'message': 'token=%s' % PLANTED, 'involvedObject': {}}]}

    def list_event_for_all_namespaces(self, **kw):
        self._seen('list_event_for_all_namespaces', kw.get('field_selector'))
        return {'items': [{'metadata': {'uid': 'e2'}, 'involvedObject': {'kind': 'Node', 'name': 'a100-0'}},
                          {'metadata': {'uid': 'e3'}, 'involvedObject': {'kind': 'Node', 'name': 'cpu-0'}}]}

    def read_namespaced_config_map(self, name, namespace, **kw):
        self._seen('read_namespaced_config_map', name)
        if name == 'dp-cm':
            raise FakeApiError(404, 'Not Found')
        data = {'client_configuration_token.tok': PLANTED} if name == 'lic-cm' else {'config.yaml': 'version: v1'}
        return {'metadata': {'name': name}, 'data': data}


class FakeCustom(object):
    def __init__(self, drivers_crd=False):
        self.drivers_crd = drivers_crd

    def list_cluster_custom_object(self, group, version, plural, **kw):
        if plural == 'nvidiadrivers' and not self.drivers_crd:
            raise FakeApiError(404, 'Not Found')
        return {'items': [POLICY] if plural == 'clusterpolicies' else []}

    def get_namespaced_custom_object(self, group, version, namespace, plural, name, **kw):
        raise FakeApiError(403, 'Forbidden', 'leases is forbidden')


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
