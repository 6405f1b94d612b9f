#!/usr/bin/env python3
"""DRA cutover benchmark on the virtual GPU cluster (docs/performance.md, "DRA cutover"), beside the MIG rollout
benchmark (bench/mig_rollout_bench.py, whose cluster and playbook helpers it uses):

  one group of --nodes GPU nodes (no GPU operator) and the stand-in of NVIDIA's DRA driver chart
  (tests/integration/dra_helpers.py) installed with helm, its kubelet plugin only on the nodes labelled
  gpuops.gpu/dra-kubelet-plugin=true; the simulated plugin publishes a node's ResourceSlice S seconds after its
  pod runs (simulation.dra_plugin_start_seconds, the stack-switch time). gpuops.gpu.dra_cutover moves the group
  to dra at max_unavailable 10% through ansible-playbook: its module time against the floor (batches x S), API
  requests per node, the node timelines (bench/node_timelines.py) and the machine's load; then back to the
  device plugin (no simulated delay that way: the slice goes with the pod).

Run with the project's virtualenv (make venv):  ~/.cache/gpuops/venv-*/bin/python bench/dra_cutover_bench.py
Prints a Markdown report (and writes it to --out). Nothing here is a test; numbers depend on the machine.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

from mig_rollout_bench import REPO, cluster, down, load, playbook, wait_labelled, write_report
from node_timelines import Machine, batch_lines, step_stats

sys.path.insert(0, os.path.join(REPO, 'tests', 'integration'))
from dra_helpers import NAMESPACE, helm_install, write_chart  # noqa: E402  (the integration tests' stand-in chart)

DRA_LABEL = 'gpuops.gpu/dra-kubelet-plugin'
STEPS = (('pre', 'started -> labelled', 'the cutover (cordon, drain, labels)'),
         ('mig', 'labelled -> slice listed, less S', 'DaemonSet controller, pod start, simulated DRA plugin'),
         ('dp', 'slice listed -> allocatable gone', 'simulated device plugin'),
         ('post', 'verified -> uncordoned', 'the cutover'))


def helm_binary():
    """The helm CLI the integration tests use (built once from its Go module and cached)."""
    out = subprocess.run([os.path.join(REPO, 'tests', 'testbed', 'hack', 'install-helm.sh')], check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    return out.strip().splitlines()[-1]


def install_driver(kubeconfig):
    import pathlib
    chart = write_chart(pathlib.Path(tempfile.mkdtemp()))
    helm_install(helm_binary(), kubeconfig, chart, {'kubeletPlugin': {'nodeSelector': {DRA_LABEL: 'true'}}})


def cutover(kubeconfig, stack, max_unavailable):
    return playbook(kubeconfig, [{'name': 'cutover', 'gpuops.gpu.dra_cutover': {
        'assignments': [{'stack': stack, 'label_selector': 'gpuops.dev/pool=bench'}],
        'max_unavailable': max_unavailable, 'lock_namespace': NAMESPACE, 'poll_interval': 0.5,
        'verify_timeout': 120, 'state_timeout': 300}}])


def timeline_lines(result, seconds):
    """The per-step table (median, p95, max) and the per-batch split of the critical node (node_timelines)."""
    stats = step_stats(result, seconds)
    lines = ['| step | whose time | median | p95 | max |', '|---|---|---|---|---|']
    for key, words, whose in STEPS:
        if key in stats:
            lines.append('| %s | %s | %.2f s | %.2f s | %.2f s |' % ((words, whose) + stats[key]))
    lines += [''] + batch_lines(result, seconds, 'cutover own', 'agents beyond S')
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--nodes', type=int, default=200)
    parser.add_argument('--seconds', type=float, default=5.0, help='simulated stack-switch time S')
    parser.add_argument('--max-unavailable', default='10%')
    parser.add_argument('--name', default='bench-dra-cutover', help='name of the virtual cluster')
    parser.add_argument('--out', default=os.path.join(REPO, 'bench', 'results', 'dra_cutover.md'))
    args = parser.parse_args()
    lines = ['# DRA cutover benchmark', '',
             'Machine: %d CPU cores, load average %.2f at the start; %s' % (
                 os.cpu_count(), load(), time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())), '']
    try:
        kubeconfig, up_s = cluster(args.name, args.nodes, 1.0, {'dra_plugin_start_seconds': args.seconds})
        wait_labelled(kubeconfig, args.nodes, 900)
        install_driver(kubeconfig)
        runs = {}
        for stack in ('dra', 'device-plugin'):
            before = load()
            machine = Machine(args.name, kubeconfig)
            machine.start()
            res, wall = cutover(kubeconfig, stack, args.max_unavailable)
            machine.stop(wall)
            runs[stack] = {'res': res, 'wall': wall, 'load': (before, load()), 'machine': machine}
    finally:
        down(args.name)
    to_dra = runs['dra']
    res = to_dra['res']
    batches = len(res['batches'])
    floor = batches * args.seconds
    lines += ['## dra_cutover against the floor', '',
              '%d nodes (one group), max_unavailable %s, simulated stack-switch time S = %.1f s '
              '(simulation.dra_plugin_start_seconds); cluster up in %.1f s.' % (
                  args.nodes, args.max_unavailable, args.seconds, up_s), '',
              '| to | batches | floor (batches x S) | dra_cutover (module) | ansible-playbook wall | ratio to floor '
              '| API requests | per node | load before / after |', '|---|---|---|---|---|---|---|---|---|']
    for stack in ('dra', 'device-plugin'):
        r = runs[stack]
        b = len(r['res']['batches'])
        lines.append('| %s | %d | %s | %.1f s | %.1f s | %s | %d | %.1f | %.1f / %.1f |' % (
            stack, b, '%.1f s' % floor if stack == 'dra' else '~0 s (no delay)', r['res']['duration_s'], r['wall'],
            '**%.2fx**' % (r['res']['duration_s'] / floor) if stack == 'dra' else '-', r['res']['api_requests'],
            r['res']['api_requests'] / float(args.nodes), r['load'][0], r['load'][1]))
    lines += ['', '### Node timelines of the cutover to dra (%d per batch)' % -(-args.nodes // batches), '',
              'From the timelines of the module\'s result (bench/node_timelines.py): "reported" is when the node\'s '
              'ResourceSlice listed its devices, "verified" when no nvidia.com/gpu was allocatable any more.', '']
    lines += timeline_lines(res, args.seconds) + [''] + to_dra['machine'].lines() + ['']
    lines += ['Load average at the end: %.2f.' % load()]
    write_report(lines, args.out)


if __name__ == '__main__':
    main()
