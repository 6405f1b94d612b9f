# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The filter the report playbook and the diagnostics role check a publish target with before any write."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.gpu.plugins.filter.publish import FilterModule

CHECK = FilterModule().filters()['publish_errors']


def test_publish_errors_as_the_tasks_call_it():
    data = {'fleet.csv': 'NODE\n'}
    assert CHECK('gpu-reports/fleet', 'gpuops_report_publish_configmap', 'ConfigMap', data=data, existing=[]) == []
    found = [{'metadata': {'name': 'diag', 'labels': {}}}]
    [error] = CHECK('gpu-reports/diag', 'diagnostics_publish_secret', 'Secret', data={'a.tar.gz': 'eA=='},
                    existing=found)
    assert 'Secret gpu-reports/diag exists and gpuops.gpu did not create it' in error
    assert CHECK('fleet', 'gpuops_report_publish_configmap') == [
        "gpuops_report_publish_configmap: expected <namespace>/<name>, got 'fleet'"]


def test_a_bad_kind_is_a_filter_error():
    with pytest.raises(AnsibleFilterError):
        CHECK('a/b', 'x', 'Pod')
