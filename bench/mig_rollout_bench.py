#!/usr/bin/env python3
"""MIG rollout benchmark on the virtual GPU cluster, side by side in one run (docs/performance.md):

  1. gpuops.gpu.mig_rollout against the floor (batches x S) at each node count of --curve, max_unavailable
     10%, simulated reconfiguration S seconds; API requests per node; an SVG chart of the curve; the node
     timelines split into the rollout's own time and the simulated agents' time, with the machine's load, the
     CPU seconds of each process of the virtual cluster and the API server's time per request
     (bench/node_timelines.py);
  2. batch mode against the rolling window (window: rolling) on a fleet whose nodes take 3-7 s each;
  3. the naive kubernetes.core recipe (bench/naive_mig_recipe.yml: k8s_drain + k8s label + k8s_info until
     + uncordon, one node after the other) on a few nodes, compared per node;
  4. idempotent re-run: API requests and time (bench/fleet_scale_bench.py goes to 5000 nodes).

Run with the project's virtualenv (make venv):  ~/.cache/gpuops/venv-*/bin/python bench/mig_rollout_bench.py
Prints a Markdown report (and writes it to --out) with the machine's load average around each run.
Nothing here is a test; numbers depend on the machine.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import yaml

from node_timelines import Machine, report_lines

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTBED = os.path.join(REPO, 'tests', 'testbed', 'testbed')
BIN = os.path.dirname(sys.executable)
SIM_DELAY = 'gpusim.gpuops.dev/reconfigure-seconds'  # the simulator's per-node reconfiguration time


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


def cluster(name, nodes, seconds, simulation=None):
    """Bring up the virtual cluster ``name``: ``nodes`` A100 nodes (one group), MIG reconfiguration ``seconds``,
    more ``simulation`` settings (docs/testbed.md); returns (kubeconfig, seconds it took)."""
    cfg = {'cluster': {'gpu_operator': False, 'gpusim': True},
           'node_groups': [{'name': 'a100', 'count': nodes, 'gpu_product': 'NVIDIA-A100-SXM4-40GB',
                            'gpus_per_node': 8, 'labels': {'gpuops.dev/pool': 'bench'}}],
           'simulation': dict({'mig_reconfigure_seconds': seconds}, **(simulation or {}))}
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


def rollout(kubeconfig, config, max_unavailable, nodes=None, window='batch'):
    assignment = {'config': config}
    if nodes:
        assignment['nodes'] = nodes
    else:
        assignment['label_selector'] = 'gpuops.dev/pool=bench'
    return playbook(kubeconfig, [{'name': 'rollout', 'gpuops.gpu.mig_rollout': {
        'assignments': [assignment], 'max_unavailable': max_unavailable, 'operator_namespace': 'gpu-operator',
        'window': window, 'poll_interval': 0.5, 'verify_timeout': 120, 'state_timeout': 300}}])


def load():
    """The 1-minute load average, as the report states it."""
    return os.getloadavg()[0]


def spread_delays(kubeconfig, nodes, low, high):
    """Give node i its own simulated reconfiguration time between low and high seconds (the simulator's
    per-node annotation), the same in every run: a fleet whose nodes do not all take as long."""
    from kubernetes import client, config
    core = client.CoreV1Api(config.new_client_from_config(config_file=kubeconfig))
    delays = {}
    for i in range(nodes):
        name = 'a100-%d' % i
        delays[name] = round(low + (high - low) * ((i * 37) % nodes) / max(1, nodes - 1), 2)
        core.patch_node(name, {'metadata': {'annotations': {SIM_DELAY: str(delays[name])}}})
    return delays


def chart(points, path):
    """An SVG line chart of rollout wall time and the floor against nodes (no plotting library needed)."""
    width, height, left, bottom, top, right = 640, 360, 60, 40, 20, 20
    xs = [p['nodes'] for p in points]
    ymax = max(max(p['duration'], p['floor']) for p in points) * 1.15
    xmax = max(xs) * 1.05

    def x(v):
        return left + (width - left - right) * v / xmax

    def y(v):
        return height - bottom - (height - bottom - top) * v / ymax

    def line(key, colour, label, offset):
        pts = ' '.join('%.1f,%.1f' % (x(p['nodes']), y(p[key])) for p in points)
        dots = ''.join('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>' % (x(p['nodes']), y(p[key]), colour)
                       for p in points)
        return ('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>%s'
                '<text x="%d" y="%d" fill="%s" font-size="12">%s</text>' % (colour, pts, dots, left + 10,
                                                                          top + 14 + offset, colour, label))
    ticks = ''.join('<text x="%.1f" y="%d" font-size="11" text-anchor="middle">%d</text>' % (x(v), height - 22, v)
                    for v in xs)
    yticks = ''.join('<text x="%d" y="%.1f" font-size="11" text-anchor="end">%d s</text>' % (left - 6, y(v) + 4, v)
                     for v in range(0, int(ymax) + 1, max(10, int(ymax / 6) // 10 * 10)))
    svg = ('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif">'
           '<rect width="100%%" height="100%%" fill="white"/>'
           '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/><line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>'
           '%s%s%s%s<text x="%d" y="%d" font-size="12" text-anchor="middle">GPU nodes (max_unavailable 10%%, %.0f s per '
           'node)</text></svg>\n') % (
        width, height, left, height - bottom, width - right, height - bottom, left, top, left, height - bottom,
        ticks, yticks, line('duration', '#1f77b4', 'gpuops.gpu.mig_rollout (module time)', 0),
        line('floor', '#999999', 'floor: batches x reconfiguration time', 16), (width + left) // 2, height - 4,
        points[0]['seconds'])
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as handle:
        handle.write(svg)


def curve(counts, seconds, max_unavailable):
    """mig_rollout against the floor at each node count (batch mode), one cluster at a time."""
    points = []
    for count in counts:
        name = 'bench-curve-%d' % count
        try:
            kubeconfig, up_s = cluster(name, count, seconds)
            wait_labelled(kubeconfig, count, 900)
            before = load()
            machine = Machine(name, kubeconfig)
            machine.start()
            res, wall = rollout(kubeconfig, 'all-1g.5gb', max_unavailable)
            machine.stop(wall)
            floor = len(res['batches']) * seconds
            points.append({'nodes': count, 'batches': len(res['batches']), 'floor': floor, 'seconds': seconds,
                           'duration': res['duration_s'], 'wall': wall, 'requests': res['api_requests'],
                           'up': up_s, 'load': (before, load()),
                           'slowest': max(s['duration_s'] for s in res['nodes']),
                           'timelines': report_lines(res, seconds, machine)})
        finally:
            down(name)
    return points


def windows(count, low, high, max_unavailable):
    """Batch mode against the rolling window on one fleet whose nodes take low..high seconds each."""
    name = 'bench-window'
    out = {}
    try:
        kubeconfig, _unused = cluster(name, count, (low + high) / 2.0)
        wait_labelled(kubeconfig, count, 900)
        delays = spread_delays(kubeconfig, count, low, high)
        for window, config in (('batch', 'all-1g.5gb'), ('rolling', 'all-2g.10gb')):
            before = load()
            res, _wall = rollout(kubeconfig, config, max_unavailable, window=window)
            out[window] = {'duration': res['duration_s'], 'requests': res['api_requests'], 'load': (before, load()),
                           'batches': len(res['batches']), 'window': res.get('window')}
        out['ideal'] = sum(delays.values()) / out['rolling']['window']
    finally:
        down(name)
    return out


def naive(kubeconfig, count):
    """The naive recipe and mig_rollout one node at a time, on the same ``count`` nodes: each makes a real
    change (all-1g.5gb, then all-2g.10gb), so each waits for the simulated MIG manager."""
    naive_nodes = ['a100-%d' % i for i in range(count)]
    _unused, naive_wall = playbook(kubeconfig, [{'name': 'naive', 'ansible.builtin.include_tasks': os.path.join(
        REPO, 'bench', 'naive_mig_recipe.yml'), 'loop': naive_nodes, 'loop_control': {'loop_var': 'bench_node'},
        'vars': {'bench_config': 'all-1g.5gb'}}])
    res, _wall = rollout(kubeconfig, 'all-2g.10gb', 1, naive_nodes)
    return naive_wall, res['duration_s']


def curve_lines(points, max_unavailable):
    lines = ['## mig_rollout against the floor (batch mode)', '',
             '| nodes | batches | floor | mig_rollout (module) | ansible-playbook wall | ratio to floor | API requests '
             '| per node | slowest node | cluster up | load before / after |',
             '|---|---|---|---|---|---|---|---|---|---|---|']
    for p in points:
        lines.append('| %d | %d | %.1f s | %.1f s | %.1f s | **%.2fx** | %d | %.1f | %.1f s | %.1f s | %.1f / %.1f |' % (
            p['nodes'], p['batches'], p['floor'], p['duration'], p['wall'], p['duration'] / p['floor'], p['requests'],
            p['requests'] / float(p['nodes']), p['slowest'], p['up'], p['load'][0], p['load'][1]))
    lines += ['', 'max_unavailable %s, simulated reconfiguration %.1f s per node.' % (
        max_unavailable, points[0]['seconds']), '']
    for p in points:
        lines += ['### Node timelines at %d nodes (%d per batch)' % (p['nodes'], -(-p['nodes'] // p['batches'])), '',
                  'The rollout\'s own time (its writes and reads before the label and after success) and the '
                  'simulated agents\' time, from the timelines of the module\'s result (bench/node_timelines.py).',
                  ''] + p['timelines']
    return lines


def write_report(lines, path):
    """Write the Markdown report (and print it)."""
    report = '\n'.join(lines) + '\n'
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as handle:
        handle.write(report)
    print(report)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--curve', default='200,1000', help='node counts for mig_rollout against the floor')
    parser.add_argument('--seconds', type=float, default=5.0, help='simulated MIG reconfiguration time')
    parser.add_argument('--max-unavailable', default='10%')
    parser.add_argument('--window-nodes', type=int, default=200, help='nodes of the batch/rolling comparison (0: skip)')
    parser.add_argument('--spread', default='3,7', help='per-node reconfiguration seconds of that comparison')
    parser.add_argument('--naive-nodes', type=int, default=6, help='nodes the naive recipe is timed on (0: skip)')
    parser.add_argument('--idempotent', default='50,500', help='node counts for the idempotent re-run (empty: skip)')
    parser.add_argument('--out', default=os.path.join(REPO, 'bench', 'results', 'mig_rollout.md'))
    parser.add_argument('--chart', default=os.path.join(REPO, 'docs', 'images', 'rollout-curve.svg'))
    args = parser.parse_args()
    lines = ['# MIG rollout benchmark', '',
             'Machine: %d CPU cores, load average %.2f at the start; %s' % (
                 os.cpu_count(), load(), time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())), '']
    points = curve([int(c) for c in args.curve.split(',') if c], args.seconds, args.max_unavailable)
    if points:
        lines += curve_lines(points, args.max_unavailable)
        if len(points) > 1:
            chart(points, args.chart)
            lines += ['Chart: `%s`.' % os.path.relpath(args.chart, REPO), '']
    if args.window_nodes:
        low, high = [float(v) for v in args.spread.split(',')]
        res = windows(args.window_nodes, low, high, args.max_unavailable)
        lines += ['## Rolling window against batch mode', '',
                  '%d nodes, max_unavailable %s, each node with its own reconfiguration time between %.0f and %.0f s '
                  '(spread evenly over the fleet, the same in both runs).' % (args.window_nodes, args.max_unavailable,
                                                                            low, high), '',
                  '| window | mig_rollout (module) | ratio to batch | API requests | load before / after |',
                  '|---|---|---|---|---|']
        for window in ('batch', 'rolling'):
            r = res[window]
            lines.append('| %s | %.1f s | %.2fx | %d | %.1f / %.1f |' % (
                window, r['duration'], r['duration'] / res['batch']['duration'], r['requests'], r['load'][0],
                r['load'][1]))
        lines += ['', 'Ideal rolling time (total reconfiguration time / window): %.1f s.' % res['ideal'], '']
    if args.naive_nodes:
        name = 'bench-naive'
        try:
            kubeconfig, _unused = cluster(name, args.naive_nodes, args.seconds)
            wait_labelled(kubeconfig, args.naive_nodes)
            naive_wall, serial = naive(kubeconfig, args.naive_nodes)
        finally:
            down(name)
        per_naive = naive_wall / args.naive_nodes
        lines += ['## Naive kubernetes.core recipe (per node)', '',
                  'The naive recipe (`bench/naive_mig_recipe.yml`) drains, labels, polls and uncordons one node at a '
                  'time; it was timed on %d nodes.' % args.naive_nodes, '',
                  '| what | nodes | wall | per node |', '|---|---|---|---|',
                  '| naive recipe, one node at a time | %d | %.1f s | %.1f s |' % (args.naive_nodes, naive_wall,
                                                                                 per_naive),
                  '| mig_rollout, max_unavailable 1 | %d | %.1f s | %.1f s |' % (args.naive_nodes, serial,
                                                                                  serial / args.naive_nodes)]
        for p in points:
            lines.append('| mig_rollout, max_unavailable %s | %d | %.1f s | %.2f s |' % (
                args.max_unavailable, p['nodes'], p['duration'], p['duration'] / p['nodes']))
        lines += [''] + ['Speed-up at %d nodes (naive per node x nodes vs mig_rollout): %.1fx.' % (
            p['nodes'], per_naive * p['nodes'] / p['duration']) for p in points] + ['']
    counts = [int(c) for c in args.idempotent.split(',') if c]
    if counts:
        lines += ['## Idempotent re-run (every node already at its config)', '',
                  '| nodes | API requests | module time | ansible-playbook wall |', '|---|---|---|---|']
    for count in counts:
        name = 'bench-idem-%d' % count
        try:
            kubeconfig, _unused = cluster(name, count, 0.2)
            wait_labelled(kubeconfig, count, 900)
            rollout(kubeconfig, 'all-1g.5gb', '100%')
            res, wall = rollout(kubeconfig, 'all-1g.5gb', '100%')
            assert res['changed'] is False
            lines.append('| %d | %d | %.2f s | %.1f s |' % (count, res['api_requests'], res['duration_s'], wall))
        finally:
            down(name)
    lines += ['Load average at the end: %.2f.' % load()]
    write_report(lines, args.out)


if __name__ == '__main__':
    main()
