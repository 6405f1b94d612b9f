# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The rollout engine when the cluster misbehaves (in-memory API): a node deleted or added during
the rollout, a node that hangs, an outage that is not charged to state_timeout, an outage past
api_timeout (held nodes get their reason), NotReady nodes, and API errors as one line."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import threading
import time

import pytest

pytest.importorskip('kubernetes')

from ansible_collections.gpuops.gpu.plugins.module_utils.common.errors import RolloutFailed  # noqa: E402
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout import node as rn  # noqa: E402
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.api import call_words  # noqa: E402
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.faults import Outage, transient  # noqa: E402
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.rollout.fake_api import (  # noqa: E402
    LABEL, FakeApi, FakeKind, api_error, node)
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.rollout.fake_api import rollout  # noqa: E402


def not_ready(name, **kw):
    out = node(name, **kw)
    out['status']['conditions'] = [{'type': 'Ready', 'status': 'False', 'reason': 'KubeletNotReady'}]
    return out


def markers(api, name):
    return dict((k, v) for k, v in api.nodes[name]['metadata']['annotations'].items() if k in rn.MARKERS)


# ------------------------------------------------------------------ nodes that come and go
class DeletedOnLabel(FakeApi):
    """Deletes ``victim`` when its label is set (a node scaled down during the rollout)."""

    victim = 'n2'

    def patch_node(self, name, body, **kwargs):
        out = super(DeletedOnLabel, self).patch_node(name, body, **kwargs)
        if name == self.victim and LABEL in ((body.get('metadata') or {}).get('labels') or {}):
            del self.nodes[name]
        return out

    def read_node(self, name, **kwargs):
        if name not in self.nodes:
            raise api_error(404, 'Not Found')
        return super(DeletedOnLabel, self).read_node(name, **kwargs)


def test_a_node_deleted_mid_rollout_is_gone_and_the_rest_goes_on():
    api = DeletedOnLabel([node('n1'), node('n2'), node('n3')])
    conn, engine, nodes = rollout(api, max_unavailable=2)
    result = engine.run({'n1': 'v2', 'n2': 'v2', 'n3': 'v2'}, nodes)
    assert [(s['node'], s['phase']) for s in result['nodes']] == [('n1', 'done'), ('n2', 'gone'), ('n3', 'done')]
    assert result['changed'] is True
    assert engine.warnings == ['node n2 was deleted during the rollout (it had reached phase wait); it is reported '
                               'as gone and the rest of the rollout went on']
    for name in ('n1', 'n3'):
        assert not api.nodes[name]['spec'].get('unschedulable') and markers(api, name) == {}


def test_a_patch_answered_404_is_gone_too():
    api = FakeApi([node('n1')])
    api.failures['patch_node'] = [api_error(404, 'Not Found')]
    _conn, engine, nodes = rollout(api)
    result = engine.run({'n1': 'v2'}, nodes)
    assert result['nodes'][0]['phase'] == 'gone' and result['changed'] is False  # nothing was written


class AddsANode(FakeApi):
    def patch_node(self, name, body, **kwargs):
        if 'n9' not in self.nodes:
            self.nodes['n9'] = node('n9', labels={'pool': 'train'})
            self.nodes['n8'] = node('n8', labels={'pool': 'other'})
        return super(AddsANode, self).patch_node(name, body, **kwargs)


def test_a_node_added_mid_rollout_is_reported_not_touched():
    api = AddsANode([node('n1', labels={'pool': 'train'})])
    _conn, engine, nodes = rollout(api, assignments=[{'label_selector': 'pool=train', 'config': 'v2'}])
    result = engine.run({'n1': 'v2'}, nodes)
    assert [s['node'] for s in result['nodes']] == ['n1']
    assert engine.warnings == ['node(s) n9 appeared during the rollout and match the assignments; this run did not '
                               'touch them: run it again to apply their assignments']
    assert [n for n, _b in api.patches if n != 'n1'] == []


# ------------------------------------------------------------------ a slow node, outages
class HangsOnce(FakeApi):
    """The first read of ``slow`` hangs until ``fast`` is done (or 5 s)."""

    def __init__(self, *args, **kwargs):
        super(HangsOnce, self).__init__(*args, **kwargs)
        self.hung = False
        self.fast_done_while_hung = False

    def read_node(self, name, **kwargs):
        if name == 'slow' and not self.hung:
            self.hung = True
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and not self.fast_done_while_hung:
                fast = self.nodes['fast']
                self.fast_done_while_hung = fast['metadata']['labels'].get(LABEL) == 'v2' and not markers(self, 'fast')
                time.sleep(0.01)
        return super(HangsOnce, self).read_node(name, **kwargs)


def test_a_hung_node_does_not_hold_up_its_batch_mates():
    api = HangsOnce([node('fast'), node('slow')])
    _conn, engine, nodes = rollout(api, max_unavailable=2)
    result = engine.run({'fast': 'v2', 'slow': 'v2'}, nodes)
    assert api.fast_done_while_hung is True
    assert [s['phase'] for s in result['nodes']] == ['done', 'done']


class SlowKind(FakeKind):
    """Reached ``ready_at`` (monotonic) at the earliest."""

    ready_at = None

    def progress(self, node, value):
        if self.ready_at is not None and time.monotonic() >= self.ready_at:
            return super(SlowKind, self).progress(node, value)
        return 'wait', 'state pending'


class OutageAfterLabel(FakeApi):
    """Every read fails (connection refused) for ``length`` seconds once the label was set on
    ``after`` nodes."""

    length = 0.8
    after = 1

    def __init__(self, *args, **kwargs):
        super(OutageAfterLabel, self).__init__(*args, **kwargs)
        self.until = None
        self.labelled = 0

    def patch_node(self, name, body, **kwargs):
        if LABEL in ((body.get('metadata') or {}).get('labels') or {}):
            self.labelled += 1
            if self.until is None and self.labelled >= self.after:
                self.until = time.monotonic() + self.length
        return super(OutageAfterLabel, self).patch_node(name, body, **kwargs)

    def read_node(self, name, **kwargs):
        if self.until is not None and time.monotonic() < self.until:
            raise OSError('connection refused')
        return super(OutageAfterLabel, self).read_node(name, **kwargs)


def test_an_outage_is_not_charged_to_state_timeout():
    api = OutageAfterLabel([node('n1')])
    _conn, engine, nodes = rollout(api, state_timeout=0.5, api_timeout=5)
    engine.kind = kind = SlowKind()
    kind.ready_at = time.monotonic() + api.length + 0.3  # after the outage, within state_timeout of API time
    result = engine.run({'n1': 'v2'}, nodes)
    assert result['nodes'][0]['phase'] == 'done'


def test_an_outage_past_api_timeout_writes_the_reason_on_every_held_node():
    api = OutageAfterLabel([node('n1'), node('n2')])
    api.length, api.after = 60, 2
    _conn, engine, nodes = rollout(api, api_timeout=0.3, max_unavailable=2)
    engine.kind = SlowKind()
    started = time.monotonic()
    with pytest.raises(RolloutFailed, match=r'the Kubernetes API did not answer for 0.3s \(read node failed: '
                                            r'connection refused\)') as info:
        engine.run({'n1': 'v2', 'n2': 'v2'}, nodes)
    assert time.monotonic() - started < 3
    assert [s['phase'] for s in info.value.result['nodes']] == ['wait', 'wait'] and info.value.result['changed']
    for name in ('n1', 'n2'):
        ann = markers(api, name)
        assert ann[rn.ANN_PHASE] == 'labelled' and 'did not answer for 0.3s' in ann[rn.ANN_REASON]
        assert api.nodes[name]['spec']['unschedulable'] is True


def test_outage_clock():
    now = [10.0]
    outage = Outage(30, clock=lambda: now[0])
    deadline = type('D', (), {'at': 20.0, 'extend': lambda self, s: setattr(self, 'at', self.at + s)})()
    outage.answered({'d': deadline})
    assert deadline.at == 20.0 and not outage.passed()
    outage.failed(8.0, OSError('refused'))
    outage.failed(9.0, OSError('refused again'))  # the outage started with the first failed request
    now[0] = 12.0
    outage.answered({'d': deadline})
    assert deadline.at == 24.0 and outage.since is None
    outage.failed(12.0, OSError('refused'))
    now[0] = 42.0
    assert outage.passed()


@pytest.mark.parametrize('exc,expected', [
    (api_error(503), True), (api_error(429), True), (api_error(0), True), (OSError('reset'), True),
    (api_error(404), False), (api_error(409), False), (api_error(403), False), (KeyError('x'), False)])
def test_transient(exc, expected):
    assert transient(exc) is expected


# ------------------------------------------------------------------ NotReady
def test_not_ready_errors_name_the_node_and_the_way_out():
    nodes = {'a': not_ready('a'), 'b': node('b')}
    assert rn.not_ready_errors(nodes, ['b', 'a']) == [
        'node a is NotReady (Ready=False: KubeletNotReady); it was not touched: bring it back (kubectl describe '
        'node a) or leave it out of the assignments, then run again']
    assert rn.not_ready(node('x')) is None  # no Ready condition reported: nothing known against it


def test_a_not_ready_node_is_never_started():
    api = FakeApi([not_ready('n1')])
    _conn, engine, nodes = rollout(api)
    with pytest.raises(RolloutFailed, match='node n1: node is NotReady .* it was not touched') as info:
        engine.run({'n1': 'v2'}, nodes)
    assert api.patches == [] and info.value.result['changed'] is False


class NotReadyOnLabel(FakeApi):
    def patch_node(self, name, body, **kwargs):
        out = super(NotReadyOnLabel, self).patch_node(name, body, **kwargs)
        if LABEL in ((body.get('metadata') or {}).get('labels') or {}):
            self.nodes[name]['status']['conditions'] = [{'type': 'Ready', 'status': 'Unknown',
                                                         'reason': 'NodeStatusUnknown'}]
        return out


def test_a_node_that_goes_not_ready_is_held_never_done():
    api = NotReadyOnLabel([node('n1')])
    _conn, engine, nodes = rollout(api)
    with pytest.raises(RolloutFailed, match=r'node n1: node went NotReady during wait \(Ready=Unknown: '
                                            r'NodeStatusUnknown\); it stays cordoned'):
        engine.run({'n1': 'v2'}, nodes)
    ann = markers(api, 'n1')
    assert ann[rn.ANN_PHASE] == 'failed' and 'went NotReady' in ann[rn.ANN_REASON]
    assert api.nodes['n1']['spec']['unschedulable'] is True and ('n1', 'GpuopsFailed') in api.events


def test_a_failure_written_while_the_api_is_away_is_written_once_it_answers():
    api = NotReadyOnLabel([node('n1')])
    api.failures['patch_node'] = [None, None, OSError('connection reset')]  # cordon, label, then the failure
    real = api._fail

    def fail(method):
        pending = api.failures.get(method)
        if pending and pending[0] is None:
            pending.pop(0)
            return
        real(method)
    api._fail = fail
    _conn, engine, nodes = rollout(api)
    with pytest.raises(RolloutFailed, match='went NotReady'):
        engine.run({'n1': 'v2'}, nodes)
    assert api.failures['patch_node'] == []  # the first write of the failure hit the outage
    assert markers(api, 'n1')[rn.ANN_PHASE] == 'failed' and api.events.count(('n1', 'GpuopsFailed')) == 1


# ------------------------------------------------------------------ one clear line
def test_an_api_error_is_one_line_with_the_call_and_the_apiservers_message():
    exc = api_error(422, 'Unprocessable Entity')
    exc.body = json.dumps({'kind': 'Status', 'message': 'Node "n1" is invalid:\n metadata.labels: bad'})
    exc.headers = {'Audit-Id': 'x'}
    api = FakeApi([node('n1')])
    api.failures['patch_node'] = [exc]
    _conn, engine, nodes = rollout(api)
    with pytest.raises(RolloutFailed) as info:
        engine.run({'n1': 'v2'}, nodes)
    reason = info.value.result['nodes'][0]['reason']
    assert reason == ('patch node failed: HTTP 422 Unprocessable Entity: Node "n1" is invalid: metadata.labels: bad '
                      '(during cordon)')
    assert 'Audit-Id' not in str(info.value) and '\n' not in str(info.value)


def test_call_words_without_an_http_answer():
    exc = OSError('connection refused')
    exc.gpuops_call = 'read node'
    assert call_words(exc) == 'read node failed: connection refused'
    assert call_words(threading.ThreadError('x')) == 'API call failed: x'


def test_a_slow_answer_moves_only_its_nodes_deadlines():
    outage = Outage(30, clock=lambda: 0.0)
    mine, other = [type('D', (), {'at': 5.0, 'extend': lambda self, s: setattr(self, 'at', self.at + s)})()
                   for _i in range(2)]
    deadlines = {('n1', 'wait'): mine, ('n2', 'wait'): other}
    outage.answered(deadlines, 'n1', 0.2)  # an ordinary answer: nothing moves
    outage.answered(deadlines, 'n1', 8.0)  # the apiserver stopped and resumed within one request
    assert (mine.at, other.at) == (13.0, 5.0)


class StallsAfterLabel(FakeApi):
    """The first read after the label hangs ``stall`` seconds, then answers (an apiserver SIGSTOPped
    and resumed within one request timeout: no error is ever seen)."""

    stall = 1.2  # past faults.SLOW_ANSWER

    def __init__(self, *args, **kwargs):
        super(StallsAfterLabel, self).__init__(*args, **kwargs)
        self.labelled = self.stalled = False

    def patch_node(self, name, body, **kwargs):
        self.labelled = self.labelled or LABEL in ((body.get('metadata') or {}).get('labels') or {})
        return super(StallsAfterLabel, self).patch_node(name, body, **kwargs)

    def read_node(self, name, **kwargs):
        if self.labelled and not self.stalled:
            self.stalled = True
            time.sleep(self.stall)
        return super(StallsAfterLabel, self).read_node(name, **kwargs)


def test_a_stalled_answer_is_not_charged_to_state_timeout():
    api = StallsAfterLabel([node('n1')])
    _conn, engine, nodes = rollout(api, state_timeout=0.5, api_timeout=5)
    engine.kind = kind = SlowKind()
    kind.ready_at = time.monotonic() + api.stall + 0.3
    result = engine.run({'n1': 'v2'}, nodes)
    assert result['nodes'][0]['phase'] == 'done'
