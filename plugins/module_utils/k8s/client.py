# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Connection helper shared by every gpuops.gpu module.

It reuses kubernetes.core's authentication argument spec and API client unchanged, so the
``K8S_AUTH_*`` environment (AWX/AAP credentials), kubeconfig files or dicts, contexts, tokens and
in-cluster configuration behave exactly as they do for ``kubernetes.core.k8s``.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import json

from ansible.module_utils.basic import AnsibleModule

try:
    from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.core import AnsibleK8SModule
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client
    HAS_KUBERNETES_CORE = True
except ImportError:  # pragma: no cover - reported by GpuModule
    AUTH_ARG_SPEC = {}
    AnsibleK8SModule = None
    get_api_client = None
    HAS_KUBERNETES_CORE = False

try:
    from kubernetes.dynamic.exceptions import DynamicApiError
except ImportError:  # pragma: no cover - AnsibleK8SModule reports missing kubernetes
    DynamicApiError = Exception

try:
    from kubernetes.client import ApiClient, CoreV1Api, CustomObjectsApi, PolicyV1Api
    HAS_K8S_CLIENT = True
except ImportError:  # pragma: no cover - AnsibleK8SModule reports missing kubernetes
    ApiClient = CoreV1Api = CustomObjectsApi = PolicyV1Api = None
    HAS_K8S_CLIENT = False


def argument_spec(**extra):
    """kubernetes.core's auth options plus the module's own options."""
    spec = copy.deepcopy(AUTH_ARG_SPEC)
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


class Connection(object):
    """Typed API objects over one kubernetes.core client (shared connection pool)."""

    def __init__(self, module):
        self.module = module
        self.client = get_api_client(module=module)
        self._typed(self.client.client.client)
        self.dynamic = self.client.client

    def _typed(self, api_client):
        self.core = CoreV1Api(api_client)
        self.custom = CustomObjectsApi(api_client)
        self.policy = PolicyV1Api(api_client)

    def pooled(self, size):
        """This connection, or a copy with room for ``size`` concurrent requests (same
        configuration and headers, its own connection pool)."""
        api_client = self.client.client.client
        config = api_client.configuration
        if (config.connection_pool_maxsize or 0) >= size:
            return self
        config = copy.copy(config)
        config.connection_pool_maxsize = size
        wide = ApiClient(config)
        wide.default_headers.update(api_client.default_headers)
        clone = copy.copy(self)
        clone._typed(wide)
        return clone


def connect(module):
    """Return a Connection, or fail the module with the API error (never a traceback)."""
    try:
        return Connection(module)
    except Exception as exc:  # kubernetes.core raises several types for bad auth/config
        module.fail_json(msg="Could not connect to the Kubernetes API: %s" % exc)


def run_module(module, run, input_errors=(), partial_errors=()):
    """The shape every gpuops.gpu module ends with: connect, run(conn, params, check_mode), then
    exit with the result (diff only under --diff, warnings as warnings). ``input_errors`` mean
    nothing was written; ``partial_errors`` carry a partial ``result`` attribute."""
    conn = connect(module)
    try:
        result = run(conn, module.params, module.check_mode)
    except input_errors as exc:
        module.fail_json(msg=str(exc), changed=False)
    except DynamicApiError as exc:
        summary = exc.summary() if hasattr(exc, 'summary') else str(exc)
        module.fail_json(msg='Kubernetes API error: %s' % json.dumps(summary), changed=False)
    except partial_errors as exc:
        failed = dict(getattr(exc, 'result', None) or {})
        failed.pop('diff', None)
        for warning in failed.pop('warnings', None) or []:
            module.warn(warning)
        failed.setdefault('changed', True)
        module.fail_json(msg=str(exc), **failed)
    diff = result.pop('diff', None)
    if module._diff and diff is not None:
        result['diff'] = diff
    for warning in result.pop('warnings', None) or []:
        module.warn(warning)
    module.exit_json(**result)
