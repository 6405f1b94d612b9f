# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet report page's text helpers (the page itself is checked through gpu/fleet_report.py's render in
test_fleet_report.py)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import fleet_report_html as frh


def test_esc_escapes_text_and_attributes_and_shows_none_as_empty():
    assert frh.esc('<a href="x">&\'</a>') == '&lt;a href=&quot;x&quot;&gt;&amp;&#x27;&lt;/a&gt;'
    assert frh.esc(None) == '' and frh.esc(3) == '3'


@pytest.mark.parametrize('number,text', [(2, '+2'), (-3, '-3'), (0, '±0')])
def test_signed(number, text):
    assert frh.signed(number) == text


def test_utc_text_has_milliseconds():
    assert frh.utc_text(1795538401.1234) == '2026-11-24T16:40:01.123Z'


@pytest.mark.parametrize('seconds,words', [(12.34, '12.3 s'), (754, '12 min 34 s'), (3 * 3600 + 120, '3 h 02 min')])
def test_seconds_words(seconds, words):
    assert frh.seconds_words(seconds) == words
