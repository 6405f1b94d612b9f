# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""MIG configs: the ones the MIG manager generates, custom documents over them, and the
capacity a node advertises after one. Pure, no I/O.

The built-in configs are what mig-manager generates from the hardware
(NVIDIA/mig-parted pkg/mig/builder, used by gpu-operator >= v26.3 when no custom
config is set): all-disabled, all-enabled, all-balanced, all-<profile>.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy
import re

from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import type_name
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.catalog import NVIDIA_VENDOR_ID, parse_profile
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.geometry import (
    MigGeometryError, check_gpu_count, check_strategy, config_name_for, node_capacity, nonzero, product_entry)
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.mig_parted import (
    MIG_PARTED_VERSION, as_list, document_errors, effective_entry, matching_entries, mig_parted_errors)

# mig-parted pkg/mig/builder/balanced.go: slots -> {g: count}
_BALANCED_FORMULA = {7: {1: 2, 2: 1, 3: 1}, 4: {1: 2, 2: 1}}
# The names of the operator's built-in configs (docs/facts.md#mig-parted-config-format): these three, and
# all-<profile> with the profile's '+' written as '.' (all-1g.10gb, all-1g.5gb.me, all-1c.3g.20gb, ...), for every
# profile of every GPU, whichever GPUs this cluster has today.
BUILTIN_CONFIG_NAMES = ('all-disabled', 'all-enabled', 'all-balanced')
_BUILTIN_PROFILE_CONFIG_RE = re.compile(r'^all-([0-9]+c\.)?[0-9]+g\.[0-9]+gb(\.[a-z][a-z0-9.,-]*)?$')


def _device_filter_id(entry):
    return '0x%04X%04X' % (int(entry['pci_device_id'], 16), NVIDIA_VENDOR_ID)


def _is_base_profile(name):
    parts = parse_profile(name)
    return not (parts['attributes'] or parts['negative_attributes'])


def _balanced(entry):
    """mig-parted builder: all-balanced for one device, or None."""
    base = [(n, p) for n, p in entry['profiles'].items() if _is_base_profile(n)]
    slots = max([parse_profile(n)['g'] for n, profile in base] or [0])
    formula = _BALANCED_FORMULA.get(slots)
    if formula is None:
        return None
    chosen = {}
    for name, profile in sorted(base):
        g = parse_profile(name)['g']
        if g in formula and (g not in chosen or profile['max'] > chosen[g][1]):
            chosen[g] = (name, profile['max'])
    if set(chosen) != set(formula):
        return None
    return dict((chosen[g][0], count) for g, count in formula.items())


def builtin_document(products, overrides=None):
    """The mig-parted document mig-manager generates for nodes with these GPU products.

    Mirrors NVIDIA/mig-parted pkg/mig/builder (used by gpu-operator >= v26.3 when no
    custom config is set): all-disabled, all-enabled, all-balanced and one
    ``all-<profile>`` config per profile at its maximum count, with device-filters
    when more than one MIG-capable device type is present.
    """
    entries = [product_entry(p, overrides) for p in as_list(products)]
    mig = dict((_device_filter_id(e), e) for e in entries if e['mig_capable'])
    multi = len(mig) > 1
    configs = {
        'all-disabled': [{'devices': 'all', 'mig-enabled': False}],
        'all-enabled': [{'devices': 'all', 'mig-enabled': True, 'mig-devices': {}}],
    }

    def spec(ids, devices):
        item = {'device-filter': sorted(ids)} if multi else {}
        item.update({'devices': 'all', 'mig-enabled': True, 'mig-devices': devices})
        return item

    balanced = [spec([i], _balanced(e)) for i, e in sorted(mig.items()) if _balanced(e)]
    if balanced:
        configs['all-balanced'] = balanced
    by_profile = {}
    for device_id, entry in sorted(mig.items()):
        for name, profile in entry['profiles'].items():
            by_profile.setdefault(name, {}).setdefault(profile['max'], []).append(device_id)
    for name in sorted(by_profile):
        configs[config_name_for(name)] = [spec(ids, {name: count}) for count, ids in sorted(by_profile[name].items())]
    return {'version': MIG_PARTED_VERSION, 'mig-configs': configs}


def is_builtin_config_name(name):
    """True when ``name`` is, or may be, the name of one of the operator's built-in configs."""
    return isinstance(name, str) and (name in BUILTIN_CONFIG_NAMES or bool(_BUILTIN_PROFILE_CONFIG_RE.match(name)))


def builtin_override_errors(custom_configs, allow=False, option='mig_custom_configs',
                            allow_option='mig_allow_builtin_override'):
    """Why ``custom_configs`` may not be written: a custom config named like one of the operator's built-in
    configs replaces it for every node that uses that name (all-disabled redefined with MIG enabled would change
    what a reset to all-disabled does, and what the operator sets on every new MIG-capable node), so each is
    refused unless ``allow``. [] when none is, or when allowed."""
    if allow or not isinstance(custom_configs, dict):
        return []
    return ["%s.%s: '%s' is the name of one of the GPU operator's built-in MIG configs (all-disabled, all-enabled, "
            "all-balanced, all-<profile>); a custom config of that name replaces the built-in one on every node "
            "that uses it: name it differently, or set %s: true to replace the built-in on purpose"
            % (option, name, name, allow_option) for name in sorted(custom_configs, key=str)
            if is_builtin_config_name(name)]


def mig_parted_document(custom_configs, products=None, include_builtin=True, overrides=None):
    """A mig-parted document: ``custom_configs`` (name -> entries) over the built-in configs.

    With ``include_builtin`` the configs mig-manager would generate for ``products`` are
    kept, so built-in names still work when the ClusterPolicy points at a custom ConfigMap;
    ``all-disabled`` is always present (the operator labels new MIG nodes with it).
    Custom configs replace built-ins of the same name. Validate with mig_parted_errors().
    """
    if custom_configs is None:
        custom_configs = {}
    if not isinstance(custom_configs, dict):
        raise MigGeometryError('custom MIG configs must map config name -> list of entries, got %s'
                               % type_name(custom_configs))
    if include_builtin:
        configs = builtin_document(products or [], overrides)['mig-configs']
    else:
        configs = {'all-disabled': [{'devices': 'all', 'mig-enabled': False}]}
    configs.update(copy.deepcopy(custom_configs))
    return {'version': MIG_PARTED_VERSION, 'mig-configs': configs}


def builtin_config(name, product, overrides=None):
    """Per-GPU geometry of an operator built-in config on ``product``, or None.

    ``all-disabled`` and ``all-enabled`` both give {} (no instances); use
    :func:`config_capacity` with ``document=None`` to tell them apart.
    """
    configs = builtin_document([product], overrides)['mig-configs']
    if name not in configs:
        return None
    return dict(configs[name][-1].get('mig-devices') or {})


def config_capacity(document, config_name, product, gpu_count, strategy, overrides=None):
    """Expected allocatable of a node with ``gpu_count`` GPUs of ``product`` after ``config_name``.

    ``document`` None means the operator's built-in configs. Non-MIG GPUs count
    as nvidia.com/gpu. Raises MigGeometryError for invalid documents or
    geometries, MIG GPUs no entry applies to, and strategies that cannot expose
    the result.
    """
    check_strategy(strategy)
    check_gpu_count(gpu_count, 'gpu_count')
    if document is None:
        document = builtin_document([product], overrides)
    errors = document_errors(document)
    if not errors and config_name not in document['mig-configs']:
        errors = ["config '%s' is not defined; defined: %s"
                  % (config_name, ', '.join(sorted(document['mig-configs'])))]
    errors = errors or mig_parted_errors(document, {config_name: [product]}, overrides)
    if errors:
        raise MigGeometryError('; '.join(errors))
    entry = product_entry(product, overrides)
    matching = matching_entries(document['mig-configs'][config_name], entry)
    states = []
    for index in range(gpu_count):
        winner = effective_entry(matching, index)[0]
        if not entry['mig_capable']:
            states.append((False, {}))
        elif winner is None:
            raise MigGeometryError("config '%s' has no entry for GPU %d of %s, so its MIG layout would stay "
                                   "as it was; cover every GPU index or use devices: all"
                                   % (config_name, index, entry['product']))
        else:
            states.append((winner[1]['mig-enabled'], nonzero(winner[1].get('mig-devices'))))
    return node_capacity(states, strategy)
