# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_nodes_info results and their fleet table, shared by the tests of gpu/fleet.py and gpu/fleet_report.py."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import node as gpu_node
from ansible_collections.gpuops.gpu.tests.unit.plugins.module_utils.gpu_cluster_data import NODES, PODS


def _with_driver_labels(nodes):
    """The nodes, a100-0 with GFD's driver-version/runtime-version labels, h100-0 with the older
    cuda.driver.* / cuda.runtime.* ones only."""
    nodes = copy.deepcopy(nodes)
    for item in nodes:
        labels = item['metadata'].setdefault('labels', {})
        if item['metadata']['name'] == 'a100-0':
            labels.update({'nvidia.com/cuda.driver-version.full': '570.172.08',
                           'nvidia.com/cuda.driver-version.major': '570',
                           'nvidia.com/cuda.runtime-version.full': '12.8'})
        elif item['metadata']['name'] == 'h100-0':
            labels.update({'nvidia.com/cuda.driver.major': '580', 'nvidia.com/cuda.driver.minor': '95',
                           'nvidia.com/cuda.driver.rev': '05', 'nvidia.com/cuda.runtime.major': '13',
                           'nvidia.com/cuda.runtime.minor': '0'})
    return nodes


INFOS = gpu_node.fleet_info(gpu_node.select_nodes(_with_driver_labels(NODES))[0], PODS)


SUMMARY = gpu_node.fleet_summary(INFOS)


# (each row split in two literals to keep the source lines short)
TABLE = '\n'.join([
    'NODE     PRODUCT                GPUS  MIG                         SHARING         DRIVER      CUDA  '
    'ALLOCATABLE                         REQUESTED                    PODS  STACK  DRA USED/ALL  READY  CORDONED',
    'a100-0   NVIDIA-A100-SXM4-40GB    56  single/all-1g.5gb/success   -               570.172.08  12.8  '
    'gpu:56                              gpu:4                           2  -      -             yes    no',
    'h100-0   NVIDIA-H100-80GB-HBM3     8  mixed/all-balanced/pending  -               580.95.05   13.0  '
    'gpu:4 mig-1g.10gb:14 mig-3g.40gb:2  mig-1g.10gb:3 mig-3g.40gb:1     1  -      -             yes    yes',
    'l40s-0   NVIDIA-L40S               4  -                           mps/10          -           -     '
    'gpu.shared:40                       gpu.shared:3                    1  -      -             no     no',
    'plain-0  -                         -  -                           -               -           -     '
    'gpu:2                               -                               0  -      -             yes    no',
    't4-0     Tesla-T4                  1  -                           time-slicing/4  -           -     '
    'gpu:4                               gpu:2                           2  -      -             yes    no',
])
