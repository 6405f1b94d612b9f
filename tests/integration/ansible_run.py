"""The one runner of the integration tests: gpuops.gpu modules and roles through ansible-playbook against
the virtual GPU cluster, the way users (and AWX) do: a playbook on localhost, the connection from
K8S_AUTH_KUBECONFIG.

    run_role(kubeconfig, 'mig', variables, check=True)          one role (check mode, --diff, tasks after it)
    run_play(kubeconfig, [include('nfd'), include('gpu_operator')], vars=variables)   any tasks
    run_play_stats(...)                                          run_play plus the play's change/failure counts
"""

import json
import os
import subprocess
import sys
import tempfile

import yaml


def run_play(kubeconfig, tasks, check=False, diff=False, extra_env=None, timeout=900, vars=None, bin_dir=None):
    """Run one play of ``tasks``; returns (rc, {task name: result}, raw stdout). ``bin_dir``: the virtualenv whose
    ansible-playbook and Python run it (the version matrix, tests/compat/), else this one's."""
    bin_dir = bin_dir or os.path.dirname(sys.executable)
    play = [{'name': 'integration', 'hosts': 'localhost', 'gather_facts': False,
             'vars': vars or {}, 'tasks': tasks}]
    with tempfile.NamedTemporaryFile('w', suffix='.yml', delete=False) as f:
        yaml.safe_dump(play, f)
        path = f.name
    env = dict(os.environ)
    env.update({'K8S_AUTH_KUBECONFIG': kubeconfig, 'ANSIBLE_STDOUT_CALLBACK': 'ansible.posix.json',
                'ANSIBLE_LOCALHOST_WARNING': 'false', 'ANSIBLE_INVENTORY_UNPARSED_WARNING': 'false',
                'ANSIBLE_PYTHON_INTERPRETER': os.path.join(bin_dir, 'python')})
    env.update(extra_env or {})
    cmd = [os.path.join(bin_dir, 'ansible-playbook'), path]
    if check:
        cmd.append('--check')
    if diff:
        cmd.append('--diff')
    try:
        proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              timeout=timeout, check=False)
    finally:
        os.unlink(path)
    results = {}
    for play_out in callback_output(proc.stdout).get('plays', []):
        for task in play_out.get('tasks', []):
            name = task['task']['name']
            result = task['hosts'].get('localhost', {})
            results[name] = result
            results.setdefault(name.split(' : ', 1)[-1], result)  # role tasks: "role : name"
            results.setdefault(bare_name(name), result)  # a role's task file other than main.yml: "role : file | name"
    return proc.returncode, results, proc.stdout + proc.stderr


def bare_name(name):
    """A task's name without its role prefix and, in a role's task file other than main.yml (ansible-lint's
    name[prefix]), the file prefix: 'gpuops.gpu.mirror : preflight | Check the inputs' -> 'Check the inputs'."""
    return name.split(' : ', 1)[-1].split(' | ', 1)[-1]


def callback_output(raw):
    """The ansible.posix.json callback's document at the start of ``raw`` ({} when there is none)."""
    try:
        return json.JSONDecoder().raw_decode(raw[raw.index('{'):])[0]
    except ValueError:
        return {}


def task_results(raw):
    """[(task name without its role prefix, result)] in the order they ran (a name may repeat: a role
    included twice)."""
    return [(task['task']['name'].split(' : ', 1)[-1], task['hosts'].get('localhost', {}))
            for play in callback_output(raw).get('plays', []) for task in play.get('tasks', [])]


def include(role, variables=None, name=None, check_mode=None):
    """An include_role task for gpuops.gpu.<role> (its own ``vars``; ``check_mode`` applies to its tasks only)."""
    task = {'name': name or role, 'ansible.builtin.include_role': {'name': 'gpuops.gpu.' + role}}
    if check_mode is not None:
        task['ansible.builtin.include_role']['apply'] = {'check_mode': check_mode}
    if variables:
        task['vars'] = variables
    return task


def run_role(kubeconfig, role, variables=None, check=False, diff=False, extra_tasks=()):
    """(rc, results by task name, raw output) of one run of gpuops.gpu.<role> with ``variables`` as play
    vars, under --check / --diff when asked, followed by ``extra_tasks`` in the same play."""
    return run_play(kubeconfig, [include(role)] + list(extra_tasks), check=check, diff=diff, vars=variables)


def changed_tasks(results):
    """Names of the tasks that changed something, without the role prefix (role tasks are reported with and
    without the role prefix, and those of a task file other than main.yml also without the file prefix; each
    counts once, as 'file | name'). A clean re-run gives []."""
    names = set(name.split(' : ')[-1] for name, res in results.items() if res.get('changed'))
    return sorted(n for n in names if not any(other != n and bare_name(other) == n for other in names))


def run_play_stats(kubeconfig, tasks, check=False, diff=False, vars=None):
    """run_play plus the play's stats (changed/failed counts over every task, role tasks included);
    the report puts the failed tasks first, so an assertion message shows why a run failed."""
    rc, results, raw = run_play(kubeconfig, tasks, check=check, diff=diff, vars=vars)
    stats = callback_output(raw).get('stats', {}).get('localhost', {})
    failed = ['%s: %s' % (name, result.get('msg')) for name, result in task_results(raw) if result.get('failed')]
    return rc, results, stats, '\n'.join(failed) + '\n' + raw[-4000:]


# node labels and annotations the GPU operator's own controllers write when they like (its upgrade controller
# labels every GPU node once it runs; its ClusterPolicy controller annotates every GPU node while
# driver.upgradePolicy.autoUpgrade is on), never a write of the collection: left out of node_facts()
OPERATOR_OWN_LABELS = ('nvidia.com/gpu-driver-upgrade-state',)
OPERATOR_OWN_ANNOTATIONS = ('nvidia.com/gpu-driver-upgrade-enabled',)


def node_facts(core, names=None):
    """What a write by the collection would change on nodes — labels, annotations, cordon, taints —
    without the status heartbeats KWOK keeps writing (resourceVersion moves on its own) and the labels
    and annotations the GPU operator writes by itself (OPERATOR_OWN_LABELS, OPERATOR_OWN_ANNOTATIONS)."""
    out = {}
    for node in core.list_node().items:
        if names is not None and node.metadata.name not in names:
            continue
        annotations = dict((k, v) for k, v in (node.metadata.annotations or {}).items()
                           # the simulator's own bookkeeping, and the operator's
                           if not k.startswith('gpusim.gpuops.dev/') and k not in OPERATOR_OWN_ANNOTATIONS)
        labels = dict((k, v) for k, v in (node.metadata.labels or {}).items() if k not in OPERATOR_OWN_LABELS)
        out[node.metadata.name] = (labels, annotations,
                                   bool(node.spec.unschedulable),
                                   sorted((t.key, t.value, t.effect) for t in node.spec.taints or []))
    return out


def facts_diff(before, after):
    """Readable differences between two node_facts() snapshots (empty when equal)."""
    out = []
    for name in sorted(set(before) | set(after)):
        b, a = before.get(name), after.get(name)
        if b == a:
            continue
        if b is None or a is None:
            out.append('%s: %s' % (name, 'added' if b is None else 'removed'))
            continue
        for index, what in enumerate(('label', 'annotation')):
            for key in sorted(set(b[index]) | set(a[index])):
                if b[index].get(key) != a[index].get(key):
                    out.append('%s %s %s: %r -> %r' % (name, what, key, b[index].get(key), a[index].get(key)))
        if b[2] != a[2]:
            out.append('%s unschedulable: %s -> %s' % (name, b[2], a[2]))
        if b[3] != a[3]:
            out.append('%s taints: %s -> %s' % (name, b[3], a[3]))
    return out
