# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.gpuops.gpu.plugins.plugin_utils.filters import plain_filters


def gpu_base_product(value):
    """GFD product (string, or a node's labels dict) without the -MIG-<profile> / -SHARED suffixes."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import type_name
    from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.node import LABEL_PRODUCT, base_product
    if isinstance(value, dict):
        value = value.get(LABEL_PRODUCT)
    if value is not None and not isinstance(value, str):
        raise AnsibleFilterError('gpu_base_product expects a product string or a labels dict, got %s'
                                 % type_name(value))
    return base_product(value)


def mig_parted_document_filter(custom_configs, products=None, include_builtin=True, overrides=None):
    from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.geometry import MigGeometryError
    from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.mig_configs import mig_parted_document
    from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.products import MigCatalogError
    try:
        return mig_parted_document(custom_configs, [p for p in products or [] if p], include_builtin, overrides)
    except (MigGeometryError, MigCatalogError, ValueError) as exc:
        raise AnsibleFilterError(str(exc))


def mig_builtin_override_errors(custom_configs, allow=False, option='mig_custom_configs',
                                allow_option='mig_allow_builtin_override'):
    """Custom configs named like one of the operator's built-in configs, refused unless ``allow``."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.mig_configs import builtin_override_errors
    return builtin_override_errors(custom_configs, allow, option, allow_option)


def mig_policy_patch(settings):
    """The ClusterPolicy fields the mig role sets, from ``{strategy, config_map}``."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import type_name
    from ansible_collections.gpuops.gpu.plugins.module_utils.plans import mig as mig_plans
    if not isinstance(settings, dict):
        raise AnsibleFilterError('mig_policy_patch: expects {strategy, config_map}, got %s' % type_name(settings))
    try:
        return mig_plans.policy_patch(**settings)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError('mig_policy_patch: %s' % exc)


class FilterModule(object):
    def filters(self):
        return plain_filters({
            'gpu_base_product': gpu_base_product,
            'mig_parted_document': mig_parted_document_filter,
            'mig_builtin_override_errors': mig_builtin_override_errors,
            'mig_policy_patch': mig_policy_patch,
        })
