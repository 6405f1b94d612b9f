#!/usr/bin/env python3
"""MIG rollout benchmark on the virtual GPU cluster, side by side in one run (issue 4, docs/performance.md):

  1. gpuops.gpu.mig_rollout: N A100 nodes, max_unavailable 10%, simulated reconfiguration S seconds;
  2. the floor: batches x S;
  3. the naive kubernetes.core recipe (bench/naive_mig_recipe.yml: k8s_drain + k8s label + k8s_info until
     + uncordon, one node after the other) on a stated subset of nodes, compared per node;
  4. idempotent re-run: API requests and time at M1 vs M2 nodes (all already at the target).

Run with the project's virtualenv (make venv):  ~/.cache/gpuops/venv-*/bin/python bench/mig_rollout_bench.py
Prints a Markdown report (and writes it to --out). Nothing here is a test; numbers depend on the machine.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTBED = os.path.join(REPO, 'tests', 'testbed', 'testbed')
BIN = os.path.dirname(sys.executable)


def collections_path():
    """ANSIBLE_COLLECTIONS_PATH with this checkout as gpuops.gpu (a symlink in the cache) and
    kubernetes.core from the virtualenv, unless the caller set one."""
    if os.environ.get('ANSIBLE_COLLECTIONS_PATH'):
        return os.environ['ANSIBLE_COLLECTIONS_PATH']
    root = os.path.join(os.environ.get('GPUOPS_CACHE', os.path.expanduser('~/.cache/gpuops')), 'bench-collections')
    links = {os.path.join(root, 'ansible_collections', 'gpuops', 'gpu'): REPO}
    site = next(p for p in sys.path if p.endswith('site-packages'))
    links[os.path.join(root, 'ansible_collections', 'kubernetes')] = os.path.join(site, 'ansible_collections',
                                                                                 'kubernetes')
    for link, target in links.items():
        os.makedirs(os.path.dirname(link), exist_ok=True)
        if os.path.islink(link):
            os.remove(link)
        os.symlink(target, link)
    return root


def sh(cmd, env=None, check=True):
    return subprocess.run(cmd, env=env, check=check, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def cluster(name, nodes, seconds):
    cfg = {'cluster': {'gpu_operator': False, 'gpusim': True},
           'node_groups': [{'name': 'a100', 'count': nodes, 'gpu_product': 'NVIDIA-A100-SXM4-40GB',
                            'gpus_per_node': 8, 'labels': {'gpuops.dev/pool': 'bench'}}],
           'simulation': {'mig_reconfigure_seconds': seconds}}
    path = os.path.join(tempfile.mkdtemp(), 'bench.yaml')
    with open(path, 'w') as handle:
        yaml.safe_dump(cfg, handle)
    start = time.monotonic()
    out = sh([sys.executable, TESTBED, '--name', name, 'up', '--config', path]).stdout
    return out.strip().splitlines()[-1], time.monotonic() - start


def down(name):
    sh([sys.executable, TESTBED, '--name', name, 'down'], check=False)


def wait_labelled(kubeconfig, nodes, timeout=300):
    from kubernetes import client, config
    core = client.CoreV1Api(config.new_client_from_config(config_file=kubeconfig))
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        items = core.list_node(label_selector='gpuops.dev/pool=bench').items
        if len(items) == nodes and all((n.metadata.labels or {}).get('nvidia.com/gpu.product') for n in items):
            return
        time.sleep(1)
    raise RuntimeError('GFD labels did not appear on %d nodes' % nodes)


def playbook(kubeconfig, tasks, extra_vars=None):
    play = [{'name': 'bench', 'hosts': 'localhost', 'gather_facts': False, 'tasks': tasks}]
    path = os.path.join(tempfile.mkdtemp(), 'play.yml')
    with open(path, 'w') as handle:
        yaml.safe_dump(play, handle)
    env = dict(os.environ, K8S_AUTH_KUBECONFIG=kubeconfig, ANSIBLE_STDOUT_CALLBACK='ansible.posix.json',
               ANSIBLE_COLLECTIONS_PATH=collections_path(),
               ANSIBLE_PYTHON_INTERPRETER=sys.executable, ANSIBLE_LOCALHOST_WARNING='false')
    cmd = [os.path.join(BIN, 'ansible-playbook'), path]
    for key, value in (extra_vars or {}).items():
        cmd += ['-e', '%s=%s' % (key, value)]
    start = time.monotonic()
    proc = sh(cmd, env=env, check=False)
    elapsed = time.monotonic() - start
    out = json.loads(proc.stdout[proc.stdout.index('{'):])
    result = out['plays'][0]['tasks'][-1]['hosts']['localhost']
    if proc.returncode != 0:
        raise RuntimeError('playbook failed: %s' % result.get('msg', proc.stdout[-2000:]))
    return result, elapsed


def rollout(kubeconfig, config, max_unavailable, nodes=None):
    assignment = {'config': config}
    if nodes:
        assignment['nodes'] = nodes
    else:
        assignment['label_selector'] = 'gpuops.dev/pool=bench'
    return playbook(kubeconfig, [{'name': 'rollout', 'gpuops.gpu.mig_rollout': {
        'assignments': [assignment], 'max_unavailable': max_unavailable, 'operator_namespace': 'gpu-operator',
        'poll_interval': 0.5, 'verify_timeout': 120, 'state_timeout': 300}}])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--nodes', type=int, default=200)
    parser.add_argument('--seconds', type=float, default=5.0, help='simulated MIG reconfiguration time')
    parser.add_argument('--max-unavailable', default='10%')
    parser.add_argument('--naive-nodes', type=int, default=10, help='nodes the naive recipe is timed on')
    parser.add_argument('--idempotent', default='50,500', help='node counts for the idempotent re-run')
    parser.add_argument('--out', default=os.path.join(REPO, 'bench', 'results', 'mig_rollout.md'))
    args = parser.parse_args()
    lines = ['# MIG rollout benchmark', '',
             'Machine: %d CPU cores; simulated reconfiguration %.1f s; %s' % (
                 os.cpu_count(), args.seconds, time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())), '']

    name = 'bench-rollout'
    try:
        kubeconfig, up_s = cluster(name, args.nodes, args.seconds)
        wait_labelled(kubeconfig, args.nodes)
        res, wall = rollout(kubeconfig, 'all-1g.5gb', args.max_unavailable)
        batches = len(res['batches'])
        floor = batches * args.seconds
        lines += ['## mig_rollout vs the floor', '',
                  '| nodes | max_unavailable | batches | floor (batches x %.0f s) | mig_rollout (module) | ansible-playbook wall | ratio to floor | API requests |' % args.seconds,
                  '|---|---|---|---|---|---|---|---|',
                  '| %d | %s | %d | %.1f s | %.1f s | %.1f s | %.2fx | %d |' % (
                      args.nodes, args.max_unavailable, batches, floor, res['duration_s'], wall,
                      res['duration_s'] / floor, res['api_requests']), '',
                  'Cluster up with %d nodes: %.1f s.' % (args.nodes, up_s), '']
        naive_nodes = ['a100-%d' % i for i in range(args.naive_nodes)]
        _unused, naive_wall = playbook(kubeconfig, [{'name': 'naive', 'ansible.builtin.include_tasks': os.path.join(
            REPO, 'bench', 'naive_mig_recipe.yml'), 'loop': naive_nodes, 'loop_control': {'loop_var': 'bench_node'},
            'vars': {'bench_config': 'all-disabled'}}])
        res2, wall2 = rollout(kubeconfig, 'all-1g.5gb', 1, naive_nodes)
        per_naive = naive_wall / len(naive_nodes)
        per_ours_serial = res2['duration_s'] / len(naive_nodes)
        per_ours_batched = res['duration_s'] / args.nodes
        lines += ['## Naive kubernetes.core recipe (per node)', '',
                  'The naive recipe (`bench/naive_mig_recipe.yml`) drains, labels, polls and uncordons one node at a '
                  'time; on %d nodes it would run %.0f min, so it was timed on %d nodes.' % (
                      args.nodes, per_naive * args.nodes / 60, len(naive_nodes)), '',
                  '| what | nodes | wall | per node |', '|---|---|---|---|',
                  '| naive recipe, one node at a time | %d | %.1f s | %.1f s |' % (len(naive_nodes), naive_wall, per_naive),
                  '| mig_rollout, max_unavailable 1 | %d | %.1f s | %.1f s |' % (len(naive_nodes), res2['duration_s'],
                                                                                  per_ours_serial),
                  '| mig_rollout, max_unavailable %s | %d | %.1f s | %.2f s |' % (args.max_unavailable, args.nodes,
                                                                                  res['duration_s'], per_ours_batched),
                  '', 'Speed-up at fleet scale (naive per node x %d nodes vs mig_rollout): %.1fx.' % (
                      args.nodes, per_naive * args.nodes / res['duration_s']), '']
    finally:
        down(name)

    lines += ['## Idempotent re-run (every node already at its config)', '',
              '| nodes | API requests | module time | ansible-playbook wall |', '|---|---|---|---|']
    for count in [int(c) for c in args.idempotent.split(',')]:
        name = 'bench-idem-%d' % count
        try:
            kubeconfig, _unused = cluster(name, count, 0.2)
            wait_labelled(kubeconfig, count, 600)
            rollout(kubeconfig, 'all-1g.5gb', '100%')
            res, wall = rollout(kubeconfig, 'all-1g.5gb', '100%')
            assert res['changed'] is False
            lines.append('| %d | %d | %.2f s | %.1f s |' % (count, res['api_requests'], res['duration_s'], wall))
        finally:
            down(name)
    report = '\n'.join(lines) + '\n'
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, 'w') as handle:
        handle.write(report)
    print(report)


if __name__ == '__main__':
    main()
