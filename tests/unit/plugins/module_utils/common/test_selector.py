# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one label-selector parser: Kubernetes' grammar, and the cases where the three old copies
(rollout engine, autoscaling plan, install inputs) disagreed."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.common.selector import (
    SelectorError, parse_selector, selector_errors, selector_matches, selector_text)


@pytest.mark.parametrize('text,expected', [
    ('a=b', [('a', 'in', ('b',))]),
    ('a==b', [('a', 'in', ('b',))]),
    ('a!=b', [('a', 'notin', ('b',))]),
    ('a', [('a', 'exists', ())]),
    ('!a', [('a', '!', ())]),
    ('a in (y,x,y)', [('a', 'in', ('x', 'y'))]),
    ('a = b', [('a', 'in', ('b',))]),
    ('example.com/x=y', [('example.com/x', 'in', ('y',))]),
    ('a=b,c in (x,y),!d,e', [('a', 'in', ('b',)), ('c', 'in', ('x', 'y')), ('d', '!', ()), ('e', 'exists', ())]),
    # empty values: 'a=' compares with '', '()' is (''), empty list items are ''
    ('a=', [('a', 'in', ('',))]),
    ('a!=', [('a', 'notin', ('',))]),
    ('a in ()', [('a', 'in', ('',))]),
    ('a in (x,,y)', [('a', 'in', ('', 'x', 'y'))]),
    # 'in'/'notin' are words only after a key
    ('a=in', [('a', 'in', ('in',))]),
    ('in', [('in', 'exists', ())]),
    ('', []),
    ('  ', []),
    (None, []),
])
def test_parse(text, expected):
    assert parse_selector(text) == expected


@pytest.mark.parametrize('text', [
    # accepted by the engine's and autoscaling's copies, rejected by install's (or the other way):
    'a notin(1)', 'a in(x)', '! a', 'a notin (1)',
])
def test_valid_where_the_copies_disagreed(text):
    assert parse_selector(text)


@pytest.mark.parametrize('text,match', [
    # accepted by some old copies, rejected by Kubernetes and so by the one parser now
    ('a in (x y)', "found 'y'"),
    ('a=b c', "found 'c'"),
    ('a,', "found 'end of string'"),
    (',a', "found ','"),
    ('a,,b', "found ','"),
    ('Ab/c=d', "prefix 'Ab'"),
    ('x/y/z', "prefix 'x/y'"),
    ('a=-b', "value of a"),
    ('-a', "key '-a'"),
    ('a=' + 'x' * 64, 'value of a'),
    ('a=b=c', "found '='"),
    ('a in x', "expected '\\('"),
    ('a=(x)', "found '\\('"),
    # rejected by all copies
    ('!a=b', "found '='"),
    ('a! =b', "found '!'"),
    ('a>1', "operator '>' is not supported"),
    ('a<1', "operator '<' is not supported"),
])
def test_invalid(text, match):
    with pytest.raises(SelectorError, match=match):
        parse_selector(text)


def test_not_a_string():
    with pytest.raises(SelectorError, match='must be a string'):
        parse_selector(['a=b'])
    assert issubclass(SelectorError, ValueError)


@pytest.mark.parametrize('text,labels,expected', [
    ('gpu=a100', {'gpu': 'a100'}, True),
    ('gpu==a100', {'gpu': 'h100'}, False),
    ('gpu=a100', {}, False),
    ('gpu!=a100', {}, True),            # notin/!= hold when the key is absent
    ('gpu!=a100', {'gpu': 'a100'}, False),
    ('gpu notin (a100)', {}, True),
    ('gpu', {'gpu': ''}, True),
    ('gpu', None, False),
    ('!gpu', {'gpu': 'x'}, False),
    ('!gpu', {}, True),
    ('gpu=', {'gpu': ''}, True),
    ('gpu=', {}, False),
    ('gpu in (a100, h100),zone notin (b)', {'gpu': 'h100', 'zone': 'a'}, True),
    ('gpu in (a100,h100),zone notin (b)', {'gpu': 'h100', 'zone': 'b'}, False),
    ('pool=train,zone', {'pool': 'train'}, False),
    ('', {}, True),
])
def test_matches(text, labels, expected):
    assert selector_matches(parse_selector(text), labels) is expected


@pytest.mark.parametrize('text', ['a=b', '!a', 'a', 'a notin (x,y)', 'a!=', 'a in (,x)', 'a=b,c!=d'])
def test_text_round_trip(text):
    reqs = parse_selector(text)
    assert parse_selector(selector_text(reqs)) == reqs


@pytest.mark.parametrize('text', [None, '', 'a=b,!c'])
def test_selector_errors_none_for_a_valid_selector(text):
    assert selector_errors(text, 'pod_selector') == []


def test_selector_errors_names_the_option():
    errors = selector_errors('a in (x', 'nfd_gpu_node_selector')
    assert len(errors) == 1 and errors[0].startswith('nfd_gpu_node_selector: ')
