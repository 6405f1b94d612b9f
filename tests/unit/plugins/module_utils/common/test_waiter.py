# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one waiter: deadlines, polling until a result or the timeout, waking early."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import threading
import time

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.common.waiter import Deadline, Waiter
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.fakes import FakeClock


def test_deadline():
    clock = FakeClock()
    deadline = Deadline(5, clock)
    assert not deadline.passed() and deadline.left() == 5
    clock.now = 5
    assert deadline.passed() and deadline.left() == 0.0
    clock.now = 7
    assert deadline.left() == 0.0
    deadline.extend(3)  # e.g. an API outage: not the waited-for thing's time
    assert not deadline.passed() and deadline.left() == 1.0


def test_until_returns_the_first_result_and_pauses_in_between():
    clock = FakeClock()
    answers = iter([None, None, 'ready'])
    assert Waiter(2, sleep=clock.sleep, clock=clock).until(lambda: next(answers), 60) == 'ready'
    assert clock.sleeps == [2, 2]


def test_until_calls_on_timeout_after_a_last_check():
    clock = FakeClock()
    calls = []

    def check():
        calls.append(clock.now)
        return None
    waiter = Waiter(3, sleep=clock.sleep, clock=clock)
    assert waiter.until(check, 7, lambda: 'late') == 'late'
    assert calls == [0, 3, 6, 9]            # the last check is at or after the deadline
    assert waiter.until(check, 0) is None   # timeout 0: checked once, no on_timeout: None
    assert calls[-1] == 9 and len(calls) == 5


def test_falsy_results_other_than_none_end_the_wait():
    clock = FakeClock()
    assert Waiter(1, sleep=clock.sleep, clock=clock).until(lambda: [], 10) == []
    assert clock.sleeps == []


def test_errors_of_check_and_on_timeout_go_up():
    clock = FakeClock()
    waiter = Waiter(1, sleep=clock.sleep, clock=clock)

    def refused():
        raise ValueError('refused')
    with pytest.raises(ValueError, match='refused'):
        waiter.until(refused, 10)

    def timed_out():
        raise RuntimeError('not ready after 2s')
    with pytest.raises(RuntimeError, match='not ready after 2s'):
        waiter.until(lambda: None, 2, timed_out)


def test_pause_is_woken_early():
    event = threading.Event()
    waiter = Waiter(30, wake=event)
    threading.Timer(0.05, event.set).start()
    started = time.monotonic()
    waiter.pause()
    assert time.monotonic() - started < 5
    waiter.pause(-1)  # a negative pause is no pause
