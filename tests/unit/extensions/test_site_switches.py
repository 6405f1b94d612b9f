# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/site.yml: each documented switch guards its own import and nothing else, the defaults stay safe
(HAMi off, quotas only with quota variables) and `make demo`'s variables run the same steps as before.

The `when` of every import is evaluated with ansible's own loader and templar, as ansible-playbook does."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import re

import pytest
import yaml

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
SITE = os.path.join(REPO, 'playbooks', 'site.yml')

# switch -> the one playbook it guards, and its default without any other variable
SWITCHES = {
    'gpuops_install': ('install.yml', False),
    'gpuops_quotas': ('quotas.yml', False),
    'gpuops_hami': ('hami.yml', False),
    'gpuops_monitoring': ('monitoring.yml', False),
    'gpuops_validate': ('validate.yml', False),
    'gpuops_openshift_ai': ('openshift_ai.yml', False),
}
# playbooks site.yml does not run, on purpose: rbac.yml (a cluster admin, once), reset.yml (undoes site.yml)
NOT_IN_SITE = {'rbac.yml', 'reset.yml', 'site.yml', 'mig_from_demand.yml',  # mig_from_demand needs a demand
               'diagnostics.yml',  # diagnostics: run when a support case needs it
               'uninstall.yml',  # uninstall: removes the stack site.yml installs
               'upgrade.yml',  # upgrade: moves the installed stack to new pinned versions, when asked
               'gpu_health.yml',  # gpu_health: takes broken GPU nodes out of service, when asked
               'dra.yml'}  # dra: GPUs through Dynamic Resource Allocation, a choice of stack made on purpose
QUOTA = [{'namespace': 'team-a', 'hard': {'requests.nvidia.com/gpu': 4}}]


def _imports():
    from ansible.parsing.dataloader import DataLoader
    loader = DataLoader()
    try:
        plays = loader.load_from_file(SITE, trusted_as_template=True)
    except TypeError:  # ansible-core before 2.19 templates every string
        plays = loader.load_from_file(SITE)
    return loader, [(p['ansible.builtin.import_playbook'], p.get('when')) for p in plays]


def running(variables):
    """The playbooks site.yml runs with these variables (in file order)."""
    from ansible.template import Templar
    loader, imports = _imports()
    templar = Templar(loader=loader, variables=dict(variables))
    out = []
    for playbook, when in imports:
        if when is None or _true(templar, when):
            out.append(playbook)
    return out


def _true(templar, when):
    if hasattr(templar, 'evaluate_conditional'):
        return bool(templar.evaluate_conditional(when))
    from ansible.playbook.conditional import Conditional  # ansible-core before 2.19
    cond = Conditional()
    cond.when = [when]
    return cond.evaluate_conditional(templar, templar.available_variables)


def documented_switches():
    """The switches the playbook's header documents (`#   gpuops_x  default ...`)."""
    with open(SITE) as f:
        header = ''.join(line for line in f if line.startswith('#'))
    return set(re.findall(r'^#\s+(gpuops_\w+)\s+default\b', header, re.M))


def test_defaults_run_only_the_report():
    assert running({}) == ['report.yml', 'report.yml']


def test_demo_variables_run_install_mig_and_sharing_only():
    with open(os.path.join(REPO, 'playbooks', 'vars', 'demo.yml')) as f:
        demo = yaml.safe_load(f)
    assert running(demo) == ['report.yml', 'install.yml', 'mig.yml', 'sharing.yml', 'report.yml']


@pytest.mark.parametrize('switch', sorted(SWITCHES))
def test_each_switch_guards_its_own_import(switch):
    playbook, default = SWITCHES[switch]
    base = running({})
    assert (playbook in base) is default
    on = running({switch: True})
    assert set(on) - set(base) == {playbook} and set(base) <= set(on), on
    # -e gpuops_x=false arrives as a string: still off
    assert playbook not in running({switch: 'false'})
    assert playbook in running({switch: 'true'})


def test_quotas_follow_the_quota_variables_unless_switched_off():
    assert 'quotas.yml' in running({'quotas_resource_quotas': QUOTA})
    assert 'quotas.yml' not in running({'quotas_resource_quotas': QUOTA, 'gpuops_quotas': False})
    assert 'quotas.yml' not in running({'quotas_resource_quotas': []})


def test_hami_needs_its_switch_even_with_hami_variables():
    assert 'hami.yml' not in running({'hami_chart_ref': '/charts/hami', 'hami_disable_operator_device_plugin': True})


def test_the_header_and_the_user_guide_document_every_switch():
    assert documented_switches() == set(SWITCHES)
    with open(os.path.join(REPO, 'docs', 'user-guide.md')) as f:
        guide = f.read()
    missing = [s for s in SWITCHES if '`%s`' % s not in guide]
    assert not missing, 'docs/user-guide.md does not document %s' % missing


def test_every_playbook_is_in_site_or_left_out_on_purpose():
    imported = {playbook for playbook, when in _imports()[1]}
    playbooks = {f for f in os.listdir(os.path.join(REPO, 'playbooks')) if f.endswith('.yml')}
    assert playbooks - NOT_IN_SITE == imported, 'wire the new playbook into site.yml or add it to NOT_IN_SITE'
