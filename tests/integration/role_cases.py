"""Helpers for the mirror / gpu_node_placement / vgpu integration tests: run a role the way users do
(ansible-playbook, json callback), run several bad inputs in ONE playbook (block/rescue per case, so
a failed check stops that role run exactly as it would alone), and secret / no-change checks."""

import glob
import json
import os
import subprocess

import yaml

from ansible_run import run_play

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def include(role, variables=None, name=None):
    task = {'name': name or role, 'ansible.builtin.include_role': {'name': 'gpuops.gpu.' + role}}
    if variables:
        task['vars'] = variables
    return task


def run_role(kubeconfig, role, variables, check=False, diff=False):
    """(rc, results by task name, raw output) of one role run."""
    return run_play(kubeconfig, [include(role)], check=check, diff=diff, vars=variables)


def failures(kubeconfig, role, base, cases):
    """Run every ``cases`` item (name -> variable overrides) in one playbook; returns
    {case: {'task': failed task name, 'msg': message as text}} (missing case = it did not fail)."""
    tasks = [{'name': 'start', 'ansible.builtin.set_fact': {'__cases': {}}}]
    for case, overrides in cases.items():
        variables = dict(base)
        variables.update(overrides)
        tasks.append({'name': 'case ' + case, 'block': [include(role, variables, 'run ' + case)], 'rescue': [
            {'name': 'record ' + case, 'ansible.builtin.set_fact': {'__cases': (
                "{{ __cases | combine({'%s': {'task': ansible_failed_task.name, "
                "'msg': ansible_failed_result.msg | default('') | string}}) }}" % case)}}]})
    tasks.append({'name': 'report', 'ansible.builtin.debug': {'var': '__cases'}})
    rc, results, raw = run_play(kubeconfig, tasks)
    assert rc == 0 and 'report' in results, raw[-4000:]
    return results['report']['__cases'], raw


def assert_secret_free(raw, secrets, where='ansible-playbook output'):
    for secret in secrets:
        assert secret not in raw, 'a secret value appears in the %s' % where


def config_maps_text(core):
    """Every ConfigMap of the cluster, as one JSON text (to prove secrets never land in one)."""
    return json.dumps([cm.to_dict() for cm in core.list_config_map_for_all_namespaces().items], default=str)


def gpu_operator_csv_path():
    """The gpu-operator bundle CSV in the Go module cache (read at test time, never copied)."""
    out = subprocess.run([os.path.join(REPO, 'tests', 'testbed', 'hack', 'asset-modules.sh')],
                         stdout=subprocess.PIPE, text=True, check=True).stdout
    mod = dict(line.split(' ', 1) for line in out.strip().splitlines())['gpu-operator']
    return glob.glob(os.path.join(mod, 'bundle', 'manifests', '*.clusterserviceversion.yaml'))[0]


def gpu_operator_csv():
    with open(gpu_operator_csv_path()) as handle:
        return yaml.safe_load(handle)
