# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""GPU products for the collection: the MIG catalog's lookups with the user's overrides checked.

gpu/catalog.py is the table of facts and merges overrides as given (the test-bed simulator loads
it by file path, so it imports nothing). Everything in the collection that takes user overrides
(``mig_catalog_overrides``, the filters' ``overrides=``) looks products up here: a bad override
raises :class:`MigCatalogError` with the first problem, worded like every other input check.

Override shape (per product, any GFD spelling)::

    {'memory_slices': 4, 'profiles': {'1g.24gb': {'size': 1, 'placements': [0, 1, 2, 3]},
                                      '1g.6gb+me': None},          # null removes a profile
     'renames': {'7g.80gb': '7g.79gb'}}
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import (
    is_int, type_name, unknown_key_errors)
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import catalog
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.catalog import OVERRIDE_KEYS, PROFILE_KEYS
from ansible_collections.gpuops.gpu.plugins.module_utils.common.errors import InputError


class MigCatalogError(InputError, ValueError):
    """Malformed catalog overrides, or a GPU product the catalog does not know."""


# ---------------------------------------------------------------------------
# Checking overrides
# ---------------------------------------------------------------------------

def _checked(overrides):
    if overrides and not isinstance(overrides, dict):
        raise MigCatalogError('overrides must be a mapping of product -> entry, got %s' % type_name(overrides))
    return overrides


def check_override(name, override, known):
    """Raise MigCatalogError for the first problem of one product's override.

    ``known`` is the catalog the override is merged into (built-ins and earlier overrides).
    """
    if not isinstance(name, str):
        raise MigCatalogError('override product names must be strings, got %s' % type_name(name))
    key = catalog.product_key(name, known)
    where = "overrides for '%s'" % key
    if not isinstance(override, dict):
        raise MigCatalogError('%s must be a mapping, got %s' % (where, type_name(override)))
    _raise(unknown_key_errors(override, OVERRIDE_KEYS, where))
    base = known.get(key) or {}
    changes = override.get('profiles') or {}
    if not isinstance(changes, dict):
        raise MigCatalogError('%s: profiles must be a mapping of profile name -> profile or null, got %s'
                              % (where, type_name(changes)))
    for profile_name, profile in changes.items():
        if profile is not None and not isinstance(profile, dict):
            raise MigCatalogError("%s: profile '%s' must be a mapping or null" % (where, profile_name))
    _check_renames(where, catalog.merge_profiles(base.get('profiles') or {}, {'profiles': changes}),
                   override.get('renames') or {})
    profiles = catalog.merge_profiles(base.get('profiles') or {}, override)
    memory_slices = override.get('memory_slices', base.get('memory_slices', 0))
    if profiles and not (is_int(memory_slices) and memory_slices > 0):
        raise MigCatalogError('%s: memory_slices (a positive integer) is required for a product with MIG '
                              'profiles' % where)
    for profile_name, profile in profiles.items():
        _check_profile("profile '%s' of %s" % (profile_name, key), profile_name, profile, memory_slices)


def _check_renames(where, profiles, renames):
    """Renames apply in order, each to a profile that exists at that point."""
    if not isinstance(renames, dict):
        raise MigCatalogError('%s: renames must be a mapping of old -> new profile name, got %s'
                              % (where, type_name(renames)))
    names = set(profiles)
    for old, new in renames.items():
        if old not in names or not isinstance(new, str):
            raise MigCatalogError('%s: renames must map an existing profile to a new name, got %r -> %r'
                                  % (where, old, new))
        names.discard(old)
        names.add(new)


def _check_profile(where, name, profile, memory_slices):
    if catalog.parse_profile(name) is None:
        raise MigCatalogError('%s: malformed name (expected e.g. 1g.10gb or 1g.10gb+me)' % where)
    _raise(unknown_key_errors(profile, PROFILE_KEYS, where))
    size, placements = profile.get('size'), profile.get('placements')
    if not is_int(size) or size < 1:
        raise MigCatalogError('%s: size (memory slices) must be a positive integer' % where)
    if not isinstance(placements, list) or not placements or not all(is_int(p) for p in placements):
        raise MigCatalogError('%s: placements must be a non-empty list of start slices' % where)
    if any(p < 0 or p + size > memory_slices for p in placements):
        raise MigCatalogError('%s: placements %s with size %d do not fit in %d memory slices'
                              % (where, placements, size, memory_slices))


def _raise(errors):
    if errors:
        raise MigCatalogError('; '.join(errors))


# ---------------------------------------------------------------------------
# Lookups (overrides checked)
# ---------------------------------------------------------------------------

def get_product(product, overrides=None):
    """A copy of the catalog entry for ``product`` (any GFD spelling), or None when unknown."""
    return catalog.get_product(product, _checked(overrides), check_override)


def require_product(product, overrides=None):
    """Like get_product, but raises MigCatalogError naming the known products."""
    if not isinstance(product, str):
        raise MigCatalogError("GPU product must be a string like 'NVIDIA-A100-SXM4-40GB', got %s"
                              % type_name(product))
    entry = get_product(product, overrides)
    if entry is None:
        raise MigCatalogError("unknown GPU product '%s'; known: %s (add it with overrides)"
                              % (product, ', '.join(product_names(overrides))))
    return entry


def product_names(overrides=None):
    """Sorted catalog keys, overrides included."""
    return catalog.product_names(_checked(overrides), check_override)


def products_with_profile(profile, overrides=None):
    """Catalog keys of the products that offer ``profile``."""
    return catalog.products_with_profile(profile, _checked(overrides), check_override)
