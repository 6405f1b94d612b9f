# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""gpuops.gpu.plan_approval against the cluster: read which cluster this job reached (API server URL, the
kube-system namespace's UID), then hand on the plan (check mode) or check it against the approved one
(plans/approval.py)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.module_utils.common.errors import ApiError, InputError
from ansible_collections.gpuops.gpu.plugins.module_utils.common.objects import meta_of
from ansible_collections.gpuops.gpu.plugins.module_utils.plans import approval


def cluster_identity(conn):
    """{'server', 'uid', 'name'} of the cluster behind ``conn``."""
    namespace = conn.call_or_none(conn.core.read_namespace, 'kube-system')
    if namespace is None:
        raise ApiError('the namespace kube-system is not there: the cluster cannot be identified')
    return {'server': conn.server(), 'uid': meta_of(namespace).get('uid') or '', 'name': conn.cluster_name()}


def run(conn, params, check_mode):
    """Check mode: the plan to approve (``approved_plan``). Otherwise: fail, before any write, when the job
    reached another cluster than the one expected or the approved plan's, or when the plan changed."""
    approved, expected = params.get('approved') or {}, params.get('expected_cluster') or {}
    errors = approval.input_errors(approved, expected)
    if errors:
        raise InputError('nothing was changed; fix these first: ' + ' | '.join(errors))
    cluster = cluster_identity(conn)
    result = {'changed': False, 'cluster': cluster,
              'approved_plan': approval.approved_plan(params['kind'], params.get('plan') or {}, cluster)}
    errors = approval.approval_errors(params['kind'], params.get('plan') or {}, cluster,
                                      {} if check_mode else approved, expected)
    if errors:
        raise InputError(' | '.join(errors), dict(result, approved=approved))
    return result
