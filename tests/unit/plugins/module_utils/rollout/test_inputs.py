# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The input checks every rollout module runs before it reads or writes anything (rollout/inputs.py):
durations, poll_interval, names, label mappings, assignments, nodes no GPU change belongs on, and the
batch plan against nodes an admin cordoned. The modules' own paths are in test_mig_and_sharing.py and
test_sharing_kind.py; the proof on a cluster in tests/integration/test_bad_input.py."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.common.errors import InputError
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout import inputs
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.inputs import (
    MAX_SECONDS, assignment_errors, labels_errors, node_errors, option_errors, plan_errors, refuse,
    resolve_assignments)

GOOD = {'operator_namespace': 'gpu-operator', 'cluster_policy': None, 'config_map': None, 'pod_selector': None,
        'state_timeout': 600, 'reboot_timeout': 1800, 'verify_timeout': 180, 'api_timeout': 300,
        'drain_timeout': 300, 'grace_period': None, 'poll_interval': 1.0}


def errors_of(**changes):
    return option_errors(dict(GOOD, **changes))


class TestOptions(object):
    def test_defaults_pass(self):
        assert option_errors(GOOD) == []

    @pytest.mark.parametrize('key,value', [
        ('state_timeout', 0), ('state_timeout', -5), ('reboot_timeout', 0), ('verify_timeout', -1),
        ('api_timeout', 0), ('drain_timeout', -1), ('grace_period', -1), ('state_timeout', 10 ** 12),
        ('verify_timeout', MAX_SECONDS + 1), ('grace_period', 2 ** 63)])
    def test_durations_out_of_range(self, key, value):
        assert errors_of(**{key: value}) == ['%s must be between %d and %d seconds (one week), got %s'
                                             % (key, 0 if key in ('drain_timeout', 'grace_period') else 1,
                                                MAX_SECONDS, value)]

    @pytest.mark.parametrize('key,value', [('drain_timeout', 0), ('grace_period', 0), ('state_timeout', 1),
                                           ('api_timeout', MAX_SECONDS)])
    def test_duration_bounds_are_inclusive(self, key, value):
        assert errors_of(**{key: value}) == []

    @pytest.mark.parametrize('value', [0, -1, 0.05, 301, 1e9, float('nan'), float('inf')])
    def test_poll_interval_out_of_range(self, value):
        assert errors_of(poll_interval=value) == ['poll_interval must be between 0.1 and 300.0 seconds, got %s' % value]

    @pytest.mark.parametrize('value', [0.1, 0.3, 300])
    def test_poll_interval_in_range(self, value):
        assert errors_of(poll_interval=value) == []

    @pytest.mark.parametrize('value', ['', 'GPU Operator', 'n\u00e4mespace', 'a' * 64, 'gpu.operator', None])
    def test_operator_namespace_must_be_a_namespace_name(self, value):
        errors = errors_of(operator_namespace=value)
        assert len(errors) == 1 and errors[0].startswith("operator_namespace '%s' is not a namespace name" % value)
        assert 'e.g. nvidia-gpu-operator' in errors[0]

    @pytest.mark.parametrize('key', ['cluster_policy', 'config_map'])
    def test_object_names(self, key):
        assert errors_of(**{key: 'My Policy'}) == [
            "%s 'My Policy' is not a Kubernetes object name (lowercase letters, digits, '-' and '.')" % key]
        assert errors_of(**{key: ''}) == [] and errors_of(**{key: 'gpu-cluster-policy'}) == []

    @pytest.mark.parametrize('name', ['default-mig-parted-config', 'default-gpu-clients', 'kube-root-ca.crt',
                                      'nvidia-device-plugin-entrypoint', 'nvidia-mig-manager-entrypoint'])
    def test_config_map_never_names_an_operator_configmap(self, name):
        [error] = errors_of(config_map=name)
        assert error.startswith("config_map: ConfigMap '%s' belongs to " % name)
        assert error.endswith('or leave config_map unset to read the one the ClusterPolicy names')

    def test_pod_selector(self):
        assert errors_of(pod_selector={'app': 'trainer'}) == []
        assert errors_of(pod_selector={'app': ['a', 'b']}) == [
            'pod_selector.app: must be a string, got list (quote it in YAML)']
        assert errors_of(pod_selector=['app=a']) == ['pod_selector must be a mapping of label keys to values, got list']

    def test_restart_pod_selector_is_parsed(self):
        assert errors_of(restart_pod_selector='app=nvidia-device-plugin-daemonset') == []
        errors = errors_of(restart_pod_selector='app in (')
        assert len(errors) == 1 and errors[0].startswith("restart_pod_selector: cannot parse label selector 'app in ('")


class TestLabels(object):
    def test_a_comma_is_never_two_requirements(self):
        assert labels_errors({'pool': 'a,b'}, 'assignments[0].selector') == [
            "assignments[0].selector.pool: 'a,b' must be at most 63 characters of [A-Za-z0-9-_.], starting and ending "
            "with a letter or digit (one value per key: for several, use label_selector 'pool in (a,b)')"]

    @pytest.mark.parametrize('labels,fragment', [
        ({'bad key!': 'x'}, "key 'bad key!' name 'bad key!' must be"), ({'pool': True}, 'got boolean (quote it'),
        ({'pool': None}, 'got null'), ({'pool': '\u00e4'}, "'\u00e4' must be"), ({'pool': 'x' * 64}, 'at most 63')])
    def test_invalid(self, labels, fragment):
        errors = labels_errors(labels, 'selector')
        assert len(errors) == 1 and fragment in errors[0], errors


NODES = {
    'gpu-0': {'metadata': {'name': 'gpu-0', 'labels': {'nvidia.com/gpu.present': 'true', 'pool': 'a'}}},
    'gpu-1': {'metadata': {'name': 'gpu-1', 'labels': {'nvidia.com/gpu.present': 'true', 'pool': 'a'}}},
    'cp-0': {'metadata': {'name': 'cp-0', 'labels': {'node-role.kubernetes.io/control-plane': '', 'pool': 'a'}}},
    'master-0': {'metadata': {'name': 'master-0', 'labels': {'node-role.kubernetes.io/master': ''}}},
    'cpu-0': {'metadata': {'name': 'cpu-0', 'labels': {}}},
    'sno-0': {'metadata': {'name': 'sno-0', 'labels': {'node-role.kubernetes.io/control-plane': '',
                                                       'nvidia.com/gpu.present': 'true'}}},
}


class TestAssignments(object):
    def test_empty(self):
        assert assignment_errors([], 'config') == [
            'assignments is empty: give at least one item with nodes, label_selector or selector, and its config']

    def test_value_must_be_a_label_value(self):
        errors = assignment_errors([{'nodes': ['gpu-0'], 'profile': 'time sliced'}], 'profile')
        assert errors == ["assignments[0].profile: 'time sliced' must be at most 63 characters of [A-Za-z0-9-_.], "
                          "starting and ending with a letter or digit (it becomes a node label value)"]

    @pytest.mark.parametrize('value', ['all-1g.5gb', 'none', 'default', 'yes', '0o17', None, ''])
    def test_valid_or_left_to_resolve(self, value):
        assert assignment_errors([{'nodes': ['gpu-0'], 'config': value}], 'config') == []

    def test_a_node_named_twice(self):
        errors = assignment_errors([{'nodes': ['gpu-0', 'gpu-0'], 'config': 'a'},
                                    {'nodes': ['gpu-1'], 'config': 'a'}, {'nodes': ['gpu-1'], 'config': 'a'}], 'config')
        assert errors == [
            "node 'gpu-0' is named twice (assignments[0].nodes and assignments[0].nodes): name each node once",
            "node 'gpu-1' is named twice (assignments[1].nodes and assignments[2].nodes): name each node once"]

    def test_a_node_named_for_two_values_is_left_to_resolve(self):
        assert assignment_errors([{'nodes': ['gpu-0'], 'config': 'a'}, {'nodes': ['gpu-0'], 'config': 'b'}],
                                 'config') == []

    def test_resolve_refuses_a_comma_in_a_selector_value(self):
        out, errors = resolve_assignments([{'selector': {'pool': 'a,b'}, 'config': 'x'}], NODES, 'config')
        assert out == {} and len(errors) == 1 and "label_selector 'pool in (a,b)'" in errors[0]

    def test_resolve_refuses_a_list_selector_value(self):
        out, errors = resolve_assignments([{'selector': {'pool': ['a']}, 'config': 'x'}], NODES, 'config')
        assert out == {} and errors == ['assignments[0].selector.pool: must be a string, got list (quote it in YAML)']


class TestNodes(object):
    def test_gpu_nodes_pass(self):
        assert node_errors(NODES, ['gpu-0', 'gpu-1', 'sno-0']) == []

    def test_control_plane_and_cpu_nodes_are_refused(self):
        errors = node_errors(NODES, ['cp-0', 'cpu-0', 'master-0'])
        assert [e.split(' without')[0] for e in errors] == [
            'node cp-0 is a control-plane node (label node-role.kubernetes.io/control-plane)', 'node cpu-0 is a node',
            'node master-0 is a control-plane node (label node-role.kubernetes.io/master)']
        assert all('narrow the selector' in e for e in errors)


class _Planner(object):
    def __init__(self, exc=None):
        self.exc = exc

    def plan(self, assignments, nodes):
        if self.exc:
            raise self.exc
        return {}, []


class TestPlanAndRefuse(object):
    def test_plan_errors(self):
        assert plan_errors(_Planner(), {}, {}) == []
        assert plan_errors(_Planner(ValueError('uncordon them')), {}, {}) == ['uncordon them']

    def test_admin_cordoned_node_at_target_is_an_input_error(self):
        from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.engine import NodeRollout

        class Kind(object):
            label = 'l'

            def at_target(self, node, value):
                return node['metadata']['name'] == 'gpu-1'
        nodes = dict((n, dict(NODES[n], spec={'unschedulable': n == 'gpu-1'})) for n in ('gpu-0', 'gpu-1'))
        rollout = NodeRollout(None, Kind(), {'max_unavailable': 1})
        errors = plan_errors(rollout, {'gpu-0': 'x', 'gpu-1': 'x'}, nodes)
        assert len(errors) == 1 and 'already unavailable (gpu-1: cordoned' in errors[0]
        assert 'uncordon them (kubectl uncordon) or raise max_unavailable' in errors[0]

    def test_refuse(self):
        refuse([])
        with pytest.raises(InputError) as exc:
            refuse(['a', 'b'])
        assert str(exc.value) == inputs.REFUSED + 'a | b'


class TestInlineProfilesAgainstTheConfigMap(object):
    """sharing_rollout outside check mode: the device plugin reads the ConfigMap, never ``profiles``."""

    TEXTS = {'ts-4': 'version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n'}

    def test_same_content_passes_whatever_its_spelling(self):
        from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.sharing import stale_profile_errors
        written = {'ts-4': "{version: v1, sharing: {timeSlicing: {resources: [{name: 'nvidia.com/gpu', replicas: 4}]}}}",
                   'other': 'version: v1'}
        assert stale_profile_errors(self.TEXTS, written, 'ns/cm') == []

    def test_missing_different_and_absent(self):
        from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.sharing import stale_profile_errors
        texts = dict(self.TEXTS, unshared='version: v1')
        errors = stale_profile_errors(texts, {'ts-4': self.TEXTS['ts-4'].replace('4\n', '8\n')}, 'ns/cm')
        assert [e.split(', which')[0] for e in errors] == [
            'profiles unshared are missing from the device-plugin ConfigMap ns/cm',
            'profiles ts-4 differ from the device-plugin ConfigMap ns/cm']
        assert all('or run in check mode to plan' in e for e in errors)
        assert stale_profile_errors(texts, None, 'ns/cm') == [
            'profiles are given but the device-plugin ConfigMap ns/cm does not exist, and the device plugin reads only '
            'the ConfigMap: write it first (the gpuops.gpu.sharing role does), or run in check mode to plan']


class TestModulesRefuseBeforeReading(object):
    """The run() of both modules: option and assignment errors before any API call; control-plane and
    NotReady nodes among the reasons before any write (FakeConn fails the test on a write)."""

    def conn(self, nodes=None):
        from ansible_collections.gpuops.gpu.plugins.module_utils.k8s.client import Connection
        from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.rollout import sharing_fakes as tsk
        fake = tsk.FakeConn(nodes or tsk.NODES, tsk.policy(), tsk.render_profiles(tsk.PROFILES))
        return Connection(core=fake, custom=fake, policy=fake)

    def run(self, conn, **changes):
        from ansible_collections.gpuops.gpu.plugins.module_utils.rollout import sharing
        from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.rollout.sharing_fakes import PARAMS
        params = dict(PARAMS, assignments=[{'nodes': ['t4-0'], 'profile': 'ts-4'}])
        params.update(changes)
        with pytest.raises(InputError) as exc:
            sharing.run(conn, params, check_mode=False)
        return str(exc.value)

    def test_options_before_any_api_call(self):
        class NoApi(object):
            def __getattr__(self, name):
                raise AssertionError('API call %s before the options were checked' % name)
        msg = self.run(NoApi(), state_timeout=0, operator_namespace='', assignments=[])
        assert msg.startswith(inputs.REFUSED) and 'state_timeout must be' in msg and 'operator_namespace' in msg
        assert 'assignments is empty' in msg

    def test_control_plane_and_not_ready_nodes(self):
        from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.rollout import sharing_fakes as tsk
        nodes = dict(tsk.NODES)
        nodes['cp-0'] = {'metadata': {'name': 'cp-0', 'labels': {'node-role.kubernetes.io/master': ''}},
                         'spec': {}, 'status': {}}
        down = dict(nodes['t4-0'], status=dict(nodes['t4-0']['status'], conditions=[
            {'type': 'Ready', 'status': 'Unknown', 'reason': 'NodeStatusUnknown'}]))
        nodes['t4-0'] = down
        msg = self.run(self.conn(nodes), assignments=[{'nodes': ['t4-0', 'cp-0'], 'profile': 'ts-4'}])
        assert 'node cp-0 is a control-plane node (label node-role.kubernetes.io/master)' in msg
        assert 'node t4-0 is NotReady (Ready=Unknown: NodeStatusUnknown)' in msg


class TestMemo(object):
    def test_computed_once_per_distinct_key(self):
        memo, calls = inputs.Memo(), []

        def square(x):
            calls.append(x)
            return {'x': x * x}
        assert [memo.get(('sq', x), square, x)['x'] for x in (2, 3, 2, 2, 3)] == [4, 9, 4, 4, 9]
        assert calls == [2, 3] and memo.computed == 2

    @pytest.mark.parametrize('error, computed', [
        (ValueError('no such config'), 1),  # remembered, and raised again each time
        (KeyError('x'), 3),  # other errors are not remembered
    ], ids=['value-error-remembered', 'other-error-not-remembered'])
    def test_errors(self, error, computed):
        memo, calls = inputs.Memo(), []

        def failing():
            calls.append(1)
            raise error
        for _i in range(3):
            with pytest.raises(type(error)) as raised:
                memo.get('k', failing)
            assert raised.value.args == error.args
        assert len(calls) == computed

    def test_callers_get_copies(self):
        memo = inputs.Memo()
        memo.get('d', dict, {'a': 1})['a'] = 2
        memo.get('l', list, [1]).append(2)
        assert memo.get('d', dict, {}) == {'a': 1} and memo.get('l', list, []) == [1]
