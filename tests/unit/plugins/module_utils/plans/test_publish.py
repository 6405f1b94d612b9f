# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests for module_utils.plans.publish: the <namespace>/<name> target, the 1 MiB data limit and who owns
the ConfigMap or Secret a report or an archive is published into."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import base64

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.plans import publish

OPT = 'gpuops_report_publish_configmap'
OURS = {'metadata': {'name': 'r', 'labels': {'app.kubernetes.io/managed-by': 'gpuops.gpu'}}}
FOREIGN = {'metadata': {'name': 'r', 'labels': {'app': 'x'}}}


@pytest.mark.parametrize('value', ['reports', 'a/b/c', '', None, 5, 'Reports/x', 'ns/', '/name', 'ns/Bad_Name'])
def test_bad_targets_are_refused(value):
    namespace, name, errors = publish.publish_target(value, OPT)
    assert errors and all(e.startswith(OPT + ': ') for e in errors)


def test_a_target_splits_into_namespace_and_name():
    assert publish.publish_target('gpu-reports/fleet.report-1', OPT) == ('gpu-reports', 'fleet.report-1', [])


def test_data_size_counts_keys_and_utf8_bytes_and_decodes_base64():
    assert publish.data_size({'a.csv': 'xé'}) == 5 + 3
    for raw in (b'', b'x', b'xy', b'xyz', b'\x00' * 1000):
        encoded = base64.b64encode(raw).decode()
        assert publish.data_size({'k': encoded}, encoded=True) == 1 + len(raw)


def test_data_at_the_limit_fits_and_one_byte_more_does_not():
    at_limit = {'k': 'x' * (publish.MAX_DATA_BYTES - 1)}
    assert publish.size_errors(at_limit, OPT) == []
    [error] = publish.size_errors({'k': 'x' * publish.MAX_DATA_BYTES, 'j': 'yy'}, OPT, 'Secret')
    assert error.startswith(OPT + ': %d bytes' % (publish.MAX_DATA_BYTES + 4))
    assert 'j 2 bytes, k %d bytes' % publish.MAX_DATA_BYTES in error and 'one Secret' in error


def test_a_configmap_follows_the_collections_ownership_rule():
    assert publish.publish_errors('ns/r', OPT, 'ConfigMap', {'a': 'b'}, [OURS]) == []
    assert publish.publish_errors('ns/r', OPT, 'ConfigMap', {'a': 'b'}, []) == []
    [error] = publish.publish_errors('ns/r', OPT, 'ConfigMap', {'a': 'b'}, [FOREIGN])
    assert 'ConfigMap ns/r exists and gpuops.gpu did not create it' in error
    [error] = publish.publish_errors('gpu-operator/default-mig-parted-config', OPT, 'ConfigMap', {})
    assert 'belongs to the GPU operator' in error


def test_a_secret_needs_the_label_and_no_owner():
    option = 'diagnostics_publish_secret'
    assert publish.publish_errors('ns/r', option, 'Secret', {'a': 'eA=='}, [OURS]) == []
    [error] = publish.publish_errors('ns/r', option, 'Secret', {}, [FOREIGN])
    assert error.startswith(option + ': Secret ns/r exists and gpuops.gpu did not create it')
    owned = {'metadata': dict(OURS['metadata'], ownerReferences=[{'kind': 'Deployment', 'name': 'd'}])}
    [error] = publish.publish_errors('ns/r', option, 'Secret', {}, owned)
    assert 'belongs to Deployment d' in error


def test_every_reason_is_given_at_once_and_a_bad_target_stops_early():
    errors = publish.publish_errors('ns/r', OPT, 'ConfigMap', {'k': 'x' * publish.MAX_DATA_BYTES}, [FOREIGN])
    assert len(errors) == 2
    assert len(publish.publish_errors('nope', OPT, 'ConfigMap', {}, [FOREIGN])) == 1
    with pytest.raises(ValueError):
        publish.publish_errors('ns/r', OPT, 'Pod')
