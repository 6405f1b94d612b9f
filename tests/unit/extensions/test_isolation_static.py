# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Isolation by construction, statically: every module a role or playbook calls is in the action group
`gpuops.gpu.gpu` (meta/runtime.yml, with the kubernetes.core groups it extends, read from the installed
kubernetes.core), and every playbook sets the one identical module_defaults block for that group; so
`-e gpuops_kubeconfig=... -e gpuops_context=...` reaches every module and none falls back to the default
kubeconfig. tests/integration/test_isolation.py proves it on two virtual GPU clusters."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import glob
import importlib.util
import os
import re

import pytest
import yaml

from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import CONNECTION_VARS

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
GROUP = 'group/gpuops.gpu.gpu'
# every connection option, from the playbook variable of common/names.py CONNECTION_VARS (which the gpu_nodes
# inventory plugin also sets on its cluster groups); the context, when no variable names it, from GPUOPS_CONTEXT (the
# context field of the gpuops.gpu kubeconfig credential type, extensions/awx/credential_types.yml), an empty one
# meaning the kubeconfig's current context
MODULE_DEFAULTS = {GROUP: dict((option, '{{ %s | default(omit) }}' % var) for option, var in CONNECTION_VARS)}
MODULE_DEFAULTS[GROUP]['context'] = ("{{ gpuops_context | default(lookup('ansible.builtin.env', 'GPUOPS_CONTEXT'), true) "
                                     "| default(omit, true) }}")
# every play runs for the hosts gpuops_clusters names (one host per cluster, docs/multi-cluster.md), else localhost
HOSTS = "{{ gpuops_clusters | default('localhost') }}"
FQCN = re.compile(r'^[a-z0-9_]+\.[a-z0-9_]+\.[a-z0-9_]+$')
# modules that never talk to a cluster (control flow, facts, local files)
LOCAL = {'ansible.builtin.' + name for name in (
    'assert', 'copy', 'debug', 'fail', 'file', 'import_playbook', 'import_role', 'import_tasks', 'include_role',
    'include_tasks', 'include_vars', 'meta', 'pause', 'set_fact', 'set_stats', 'slurp', 'stat', 'tempfile', 'template',
    'validate_argument_spec')} | {'kubernetes.core.helm_pull'}  # helm pull: a chart repository, never a cluster
BLOCKS = ('block', 'rescue', 'always')


def _load(path):
    with open(path) as handle:
        return yaml.safe_load(handle)


def _group_actions(collection, group):
    """The FQCNs of action group ``group`` of ``collection`` (its metadata extend_group resolved)."""
    actions = set()
    for entry in _runtime(collection)['action_groups'][group]:
        if isinstance(entry, dict):
            for extended in entry['metadata'].get('extend_group', []):
                namespace, name, sub = extended.split('.')
                actions |= _group_actions(namespace + '.' + name, sub)
        else:
            actions.add(entry if FQCN.match(entry) else collection + '.' + entry)
    return actions


def _runtime(collection):
    if collection == 'gpuops.gpu':
        return _load(os.path.join(REPO, 'meta', 'runtime.yml'))
    spec = importlib.util.find_spec('ansible_collections.' + collection)
    assert spec is not None, '%s is not installed (a dependency of gpuops.gpu)' % collection
    return _load(os.path.join(list(spec.submodule_search_locations)[0], 'meta', 'runtime.yml'))


def called_modules(tasks):
    """The FQCN module of every task in ``tasks`` (blocks included); a task without one is an error."""
    found = []
    for task in tasks or []:
        if any(key in task for key in BLOCKS):
            for key in BLOCKS:
                found += called_modules(task.get(key))
            continue
        modules = [key for key in task if FQCN.match(key)]
        assert len(modules) == 1, 'task %r: no single FQCN module among %s' % (task.get('name'), sorted(task))
        found.append(modules[0])
    return found


def outside(modules, group):
    """The modules that talk to a cluster but are not in ``group``, sorted."""
    return sorted(set(m for m in modules if m not in LOCAL and m not in group))


def _task_files():
    files = sorted(glob.glob(os.path.join(REPO, 'roles', '*', 'tasks', '*.yml')))
    files += sorted(glob.glob(os.path.join(REPO, 'roles', '*', 'handlers', '*.yml')))
    return files


def _playbooks():
    return sorted(glob.glob(os.path.join(REPO, 'playbooks', '*.yml')))


def _rel(path):
    return os.path.relpath(path, REPO)


def test_the_group_extends_both_kubernetes_core_groups():
    group = _group_actions('gpuops.gpu', 'gpu')
    for module in ('kubernetes.core.k8s', 'kubernetes.core.k8s_info', 'kubernetes.core.helm',
                   'kubernetes.core.helm_info', 'kubernetes.core.helm_repository'):
        assert module in group, module
    modules = sorted(os.path.splitext(os.path.basename(p))[0]
                     for p in glob.glob(os.path.join(REPO, 'plugins', 'modules', '*.py')) if '__' not in p)
    assert set('gpuops.gpu.' + m for m in modules) <= group, 'every module of the collection is in the group'


@pytest.mark.parametrize('path', _task_files(), ids=_rel)
def test_every_module_a_role_calls_is_in_the_group(path):
    assert outside(called_modules(_load(path)), _group_actions('gpuops.gpu', 'gpu')) == [], (
        '%s calls modules the module_defaults of group/gpuops.gpu.gpu do not reach: add their group to '
        'meta/runtime.yml extend_group (or the module to the group)' % _rel(path))


@pytest.mark.parametrize('path', _playbooks(), ids=_rel)
def test_every_playbook_sets_the_one_module_defaults_block(path):
    group = _group_actions('gpuops.gpu', 'gpu')
    for play in _load(path):
        if 'ansible.builtin.import_playbook' in play:
            target = os.path.join(os.path.dirname(path), play['ansible.builtin.import_playbook'])
            assert os.path.isfile(target), target
            continue
        assert play.get('hosts') == HOSTS, '%s: play %r must run for hosts %r' % (_rel(path), play.get('name'), HOSTS)
        assert play.get('module_defaults') == MODULE_DEFAULTS, (
            '%s: play %r must set exactly module_defaults %r' % (_rel(path), play.get('name'), MODULE_DEFAULTS))
        for key in ('pre_tasks', 'tasks', 'post_tasks', 'handlers'):
            assert outside(called_modules(play.get(key)), group) == [], (_rel(path), key)


def test_the_checks_can_fail():
    group = _group_actions('gpuops.gpu', 'gpu')
    tasks = [{'name': 'taint', 'kubernetes.core.k8s_taint': {'name': 'n'}},
             {'block': [{'name': 'helm', 'kubernetes.core.helm': {}},
                        {'name': 'kubectl', 'ansible.builtin.command': 'kubectl get nodes'}]},
             {'name': 'fact', 'ansible.builtin.set_fact': {'a': 1}}]
    assert outside(called_modules(tasks), group) == ['ansible.builtin.command', 'kubernetes.core.k8s_taint']
    with pytest.raises(AssertionError, match='no single FQCN module'):
        called_modules([{'name': 'short name', 'k8s_info': {}}])
    assert 'kubernetes.core.helm' not in _group_actions('kubernetes.core', 'k8s')
