"""A 20-node MIG rollout run the way AWX runs the mig job template (ansible-runner, K8S_AUTH_* only, a
rollout-only token) shows its progress while it runs: the job events hold a progress line at least every
30 s from the start of the rollout task to its end (the action plugin of gpuops.gpu.mig_rollout prints
them), the engine's own batch messages, and at the end the summary table (node, from -> to, duration,
pods evicted, result) and the set_stats artifact ``gpuops_rollout`` with every node's timeline."""

import datetime
import os

import pytest

from awx_job import account_token, bearer_token_credential, job_template, run_job
from conftest import wait_until
from policy_helpers import ensure_cluster_policy

TESTBED_CONFIG = os.path.join(os.path.dirname(__file__), '..', 'testbed', 'configs', 'fleet20.yaml')
SA, SA_NS = 'gpuops-awx', 'gpuops-awx'
NODES = ['a100-%d' % i for i in range(20)]
ROLLOUT_TASK = 'apply | Roll the MIG configs out to the node groups'
SUMMARY_TASK = 'Show the rollout summary (node, from -> to, duration, pods evicted, result)'
MAX_GAP = 30.0


@pytest.fixture(scope='module')
def rollout_credential(testbed, core, operator_ns):
    """AWX's bearer-token credential holding the token of a ServiceAccount bound to gpuops-gpu-rollout alone."""
    return bearer_token_credential(testbed.kubeconfig, account_token(testbed, core, SA, SA_NS, ['rollout']))


def _when(event):
    return datetime.datetime.fromisoformat(event['created'].replace('Z', '+00:00'))


def _task_window(events, task):
    """(start, end, events in between) of ``task``'s run on localhost."""
    start = next(i for i, e in enumerate(events)
                 if e['event'] == 'runner_on_start' and e['event_data'].get('task') == task)
    end = next(i for i, e in enumerate(events) if i > start and e['event'] in ('runner_on_ok', 'runner_on_failed')
               and e['event_data'].get('task') == task)
    return events[start], events[end], events[start + 1:end]


def test_a_20_node_mig_rollout_shows_progress_every_30s(tmp_path, testbed, core, custom, operator_ns,
                                                        rollout_credential):
    ensure_cluster_policy(custom)
    wait_until('GFD labels on the 20 nodes', lambda: all(
        (core.read_node(n).metadata.labels or {}).get('nvidia.com/gpu.product') for n in NODES), 300)
    survey = {'mig_operator_namespace': operator_ns, 'mig_max_unavailable': '25%'}
    launch = {'mig_assignments': [{'label_selector': 'gpuops.dev/pool=training', 'config': 'all-1g.5gb'}],
              'mig_poll_interval': 1, 'mig_state_timeout': 300, 'mig_verify_timeout': 120}
    job = run_job(tmp_path, job_template('playbooks/mig.yml'), rollout_credential, survey=survey,
                  launch_vars=launch, timeout=1200)
    assert (job.status, job.rc) == ('successful', 0), job.stdout[-6000:]

    start, end, during = _task_window(job.events, ROLLOUT_TASK)
    lines = [e for e in during if e['event'] == 'verbose' and 'mig rollout' in (e.get('stdout') or '')]
    assert lines, 'no progress line in the job events of the rollout task:\n%s' % job.stdout[-4000:]
    times = [_when(start)] + [_when(e) for e in lines] + [_when(end)]
    gaps = [(b - a).total_seconds() for a, b in zip(times, times[1:])]
    took = (times[-1] - times[0]).total_seconds()
    assert took > 2 * MAX_GAP, 'the rollout took %.0fs: too short to show progress over time' % took
    assert max(gaps) <= MAX_GAP, 'a gap of %.1fs without progress (gaps: %s)' % (max(gaps), gaps)
    text = '\n'.join(e.get('stdout') or '' for e in during)
    for index in range(1, 5):
        assert 'batch %d/4' % index in text, 'batch %d/4 is not in the progress:\n%s' % (index, text)
    assert 'waiting for the node agent' in text, text

    summary = '\n'.join(job.results()[SUMMARY_TASK]['msg'])
    assert 'NODE' in summary and 'FROM -> TO' in summary and 'EVICTED' in summary, summary
    for node in NODES:
        row = next(line for line in summary.splitlines() if line.startswith(node + ' '))
        assert '-> all-1g.5gb' in row and row.rstrip().endswith('done'), row
    assert 'done 20, held 0, gone 0, not started 0' in summary, summary

    stats = next(e for e in job.events if e['event'] == 'playbook_on_stats')['event_data']['artifact_data']
    rollout = stats['gpuops_rollout']
    assert rollout['kind'] == 'mig' and rollout['changed'] is True
    assert sorted(n['node'] for n in rollout['nodes']) == sorted(NODES)
    for node in rollout['nodes']:
        events = node['timeline']
        assert list(events) == ['started', 'cordoned', 'drained', 'labelled', 'reported', 'verified', 'uncordoned'], events
        assert sorted(events.values()) == list(events.values()), 'timeline out of order: %s' % events
    assert sorted(n['name'] for n in stats['gpuops_fleet_before']['nodes']) == sorted(NODES)
    for node in NODES:
        labels = core.read_node(node).metadata.labels
        assert (labels['nvidia.com/mig.config'], labels['nvidia.com/mig.config.state']) == ('all-1g.5gb', 'success')
        assert not core.read_node(node).spec.unschedulable
