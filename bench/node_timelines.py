"""Node timelines of a mig_rollout result, split into the rollout's own time and the node agents' time,
and what the machine did meanwhile (load average, CPU seconds of each process of the virtual cluster).

Each node of the module's result has a ``timeline`` (ISO 8601 UTC with milliseconds, recorded by the
rollout): started, cordoned, drained, labelled, reported (the rollout saw ``mig.config.state=success``),
verified (it saw the new resources allocatable), uncordoned. Of that:

* the rollout's own time: started -> labelled (its writes and reads before the label) and
  verified -> uncordoned (after), plus the gap between the end of a batch and the start of the next;
* the node agents' time: labelled -> reported, less the configured reconfiguration time (the simulated
  MIG manager's lag), and reported -> verified (the simulated device plugin advertising the resources).

Both agents' figures include the time the rollout takes to see the change through its node watch.
Used by bench/mig_rollout_bench.py; pure except ``Machine``.
"""

import datetime
import json
import os
import re
import threading

TICKS = os.sysconf('SC_CLK_TCK') if hasattr(os, 'sysconf') else 100
STEPS = (('pre', 'started -> labelled', 'the rollout'),
         ('mig', 'labelled -> success, less the reconfiguration time', 'simulated MIG manager'),
         ('dp', 'success -> allocatable verified', 'simulated device plugin'),
         ('post', 'verified -> uncordoned', 'the rollout'))


def seconds(stamp):
    """An ISO timestamp of a timeline (2026-11-24T16:40:01.123Z) as seconds since the epoch."""
    when = datetime.datetime.strptime(stamp, '%Y-%m-%dT%H:%M:%S.%fZ')
    return when.replace(tzinfo=datetime.timezone.utc).timestamp()


def percentile(values, share):
    """The value at ``share`` (0..1) of the sorted values, nearest rank (None when there are none)."""
    ordered = sorted(values)
    if not ordered:
        return None
    rank = max(1, int(round(share * len(ordered) + 0.4999)))
    return ordered[min(rank, len(ordered)) - 1]


def node_steps(timeline, reconfigure):
    """{step: seconds} of one node's timeline (only the steps whose two ends it has)."""
    t = {k: seconds(v) for k, v in timeline.items()}
    out = {}
    if 'started' in t and 'labelled' in t:
        out['pre'] = t['labelled'] - t['started']
    if 'labelled' in t and 'reported' in t:
        out['mig'] = t['reported'] - t['labelled'] - reconfigure
    if 'reported' in t and 'verified' in t:
        out['dp'] = t['verified'] - t['reported']
    if 'verified' in t and 'uncordoned' in t:
        out['post'] = t['uncordoned'] - t['verified']
    return out


def batch_rows(result, reconfigure):
    """Per batch: nodes, wall (first start to last uncordon), the gap since the previous batch ended, and the
    split of its critical path (the node that finished last): the rollout's own time and the agents' time."""
    by_name = {n['node']: n for n in result['nodes'] if n.get('timeline')}
    rows, previous_end = [], None
    for index, batch in enumerate(result['batches']):
        lines = [by_name[n]['timeline'] for n in batch if n in by_name]
        if not lines or not all('uncordoned' in tl and 'started' in tl for tl in lines):
            continue
        start = min(seconds(tl['started']) for tl in lines)
        last = max(lines, key=lambda tl: seconds(tl['uncordoned']))
        end = seconds(last['uncordoned'])
        steps = node_steps(last, reconfigure)
        rows.append({'batch': index + 1, 'nodes': len(lines), 'wall': end - start,
                     'gap': None if previous_end is None else start - previous_end,
                     'own': seconds(last['labelled']) - start + steps.get('post', 0.0),
                     'agents': steps.get('mig', 0.0) + steps.get('dp', 0.0)})
        previous_end = end
    return rows


def step_stats(result, reconfigure):
    """{step: (median, p95, max)} over every node of the result."""
    values = {key: [] for key, _words, _whose in STEPS}
    for node in result['nodes']:
        for key, value in node_steps(node.get('timeline') or {}, reconfigure).items():
            values[key].append(value)
    return {key: (percentile(v, 0.5), percentile(v, 0.95), max(v)) for key, v in values.items() if v}


def batch_lines(result, reconfigure, own='rollout own', agents='agents'):
    """Markdown: per batch, its wall time, the gap before it and the critical node's split (own and agents' time)."""
    lines = ['| batch | nodes | wall | gap before | %s (critical node) | %s (critical node) |' % (own, agents),
             '|---|---|---|---|---|---|']
    for row in batch_rows(result, reconfigure):
        lines.append('| %d | %d | %.2f s | %s | %.2f s | %.2f s |' % (
            row['batch'], row['nodes'], row['wall'], '-' if row['gap'] is None else '%.2f s' % row['gap'],
            row['own'], row['agents']))
    return lines


def report_lines(result, reconfigure, machine=None, target=0.3):
    """Markdown: the per-step table (median, p95, max) against ``target``, the per-batch split, the machine."""
    stats = step_stats(result, reconfigure)
    lines = ['| step | whose time | median | p95 | max | p95 within %.1f s |' % target, '|---|---|---|---|---|---|']
    for key, words, whose in STEPS:
        if key in stats:
            med, p95, top = stats[key]
            verdict = ('**yes**' if p95 <= target else '**no**') if key in ('mig', 'dp') else ''
            lines.append('| %s | %s | %.2f s | %.2f s | %.2f s | %s |' % (words, whose, med, p95, top, verdict))
    lines += [''] + batch_lines(result, reconfigure)
    if machine:
        lines += [''] + machine.lines()
    return lines + ['']


METRIC = re.compile(r'^apiserver_request_duration_seconds_(sum|count)\{([^}]*)\} (\S+)$')


def apiserver_times(text):
    """{(verb, resource[/subresource]): [seconds, requests]} from the API server's /metrics text: the time it
    took to answer each kind of request (its own work and etcd's), summed over every series of that kind."""
    out = {}
    for line in text.splitlines():
        match = METRIC.match(line)
        if not match:
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', match.group(2)))
        what = labels.get('resource', '') + ('/' + labels['subresource'] if labels.get('subresource') else '')
        entry = out.setdefault((labels.get('verb', ''), what), [0.0, 0.0])
        entry[0 if match.group(1) == 'sum' else 1] += float(match.group(3))
    return out


class Machine(object):
    """Load average (sampled every ``every`` seconds), the CPU seconds each process of the virtual cluster
    ``name`` used between ``start()`` and ``stop()`` (read from /proc by the pids its state file records) and
    the API server's own time per kind of request meanwhile (its /metrics, read with ``kubeconfig``)."""

    def __init__(self, name, kubeconfig=None, every=2.0):
        cache = os.environ.get('GPUOPS_CACHE') or os.path.expanduser('~/.cache/gpuops')
        self.state = os.path.join(cache, 'testbed', 'run', name, 'state.json')
        self.kubeconfig = kubeconfig
        self.every = every
        self.samples, self.cpu, self.api = [], {}, {}
        self._api_begin = {}
        self._stop = threading.Event()
        self._thread = None
        self._begin = {}

    def _pids(self):
        try:
            with open(self.state) as handle:
                procs = json.load(handle).get('procs') or {}
        except (OSError, ValueError):
            return {}
        return {comp: rec['pid'] for comp, rec in procs.items() if rec.get('pid')}

    @staticmethod
    def _cpu(pid):
        try:
            with open('/proc/%d/stat' % pid) as handle:
                fields = handle.read().rsplit(')', 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / float(TICKS)   # utime + stime

    def _sample(self):
        while not self._stop.wait(self.every):
            self.samples.append(os.getloadavg()[0])

    def _metrics(self):
        if not self.kubeconfig:
            return {}
        from kubernetes import config
        resp = config.new_client_from_config(config_file=self.kubeconfig).call_api(
            '/metrics', 'GET', auth_settings=['BearerToken'], _preload_content=False, _return_http_data_only=True)
        return apiserver_times(resp.data.decode('utf-8'))

    def start(self):
        self._api_begin = self._metrics()
        self._begin = {comp: (pid, self._cpu(pid)) for comp, pid in self._pids().items()}
        self._begin['(this process and its children)'] = (None, _own_cpu())
        self.samples = [os.getloadavg()[0]]
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def stop(self, wall):
        self._stop.set()
        self._thread.join()
        self.samples.append(os.getloadavg()[0])
        self.wall = wall
        for comp, (pid, before) in self._begin.items():
            after = _own_cpu() if pid is None else self._cpu(pid)
            if before is not None and after is not None:
                self.cpu[comp] = after - before
        for key, (total, count) in self._metrics().items():
            was = self._api_begin.get(key, (0.0, 0.0))
            if count - was[1] > 0:
                self.api[key] = (total - was[0], count - was[1])

    def lines(self):
        loads = (self.samples[0], sum(self.samples) / len(self.samples), max(self.samples), self.samples[-1], self.every)
        out = ['Load average (1 min) during the run: %.2f at the start, %.2f on average, %.2f at most, %.2f at the '
               'end (sampled every %.0f s).' % loads, '',
               '| process | CPU seconds during the rollout | share of one core |', '|---|---|---|']
        for comp, used in sorted(self.cpu.items(), key=lambda kv: -kv[1]):
            out.append('| %s | %.1f s | %.0f%% |' % (comp, used, 100.0 * used / self.wall))
        out += ['', 'Rollout wall time: %.1f s.' % self.wall]
        if self.api:
            out += ['', 'The API server\'s own time meanwhile (its `apiserver_request_duration_seconds`: from the request\'s '
                    'arrival to its answer, etcd included; watches left out), the 8 kinds of request it spent most on:',
                    '', '| request | requests | mean | total |', '|---|---|---|---|']
            kinds = sorted(((k, v) for k, v in self.api.items() if k[0] != 'WATCH'), key=lambda kv: -kv[1][0])
            for (verb, what), (total, count) in kinds[:8]:
                out.append('| %s %s | %d | %.1f ms | %.1f s |' % (verb, what, count, 1000.0 * total / count, total))
        return out


def _own_cpu():
    """CPU seconds of this process and its waited-for children (ansible-playbook and the module)."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system
