# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every module's documentation, read as ansible-doc reads it (ansible-core's read_docstring; the sidecar
<module>.yml when there is one): a non-empty ``seealso`` whose entries exist, and return values that show their
shape - a top-level return value has a ``sample`` or ``contains``, and a dict (or list of dicts) at any depth has
``contains`` or a non-empty ``sample``."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os

import pytest

from ansible.parsing.plugin_docs import read_docstring

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
MODULES = os.path.join(ROOT, 'plugins', 'modules')
SIDECARS = ('.yml', '.yaml')


def doc_file(path):
    """The file ansible-doc reads a module's documentation from: its sidecar YAML file if there is one."""
    base = os.path.splitext(path)[0]
    return next((base + ext for ext in SIDECARS if os.path.exists(base + ext)), path)


def module_files():
    return sorted(f for f in os.listdir(MODULES) if f.endswith('.py') and not f.startswith('_'))


def collection_dirs(namespace, name):
    """The directories of the installed collection ``namespace.name`` (ANSIBLE_COLLECTIONS_PATH, then the
    ansible_collections packages on the Python path)."""
    roots = [os.path.join(p, 'ansible_collections')
             for p in os.environ.get('ANSIBLE_COLLECTIONS_PATH', '').split(os.pathsep) if p]
    try:
        import ansible_collections
        roots += list(ansible_collections.__path__)
    except ImportError:  # pragma: no cover - the unit tests always run with the collection on the path
        pass
    return [d for d in (os.path.join(r, namespace, name) for r in roots) if os.path.isdir(d)]


def plugin_exists(fqcn, plugin_type='module'):
    """Whether ``fqcn`` names a plugin of ``plugin_type`` in this collection, ansible.builtin or an installed
    collection."""
    parts = fqcn.split('.')
    if len(parts) != 3:
        return False
    namespace, name, plugin = parts
    kind = 'modules' if plugin_type == 'module' else plugin_type
    if (namespace, name) == ('gpuops', 'gpu'):
        dirs = [ROOT]
    elif (namespace, name) == ('ansible', 'builtin'):
        import ansible
        return any(os.path.exists(os.path.join(os.path.dirname(ansible.__file__), sub, plugin + ext))
                   for sub in (kind, os.path.join('plugins', kind)) for ext in ('.py',) + SIDECARS)
    else:
        dirs = collection_dirs(namespace, name)
    return any(os.path.exists(os.path.join(d, 'plugins', kind, plugin + ext))
               for d in dirs for ext in ('.py',) + SIDECARS)


def seealso_problems(module, seealso):
    if not seealso:
        return ['%s: DOCUMENTATION has no seealso' % module]
    problems = []
    for entry in seealso:
        if 'module' in entry or 'plugin' in entry:
            fqcn = entry.get('module') or entry.get('plugin')
            plugin_type = 'module' if 'module' in entry else entry.get('plugin_type', '')
            if not plugin_exists(fqcn, plugin_type):
                problems.append('%s: seealso %s %s does not exist' % (module, plugin_type, fqcn))
        elif 'link' in entry:
            if not (entry['link'].startswith('https://') and entry.get('name') and entry.get('description')):
                problems.append('%s: seealso link %s needs https://, a name and a description' % (module, entry['link']))
        elif not (entry.get('ref') and entry.get('description')):
            problems.append('%s: seealso entry %r names no module, plugin, link or ref' % (module, entry))
    return problems


def shows_dicts(value):
    return value.get('type') in ('dict', 'complex') or (value.get('type') == 'list' and value.get('elements') == 'dict')


def return_problems(module, returns, prefix=''):
    """Top level: a sample or contains on every value; any depth: contains or a non-empty sample on dicts."""
    problems = []
    for key, value in sorted((returns or {}).items()):
        path = prefix + key
        value = value or {}
        if shows_dicts(value) and not value.get('contains') and not value.get('sample'):
            problems.append('%s: return %s (%s) has neither contains nor a sample' % (module, path, value.get('type')))
        elif not prefix and 'sample' not in value and not value.get('contains'):
            problems.append('%s: return %s has neither sample nor contains' % (module, path))
        problems += return_problems(module, value.get('contains'), path + '.')
    return problems


def doc_problems(path):
    module = os.path.splitext(os.path.basename(path))[0]
    data = read_docstring(doc_file(path), verbose=False, ignore_errors=False)
    doc = data.get('doc') or {}
    return seealso_problems(module, doc.get('seealso')) + return_problems(module, data.get('returndocs'))


@pytest.mark.parametrize('name', module_files())
def test_module_docs(name):
    problems = doc_problems(os.path.join(MODULES, name))
    assert not problems, '\n'.join(problems)


def test_every_module_is_checked():
    assert len(module_files()) >= 10


PLANTED = '''
DOCUMENTATION = r"""
module: planted
short_description: A module whose documentation breaks every rule
description: [Planted.]
options: {}
seealso:
  - module: gpuops.gpu.no_such_module
  - module: kubernetes.core.no_such_module
  - module: gpuops.gpu.cluster_policy
  - module: kubernetes.core.k8s_info
  - plugin: gpuops.gpu.no_such_filter
    plugin_type: filter
  - link: http://example.invalid/
    name: Plain
    description: Not https.
"""
RETURN = r"""
count:
  description: A scalar without a sample.
  returned: always
  type: int
ok:
  description: A scalar with a falsy sample.
  returned: always
  type: bool
  sample: false
shape:
  description: A dict without contains or sample.
  returned: always
  type: dict
rows:
  description: Rows whose nested dicts are not shown.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: A nested scalar needs no sample.
      type: str
    detail:
      description: A nested dict with an empty sample.
      type: dict
      sample: {}
    events:
      description: A nested list of dicts, shown by its contains.
      type: list
      elements: dict
      contains:
        meta:
          description: Two levels down, not shown.
          type: dict
"""
'''


def test_planted_violations_are_found(tmp_path):
    path = tmp_path / 'planted.py'
    path.write_text(PLANTED)
    assert doc_problems(str(path)) == [
        'planted: seealso module gpuops.gpu.no_such_module does not exist',
        'planted: seealso module kubernetes.core.no_such_module does not exist',
        'planted: seealso filter gpuops.gpu.no_such_filter does not exist',
        'planted: seealso link http://example.invalid/ needs https://, a name and a description',
        'planted: return count has neither sample nor contains',
        'planted: return rows.detail (dict) has neither contains nor a sample',
        'planted: return rows.events.meta (dict) has neither contains nor a sample',
        'planted: return shape (dict) has neither contains nor a sample',
    ]


def test_planted_missing_seealso(tmp_path):
    path = tmp_path / 'bare.py'
    path.write_text('DOCUMENTATION = """\nmodule: bare\nshort_description: x\n"""\nRETURN = """\n"""\n')
    assert doc_problems(str(path)) == ['bare: DOCUMENTATION has no seealso']
