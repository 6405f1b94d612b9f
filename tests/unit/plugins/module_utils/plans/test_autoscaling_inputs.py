# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""autoscaling_inputs: the role's inputs checked before any cluster read (the plan's own cases,
with cluster knowledge, are in test_autoscaling.py)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.plans.autoscaling_inputs import (
    entry_errors, input_errors, limit_errors)

GOOD = {'name': 'ocp-gpu-a', 'accelerator': 'nvidia-a100', 'gpus': 8, 'max_replicas': 2}


def test_good_inputs():
    assert input_errors([GOOD, {'label_selector': 'gpu in (a100,h100)', 'accelerator': 'a', 'max_replicas': 1}],
                        gpu_limits=[{'type': 'nvidia-a100', 'min': 0, 'max': 16}],
                        resource_limits={'maxNodesTotal': 10, 'cores': {'min': 0, 'max': 64}},
                        scale_down={'enabled': True, 'delayAfterAdd': '10m', 'utilizationThreshold': '0.5'},
                        max_node_provision_time='15m') == []


@pytest.mark.parametrize('selector,message', [
    ('   ', 'label_selector: a label selector must be a non-empty string'),
    ('gpu notin(a100', "cannot parse label selector 'gpu notin(a100'"),
    ('gpu=a100,', "cannot parse label selector 'gpu=a100,'"),
    ('Gpu.Example/x=y', "key 'Gpu.Example/x'"),
    (['gpu=a100'], 'a label selector must be a string'),
])
def test_label_selector_errors(selector, message):
    errors = entry_errors({'label_selector': selector, 'accelerator': 'a', 'max_replicas': 1}, 'e')
    assert any(message in e for e in errors), errors


def test_limit_types_listed_twice_and_unhashable():
    errors = limit_errors([{'type': 'a', 'min': 0, 'max': 1}, {'type': 'a', 'min': 0, 'max': 1},
                           {'type': ['a'], 'min': 0, 'max': 1}])
    assert errors == ['autoscaling_gpu_limits[1]: type a is listed twice',
                      "autoscaling_gpu_limits[2].type must be a string, got list (quote it in YAML)"]


@pytest.mark.parametrize('kwargs,message', [
    ({'scale_down': {'enabled': True, 'delayAfterAdd': 'twenty minutes'}}, 'must be a duration'),
    ({'scale_down': {'enabled': 'yes'}}, 'enabled must be true or false'),
    ({'scale_down': {'enabled': True, 'utilizationThreshold': 0.5}}, 'quoted string'),
    ({'resource_limits': {'cores': {'min': 8}}}, 'cores.max is required'),
    ({'resource_limits': {'maxNodes': 3}}, "unknown key 'maxNodes'"),
    ({'max_node_provision_time': '30 min'}, 'must be a duration'),
])
def test_bad_cluster_settings(kwargs, message):
    errors = input_errors([GOOD], **kwargs)
    assert any(message in e for e in errors), errors
