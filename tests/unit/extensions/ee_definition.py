# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The programs the execution environment provides, read from its definition (execution-environment.yml and
bindep.txt): the one list test_ee_external_clis.py checks the roles' programs against and
tests/integration/ee_tools.py builds a job's PATH from."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import re

import yaml

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))


def provided_by(definition, bindep_text):
    """{program: how the EE provides it} from an execution-environment.yml and its bindep.txt."""
    deps = definition.get('dependencies', {})
    out = {}
    interpreter = deps.get('python_interpreter', {})
    if interpreter.get('python_path'):
        out[os.path.basename(interpreter['python_path'])] = 'dependencies.python_interpreter'
    for line in bindep_text.splitlines():
        line = line.split('#', 1)[0].strip()
        if line:
            out[line.split()[0]] = 'bindep.txt'
    if deps.get('ansible_core'):
        for name in ('ansible', 'ansible-playbook', 'ansible-galaxy', 'ansible-doc', 'ansible-inventory'):
            out[name] = 'dependencies.ansible_core'
    if deps.get('ansible_runner'):
        out['ansible-runner'] = 'dependencies.ansible_runner'
    # programs a build step installs into /usr/local/bin (on PATH in the image)
    for step in definition.get('additional_build_steps', {}).get('append_final', []):
        for name in re.findall(r'install -m 0?755 \S+ /usr/local/bin/([A-Za-z0-9_.-]+)', str(step)):
            out[name] = 'additional_build_steps.append_final'
    return out


def build_args(definition):
    """{name: default} of the ARG steps in additional_build_steps.append_final (HELM_VERSION, HELM_SHA256_*)."""
    out = {}
    for step in definition.get('additional_build_steps', {}).get('append_final', []):
        match = re.match(r'^ARG ([A-Z0-9_]+)(?:=(\S*))?$', str(step))
        if match:
            out[match.group(1)] = match.group(2)
    return out


def load_ee(root=REPO):
    """(execution-environment.yml as a dict, bindep.txt's text) of the collection at ``root``."""
    with open(os.path.join(root, 'execution-environment.yml')) as handle:
        definition = yaml.safe_load(handle)
    with open(os.path.join(root, 'bindep.txt')) as handle:
        return definition, handle.read()


def ee_programs(root=REPO):
    """{program: how the EE provides it} for the collection's own definition."""
    return provided_by(*load_ee(root))
