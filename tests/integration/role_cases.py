"""Bad-input cases for the role integration tests: run several bad inputs in ONE playbook (block/rescue
per case, so a failed check stops that role run exactly as it would alone) and check where and why each
failed; secret checks."""

import json

from ansible_run import bare_name, include, run_play


def failure_block(role, case, variables, check_mode=None):
    """gpuops.gpu.<role> with ``variables`` (in check mode when ``check_mode``) in a block whose rescue records the
    failed task and its message under the fact ``__cases[case]`` (a case that does not fail records nothing)."""
    return {'name': 'case ' + case, 'block': [include(role, variables, 'run ' + case, check_mode)], 'rescue': [
        {'name': 'record ' + case, 'ansible.builtin.set_fact': {'__cases': (
            "{{ __cases | default({}) | combine({%r: {'task': ansible_failed_task.name, "
            "'msg': ansible_failed_result.msg | default('') | string}}) }}" % case)}}]}


def failure_cases(kubeconfig, runs, variables=None):
    """Run every ``runs`` item (case -> (role, variables of that run[, check mode])) in one playbook with
    ``variables`` as play vars; returns ({case: {'task': failed task name, 'msg': message as text}}, raw output)
    (missing case = it did not fail)."""
    tasks = [{'name': 'start', 'ansible.builtin.set_fact': {'__cases': {}}}]
    tasks += [failure_block(run[0], case, run[1], *run[2:]) for case, run in runs.items()]
    tasks.append({'name': 'report', 'ansible.builtin.debug': {'var': '__cases'}})
    rc, results, raw = run_play(kubeconfig, tasks, vars=variables)
    assert rc == 0 and 'report' in results, raw[-4000:]
    return results['report']['__cases'], raw


def failures(kubeconfig, role, base, cases):
    """failure_cases for one role: ``cases`` is case -> variables over ``base``."""
    return failure_cases(kubeconfig, dict((case, (role, overrides)) for case, overrides in cases.items()), base)


def assert_failed(got, raw, expected, task=None):
    """Every case of ``expected`` (case -> message fragment) failed with that fragment in its message,
    in a task whose name starts with ``task`` (a prefix or a tuple of prefixes; None: any task), with or without
    its task file's prefix."""
    for name, text in expected.items():
        assert name in got, 'case %s did not fail: %s' % (name, raw[-3000:])
        if task is not None:
            assert (got[name]['task'].rsplit(' : ', 1)[-1].startswith(task)
                    or bare_name(got[name]['task']).startswith(task)), got[name]
        assert text in got[name]['msg'], got[name]


def assert_secret_free(raw, secrets, where='ansible-playbook output'):
    for secret in secrets:
        assert secret not in raw, 'a secret value appears in the %s' % where


def config_maps_text(core):
    """Every ConfigMap of the cluster, as one JSON text (to prove secrets never land in one)."""
    return json.dumps([cm.to_dict() for cm in core.list_config_map_for_all_namespaces().items], default=str)
