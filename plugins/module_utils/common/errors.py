# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one exception family of gpuops.gpu, and the words for Kubernetes API errors. Pure (standard
library only), so planners may raise these too.

Every error a module reports on purpose is a ``GpuOpsError``: a message plus ``result``, the part
of the module result known when it stopped (empty when nothing was written).
``k8s.runner.run_module`` turns it into ``fail_json(msg=..., **result)`` with ``changed``
defaulting to the class's ``changed`` (False for ``InputError``: nothing was written; True for the
errors raised after writes started).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json


class GpuOpsError(Exception):
    """Base: ``str(exc)`` is the message, ``exc.result`` the partial module result."""

    changed = True  # what the failure reports as ``changed`` unless ``result`` says

    def __init__(self, msg, result=None):
        super(GpuOpsError, self).__init__(msg)
        self.result = dict(result or {})


class InputError(GpuOpsError):
    """Bad input, or a cluster that cannot take the change: nothing was written."""

    changed = False


class ApiError(GpuOpsError):
    """A read the module needs failed (the message says which and why); nothing was written."""

    changed = False


class NotReady(GpuOpsError):
    """The object was written but did not become ready in time."""


class InstallFailed(GpuOpsError):
    """An install started but did not finish; ``result`` says how far it got."""


class RolloutFailed(GpuOpsError):
    """A node rollout stopped; ``result`` has the nodes done, failed and left untouched."""


class CheckFailed(GpuOpsError):
    """A check ran and found problems (e.g. the GPU smoke test); ``result`` has the findings."""


def status_of(exc):
    """The HTTP status of an API exception (kubernetes client or dynamic client), else None."""
    return getattr(exc, 'status', None)


def _body_message(exc):
    """The 'message' of the Status body an API exception carries, else None."""
    try:
        return json.loads(exc.body).get('message') or None
    except (TypeError, ValueError, AttributeError):
        return None


def api_message(exc):
    """The apiserver's own message from an API exception (the 'message' of its Status body),
    else its reason, else the exception text."""
    return _body_message(exc) or str(getattr(exc, 'reason', None) or exc)


def api_error_message(exc):
    """Short text for an API exception: ``<status> <reason>: <message from the body>``; the
    exception text for anything without an HTTP status (connection errors)."""
    status = status_of(exc)
    if status is None:
        return str(exc)
    text = '%s %s' % (status, getattr(exc, 'reason', '') or '')
    message = _body_message(exc)
    if message:
        text += ': %s' % message
    return text.strip()
