# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the AWX objects mean, beyond their option names and types (test_awx_argspec.py): each job template's
cluster account is the least one docs/rbac.md allows for its playbook; the templates prompt for inventory and
credentials; the workflows are plan (check) -> approval -> apply -> validate -> report (mig, sharing, upgrade, DRA
cutover) and install -> mig ->
sharing -> validate -> report, every prompt a node sets is one its template accepts, and every job node is bound
to the workflow's cluster (its inventory and its least account; no inventory at launch); failures notify, with
no literal secret; the nightly schedules are rrules AWX parses, bound to their cluster and shipped disabled."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import os
import re

import jinja2
import pytest
import yaml

from ansible_collections.gpuops.gpu.tests.unit.extensions.awx_files import load_awx
from dateutil import rrule

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
AWX = os.path.join(REPO, 'extensions', 'awx')


def _load(name):
    with open(os.path.join(AWX, name)) as handle:
        return load_awx(handle)


SETTINGS = _load('settings.yml')
TEMPLATES = dict((t['name'], t) for t in _load('job_templates.yml')['controller_templates'])
WORKFLOWS = dict((w['name'], w) for w in _load('workflows.yml')['controller_workflows'])
CREDENTIALS = dict((c['name'], c) for c in _load('credentials.yml')['controller_credentials'])
NOTIFICATIONS = dict((n['name'], n) for n in _load('notifications.yml')['controller_notifications'])
SCHEDULES = _load('schedules.yml')['controller_schedules']
BEARER = 'OpenShift or Kubernetes API Bearer Token'
CLUSTER = '{{ gpuops_awx_cluster }}'
# least privilege first (docs/rbac.md)
ACCOUNTS = ('report', 'rollout', 'install')
# the prompt a workflow node (or a schedule) sets -> the job template field that must allow it
PROMPTS = {'job_type': 'ask_job_type_on_launch', 'diff_mode': 'ask_diff_mode_on_launch',
           'inventory': 'ask_inventory_on_launch', 'limit': 'ask_limit_on_launch', 'credentials':
           'ask_credential_on_launch', 'job_tags': 'ask_tags_on_launch', 'skip_tags': 'ask_skip_tags_on_launch',
           'verbosity': 'ask_verbosity_on_launch', 'timeout': 'ask_timeout_on_launch', 'forks': 'ask_forks_on_launch',
           'scm_branch': 'ask_scm_branch_on_launch', 'execution_environment': 'ask_execution_environment_on_launch'}


def rbac_accounts():
    """{playbook: [accounts whose ClusterRole docs/rbac.md lists it for]}, from the ClusterRole table. A playbook
    listed with some of its parts only (`dra.yml` with `dra_parts: [cutover]`) is keyed with them
    ('playbooks/dra.yml dra_parts=cutover'): an account for those parts, not for the playbook's defaults."""
    out = {}
    with open(os.path.join(REPO, 'docs', 'rbac.md')) as handle:
        for line in handle:
            row = re.match(r'^\| `gpuops-gpu-(report|rollout|install)`[^|]*\| ([^|]*)\|', line)
            found = re.findall(r'`(\w+\.yml)`(?: with `(\w+_parts): \[([\w, ]+)\]`)?', row.group(2)) if row else []
            for playbook, variable, parts in found:
                key = 'playbooks/' + playbook
                if variable:
                    key += ' %s=%s' % (variable, ','.join(p.strip() for p in parts.split(',')))
                out.setdefault(key, []).append(row.group(1))
    return out


def playbook_key(playbook, extra_data):
    """The rbac_accounts() key of a job that runs ``playbook`` with ``extra_data`` (a workflow node's variables)."""
    for name, value in sorted((extra_data or {}).items()):
        if name.endswith('_parts') and isinstance(value, list):
            return '%s %s=%s' % (playbook, name, ','.join(value))
    return playbook


def cluster_account(template):
    """The account of the template's bearer-token credential (the one of credentials.yml it names)."""
    cluster = [c for c in template.get('credentials') or [] if CREDENTIALS[c]['credential_type'] == BEARER]
    assert len(cluster) == 1, '%s: exactly one cluster credential, got %s' % (template['name'], cluster)
    match = re.match(r'^gpuops\.gpu \{\{ gpuops_awx_cluster \}\} (\w+) account$', cluster[0])
    assert match and match.group(1) in ACCOUNTS, cluster[0]
    return match.group(1)


def least_account(playbook, table):
    allowed = table.get(playbook)
    assert allowed, 'docs/rbac.md names no ClusterRole for %s' % playbook
    return min(allowed, key=ACCOUNTS.index)


# ------------------------------------------------------------------------------ credentials per account

def test_each_account_has_its_own_credential_with_a_vaulted_token():
    tokens = {}
    for account in ACCOUNTS:
        credential = CREDENTIALS['gpuops.gpu %s %s account' % (CLUSTER, account)]
        assert credential['credential_type'] == BEARER
        tokens[account] = credential['inputs']['bearer_token']
        assert tokens[account] == '{{ vault_gpuops_%s_token }}' % account
    assert len(set(tokens.values())) == len(ACCOUNTS)


@pytest.mark.parametrize('name', sorted(TEMPLATES))
def test_template_uses_the_least_account_rbac_md_allows(name):
    template = TEMPLATES[name]
    assert cluster_account(template) == least_account(template['playbook'], rbac_accounts()), (
        '%s runs %s: docs/rbac.md allows it with %s' % (name, template['playbook'], rbac_accounts()[template['playbook']]))


def test_the_account_check_can_fail():
    table = rbac_accounts()
    assert table['playbooks/report.yml'] == ['report'] and table['playbooks/mig.yml'] == ['rollout']
    assert table['playbooks/dra.yml'] == ['install'] and table['playbooks/dra.yml dra_parts=cutover'] == ['rollout']
    assert playbook_key('playbooks/dra.yml', {'dra_parts': ['cutover']}) == 'playbooks/dra.yml dra_parts=cutover'
    assert playbook_key('playbooks/dra.yml', {'smoke_test_mode': 'dra'}) == 'playbooks/dra.yml'
    assert least_account('playbooks/validate.yml', table) == 'install'
    assert least_account('playbooks/mig.yml', {'playbooks/mig.yml': ['install', 'rollout']}) == 'rollout'
    wrong = dict(TEMPLATES['gpuops.gpu mig'], credentials=['gpuops.gpu %s install account' % CLUSTER])
    assert cluster_account(wrong) != least_account(wrong['playbook'], table)


@pytest.mark.parametrize('name', sorted(TEMPLATES))
def test_template_prompts_for_inventory_and_credentials(name):
    """One template serves every cluster: pick its inventory and account at launch."""
    template = TEMPLATES[name]
    assert template.get('ask_inventory_on_launch') is True, name
    assert template.get('ask_credential_on_launch') is True, name


# ------------------------------------------------------------------------------ workflows

def nodes(workflow):
    return dict((n['identifier'], n) for n in workflow['workflow_nodes'])


def following(node, kind='success_nodes'):
    return [link['identifier'] for link in (node.get('related') or {}).get(kind) or []]


def node_template(node):
    template = node['unified_job_template']
    if template['type'] != 'job_template':
        return None
    assert template['name'] in TEMPLATES, 'node %s runs %s, which job_templates.yml lacks' % (
        node['identifier'], template['name'])
    return TEMPLATES[template['name']]


def prompt_errors(node):
    """Prompts the node sets that its job template would reject (AWX refuses such a node)."""
    template = node_template(node)
    if template is None:
        return []
    errors = []
    for field, ask in PROMPTS.items():
        if field in node and node[field] != template.get(field) and not template.get(ask):
            errors.append('%s sets %s but %s does not %s' % (node['identifier'], field, template['name'], ask))
    if node.get('extra_data') and not template.get('ask_variables_on_launch'):
        errors.append('%s sets extra_data but %s does not ask for variables' % (node['identifier'], template['name']))
    return errors


def chain(workflow):
    """The success path from the root node: [(identifier, template name or 'approval', job_type)]."""
    by_id = nodes(workflow)
    targets = set(i for n in by_id.values() for kind in ('success_nodes', 'failure_nodes', 'always_nodes')
                  for i in following(n, kind))
    roots = [i for i in by_id if i not in targets]
    assert len(roots) == 1, 'one root node, got %s' % roots
    out, current = [], by_id[roots[0]]
    while current is not None:
        template = current['unified_job_template']
        out.append((template['name'] if template['type'] == 'job_template' else 'approval', current.get('job_type')))
        after = following(current) or following(current, 'always_nodes')
        current = by_id[after[0]] if after else None
    return out


@pytest.mark.parametrize('kind', ['mig', 'sharing', 'upgrade'])
def test_rollout_workflow_is_plan_approve_apply_validate_report(kind):
    workflow = WORKFLOWS['gpuops.gpu %s %s workflow' % (CLUSTER, kind)]
    rollout = 'gpuops.gpu %s' % kind
    assert chain(workflow) == [(rollout, 'check'), ('approval', None), (rollout, 'run'),
                               ('gpuops.gpu validate', 'run'), ('gpuops.gpu report', 'run')]
    by_id = nodes(workflow)
    assert by_id['plan']['diff_mode'] is True, 'the plan shows its changes'
    assert by_id['approve']['unified_job_template']['timeout'] > 0, 'an approval that times out (and then fails)'
    assert following(by_id['apply'], 'failure_nodes') == ['report'], 'a failed apply is still reported'
    assert following(by_id['validate'], 'always_nodes') == ['report']
    assert workflow['notification_templates_approvals'], 'someone learns that an approval waits'


def test_upgrade_workflow_runs_the_upgrade_with_the_install_account():
    """The upgrade writes OLM, Helm releases, the ClusterPolicy / NVIDIADrivers and nodes: gpuops-gpu-install."""
    workflow = WORKFLOWS['gpuops.gpu %s upgrade workflow' % CLUSTER]
    by_id = nodes(workflow)
    install = [{'name': 'gpuops.gpu %s install account' % CLUSTER}]
    assert [by_id[i]['related']['credentials'] for i in ('plan', 'apply')] == [install, install]
    assert by_id['plan']['unified_job_template'] == by_id['apply']['unified_job_template']


@pytest.mark.parametrize('kind, step, account, words', [
    ('DRA cutover', 'cutover', 'rollout', ('batches', 'pods', 'schedulable on DRA')),
    ('DRA change window', 'window', 'install', ('steps', 'swap the ClusterPolicy and the GPUCluster',
                                                'schedulable on DRA')),
])
def test_dra_workflows_are_plan_approve_run_validate_report(kind, step, account, words):
    """The node-group cutover and the cluster-wide change window as rollouts: plan (check, --diff) -> approval ->
    the run -> validate through DRA -> report, the DRA template with only their part in dra_parts (never its
    resources default); the cutover with the rollout account, the window, which replaces the GPU operator's
    resources, with the install account."""
    workflow = WORKFLOWS['gpuops.gpu %s %s workflow' % (CLUSTER, kind)]
    dra = 'gpuops.gpu DRA resources'
    assert TEMPLATES[dra]['playbook'] == 'playbooks/dra.yml'
    assert chain(workflow) == [(dra, 'check'), ('approval', None), (dra, 'run'),
                               ('gpuops.gpu validate', 'run'), ('gpuops.gpu report', 'run')]
    by_id = nodes(workflow)
    assert list(by_id) == ['plan', 'approve', step, 'validate', 'report']
    assert by_id['plan']['diff_mode'] is True
    for name in ('plan', step):
        assert by_id[name]['extra_data'] == {'dra_parts': [step]}, name
        assert by_id[name]['related']['credentials'] == [{'name': 'gpuops.gpu %s %s account' % (CLUSTER, account)}]
    assert by_id['validate']['extra_data'] == {'smoke_test_mode': 'dra'}
    approval = by_id['approve']['unified_job_template']
    assert approval['timeout'] > 0
    for word in words:
        assert word in approval['description'], word
    assert following(by_id[step], 'failure_nodes') == ['report']
    assert following(by_id['validate'], 'always_nodes') == ['report']
    assert workflow['notification_templates_approvals'] and workflow['ask_inventory_on_launch'] is False
    assert 'dra_cutover_stack' in [q['variable'] for q in TEMPLATES[dra]['survey_spec']['spec']]


def test_new_cluster_workflow_is_install_mig_sharing_validate_report():
    assert chain(WORKFLOWS['gpuops.gpu %s new cluster workflow' % CLUSTER]) == [
        ('gpuops.gpu install', 'run'), ('gpuops.gpu mig', 'run'), ('gpuops.gpu sharing', 'run'),
        ('gpuops.gpu validate', 'run'), ('gpuops.gpu report', 'run')]


@pytest.mark.parametrize('name', sorted(WORKFLOWS))
def test_workflow_nodes_set_only_prompts_their_templates_accept(name):
    workflow = WORKFLOWS[name]
    errors = [e for node in workflow['workflow_nodes'] for e in prompt_errors(node)]
    assert not errors, errors
    assert workflow['ask_variables_on_launch'] is True


def binding_errors(workflow):
    """Why a workflow could reach another cluster than its own: it asks for an inventory at launch (AWX workflows
    cannot prompt for credentials, so the credentials would stay those of its nodes), or a job node runs without
    its cluster's inventory or with another account than its template's (that cluster's least one)."""
    match = re.match(r'^gpuops\.gpu (.+) (mig|sharing|upgrade|DRA cutover|DRA change window|new cluster) workflow$', workflow['name'])
    if not match:
        return ['%s: a workflow is named after its cluster' % workflow['name']]
    cluster = match.group(1)
    errors = []
    if workflow.get('ask_inventory_on_launch') or workflow.get('inventory') != 'gpuops.gpu %s' % cluster:
        errors.append('%s: the cluster inventory, not one picked at launch' % workflow['name'])
    for node in workflow['workflow_nodes']:
        template = node_template(node)
        if template is None:
            continue
        if (node.get('inventory') or {}).get('name') != 'gpuops.gpu %s' % cluster:
            errors.append('%s: inventory %s' % (node['identifier'], node.get('inventory')))
        names = [c['name'] for c in (node.get('related') or {}).get('credentials') or []]
        key = playbook_key(template['playbook'], node.get('extra_data'))
        expected = 'gpuops.gpu %s %s account' % (cluster, least_account(key, rbac_accounts()))
        if names != [expected]:
            errors.append('%s: credentials %s, expected [%s]' % (node['identifier'], names, expected))
    return errors


@pytest.mark.parametrize('name', sorted(WORKFLOWS))
def test_every_job_node_is_bound_to_the_workflows_cluster(name):
    assert binding_errors(WORKFLOWS[name]) == []
    assert set(CREDENTIALS) >= set(c['name'] for n in WORKFLOWS[name]['workflow_nodes']
                                   for c in (n.get('related') or {}).get('credentials') or [])


def test_the_binding_check_can_fail():
    workflow = yaml.safe_load(yaml.safe_dump(WORKFLOWS['gpuops.gpu %s mig workflow' % CLUSTER]))
    workflow['ask_inventory_on_launch'] = True
    apply_node = nodes(workflow)['apply']
    apply_node['related']['credentials'] = [{'name': 'gpuops.gpu other rollout account'}]
    del nodes(workflow)['report']['inventory']
    nodes(workflow)['validate']['related']['credentials'].append({'name': 'gpuops.gpu %s report account' % CLUSTER})
    assert len(binding_errors(workflow)) == 4
    cutover = yaml.safe_load(yaml.safe_dump(WORKFLOWS['gpuops.gpu %s DRA cutover workflow' % CLUSTER]))
    assert binding_errors(cutover) == []
    nodes(cutover)['cutover']['related']['credentials'] = [{'name': 'gpuops.gpu %s install account' % CLUSTER}]
    del nodes(cutover)['plan']['extra_data']  # the DRA resources default, which the rollout account may not run
    assert len(binding_errors(cutover)) == 2


def test_the_workflow_checks_can_fail():
    node = {'identifier': 'plan', 'unified_job_template': {'name': 'gpuops.gpu report', 'type': 'job_template'},
            'diff_mode': True, 'extra_data': {'x': 1}}
    assert len(prompt_errors(node)) == 2, 'report asks for neither diff mode nor variables'
    broken = dict(WORKFLOWS['gpuops.gpu %s mig workflow' % CLUSTER])
    broken['workflow_nodes'] = [n for n in broken['workflow_nodes'] if n['identifier'] != 'approve']
    with pytest.raises((KeyError, AssertionError)):
        chain(broken)


# ------------------------------------------------------------------------------ notifications and schedules

def test_templates_and_workflows_notify_on_failure():
    for obj in list(TEMPLATES.values()) + list(WORKFLOWS.values()):
        names = obj.get('notification_templates_error') or []
        assert names, '%s notifies no one when it fails' % obj['name']
        assert set(names) <= set(NOTIFICATIONS), (obj['name'], names)
        assert set(obj.get('notification_templates_approvals') or []) <= set(NOTIFICATIONS)
    assert set(n['notification_type'] for n in NOTIFICATIONS.values()) >= {'webhook', 'email'}


SECRET_KEY = re.compile(r'(url|password|token|secret)$')


@pytest.mark.parametrize('name', sorted(NOTIFICATIONS))
def test_notification_secrets_come_from_vaulted_variables(name):
    for key, value in NOTIFICATIONS[name]['notification_configuration'].items():
        if SECRET_KEY.search(key) and value:
            assert re.match(r'^\{\{ *vault_\w+ *\}\}$', value), '%s.%s must refer to a vaulted variable' % (name, key)


AWX_RRULE = re.compile(r'^DTSTART(;TZID=[\w/+-]+:\d{8}T\d{6}|:\d{8}T\d{6}Z) '
                       r'RRULE:FREQ=(DAILY|WEEKLY|MONTHLY|HOURLY)(;[A-Z]+=[\w,+-]+)*$')


def parse_rrule(text):
    """AWX's format (one DTSTART with a TZID or in UTC, one RRULE, space-separated), then dateutil's parser, which AWX
    uses to compute the runs; returns the first two runs."""
    assert AWX_RRULE.match(text), '%r is not in AWX rrule form' % text
    runs = rrule.rrulestr(text.replace(' RRULE:', '\nRRULE:'), forceset=True)
    return runs[0], runs[1]


@pytest.mark.parametrize('schedule', SCHEDULES, ids=[s['name'] for s in SCHEDULES])
def test_nightly_schedule_is_a_daily_rrule_awx_parses(schedule):
    text = jinja2.Template(schedule['rrule'], undefined=jinja2.StrictUndefined).render(SETTINGS)
    first, second = parse_rrule(text)
    assert (second - first).total_seconds() == 24 * 3600 and first.hour < 6, 'nightly: %s' % text
    assert schedule['unified_job_template'] in TEMPLATES
    # shipped disabled: a nightly run takes GPUs with the install account and pulls the validation image
    assert schedule['enabled'] is False, '%s ships enabled' % schedule['name']
    # bound to its cluster: its inventory and the least account of its template
    template = TEMPLATES[schedule['unified_job_template']]
    assert schedule['name'].startswith('gpuops.gpu %s ' % CLUSTER) and schedule['inventory'] == 'gpuops.gpu %s' % CLUSTER
    least = least_account(template['playbook'], rbac_accounts())
    assert schedule['credentials'] == ['gpuops.gpu %s %s account' % (CLUSTER, least)]
    assert not prompt_errors(dict(schedule, identifier=schedule['name'], unified_job_template={
        'name': template['name'], 'type': 'job_template'}))


def test_schedules_cover_health_report_and_validate_and_the_parser_can_fail():
    assert sorted(s['unified_job_template'] for s in SCHEDULES) == [
        'gpuops.gpu gpu health', 'gpuops.gpu report', 'gpuops.gpu validate']
    for bad in ('RRULE:FREQ=DAILY', 'DTSTART;TZID=UTC:2026-01-01 RRULE:FREQ=DAILY',
                'DTSTART;TZID=UTC:20260101T020000 RRULE:FREQ=NIGHTLY'):
        with pytest.raises(AssertionError):
            parse_rrule(bad)
    with pytest.raises(ValueError):
        rrule.rrulestr('DTSTART;TZID=UTC:20260101T020000\nRRULE:FREQ=DAILY;BYHOUR=25', forceset=True)[0]


def test_the_nightly_health_report_plans_and_changes_nothing():
    """The gpu health schedule runs its template in check mode with --diff (the plan: nodes, reasons, pods that
    would move), with the quarantine policy the survey asks for, before the fleet report."""
    [health] = [s for s in SCHEDULES if s['unified_job_template'] == 'gpuops.gpu gpu health']
    template = TEMPLATES['gpuops.gpu gpu health']
    assert (health['job_type'], health['diff_mode']) == ('check', True) and template['job_type'] == 'run'
    policy = [q for q in template['survey_spec']['spec'] if q['variable'] == 'gpu_health_policy'][0]
    assert health['extra_data'] == {'gpu_health_policy': 'quarantine'} and 'quarantine' in policy['choices']
    assert set(health['extra_data']) <= set(q['variable'] for q in template['survey_spec']['spec'])
    report = [s for s in SCHEDULES if s['unified_job_template'] == 'gpuops.gpu report'][0]
    first = [parse_rrule(jinja2.Template(s['rrule']).render(SETTINGS))[0] for s in (health, report)]
    assert first[0] < first[1]
