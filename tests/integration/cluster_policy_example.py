"""The ClusterPolicy NVIDIA ships as the OLM example (the CSV's alm-examples), read from the
gpu-operator Go module the testbed pins — used by tests and `make demo` as "what an install creates"."""

import copy
import glob
import json
import os
import subprocess

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def gpu_operator_module_dir():
    """The gpu-operator Go module the testbed pins, in the module cache."""
    out = subprocess.run([os.path.join(REPO, 'tests', 'testbed', 'hack', 'asset-modules.sh')],
                         stdout=subprocess.PIPE, text=True, check=True).stdout
    return dict(line.split(' ', 1) for line in out.strip().splitlines())['gpu-operator']


def gpu_operator_csv_path():
    """The gpu-operator bundle CSV in the Go module cache (read at test time, never copied)."""
    mod = gpu_operator_module_dir()
    csvs = glob.glob(os.path.join(mod, 'bundle', 'manifests', '*.clusterserviceversion.yaml'))
    if not csvs:
        raise RuntimeError('no CSV in %s/bundle/manifests' % mod)
    return csvs[0]


def clusterpolicy_example(name='gpu-cluster-policy'):
    with open(gpu_operator_csv_path()) as handle:
        csv = yaml.safe_load(handle)
    examples = json.loads(csv['metadata']['annotations']['alm-examples'])
    policy = copy.deepcopy(next(e for e in examples if e['kind'] == 'ClusterPolicy'))
    policy['metadata'] = {'name': name}
    return policy
