# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every object in extensions/awx/*.yml against the argument spec of the awx.awx module that the loader
(extensions/awx/configure.yml) and infra.aap_configuration hand it to: option names (or their documented aliases),
types (str, int, bool, list, dict, raw) and choices; and the loader against its declarations.

The specs are read from the installed awx.awx collection (it ships with the ``ansible`` package of
tests/requirements-dev.txt), not imported: the modules build ``argument_spec = dict(...)`` inside ``main()`` and
need awxkit to import, so ``main()``'s assignment is evaluated statically with Python's ast. The nodes of a
workflow (``workflow_nodes``, a list of dicts in the spec) are checked against the sub-options the module
documents (its DOCUMENTATION), which is what its code reads from each node.

infra.aap_configuration maps each list to one module and passes the item's keys by name; a key its role does not
map is dropped without a word (upstream roles/controller_job_templates/tasks/main.yml and its siblings), so a typo
would never reach AWX. That is why the objects here use the module's option names, and this test holds them to
those (docs/awx.md, "How the objects are validated")."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import ast
import json
import os
import re
import sys

import jinja2
import pytest
import yaml

from ansible_collections.gpuops.gpu.tests.unit.extensions.awx_files import (
    LOADER, LOADER_REQUIREMENTS, as_sent, load_awx, object_files)

from ansible.module_utils.common.validation import (check_type_bool, check_type_dict, check_type_float,
                                                    check_type_int, check_type_list)

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
AWX = os.path.join(REPO, 'extensions', 'awx')

# infra.aap_configuration's variable -> the awx.awx module its role calls (upstream roles/dispatch/defaults/main.yml
# and roles/controller_<object>/tasks/main.yml).
MODULE_OF = {
    'controller_templates': 'job_template',
    'controller_workflows': 'workflow_job_template',
    'controller_credentials': 'credential',
    'controller_credential_types': 'credential_type',
    'controller_notifications': 'notification_template',
    'controller_schedules': 'schedule',
    'controller_projects': 'project',
    'controller_inventories': 'inventory',
    'controller_inventory_sources': 'inventory_source',
    'controller_hosts': 'host',
    'controller_execution_environments': 'execution_environment',
    'controller_settings': 'settings',
}
# What a workflow node's unified_job_template may be (the module's documentation of workflow_nodes).
NODE_TYPES = ('job_template', 'project', 'inventory_source', 'system_job_template', 'workflow_approval',
              'workflow_job_template')


class NotStatic(ValueError):
    """An argument spec that is not a literal the test can evaluate without running the module."""


# ------------------------------------------------------------------------------ reading the awx.awx modules

def awx_modules_dir():
    """plugins/modules of the awx.awx collection installed beside ansible (None when there is none)."""
    for entry in sys.path:
        path = os.path.join(entry, 'ansible_collections', 'awx', 'awx', 'plugins', 'modules')
        if os.path.isdir(path):
            return path
    return None


def static_value(node, names=None):
    """The value of a ``dict(...)`` call, dict/list/tuple display, constant, module-level constant or
    ``list(CONSTANT.keys())``, without executing anything (``names``: the module's constants)."""
    names = names or {}
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return _static_call(node, names)
    if isinstance(node, ast.Dict):
        return dict((static_value(k, names), static_value(v, names)) for k, v in zip(node.keys, node.values))
    if isinstance(node, (ast.List, ast.Tuple)):
        return [static_value(e, names) for e in node.elts]
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    raise NotStatic('%s at line %d' % (type(node).__name__, getattr(node, 'lineno', 0)))


def _static_call(node, names):
    if node.func.id == 'dict' and not node.args and all(kw.arg for kw in node.keywords):
        return dict((kw.arg, static_value(kw.value, names)) for kw in node.keywords)
    if node.func.id == 'list' and len(node.args) == 1 and not node.keywords:
        inner = node.args[0]
        if (isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) and inner.func.attr == 'keys'
                and not inner.args):
            return list(static_value(inner.func.value, names))
        return list(static_value(inner, names))
    raise NotStatic('%s(...) at line %d' % (node.func.id, node.lineno))


def _constants(tree):
    """The module-level ``NAME = <static value>`` assignments."""
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                out[node.targets[0].id] = static_value(node.value, out)
            except NotStatic:
                continue
    return out


def _source(module):
    directory = awx_modules_dir()
    assert directory, ('the awx.awx collection is not installed beside ansible: install the ansible package '
                       '(tests/requirements-dev.txt)')
    with open(os.path.join(directory, module + '.py')) as handle:
        return ast.parse(handle.read())


def module_argument_spec(module):
    """The ``argument_spec = dict(...)`` that awx.awx ``module``'s main() builds."""
    tree = _source(module)
    main = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == 'main')
    for node in ast.walk(main):
        if isinstance(node, ast.Assign) and any(getattr(t, 'id', None) == 'argument_spec' for t in node.targets):
            return static_value(node.value, _constants(tree))
    raise AssertionError('awx.awx %s: no argument_spec = dict(...) in main()' % module)


def module_documentation(module):
    """The module's DOCUMENTATION (YAML) as a dict."""
    for node in _source(module).body:
        if isinstance(node, ast.Assign) and any(getattr(t, 'id', None) == 'DOCUMENTATION' for t in node.targets):
            return yaml.safe_load(static_value(node.value))
    raise AssertionError('awx.awx %s has no DOCUMENTATION' % module)


def doc_to_spec(options):
    """Documented options (with their suboptions) in argument-spec form."""
    out = {}
    for name, doc in (options or {}).items():
        spec = dict((k, doc[k]) for k in ('type', 'elements', 'choices', 'aliases', 'required') if k in doc)
        if doc.get('suboptions'):
            spec['options'] = doc_to_spec(doc['suboptions'])
        out[name] = spec
    return out


def spec_for(module):
    """The module's argument spec; a workflow's nodes get the sub-options the module documents for them."""
    spec = module_argument_spec(module)
    if module == 'workflow_job_template':
        documented = module_documentation(module)['options']['workflow_nodes']
        spec['workflow_nodes'] = dict(spec['workflow_nodes'], options=doc_to_spec(documented['suboptions']))
    return spec


# ------------------------------------------------------------------------------ the check

def _strict_str(value):
    if not isinstance(value, str):
        raise TypeError('%r is a %s' % (value, type(value).__name__))
    return value


CONVERT = {'str': _strict_str, 'int': check_type_int, 'bool': check_type_bool, 'list': check_type_list,
           'dict': check_type_dict, 'float': check_type_float, 'raw': lambda value: value, 'path': _strict_str}


def check_object(obj, spec, where):
    """Every problem of ``obj`` against ``spec``: unknown options, missing required ones, wrong types, bad choices."""
    if not isinstance(obj, dict):
        return ['%s: an object must be a mapping, got %s' % (where, type(obj).__name__)]
    names = {}
    for name, option in spec.items():
        for alias in [name] + list(option.get('aliases') or []):
            names[alias] = name
    errors = []
    for key in obj:
        if key not in names:
            errors.append('%s: unknown option %r (the module takes: %s)' % (where, key, ', '.join(sorted(spec))))
        else:
            errors.extend(check_value(obj[key], spec[names[key]], '%s.%s' % (where, key)))
    for name, option in spec.items():
        if option.get('required') and not any(a in obj for a in [name] + list(option.get('aliases') or [])):
            errors.append('%s: required option %r is missing' % (where, name))
    return errors


def check_value(value, option, where):
    """Problems of one option's value: its type (ansible's own conversions, str strictly), choices, nested options."""
    if value is None:
        return []
    kind = option.get('type', 'str')
    try:
        value = CONVERT[kind](value)
    except (TypeError, ValueError) as exc:
        return ['%s: %r is not of type %s (%s)' % (where, value, kind, exc)]
    if option.get('choices') is not None and kind != 'list' and value not in option['choices']:
        return ['%s: %r is not one of the choices %s' % (where, value, option['choices'])]
    if kind == 'dict' and option.get('options'):
        return check_object(value, option['options'], where)
    if kind == 'list':
        return _check_elements(value, option, where)
    return []


def _check_elements(values, option, where):
    errors = []
    for index, item in enumerate(values):
        at = '%s[%d]' % (where, index)
        if option.get('options'):
            errors.extend(check_object(item, option['options'], at))
        elif option.get('elements'):
            errors.extend(check_value(item, {'type': option['elements'], 'choices': option.get('choices')}, at))
    return errors


# ------------------------------------------------------------------------------ the objects, as the role sends them


def _files():
    return sorted(object_files())


def _load(path):
    with open(path) as handle:
        return load_awx(handle) or {}


def render_context():
    """settings.yml, and a placeholder for each vault_* variable the files name (your vault supplies them)."""
    context = dict(_load(os.path.join(AWX, 'settings.yml')))
    for path in _files():
        with open(path) as handle:
            for name in re.findall(r'\bvault_\w+', handle.read()):
                context[name] = 'vaulted-%s' % name
    return context


def objects():
    """(file, list variable, object) for every object of every controller_* list (a mapping counts as one)."""
    out = []
    for path in _files():
        for variable, value in _load(path).items():
            if variable.startswith('controller_'):
                items = [value] if isinstance(value, dict) else value
                out.extend((os.path.basename(path), variable, item) for item in items)
    return out


def problems(variable, obj, context):
    """Every problem of one object of infra.aap_configuration's list ``variable``."""
    module = MODULE_OF.get(variable)
    if module is None:
        return ['%s: no awx.awx module is known for this list; add it to MODULE_OF' % variable]
    where = '%s[%s]' % (variable, obj.get('name', '?') if isinstance(obj, dict) else '?')
    try:
        rendered = as_sent(obj, context)
    except jinja2.TemplateError as exc:
        return ['%s: does not template with settings.yml and vault_* variables (tag AWX-side Jinja !unsafe): %s'
                % (where, exc)]
    errors = check_object(rendered, spec_for(module), where)
    if module == 'workflow_job_template' and not errors:
        errors = _node_problems(rendered, where)
    return errors


def _node_problems(workflow, where):
    """What the module's code needs of each node beyond its documented types (workflow_job_template.py,
    create_workflow_nodes): a unified_job_template with a name and a known type; links to identifiers that exist."""
    nodes = workflow.get('workflow_nodes') or []
    identifiers = [n['identifier'] for n in nodes]
    errors = ['%s: duplicate node identifiers' % where] if len(set(identifiers)) != len(identifiers) else []
    for node in nodes:
        at = '%s.%s' % (where, node['identifier'])
        template = node.get('unified_job_template') or {}
        if not template.get('name') or template.get('type') not in NODE_TYPES:
            errors.append('%s: unified_job_template needs a name and a type in %s' % (at, NODE_TYPES))
        for links in (node.get('related') or {}).values():
            for link in links if isinstance(links, list) else []:
                if 'identifier' in link and link['identifier'] not in identifiers:
                    errors.append('%s: links to %r, which is no node of this workflow' % (at, link['identifier']))
    return errors


OBJECTS = objects()


def test_every_file_holds_only_known_lists_or_settings():
    for path in _files():
        for variable in _load(path):
            assert variable in MODULE_OF or variable.startswith('gpuops_awx_'), (
                '%s: %s is neither an infra.aap_configuration list this test knows (MODULE_OF) nor a gpuops_awx_ '
                'setting' % (os.path.basename(path), variable))
    assert {variable for _f, variable, _o in OBJECTS} >= {
        'controller_templates', 'controller_workflows', 'controller_credentials', 'controller_credential_types',
        'controller_notifications', 'controller_schedules'}


@pytest.mark.parametrize('variable, obj', [(v, o) for _f, v, o in OBJECTS],
                         ids=['%s:%s' % (v, o.get('name', '?')) for _f, v, o in OBJECTS])
def test_object_matches_the_awx_module_argument_spec(variable, obj):
    errors = problems(variable, obj, render_context())
    assert not errors, '\n'.join(errors)


# ------------------------------------------------------------------------------ the check itself can fail

def test_the_specs_are_read_from_the_installed_collection():
    spec = module_argument_spec('job_template')
    assert spec['job_type'] == {'choices': ['run', 'check']}
    assert spec['timeout']['type'] == 'int' and spec['credentials']['type'] == 'list'
    assert spec['ask_tags_on_launch']['aliases'] == ['ask_tags']
    nodes = spec_for('workflow_job_template')['workflow_nodes']['options']
    assert nodes['job_type']['choices'] == ['run', 'check'] and nodes['identifier']['required'] is True
    assert 'timeout' in nodes['unified_job_template']['options']
    assert module_argument_spec('credential_type')['kind']['choices'] == ['ssh', 'vault', 'net', 'scm', 'cloud',
                                                                          'insights']
    with pytest.raises(NotStatic):
        static_value(ast.parse('dict(a=len("x"))', mode='eval').body)


def test_a_wrong_job_template_is_reported_on_every_count():
    wrong = {'name': 'x', 'playbok': 'playbooks/report.yml', 'timeout': 'ten minutes', 'job_type': 'dry-run',
             'ask_inventory_on_launch': 'maybe', 'credentials': 'a,b', 'ask_tags': True, 'limit': ['a']}
    errors = '\n'.join(problems('controller_templates', wrong, {}))
    assert "unknown option 'playbok'" in errors
    assert "'ten minutes' is not of type int" in errors
    assert "'dry-run' is not one of the choices ['run', 'check']" in errors
    assert "'maybe' is not of type bool" in errors
    assert "limit: ['a'] is not of type str" in errors
    assert "'ask_tags'" not in errors and '.credentials' not in errors, 'an alias and a comma list are accepted'
    assert len(errors.splitlines()) == 5, errors


def test_a_wrong_workflow_node_schedule_and_injector_are_reported():
    node = {'identifier': 'plan', 'unified_job_template': {'name': 'gpuops.gpu mig', 'type': 'job_template'},
            'job_type': 'plan', 'diff': True, 'related': {'success_nodes': [{'identifier': 'gone'}]}}
    errors = '\n'.join(problems('controller_workflows', {'name': 'w', 'workflow_nodes': [node, {'job_type': 'run'}]},
                                {}))
    assert "workflow_nodes[0].job_type: 'plan' is not one of the choices" in errors
    assert "workflow_nodes[0]: unknown option 'diff'" in errors
    assert "workflow_nodes[1]: required option 'identifier' is missing" in errors
    node = dict((k, v) for k, v in node.items() if k != 'diff')
    assert problems('controller_workflows', {'name': 'w', 'workflow_nodes': [dict(node, job_type='check')]}, {}) == [
        "controller_workflows[w].plan: links to 'gone', which is no node of this workflow"]
    assert problems('controller_schedules', {'name': 's', 'enabled': 'nightly'}, {})
    assert problems('controller_credential_types', {'name': 't', 'kind': 'cloud', 'injectors': {
        'env': {'GPUOPS_X': '{{ ngc_api_key }}'}}}, {})[0].find('does not template') > 0
    assert problems('controller_unknown', {'name': 'u'}, {})


# ------------------------------------------------------------------------------ the loader (configure.yml)

def _loader():
    with open(LOADER) as handle:
        play = load_awx(handle)[0]
    tasks = [t for t in play['tasks'] if any(k.startswith('awx.awx.') for k in t)]
    return play, tasks


def _module(task):
    return next(k for k in task if k.startswith('awx.awx.'))


def test_the_loader_reads_every_object_file():
    play, _tasks = _loader()
    here = sorted(n for n in os.listdir(AWX) if n.endswith('.yml'))
    assert sorted(play['vars_files']) == [n for n in here if n not in (os.path.basename(LOADER),
                                                                       os.path.basename(LOADER_REQUIREMENTS))]


def test_the_loader_passes_each_list_to_its_module_in_dependency_order():
    """One task per list, the module MODULE_OF names; the lists that others refer to by name come first."""
    play, tasks = _loader()
    lists = [t['vars']['__list'] for t in tasks]
    assert lists == ['controller_credential_types', 'controller_credentials', 'controller_execution_environments',
                     'controller_projects', 'controller_inventories', 'controller_inventory_sources',
                     'controller_hosts', 'controller_notifications', 'controller_templates', 'controller_workflows',
                     'controller_schedules']
    assert sorted(lists) == sorted(play['vars']['__gpuops_awx_options'])
    for task in tasks:
        assert _module(task) == 'awx.awx.' + MODULE_OF[task['vars']['__list']], task['name']
        assert task['loop'] == '{{ __gpuops_awx_objects }}' and task['loop_control']['loop_var'] == '__item'


def test_the_loader_passes_exactly_the_options_it_declares_and_the_module_has():
    play, tasks = _loader()
    declared = play['vars']['__gpuops_awx_options']
    for task in tasks:
        module, variable = _module(task), task['vars']['__list']
        args = dict((k, v) for k, v in task[module].items() if (k, v) != ('wait', True))
        assert sorted(args) == sorted(declared[variable]), task['name']
        for option, value in args.items():
            wanted = '{{ __item.name }}' if option == 'name' else '{{ __item.%s | default(omit) }}' % option
            assert value == wanted, '%s: %s' % (task['name'], option)
        unknown = set(args) - set(spec_for(MODULE_OF[variable]))
        assert not unknown, '%s: %s are no options of %s' % (task['name'], sorted(unknown), module)


def test_the_loader_passes_every_option_the_files_set():
    play, _tasks = _loader()
    declared = play['vars']['__gpuops_awx_options']
    for _path, variable, obj in OBJECTS:
        dropped = set(obj) - set(declared.get(variable, ()))
        assert not dropped, '%s %s: the loader does not pass %s' % (variable, obj.get('name'), sorted(dropped))


def test_the_loader_logs_no_secret_and_pins_the_collection_it_is_tested_with():
    _play, tasks = _loader()
    secret = [t['name'] for t in tasks if t['vars']['__list'] in ('controller_credentials', 'controller_notifications')]
    assert secret and all(t.get('no_log') is True for t in tasks if t['name'] in secret)
    with open(os.path.join(os.path.dirname(os.path.dirname(awx_modules_dir())), 'MANIFEST.json')) as handle:
        installed = json.load(handle)['collection_info']['version']
    with open(LOADER_REQUIREMENTS) as handle:
        assert yaml.safe_load(handle)['collections'] == [{'name': 'awx.awx', 'version': installed}]
