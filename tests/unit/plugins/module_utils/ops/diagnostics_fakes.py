# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A fake API holding a planted secret in every place diagnostics reads, shared by the tests of
ops/diagnostics.py and the gpu_diagnostics module."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.gpu_cluster_data import FakeApiError


PLANTED = 'pl4nted-t0ken-value'


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
