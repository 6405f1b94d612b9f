# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""machineset: the helpers behind one GPU MachineSet's patch (zones, taints, capacity annotations)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.module_utils.plans import machineset as M


def test_azure_zone_is_prefixed_with_location():
    assert M.provider_zone_region({'zone': '2', 'location': 'eastus'}) == ('eastus-2', 'eastus')
    assert M.provider_zone_region({'zone': 'us-central1-a', 'region': 'us-central1'}) == ('us-central1-a', 'us-central1')
    assert M.provider_zone_region({}) == (None, None)


def test_taint_and_pair_helpers():
    assert M.merge_taints([{'key': 'a', 'value': 'x', 'effect': 'NoSchedule'}, {'key': 'b', 'effect': 'NoExecute'}],
                          [{'key': 'a', 'value': 'y', 'effect': 'NoSchedule'}]) == [
        {'key': 'b', 'effect': 'NoExecute'}, {'key': 'a', 'value': 'y', 'effect': 'NoSchedule'}]
    assert M.render_taints([{'key': 'a', 'value': 'y', 'effect': 'NoSchedule'}, {'key': 'b', 'effect': 'NoExecute'}]) \
        == 'a=y:NoSchedule,b:NoExecute'
    assert M.merge_pairs('x=1, y=2', {'y': '3', 'a': '0'}) == 'x=1,y=3,a=0'
