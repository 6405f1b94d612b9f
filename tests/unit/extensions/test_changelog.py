# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""CHANGELOG.rst is antsibull-changelog's output, never edited by hand: it must equal what
`antsibull-changelog generate` makes from changelogs/changelog.yaml, and the version galaxy.yml declares must be a
release there.

Enabled (renamed from test_changelog.py.disabled) once `antsibull-changelog release` has created CHANGELOG.rst;
from then on a missing CHANGELOG.rst fails, it is never skipped."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import subprocess
import sys

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
TOOL = os.path.join(os.path.dirname(sys.executable), 'antsibull-changelog')


def _yaml(*parts):
    with open(os.path.join(ROOT, *parts)) as handle:
        return yaml.safe_load(handle)


def _changelog():
    path = os.path.join(ROOT, 'CHANGELOG.rst')
    assert os.path.exists(path), ('CHANGELOG.rst is missing: run antsibull-changelog release --version %s '
                                  '(the release step)' % _yaml('galaxy.yml')['version'])
    with open(path) as handle:
        return handle.read()


def test_changelog_rst_is_what_antsibull_changelog_generates(tmp_path):
    current = _changelog()
    out = tmp_path / 'CHANGELOG.rst'
    subprocess.run([TOOL, 'generate', '--output', str(out)], cwd=ROOT, check=True)
    assert out.read_text() == current, ('CHANGELOG.rst differs from antsibull-changelog generate: edit '
                                        'changelogs/ (fragments), never CHANGELOG.rst, and run antsibull-changelog generate')


def test_the_galaxy_version_is_a_release_in_the_changelog():
    _changelog()
    version = _yaml('galaxy.yml')['version']
    releases = _yaml('changelogs', 'changelog.yaml').get('releases') or {}
    assert version in releases, 'galaxy.yml version %s is not released in changelogs/changelog.yaml' % version
    assert 'v%s' % version in _changelog()
