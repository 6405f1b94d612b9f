# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The opaque claim configuration of NVIDIA's DRA driver (``GpuConfig``, ``MigDeviceConfig``), built from a
typed share and checked by the rules the driver applies when it prepares a claim. Pure, no I/O.

A share (``sharing`` in the role's inputs)::

    strategy: TimeSlicing | MPS
    interval: Default | Short | Medium | Long              # TimeSlicing on whole GPUs only
    active_thread_percentage: 0..100                       # MPS
    pinned_memory_limit: 10Gi                              # MPS, every device
    per_device_pinned_memory_limit: {0: 5Gi, GPU-<uuid>: 8Gi}   # MPS, by device index or UUID

The driver's rules (docs/facts.md, "Dynamic Resource Allocation"): a strategy is accepted only while its
feature gate is on (TimeSlicing: ``TimeSlicingSettings``, MPS: ``MPSSupport``); TimeSlicing takes no MPS
settings and MPS no time-slicing settings; the interval is one of four names; the active thread
percentage lies in 0..100; a pinned memory limit is at least 1Mi (it is passed in whole MiB); a
per-device key is a device index of the claim or a device UUID. A MIG device's configuration
(``MigDeviceConfig``) has no time-slicing settings.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import (
    is_ascii_digits, is_int, type_name, unknown_key_errors)
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.dra import (
    ACTIVE_THREAD_PERCENTAGE, CONFIG_API_VERSION, GPU_CONFIG_KIND, MIG_CONFIG_KIND, MPS, SHARING_STRATEGIES,
    STRATEGY_GATES, TIME_SLICE_INTERVALS, TIME_SLICING)
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.quota import parse_quantity

SHARE_KEYS = ('strategy', 'interval', 'active_thread_percentage', 'pinned_memory_limit',
              'per_device_pinned_memory_limit')
MPS_KEYS = ('active_thread_percentage', 'pinned_memory_limit', 'per_device_pinned_memory_limit')
MIB = 1024 * 1024
_UUID_RE = re.compile(r'^(GPU|MIG)-[0-9A-Za-z-]+$', re.ASCII)


def enabled_gates(gates):
    """(set of enabled driver feature gate names, errors) from a list of names or a {name: bool} mapping."""
    if gates is None:
        return set(), []
    if isinstance(gates, dict):
        bad = ['feature gate %s must be true or false, got %s' % (k, type_name(v))
               for k, v in gates.items() if not isinstance(v, bool)]
        return set(k for k, v in gates.items() if v is True), bad
    if isinstance(gates, (list, tuple)) and all(isinstance(g, str) for g in gates):
        return set(gates), []
    return set(), ['the driver feature gates must be a list of names or a mapping of name to true/false, got %s'
                   % type_name(gates)]


def _limit_errors(value, path):
    amount = parse_quantity(value) if not isinstance(value, bool) else None
    if amount is None:
        return ['%s must be a quantity such as 10Gi, got %s %r' % (path, type_name(value), value)]
    if amount < MIB:
        return ['%s %s is below 1Mi: the driver passes the limit in whole MiB and refuses one that rounds to 0'
                % (path, value)]
    return []


def _device_key_errors(key, path, count):
    text = str(key) if is_int(key) else key
    if isinstance(text, str) and is_ascii_digits(text):
        if count is not None and int(text) >= count:
            return ['%s: device index %s is not among the %d device(s) the request allocates (0..%d)'
                    % (path, text, count, count - 1)]
        return []
    if isinstance(text, str) and _UUID_RE.match(text):
        return []
    return ['%s: key %r must be a device index (0, 1, ...) or a device UUID (GPU-... or MIG-...)' % (path, key)]


def _mps_errors(share, path, count):
    errors = []
    percentage = share.get('active_thread_percentage')
    low, high = ACTIVE_THREAD_PERCENTAGE
    if percentage is not None and (not is_int(percentage) or not low <= percentage <= high):
        errors.append('%s.active_thread_percentage must be a whole number from %d to %d, got %r'
                      % (path, low, high, percentage))
    if share.get('pinned_memory_limit') is not None:
        errors.extend(_limit_errors(share['pinned_memory_limit'], path + '.pinned_memory_limit'))
    per_device = share.get('per_device_pinned_memory_limit')
    if per_device is not None:
        where = path + '.per_device_pinned_memory_limit'
        if not isinstance(per_device, dict) or not per_device:
            errors.append('%s must be a non-empty mapping of device index or UUID to a quantity, got %s'
                          % (where, type_name(per_device)))
        else:
            for key, value in per_device.items():
                errors.extend(_device_key_errors(key, where, count))
                errors.extend(_limit_errors(value, '%s[%s]' % (where, key)))
    return errors


def _strategy_errors(share, path, gates, mig):
    strategy = share.get('strategy')
    if strategy not in SHARING_STRATEGIES:
        return ['%s.strategy must be one of %s, got %r' % (path, ', '.join(SHARING_STRATEGIES), strategy)]
    errors = []
    gate = STRATEGY_GATES[strategy]
    if gate not in gates:
        errors.append('%s: sharing with %s needs the DRA driver feature gate %s, which is off: NVIDIA\'s driver refuses '
                      'the claim when it prepares it; enable %s in the driver\'s feature gates (and list it in '
                      'dra_driver_feature_gates) or remove the share' % (path, strategy, gate, gate))
    if strategy == TIME_SLICING:
        errors.extend('%s.%s is an MPS setting; a TimeSlicing share takes only interval' % (path, key)
                      for key in MPS_KEYS if share.get(key) is not None)
        interval = share.get('interval')
        if interval is not None and mig:
            errors.append('%s.interval: a MIG device has no time-slicing settings (MigDeviceConfig); leave interval '
                          'out' % path)
        elif interval is not None and interval not in TIME_SLICE_INTERVALS:
            errors.append('%s.interval must be one of %s, got %r' % (path, ', '.join(TIME_SLICE_INTERVALS), interval))
    elif share.get('interval') is not None:
        errors.append('%s.interval is a TimeSlicing setting; an MPS share takes active_thread_percentage, '
                      'pinned_memory_limit and per_device_pinned_memory_limit' % path)
    return errors


def sharing_errors(share, path, gates, mig=False, count=None):
    """Every problem with a typed share ([] when the driver will accept it).

    ``gates``: the enabled driver feature gates (a set of names); ``mig``: the share is of MIG devices;
    ``count``: how many devices the request allocates (None when unknown), for the per-device indexes.
    """
    if not isinstance(share, dict):
        return ['%s must be a mapping with strategy (TimeSlicing or MPS), got %s' % (path, type_name(share))]
    errors = unknown_key_errors(share, SHARE_KEYS, path)
    errors.extend(_strategy_errors(share, path, gates, mig))
    if share.get('strategy') == MPS:
        errors.extend(_mps_errors(share, path, count))
    return errors


def config_parameters(share, mig=False):
    """The opaque parameters (GpuConfig, or MigDeviceConfig for MIG devices) of a share checked by
    sharing_errors; explicit where the driver would default (a TimeSlicing GPU share names its interval)."""
    sharing = {'strategy': share['strategy']}
    if share['strategy'] == TIME_SLICING and not mig:
        sharing['timeSlicingConfig'] = {'interval': share.get('interval') or 'Default'}
    elif share['strategy'] == MPS:
        mps = {}
        if share.get('active_thread_percentage') is not None:
            mps['defaultActiveThreadPercentage'] = share['active_thread_percentage']
        if share.get('pinned_memory_limit') is not None:
            mps['defaultPinnedDeviceMemoryLimit'] = str(share['pinned_memory_limit'])
        if share.get('per_device_pinned_memory_limit'):
            mps['defaultPerDevicePinnedMemoryLimit'] = dict(
                (str(k), str(v)) for k, v in share['per_device_pinned_memory_limit'].items())
        sharing['mpsConfig'] = mps
    return {'apiVersion': CONFIG_API_VERSION, 'kind': MIG_CONFIG_KIND if mig else GPU_CONFIG_KIND, 'sharing': sharing}
