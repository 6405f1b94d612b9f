# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""rollout/gpu_health.py against the in-memory API: what check mode reads, what quarantine and return write."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json

import pytest

pytest.importorskip('kubernetes')

from ansible_collections.gpuops.gpu.plugins.module_utils.common.errors import GpuOpsError, InputError  # noqa: E402
from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import ANN_GPU_HEALTH  # noqa: E402
from ansible_collections.gpuops.gpu.plugins.module_utils.k8s.client import Connection  # noqa: E402
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.gpu_health import run  # noqa: E402
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.rollout.fake_api import (  # noqa: E402
    FakeApi, gpu_pod, node)


def gpu_node(name, alloc=8):
    out = node(name, labels={'nvidia.com/gpu.present': 'true'})
    out['metadata']['resourceVersion'] = '1'
    out['status'] = {'capacity': {'nvidia.com/gpu': '8'}, 'allocatable': {'nvidia.com/gpu': str(alloc)}}
    return out


def params(**kw):
    base = {'policy': 'quarantine', 'label_selector': 'nvidia.com/gpu.present=true', 'nodes': [],
            'window_minutes': 0, 'event_reasons': ['XidCriticalError'], 'taint': False, 'drain': True,
            'pod_selector': None, 'drain_timeout': 5, 'grace_period': None, 'force': False, 'max_nodes': 5,
            'poll_interval': 0.01}
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
