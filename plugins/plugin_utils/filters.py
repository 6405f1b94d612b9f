# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the filters share: a pure planner's ValueError (the collection's InputErrors are ValueErrors)
becomes the AnsibleFilterError ``<filter name>: <message>``, so a play shows which filter refused what."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import functools

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
