# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters for GPU sharing: validate a device-plugin config or named profiles, render the
device-plugin ConfigMap data, predict capacity, merge tolerations.

Thin wrappers: the logic lives in module_utils.gpu.sharing_checks, module_utils.gpu.sharing_render
and module_utils.gpu.tolerations.
Documentation is in the sidecar files sharing_config_errors.yml, sharing_profile_errors.yml,
sharing_mps_root_errors.yml, sharing_profiles_data.yml, sharing_capacity.yml and merge_tolerations.yml.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.plugin_utils.filters import filter_errors, plain_filters


def sharing_config_errors(config, mig_strategy=None, compute_capability=None):
    """List of problems in a device-plugin sharing config ([] when valid)."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import sharing_checks
    return sharing_checks.sharing_config_errors(config, mig_strategy=mig_strategy,
                                                compute_capability=compute_capability)


def sharing_profile_errors(profiles, mig_strategy=None, default=None, reserved=('none', 'default')):
    """List of problems in named profiles {name: config} ([] when valid)."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import sharing_checks
    errors = sharing_checks.profile_errors(profiles, mig_strategy=mig_strategy, default=default or None)
    if isinstance(profiles, dict):
        errors.extend("profile name '%s' is reserved (none = unshared, default = follow the default profile); "
                      "name the profile differently" % name for name in sorted(profiles, key=str) if name in reserved)
    return errors


def sharing_mps_root_errors(root, option='sharing_mps_root'):
    """Why ``root`` may not be set as ClusterPolicy devicePlugin.mps.root ([] when it may)."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import sharing_checks
    return sharing_checks.mps_root_errors(root, option)


@filter_errors
def sharing_profiles_data(profiles, mig_strategy=None):
    """The device-plugin ConfigMap data: {profile name: YAML text}, byte-identical on every run."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import sharing_render
    return sharing_render.render_profiles(profiles, mig_strategy=mig_strategy)


@filter_errors
def sharing_capacity(config, gpus=None, strategy=None, mig_resources=None):
    """Allocatable GPU resources a node advertises under the config."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import sharing_render
    return sharing_render.sharing_capacity(config, gpus=gpus, strategy=strategy, mig_resources=mig_resources)


@filter_errors
def merge_tolerations(existing, extra=None, keep_gpu=True):
    """Merged, deduplicated tolerations that always keep nvidia.com/gpu (unless keep_gpu=false)."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import tolerations
    return tolerations.merge_tolerations(existing, extra, keep_gpu=keep_gpu)


class FilterModule(object):
    """gpuops.gpu sharing filters."""

    def filters(self):
        return plain_filters({
            'sharing_config_errors': sharing_config_errors,
            'sharing_profile_errors': sharing_profile_errors,
            'sharing_mps_root_errors': sharing_mps_root_errors,
            'sharing_profiles_data': sharing_profiles_data,
            'sharing_capacity': sharing_capacity,
            'merge_tolerations': merge_tolerations,
        })
