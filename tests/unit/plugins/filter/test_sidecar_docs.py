# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one sidecar-documentation test: every filter of every FilterModule in plugins/filter/*.py has a
plugins/filter/<name>.yml that ansible-doc can read (name, version_added of a real release, options that
match the Python signature, examples that call the filter, a documented return value), and every
sidecar belongs to a filter. New filter files are picked up without touching this test."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import glob
import importlib
import inspect
import os

import pytest
import yaml

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..', '..')
FILTER_DIR = os.path.join(ROOT, 'plugins', 'filter')
PACKAGE = 'ansible_collections.gpuops.gpu.plugins.filter.'


def _load(path):
    with open(path) as handle:
        return yaml.safe_load(handle)


def _filters():
    """{filter name: (python file stem, function)} over every FilterModule in plugins/filter."""
    found = {}
    for path in sorted(glob.glob(os.path.join(FILTER_DIR, '*.py'))):
        stem = os.path.splitext(os.path.basename(path))[0]
        if stem == '__init__':
            continue
        module = importlib.import_module(PACKAGE + stem)
        for name, func in module.FilterModule().filters().items():
            assert name not in found, 'filter %s defined in %s.py and %s.py' % (name, found.get(name, ('',))[0], stem)
            found[name] = (stem, func)
    return found


def _releases():
    """Versions a plugin may name in version_added: every release in the changelog, the version galaxy.yml
    names, and the next minor version after it (what work landed since that release ships in; galaxy.yml moves
    to it at the release)."""
    changelog = _load(os.path.join(ROOT, 'changelogs', 'changelog.yaml')) or {}
    galaxy = str(_load(os.path.join(ROOT, 'galaxy.yml'))['version'])
    major, minor = galaxy.split('.')[:2]
    return set(str(v) for v in (changelog.get('releases') or {})) | {galaxy, '%s.%d.0' % (major, int(minor) + 1)}


def _descriptions(node):
    """Every description line in a doc tree (a stray ': ' in YAML turns one into a mapping)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == 'description':
                yield from (value if isinstance(value, list) else [value])
            else:
                yield from _descriptions(value)
    elif isinstance(node, list):
        for item in node:
            yield from _descriptions(item)


FILTERS = _filters()
RELEASES = _releases()


def test_filters_found():
    assert len(FILTERS) >= 30, sorted(FILTERS)


def test_every_sidecar_belongs_to_a_filter():
    sidecars = set(os.path.splitext(os.path.basename(p))[0] for p in glob.glob(os.path.join(FILTER_DIR, '*.yml')))
    assert sorted(sidecars - set(FILTERS)) == []


@pytest.mark.parametrize('name', sorted(FILTERS))
def test_sidecar_docs(name):
    path = os.path.join(FILTER_DIR, name + '.yml')
    assert os.path.isfile(path), 'filter %s (%s.py) has no sidecar %s.yml' % (name, FILTERS[name][0], name)
    docs = _load(path)
    assert sorted(docs) == ['DOCUMENTATION', 'EXAMPLES', 'RETURN']
    doc = docs['DOCUMENTATION']
    assert doc['name'] == name
    assert str(doc['version_added']) in RELEASES, 'version_added %s is not one of %s' % (
        doc['version_added'], sorted(RELEASES))
    assert doc['short_description'] and doc['description'] and doc['author']
    assert all(isinstance(text, str) and text.strip() for text in _descriptions(docs)), 'a description is not text'
    assert isinstance(docs['EXAMPLES'], str) and 'gpuops.gpu.' + name in docs['EXAMPLES']
    assert set(docs['RETURN']) == {'_value'} and docs['RETURN']['_value']['type']


@pytest.mark.parametrize('name', sorted(FILTERS))
def test_sidecar_options_match_the_signature(name):
    """_input is the first parameter; every other parameter is documented and nothing else is;
    ``positional`` names the leading parameters in order."""
    doc = _load(os.path.join(FILTER_DIR, name + '.yml'))['DOCUMENTATION']
    params = [p for p in inspect.signature(FILTERS[name][1]).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    options = doc.get('options') or {}
    assert options.get('_input', {}).get('required') is True
    assert sorted(options) == sorted(['_input'] + [p.name for p in params[1:]])
    positional = [p.strip() for p in str(doc.get('positional', '_input')).split(',')]
    assert positional == ['_input'] + [p.name for p in params[1:len(positional)]]
    for param in params[1:]:
        if param.default is param.empty:
            assert options[param.name].get('required') is True, '%s is required by the function' % param.name
