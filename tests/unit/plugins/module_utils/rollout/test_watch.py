# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The node watch: events from a streamed response in arbitrary chunks; followed nodes wake the loop."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json

import pytest

pytest.importorskip('kubernetes')

from ansible_collections.gpuops.gpu.plugins.module_utils.k8s.client import Connection  # noqa: E402
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.watch import NodeWatch, watch_events  # noqa: E402


class _Stream(object):
    """A watch response body arriving in arbitrary chunks (as urllib3 hands them over)."""

    def __init__(self, chunks):
        self.chunks = chunks

    def stream(self, amt=None, decode_content=False):
        return iter(self.chunks)

    def close(self):
        pass

    def release_conn(self):
        pass


@pytest.mark.parametrize('chunks', [
    [b'{"a": 1}\n{"b": 2}\n'],
    [b'{"a"', b': 1}\n{"b": ', b'2}\n'],
    [b'{"a": 1}\n', b'\n', b' \n', b'{"b": 2}\n{"c": 3}'],   # blank lines skipped; no newline yet: not a line
    ['{"a": 1}\n', '{"b": 2}\n'],                             # str chunks
    [b'{"a": 1}\n{"b": ', b'2, "name": "n\xc3', b'\xa9"}\n'],  # a UTF-8 character split between chunks
])
def test_watch_events_reassemble_chunks(chunks):
    events = list(watch_events(_Stream(chunks)))
    assert events[0] == {'a': 1} and events[1]['b'] == 2
    assert len(events) == 2


def _event(kind, name, version):
    return (json.dumps({'type': kind, 'object': {'metadata': {'name': name, 'resourceVersion': version}}}) + '\n').encode()


class _Core(object):
    def __init__(self, body):
        self.body = body
        self.calls = []

    def list_node(self, **kwargs):
        self.calls.append(kwargs)
        if len(self.calls) > 1:
            raise OSError('watch closed')  # the second watch request fails: the watch ends quietly
        return _Stream(self.body)


def test_followed_nodes_wake_the_loop_and_the_watch_resumes_from_the_last_version():
    core = _Core([_event('MODIFIED', 'other', '5'), _event('MODIFIED', 'n1', '6'), _event('BOOKMARK', '', '7')])
    conn = Connection(core=core)
    watch = NodeWatch(conn, '4')
    watch.follow(['n1'])
    watch.thread.join(5)
    assert watch.take() in (set(), {'n1'})  # follow() may come after the events: then nothing is reported
    assert core.calls[0]['resource_version'] == '4' and core.calls[0]['watch'] is True
    assert core.calls[1]['resource_version'] == '7' and conn.requests == 2
    watch.stop()


def _copy(name, version, **labels):
    return {'metadata': {'name': name, 'resourceVersion': version, 'labels': labels}}


def test_the_node_cache_keeps_the_newest_copy_of_followed_nodes_only():
    from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.api import RolloutApi
    api = RolloutApi(None)
    api.follow([_copy('n1', '10', step='listed')])
    api.offer(_copy('n1', '12', step='patched'))
    api.offer(_copy('n1', '11', step='a late watch event'))   # older than the patch's answer: ignored
    api.offer(_copy('n2', '20'))                              # not followed: not kept
    assert api.newest('n1')['metadata']['labels'] == {'step': 'patched'} and api.newest('n2') is None
    api.offer(_copy('n1', '13', step='watched'))
    assert api.newest('n1')['metadata']['labels'] == {'step': 'watched'}
    api.forget('n1')                                          # deleted: the next read asks the API
    assert api.newest('n1') is None
    api.follow([_copy('n3', 'not-a-number')])                 # an opaque version is never trusted
    assert api.newest('n3') is None


def test_watch_events_feed_the_cache_and_an_ended_watch_is_not_alive():
    from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.api import RolloutApi
    body = [(json.dumps({'type': 'MODIFIED', 'object': _copy('n1', '6', state='success')}) + '\n').encode(),
            (json.dumps({'type': 'DELETED', 'object': _copy('n2', '7')}) + '\n').encode()]
    core = _Core(body)
    api = RolloutApi(Connection(core=core))
    api.follow([_copy('n1', '4', state='pending'), _copy('n2', '4')])
    watch = NodeWatch(api.conn, '4', cache=api)
    watch.thread.join(5)
    assert api.newest('n1')['metadata']['labels'] == {'state': 'success'} and api.newest('n2') is None
    assert watch.alive is False  # the second watch request failed: the rollout reads nodes with GETs again
    watch.stop()
