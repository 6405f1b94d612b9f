# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""mig-parted documents shared by the tests of gpu/mig_parted.py and gpu/mig_configs.py."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


def _doc(configs):
    return {'version': 'v1', 'mig-configs': configs}


GOOD_DOC = _doc({
    'all-disabled': [{'devices': 'all', 'mig-enabled': False}],
    'all-enabled': [{'devices': 'all', 'mig-enabled': True, 'mig-devices': {}}],
    'all-balanced': [
        {'device-filter': ['0x20B010DE', '0x20B110DE', '0x20F110DE', '0x20F610DE'], 'devices': 'all',
         'mig-enabled': True, 'mig-devices': {'1g.5gb': 2, '2g.10gb': 1, '3g.20gb': 1}},
        {'device-filter': '0x20B710DE', 'devices': 'all', 'mig-enabled': True,
         'mig-devices': {'1g.6gb': 2, '2g.12gb': 1}},
        {'device-filter': ['0x233010DE', '0x233110DE', '0x232210DE', '0x20B210DE', '0x20B510DE', '0x20F310DE',
                           '0x20F510DE', '0x232410DE'], 'devices': 'all', 'mig-enabled': True,
         'mig-devices': {'1g.10gb': 2, '2g.20gb': 1, '3g.40gb': 1}},
    ],
    'split-a100': [
        {'devices': [0, 1, 2, 3], 'mig-enabled': True, 'mig-devices': {'1g.5gb': 7}},
        {'devices': [4, 5], 'mig-enabled': True, 'mig-devices': {'3g.20gb': 2}},
        {'devices': [6, 7], 'mig-enabled': False},
    ],
    'with-subsystem': [{'device-filter': '0x20B010DE:0x145010DE', 'devices': 'all', 'mig-enabled': True,
                        'mig-devices': {'1g.5gb+me': 1, '1g.5gb': 6}}],
    'null-devices-disabled': [{'devices': 'all', 'mig-enabled': False, 'mig-devices': None}],
})


def _entry(**fields):
    entry = {'devices': 'all', 'mig-enabled': True, 'mig-devices': {'1g.5gb': 7}}
    for key, value in fields.items():
        key = key.replace('_', '-')
        if value is _DROP:
            entry.pop(key)
        else:
            entry[key] = value
    return entry


_DROP = object()
