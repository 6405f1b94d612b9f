# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""MIG filters: thin wrappers over module_utils.gpu.catalog / mig_geometry.

Documentation lives in the sidecar files mig_geometry_errors.yml,
mig_capacity.yml, mig_profiles.yml, mig_parted_errors.yml, mig_plan.yml,
mig_pending_demand.yml, mig_claim_demand.yml and mig_quota_demand.yml.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.gpuops.gpu.plugins.plugin_utils.filters import plain_filters


def mig_geometry_errors(geometry, product, overrides=None):
    """List of reasons the geometry does not fit one GPU of product ([] = fits)."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.geometry import geometry_errors
    return geometry_errors(geometry, product, overrides)


def mig_capacity(geometry, product, strategy='mixed', gpus=1, overrides=None):
    """Expected allocatable resources for gpus GPUs of product with this geometry."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import geometry as geometry_lib
    try:
        return geometry_lib.mig_capacity(geometry, product, strategy=strategy, gpus=gpus, overrides=overrides)
    except geometry_lib.MigGeometryError as exc:
        raise AnsibleFilterError(str(exc))


def mig_profiles(product, overrides=None):
    """Catalog entry (profiles, placements, memory) for a GPU product."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.products import MigCatalogError, require_product
    try:
        return require_product(product, overrides)
    except MigCatalogError as exc:
        raise AnsibleFilterError(str(exc))


def mig_parted_errors(document, products_by_config=None, overrides=None):
    """List of problems in a mig-parted config document ([] = valid)."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import mig_parted
    return mig_parted.mig_parted_errors(document, products_by_config, overrides)


def mig_plan(nodes, document, demand, strategy='mixed', policy=None, overrides=None):
    """Per-node mig-parted configs that meet a demand with the fewest node changes (see mig_plan.yml)."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.mig_demand import plan_mig_demand, plan_table
    if isinstance(nodes, dict) and 'nodes' in nodes:
        nodes = nodes['nodes']
    plan = plan_mig_demand(nodes, document, demand, strategy, policy, overrides)
    plan['table'] = plan_table(plan)
    return plan


def mig_pending_demand(pods, nodes, declared=None, claimed=None):
    """The demand that lets the Pending GPU pods run (see mig_pending_demand.yml)."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.mig_demand import pending_demand
    if isinstance(nodes, dict) and 'nodes' in nodes:
        nodes = nodes['nodes']
    if not isinstance(pods, list) or not isinstance(nodes, list):
        raise AnsibleFilterError('mig_pending_demand: pods and nodes must be lists (k8s_info resources, '
                                 'gpu_nodes_info nodes)')
    if claimed is not None and not isinstance(claimed, dict):
        raise AnsibleFilterError('mig_pending_demand: claimed must be a demand, resource to count')
    return pending_demand(pods, nodes, declared, claimed)


def mig_claim_demand(claims, nodes, classes=None, pods=None):
    """The demand of the DRA claims of the Pending pods, and the pool with its DRA devices in use (see
    mig_claim_demand.yml)."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.mig_demand_claims import (
        claim_demand, nodes_with_dra_use)
    if isinstance(claims, dict) and 'resources' in claims:
        claims = claims['resources']
    if isinstance(nodes, dict) and 'nodes' in nodes:
        nodes = nodes['nodes']
    classes, pods = [] if classes is None else classes, [] if pods is None else pods
    if not all(isinstance(value, list) for value in (claims, nodes, classes, pods)):
        raise AnsibleFilterError('mig_claim_demand: claims, nodes, classes and pods must be lists (k8s_info '
                                 'resources, gpu_nodes_info nodes)')
    result = claim_demand(claims, classes, pods)
    result['nodes'] = nodes_with_dra_use(nodes)
    return result


def mig_quota_demand(quotas, declared=None):
    """The demand the GPU ResourceQuotas of namespaces allow (see mig_quota_demand.yml)."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.mig_demand import quota_demand
    if isinstance(quotas, dict) and 'resources' in quotas:
        quotas = quotas['resources']
    if not isinstance(quotas, list):
        raise AnsibleFilterError('mig_quota_demand: the input must be the ResourceQuotas (k8s_info resources), '
                                 'a list')
    if declared is not None and not isinstance(declared, dict):
        raise AnsibleFilterError('mig_quota_demand: declared must be a demand, resource to count')
    return quota_demand(quotas, declared)


class FilterModule(object):
    """gpuops.gpu MIG filters."""

    def filters(self):
        return plain_filters({
            'mig_geometry_errors': mig_geometry_errors,
            'mig_capacity': mig_capacity,
            'mig_profiles': mig_profiles,
            'mig_parted_errors': mig_parted_errors,
            'mig_plan': mig_plan,
            'mig_pending_demand': mig_pending_demand,
            'mig_claim_demand': mig_claim_demand,
            'mig_quota_demand': mig_quota_demand,
        })
