# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every external program the collection's playbooks, roles and plugins run is provided by the execution
environment that execution-environment.yml defines.

The inventory is read from the code, not written by hand: every task's module (roles/*/tasks, handlers,
playbooks/), the program that ansible.builtin.command/shell/script/raw and pipe lookups start, the modules
that need a CLI on PATH (kubernetes.core.helm* -> helm) with their binary_path defaults, and in plugins/
every subprocess / os.system / run_command / get_bin_path call. A module this file does not know fails the
test until it is classified, so a role that starts calling a new CLI cannot slip past.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import ast
import copy
import glob
import os
import re
import shlex

import pytest
import yaml

from ee_definition import load_ee, provided_by

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))

# Modules the roles and playbooks may use, with the external programs each one runs on the controller (the EE).
# A module missing here fails test_every_module_is_classified: classify it (an empty set if it runs none).
NO_CLI = frozenset()
MODULE_CLIS = {
    'kubernetes.core.helm': {'helm'},
    'kubernetes.core.helm_info': {'helm'},
    'kubernetes.core.helm_plugin': {'helm'},
    'kubernetes.core.helm_plugin_info': {'helm'},
    'kubernetes.core.helm_pull': {'helm'},
    'kubernetes.core.helm_registry_auth': {'helm'},
    'kubernetes.core.helm_repository': {'helm'},
    'kubernetes.core.helm_template': {'helm'},
    'kubernetes.core.kustomize': {'kustomize'},
    # the Kubernetes API through the Python client: no CLI
    'kubernetes.core.k8s': NO_CLI,
    'kubernetes.core.k8s_info': NO_CLI,
    'kubernetes.core.k8s_json_patch': NO_CLI,
    'kubernetes.core.k8s_drain': NO_CLI,
    'kubernetes.core.k8s_exec': NO_CLI,
    'kubernetes.core.k8s_log': NO_CLI,
    'kubernetes.core.k8s_rollback': NO_CLI,
    'kubernetes.core.k8s_scale': NO_CLI,
    'kubernetes.core.k8s_service': NO_CLI,
    'kubernetes.core.k8s_cluster_info': NO_CLI,
}
for _name in ('assert', 'debug', 'fail', 'set_fact', 'set_stats', 'include_tasks', 'import_tasks', 'include_role',
              'import_role', 'import_playbook', 'include_vars', 'meta', 'stat', 'slurp', 'copy', 'file', 'template',
              'tempfile', 'find', 'lineinfile', 'blockinfile', 'fetch', 'pause', 'wait_for', 'uri', 'add_host',
              'group_by', 'async_status', 'validate_argument_spec', 'gather_facts', 'setup', 'get_url'):
    MODULE_CLIS['ansible.builtin.' + _name] = NO_CLI
# modules that start the program named in their arguments
COMMAND_MODULES = ('ansible.builtin.command', 'ansible.builtin.shell', 'ansible.builtin.script', 'ansible.builtin.raw')
# keywords that can hold tasks
TASK_LISTS = ('tasks', 'pre_tasks', 'post_tasks', 'handlers', 'block', 'rescue', 'always')
FQCN = re.compile(r'^[a-z0-9_]+\.[a-z0-9_]+\.[a-z0-9_]+$')
PIPE_LOOKUP = re.compile(r'''(?:lookup|query)\(\s*['"](?:ansible\.builtin\.)?pipe['"]\s*,\s*(['"])(.*?)\1''')
JINJA_VAR = re.compile(r'^\{\{\s*([a-z_][a-z0-9_]*)\s*(?:or\s+omit\s*)?\}\}$')


def _load_yaml(path):
    with open(path) as handle:
        return yaml.safe_load(handle)


def _tasks(node):
    """Every task dict under a play list, a play or a task list (blocks walked)."""
    if isinstance(node, list):
        for item in node:
            yield from _tasks(item)
    elif isinstance(node, dict):
        nested = [key for key in TASK_LISTS if isinstance(node.get(key), list)]
        if any(FQCN.match(str(key)) for key in node) or not nested:
            yield node
        for key in nested:
            yield from _tasks(node[key])


def _module(task):
    names = [key for key in task if FQCN.match(str(key))]
    if not names and isinstance(task.get('action') or task.get('local_action'), str):
        names = [(task.get('action') or task.get('local_action')).split()[0]]
    return names[0] if names else None


def _program(task, module):
    """The program a command/shell/script/raw task starts (first word of its command line)."""
    args = task[module]
    if isinstance(args, dict):
        if args.get('argv'):
            return str(args['argv'][0])
        args = args.get('cmd') or args.get('_raw_params') or ''
    words = shlex.split(str(args))
    while words and re.match(r'^[A-Za-z_][A-Za-z0-9_]*=', words[0]):  # leading VAR=value
        words.pop(0)
    return os.path.basename(words[0]) if words else ''


def _role_defaults(root):
    out = {}
    for path in glob.glob(os.path.join(root, 'roles', '*', 'defaults', 'main.yml')):
        out.update(_load_yaml(path) or {})
    return out


def task_files(root):
    patterns = ('roles/*/tasks/**/*.yml', 'roles/*/handlers/**/*.yml', 'playbooks/*.yml')
    for pattern in patterns:
        yield from sorted(glob.glob(os.path.join(root, pattern), recursive=True))


def collect_from_tasks(root):
    """({program: [where, ...]}, {unclassified module: [where, ...]}) over the roles and playbooks in root."""
    programs, unknown = {}, {}
    defaults = _role_defaults(root)
    for path in task_files(root):
        where = os.path.relpath(path, root)
        with open(path) as handle:
            text = handle.read()
        for match in PIPE_LOOKUP.finditer(text):
            words = shlex.split(match.group(2))
            programs.setdefault(os.path.basename(words[0]) if words else '', []).append(where + ' (pipe lookup)')
        for task in _tasks(yaml.safe_load(text) or []):
            module = _module(task)
            if module is None:
                continue
            label = '%s: %s' % (where, task.get('name', module))
            if module in COMMAND_MODULES:
                programs.setdefault(_program(task, module), []).append(label)
                continue
            if module.startswith('gpuops.gpu.') and os.path.isfile(
                    os.path.join(root, 'plugins', 'modules', module.split('.')[-1] + '.py')):
                continue  # the collection's own modules: collect_from_plugins reads what they run
            if module not in MODULE_CLIS:
                unknown.setdefault(module, []).append(label)
                continue
            clis = set(MODULE_CLIS[module])
            args = task[module] if isinstance(task[module], dict) else {}
            binary = args.get('binary_path')
            if clis and binary:
                # binary_path: "{{ role_var }}" or "{{ role_var or omit }}": the role default decides the program
                ref = JINJA_VAR.match(str(binary).strip())
                value = defaults.get(ref.group(1)) if ref else binary
                if value:
                    clis = {os.path.basename(str(value))}
            for cli in clis:
                programs.setdefault(cli, []).append(label)
    return programs, unknown


class _PluginCalls(ast.NodeVisitor):
    """Programs that plugin code starts: subprocess.*(...), os.system/popen/exec*, module.run_command(...),
    module.get_bin_path(...)."""

    SUBPROCESS = ('run', 'call', 'check_call', 'check_output', 'Popen', 'getoutput', 'getstatusoutput')

    def __init__(self):
        self.found = []

    def visit_Call(self, node):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, 'id', '')
        owner = getattr(func.value, 'id', '') if isinstance(func, ast.Attribute) else ''
        spawns = ((owner == 'subprocess' and name in self.SUBPROCESS) or
                  (owner == 'os' and (name in ('system', 'popen') or name.startswith(('exec', 'spawn')))) or
                  name in ('run_command', 'get_bin_path'))
        if spawns:
            self.found.append((node.lineno, self._first_word(node.args[0]) if node.args else '?'))
        self.generic_visit(node)

    @staticmethod
    def _first_word(arg):
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            words = shlex.split(arg.value)
            return os.path.basename(words[0]) if words else '?'
        if isinstance(arg, (ast.List, ast.Tuple)) and arg.elts:
            return _PluginCalls._first_word(arg.elts[0])
        return '?'  # not a literal: the test cannot tell which program, so it fails


def collect_from_plugins(root):
    programs = {}
    for path in sorted(glob.glob(os.path.join(root, 'plugins', '**', '*.py'), recursive=True)):
        with open(path) as handle:
            tree = ast.parse(handle.read(), path)
        visitor = _PluginCalls()
        visitor.visit(tree)
        for lineno, program in visitor.found:
            programs.setdefault(program, []).append('%s:%d' % (os.path.relpath(path, root), lineno))
    return programs


def _ee():
    return load_ee(REPO)


def _missing(programs, provided):
    return dict((program, where) for program, where in programs.items() if program not in provided)


def test_every_module_is_classified():
    unknown = collect_from_tasks(REPO)[1]
    assert not unknown, ('modules not classified in MODULE_CLIS (add each with the CLIs it runs, or NO_CLI): %s'
                         % unknown)


def test_the_roles_call_helm_and_nothing_else_outside_python():
    """What the scan finds today; a new program shows up here first (update the EE, then this list)."""
    programs = collect_from_tasks(REPO)[0]
    assert sorted(programs) == ['helm'], programs
    where = ' '.join(sum(programs.values(), []))
    for role in ('gpu_operator', 'nfd', 'hami', 'monitoring'):
        assert 'roles/%s/' % role in where, (role, where)


def test_every_program_the_roles_and_playbooks_run_is_in_the_ee():
    programs = collect_from_tasks(REPO)[0]
    definition, bindep = _ee()
    missing = _missing(programs, provided_by(definition, bindep))
    assert not missing, 'programs the roles run that execution-environment.yml does not provide: %s' % missing


def test_every_program_the_plugins_run_is_in_the_ee():
    programs = collect_from_plugins(REPO)
    assert '?' not in programs, 'a plugin starts a program the test cannot name (use a literal): %s' % programs['?']
    definition, bindep = _ee()
    missing = _missing(programs, provided_by(definition, bindep))
    assert not missing, 'programs the plugins run that execution-environment.yml does not provide: %s' % missing


def test_awx_job_templates_run_playbooks_the_scan_covers():
    with open(os.path.join(REPO, 'extensions', 'awx', 'job_templates.yml')) as handle:
        playbooks = set(re.findall(r'^\s*playbook:\s*["\']?([^"\'\s]+)', handle.read(), re.M))
    assert playbooks
    scanned = set(os.path.relpath(p, REPO) for p in task_files(REPO))
    assert playbooks <= scanned, sorted(playbooks - scanned)


def test_helm_is_provided_by_the_build_step():
    definition, bindep = _ee()
    assert provided_by(definition, bindep).get('helm') == 'additional_build_steps.append_final'
    # without that step the roles' helm is missing: the check above would fail
    stripped = copy.deepcopy(definition)
    stripped['additional_build_steps']['append_final'] = [
        s for s in stripped['additional_build_steps']['append_final'] if '/usr/local/bin/helm' not in str(s)]
    programs = collect_from_tasks(REPO)[0]
    assert 'helm' in _missing(programs, provided_by(stripped, bindep))


def _write(root, rel, text):
    path = os.path.join(str(root), rel)
    if not os.path.isdir(os.path.dirname(path)):
        os.makedirs(os.path.dirname(path))
    with open(path, 'w') as handle:
        handle.write(text)


@pytest.fixture
def synthetic(tmp_path):
    """A role tree that calls programs the EE lacks, in each of the ways the scan looks for."""
    _write(tmp_path, 'roles/extra/defaults/main.yml', 'extra_helm_binary: /opt/helm4/bin/helm4\n')
    _write(tmp_path, 'roles/extra/tasks/main.yml', """---
- name: Kubectl from a command
  ansible.builtin.command:
    argv: [kubectl, get, nodes]
  changed_when: false
- name: A block
  block:
    - name: Oc from a shell
      ansible.builtin.shell: KUBECONFIG=/x oc whoami | cat
      changed_when: false
  rescue:
    - name: Kustomize
      kubernetes.core.kustomize:
        dir: /x
- name: Helm at another path
  kubernetes.core.helm_info:
    name: x
    release_namespace: x
    binary_path: "{{ extra_helm_binary }}"
- name: Pipe lookup
  ansible.builtin.debug:
    msg: "{{ lookup('ansible.builtin.pipe', 'jq --version') }}"
- name: A module nobody classified
  community.general.make:
    chdir: /x
""")
    _write(tmp_path, 'playbooks/extra.yml', """---
- name: Play
  hosts: localhost
  tasks:
    - name: Raw
      ansible.builtin.raw: skopeo inspect x
""")
    _write(tmp_path, 'plugins/modules/extra.py', """
import subprocess
def main(module, name):
    module.get_bin_path('crane', required=True)
    module.run_command(['oras', 'pull', name])
    subprocess.check_output('nvidia-smi -L', shell=True)
    subprocess.run([name])
""")
    return tmp_path


def test_a_role_calling_a_cli_the_ee_lacks_is_caught(synthetic):
    programs, unknown = collect_from_tasks(str(synthetic))
    assert set(programs) == {'kubectl', 'oc', 'kustomize', 'helm4', 'jq', 'skopeo'}, programs
    assert list(unknown) == ['community.general.make']
    definition, bindep = _ee()
    missing = _missing(programs, provided_by(definition, bindep))
    assert set(missing) == set(programs), missing  # none of them is in the EE: the real test would fail


def test_a_plugin_calling_a_cli_the_ee_lacks_is_caught(synthetic):
    programs = collect_from_plugins(str(synthetic))
    assert set(programs) == {'crane', 'oras', 'nvidia-smi', '?'}, programs
    definition, bindep = _ee()
    assert set(_missing(programs, provided_by(definition, bindep))) == set(programs)
