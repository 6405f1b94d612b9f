# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection ships the whole GPL-3.0 text it is licensed under, and says so in galaxy.yml."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import fnmatch
import os

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))


def read(name):
    with open(os.path.join(ROOT, name)) as f:
        return f.read()


def test_license_is_the_full_gpl3_text():
    text = read('LICENSE')
    assert text.lstrip().startswith('GNU GENERAL PUBLIC LICENSE')
    assert 'Version 3, 29 June 2007' in text
    # the whole text: preamble, all 17 sections, and the end of the terms
    for marker in ('Preamble', 'TERMS AND CONDITIONS', '0. Definitions.', '17. Interpretation of Sections 15 and 16.',
                   'END OF TERMS AND CONDITIONS', 'How to Apply These Terms to Your New Programs'):
        assert marker in text, marker
    assert len(text.splitlines()) > 600


def test_galaxy_declares_gpl3_or_later_and_ships_the_license():
    galaxy = yaml.safe_load(read('galaxy.yml'))
    assert galaxy['license'] == ['GPL-3.0-or-later']
    assert not galaxy.get('license_file'), 'license and license_file are mutually exclusive in galaxy.yml'
    assert not any(fnmatch.fnmatch('LICENSE', pattern) for pattern in galaxy.get('build_ignore') or [])
