# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""GPU smoke test filters: check the smoke_test role's settings before it writes anything, and what in the
module's result fails the role.

Thin wrappers: the logic lives in module_utils.plans.smoke (the DRA settings: plans.smoke_dra). Documentation is in smoke_test_input_errors.yml and
smoke_test_failures.yml.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.gpuops.gpu.plugins.plugin_utils.filters import plain_filters


def smoke_test_input_errors(settings):
    """Every problem with the smoke_test role's settings ([] when none)."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.plans import smoke_dra
    if not isinstance(settings, dict):
        raise AnsibleFilterError('smoke_test_input_errors: expects the settings as a mapping')
    return smoke_dra.input_errors(settings)


def smoke_test_failures(result, on_error=True, on_no_capacity=False, accept_unread_logs=False):
    """What in a gpuops.gpu.gpu_smoke_test result fails the role ([] when nothing)."""
    from ansible_collections.gpuops.gpu.plugins.module_utils.plans import smoke
    if not isinstance(result, dict):
        raise AnsibleFilterError('smoke_test_failures: expects the registered result of gpuops.gpu.gpu_smoke_test')
    return smoke.failures(result, on_error=on_error, on_no_capacity=on_no_capacity,
                          accept_unread_logs=accept_unread_logs)


class FilterModule(object):
    """gpuops.gpu smoke test filters."""

    def filters(self):
        return plain_filters({'smoke_test_input_errors': smoke_test_input_errors,
                              'smoke_test_failures': smoke_test_failures})
