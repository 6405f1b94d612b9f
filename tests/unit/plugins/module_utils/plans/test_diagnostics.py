# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests for module_utils.plans.diagnostics: which logs, ConfigMaps and events the archive holds,
what of a node and of an object is kept, the input checks and the summary."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.module_utils.common.redact import REDACTED
from ansible_collections.gpuops.gpu.plugins.module_utils.plans import diagnostics as plan

PARAMS = {'operator_namespace': 'gpu-operator', 'log_lines': 10, 'max_log_pods': 1, 'event_limit': 5,
          'dest': '/tmp/x.tar.gz'}


def pod(name, app, ready=True, restarts=0, init=()):
    return {'metadata': {'name': name, 'labels': {'app': app}},
            'spec': {'nodeName': 'n-' + name, 'initContainers': [{'name': i} for i in init],
                     'containers': [{'name': 'main'}]},
            'status': {'conditions': [{'type': 'Ready', 'status': 'True' if ready else 'False'}],
                       'containerStatuses': [{'name': 'main', 'restartCount': restarts}]}}


def test_log_targets_per_component_not_ready_first_previous_when_restarted():
    restarted = pod('dp-b', 'nvidia-device-plugin-daemonset', ready=False, restarts=2, init=['toolkit-validation'])
    pods = [pod('dp-a', 'nvidia-device-plugin-daemonset'), restarted, pod('mm-a', 'nvidia-mig-manager'),
            pod('other', 'something-else')]
    targets = plan.log_targets(pods, 1)
    assert [(t['component'], t['pod'], t['container'], t['previous']) for t in targets] == [
        ('mig-manager', 'mm-a', 'main', False),
        ('device-plugin', 'dp-b', 'toolkit-validation', False),
        ('device-plugin', 'dp-b', 'main', False),
        ('device-plugin', 'dp-b', 'main', True),
    ]
    assert plan.log_path(targets[-1]) == 'logs/device-plugin/dp-b_main.previous.log'
    assert plan.log_targets(pods, 0) == []


def test_config_maps_the_cluster_policy_names():
    policies = [{'spec': {'migManager': {'config': {'name': 'custom-mig-parted-config', 'default': 'all-disabled'}},
                          'devicePlugin': {'config': {'name': 'dp-config'}},
                          'driver': {'licensingConfig': {'configMapName': 'licensing-config', 'nlsEnabled': True}},
                          'dcgmExporter': {'config': {'name': ''}}}},
                {'spec': {'devicePlugin': {'config': {'name': 'dp-config'}}, 'mig': None}}]
    assert plan.config_map_refs(policies) == [('mig-parted', 'custom-mig-parted-config'),
                                              ('device-plugin', 'dp-config'), ('vgpu-licensing', 'licensing-config'),
                                              ('mig-parted', 'default-mig-parted-config')]
    assert plan.config_map_refs([{}]) == [('mig-parted', 'default-mig-parted-config')]
    assert plan.config_map_refs([]) == []


def test_clean_drops_noise_and_redacts():
    obj = {'metadata': {'name': 'x', 'managedFields': [{'manager': 'kubectl'}],
                        'annotations': {plan.LAST_APPLIED: '{"env":[{"name":"A_TOKEN","value":"v"}]}'}},
           'spec': {'env': [{'name': 'A_TOKEN', 'value': 'v'}]}}
    out = plan.clean(obj)
    assert 'managedFields' not in out['metadata']
    assert out['metadata']['annotations'][plan.LAST_APPLIED] == '(left out)'
    assert out['spec']['env'] == [{'name': 'A_TOKEN', 'value': REDACTED}]
    assert obj['metadata']['managedFields'], 'the input is not changed'


def test_node_record():
    node = {'metadata': {'name': 'a100-0', 'labels': {'nvidia.com/gpu.product': 'A100'},
                         'annotations': {'x.io/auth-token': 'secret-value', 'other': 'kept'}},
            'spec': {'unschedulable': True, 'taints': [{'key': 'nvidia.com/gpu', 'effect': 'NoSchedule'}]},
            'status': {'allocatable': {'nvidia.com/gpu': '8'}, 'conditions': [{'type': 'Ready', 'status': 'True'}],
                       'images': ['big list left out']}}
    record = plan.node_record(node)
    assert record['name'] == 'a100-0' and record['unschedulable'] is True
    assert record['annotations'] == {'x.io/auth-token': REDACTED, 'other': 'kept'}
    assert record['taints'] == node['spec']['taints']
    assert record['allocatable'] == {'nvidia.com/gpu': '8'}
    assert 'images' not in record


def test_events_of_the_namespace_and_the_gpu_nodes_newest_kept():
    def event(uid, when, kind='Pod', name='p'):
        return {'metadata': {'uid': uid}, 'lastTimestamp': when, 'involvedObject': {'kind': kind, 'name': name}}
    ns = [event('1', '2026-01-01T00:00:03Z'), event('2', '2026-01-01T00:00:01Z')]
    nodes = [event('3', '2026-01-01T00:00:02Z', 'Node', 'a100-0'), event('4', '2026-01-01T00:00:04Z', 'Node', 'cpu-0'),
             event('1', '2026-01-01T00:00:03Z')]
    assert [e['metadata']['uid'] for e in plan.select_events(ns, nodes, ['a100-0'], 10)] == ['2', '3', '1']
    assert [e['metadata']['uid'] for e in plan.select_events(ns, nodes, ['a100-0'], 2)] == ['3', '1']
    assert plan.select_events(ns, nodes, ['a100-0'], 0) == []


def test_input_errors_all_at_once():
    assert plan.input_errors(PARAMS) == []
    errors = plan.input_errors(dict(PARAMS, operator_namespace='Bad_NS', log_lines=0, max_log_pods=-1,
                                    event_limit='5', dest='/tmp/x.zip'))
    assert len(errors) == 5
    assert any('dest must be the path of the archive' in e and '.tar.gz' in e for e in errors)
    assert any(e.startswith('log_lines must be an integer >= 1') for e in errors)


def test_top_directory_and_summary():
    assert plan.top_directory('/tmp/case-42.tar.gz') == 'case-42'
    assert plan.top_directory('rel/x.tgz') == 'x'
    items = [{'path': 'nodes.yaml', 'what': 'GPU nodes: 2', 'status': 'collected', 'redacted': 3},
             {'path': 'lease.yaml', 'what': 'lock', 'status': 'not found', 'redacted': 0}]
    text = plan.summary_text(['header'], items)
    assert text.splitlines()[:5] == ['header', '', 'Contents (path: what, status):',
                                     '  nodes.yaml: GPU nodes: 2, collected (3 value(s) redacted)',
                                     '  lease.yaml: lock, not found']
    assert plan.redactions(text) == 1
