# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Reading the AWX/AAP objects of extensions/awx/ as Ansible would: YAML whose ``!unsafe`` values (AWX-side
Jinja that must reach AWX untouched) come back as :class:`Unsafe` strings, never templated by the tests."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import re

import jinja2
import jinja2.nativetypes
import yaml

AWX = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..', 'extensions', 'awx'))
# the loader of extensions/awx/ (a playbook) and the collection it needs; every other *.yml there holds objects
LOADER = os.path.join(AWX, 'configure.yml')
LOADER_REQUIREMENTS = os.path.join(AWX, 'requirements.yml')
SINGLE_EXPRESSION = re.compile(r'^\s*\{\{((?:(?!\{\{|\}\}).)*)\}\}\s*$', re.S)


class Unsafe(str):
    """A value tagged ``!unsafe``: Ansible sends it as it is written."""


class _Loader(yaml.SafeLoader):
    pass


_Loader.add_constructor('!unsafe', lambda loader, node: Unsafe(loader.construct_scalar(node)))
yaml.SafeDumper.add_representer(Unsafe, lambda dumper, value: dumper.represent_str(str(value)))


def load_awx(stream):
    """The YAML document of ``stream`` (a file or text), with ``!unsafe`` values as Unsafe."""
    return yaml.load(stream, Loader=_Loader)  # nosec - a SafeLoader with one extra scalar tag


def as_sent(value, context):
    """What the loader hands the awx.awx module: strings templated once with ``context`` (a lone ``{{ expression }}``
    keeps its type), ``!unsafe`` ones as written. Raises jinja2.TemplateError for an undefined variable."""
    if isinstance(value, dict):
        return dict((k, as_sent(v, context)) for k, v in value.items())
    if isinstance(value, list):
        return [as_sent(v, context) for v in value]
    if isinstance(value, Unsafe):
        return str(value)
    if not isinstance(value, str) or '{{' not in value:
        return value
    single = SINGLE_EXPRESSION.match(value)
    if single:
        env = jinja2.nativetypes.NativeEnvironment(undefined=jinja2.StrictUndefined)
        result = env.compile_expression(single.group(1).strip(), undefined_to_none=False)(**context)
        if isinstance(result, jinja2.Undefined):
            str(result)  # raises: StrictUndefined
        return result
    return jinja2.Environment(undefined=jinja2.StrictUndefined).from_string(value).render(context)


def templated_part(value):
    """``value`` without its ``!unsafe`` strings (they are AWX's, not the loader's, to template)."""
    if isinstance(value, dict):
        return dict((k, templated_part(v)) for k, v in value.items())
    if isinstance(value, list):
        return [templated_part(v) for v in value]
    return '' if isinstance(value, Unsafe) else value


def object_files():
    """The files of extensions/awx/ that hold settings or objects (the loader's vars_files), as full paths."""
    with open(LOADER) as handle:
        return [os.path.join(AWX, name) for name in load_awx(handle)[0]['vars_files']]
