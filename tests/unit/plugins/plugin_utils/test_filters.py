# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests for what the filters share (plugins/plugin_utils/filters.py): plain containers, read once."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import importlib
import os

try:
    from collections.abc import Mapping
except ImportError:
    Mapping = dict

from ansible_collections.gpuops.gpu.plugins.plugin_utils.filters import plain, plain_filters

FILTER_DIR = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..', 'plugins', 'filter')


class Counting(Mapping):
    """A mapping that counts the reads of its values, as ansible-core 2.19's lazy containers template each read."""

    def __init__(self, data):
        self.data, self.reads = data, 0

    def __getitem__(self, key):
        self.reads += 1
        return self.data[key]

    def __iter__(self):
        return iter(self.data)

    def __len__(self):
        return len(self.data)


class Tagged(str):
    """A string with what ansible-core knows of its origin (AnsibleUnsafeText, a tagged str)."""


def test_plain_reads_each_container_once_and_keeps_strings():
    label = Tagged('{{ lookup("pipe", "id") }}')
    inner = Counting({'name': label, 'gpus': (1, 2)})
    outer = Counting({'node': inner, 'list': (inner,)})
    out = plain(outer)
    assert out == {'node': {'name': label, 'gpus': [1, 2]}, 'list': [{'name': label, 'gpus': [1, 2]}]}
    assert [t.__name__ for t in (type(out), type(out['node']), type(out['list']))] == ['dict', 'dict', 'list']
    assert out['node']['name'] is label  # the very string: its origin kept
    assert outer.reads == 2 and inner.reads == 4


def test_a_wrapped_filter_gets_plain_arguments():
    seen = []

    def planner(value, other=None):
        """Reads its argument many times, as a planner walking nodes does."""
        for _read in range(10):
            seen.append((type(value), value['a'], type(other), other and other[0]))
        return 'done'

    wrapped = plain_filters({'planner': planner})['planner']
    value = Counting({'a': 1})
    assert wrapped(value, other=(Counting({'b': 2}),)) == 'done'
    assert value.reads == 1 and seen[0] == (dict, 1, list, {'b': 2})
    assert wrapped.__name__ == 'planner' and wrapped.__wrapped__ is planner


def test_every_filter_of_the_collection_takes_plain_arguments():
    names = sorted(f[:-3] for f in os.listdir(FILTER_DIR) if f.endswith('.py') and not f.startswith('_'))
    assert len(names) > 20, names
    unwrapped = []
    for name in names:
        module = importlib.import_module('ansible_collections.gpuops.gpu.plugins.filter.' + name)
        for filter_name, func in module.FilterModule().filters().items():
            if getattr(func, '__code__', None) is not plain_filters({'x': len})['x'].__code__:
                unwrapped.append('%s.%s' % (name, filter_name))
    assert unwrapped == [], 'filters that do not go through plain_filters: %s' % unwrapped
