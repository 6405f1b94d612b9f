# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""rollout/gpu_health.py against the in-memory API: what check mode reads, what quarantine and return write."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import time

import pytest

pytest.importorskip('kubernetes')

from ansible_collections.gpuops.gpu.plugins.module_utils.common.errors import GpuOpsError, InputError  # noqa: E402
from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import ANN_GPU_HEALTH  # noqa: E402
from ansible_collections.gpuops.gpu.plugins.module_utils.k8s.client import Connection  # noqa: E402
from ansible_collections.gpuops.gpu.plugins.module_utils.common.lease import lock_info  # noqa: E402
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.gpu_health import run  # noqa: E402
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.lock import LockBusy, LockLost, RolloutLock  # noqa: E402
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.rollout.fake_api import (  # noqa: E402
    FakeApi, Resp, api_error, gpu_pod, node)
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.ops import prometheus_fakes  # noqa: E402
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.ops.prometheus_fakes import closed_port  # noqa: E402

server = prometheus_fakes.server  # the fixture


NS = 'gpu-operator'
LEASE = (NS, 'gpuops-gpu-rollout')


def gpu_node(name, alloc=8):
    out = node(name, labels={'nvidia.com/gpu.present': 'true'})
    out['metadata']['resourceVersion'] = '1'
    out['status'] = {'capacity': {'nvidia.com/gpu': '8'}, 'allocatable': {'nvidia.com/gpu': str(alloc)}}
    return out


def params(**kw):
    base = {'policy': 'quarantine', 'label_selector': 'nvidia.com/gpu.present=true', 'nodes': [],
            'window_minutes': 0, 'event_reasons': ['XidCriticalError'], 'taint': False, 'drain': True,
            'pod_selector': None, 'drain_timeout': 5, 'grace_period': None, 'force': False, 'max_nodes': 5,
            'poll_interval': 0.01, 'lock_timeout': 0, 'lock_duration': 120, 'lock_holder': None,
            'lock_namespace': None, 'operator_namespace': NS, 'prometheus_url': None, 'prometheus_token': None,
            'prometheus_username': None, 'prometheus_password': None, 'prometheus_validate_certs': True,
            'prometheus_ca_cert': None, 'prometheus_client_cert': None, 'prometheus_client_key': None,
            'prometheus_timeout': 10, 'prometheus_node_label': 'Hostname', 'ignored_xids': [13, 31, 43, 45, 68, 109],
            'dra_device_taints': False, 'dra_taint_effect': 'NoSchedule'}
    base.update(kw)
    return base


def cluster(blocked=()):
    api = FakeApi([gpu_node('bad', alloc=7), gpu_node('good')], [gpu_pod('train', 'bad'), gpu_pod('serve', 'good')],
                  blocked=blocked)
    return api, Connection(core=api, policy=api, custom=api)


def test_check_mode_plans_the_bad_node_and_writes_nothing():
    api, conn = cluster()
    result = run(conn, params(), True)
    assert result['changed'] and result['unhealthy'] == ['bad'] and api.writes() == []
    assert [(a['node'], a['would_evict']) for a in result['actions']] == [('bad', ['ml/train'])]
    assert list(result['diff']['after']) == ['bad']


def test_quarantine_then_nothing_then_return_after_the_repair():
    api, conn = cluster()
    result = run(conn, params(), False)
    assert result['changed'] and result['evicted'] == {'bad': ['ml/train']}
    assert [name for name, _body in api.patches] == ['bad']
    assert api.nodes['bad']['spec']['unschedulable'] is True and not api.nodes['good']['spec']
    assert json.loads(api.nodes['bad']['metadata']['annotations'][ANN_GPU_HEALTH])['state'] == 'quarantined'
    assert ('bad', 'GpuopsGpuHealth') in api.events
    writes = len(api.writes())
    assert not run(conn, params(), False)['changed'] and len(api.writes()) == writes
    assert run(conn, params(policy='return'), False)['actions'] == []          # still broken
    api.nodes['bad']['status']['allocatable']['nvidia.com/gpu'] = '8'            # repaired
    back = run(conn, params(policy='return'), False)
    assert back['changed'] and 'unschedulable' not in api.nodes['bad']['spec']
    assert [p for p in api.pods if p['metadata']['name'] == 'serve']


def test_a_blocked_eviction_fails_the_node_after_the_timeout():
    api, conn = cluster(blocked=['train'])
    with pytest.raises(GpuOpsError, match='could not move the GPU pods off bad: eviction of ml/train blocked'):
        run(conn, params(drain_timeout=0), False)


@pytest.mark.parametrize('kw, words', [
    ({'drain_timeout': -1}, 'drain_timeout must be >= 0'),
    ({'window_minutes': -5}, 'window_minutes must be a whole number >= 0'),
    ({'nodes': ['nope']}, 'node.s. nope: not found'),
    ({'max_nodes': 1, 'nodes': []}, None),
])
def test_bad_input_is_refused_before_any_write(kw, words):
    api, conn = cluster()
    if words is None:  # one node to quarantine, max_nodes 1: allowed
        assert run(conn, params(**kw), True)['unhealthy'] == ['bad']
        return
    with pytest.raises(InputError, match=words):
        run(conn, params(**kw), False)
    assert api.writes() == []


def other_run(api, purpose='mig_rollout of 2 node(s)'):
    """Another run (a MIG rollout) holds the rollout lock now."""
    lock = RolloutLock(Connection(core=api, custom=api), NS, holder='mig-run-7',
                       info=lock_info(purpose, ['a100-0', 'a100-1'], who='ops@ctl pid 7'))
    lock.acquire()
    return lock


def test_the_lock_is_held_while_the_node_is_quarantined_and_drained_and_released_after():
    api, conn = cluster()
    seen = []
    patch, evict = api.patch_node, api.create_namespaced_pod_eviction

    def patch_node(name, body, **kwargs):
        seen.append(('patch', api.leases.get(LEASE, {}).get('metadata', {}).get('annotations', {})))
        return patch(name, body, **kwargs)

    def eviction(name, namespace, body, **kwargs):
        seen.append(('evict', api.leases.get(LEASE, {}).get('metadata', {}).get('annotations', {})))
        return evict(name, namespace, body, **kwargs)
    api.patch_node, api.create_namespaced_pod_eviction = patch_node, eviction
    assert run(conn, params(), False)['changed']
    assert [what for what, _ann in seen] == ['patch', 'evict']
    assert all(ann.get('gpuops.gpu/lock-purpose') == 'gpu_health quarantine of 1 node(s)' and
               ann.get('gpuops.gpu/lock-nodes') == 'bad' for _what, ann in seen), seen
    assert LEASE not in api.leases, 'released'


def test_another_run_holding_the_lock_refuses_before_any_write_naming_its_purpose():
    api, conn = cluster()
    other_run(api)
    version = api.leases[LEASE]['metadata']['resourceVersion']
    with pytest.raises(LockBusy) as info:
        run(conn, params(), False)
    for words in ('holds the rollout lock', 'mig_rollout of 2 node(s)', 'ops@ctl pid 7', 'mig-run-7',
                  'nothing was changed', 'lock_timeout'):
        assert words in str(info.value), str(info.value)
    assert info.value.changed is False
    assert api.patches == [] and api.evicted == [] and api.leases[LEASE]['metadata']['resourceVersion'] == version


def test_check_mode_reports_the_lock_and_never_takes_it():
    api, conn = cluster()
    result = run(conn, params(), True)
    assert result['lock']['state'] == 'free' and result['lock']['lease'] == '%s/%s' % LEASE
    assert api.leases == {}
    other_run(api)
    held = run(conn, params(), True)
    assert held['lock']['state'] == 'held' and held['lock']['purpose'] == 'mig_rollout of 2 node(s)'
    assert any('a real run would wait' in w for w in held['warnings'])
    assert api.patches == [] and api.leases[LEASE]['spec']['holderIdentity'] == 'mig-run-7'


def test_nothing_to_write_takes_no_lock_even_while_another_run_holds_it():
    api, conn = cluster()
    run(conn, params(), False)           # quarantined and drained
    other_run(api)
    again = run(conn, params(), False)   # nothing left to do: no lock needed, no refusal
    assert not again['changed'] and api.leases[LEASE]['spec']['holderIdentity'] == 'mig-run-7'


def test_the_return_also_takes_the_lock():
    api, conn = cluster()
    run(conn, params(), False)
    api.nodes['bad']['status']['allocatable']['nvidia.com/gpu'] = '8'
    other_run(api, 'sharing_rollout of 1 node(s)')
    with pytest.raises(LockBusy, match='sharing_rollout of 1 node'):
        run(conn, params(policy='return'), False)
    assert api.nodes['bad']['spec']['unschedulable'] is True


def test_under_a_lock_the_play_took_the_run_joins_it_and_leaves_it():
    api, conn = cluster()
    holder = RolloutLock(Connection(core=api, custom=api), NS, holder='role-run-1',
                         info=lock_info('gpu_health role', ['bad']))
    holder.acquire()
    assert run(conn, params(lock_holder='role-run-1'), False)['changed']
    assert api.leases[LEASE]['spec']['holderIdentity'] == 'role-run-1', 'a joined lock stays'
    api.nodes['bad']['status']['allocatable']['nvidia.com/gpu'] = '8'
    with pytest.raises(LockBusy, match='lock_holder someone-else does not hold the rollout lock'):
        run(conn, params(lock_holder='someone-else', policy='return'), False)


def test_a_run_whose_lease_was_taken_over_writes_nothing_more(monkeypatch):
    """After the node patch the run is frozen past its lease (its clocks jump 45 s) and another run takes the
    lock over: the eviction that would follow finds that out first."""
    api, conn = cluster()
    made = []
    original = RolloutLock.for_rollout
    monkeypatch.setattr(RolloutLock, 'for_rollout', classmethod(
        lambda cls, *a, **kw: made.append(original(*a, **kw)) or made[-1]))
    patch = api.patch_node

    def patch_node(name, body, **kwargs):
        answer = patch(name, body, **kwargs)
        lock = made[-1]
        later = time.time() + 45
        lock.clock, lock.monotonic = (lambda: later), (lambda: time.monotonic() + 45)
        RolloutLock(Connection(core=api, custom=api), NS, holder='mig-run-7', clock=lambda: later,
                    info=lock_info('mig_rollout of 1 node(s)', ['bad'], who='ops@ctl pid 7')).acquire()
        return answer
    api.patch_node = patch_node
    with pytest.raises(LockLost, match='no longer held by this run.*mig-run-7') as info:
        run(conn, params(lock_duration=30), False)
    assert api.evicted == [], 'no eviction after the takeover'
    assert [a['node'] for a in info.value.result['actions']] == ['bad'] and info.value.result['changed']


@pytest.mark.parametrize('kw, words', [
    ({'lock_timeout': -1}, 'lock_timeout must be between 0 and 604800'),
    ({'lock_duration': 5}, 'lock_duration must be between 10 and'),
])
def test_bad_lock_settings_are_refused_before_any_read(kw, words):
    api, conn = cluster()
    with pytest.raises(InputError, match=words):
        run(conn, params(**kw), False)
    assert api.writes() == []


def test_the_lease_lives_where_the_operator_runs():
    api, conn = cluster()
    api.policies = [{'metadata': {'name': 'cluster-policy'}, 'status': {'namespace': 'nvidia-gpu-operator'}}]
    seen = []
    patch = api.patch_node
    api.patch_node = lambda name, body, **kw: (seen.append(sorted(api.leases)), patch(name, body, **kw))[1]
    started = time.time()
    run(conn, params(), False)
    assert seen[0] == [('nvidia-gpu-operator', 'gpuops-gpu-rollout')] and time.time() - started < 10


def xid_answer(*series):
    return {'status': 'success', 'data': {'resultType': 'vector', 'result': [
        {'metric': {'Hostname': n, 'gpu': str(g), 'UUID': 'GPU-%s-%d' % (n, g)}, 'value': [0, str(x)]}
        for n, g, x in series]}}


def prometheus_at(server, answer):
    return server({'/api/v1/query': lambda q, h: (200, 'application/json', json.dumps(answer))}).url


def test_a_gpu_reporting_an_xid_to_dcgm_quarantines_its_node_and_holds_its_return(server):
    api = FakeApi([gpu_node('bad'), gpu_node('good'), gpu_node('dark')], [gpu_pod('train', 'bad')])
    conn = Connection(core=api, policy=api, custom=api)
    url = prometheus_at(server, xid_answer(('bad', 3, 79), ('good', 0, 13), ('good', 1, 0)))
    plan = run(conn, params(prometheus_url=url), True)
    assert plan['unhealthy'] == ['bad'] and plan['actions'][0]['reason'] == 'DCGM: GPU 3 (GPU-bad-3) last XID 79'
    assert plan['dcgm']['reporting'] == ['bad', 'good'] and plan['dcgm']['missing'] == ['dark']
    assert plan['dcgm']['query'].startswith('max by (Hostname, gpu, UUID) (label_replace(DCGM_FI_DEV_XID_ERRORS')
    assert any('no DCGM_FI_DEV_XID_ERRORS series in Prometheus for GPU node(s) dark' in w for w in plan['warnings'])
    assert run(conn, params(prometheus_url=url), False)['evicted'] == {'bad': ['ml/train']}
    assert run(conn, params(prometheus_url=url, policy='return'), False)['actions'] == [], 'XID still reported'
    clear = prometheus_at(server, xid_answer(('bad', 3, 0), ('good', 0, 0)))
    assert [a['node'] for a in run(conn, params(prometheus_url=clear, policy='return'), False)['actions']] == ['bad']


def test_a_prometheus_url_that_does_not_answer_or_is_not_prometheus_is_refused_before_any_write(server):
    api, conn = cluster()
    dead = 'http://127.0.0.1:%d' % closed_port()
    with pytest.raises(InputError, match='prometheus_url %s: does not answer' % dead):
        run(conn, params(prometheus_url=dead), False)
    page = server({'/api/v1/query': lambda q, h: (200, 'text/html', '<html>Grafana</html>')}).url
    with pytest.raises(InputError, match='not the Prometheus HTTP API'):
        run(conn, params(prometheus_url=page), False)
    matrix = prometheus_at(server, {'status': 'success', 'data': {'resultType': 'matrix', 'result': []}})
    with pytest.raises(InputError, match='not an instant vector; nothing was changed'):
        run(conn, params(prometheus_url=matrix), False)
    with pytest.raises(InputError, match='ignored_xids must be a list of XID codes'):
        run(conn, params(ignored_xids=[0]), False)
    assert api.writes() == []


class DraApi(FakeApi):
    """The fake API with NVIDIA's DRA driver's ResourceSlices and the DeviceTaintRule API at ``served`` versions."""

    def __init__(self, nodes, pods=(), slices=(), served=('v1beta2',)):
        super(DraApi, self).__init__(nodes, pods)
        self.slices, self.served, self.rules, self.rule_writes = list(slices), served, {}, []

    def list_cluster_custom_object(self, group, version, plural, **kwargs):
        if plural == 'resourceslices':
            return Resp({'items': self.slices})
        if plural == 'devicetaintrules':
            if version not in self.served:
                raise api_error(404, 'Not Found')
            return Resp({'items': list(self.rules.values())})
        return super(DraApi, self).list_cluster_custom_object(group, version, plural, **kwargs)

    def get_cluster_custom_object(self, group, version, plural, name, **kwargs):
        if plural != 'devicetaintrules':
            return super(DraApi, self).get_cluster_custom_object(group, version, plural, name, **kwargs)
        if name not in self.rules:
            raise api_error(404, 'Not Found')
        return Resp(self.rules[name])

    def create_cluster_custom_object(self, group, version, plural, body, **kwargs):
        self.rule_writes.append(('create', body['metadata']['name']))
        self.rules[body['metadata']['name']] = dict(body, metadata=dict(body['metadata'], resourceVersion='1'))
        return Resp(body)

    def delete_cluster_custom_object(self, group, version, plural, name, **kwargs):
        self.rule_writes.append(('delete', name))
        if self.rules.pop(name, None) is None:
            raise api_error(404, 'Not Found')
        return Resp({})


def dra_cluster(served=('v1beta2',)):
    bad = gpu_node('bad')
    slices = [{'spec': {'driver': 'gpu.nvidia.com', 'nodeName': 'bad', 'pool': {'name': 'bad', 'generation': 1},
                        'devices': [{'name': 'gpu-%d' % i, 'attributes': {'uuid': {'string': 'GPU-bad-%d' % i}}}
                                    for i in range(2)]}}]
    api = DraApi([bad, gpu_node('good')], [gpu_pod('train', 'bad')], slices, served)
    return api, Connection(core=api, policy=api, custom=api)


def test_dra_device_taints_quarantine_the_bad_device_alone_and_the_return_removes_its_rule(server):
    api, conn = dra_cluster()
    url = prometheus_at(server, xid_answer(('bad', 1, 79), ('bad', 0, 0), ('good', 0, 0)))
    plan = run(conn, params(prometheus_url=url, dra_device_taints=True), True)
    [action] = plan['actions']
    assert (action['mode'], action['device_taint_rules']) == ('devices', ['gpuops-gpu-health-bad-gpu-1'])
    assert action['would_evict'] == [] and plan['devices'] == ['bad'] and api.writes() == [] and api.rules == {}
    applied = run(conn, params(prometheus_url=url, dra_device_taints=True), False)
    assert applied['changed'] and applied['evicted'] == {} and api.evicted == [], 'no drain'
    assert api.rule_writes == [('create', 'gpuops-gpu-health-bad-gpu-1')]
    assert api.rules['gpuops-gpu-health-bad-gpu-1']['spec']['deviceSelector'] == {
        'driver': 'gpu.nvidia.com', 'pool': 'bad', 'device': 'gpu-1'}
    assert not api.nodes['bad']['spec'].get('unschedulable')
    assert json.loads(api.nodes['bad']['metadata']['annotations'][ANN_GPU_HEALTH])['devices'] == ['gpu-1']
    assert not run(conn, params(prometheus_url=url, dra_device_taints=True), False)['changed']
    clear = prometheus_at(server, xid_answer(('bad', 1, 0), ('good', 0, 0)))
    back = run(conn, params(prometheus_url=clear, dra_device_taints=True, policy='return'), False)
    assert back['actions'][0]['deleted_device_taint_rules'] == ['gpuops-gpu-health-bad-gpu-1'] and api.rules == {}


def test_dra_device_taints_without_the_devicetaintrule_api_is_refused_before_any_write():
    api, conn = dra_cluster(served=())
    with pytest.raises(InputError, match='dra_device_taints needs the DeviceTaintRule API .*DRADeviceTaintRules'):
        run(conn, params(dra_device_taints=True), False)
    assert api.writes() == [] and api.rule_writes == []
    api, conn = dra_cluster(served=('v1alpha3',))
    assert run(conn, params(dra_device_taints=True, dra_taint_effect='NoExecute'), True)['unhealthy'] == []
    with pytest.raises(InputError, match='dra_taint_effect must be one of NoSchedule, NoExecute'):
        run(conn, params(dra_taint_effect='PreferNoSchedule'), False)
