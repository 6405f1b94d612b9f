"""The HAMi job template (extensions/awx/job_templates.yml, playbooks/hami.yml) run the way AWX runs it
(awx_job.py: ansible-runner, a private data directory, the cluster reached only through the bearer-token
credential's K8S_AUTH_* variables), with the execution environment's programs as the job's whole PATH (ee_tools.py:
the list execution-environment.yml gives, helm at the version it pins) and a token of a ServiceAccount bound to the
account whose credential the template carries (docs/rbac.md: install).

Without helm on that PATH the job fails at its first helm task and writes nothing, so a template that needs a
program the EE lacks fails this test. With it, the job installs HAMi (the operator's device plugin switched off,
the training nodes labelled, the release deployed), and a launch with hami_state=absent removes it again: the
cluster is left as the test found it. The chart: hami_helpers.py."""

import json
import os
import re
import subprocess

import pytest

from awx_job import account_token, bearer_token_credential, job_template, run_job
from ee_tools import ee_tool_dir, ee_tool_list, pinned_helm_version
from hami_helpers import HAMI_NODES, NAMESPACE, OTHER_NODES, node_labels, ready_chart, releases, snapshot
from policy_helpers import get_policy

SA, SA_NS = 'gpuops-awx-hami', 'gpuops-awx'
# the cluster as written in extensions/awx (a Jinja reference) or as the loader fills it in (the cluster's name)
ACCOUNT = re.compile(r'^gpuops\.gpu (?:\{\{ gpuops_awx_cluster \}\}|[^ ]+) (report|rollout|install) account$')
SURVEY = {'hami_namespace': NAMESPACE, 'hami_device_split_count': 4}
LAUNCH = {'hami_disable_operator_device_plugin': True, 'hami_node_selector': 'gpuops.dev/pool=training',
          'hami_wait_timeout': 120}
HELM_TASK = 'Read the HAMi release (and check that helm runs)'


@pytest.fixture(scope='module')
def chart(tmp_path_factory, custom, core):
    return ready_chart(tmp_path_factory, custom, core)


@pytest.fixture(scope='module')
def template():
    return job_template('playbooks/hami.yml')


def template_account(template):
    """The account (report, rollout, install) of the one cluster credential ``template`` carries."""
    accounts = [m.group(1) for m in (ACCOUNT.match(c) for c in template.get('credentials') or []) if m]
    assert len(accounts) == 1, ('%s must carry exactly one cluster account credential (gpuops.gpu '
                                '<cluster> <report|rollout|install> account, extensions/awx/credentials.yml), not %s'
                                % (template['name'], template.get('credentials')))
    return accounts[0]


@pytest.fixture(scope='module')
def credential(testbed, core, template):
    """The AWX credential of the template's account: a ServiceAccount token from roles/rbac, run once by an admin."""
    token = account_token(testbed, core, SA, SA_NS, [template_account(template)])
    return bearer_token_credential(testbed.kubeconfig, token)


@pytest.fixture(scope='module')
def ee_path(tmp_path_factory, helm):
    return ee_tool_dir(str(tmp_path_factory.mktemp('ee') / 'bin'), {'helm': helm})


def test_the_job_path_holds_the_ee_programs_only(ee_path):
    assert sorted(os.listdir(ee_path)) == sorted(ee_tool_list())
    assert 'helm' in os.listdir(ee_path)
    version = subprocess.run([os.path.join(ee_path, 'helm'), 'version', '--template', '{{.Version}}'], check=True,
                             stdout=subprocess.PIPE, text=True).stdout.strip()
    assert version == pinned_helm_version(), (
        'the tests run helm %s, the EE definition pins %s' % (version, pinned_helm_version()))


def test_without_helm_the_job_fails_and_writes_nothing(tmp_path, core, custom, helm, chart, credential, template):
    no_helm = ee_tool_dir(str(tmp_path / 'bin'), {'helm': helm}, leave_out=('helm',))
    before = snapshot(core, custom)
    job = run_job(tmp_path, template, credential, survey=SURVEY, launch_vars=dict(LAUNCH, hami_chart_ref=chart),
                  path=no_helm)
    assert job.status == 'failed' and job.rc != 0, job.stdout[-4000:]
    failed = dict((name, r) for name, r in job.results().items() if r['failed'])
    assert list(failed) == [HELM_TASK], job.stdout[-4000:]
    assert 'Failed to find required executable "helm"' in failed[HELM_TASK]['msg'], failed[HELM_TASK]['msg']
    assert snapshot(core, custom) == before


def helm_values(testbed, helm):
    proc = subprocess.run([helm, 'get', 'values', 'hami', '-n', NAMESPACE, '-o', 'json'], check=True, text=True,
                          env=dict(os.environ, KUBECONFIG=testbed.kubeconfig), stdout=subprocess.PIPE)
    return json.loads(proc.stdout)


def helm_status(testbed, helm):
    proc = subprocess.run([helm, 'status', 'hami', '-n', NAMESPACE, '-o', 'json'], check=True, text=True,
                          env=dict(os.environ, KUBECONFIG=testbed.kubeconfig), stdout=subprocess.PIPE)
    return json.loads(proc.stdout)['info']['status']


def test_install_then_remove_hami_with_the_ee_programs(tmp_path, testbed, core, custom, apps, helm, chart,
                                                       credential, template, ee_path):
    before = snapshot(core, custom)
    try:
        job = run_job(tmp_path, template, credential, survey=dict(SURVEY, hami_state='present'),
                      launch_vars=dict(LAUNCH, hami_chart_ref=chart), path=ee_path, ident='present')
        assert (job.status, job.rc) == ('successful', 0), job.stdout[-6000:]
        assert get_policy(custom)['spec']['devicePlugin']['enabled'] is False
        assert helm_status(testbed, helm) == 'deployed'
        assert [n for n in HAMI_NODES if node_labels(core, n).get('gpu') != 'on'] == []
        assert [n for n in OTHER_NODES if 'gpu' in node_labels(core, n)] == []
        # the survey's split count and the role's node selector reached the release (what HAMi does with them is
        # HAMi's; the stand-in chart's own objects are not read back)
        plugin = helm_values(testbed, helm)['devicePlugin']
        assert (plugin['deviceSplitCount'], plugin['nvidiaNodeSelector']) == (SURVEY['hami_device_split_count'],
                                                                              {'gpu': 'on'})
    finally:
        job = run_job(tmp_path, template, credential, survey=dict(SURVEY, hami_state='absent'),
                      launch_vars={'hami_wait_timeout': 120}, path=ee_path, ident='absent')
    assert (job.status, job.rc) == ('successful', 0), job.stdout[-6000:]
    assert releases(core) == [] and apps.list_namespaced_daemon_set(NAMESPACE).items == []
    assert snapshot(core, custom) == before  # the ClusterPolicy, the nodes' labels and annotations as they were
    core.delete_namespace(NAMESPACE)  # helm created it for the release; the role leaves namespaces alone
