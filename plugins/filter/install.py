# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters for the install roles: check their variables before the first write; what they install from
when the mirror role ran.

Thin wrappers over module_utils.plans.install and module_utils.plans.mirror_chain; documentation in
install_input_errors.yml and install_mirror_defaults.yml.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.plugin_utils.filters import filter_errors, plain_filters


@filter_errors
def install_input_errors(variables, role):
    """Problems in the variables of the nfd or gpu_operator role ([] when fine)."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.plans import install as install_inputs
    return install_inputs.role_input_errors(variables, role)


@filter_errors
def install_mirror_defaults(variables, role, mirror_result=None):
    """CatalogSource, its namespace and Helm values of the nfd or gpu_operator role: its own variables first,
    then what the mirror role published (mirror_result), then the public catalog."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.plans import mirror_chain
    return mirror_chain.install_sources(role, variables, mirror_result)


class FilterModule(object):
    """gpuops.gpu install filters."""

    def filters(self):
        return plain_filters({'install_input_errors': install_input_errors,
                              'install_mirror_defaults': install_mirror_defaults})
