"""The version matrix on the virtual GPU cluster: with the oldest versions the collection claims (ansible-core and
the kubernetes client of tests/compat/oldest.txt) and with the newest (newest.txt), a short day-2 run: the MIG role
in check mode, then for real, the sharing role, the fleet report and the gpu_nodes inventory plugin. The unit tests
run with the same virtualenvs in the runner's compat stage. kubernetes.core and ansible.posix are the main
virtualenv's (tests/compat/venvs.py)."""

import json
import os
import subprocess
import sys

import pytest
import yaml

from ansible_run import facts_diff, include, node_facts, run_play
from policy_helpers import ensure_cluster_policy

HERE = os.path.dirname(os.path.abspath(__file__))
COLLECTION = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(COLLECTION, 'tests', 'compat'))
import venvs  # noqa: E402  pylint: disable=wrong-import-position

NS = 'gpu-operator'
VERSIONS = {'oldest': 'ansible-core 2.16.19, kubernetes 29.0.0', 'newest': 'ansible-core 2.21.5, kubernetes 37.0.2'}
# each run on its own nodes: (MIG node, config, sharing node)
NODES = {'oldest': ('a100-0', 'all-1g.5gb', 't4-0'), 'newest': ('h100-0', 'all-1g.10gb', 'l40s-0')}
TS2 = {'sharing': {'timeSlicing': {'resources': [{'name': 'nvidia.com/gpu', 'replicas': 2}]}}}


@pytest.fixture(scope='module')
def collections(tmp_path_factory, custom):
    ensure_cluster_policy(custom)
    return venvs.collections_root(str(tmp_path_factory.mktemp('compat')), COLLECTION)


@pytest.fixture(scope='module', params=venvs.NAMES)
def matrix(request, collections):
    """(name, bin directory, environment) of one matrix virtualenv."""
    vbin = venvs.ensure(request.param)
    return request.param, vbin, {'ANSIBLE_COLLECTIONS_PATH': collections, 'PATH': vbin + os.pathsep + os.environ['PATH']}


def play(testbed, matrix, tasks, check=False):
    _name, vbin, env = matrix
    rc, results, raw = run_play(testbed.kubeconfig, tasks, check=check, extra_env=env, bin_dir=vbin)
    assert rc == 0, raw[-4000:]
    return results


def test_the_versions_are_the_claimed_ones(matrix):
    name, vbin, _env = matrix
    assert venvs.versions(vbin) == VERSIONS[name]


def test_mig_check_then_apply_then_sharing(testbed, core, matrix):
    mig_node, config, share_node = NODES[matrix[0]]
    mig = {'mig_operator_namespace': NS, 'mig_strategy': 'mixed', 'mig_poll_interval': 0.3, 'mig_state_timeout': 90,
           'mig_verify_timeout': 90, 'mig_assignments': [{'nodes': [mig_node], 'config': config}]}
    before = node_facts(core)
    planned = play(testbed, matrix, [include('mig', mig)], check=True)
    assert [n['node'] for b in planned['Roll the MIG configs out to the node groups']['plan'] for n in b['nodes']] == [
        mig_node]
    assert facts_diff(before, node_facts(core)) == []
    play(testbed, matrix, [include('mig', mig)])
    labels = core.read_node(mig_node).metadata.labels
    assert (labels['nvidia.com/mig.config'], labels['nvidia.com/mig.config.state']) == (config, 'success')
    sharing = {'sharing_operator_namespace': NS, 'sharing_poll_interval': 0.3, 'sharing_state_timeout': 90,
               'sharing_verify_timeout': 90, 'sharing_profiles': {'ts-2': TS2},
               'sharing_assignments': [{'nodes': [share_node], 'profile': 'ts-2'}]}
    play(testbed, matrix, [include('sharing', sharing)])
    node = core.read_node(share_node)
    assert node.metadata.labels['nvidia.com/device-plugin.config'] == 'ts-2'
    assert node.status.allocatable['nvidia.com/gpu'] == str(2 * int(node.metadata.labels['nvidia.com/gpu.count']))


def test_report_and_inventory(testbed, matrix, tmp_path):
    name, vbin, env = matrix
    mig_node, _config, share_node = NODES[name]
    run_env = dict(os.environ, K8S_AUTH_KUBECONFIG=testbed.kubeconfig, ANSIBLE_NOCOLOR='1',
                   ANSIBLE_PYTHON_INTERPRETER=os.path.join(vbin, 'python'), **env)
    report = subprocess.run([os.path.join(vbin, 'ansible-playbook'), os.path.join(COLLECTION, 'playbooks', 'report.yml'),
                             '-e', 'gpuops_report_dir=%s' % tmp_path], env=run_env, capture_output=True, text=True,
                            timeout=600, check=False)
    assert report.returncode == 0, (report.stdout + report.stderr)[-4000:]
    fleet = json.loads((tmp_path / 'fleet.json').read_text())
    assert {mig_node, share_node} <= set(n['name'] for n in fleet['nodes'])
    source = tmp_path / 'fleet.gpu_nodes.yml'
    source.write_text(yaml.safe_dump({'plugin': 'gpuops.gpu.gpu_nodes', 'kubeconfig': testbed.kubeconfig}))
    listed = subprocess.run([os.path.join(vbin, 'ansible-inventory'), '-i', str(source), '--list'], env=run_env,
                            capture_output=True, text=True, timeout=300, check=False)
    assert listed.returncode == 0, (listed.stdout + listed.stderr)[-4000:]
    assert mig_node in json.loads(listed.stdout)['_meta']['hostvars']
