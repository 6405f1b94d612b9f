# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection tarball `ansible-galaxy collection build` makes: nothing that only the virtual GPU cluster or the
development tooling uses, every user doc and playbook; galaxy.yml has no placeholder links.

The contents rules are tests/runner.py's (its package stage checks the same tarball the same way)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import importlib.util
import os
import subprocess
import sys
import tarfile

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
GALAXY = os.path.join(os.path.dirname(sys.executable), 'ansible-galaxy')


def _runner():
    spec = importlib.util.spec_from_file_location('gpuops_test_runner', os.path.join(ROOT, 'tests', 'runner.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RUNNER = _runner()


@pytest.fixture(scope='module')
def names(tmp_path_factory):
    out = tmp_path_factory.mktemp('build')
    subprocess.run([GALAXY, 'collection', 'build', '--output-path', str(out), '--force'], cwd=ROOT, check=True,
                   stdout=subprocess.PIPE)
    tarball = next(out.glob('*.tar.gz'))
    with tarfile.open(str(tarball)) as tar:
        return tar.getnames()


def test_the_tarball_has_no_testbed_files_and_every_user_doc(names):
    assert RUNNER.tarball_contents_errors(names, root=ROOT) == []
    for name in ('docs/quickstart-openshift.md', 'docs/user-guide.md', 'playbooks/site.yml', 'LICENSE'):
        assert name in names
    for name in ('docs/testbed.md', 'docs/performance.md', 'playbooks/vars/demo.yml', 'tests/testbed/testbed'):
        assert name not in names


def test_the_contents_check_finds_testbed_files_and_missing_docs(names):
    errors = RUNNER.tarball_contents_errors
    planted = list(names) + ['docs/testbed.md', 'playbooks/vars', 'playbooks/vars/demo.yml', 'tests/testbed/gpusim/x.py']
    found = sorted(set(errors(planted, root=ROOT)) - set(errors(names, root=ROOT)))
    assert len(found) == 4 and all('build_ignore' in e for e in found), found
    assert 'playbooks/vars/demo.yml is only for the virtual GPU cluster or development' in ' '.join(found)
    missing = [n for n in names if n not in ('docs/quickstart-openshift.md', 'playbooks/hami.yml')]
    found = sorted(set(errors(missing, root=ROOT)) - set(errors(names, root=ROOT)))
    assert found == ['docs/quickstart-openshift.md is missing from the tarball (users need it): check build_ignore '
                     'in galaxy.yml', 'playbooks/hami.yml is missing from the tarball (users need it): check '
                     'build_ignore in galaxy.yml']


def test_galaxy_metadata_has_no_placeholder_links():
    with open(os.path.join(ROOT, 'galaxy.yml')) as f:
        galaxy = yaml.safe_load(f)
    for key in ('repository', 'documentation', 'homepage', 'issues'):
        value = galaxy.get(key) or ''
        assert not any(p in value for p in ('example.', '.invalid', 'localhost')), '%s: %s' % (key, value)
    assert 'example.invalid' not in yaml.safe_dump(galaxy)
