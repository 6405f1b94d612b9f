# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules of docs/architecture.md ("Rules", "The architecture test"), checked on the whole tree.

Each rule is a function ``<rule>_violations(root)`` that returns ``['<path>: <what is wrong>', ...]`` for
the collection at ``root``; the ``test_*`` functions at the end run them on this repository, and the
``test_planted_*`` ones plant a violation of each rule in a small tree under ``tmp_path`` to prove the
check can fail. Numbers (limits) are named constants below; docs/architecture.md quotes them.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import ast
import io
import os
import re
import sys
import tokenize

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
PREFIX = 'ansible_collections.gpuops.gpu.plugins.'

MAX_FILE_LINES = 400      # code lines of one file in plugins/
MAX_FUNCTION_LINES = 50   # code lines of one function in plugins/ or tests/testbed/
MAX_THIN_LINES = 15       # code lines of one function in a filter, or of a module's helper beside main()
MAX_INVENTORY_LINES = 20  # code lines of one function in the inventory plugin
ROLE_HANDFUL = 8          # a role with more tasks than this keeps tasks/main.yml a dispatcher ...
MAIN_SETUP_TASKS = 3      # ... with at most this many tasks that are not include/import
MAX_JINJA = 400           # characters of one {{ ... }} or {% ... %} in roles/ (runs of white space count as one)

# docs/architecture.md, "Layers", column "may import": what the files of each package of plugins/module_utils,
# and of each other plugins/ folder, may import from plugins/. An entry is a package ('common') or one file
# ('k8s/runner.py'); every other import of the collection's own code is a violation.
PURE = ('common', 'gpu', 'plans')
MAY_IMPORT = {
    'common': ('common',),
    'gpu': ('common', 'gpu'),
    'plans': ('common', 'gpu', 'plans'),
    'k8s': ('k8s', 'common'),
    'ops': ('ops', 'k8s', 'common', 'gpu', 'plans'),
    'rollout': ('rollout', 'k8s', 'ops', 'common', 'gpu', 'plans'),
    'modules': ('k8s/runner.py', 'ops', 'rollout') + PURE,
    'filter': PURE + ('plugin_utils/filters.py',),
    'inventory': ('ops',) + PURE,
    'lookup': (),
    'action': ('plugin_utils',),
    'plugin_utils': ('rollout/progress.py',) + PURE,
    'doc_fragments': (),
}
# The Kubernetes client and HTTP: only these packages import them (a filter, the inventory plugin or a
# pure package that needs the API asks ops/ or rollout/). Any part of the kubernetes library counts, its pure
# helpers too: the package loads the whole client first (0.3 s), which every Ansible worker that resolves one
# of the collection's filters would pay, since Ansible loads every filter file to find one.
API_PACKAGES = ('k8s', 'ops', 'rollout')
API_IMPORTS = ('kubernetes', 'ansible_collections.kubernetes.core', 'urllib3', 'requests', 'http.client',
               'urllib.request')
# what a filter may import besides the pure packages: Ansible's errors and the standard library
FILTER_EXTERNAL = ('ansible.errors',)
STDLIB = frozenset(sys.stdlib_module_names)
DISPATCH = ('include_tasks', 'import_tasks', 'include_role', 'import_role')
ISSUE_REFERENCE = re.compile(r'\bissue ?#?[0-9]+', re.I)
ISSUE_SCOPE = ('plugins', 'roles', 'playbooks', 'tests', 'docs', 'extensions', 'bench', 'meta', 'README.md',
               'galaxy.yml', 'Makefile', '.ansible-lint')

# Known violations in files other work is changing right now, as (path, rule). This list must only
# shrink: a fixed entry makes its test fail until it is removed here, and nothing is ever added.
KNOWN = {
    ('plugins/module_utils/rollout/sharing_kind.py', 'size'),
}


# ------------------------------------------------------------------------------------------ reading files

def files(root, top, ends=('.py',)):
    """Paths (relative to ``root``, with /) of the files under ``top`` whose names end with ``ends``."""
    out = []
    for folder, dirs, names in os.walk(os.path.join(root, top)):
        dirs[:] = sorted(d for d in dirs if d not in ('__pycache__', '.git', 'output'))
        out.extend(os.path.relpath(os.path.join(folder, n), root).replace(os.sep, '/')
                   for n in sorted(names) if n.endswith(ends))
    return out


def read(root, path):
    with open(os.path.join(root, path), encoding='utf-8') as handle:
        return handle.read()


def code_lines(source):
    """The numbers of the lines of ``source`` that hold code: not blank, not only a comment, not part of
    a docstring (any string standing alone as a statement). A string assigned to a name (DOCUMENTATION)
    is code."""
    tree = ast.parse(source)
    docs = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            docs.update(range(node.lineno, node.end_lineno + 1))
    skip = (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
            tokenize.ENCODING, tokenize.ENDMARKER)
    lines = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in skip:
            lines.update(range(token.start[0], token.end[0] + 1))
    return tree, lines - docs


def functions(tree, lines):
    """(name, first line, code lines) of every function, nested ones included."""
    return [(node.name, node.lineno, len([n for n in lines if node.lineno <= n <= node.end_lineno]))
            for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]


def package_of(path):
    """'plugins/module_utils/gpu/node.py' -> 'gpu'; 'plugins/filter/mig.py' -> 'filter'."""
    parts = path.split('/')
    return parts[2] if parts[1] == 'module_utils' and len(parts) > 3 else parts[1]


def imports(tree):
    """(line, dotted name) of every import; ``from a.b import c`` gives 'a.b.c' (a module or a name in a.b)."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = '.' * node.level + (node.module or '')
            out.extend((node.lineno, base + '.' + alias.name) for alias in node.names)
    return out


def target(root, dotted):
    """The plugins/ file an import of the collection reaches, as 'gpu/node.py' (module_utils) or
    'plugin_utils/x.py'; the package folder ('gpu') when it names the package itself."""
    parts = dotted[len(PREFIX):].split('.')
    if parts[0] == 'module_utils':
        parts = parts[1:]
    for end in (len(parts), len(parts) - 1):
        rel = '/'.join(parts[:end])
        base = os.path.join(root, 'plugins', 'module_utils' if dotted.startswith(PREFIX + 'module_utils') else '')
        if end and os.path.isfile(os.path.join(base, rel + '.py')):
            return rel + '.py'
    return parts[0]


def allowed(entries, reached):
    return any(reached == e or reached.startswith(e + '/') for e in entries)


def under(name, prefixes):
    return any(name == p or name.startswith(p + '.') for p in prefixes)


# ------------------------------------------------------------------------------------------ the rules

def import_violations(root):
    """Every import of every plugins/ file against MAY_IMPORT and API_IMPORTS; filters import nothing but
    the pure packages, the filters' shared error wrapper, Ansible's errors and the standard library."""
    out = []
    for path in files(root, 'plugins'):
        package = package_of(path)
        tree = ast.parse(read(root, path))
        for line, name in imports(tree):
            where = '%s:%d' % (path, line)
            if name.startswith('.'):
                out.append('%s: relative import %s (use the ansible_collections path)' % (where, name))
            elif name.startswith(PREFIX):
                reached = target(root, name)
                if not allowed(MAY_IMPORT.get(package, ()), reached):
                    out.append('%s: %s may not import %s (docs/architecture.md, Layers)' % (where, package, reached))
            elif under(name, API_IMPORTS) and package not in API_PACKAGES:
                out.append('%s: only %s/ talk to the API, %s imports %s'
                           % (where, '/, '.join(API_PACKAGES), package, name))
            elif package == 'filter' and not (name.split('.')[0] in STDLIB or under(name, FILTER_EXTERNAL)):
                out.append('%s: a filter imports %s (only the pure packages, %s and the standard library)'
                           % (where, name, ', '.join(FILTER_EXTERNAL)))
    return out


def import_time(node):
    """The nodes of ``node`` that run when its module is imported: all but the bodies of functions."""
    for child in ast.iter_child_nodes(node):
        if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            yield child
            yield from import_time(child)


def lazy_filter_violations(root):
    """A filter file imports nothing of plugins/module_utils when it loads, only inside its functions."""
    # Ansible imports every filter file of the collection in each worker that resolves one of them: 0.1 s a task.
    out = []
    for path in files(root, 'plugins/filter'):
        for node in import_time(ast.parse(read(root, path))):
            found = imports(node) if isinstance(node, (ast.Import, ast.ImportFrom)) else []
            out.extend('%s:%d: a filter imports %s when it loads; import it inside the functions that use it'
                       % (path, line, name) for line, name in found if name.startswith(PREFIX + 'module_utils'))
    return out


def size_violations(root):
    """Files in plugins/ over MAX_FILE_LINES code lines; functions in plugins/ and tests/testbed/ over
    MAX_FUNCTION_LINES."""
    out = []
    for path in files(root, 'plugins') + files(root, 'tests/testbed'):
        tree, lines = code_lines(read(root, path))
        if path.startswith('plugins/') and len(lines) > MAX_FILE_LINES:
            out.append('%s: %d code lines, over %d' % (path, len(lines), MAX_FILE_LINES))
        out.extend('%s:%d: function %s has %d code lines, over %d' % (path, first, name, count, MAX_FUNCTION_LINES)
                   for name, first, count in functions(tree, lines) if count > MAX_FUNCTION_LINES)
    return out


def thin_violations(root):
    """Filters: no function over MAX_THIN_LINES code lines, no for/while loop. Modules: no class, no loop, no
    function but main() over MAX_THIN_LINES. The inventory plugin: no function over MAX_INVENTORY_LINES (it
    reads through ops/inventory.py: see import_violations)."""
    out = []
    for path in files(root, 'plugins/filter') + files(root, 'plugins/modules') + files(root, 'plugins/inventory'):
        tree, lines = code_lines(read(root, path))
        package = package_of(path)
        limit = MAX_INVENTORY_LINES if package == 'inventory' else MAX_THIN_LINES
        out.extend('%s:%d: %s has %d code lines, over %d: plugins/%s stays thin'
                   % (path, first, name, count, limit, package)
                   for name, first, count in functions(tree, lines)
                   if count > limit and not (package == 'modules' and name == 'main'))
        if package in ('filter', 'modules'):
            out.extend('%s:%d: a loop in a %s plugin: the logic belongs in module_utils' % (path, node.lineno, package)
                       for node in ast.walk(tree) if isinstance(node, (ast.For, ast.While)))
        if package == 'modules':
            out.extend('%s:%d: class %s in a module: the logic belongs in module_utils' % (path, node.lineno, node.name)
                       for node in ast.walk(tree) if isinstance(node, ast.ClassDef))
    return out


class _Loader(yaml.SafeLoader):
    """YAML with Ansible's tags (!unsafe, !vault) read as plain values."""


_Loader.add_multi_constructor('!', lambda loader, _tag, node: loader.construct_scalar(node)
                              if isinstance(node, yaml.ScalarNode) else None)


def load_yaml(root, path):
    return list(yaml.load_all(read(root, path), Loader=_Loader))  # nosec: a SafeLoader


def count_tasks(tasks, keep=lambda task: True):
    """Tasks in a task list, blocks counted by what they hold (block, rescue, always)."""
    total = 0
    for task in tasks or []:
        if isinstance(task, dict) and 'block' in task:
            total += sum(count_tasks(task.get(key), keep) for key in ('block', 'rescue', 'always'))
        elif isinstance(task, dict) and keep(task):
            total += 1
    return total


def is_dispatch(task):
    return any(key.split('.')[-1] in DISPATCH for key in task)


def dispatch_violations(root):
    """A role with more than ROLE_HANDFUL tasks keeps at most MAIN_SETUP_TASKS tasks in tasks/main.yml that
    are not include_tasks/import_tasks/include_role/import_role."""
    out = []
    for role in sorted(os.listdir(os.path.join(root, 'roles'))):
        task_files = files(root, 'roles/%s/tasks' % role, ('.yml', '.yaml'))
        main = 'roles/%s/tasks/main.yml' % role
        if main not in task_files:
            continue
        total = sum(count_tasks(doc) for path in task_files for doc in load_yaml(root, path))
        setup = sum(count_tasks(doc, lambda t: not is_dispatch(t)) for doc in load_yaml(root, main))
        if total > ROLE_HANDFUL and setup > MAIN_SETUP_TASKS:
            out.append('roles/%s: %d tasks, %d of them in tasks/main.yml that are not include/import (at most %d): '
                       'main.yml dispatches to task files' % (role, total, setup, MAIN_SETUP_TASKS))
    return out


JINJA = re.compile(r'\{\{.*?\}\}|\{%.*?%\}', re.S)


def strings(node):
    if isinstance(node, dict):
        for key, value in node.items():
            yield from strings(key)
            yield from strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from strings(value)
    elif isinstance(node, str):
        yield node


def jinja_violations(root):
    """Every {{ ... }} and {% ... %} of roles/ (the values of tasks, handlers, defaults, vars and meta as
    Ansible reads them, and templates) at most MAX_JINJA characters, white space runs counted as one: a
    decision that long belongs in a filter."""
    out = []
    for path in files(root, 'roles', ('.yml', '.yaml', '.j2')):
        if path.endswith('.j2'):
            texts = [read(root, path)]
        elif path.split('/')[2] in ('tasks', 'handlers', 'defaults', 'vars', 'meta'):
            try:
                texts = [s for doc in load_yaml(root, path) for s in strings(doc)]
            except yaml.YAMLError as exc:
                out.append('%s: not valid YAML: %s' % (path, ' '.join(str(exc).split())))
                continue
        else:
            continue
        for text in texts:
            for match in JINJA.finditer(text):
                expression = ' '.join(match.group(0).split())
                if len(expression) > MAX_JINJA:
                    out.append('%s: a Jinja expression of %d characters, over %d: %s...'
                               % (path, len(expression), MAX_JINJA, expression[:60]))
    return out


def issue_reference_violations(root):
    """No number of this project's issue tracker in code, tests or docs: it tells a reader of the repository
    nothing, so say what the issue was. An upstream issue is cited as owner/repository#number."""
    out = []
    for top in ISSUE_SCOPE:
        paths = [top] if os.path.isfile(os.path.join(root, top)) else files(root, top, ('',))
        for path in paths:
            try:
                text = read(root, path)
            except (UnicodeDecodeError, OSError):
                continue
            out.extend('%s:%d: %s' % (path, text.count('\n', 0, m.start()) + 1, m.group(0))
                       for m in ISSUE_REFERENCE.finditer(text))
    return out


# kubernetes.core modules that write what they are given (k8s_info only reads)
K8S_WRITERS = ('k8s', 'k8s_json_patch', 'kubernetes.core.k8s', 'kubernetes.core.k8s_json_patch')


def all_tasks(tasks):
    """Every task of a task list, those inside blocks (block, rescue, always) included."""
    for task in tasks or []:
        if isinstance(task, dict) and 'block' in task:
            for key in ('block', 'rescue', 'always'):
                yield from all_tasks(task.get(key))
        elif isinstance(task, dict):
            yield task


def names_cluster_policy(args):
    """Whether kubernetes.core arguments name kind ClusterPolicy: ``kind``, or a definition (mapping, list or
    YAML text) holding one."""
    if not isinstance(args, dict):
        return False
    definitions = [args.get('definition'), args.get('resource_definition')]
    kinds = [args.get('kind')] + [d.get('kind') for d in strings_and_dicts(definitions) if isinstance(d, dict)]
    texts = [d for d in strings_and_dicts(definitions) if isinstance(d, str)]
    return 'ClusterPolicy' in kinds or any(re.search(r'\bkind:\s*ClusterPolicy\b', t) for t in texts)


def strings_and_dicts(values):
    for value in values:
        if isinstance(value, list):
            yield from strings_and_dicts(value)
        elif value is not None:
            yield value


def cluster_policy_write_violations(root):
    """The ClusterPolicy is written only by gpuops.gpu.cluster_policy (it dry-runs, patches only what differs
    and can wait for ready): no role task writes kind ClusterPolicy with kubernetes.core.k8s."""
    out = []
    for path in files(root, 'roles', ('.yml', '.yaml')):
        if path.split('/')[2] not in ('tasks', 'handlers'):
            continue
        for doc in load_yaml(root, path):
            for task in all_tasks(doc if isinstance(doc, list) else []):
                writers = [key for key in task if key in K8S_WRITERS and names_cluster_policy(task[key])]
                out.extend('%s: task %r writes the ClusterPolicy with %s; use gpuops.gpu.cluster_policy'
                           % (path, task.get('name'), key) for key in writers)
    return out


RULES = {
    'import': import_violations, 'lazy filter import': lazy_filter_violations,
    'size': size_violations, 'thin': thin_violations,
    'dispatch': dispatch_violations, 'jinja': jinja_violations, 'issue reference': issue_reference_violations,
    'cluster policy write': cluster_policy_write_violations,
}


def is_known(rule, violation):
    return any(violation.startswith(path + ':') and known_rule == rule for path, known_rule in KNOWN)


# ------------------------------------------------------------------------------------------ this repository

@pytest.mark.parametrize('rule', sorted(RULES))
def test_the_repository_keeps_the_rule(rule):
    found = [v for v in RULES[rule](ROOT) if not is_known(rule, v)]
    assert not found, '\n'.join(found)


def test_known_violations_are_still_there():
    """KNOWN only shrinks: an entry whose violation is gone must go."""
    found = dict((rule, check(ROOT)) for rule, check in RULES.items())
    stale = sorted('%s (%s)' % (path, rule) for path, rule in KNOWN
                   if not any(v.startswith(path + ':') for v in found[rule]))
    assert not stale, 'fixed, remove from KNOWN: %s' % ', '.join(stale)


def test_the_import_table_is_the_documented_one():
    """Every package of plugins/module_utils has its row, and the doc's table names the same packages."""
    packages = sorted(d for d in os.listdir(os.path.join(ROOT, 'plugins', 'module_utils'))
                      if os.path.isdir(os.path.join(ROOT, 'plugins', 'module_utils', d)) and d != '__pycache__')
    assert all(p in MAY_IMPORT for p in packages), packages
    doc = read(ROOT, 'docs/architecture.md')
    rows = re.findall(r'^\| `([a-z0-9_]+)/` \|.*\| (.*) \| (?:no|yes)[^|]*\|$', doc, re.M)
    assert sorted(row[0] for row in rows) == packages
    for package, may in rows:
        named = re.findall(r'`([a-z0-9_]+/(?:[a-z0-9_]+\.py)?)`', may)
        assert sorted(n.rstrip('/') for n in named) == sorted(MAY_IMPORT[package]), package


# ------------------------------------------------------------------------------------------ the checks can fail

def plant(root, path, text):
    full = os.path.join(str(root), path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, 'w', encoding='utf-8') as handle:
        handle.write(text)


def test_planted_imports_are_found(tmp_path):
    plant(tmp_path, 'plugins/module_utils/gpu/node.py', 'X = 1\n')
    plant(tmp_path, 'plugins/module_utils/k8s/client.py', 'X = 1\n')
    plant(tmp_path, 'plugins/module_utils/rollout/progress.py', 'X = 1\n')
    plant(tmp_path, 'plugins/module_utils/plans/ok.py',
          'from %smodule_utils.gpu import node\nimport json\n' % PREFIX)
    plant(tmp_path, 'plugins/module_utils/gpu/up.py', 'from %smodule_utils.k8s import client\n' % PREFIX)
    plant(tmp_path, 'plugins/module_utils/plans/api.py', 'from kubernetes.client import CoreV1Api\n')
    plant(tmp_path, 'plugins/module_utils/gpu/units.py', 'from kubernetes.utils import parse_quantity\n')
    plant(tmp_path, 'plugins/filter/f.py', 'from %smodule_utils.rollout import progress\nimport yaml\n' % PREFIX)
    plant(tmp_path, 'plugins/inventory/i.py', 'from %smodule_utils.k8s.client import Connection\n' % PREFIX)
    found = import_violations(str(tmp_path))
    assert sorted(v.split(':')[0] for v in found) == [
        'plugins/filter/f.py', 'plugins/filter/f.py', 'plugins/inventory/i.py',
        'plugins/module_utils/gpu/units.py', 'plugins/module_utils/gpu/up.py', 'plugins/module_utils/plans/api.py'], found
    assert 'gpu may not import k8s/client.py' in ' '.join(found)


def test_planted_filter_imports_at_load_are_found(tmp_path):
    plant(tmp_path, 'plugins/filter/top.py', 'import json\nfrom %smodule_utils.plans import quota\n' % PREFIX)
    plant(tmp_path, 'plugins/filter/guarded.py', 'try:\n    from %smodule_utils.gpu import node\nexcept ImportError:\n'
          '    node = None\n' % PREFIX)
    plant(tmp_path, 'plugins/filter/in_class.py', 'class FilterModule(object):\n'
          '    import %smodule_utils.gpu.node\n' % PREFIX)
    plant(tmp_path, 'plugins/filter/lazy.py', 'from %splugin_utils.filters import filter_errors\n\n\n'
          'def f(x):\n    from %smodule_utils.plans import quota\n    return quota.f(x)\n' % (PREFIX, PREFIX))
    plant(tmp_path, 'plugins/modules/m.py', 'from %smodule_utils.plans import quota\n' % PREFIX)
    found = lazy_filter_violations(str(tmp_path))
    assert sorted(v.split(':', 2)[0] + ':' + v.split(':', 2)[1] for v in found) == [
        'plugins/filter/guarded.py:2', 'plugins/filter/in_class.py:2', 'plugins/filter/top.py:2'], found


def test_planted_sizes_are_found(tmp_path):
    body = ''.join('    x%d = %d\n' % (i, i) for i in range(MAX_FUNCTION_LINES))
    plant(tmp_path, 'plugins/module_utils/plans/long.py', 'def f():\n    """Doc."""\n    # note\n\n' + body)
    plant(tmp_path, 'plugins/module_utils/plans/fits.py', 'def f():\n' + body[:body.rindex('    x')])
    plant(tmp_path, 'plugins/module_utils/plans/big.py', 'X = 1\n' * (MAX_FILE_LINES + 1) + '"""doc"""\n')
    plant(tmp_path, 'plugins/module_utils/plans/doc.py', 'X = 1\n' * MAX_FILE_LINES + '"""\n\n"""\n# c\n\n')
    found = size_violations(str(tmp_path))
    assert found == ['plugins/module_utils/plans/big.py: 401 code lines, over 400',
                     'plugins/module_utils/plans/long.py:1: function f has 51 code lines, over 50'], found


def test_planted_thick_plugins_are_found(tmp_path):
    plant(tmp_path, 'plugins/filter/f.py', 'def f(x):\n    for y in x:\n        pass\n')
    plant(tmp_path, 'plugins/modules/m.py', 'class C:\n    pass\n\n\ndef main():\n' + '    x = 1\n' * 40)
    plant(tmp_path, 'plugins/inventory/i.py', 'def parse():\n' + '    x = 1\n' * MAX_INVENTORY_LINES)
    found = thin_violations(str(tmp_path))
    assert [v.split(':')[0] for v in found] == [
        'plugins/filter/f.py', 'plugins/modules/m.py', 'plugins/inventory/i.py'], found


def test_planted_fat_main_yml_is_found(tmp_path):
    tasks = ''.join('- name: T%d\n  ansible.builtin.debug:\n    msg: "{{ %d }}"\n' % (i, i) for i in range(9))
    plant(tmp_path, 'roles/fat/tasks/main.yml', '---\n' + tasks)
    plant(tmp_path, 'roles/thin/tasks/work.yml', '---\n' + tasks)
    plant(tmp_path, 'roles/thin/tasks/main.yml', '---\n- name: Set up\n  ansible.builtin.set_fact:\n    a: 1\n'
          '- name: Work\n  block:\n    - name: Go\n      ansible.builtin.include_tasks: work.yml\n')
    assert [v.split(':')[0] for v in dispatch_violations(str(tmp_path))] == ['roles/fat']


def test_planted_long_jinja_is_found(tmp_path):
    long = "{{ %s }}" % ' + '.join(["'x'"] * 100)
    plant(tmp_path, 'roles/r/tasks/main.yml', '---\n- name: T\n  ansible.builtin.debug:\n    msg: >-\n      %s\n'
          % long)
    plant(tmp_path, 'roles/r/templates/t.j2', '{%% set a = %s %%}\n{{ a }}\n' % long[3:-3])
    plant(tmp_path, 'roles/r/defaults/main.yml', '---\nr_short: "{{ 1 +          2 }}"\n')
    assert [v.split(':')[0] for v in jinja_violations(str(tmp_path))] == [
        'roles/r/tasks/main.yml', 'roles/r/templates/t.j2']


def test_planted_cluster_policy_write_is_found(tmp_path):
    plant(tmp_path, 'roles/r/tasks/main.yml', '''---
- name: Patch it
  kubernetes.core.k8s:
    state: patched
    api_version: nvidia.com/v1
    kind: ClusterPolicy
    name: gpu-cluster-policy
    definition: {spec: {mig: {strategy: mixed}}}
- name: In a block
  block:
    - name: Create it
      kubernetes.core.k8s:
        definition:
          - {apiVersion: v1, kind: ConfigMap}
          - {apiVersion: nvidia.com/v1, kind: ClusterPolicy}
- name: As text
  k8s:
    definition: |
      apiVersion: nvidia.com/v1
      kind: ClusterPolicy
- name: Read it (fine)
  kubernetes.core.k8s_info:
    kind: ClusterPolicy
- name: Through the module (fine)
  gpuops.gpu.cluster_policy:
    state: patched
    overrides: {mig: {strategy: mixed}}
- name: Another kind (fine)
  kubernetes.core.k8s:
    kind: ConfigMap
    definition: {metadata: {name: ClusterPolicy}}
''')
    plant(tmp_path, 'roles/r/defaults/main.yml', '---\nr_kind: ClusterPolicy\n')
    found = cluster_policy_write_violations(str(tmp_path))
    tasks = [v.split(': task ')[1].split(' writes')[0] for v in found]
    assert tasks == ["'Patch it'", "'Create it'", "'As text'"], found
    assert all(v.startswith('roles/r/tasks/main.yml: ') for v in found), found


def test_planted_issue_reference_is_found(tmp_path):
    plant(tmp_path, 'docs/x.md', 'Fixed in %s %d.\nUpstream: NVIDIA/gpu-operator#2833.\n' % ('Issue', 17))
    plant(tmp_path, 'tests/unit/test_x.py', '# see %s #%d\n' % ('issue', 3))
    assert sorted(v.rsplit(':', 1)[0] for v in issue_reference_violations(str(tmp_path))) == [
        'docs/x.md:1', 'tests/unit/test_x.py:1']
