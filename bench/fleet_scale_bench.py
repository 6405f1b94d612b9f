#!/usr/bin/env python3
"""Fleet scale benchmark on the virtual GPU cluster (docs/performance.md "Fleet scale"):

  1. `testbed up` of N GPU nodes (A100 x 8, already at MIG config all-1g.5gb and device-plugin profile
     ts-2 through their node-group labels, as a converged fleet is): up time, then the resident memory
     (VmRSS, and VmHWM: its peak) of kube-apiserver, etcd, kwok and the simulator (gpusim) once the
     simulated agents have labelled every node;
  2. idempotent re-runs (every node already at its target) of gpuops.gpu.mig_rollout and
     gpuops.gpu.sharing_rollout, and one gpuops.gpu.gpu_nodes_info: module time, API requests and the
     module process's peak memory.

The modules run as Ansible runs them on localhost, one Python process each (the module file with its
arguments in a JSON file, the collection and kubernetes.core on the import path), without
ansible-playbook around it, so that the process's peak resident memory can be read exactly: ru_maxrss of
that one process, read by a small launcher process that starts it (see LAUNCHER). "module time" is the module's own `duration_s` where it reports one
(the rollout modules) and the process's wall time (interpreter start and imports included) for
gpu_nodes_info. --profile DIR writes a cProfile of each module process there.

Run with the project's virtualenv (make venv), one cluster at a time (5000 nodes need about 6 GiB):
  ~/.cache/gpuops/venv-*/bin/python bench/fleet_scale_bench.py --nodes 1000,5000
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

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH)
import mig_rollout_bench as mrb  # noqa: E402  (the testbed and collection helpers of the MIG bench)

REPO = mrb.REPO
sys.path.insert(0, os.path.join(REPO, 'tests', 'integration'))
sys.path.insert(0, mrb.collections_path())
from cluster_policy_example import clusterpolicy_example  # noqa: E402  (NVIDIA's OLM example, read from the module)
from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import CLUSTER_POLICY  # noqa: E402
from ansible_collections.gpuops.gpu.plugins.module_utils.rollout.sharing_kind import ANN_HASH, content_hash  # noqa: E402

NAMESPACE = 'gpu-operator'
CONFIG_MAP = 'gpuops-device-plugin-config'
PROFILE = 'ts-2'
PROFILE_TEXT = yaml.safe_dump({'version': 'v1', 'sharing': {'timeSlicing': {'resources': [
    {'name': 'nvidia.com/gpu', 'replicas': 2}]}}})
MIG_CONFIG = 'all-1g.5gb'
POOL = 'gpuops.dev/pool=bench'
PROCESSES = ('kube-apiserver', 'etcd', 'kwok', 'gpusim')
MODULES = os.path.join(REPO, 'plugins', 'modules')


def fleet_config(nodes):
    """The testbed config: one group of N A100 nodes that start at the MIG config and sharing profile the
    rollouts below assign (the simulated MIG manager and device plugin apply them at start)."""
    return {
        'cluster': {'gpu_operator': False, 'gpusim': True, 'operator_namespace': NAMESPACE},
        'node_groups': [{'name': 'a100', 'count': nodes, 'gpu_product': 'NVIDIA-A100-SXM4-40GB', 'gpus_per_node': 8,
                         'labels': {'gpuops.dev/pool': 'bench', 'nvidia.com/mig.config': MIG_CONFIG,
                                    'nvidia.com/device-plugin.config': PROFILE},
                         'annotations': {ANN_HASH: content_hash(PROFILE_TEXT)}}],
        'simulation': {'mig_reconfigure_seconds': 0.2, 'device_plugin': 'always',
                       'defaults': {'mig_strategy': 'single', 'mig_parted_config': '',
                                    'device_plugin_config': {'name': CONFIG_MAP, 'default': ''}}},
    }


def up(name, nodes):
    path = os.path.join(tempfile.mkdtemp(), 'fleet.yaml')
    with open(path, 'w') as handle:
        yaml.safe_dump(fleet_config(nodes), handle)
    start = time.monotonic()
    out = mrb.sh([sys.executable, mrb.TESTBED, '--name', name, 'up', '--config', path]).stdout
    return out.strip().splitlines()[-1], time.monotonic() - start


def prepare(kubeconfig):
    """The device-plugin ConfigMap with the profile, and a ClusterPolicy naming it (mig.strategy single)."""
    from kubernetes import client, config
    api = config.new_client_from_config(config_file=kubeconfig)
    client.CoreV1Api(api).create_namespaced_config_map(NAMESPACE, {
        'metadata': {'name': CONFIG_MAP}, 'data': {PROFILE: PROFILE_TEXT}})
    policy = clusterpolicy_example()
    policy['spec'].setdefault('mig', {})['strategy'] = 'single'
    policy['spec'].setdefault('devicePlugin', {})['config'] = {'name': CONFIG_MAP, 'default': ''}
    client.CustomObjectsApi(api).create_cluster_custom_object(*CLUSTER_POLICY, policy)


def converged(kubeconfig, nodes, timeout):
    """Seconds until every node reports the MIG config applied and the shared MIG devices."""
    from kubernetes import client, config
    core = client.CoreV1Api(config.new_client_from_config(config_file=kubeconfig))
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        raw = core.list_node(label_selector=POOL, _preload_content=False)
        items = json.loads(raw.data)['items']
        done = [n for n in items if n['metadata']['labels'].get('nvidia.com/mig.config.state') == 'success'
                and n['metadata']['labels'].get('nvidia.com/gpu.replicas') == '2'
                and (n['status'].get('allocatable') or {}).get('nvidia.com/gpu') == '112']
        if len(done) == nodes:
            return time.monotonic() - start
        time.sleep(2)
    raise RuntimeError('%d of %d nodes converged after %ds' % (len(done), nodes, timeout))


def memory(name):
    """{process: (VmRSS MiB, VmHWM MiB)} of the cluster's processes (testbed state.json)."""
    state = os.path.join(os.environ.get('GPUOPS_CACHE', os.path.expanduser('~/.cache/gpuops')), 'testbed', 'run',
                         name, 'state.json')
    with open(state) as handle:
        procs = json.load(handle).get('procs') or {}
    out = {}
    for comp in PROCESSES:
        fields = {}
        with open('/proc/%d/status' % procs[comp]['pid']) as handle:
            for line in handle:
                key, _sep, value = line.partition(':')
                fields[key] = value.split()[0] if value.split() else ''
        out[comp] = (int(fields['VmRSS']) / 1024.0, int(fields['VmHWM']) / 1024.0)
    return out


# A small launcher runs the module and writes its child's ru_maxrss to a file: on Linux a child's peak RSS
# starts from its parent's (the kernel carries the high-water mark over fork and exec), and this script
# holds a 5000-node list, so the module process is started from a fresh, small interpreter instead.
LAUNCHER = ('import resource, subprocess, sys; subprocess.call(sys.argv[2:]); '
            'open(sys.argv[1], "w").write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))')


def run_module(module, args, kubeconfig, profile_dir=None):
    """(result, wall seconds, peak RSS MiB) of one module process (ru_maxrss, KiB on Linux)."""
    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, 'args.json')
    with open(path, 'w') as handle:
        json.dump({'ANSIBLE_MODULE_ARGS': dict(args, kubeconfig=kubeconfig)}, handle)
    cmd = [sys.executable, '-c', LAUNCHER, os.path.join(tmp, 'maxrss'), sys.executable]
    if profile_dir:
        cmd += ['-m', 'cProfile', '-o', os.path.join(profile_dir, '%s.prof' % module)]
    cmd += [os.path.join(MODULES, module + '.py'), path]
    env = dict(os.environ, PYTHONPATH=mrb.collections_path())
    start = time.monotonic()
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=False)
    wall = time.monotonic() - start
    with open(os.path.join(tmp, 'maxrss')) as handle:
        peak = int(handle.read()) / 1024.0
    stdout = proc.stdout
    result = json.loads(stdout[stdout.index('{'):]) if '{' in stdout else {'failed': True, 'msg': proc.stderr[-2000:]}
    if result.get('failed'):
        raise RuntimeError('%s failed: %s' % (module, result.get('msg')))
    return result, wall, peak


def module_args():
    common = {'operator_namespace': NAMESPACE, 'max_unavailable': '100%', 'poll_interval': 0.5}
    return [
        ('mig_rollout', dict(common, assignments=[{'label_selector': POOL, 'config': MIG_CONFIG}])),
        ('sharing_rollout', dict(common, assignments=[{'label_selector': POOL, 'profile': PROFILE}])),
        ('gpu_nodes_info', {'label_selector': POOL}),
    ]


def median(values):
    return sorted(values)[len(values) // 2]


def measure(name, nodes, profile_dir, repeat):
    """One cluster of ``nodes``: its rows of the report."""
    load_before = os.getloadavg()
    kubeconfig, up_s = up(name, nodes)
    prepare(kubeconfig)
    settle_s = converged(kubeconfig, nodes, 1200)
    mem = memory(name)
    runs = []
    for module, args in module_args():
        tries = []
        for _i in range(repeat):
            result, wall, peak = run_module(module, args, kubeconfig, profile_dir)
            if result.get('changed'):
                raise RuntimeError('%s changed something on a converged fleet: %s' % (module, result.get('diff')))
            tries.append((result.get('duration_s', wall), result, wall, peak))
        times = [t[0] for t in tries]
        chosen = sorted(tries, key=lambda t: t[0])[len(tries) // 2]  # the median run
        runs.append((module, chosen[1], chosen[2], max(t[3] for t in tries), (min(times), max(times))))
    return {'nodes': nodes, 'up_s': up_s, 'settle_s': settle_s, 'memory': mem, 'runs': runs,
            'load_before': load_before, 'load_after': os.getloadavg()}


def report_lines(rows, started, repeat):
    lines = ['# Fleet scale benchmark', '',
             'Machine: %d CPU cores, %.0f GiB memory; %s. Load average (1, 5, 15 min) before and after each '
             'cluster below: other work on the machine shares the cores with the cluster and the modules.' % (
                 os.cpu_count(), os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2.0 ** 30, started), '',
             '## The virtual cluster', '',
             '| nodes | `up` | agents converged | kube-apiserver RSS (peak) | etcd | kwok | gpusim | load before | load after |',
             '|---:|---:|---:|---:|---:|---:|---:|---|---|']
    for row in rows:
        mem = row['memory']
        lines.append('| %d | %.0f s | %.0f s | %s | %s | %s | %s | %s | %s |' % (
            row['nodes'], row['up_s'], row['settle_s'], *['%.0f MiB (%.0f)' % mem[p] for p in PROCESSES],
            ' '.join('%.2f' % x for x in row['load_before']), ' '.join('%.2f' % x for x in row['load_after'])))
    lines += ['', '"agents converged": after `up`, until the simulated MIG manager, device plugin and GPU feature '
              'discovery report the MIG config and the shared devices on every node. RSS is VmRSS when the fleet '
              'has converged, in brackets VmHWM (the peak so far).', '',
              '## Modules on the converged fleet (every node already at its target)', '',
              '| nodes | module | changed | module time (median) | range | process wall | API requests | '
             'peak RSS of the module process |',
              '|---:|---|---|---:|---:|---:|---:|---:|']
    for row in rows:
        for module, result, wall, peak, (low, high) in row['runs']:
            lines.append('| %d | %s | %s | %s | %.2f–%.2f s | %.2f s | %d | %.0f MiB |' % (
                row['nodes'], module, result.get('changed'),
                '%.2f s' % result['duration_s'] if 'duration_s' in result else '(process wall)', low, high, wall,
                result.get('api_requests', 0), peak))
    lines += ['', 'Each module ran %d times; the row is the median run, "range" the fastest and slowest. "module '
              'time": the rollout modules\' own `duration_s` (from the first API request to the result, imports '
              'excluded); "process wall": the whole module process, interpreter start, imports and the JSON result '
              'included; peak RSS: `ru_maxrss` of that process (read by a small launcher that starts it), the '
              'largest of the runs.' % repeat]
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--nodes', default='1000,5000', help='node counts, one cluster after the other')
    parser.add_argument('--repeat', type=int, default=3, help='runs of each module (the median is reported)')
    parser.add_argument('--profile', metavar='DIR', help='write a cProfile of each module process to DIR/<nodes>/')
    parser.add_argument('--out', default=os.path.join(REPO, 'bench', 'results', 'fleet_scale.md'))
    args = parser.parse_args()
    started = time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())
    rows = []
    for count in [int(c) for c in args.nodes.split(',')]:
        name = 'bench-fleet-%d' % count
        profile_dir = os.path.join(args.profile, str(count)) if args.profile else None
        if profile_dir:
            os.makedirs(profile_dir, exist_ok=True)
        try:
            rows.append(measure(name, count, profile_dir, args.repeat))
        finally:
            mrb.down(name)
    mrb.write_report(report_lines(rows, started, args.repeat), args.out)


if __name__ == '__main__':
    main()
