# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one exception family and the API error words."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.k8s import errors


@pytest.mark.parametrize('cls,changed', [
    (errors.InputError, False), (errors.ApiError, False), (errors.NotReady, True), (errors.InstallFailed, True),
    (errors.RolloutFailed, True), (errors.CheckFailed, True)])
def test_one_base_carrying_result(cls, changed):
    exc = cls('boom', {'nodes': [1]})
    assert isinstance(exc, errors.GpuOpsError) and str(exc) == 'boom'
    assert exc.result == {'nodes': [1]} and exc.changed is changed
    assert cls('no result').result == {}


def test_result_is_a_copy():
    partial = {'a': 1}
    exc = errors.RolloutFailed('x', partial)
    partial['a'] = 2
    assert exc.result == {'a': 1}


class ApiErr(Exception):
    def __init__(self, status, reason, body=None):
        super(ApiErr, self).__init__(reason)
        self.status, self.reason, self.body = status, reason, body


def test_api_error_words():
    forbidden = ApiErr(403, 'Forbidden', json.dumps({'message': 'nodes is forbidden'}))
    assert errors.api_error_message(forbidden) == '403 Forbidden: nodes is forbidden'
    assert errors.api_message(forbidden) == 'nodes is forbidden'
    assert errors.api_error_message(ApiErr(404, 'Not Found', 'not json')) == '404 Not Found'
    assert errors.api_message(ApiErr(404, 'Not Found', 'not json')) == 'Not Found'
    assert errors.api_error_message(OSError('connection refused')) == 'connection refused'
    assert errors.status_of(forbidden) == 403 and errors.status_of(OSError()) is None
