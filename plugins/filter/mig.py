# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""MIG filters: thin wrappers over module_utils.gpu.catalog / mig_geometry.

Documentation lives in the sidecar files mig_geometry_errors.yml,
mig_capacity.yml, mig_profiles.yml and mig_parted_errors.yml.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.geometry import (
    MigGeometryError,
    geometry_errors,
    mig_capacity as _mig_capacity,
)
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.mig_parted import mig_parted_errors as _mig_parted_errors
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.products import MigCatalogError, require_product


def mig_geometry_errors(geometry, product, overrides=None):
    """List of reasons the geometry does not fit one GPU of product ([] = fits)."""
    return geometry_errors(geometry, product, overrides)


def mig_capacity(geometry, product, strategy='mixed', gpus=1, overrides=None):
    """Expected allocatable resources for gpus GPUs of product with this geometry."""
    try:
        return _mig_capacity(geometry, product, strategy=strategy, gpus=gpus, overrides=overrides)
    except MigGeometryError as exc:
        raise AnsibleFilterError(str(exc))


def mig_profiles(product, overrides=None):
    """Catalog entry (profiles, placements, memory) for a GPU product."""
    try:
        return require_product(product, overrides)
    except MigCatalogError as exc:
        raise AnsibleFilterError(str(exc))


def mig_parted_errors(document, products_by_config=None, overrides=None):
    """List of problems in a mig-parted config document ([] = valid)."""
    return _mig_parted_errors(document, products_by_config, overrides)


class FilterModule(object):
    """gpuops.gpu MIG filters."""

    def filters(self):
        return {
            'mig_geometry_errors': mig_geometry_errors,
            'mig_capacity': mig_capacity,
            'mig_profiles': mig_profiles,
            'mig_parted_errors': mig_parted_errors,
        }
