# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""MIG geometry of one GPU: does a layout fit, what does a node advertise.

Pure functions, no I/O. A *geometry* is a mig-parted ``mig-devices`` map
(profile -> count) for ONE GPU. Placement follows NVML: a GPU instance
occupies ``size`` consecutive memory slices starting at one of its profile's
placement starts, and instances may not overlap.

Resource names follow the k8s-device-plugin (v0.20.0, internal/rm/rm.go):
``nvidia.com/mig-`` + profile with ``+`` replaced by ``.``, so ``1g.5gb+me``
is advertised as ``nvidia.com/mig-1g.5gb.me`` under the mixed strategy.

Whole mig-parted documents are checked in gpu/mig_parted.py; the configs the
MIG manager generates and the capacity of a node after a config are in
gpu/mig_configs.py.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import is_int, type_name
from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import (
    GPU_RESOURCE, MIG_RESOURCE_PREFIX, MIG_STRATEGIES)
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.catalog import is_media_extension, parse_profile
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.products import (
    MigCatalogError, products_with_profile, require_product)
from ansible_collections.gpuops.gpu.plugins.module_utils.common.errors import InputError


class MigGeometryError(InputError, ValueError):
    """A geometry, config or capacity question that has no valid answer."""


def resource_name(profile):
    """Device-plugin resource for a MIG profile (mixed strategy)."""
    return MIG_RESOURCE_PREFIX + profile.replace('+', '.')


def config_name_for(profile):
    """Operator/mig-manager built-in config name for a profile: all-1g.5gb.me."""
    return 'all-' + profile.replace('+', '.')


# ---------------------------------------------------------------------------
# Helpers (also used by mig_parted.py and mig_configs.py)
# ---------------------------------------------------------------------------

def nonzero(geometry):
    return dict((name, count) for name, count in (geometry or {}).items() if count)


def _format_geometry(geometry):
    return '{%s}' % ', '.join('%s: %d' % (name, count) for name, count in sorted(geometry.items()))


def _format_starts(starts):
    starts = sorted(starts)
    if len(starts) > 2 and starts == list(range(starts[0], starts[-1] + 1)):
        return '%d-%d' % (starts[0], starts[-1])
    return ','.join(str(s) for s in starts)


def resolve_product(product, overrides):
    """(entry, errors) for a product name."""
    try:
        return require_product(product, overrides), []
    except MigCatalogError as exc:
        return None, [str(exc)]


def product_entry(product, overrides):
    entry, errors = resolve_product(product, overrides)
    if errors:
        raise MigGeometryError('; '.join(errors))
    return entry


def check_strategy(strategy):
    if strategy not in MIG_STRATEGIES:
        raise MigGeometryError("strategy must be one of %s, got %r" % (', '.join(MIG_STRATEGIES), strategy))


def check_gpu_count(value, name):
    if not is_int(value) or value < 1:
        raise MigGeometryError('%s must be a positive integer, got %r' % (name, value))


# ---------------------------------------------------------------------------
# Geometry validation and placement
# ---------------------------------------------------------------------------

def shape_errors(geometry):
    """Type checks that mig-parted itself performs when it parses mig-devices."""
    if not isinstance(geometry, dict):
        return ['geometry must be a mapping of MIG profile -> count, got %s' % type_name(geometry)]
    errors = []
    for name, count in geometry.items():
        if not isinstance(name, str):
            errors.append('profile names must be strings, got %s %r' % (type_name(name), name))
        elif not is_int(count) or count < 0:
            errors.append("count for '%s' must be a non-negative integer, got %r (%s)"
                          % (name, count, type_name(count)))
    if not errors and geometry and not any(geometry.values()):
        errors.append('all counts are 0, which mig-parted rejects; use {} for MIG enabled '
                      'with no instances, or disable MIG')
    return errors


def _unknown_profile_error(name, entry, overrides):
    valid = ', '.join(sorted(entry['profiles'], key=_profile_sort_key)) or 'none (not MIG-capable)'
    message = "profile '%s' is not valid for %s; valid: %s" % (name, entry['product'], valid)
    elsewhere = products_with_profile(name, overrides) if parse_profile(name) else []
    if elsewhere:
        message += ' (%s is a profile of %s)' % (name, ', '.join(elsewhere))
    elif parse_profile(name) is None:
        message += ' (malformed name: expected <g>g.<gb>gb[+me], e.g. 1g.10gb)'
    return message


def _profile_sort_key(name):
    parts = parse_profile(name) or {'g': 0, 'gb': 0}
    return (parts['g'], parts['gb'], name)


def _limit_errors(geometry, entry):
    """Per-profile maxima and the GPU's single set of media engines."""
    product, profiles = entry['product'], entry['profiles']
    media = dict((n, c) for n, c in geometry.items() if is_media_extension(n))
    errors = []
    if sum(media.values()) > 1:
        errors.append('at most one media-extension (+me) instance fits on one %s (one set of media '
                      'engines per GPU); requested %s' % (product, _format_geometry(media)))
    for name, count in sorted(geometry.items()):
        limit = profiles[name]['max']
        if count > limit and not (errors and name in media):
            errors.append('%s: %d requested, at most %d fit on one %s' % (name, count, limit, product))
    return errors


def _compute_errors(geometry, entry):
    """Compute slices: implied by placement on NVIDIA's tables, checked for overrides."""
    compute = sum(entry['profiles'][n]['compute_slices'] * c for n, c in geometry.items())
    if compute <= entry['compute_slices']:
        return []
    return ['geometry %s needs %d compute slices; %s has %d'
            % (_format_geometry(geometry), compute, entry['product'], entry['compute_slices'])]


def _minus_one(geometry, name):
    smaller = dict(geometry)
    smaller[name] -= 1
    return smaller


def _no_fit_error(geometry, entry):
    profiles, slices = entry['profiles'], entry['memory_slices']
    used = sum(profiles[n]['size'] * c for n, c in geometry.items())
    rules = '; '.join('%s starts at %s' % (n, _format_starts(profiles[n]['placements']))
                      for n in sorted(geometry, key=_profile_sort_key, reverse=True))
    message = ('geometry %s does not fit on one %s: it needs %d of %d memory slices and no '
               'non-overlapping placement exists (%s)'
               % (_format_geometry(geometry), entry['product'], used, slices, rules))
    removable = [n for n in sorted(geometry) if find_placement(_minus_one(geometry, n), entry)]
    if removable:
        message += '; it fits with one instance fewer of %s' % ' or '.join(removable)
    return message


def geometry_errors(geometry, product, overrides=None):
    """Human-readable reasons why ``geometry`` cannot be created on one GPU of ``product``.

    An empty list means it fits. ``geometry`` None or {} means no MIG instances.
    """
    entry, errors = resolve_product(product, overrides)
    if errors:
        return errors
    geometry = {} if geometry is None else geometry
    errors = shape_errors(geometry)
    if errors:
        return errors
    active = nonzero(geometry)
    if active and not entry['mig_capable']:
        return ['%s is not MIG-capable; use an empty geometry ({}) with MIG disabled' % entry['product']]
    unknown = [_unknown_profile_error(n, entry, overrides) for n in sorted(active) if n not in entry['profiles']]
    if unknown:
        return unknown
    errors = _limit_errors(active, entry)
    if errors:
        return errors
    if find_placement(active, entry) is None:
        return [_no_fit_error(active, entry)]
    return _compute_errors(active, entry)


def fits(geometry, entry):
    """Whether ``geometry`` (profile -> count, profiles of ``entry``) can be created on one GPU: the rules of
    geometry_errors (per-profile maxima, one media-extension instance, placement, compute slices)."""
    geometry = nonzero(geometry)
    return (not _limit_errors(geometry, entry) and find_placement(geometry, entry) is not None
            and not _compute_errors(geometry, entry))


def _instances(geometry, profiles):
    """One item per instance, most constrained first (largest, fewest starts)."""
    items = []
    for name, count in geometry.items():
        profile = profiles[name]
        items.extend([(name, profile['size'], sorted(profile['placements']))] * count)
    items.sort(key=lambda item: (-item[1], len(item[2]), item[0]))
    return items


def find_placement(geometry, entry):
    """Non-overlapping placement for ``geometry`` on one GPU described by catalog ``entry``.

    Returns ``[{'profile': name, 'start': slice, 'size': slices}, ...]`` sorted by
    start, or None when no placement exists. Raises MigGeometryError for profiles
    the entry does not have.
    """
    geometry = nonzero(geometry)
    unknown = sorted(set(geometry) - set(entry['profiles']))
    if unknown:
        raise MigGeometryError("profile(s) %s not offered by %s" % (', '.join(unknown), entry['product']))
    instances = _instances(geometry, entry['profiles'])
    slices = entry['memory_slices']
    chosen = []

    def place(index, occupied):
        if index == len(instances):
            return True
        name, size, starts = instances[index]
        # Identical instances are interchangeable: only try increasing starts.
        floor = chosen[-1][1] + 1 if index and instances[index - 1][0] == name else 0
        for start in starts:
            mask = ((1 << size) - 1) << start
            if start < floor or start + size > slices or occupied & mask:
                continue
            chosen.append((name, start, size))
            if place(index + 1, occupied | mask):
                return True
            chosen.pop()
        return False

    if not place(0, 0):
        return None
    return [{'profile': n, 'start': s, 'size': z} for n, s, z in sorted(chosen, key=lambda c: (c[1], c[0]))]


# ---------------------------------------------------------------------------
# Capacity
# ---------------------------------------------------------------------------

def _add(capacity, resource, count):
    capacity[resource] = capacity.get(resource, 0) + count


def node_capacity(states, strategy):
    """Allocatable resources of a node from per-GPU (mig_enabled, geometry) states.

    Mirrors k8s-device-plugin v0.20.0 internal/rm/device_map.go: with 'none'
    every GPU is nvidia.com/gpu; with 'mixed' MIG-disabled GPUs are
    nvidia.com/gpu and MIG devices are nvidia.com/mig-<profile>; with 'single'
    all GPUs must share one migEnabled value, no MIG GPU may be empty and all
    MIG devices must be one profile, each then counted as nvidia.com/gpu.
    """
    if strategy == 'none':
        return {GPU_RESOURCE: len(states)}
    if strategy == 'mixed':
        capacity = {}
        for enabled, geometry in states:
            if not enabled:
                _add(capacity, GPU_RESOURCE, 1)
            for name, count in sorted(geometry.items()):
                _add(capacity, resource_name(name), count)
        return dict(sorted(capacity.items()))
    enabled = [geometry for mig_enabled, geometry in states if mig_enabled]
    if not enabled:
        return {GPU_RESOURCE: len(states)}
    if len(enabled) != len(states):
        raise MigGeometryError("strategy 'single' needs MIG enabled on all GPUs of a node or on none; "
                               "%d of %d GPUs would have MIG enabled (use strategy 'mixed')"
                               % (len(enabled), len(states)))
    if not all(enabled):
        raise MigGeometryError("strategy 'single' rejects a GPU with MIG enabled but no MIG devices; "
                               "give every GPU instances or disable MIG")
    names = sorted(set(name for geometry in enabled for name in geometry))
    if len(names) > 1:
        raise MigGeometryError("strategy 'single' needs one MIG profile per node, got %s; use strategy "
                               "'mixed' or a homogeneous geometry such as %s"
                               % (', '.join(names), config_name_for(names[0])))
    return {GPU_RESOURCE: sum(sum(geometry.values()) for geometry in enabled)}


def mig_capacity(geometry, product, strategy='mixed', gpus=1, overrides=None):
    """Expected allocatable for ``gpus`` GPUs of ``product`` all using ``geometry``.

    An empty (or None) geometry means MIG disabled: ``{'nvidia.com/gpu': gpus}``.
    Raises MigGeometryError when the geometry is invalid or the strategy cannot
    expose it.
    """
    check_strategy(strategy)
    check_gpu_count(gpus, 'gpus')
    errors = geometry_errors(geometry, product, overrides)
    if errors:
        raise MigGeometryError('; '.join(errors))
    active = nonzero(geometry)
    return node_capacity([(bool(active), active)] * gpus, strategy)
