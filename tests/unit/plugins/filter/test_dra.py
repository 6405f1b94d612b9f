# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.filter.dra import FilterModule

PLAN = FilterModule().filters()['dra_resources_plan']


def test_namespaces_as_objects_or_names():
    inputs = {'claim_templates': [{'name': 't', 'namespace': 'team-a', 'device_class': 'gpu.nvidia.com'}]}
    existing = {'device_classes': [{'metadata': {'name': 'gpu.nvidia.com'}}]}
    for namespaces in ([{'metadata': {'name': 'team-a'}}], ['team-a']):
        plan = PLAN(inputs, namespaces, existing=existing)
        assert plan['errors'] == [] and plan['summary']['claim_templates'] == ['team-a/t']


def test_errors_are_returned_not_raised():
    plan = PLAN({'device_classes': [{'name': 'a'}], 'quotas': 'x'}, [], served=False)
    assert plan['errors'][0].startswith('resource.k8s.io/v1 is not served')
    assert 'dra_quotas must be a list of mappings, got string' in plan['errors']
