# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The mig role's ClusterPolicy fields: the MIG strategy asked for and the ConfigMap of its custom
configs (docs/mig.md). Pure: the role checks the patch with a server-side dry run before any write,
then writes it through gpuops.gpu.cluster_policy."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import MIG_STRATEGIES

# The config of GPU nodes without a nvidia.com/mig.config label once the ClusterPolicy names a custom
# ConfigMap: MIG off, one of the operator's built-in configs (gpu/mig_configs.py).
UNLABELLED_CONFIG = 'all-disabled'


def policy_patch(strategy='', config_map=''):
    """The ClusterPolicy spec fields the mig role sets: ``mig.strategy`` when a ``strategy`` is asked
    for (empty leaves it as it is), and ``migManager.config`` naming ``config_map`` (empty when there
    are no custom configs, which leaves it as it is) with ``all-disabled`` for nodes without a label.
    {} when there is nothing to set. Raises ValueError for a strategy the operator does not know."""
    if strategy and strategy not in MIG_STRATEGIES:
        raise ValueError('strategy %r is not one of %s' % (strategy, ', '.join(MIG_STRATEGIES)))
    patch = {}
    if strategy:
        patch['mig'] = {'strategy': strategy}
    if config_map:
        patch['migManager'] = {'config': {'name': config_map, 'default': UNLABELLED_CONFIG}}
    return patch
