# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the filters share:

- a pure planner's ValueError (the collection's InputErrors are ValueErrors) becomes the AnsibleFilterError
  ``<filter name>: <message>``, so a play shows which filter refused what (``filter_errors``);
- plain containers (``plain_filters``). ansible-core 2.19 hands a filter lazy containers: every read of a value
  templates it again, so pure logic that walks or copies a chart's values or a list of nodes runs hundreds of
  times slower than on plain data (one Helm upgrade plan: 61 s instead of 0.1 s). Every filter of this collection
  takes its arguments through ``plain``, which reads each container once into a plain ``dict``/``list``. Strings
  are left as they are: they keep what ansible-core knows of their origin (unsafe, trusted)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import functools

try:
    from collections.abc import Mapping
except ImportError:  # pragma: no cover - Python 2 is not supported; the import keeps sanity's compile test quiet
    Mapping = dict

from ansible.errors import AnsibleFilterError


def filter_errors(func):
    """``func`` as a filter whose ValueError is raised again as ``AnsibleFilterError('<name>: <message>')``."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except ValueError as exc:
            raise AnsibleFilterError('%s: %s' % (func.__name__, exc))
    return wrapper


def plain(value):
    """``value`` with every mapping a ``dict`` and every list or tuple a ``list``, each read once; the rest as it is."""
    if isinstance(value, Mapping):
        return dict((plain(k), plain(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def plain_filters(filters):
    """``filters`` (name -> function, a FilterModule's ``filters()``) with every function taking its arguments
    through ``plain``."""
    def wrap(func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            return func(*[plain(a) for a in args], **dict((k, plain(v)) for k, v in kwargs.items()))
        return wrapper
    return dict((name, wrap(func)) for name, func in filters.items())
