# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Device-plugin sharing configs and profiles shared by the tests of gpu/sharing*.py."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


def _ts(replicas, name='nvidia.com/gpu', **block):
    block['resources'] = [{'name': name, 'replicas': replicas}]
    return {'version': 'v1', 'sharing': {'timeSlicing': block}}


def _mps(replicas, name='nvidia.com/gpu', **block):
    block['resources'] = [{'name': name, 'replicas': replicas}]
    return {'version': 'v1', 'sharing': {'mps': block}}


# Seed configs (the seed's "cluster-wide time-slicing", "MPS" and "MIG + time-slicing" recipes).
TS_T4 = _ts(4)


TS_A100 = _ts(10)


MPS_10_RENAMED = _mps(10, renameByDefault=True)


MIG_MIXED_TS = {
    'version': 'v1',
    'flags': {'migStrategy': 'mixed'},
    'sharing': {'timeSlicing': {'resources': [
        {'name': 'nvidia.com/gpu', 'replicas': 2},
        {'name': 'nvidia.com/mig-1g.5gb', 'replicas': 2},
        {'name': 'nvidia.com/mig-2g.10gb', 'replicas': 2},
        {'name': 'nvidia.com/mig-3g.20gb', 'replicas': 3},
        {'name': 'nvidia.com/mig-7g.40gb', 'replicas': 7},
    ]}},
}


SEEDS = [TS_T4, TS_A100, MPS_10_RENAMED, MIG_MIXED_TS]


PROFILES = {
    'time-sliced-4': TS_T4,
    'time-sliced-10': TS_A100,
    'mps-10': MPS_10_RENAMED,
    'unshared': {},
}
