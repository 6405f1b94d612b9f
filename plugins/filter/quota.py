# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters for GPU ResourceQuotas: normalise and validate ``spec.hard``, explain, warn about
time-slicing, plan the quotas of the gpuops.gpu.quotas role.

Thin wrappers: the logic lives in module_utils.gpu.quota and module_utils.plans.quota. Documentation
is in the sidecar files gpu_quota_hard.yml, gpu_quota_errors.yml, gpu_quota_notes.yml,
gpu_quota_timeslicing_warnings.yml, gpu_quota_replicas.yml and gpu_quota_plan.yml.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.gpu.plugins.plugin_utils.filters import filter_errors, plain_filters


def gpu_quota_hard(hard):
    """``spec.hard`` with GPU keys normalised (``nvidia.com/gpu`` → ``requests.nvidia.com/gpu``)."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import quota
    result, errors = quota.normalise_quota(hard)
    if errors:
        raise AnsibleFilterError('gpu_quota_hard: %s' % '; '.join(errors))
    return result


def gpu_quota_errors(hard):
    """What is wrong with ``spec.hard`` ([] when it can be written)."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import quota
    return quota.normalise_quota(hard)[1]


def gpu_quota_notes(hard):
    """What normalisation changed, and keys only HAMi's scheduler enforces."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import quota
    return quota.quota_notes(hard)


def _replicas(replicas):
    from ansible_collections.gpuops.gpu.plugins.module_utils.plans import quota as quota_plan
    if isinstance(replicas, list):
        return quota_plan.replicas_from_nodes(replicas)
    errors = quota_plan.replicas_errors(replicas)
    if errors:
        raise AnsibleFilterError('gpu_quota_timeslicing_warnings: %s' % '; '.join(errors))
    return replicas


@filter_errors
def gpu_quota_timeslicing_warnings(hard, replicas):
    """Warnings for GPU counts that time-slicing/MPS replicas turn into shares of a GPU."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import quota
    ways = _replicas(replicas)
    if not ways:
        return []
    return quota.timeslicing_quota_warnings(hard, ways)


def gpu_quota_replicas(nodes):
    """{resource: replicas} from the nodes' GPU feature discovery replicas labels (>= 2 only)."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.plans import quota as quota_plan
    if not isinstance(nodes, list):
        raise AnsibleFilterError('gpu_quota_replicas: expects a list of Node objects or label mappings')
    return quota_plan.replicas_from_nodes(nodes)


def gpu_quota_plan(entries, namespaces, selected=None, existing=None, state='present',
                   default_name=None, normalise=True, replicas=None):
    """ResourceQuota manifests to apply (or quotas to delete), errors, notes and warnings (``default_name``
    None: the planner's DEFAULT_NAME, gpu-quota)."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.plans import quota as quota_plan
    names = [n['metadata']['name'] if isinstance(n, dict) and isinstance(n.get('metadata'), dict) else n
             for n in (namespaces or [])]
    ways = _replicas(replicas) if replicas is not None else None
    return quota_plan.quota_plan(entries, names, selected=selected, existing=existing, state=state,
                                 default_name=quota_plan.DEFAULT_NAME if default_name is None else default_name,
                                 normalise=normalise, replicas=ways)


class FilterModule(object):
    """gpuops.gpu quota filters."""

    def filters(self):
        return plain_filters({
            'gpu_quota_hard': gpu_quota_hard,
            'gpu_quota_errors': gpu_quota_errors,
            'gpu_quota_notes': gpu_quota_notes,
            'gpu_quota_timeslicing_warnings': gpu_quota_timeslicing_warnings,
            'gpu_quota_replicas': gpu_quota_replicas,
            'gpu_quota_plan': gpu_quota_plan,
        })
