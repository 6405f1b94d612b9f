# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The filters the mig and sharing roles check their inputs with before any write: the ConfigMap they write is
their own, custom MIG configs keep the operator's built-in names."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.filter.mig_document import FilterModule as MigDocumentFilters
from ansible_collections.gpuops.gpu.plugins.filter.ownership import FilterModule

FILTERS = FilterModule().filters()
ENABLED = [{'devices': 'all', 'mig-enabled': True, 'mig-devices': {}}]


def test_configmap_write_errors_by_name_and_as_read():
    check = FILTERS['configmap_write_errors']
    assert check('default-mig-parted-config', 'mig_config_map_name')[0].startswith(
        "mig_config_map_name: ConfigMap 'default-mig-parted-config' belongs to the GPU operator")
    assert check('gpuops-mig-parted-config', 'mig_config_map_name', 'gpu-operator', []) == []
    # as kubernetes.core.k8s_info returns it: a list of at most one
    found = [{'metadata': {'name': 'gpuops-mig-parted-config', 'labels': {'app': 'mine'}}}]
    [error] = check('gpuops-mig-parted-config', 'mig_config_map_name', 'gpu-operator', found)
    assert 'ConfigMap gpu-operator/gpuops-mig-parted-config exists and gpuops.gpu did not create it' in error


def test_mig_builtin_override_errors():
    check = MigDocumentFilters().filters()['mig_builtin_override_errors']
    assert check({'all-disabled': ENABLED})[0].startswith('mig_custom_configs.all-disabled: ')
    assert check({'all-disabled': ENABLED}, True) == []
    assert check({'training': ENABLED}) == []
