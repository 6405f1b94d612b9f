# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one way gpuops.gpu waits: deadlines, polling, and waking early on a watch. Pure (standard
library only); the clock and the sleep are injectable, so waits are unit-tested without waiting.

- ``Deadline``: a point ``seconds`` from now; ``passed()`` once the clock reached it; ``extend(s)``
  moves it later.
- ``Waiter(interval)``: ``until(check, timeout)`` calls ``check()`` until it returns something other
  than None (that is the result), pausing ``interval`` seconds between calls; at the timeout it
  returns ``on_timeout()`` (which usually raises). ``check()`` runs at least once, also with
  timeout 0, and the timeout is checked right after each call, so the last call happens at or after
  the deadline. ``pause()`` sleeps, or with ``wake`` (anything with ``wait(timeout)``, such as a
  ``threading.Event`` or the rollout's node watch) returns as soon as it is woken.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import time


class Deadline(object):
    """``seconds`` from now on ``clock``."""

    __slots__ = ('clock', 'at')

    def __init__(self, seconds, clock=time.monotonic):
        self.clock = clock
        self.at = clock() + seconds

    def passed(self):
        return self.clock() >= self.at

    def left(self):
        """Seconds until the deadline, 0 once passed."""
        return max(0.0, self.at - self.clock())

    def extend(self, seconds):
        """Move the deadline ``seconds`` later (time that must not count, e.g. an API outage)."""
        self.at += seconds


class Waiter(object):
    """Polls every ``interval`` seconds with ``sleep``/``clock``; ``wake`` ends a pause early."""

    def __init__(self, interval, sleep=time.sleep, clock=time.monotonic, wake=None):
        self.interval = interval
        self.sleep = sleep
        self.clock = clock
        self.wake = wake

    def deadline(self, seconds):
        return Deadline(seconds, self.clock)

    def pause(self, seconds=None):
        """Wait ``seconds`` (default ``interval``), or until ``wake`` is woken."""
        seconds = max(0.0, self.interval if seconds is None else seconds)
        if self.wake is not None:
            self.wake.wait(seconds)
        else:
            self.sleep(seconds)

    def until(self, check, timeout, on_timeout=None):
        """``check()``'s first result that is not None; ``on_timeout()`` (None without one) when
        ``timeout`` seconds passed first."""
        deadline = self.deadline(timeout)
        while True:
            result = check()
            if result is not None:
                return result
            if deadline.passed():
                return on_timeout() if on_timeout is not None else None
            self.pause()
