# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one exception family and the API error words."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.common import errors


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


def _public_exceptions():
    """Every public exception class defined in plugins/module_utils, found by importing each file."""
    import importlib
    import inspect
    import os
    root = os.path.join(os.path.dirname(errors.__file__), '..')
    found = []
    for pkg in sorted(os.listdir(root)):
        folder = os.path.join(root, pkg)
        if not os.path.isdir(folder) or pkg.startswith('_'):
            continue
        for name in sorted(f[:-3] for f in os.listdir(folder) if f.endswith('.py') and f != '__init__.py'):
            mod = importlib.import_module('ansible_collections.gpuops.gpu.plugins.module_utils.%s.%s' % (pkg, name))
            found += [obj for cname, obj in vars(mod).items()
                      if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == mod.__name__
                      and not cname.startswith('_')]
    return found


def test_every_public_exception_is_one_of_the_family():
    found = _public_exceptions()
    names = sorted(cls.__name__ for cls in found)
    # the pure planners' errors are input errors that filters also catch as ValueError
    for required in ('SelectorError', 'ImageRefError', 'MigCatalogError', 'MigGeometryError', 'PolicyError', 'OlmError'):
        assert required in names
    outside = [cls.__name__ for cls in found if not issubclass(cls, errors.GpuOpsError)]
    assert outside == []
    for cls in found:
        if cls.__module__ == errors.__name__:  # the family itself
            continue
        if issubclass(cls, errors.RolloutFailed):  # a rollout that stops midway (the lock lost): the partial result
            assert cls.__module__.rsplit('.', 2)[-2] == 'rollout', cls
            continue
        assert issubclass(cls, errors.InputError) and issubclass(cls, ValueError), cls
