# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The GPU fleet in DRA terms: which stack serves each node, and its DRA devices allocated or free. Pure.

Input: the ResourceSlices and ResourceClaims of ``resource.k8s.io/v1`` as the API returns them (dicts) and
the ``gpu/node.py`` ``node_gpu_info`` dicts of the nodes. Sources of every rule: docs/facts.md ("Dynamic
Resource Allocation").

* Only slices of NVIDIA's driver (``gpu.nvidia.com``) count, and of each pool only the slices of its newest
  generation (older ones are what the driver is replacing). A slice belongs to the node of ``spec.nodeName``;
  the driver names its pool after the node.
* A device is allocated when a claim's ``status.allocation.devices.results[]`` names the driver, its pool
  and its name; several claims may share one device. Its sharing (time-slicing, MPS) is the ``sharing`` of
  the driver's opaque config that applies to the result, chosen as the driver chooses it: class configs
  before claim configs, the last one that names the result's request, else the last one without requests
  whose kind fits the device type (``GpuConfig`` a GPU, ``MigDeviceConfig`` a MIG device).
* The stack of a node: ``device-plugin`` when its capacity holds a GPU extended resource above zero
  (``nvidia.com/gpu``, ``nvidia.com/mig-*``: what the device plugin advertises), ``dra`` when the driver
  publishes a slice for it, ``both``, or ``none``.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.gpuops.gpu.plugins.module_utils.common.objects import meta_of
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import dra
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import node as gpu_node
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.quota import parse_quantity

MIB = 1 << 20
_MIG_NAME = re.compile(r'^(gpu-[0-9]+)-mig-')
VALUE_KEYS = ('string', 'version', 'int', 'bool')  # a DeviceAttribute holds exactly one of these


def _spec(obj):
    return (obj or {}).get('spec') or {}


def current_slices(slices, driver=dra.DRIVER):
    """``(current, stale)``: the driver's slices of the newest generation of their pool, and the number of
    its older ones left out."""
    pools = [(_spec(s).get('pool') or {}, s) for s in slices or [] if _spec(s).get('driver') == driver]
    newest = {}
    for pool, _item in pools:
        newest[pool.get('name')] = max(newest.get(pool.get('name'), 0), int(pool.get('generation') or 0))
    current = [item for pool, item in pools if int(pool.get('generation') or 0) == newest[pool.get('name')]]
    return current, len(pools) - len(current)


def attribute(device, name, driver=dra.DRIVER):
    """The value of a device attribute, named bare or qualified by the driver's domain; None when absent."""
    attributes = device.get('attributes') or {}
    value = attributes.get(name, attributes.get('%s/%s' % (driver, name)))
    if not isinstance(value, dict):
        return None
    return next((value[key] for key in VALUE_KEYS if key in value), None)


def memory_mib(device):
    """The ``memory`` capacity (bytes) in MiB; None when absent or not a quantity."""
    capacity = (device.get('capacity') or {}).get('memory')
    value = capacity.get('value') if isinstance(capacity, dict) else None
    amount = parse_quantity(value) if value is not None else None
    return None if amount is None else int(amount // MIB)


def device_view(device, pool):
    """One published device as the fleet shows it (free until ``mark_allocated``)."""
    return {'name': device.get('name'), 'pool': pool, 'type': attribute(device, 'type'),
            'product': attribute(device, 'productName'), 'profile': attribute(device, 'profile'),
            'uuid': attribute(device, 'uuid'), 'parent_uuid': attribute(device, 'parentUUID'), 'parent': None,
            'memory_mib': memory_mib(device), 'allocated': False, 'claims': [], 'pods': [], 'sharing': None}


def devices_by_node(slices):
    """``{node: [device view]}`` of node-local slices (one entry, maybe empty, per node the driver publishes
    for), devices sorted by name. A MIG device's ``parent`` is the name of its GPU: the device of the pool
    whose ``uuid`` is its ``parentUUID``, else the ``gpu-<minor>`` its own name begins with (the driver's
    MIG device names are ``gpu-<minor>-mig-<profile>-<profile id>-<placement start>``), else the UUID."""
    out = {}
    for item in slices:
        spec = _spec(item)
        if not spec.get('nodeName'):
            continue
        pool = (spec.get('pool') or {}).get('name')
        out.setdefault(spec['nodeName'], []).extend(device_view(d, pool) for d in spec.get('devices') or [])
    for devices in out.values():
        devices.sort(key=lambda d: d['name'] or '')
        names = dict((d['uuid'], d['name']) for d in devices if d['uuid'])
        for device in devices:
            if device['type'] == 'mig':
                canonical = _MIG_NAME.match(device['name'] or '')
                device['parent'] = names.get(device['parent_uuid']) or (
                    canonical.group(1) if canonical else device['parent_uuid'])
    return out


def _claim_configs(allocation, driver):
    """The driver's opaque configs of an allocation in the order the driver applies them (class, then claim)."""
    configs = [c for c in (allocation.get('devices') or {}).get('config') or []
               if ((c.get('opaque') or {}).get('driver')) == driver]
    return sorted(configs, key=lambda c: 0 if c.get('source') == 'FromClass' else 1)


def applied_sharing(configs, request, device_type):
    """The ``sharing`` of the config that applies to a result of ``request`` on a device of ``device_type``
    (see the module docstring); None without one."""
    for config in reversed(configs):
        parameters = (config.get('opaque') or {}).get('parameters') or {}
        kind_fits = dra.CONFIG_KINDS.get(parameters.get('kind')) == device_type
        if request in (config.get('requests') or []) or (not config.get('requests') and kind_fits):
            return parameters.get('sharing') or None
    return None


def allocations(claims, driver=dra.DRIVER):
    """``{(pool, device): [{'claim', 'request', 'pods', 'configs'}]}`` of the driver's allocated devices."""
    out = {}
    for claim in claims or []:
        meta = meta_of(claim)
        status = claim.get('status') or {}
        allocation = status.get('allocation') or {}
        configs = _claim_configs(allocation, driver)
        pods = sorted('%s/%s' % (meta.get('namespace'), r.get('name')) for r in status.get('reservedFor') or []
                      if r.get('resource') == 'pods')
        for result in (allocation.get('devices') or {}).get('results') or []:
            if result.get('driver') != driver:
                continue
            out.setdefault((result.get('pool'), result.get('device')), []).append(
                {'claim': '%s/%s' % (meta.get('namespace'), meta.get('name')), 'request': result.get('request'),
                 'pods': pods, 'configs': configs})
    return out


def mark_allocated(devices, allocated):
    """Fill ``allocated``, ``claims``, ``pods`` and ``sharing`` of the device views from ``allocations``; returns
    the keys it used."""
    used = set()
    for device in devices:
        key = (device['pool'], device['name'])
        holders = allocated.get(key) or []
        if not holders:
            continue
        used.add(key)
        device.update(allocated=True, claims=sorted(set(h['claim'] for h in holders)),
                      pods=sorted(set(p for h in holders for p in h['pods'])))
        shares = [applied_sharing(h['configs'], h['request'], device['type']) for h in holders]
        device['sharing'] = next((s for s in shares if s), None)
    return used


def count_key(device):
    """What a device counts as: its product, ``<product> MIG <profile>`` for a MIG device."""
    product = device.get('product') or 'unknown'
    return '%s MIG %s' % (product, device.get('profile')) if device.get('type') == 'mig' else product


def device_counts(devices):
    """``{count_key: {'total', 'allocated', 'free'}}``."""
    out = {}
    for device in devices:
        entry = out.setdefault(count_key(device), {'total': 0, 'allocated': 0, 'free': 0})
        entry['total'] += 1
        entry['allocated' if device['allocated'] else 'free'] += 1
    return out


def node_stack(info, has_slice):
    """``device-plugin``, ``dra``, ``both`` or ``none`` (see the module docstring)."""
    plugin = any(value > 0 for value in gpu_node.gpu_resources(info.get('capacity')).values())
    return 'both' if plugin and has_slice else 'device-plugin' if plugin else 'dra' if has_slice else 'none'


def dra_node_names(slices, driver=dra.DRIVER):
    """The nodes the driver publishes a current slice for (they count as GPU nodes)."""
    return sorted(set(_spec(s)['nodeName'] for s in current_slices(slices, driver)[0] if _spec(s).get('nodeName')))


def annotate(infos, slices=None, claims=None):
    """Add ``stack``, ``dra_devices`` and ``dra_counts`` to each ``node_gpu_info`` dict (in place) and return
    the cluster's ``dra`` facts: ``{'served': True, 'driver', 'slices', 'stale_slices', 'claims',
    'unknown_allocations'}`` (allocated devices no current slice lists). With ``slices=None`` (DRA not served)
    every node gets its device-plugin view and the facts are ``{'served': False}``."""
    current, stale = current_slices(slices or [])
    by_node = devices_by_node(current)
    allocated = allocations(claims)
    used = set()
    for info in infos:
        devices = by_node.get(info['name'], [])
        used |= mark_allocated(devices, allocated)
        info.update(stack=node_stack(info, info['name'] in by_node), dra_devices=devices,
                    dra_counts=device_counts(devices))
        if info['name'] in by_node:
            info['gpu_node'] = True
    if slices is None:
        return {'served': False}
    published = set((d['pool'], d['name']) for devices in by_node.values() for d in devices)
    unknown = sorted('%s/%s' % key for key in allocated if key not in published)
    return {'served': True, 'driver': dra.DRIVER, 'slices': len(current), 'stale_slices': stale,
            'claims': len(set(h['claim'] for holders in allocated.values() for h in holders)),
            'unknown_allocations': unknown}


def summary(infos):
    """``gpu/node.py`` ``fleet_summary`` with ``stacks`` (GPU nodes by stack) and ``dra_devices``
    (``device_counts`` over every node) added, for nodes that went through ``annotate``."""
    out = gpu_node.fleet_summary(infos)
    stacks, counts = {}, {}
    for info in infos:
        if info.get('gpu_node', True) and info.get('stack'):
            stacks[info['stack']] = stacks.get(info['stack'], 0) + 1
        for key, entry in (info.get('dra_counts') or {}).items():
            total = counts.setdefault(key, {'total': 0, 'allocated': 0, 'free': 0})
            for field in total:
                total[field] += entry[field]
    out.update(stacks=stacks, dra_devices=counts)
    return out
