# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""AWX/AAP as code (extensions/awx/, infra.aap_configuration variables): a job template for every playbook,
surveys with non-secret choices that are real role variables, custom credential types that inject secrets
as environment variables or files only."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import glob
import os
import re

import pytest
import yaml

from ansible_collections.gpuops.gpu.tests.unit.extensions.awx_files import as_sent, load_awx, templated_part

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
AWX = os.path.join(REPO, 'extensions', 'awx')
SECRET_NAME = re.compile(r'(pass(word|wd)?|token|secret|api_?key|private_?key|credential|(^|_)key($|_))', re.I)
ENV_LOOKUP = re.compile(r"lookup\('ansible\.builtin\.env', '([A-Z0-9_]+)'")
# Variables a playbook reads itself (documented in the playbook header), not through a role.
PLAYBOOK_VARS = {'gpuops_report_label_selector', 'gpuops_report_include_pods', 'gpuops_report_only_gpu_nodes',
                 'gpuops_report_title', 'gpuops_kubeconfig', 'gpuops_context', 'gpuops_install_nfd',
                 'gpuops_uninstall_force'}


def _load(name):
    with open(os.path.join(AWX, name)) as handle:
        return load_awx(handle)


TEMPLATES = _load('job_templates.yml')['controller_templates']
CREDENTIAL_TYPES = _load('credential_types.yml')['controller_credential_types']
CREDENTIALS = _load('credentials.yml')['controller_credentials']
SETTINGS = _load('settings.yml')


def _role_options():
    """{variable: option spec} over every role's meta/argument_specs.yml entry points."""
    out = {}
    for path in glob.glob(os.path.join(REPO, 'roles', '*', 'meta', 'argument_specs.yml')):
        with open(path) as handle:
            specs = yaml.safe_load(handle)['argument_specs']
        for entry in specs.values():
            out.update(entry.get('options') or {})
    return out


ROLE_OPTIONS = _role_options()


def _questions():
    for template in TEMPLATES:
        for question in (template.get('survey_spec') or {}).get('spec') or []:
            yield template['name'], question


def test_every_playbook_has_exactly_one_job_template():
    playbooks = sorted(os.path.relpath(p, REPO) for p in glob.glob(os.path.join(REPO, 'playbooks', '*.yml')))
    templated = [t['playbook'] for t in TEMPLATES]
    missing = sorted(set(playbooks) - set(templated))
    assert not missing, 'playbooks without a job template in extensions/awx/job_templates.yml: %s' % missing
    stale = sorted(set(templated) - set(playbooks))
    assert not stale, 'job templates whose playbook does not exist: %s' % stale
    assert len(templated) == len(set(templated)), 'one job template per playbook'
    assert len(set(t['name'] for t in TEMPLATES)) == len(TEMPLATES)


def test_job_templates_reference_defined_objects():
    projects = [p['name'] for p in _load('projects.yml')['controller_projects']]
    inventories = [i['name'] for i in _load('inventories.yml')['controller_inventories']]
    ees = [e['name'] for e in _load('execution_environments.yml')['controller_execution_environments']]
    credentials = [c['name'] for c in CREDENTIALS]
    for template in TEMPLATES:
        assert template['project'] in projects, template['name']
        assert template['inventory'] in inventories, template['name']
        assert template['execution_environment'] in ees, template['name']
        assert set(template.get('credentials') or []) <= set(credentials), template['name']
        # "Check" runs are a first-class feature of every role
        assert template.get('ask_job_type_on_launch') is True, template['name']
        assert template.get('job_type', 'run') == 'run', template['name']
    types = [t['name'] for t in CREDENTIAL_TYPES] + ['OpenShift or Kubernetes API Bearer Token']
    for credential in CREDENTIALS:
        assert credential['credential_type'] in types, credential['name']
    for name in re.findall(r'\{\{ *(\w+) *\}\}', ''.join(yaml.safe_dump(templated_part(d)) for d in (
            _load('projects.yml'), _load('execution_environments.yml'), _load('inventories.yml'), TEMPLATES))):
        assert name in SETTINGS, 'extensions/awx refers to %s, which settings.yml does not define' % name


@pytest.mark.parametrize('template_name, question', list(_questions()),
                         ids=['%s:%s' % (t, q['variable']) for t, q in _questions()])
def test_survey_question_is_a_non_secret_role_variable(template_name, question):
    variable = question['variable']
    assert question['type'] != 'password', '%s: secrets come from credentials, never surveys' % template_name
    assert not SECRET_NAME.search(variable), '%s: %s looks like a secret' % (template_name, variable)
    assert not SECRET_NAME.search(question['question_name']), question['question_name']
    assert question['type'] in ('text', 'textarea', 'integer', 'float', 'multiplechoice', 'multiselect')
    options = ROLE_OPTIONS
    assert variable in options or variable in PLAYBOOK_VARS, \
        '%s: %s is no role variable (roles/*/meta/argument_specs.yml)' % (template_name, variable)
    spec = options.get(variable, {})
    if question['type'] == 'multiplechoice':
        assert question['default'] in question['choices']
        if spec.get('choices'):
            assert set(question['choices']) <= set(str(c) for c in spec['choices']), variable
        if spec.get('type') == 'bool':
            pytest.fail('%s: a survey answer is a string; use a playbook variable read with | bool' % variable)
    if question['type'] == 'integer':
        assert spec.get('type') in ('int', 'raw', 'float'), variable
        assert question['min'] <= question['default'] <= question['max']
    if question['type'] == 'text' and 'default' in spec and question.get('default') not in ('', None):
        # a raw option (a count or a percentage) answered as text: "1" for the role's 1
        default = str(spec['default']) if spec.get('type') == 'raw' else spec['default']
        assert question['default'] == default or variable in ('smoke_test_image',), variable


def test_no_secret_value_in_job_templates():
    """Secret-looking extra vars are env lookups of variables a credential type injects, or (``*_env``, for
    the passwords the roles read literally with gpuops.gpu.secret_var) lists of their names; nothing else."""
    injected = set()
    for ctype in CREDENTIAL_TYPES:
        injected.update((ctype['injectors'].get('env') or {}).keys())
    for template in TEMPLATES:
        for name, value in (template.get('extra_vars') or {}).items():
            if name.endswith('_env') and SECRET_NAME.search(name):
                assert isinstance(value, list) and value and set(value) <= injected, (template['name'], name, value)
                assert name[:-len('_env')] not in template['extra_vars'], '%s: %s and its _env' % (template['name'], name)
            elif SECRET_NAME.search(name) or 'token' in name:
                assert isinstance(value, str), name
                names = ENV_LOOKUP.findall(value)
                assert names, '%s: %s must come from a credential (env lookup), not a value' % (template['name'], name)
                assert set(names) <= injected, names


def _as_awx_stores_it(value):
    """What infra.aap_configuration sends AWX: the definition templated once (AWX-side Jinja is !unsafe)."""
    return as_sent(value, SETTINGS)


@pytest.mark.parametrize('ctype', CREDENTIAL_TYPES, ids=[t['name'] for t in CREDENTIAL_TYPES])
def test_credential_types_inject_secrets_as_env_or_files(ctype):
    injectors = _as_awx_stores_it(ctype['injectors'])
    assert set(injectors) <= {'env', 'file'}, '%s injects %s; only env and file are allowed' % (ctype['name'], set(injectors))
    fields = ctype['inputs']['fields']
    text = yaml.safe_dump(injectors)
    for field in fields:
        assert field['type'] == 'string'
        if SECRET_NAME.search(field['id']) or 'token' in field['id'] or field['id'] == 'kubeconfig':
            assert field.get('secret') is True, '%s.%s must be secret' % (ctype['name'], field['id'])
        assert '{{ %s }}' % field['id'] in text, '%s.%s is never injected' % (ctype['name'], field['id'])
    for env in injectors.get('env', {}):
        # AWX reserves ANSIBLE_*; ours are GPUOPS_*, plus the kubernetes.core K8S_AUTH_* contract
        assert re.match(r'^(GPUOPS|K8S_AUTH)_[A-Z0-9_]+$', env), env
    for name, template in injectors.get('file', {}).items():
        assert name.startswith('template.')
        # a file is only useful when the job learns where it is
        assert any('tower.filename.%s' % name.split('.', 1)[1] in v for v in injectors.get('env', {}).values())
        assert '{{' in template


def test_example_credentials_hold_no_secret():
    for credential in CREDENTIALS:
        for name, value in (credential.get('inputs') or {}).items():
            if isinstance(value, str) and (SECRET_NAME.search(name) or 'token' in name):
                assert re.match(r'^\{\{ *vault_\w+ *\}\}$', value), '%s.%s must refer to a vaulted variable' % (
                    credential['name'], name)
