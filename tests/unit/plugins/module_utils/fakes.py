# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fakes every unit test may share: the one fake clock."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


class FakeClock(object):
    """Time and sleep in one, for code that takes ``clock=`` and ``sleep=``: ``now`` moves only when the
    code sleeps (by at least ``least`` seconds) or a test moves it; ``sleeps`` lists the pauses asked
    for; ``on_sleep(clock)`` runs at each pause (another actor acting meanwhile)."""

    def __init__(self, now=0.0, on_sleep=None, least=0.0):
        self.now = now
        self.on_sleep = on_sleep
        self.least = least
        self.sleeps = []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += max(seconds, self.least)
        if self.on_sleep:
            self.on_sleep(self)
