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
