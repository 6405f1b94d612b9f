# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""DCGM exporter metric list: validation, rendering, MIG advice, and the filters over them."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

import pytest
import yaml

from ansible.errors import AnsibleFilterError

from ansible_collections.gpuops.gpu.plugins.filter.monitoring import FilterModule
from ansible_collections.gpuops.gpu.plugins.module_utils.plans import monitoring as D

ROLE_DEFAULTS = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', '..', 'roles', 'monitoring', 'defaults',
                             'main.yml')
GOOD = [{'field': 'DCGM_FI_PROF_GR_ENGINE_ACTIVE', 'type': 'gauge', 'help': 'Graphics engine active.'},
        {'field': 'DCGM_FI_DEV_XID_ERRORS', 'type': 'gauge', 'help': 'Last XID.'},
        {'field': 'DCGM_FI_DRIVER_VERSION', 'type': 'label', 'help': 'Driver version.'}]
FILTERS = FilterModule().filters()


def test_render():
    text = D.render_csv(GOOD)
    lines = text.splitlines()
    assert lines[0].startswith('#') and lines[1].startswith('#')
    assert lines[2:] == ['DCGM_FI_PROF_GR_ENGINE_ACTIVE, gauge, Graphics engine active.',
                         'DCGM_FI_DEV_XID_ERRORS, gauge, Last XID.',
                         'DCGM_FI_DRIVER_VERSION, label, Driver version.']
    assert text.endswith('\n')
    assert FILTERS['dcgm_metrics_csv'](GOOD) == text


@pytest.mark.parametrize('metrics,message', [
    ([], 'is empty'),
    ({'field': 'x'}, 'must be a list'),
    (['DCGM_FI_DEV_GPU_TEMP, gauge, x'], 'must be a mapping'),
    ([{'field': 'GPU_TEMP', 'type': 'gauge', 'help': 'x'}], 'must be a DCGM field name'),
    ([{'field': 'DCGM_FI_DEV_GPU_TEMP', 'type': 'histogram', 'help': 'x'}], 'type must be one of gauge, counter, label'),
    ([{'field': 'DCGM_FI_DEV_GPU_TEMP', 'type': 'gauge', 'help': 'Temperature, in C'}], 'must not contain a comma'),
    ([{'field': 'DCGM_FI_DEV_GPU_TEMP', 'type': 'gauge', 'help': ''}], 'help must be a non-empty string'),
    ([{'field': 'DCGM_FI_DEV_GPU_TEMP', 'type': 'gauge', 'help': 'a'},
      {'field': 'DCGM_FI_DEV_GPU_TEMP', 'type': 'gauge', 'help': 'b'}], 'already listed at metrics[0]'),
    ([{'field': 'DCGM_FI_DEV_GPU_TEMP', 'typ': 'gauge', 'help': 'a'}], "unknown key 'typ'; did you mean 'type'"),
])
def test_errors(metrics, message):
    errors = D.metric_errors(metrics)
    assert any(message in e for e in errors), errors
    assert FILTERS['dcgm_metrics_errors'](metrics) == errors
    with pytest.raises((AnsibleFilterError, ValueError)):
        FILTERS['dcgm_metrics_csv'](metrics)


def test_required_fields_and_console_plugin():
    errors = FILTERS['dcgm_metrics_errors'](GOOD, required_fields=['DCGM_FI_DEV_FB_USED'])
    assert errors == ['DCGM_FI_DEV_FB_USED is missing from the metric list but is needed (dashboard, alerts or console plugin)']
    errors = FILTERS['dcgm_metrics_errors'](GOOD, console_plugin=True)
    assert any('DCGM_FI_DEV_MAX_SM_CLOCK' in e for e in errors)


def test_role_default_list_is_valid_and_covers_dashboard_alerts_and_console_plugin():
    with open(ROLE_DEFAULTS) as f:
        defaults = yaml.safe_load(f)
    metrics = defaults['monitoring_dcgm_metrics']
    assert FILTERS['dcgm_metrics_errors'](metrics, required_fields=list(D.DASHBOARD_FIELDS), console_plugin=True) == []
    assert metrics[0]['field'] == 'DCGM_FI_PROF_GR_ENGINE_ACTIVE'


def test_mig_warning():
    util_only = [{'field': 'DCGM_FI_DEV_GPU_UTIL', 'type': 'gauge', 'help': 'u'}]
    assert D.metric_warnings(util_only, mig=True)
    assert D.metric_warnings(util_only, mig=False) == []
    assert D.metric_warnings(util_only + GOOD, mig=True) == []
