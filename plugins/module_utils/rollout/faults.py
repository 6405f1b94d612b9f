# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The API faults a rollout waits out: which errors mean the API is away (``transient``), and the
outage clock (``Outage``) that keeps that time off the nodes' deadlines and stops the rollout
after ``api_timeout``."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import threading
import time

from ansible_collections.gpuops.gpu.plugins.module_utils.k8s.client import TRANSPORT_ERRORS

try:
    from kubernetes.client.rest import ApiException
except ImportError:  # pragma: no cover - the module reports the missing library
    ApiException = Exception

TRANSIENT_STATUS = (0, None, 429, 500, 502, 503, 504)
SLOW_ANSWER = 1.0  # seconds: a node read that took longer waited for the API (a stall, not the node)


def transient(exc):
    """The API is away or overloaded (no answer, reset, 5xx, 429): retried, and counted as an outage."""
    if isinstance(exc, ApiException):
        return exc.status in TRANSIENT_STATUS
    return isinstance(exc, TRANSPORT_ERRORS)


class Outage(object):
    """The time the API has not answered: from the start of the first request that failed with no
    answer since, to the next answer. Its length is added to the running deadlines (it is not the
    nodes' time: not charged to drain_timeout, state_timeout or verify_timeout); once it lasts
    ``api_timeout`` seconds the rollout stops. A read that was answered, but only after SLOW_ANSWER
    seconds (an apiserver stopped and resumed within one request timeout), moves the deadlines of
    its node by that wait. Thread-safe (workers report answers)."""

    def __init__(self, api_timeout, clock=time.monotonic):
        self.api_timeout = api_timeout
        self.clock = clock
        self.since = None
        self.cause = None
        self.lock = threading.Lock()

    def failed(self, started, cause):
        with self.lock:
            if self.since is None:
                self.since = started
            self.cause = cause

    def answered(self, deadlines, name=None, waited=0.0):
        """The API answered (node ``name``'s read, after ``waited`` seconds): an outage is over, and
        every deadline ({(node, phase): Deadline}) moves by its length; a slow answer moves the
        node's own deadlines by the wait."""
        with self.lock:
            if self.since is not None:
                length = max(0.0, self.clock() - self.since)
                self.since = None
                for deadline in list(deadlines.values()):
                    deadline.extend(length)
            elif waited >= SLOW_ANSWER:
                for key, deadline in list(deadlines.items()):
                    if key[0] == name:
                        deadline.extend(waited)

    def quiet(self):
        """No outage is open: the last request answered (or none failed yet)."""
        with self.lock:
            return self.since is None

    def passed(self):
        with self.lock:
            return self.since is not None and self.clock() - self.since >= self.api_timeout
