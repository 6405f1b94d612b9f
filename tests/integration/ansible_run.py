"""Run gpuops.gpu modules and roles through ansible-playbook against the virtual GPU cluster, the way
users (and AWX) do: a playbook on localhost, the connection from K8S_AUTH_KUBECONFIG."""

import json
import os
import subprocess
import sys
import tempfile

import yaml


def run_play(kubeconfig, tasks, check=False, diff=False, extra_env=None, timeout=900, vars=None):
    """Run one play of ``tasks``; returns (rc, {task name: result}, raw stdout)."""
    play = [{'name': 'integration', 'hosts': 'localhost', 'gather_facts': False,
             'vars': vars or {}, 'tasks': tasks}]
    with tempfile.NamedTemporaryFile('w', suffix='.yml', delete=False) as f:
        yaml.safe_dump(play, f)
        path = f.name
    env = dict(os.environ)
    env.update({'K8S_AUTH_KUBECONFIG': kubeconfig, 'ANSIBLE_STDOUT_CALLBACK': 'ansible.posix.json',
                'ANSIBLE_LOCALHOST_WARNING': 'false', 'ANSIBLE_INVENTORY_UNPARSED_WARNING': 'false',
                'ANSIBLE_PYTHON_INTERPRETER': sys.executable})
    env.update(extra_env or {})
    cmd = [os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), path]
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
    try:
        out = json.loads(proc.stdout[proc.stdout.index('{'):])
        for play_out in out.get('plays', []):
            for task in play_out.get('tasks', []):
                results[task['task']['name']] = task['hosts'].get('localhost', {})
    except (ValueError, KeyError):
        pass
    return proc.returncode, results, proc.stdout + proc.stderr
