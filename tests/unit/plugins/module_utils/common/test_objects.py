# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one accessor of an object's metadata (common/objects.py)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.common.objects import (
    annotations_of, labels_of, meta_of, name_of, namespace_of)

POD = {'kind': 'Pod', 'metadata': {'name': 'p', 'namespace': 'ns', 'labels': {'app': 'x'},
                                   'annotations': {'a': 'b'}}}


def test_reads_the_metadata_of_an_object():
    assert meta_of(POD) is POD['metadata']
    assert labels_of(POD) is POD['metadata']['labels']
    assert annotations_of(POD) is POD['metadata']['annotations']
    assert (name_of(POD), namespace_of(POD)) == ('p', 'ns')


NULLS = {'labels': None, 'annotations': None, 'name': None}


@pytest.mark.parametrize('obj, meta', [(None, {}), ({}, {}), ({'metadata': None}, {}), ({'metadata': {}}, {}),
                                       ({'metadata': NULLS}, NULLS)])
def test_missing_or_null_metadata_reads_as_empty(obj, meta):
    assert meta_of(obj) == meta
    assert labels_of(obj) == {} and annotations_of(obj) == {}
    assert name_of(obj) is None and namespace_of(obj) is None


def test_a_cluster_scoped_object_has_no_namespace():
    node = {'kind': 'Node', 'metadata': {'name': 'n1', 'labels': {'nvidia.com/gpu.present': 'true'}}}
    assert (name_of(node), namespace_of(node)) == ('n1', None)
    assert labels_of(node) == {'nvidia.com/gpu.present': 'true'} and annotations_of(node) == {}
