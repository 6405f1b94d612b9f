# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""How every gpuops.gpu module starts and ends: the argument spec (kubernetes.core's connection
options plus the module's own), the module object, and ``run_module``, which connects, runs the
module's ``run(conn, params, check_mode)`` and turns its result or its error into the module's
exit. A module is a shell: its documentation, its options and one ``run_module`` call."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import json
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpuops.gpu.plugins.module_utils.k8s import client
from ansible_collections.gpuops.gpu.plugins.module_utils.common.errors import GpuOpsError, api_error_message
from ansible_collections.gpuops.gpu.plugins.module_utils.common.waiter import Waiter

try:
    from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.core import AnsibleK8SModule
    HAS_KUBERNETES_CORE = True
except ImportError:  # pragma: no cover - reported by gpu_module
    AUTH_ARG_SPEC = {}
    AnsibleK8SModule = None
    HAS_KUBERNETES_CORE = False


class _NeverRaised(Exception):
    """Stands in for ApiException when the kubernetes library is missing."""


try:
    from kubernetes.client.rest import ApiException  # also the base of the dynamic client's errors
except ImportError:  # pragma: no cover - AnsibleK8SModule reports missing kubernetes
    ApiException = _NeverRaised


def argument_spec(*shared, **extra):
    """kubernetes.core's auth options, the option sets the module shares with others (``shared``, such as
    the rollout engine's) and the module's own options."""
    spec = copy.deepcopy(AUTH_ARG_SPEC)
    for options in shared:
        spec.update(options)
    spec.update(extra)
    return spec


def gpu_module(**kwargs):
    """Build the module object: kubernetes.core's AnsibleK8SModule around AnsibleModule.

    Fails cleanly (no traceback) when kubernetes.core or the kubernetes library is missing.
    """
    if not HAS_KUBERNETES_CORE:
        module = AnsibleModule(**kwargs)
        module.fail_json(msg="The kubernetes.core collection (>=5.0.0,<7.0.0) is required: "
                             "ansible-galaxy collection install kubernetes.core")
    kwargs.setdefault('supports_check_mode', True)
    return AnsibleK8SModule(module_class=AnsibleModule, **kwargs)


class ModuleRun(object):
    """What one run of a module keeps: the connection, the module's parameters, check mode, the clock,
    and the waiter that paces its polls every ``poll_interval`` seconds. The ``ops/`` runs extend it."""

    def __init__(self, conn, params, check_mode, sleep=time.sleep, clock=time.monotonic):
        self.conn = conn
        self.params = params
        self.check_mode = check_mode
        self.clock = clock
        self.waiter = Waiter(params.get('poll_interval'), sleep=sleep, clock=clock)


def run_module(module, run, lazy=False):
    """Connect (at once, or with ``lazy`` on the first request), ``run(conn, params, check_mode)``
    and exit with its result dict: ``diff`` only under --diff, ``warnings`` as module warnings.

    A GpuOpsError fails the module with its message and partial ``result`` (``changed`` from the
    result, else the error class's default); an API error that ``run`` did not handle fails it
    with the apiserver's words, an API that does not answer with one line saying so. Never a
    traceback for any of them."""
    conn = client.connect(module)
    try:
        if not lazy:
            conn.open()
        result = run(conn, module.params, module.check_mode)
    except GpuOpsError as exc:
        _fail(module, str(exc), exc.result, exc.changed)
    except ApiException as exc:
        module.fail_json(msg='Kubernetes API error: %s' % _api_words(exc), changed=False)
    except client.TRANSPORT_ERRORS as exc:  # refused, reset, or no answer within the request timeout
        module.fail_json(msg='Could not reach the Kubernetes API: %s' % client.transport_words(exc), changed=False)
    _exit(module, result)


def _api_words(exc):
    """The dynamic client's summary of an API error (JSON), else ``<status> <reason>: <message>``."""
    if hasattr(exc, 'summary'):
        return json.dumps(exc.summary())
    return api_error_message(exc)


def _warn(module, result):
    for warning in result.pop('warnings', None) or []:
        module.warn(warning)


def _fail(module, msg, result, changed):
    failed = dict(result or {})
    failed.pop('diff', None)
    _warn(module, failed)
    failed.setdefault('changed', changed)
    module.fail_json(msg=msg, **failed)


def _exit(module, result):
    diff = result.pop('diff', None)
    if module._diff and diff is not None:
        result['diff'] = diff
    _warn(module, result)
    module.exit_json(**result)
