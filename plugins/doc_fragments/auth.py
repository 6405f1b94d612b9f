# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


class ModuleDocFragment(object):
    """Shared connection documentation for every gpuops.gpu module.

    The connection options themselves are kubernetes.core's (``kubernetes.core.k8s_auth_options``),
    used unchanged; this fragment adds what is common to our modules on top of them.
    """

    DOCUMENTATION = r'''
options: {}
notes:
  - Connection options are those of M(kubernetes.core.k8s) and are resolved the same way, module
    option first, then the E(K8S_AUTH_KUBECONFIG), E(K8S_AUTH_CONTEXT), E(K8S_AUTH_HOST),
    E(K8S_AUTH_API_KEY), E(K8S_AUTH_VERIFY_SSL), E(K8S_AUTH_SSL_CA_CERT) environment variables, then
    in-cluster configuration, then C(~/.kube/config). An AWX/AAP "OpenShift or Kubernetes API Bearer
    Token" credential therefore works with no extra variables.
  - Set the connection once for all gpuops.gpu and kubernetes.core modules with
    C(module_defaults) and the action group C(group/gpuops.gpu.gpu).
requirements:
  - kubernetes >= 29.0.0 (Python)
  - PyYAML >= 3.11 (Python)
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying the cluster.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
'''
