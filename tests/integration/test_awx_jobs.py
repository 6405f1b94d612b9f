"""The job templates of extensions/awx run the way AWX runs them: ansible-runner, a private data directory,
the template's playbook, survey answers and launch variables, and the cluster reached only through the
K8S_AUTH_* variables of AWX's bearer-token credential, holding the token of a ServiceAccount bound to
gpuops-gpu-rollout alone (roles/rbac). report.yml shows the fleet; mig.yml reconfigures two nodes with a
custom geometry, and its second run changes nothing."""

import time

import pytest

from awx_job import account_token, bearer_token_credential, job_template, run_job
from conftest import wait_until
from policy_helpers import CP

SA, SA_NS = 'gpuops-awx', 'gpuops-awx'
H100 = ['h100-0', 'h100-1']


@pytest.fixture(scope='module')
def credential(testbed, core, operator_ns):
    """The AWX credential: a ServiceAccount token (from roles/rbac, run once by an admin) + CA + host."""
    token = account_token(testbed, core, SA, SA_NS, ['rollout'], cluster_roles=['report', 'rollout'])
    return bearer_token_credential(testbed.kubeconfig, token)


def test_report_job(tmp_path, credential):
    template = job_template('playbooks/report.yml')
    job = run_job(tmp_path, template, credential, survey={'gpuops_report_label_selector': 'gpuops.dev/pool=training'})
    assert (job.status, job.rc) == ('successful', 0), job.stdout[-4000:]
    table = '\n'.join(job.results()['Show the GPU fleet']['msg'])
    for node in ('a100-0', 'a100-1', 'h100-0', 'h100-1'):
        assert node in table
    assert 't4-0' not in table and 'l40s-0' not in table, 'the survey selector limits the report'
    assert job.changed_tasks() == []
    # the "Check" job type of the same template
    job = run_job(tmp_path, template, credential, job_type='check', ident='check')
    assert (job.status, job.rc) == ('successful', 0), job.stdout[-4000:]


def test_mig_job_with_a_rollout_only_token(tmp_path, testbed, core, custom, cluster_policy, credential,
                                           operator_ns):
    wait_until('GFD labels on the H100 nodes', lambda: all(
        (core.read_node(n).metadata.labels or {}).get('nvidia.com/gpu.product') for n in H100), 180)
    template = job_template('playbooks/mig.yml')
    # a text answer, as AWX sends it (a count or a percentage)
    survey = {'mig_operator_namespace': operator_ns, 'mig_strategy': 'mixed', 'mig_max_unavailable': '2'}
    geometry = [{'devices': 'all', 'mig-enabled': True, 'mig-devices': {'3g.40gb': 2}}]
    launch = {'mig_custom_configs': {'h100-3g-2x': geometry},
              'mig_assignments': [{'nodes': H100, 'config': 'h100-3g-2x'}],
              'mig_poll_interval': 0.5, 'mig_state_timeout': 240, 'mig_verify_timeout': 120}
    start = time.monotonic()
    job = run_job(tmp_path, template, credential, survey=survey, launch_vars=launch)
    assert (job.status, job.rc) == ('successful', 0), job.stdout[-6000:]
    for node in H100:
        labels = core.read_node(node).metadata.labels
        assert labels['nvidia.com/mig.config'] == 'h100-3g-2x'
        assert labels['nvidia.com/mig.config.state'] == 'success'
        assert not core.read_node(node).spec.unschedulable
    policy = custom.get_cluster_custom_object(*CP, 'gpu-cluster-policy')
    assert policy['spec']['mig']['strategy'] == 'mixed'
    assert policy['spec']['migManager']['config']['name'] == 'gpuops-mig-parted-config'
    assert 'h100-3g-2x' in core.read_namespaced_config_map('gpuops-mig-parted-config', operator_ns).data['config.yaml']
    print('mig job took %.1fs' % (time.monotonic() - start))

    # launched again with the same answers: AWX shows no change
    job = run_job(tmp_path, template, credential, survey=survey, launch_vars=launch, ident='again')
    assert (job.status, job.rc) == ('successful', 0), job.stdout[-4000:]
    assert job.changed_tasks() == [], job.changed_tasks()
