# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one way to read a Kubernetes object's metadata, as the API returns it (a dict). Pure, no I/O.

Each accessor takes an object that may be None, lack ``metadata``, or carry ``null`` there or in
``labels``/``annotations``, and answers the empty value instead of failing: ``meta_of`` and
``labels_of``/``annotations_of`` a dict (the object's own: copy it before changing it), ``name_of``
and ``namespace_of`` the string or None.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type


def meta_of(obj):
    """``obj['metadata']``; {} when there is none."""
    return (obj or {}).get('metadata') or {}


def labels_of(obj):
    """The object's labels; {} when there are none."""
    return meta_of(obj).get('labels') or {}


def annotations_of(obj):
    """The object's annotations; {} when there are none."""
    return meta_of(obj).get('annotations') or {}


def name_of(obj):
    """The object's name, else None."""
    return meta_of(obj).get('name')


def namespace_of(obj):
    """The object's namespace, else None (cluster-scoped)."""
    return meta_of(obj).get('namespace')
