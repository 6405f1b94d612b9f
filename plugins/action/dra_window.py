# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""gpuops.gpu.dra_window's action: runs the module and prints its progress (plugins/plugin_utils/rollout_progress.py)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.plugin_utils.rollout_progress import RolloutProgressAction


class ActionModule(RolloutProgressAction):
    """Runs gpuops.gpu.dra_window with progress in the job output."""
