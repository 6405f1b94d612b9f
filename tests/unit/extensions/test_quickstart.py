# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""docs/quickstart-openshift.md cannot go stale silently: every variable of its example vars files passes the
argument spec of the role that owns it (ansible's ArgumentSpecValidator: name, type, choices, sub-options),
every playbook, job template, doc link and variable it names exists."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import glob
import os
import re

import pytest
import yaml

from ansible_collections.gpuops.gpu.tests.unit.extensions.awx_files import load_awx

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
DOC = os.path.join(REPO, 'docs', 'quickstart-openshift.md')


def _read(*parts):
    with open(os.path.join(REPO, *parts)) as handle:
        return handle.read()


def _role_specs():
    out = {}
    for path in sorted(glob.glob(os.path.join(REPO, 'roles', '*', 'meta', 'argument_specs.yml'))):
        with open(path) as handle:
            out[path.split(os.sep)[-3]] = yaml.safe_load(handle)['argument_specs']['main']['options']
    return out


ROLE_SPECS = _role_specs()
ROLE_OF = dict((var, role) for role, options in ROLE_SPECS.items() for var in options)
# variables the playbooks read themselves (site.yml's switches, the connection, the report's options)
PLAYBOOK_VARS = set(re.findall(r'\b(gpuops_\w+)', ''.join(_read('playbooks', f) for f in os.listdir(
    os.path.join(REPO, 'playbooks')) if f.endswith('.yml'))))
TEXT = _read('docs', 'quickstart-openshift.md')


def vars_blocks(text):
    """The fenced yaml blocks of the page that are vars files (a mapping of variables)."""
    blocks = [yaml.safe_load(b) for b in re.findall(r'^```yaml\n(.*?)^```', text, re.M | re.S)]
    return [b for b in blocks if isinstance(b, dict)]


def vars_errors(variables):
    """Why a vars file would not work: unknown variables, or values the owning role's argument spec refuses."""
    errors, by_role = [], {}
    for name, value in variables.items():
        if name in ROLE_OF:
            by_role.setdefault(ROLE_OF[name], {})[name] = value
        elif name not in PLAYBOOK_VARS:
            errors.append('%s is no role variable (meta/argument_specs.yml) and no playbook reads it' % name)
    for role, params in sorted(by_role.items()):
        result = ArgumentSpecValidator(ROLE_SPECS[role]).validate(params)
        errors += ['%s: %s' % (role, msg) for msg in result.error_messages]
    return errors


def test_the_page_has_the_example_vars_file_for_an_a100_and_an_h100_pool():
    names = [b for b in vars_blocks(TEXT) if 'mig_assignments' in b]
    assert len(names) == 1, 'the example vars file (a yaml block with mig_assignments) is missing'
    selectors = ' '.join(a.get('label_selector', '') for a in names[0]['mig_assignments'])
    assert 'A100' in selectors and 'H100' in selectors
    # no node names of the virtual test cluster (a100-0, h100-1, ...)
    assert not re.search(r'\b(a100|h100|t4|l40s|cpu)-\d+\b', TEXT)


@pytest.mark.parametrize('index', range(len(vars_blocks(TEXT))))
def test_every_example_variable_passes_its_role_argument_spec(index):
    assert vars_errors(vars_blocks(TEXT)[index]) == []


def test_the_check_catches_a_misspelt_or_mistyped_variable():
    errors = vars_errors({'mig_asignments': [], 'mig_strategy': 'bogus', 'rbac_service_accounts': [{'name': 'x'}]})
    assert len(errors) == 3, errors
    assert errors[0].startswith('mig_asignments is no role variable')


def test_every_playbook_job_template_and_workflow_named_exists():
    playbooks = set(re.findall(r'ansible-playbook (gpuops\.gpu\.\w+)', TEXT))
    assert len(playbooks) >= 8
    missing = [p for p in playbooks if not os.path.exists(os.path.join(REPO, 'playbooks', p.split('.')[-1] + '.yml'))]
    assert not missing
    # the names as AWX stores them, for the cluster of settings.yml (the page's example cluster)
    cluster = yaml.safe_load(_read('extensions', 'awx', 'settings.yml'))['gpuops_awx_cluster']

    def names(text, key):
        return {o['name'].replace('{{ gpuops_awx_cluster }}', cluster) for o in load_awx(text)[key]}
    templates = names(_read('extensions', 'awx', 'job_templates.yml'), 'controller_templates')
    templates |= names(_read('extensions', 'awx', 'workflows.yml'), 'controller_workflows')
    named = set(re.findall(r'\*\*(gpuops\.gpu [\w -]+?)\*\*', TEXT))
    assert named and named <= templates, named - templates
    credentials = names(_read('extensions', 'awx', 'credentials.yml'), 'controller_credentials')
    named = set(re.findall(r'`(gpuops\.gpu [\w -]+? account)`', TEXT))
    assert named and named <= credentials, named - credentials


def test_every_variable_and_link_in_the_text_exists():
    prefixes = tuple(r + '_' for r in ROLE_SPECS)
    tokens = {t for t in re.findall(r'`([a-z][a-z0-9_]+)(?::[^`]*)?`', TEXT) if t.startswith(prefixes)}
    unknown = sorted(t for t in tokens if t not in ROLE_OF and t not in PLAYBOOK_VARS and not t.endswith('_'))
    assert not unknown
    links = re.findall(r'\]\(([\w.-]+\.md)(?:#([\w-]+))?\)', TEXT)
    assert links and all(os.path.exists(os.path.join(REPO, 'docs', link)) for link, _anchor in links), links
    for link, anchor in links:
        if anchor:
            assert anchor in _anchors(_read('docs', link)), '%s has no heading for #%s' % (link, anchor)


def _anchors(markdown):
    """The anchors of a page's headings, as GitHub makes them."""
    return {re.sub(r'[^\w\- ]', '', h.strip().lower()).replace(' ', '-') for h in re.findall(r'^#+ (.*)$', markdown, re.M)}


# the nodes of the example's two pools, as they are labelled once GPU feature discovery runs
POOL_NODES = {
    'a100': {'node-pool': 'a100', 'nvidia.com/gpu.product': 'NVIDIA-A100-SXM4-80GB'},
    'h100': {'node-pool': 'h100', 'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3'},
    'cpu': {'node-pool': 'general'},
}


def test_the_example_selectors_pick_the_two_gpu_pools_and_the_mig_configs_fit():
    from ansible_collections.gpuops.gpu.plugins.module_utils.common.selector import parse_selector, selector_matches
    from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.mig_configs import builtin_config
    example = next(b for b in vars_blocks(TEXT) if 'mig_assignments' in b)
    for name in [k for k in example if k.endswith('_selector')]:
        picked = {n for n, labels in POOL_NODES.items() if selector_matches(parse_selector(example[name]), labels)}
        assert picked == {'a100', 'h100'}, '%s picks %s' % (name, picked)
    for assignment in example['mig_assignments']:
        picked = [n for n, labels in POOL_NODES.items()
                  if selector_matches(parse_selector(assignment['label_selector']), labels)]
        assert len(picked) == 1, assignment
        product = POOL_NODES[picked[0]]['nvidia.com/gpu.product']
        geometry = builtin_config(assignment['config'], product)
        assert geometry, '%s is no built-in MIG config of %s' % (assignment['config'], product)
    # the check can fail: a config the product does not have
    assert not builtin_config('all-1g.5gb', 'NVIDIA-H100-80GB-HBM3')


def test_the_example_quotas_can_be_written():
    from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.quota import normalise_quota
    example = next(b for b in vars_blocks(TEXT) if 'mig_assignments' in b)
    for entry in example['quotas_resource_quotas']:
        assert normalise_quota(entry['hard'])[1] == [], entry
    assert normalise_quota({'requests.nvidia.com/mig-3g': 1})[1]  # the check can fail


def test_the_user_guide_names_only_existing_variables_playbooks_and_pages():
    guide = _read('docs', 'user-guide.md')
    plugins = {os.path.splitext(f)[0] for d in ('modules', 'filter') for f in os.listdir(os.path.join(REPO, 'plugins', d))}
    prefixes = tuple(r + '_' for r in ROLE_SPECS)
    tokens = {t for t in re.findall(r'`([a-z][a-z0-9_]+)(?:[:=][^`]*)?`', guide) if t.startswith(prefixes)}
    unknown = sorted(t for t in tokens if t not in ROLE_OF and t not in PLAYBOOK_VARS and t not in plugins)
    assert not unknown, 'docs/user-guide.md names variables no role or playbook has: %s' % unknown
    playbooks = set(re.findall(r'`(\w+)\.yml`', guide))
    assert len(playbooks) >= 12, playbooks
    missing = sorted(p for p in playbooks if not os.path.exists(os.path.join(REPO, 'playbooks', p + '.yml')))
    assert not missing, missing
    pages = re.findall(r'\]\(([\w.-]+\.md)', guide)
    assert pages and all(os.path.exists(os.path.join(REPO, 'docs', p)) for p in pages), pages
