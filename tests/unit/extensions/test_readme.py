# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The README's "Against a real cluster" commands work from a plain clone: the collection is installed
(``ansible-galaxy collection install`` of the clone, or the collection put on ANSIBLE_COLLECTIONS_PATH) before
the first ``ansible-playbook``, whose roles are ``gpuops.gpu.*`` names; and every playbook it names exists."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import re

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))


def _section(text, title):
    match = re.search(r'^## %s\n(.*?)(?=^## )' % re.escape(title), text, re.M | re.S)
    assert match, 'README.md has no "## %s" section' % title
    return match.group(1)


def commands(section):
    """The shell commands of the section's bash blocks, comments and blank lines left out."""
    out = []
    for block in re.findall(r'^```bash\n(.*?)^```', section, re.M | re.S):
        for line in block.splitlines():
            line = line.split(' #', 1)[0].strip()
            if line and not line.startswith('#'):
                out.append(line)
    return out


def install_errors(lines):
    """Why the commands would not find the collection's roles from a plain clone."""
    playbooks = [i for i, line in enumerate(lines) if re.search(r'(^|\s)ansible-playbook\s', line)]
    if not playbooks:
        return ['no ansible-playbook command']
    installs = [i for i, line in enumerate(lines)
                if re.match(r'^ansible-galaxy collection install (\.|\./?|\S+\.tar\.gz)(\s|$)', line)
                or re.search(r'ANSIBLE_COLLECTIONS_PATHS?=', line)]
    if not installs or installs[0] > playbooks[0]:
        return ['the collection is not installed (ansible-galaxy collection install .) before: %s'
                % lines[playbooks[0]]]
    return []


with open(os.path.join(REPO, 'README.md')) as _handle:
    README = _handle.read()
REAL_CLUSTER = commands(_section(README, 'Against a real cluster'))


def test_the_collection_is_installed_before_the_first_playbook():
    assert install_errors(REAL_CLUSTER) == [], REAL_CLUSTER


def test_the_check_can_fail():
    # the README before: only the dependency installed, then a playbook whose roles are gpuops.gpu.* names
    before = ['ansible-galaxy collection install kubernetes.core', 'pip install -r requirements.txt',
              'KUBECONFIG=~/.kube/config ansible-playbook playbooks/site.yml -e @vars.yml']
    assert install_errors(before)[0].startswith('the collection is not installed')
    assert install_errors(['ansible-playbook x.yml', 'ansible-galaxy collection install .'])
    assert install_errors(['ansible-galaxy collection install .']) == ['no ansible-playbook command']
    assert install_errors(['ansible-galaxy collection install .', 'ansible-playbook gpuops.gpu.site']) == []


@pytest.mark.parametrize('line', [c for c in REAL_CLUSTER if 'ansible-playbook' in c])
def test_every_playbook_named_exists(line):
    name = re.search(r'ansible-playbook\s+(\S+)', line).group(1)
    path = name if name.endswith('.yml') else os.path.join('playbooks', name.split('.')[-1] + '.yml')
    assert name.startswith(('gpuops.gpu.', 'playbooks/')) and os.path.exists(os.path.join(REPO, path)), line
    assert os.path.exists(os.path.join(REPO, 'galaxy.yml')), 'ansible-galaxy collection install . needs galaxy.yml'
