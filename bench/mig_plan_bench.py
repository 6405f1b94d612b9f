#!/usr/bin/env python3
"""MIG demand planner benchmark (docs/performance.md#mig-demand-planner): planning time (CPU) of
gpuops.gpu.mig_plan (plugins/module_utils/gpu/mig_demand.py) on generated pools of 100, 1000 and 5000
nodes, 3 GPU products, 5 demanded resources, whether the plan is proven optimal and, per objective
(shortfall, changed nodes, GPU pods on changed nodes), the plan's value and its proven bound (the gap).
Pure: no cluster, one process, one thread.

Run with the project's virtualenv (make venv):  ~/.cache/gpuops/venv-*/bin/python bench/mig_plan_bench.py
Prints a Markdown table with the machine's load. Nothing here is a test; numbers depend on the machine.
"""

import argparse
import os
import platform
import random
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PRODUCTS = ('NVIDIA-A100-SXM4-40GB', 'NVIDIA-A100-SXM4-80GB', 'NVIDIA-H100-80GB-HBM3')
DEMAND_PER_NODE = {           # demand per 100 nodes of the pool
    'nvidia.com/mig-1g.10gb': 900,
    'nvidia.com/mig-3g.40gb': 150,
    'nvidia.com/mig-2g.20gb': 120,
    'nvidia.com/mig-1g.5gb': 400,
    'nvidia.com/gpu': 150,
}

# (case, demand factor, policy); the last two run at 1000 nodes only
CASES = (('declared demand', 1, {'busy_nodes': 'if_room'}),
         ('generate_configs', 1, {'busy_nodes': 'if_room', 'generate_configs': True}),
         ('unmeetable (demand x 10)', 10, {'busy_nodes': 'if_room'}))


def import_planner():
    """The planner from this checkout, laid out as ansible_collections.gpuops.gpu (a symlink in the cache)."""
    root = os.path.join(os.environ.get('GPUOPS_CACHE', os.path.expanduser('~/.cache/gpuops')), 'bench-collections')
    link = os.path.join(root, 'ansible_collections', 'gpuops', 'gpu')
    os.makedirs(os.path.dirname(link), exist_ok=True)
    if os.path.islink(link) and os.readlink(link) != REPO:
        os.remove(link)
    if not os.path.islink(link):
        os.symlink(REPO, link)
    sys.path.insert(0, root)
    from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import mig_demand, mig_demand_pool
    from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.mig_configs import builtin_document
    return mig_demand, mig_demand_pool, builtin_document


def pool(size, document, capacity_of, seed):
    """``size`` nodes as gpu_nodes_info returns them: random product, 8 GPUs, a random current config
    valid for the product, a third of them running GPU pods."""
    rng = random.Random(seed)
    nodes = []
    for index in range(size):
        product = PRODUCTS[index % len(PRODUCTS)]
        configs = [c for c in sorted(document['mig-configs']) if capacity_of(c, product)]
        config = rng.choice(configs)
        requested, pods = {}, []
        if rng.random() < 0.33:
            cap = capacity_of(config, product)
            name = rng.choice(sorted(cap))
            requested, pods = {name: rng.randint(1, cap[name])}, ['team-%d/job-%d' % (index % 7, index)]
        nodes.append({'name': 'gpu-%05d' % index, 'product': product, 'count': 8, 'mig_config': config,
                      'mig_state': 'success', 'requested': requested, 'gpu_pods': pods, 'ready': True,
                      'unschedulable': False, 'sharing_strategy': 'none', 'allocatable': {}})
    return nodes


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--sizes', default='100,1000,5000')
    parser.add_argument('--repeat', type=int, default=3, help='runs per size; the table shows the median')
    args = parser.parse_args()
    mig_demand, mig_demand_pool, builtin_document = import_planner()
    document = builtin_document(list(PRODUCTS))
    catalog = mig_demand_pool.ConfigOptions(document, 'mixed', False, None)

    def capacity_of(config, product):
        return catalog.capacity(config, product, 8)

    print('machine: %s, %s, %d CPUs, load average %s, Python %s'
          % (platform.node(), platform.processor() or platform.machine(), os.cpu_count(),
             ' '.join('%.2f' % v for v in os.getloadavg()), platform.python_version()))
    print()
    print('| nodes | case | meetable | shortfall (bound) | changed (bound) | pods on changed (bound) | optimal | '
          'change-search steps | CPU time (median of %d) |' % args.repeat)
    print('|---:|---|---|---:|---:|---:|---|---:|---:|')
    for size in [int(s) for s in args.sizes.split(',')]:
        nodes = pool(size, document, capacity_of, seed=size)
        for case, factor, policy in CASES:
            if case != 'declared demand' and size != 1000:
                continue
            demand = dict((name, qty * size * factor // 100) for name, qty in DEMAND_PER_NODE.items())
            times, result = [], None
            for _run in range(args.repeat):
                start = time.process_time()
                result = mig_demand.plan_mig_demand(nodes, document, demand, 'mixed', policy)
                times.append(time.process_time() - start)
            assert result['errors'] == [], result['errors']
            bounds = result['bounds']
            print('| %d | %s | %s | %d (%d) | %d (%d) | %d (%d) | %s | %d | %.3f s |'
                  % (size, case, result['meetable'], sum(result['shortfall'].values()), bounds['shortfall'],
                     len(result['changes']), bounds['changes'], sum(len(c['pods']) for c in result['changes']),
                     bounds['pods'], result['optimal'], result['search_steps'], sorted(times)[len(times) // 2]))
    print()
    print('load average after: %s' % ' '.join('%.2f' % v for v in os.getloadavg()))


if __name__ == '__main__':
    main()
