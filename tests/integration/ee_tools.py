"""A job's PATH holding the execution environment's programs and nothing else, so that a job template run through
ansible-runner (awx_job.run_job(path=...)) fails here as it would in the EE when a role starts a program the EE
lacks (kubectl, oc, jq, ... are on this machine, not in the image).

The list is the EE definition's (tests/unit/extensions/ee_definition.py reads execution-environment.yml and
bindep.txt; test_ee_external_clis.py checks the roles against the same list), plus BASE_IMAGE_PROGRAMS. Each
program is a symlink to what stands in for it on this machine: ansible-core's and ansible-runner's entry points of
the virtualenv (pinned like the EE's), the helm the tests build at the EE's pinned version, and for the EE's Python
a two-line script that runs the virtualenv's interpreter (a symlink to it would start the interpreter outside the
virtualenv, without the collection's requirements).
"""

import os
import re
import shutil
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, 'tests', 'unit', 'extensions'))
from ee_definition import build_args, ee_programs, load_ee  # noqa: E402  pylint: disable=wrong-import-position

# The coreutils every EE base image has (CentOS Stream, UBI, the AAP minimal EE) that ansible-core runs itself on
# the controller: its temporary directory `( umask 77 && mkdir -p ... ) && sleep 0`, `rm -f -r` to remove it,
# `chmod` for the files it puts there. The definition does not list them because the base image brings them.
BASE_IMAGE_PROGRAMS = ('chmod', 'mkdir', 'rm', 'sleep')
PYTHON = re.compile(r'^python[0-9.]*$')


def ee_tool_list():
    """{program: where it comes from}: the EE definition's programs and BASE_IMAGE_PROGRAMS."""
    programs = dict((name, 'base image') for name in BASE_IMAGE_PROGRAMS)
    programs.update(ee_programs(REPO))
    return programs


def pinned_helm_version():
    """The helm version the EE definition installs (its ARG HELM_VERSION)."""
    return build_args(load_ee(REPO)[0]).get('HELM_VERSION')


def _stand_in(name, how, local):
    """The program on this machine that stands in for the EE's ``name`` (None: nothing does)."""
    venv_bin = os.path.dirname(sys.executable)
    if name in local:
        return local[name]
    if how.startswith('dependencies.ansible') and os.path.exists(os.path.join(venv_bin, name)):
        return os.path.join(venv_bin, name)
    if how == 'base image':
        return shutil.which(name)
    return None


def ee_tool_dir(directory, local, leave_out=()):
    """Fill ``directory`` with the EE's programs (ee_tool_list()) but ``leave_out`` and return it, for a job's PATH.
    ``local``: {program: path} for what the virtualenv does not hold (the EE's helm: the tests' helm binary)."""
    os.makedirs(directory)
    for name, how in sorted(ee_tool_list().items()):
        if name in leave_out:
            continue
        path = os.path.join(directory, name)
        if PYTHON.match(name):
            with open(path, 'w') as handle:
                handle.write('#!/bin/sh\nexec %s "$@"\n' % sys.executable)
            os.chmod(path, 0o755)
            continue
        target = _stand_in(name, how, local)
        assert target and os.access(target, os.X_OK), (
            'the execution environment provides %s (%s) but nothing on this machine stands in for it: pass its '
            'path in local= of ee_tool_dir()' % (name, how))
        os.symlink(target, path)
    return directory
