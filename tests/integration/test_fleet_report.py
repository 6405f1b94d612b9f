"""The HTML fleet report of playbooks/report.yml, from a real MIG rollout on the virtual GPU cluster,
opened in headless Chromium: the capacity chart (before and after), the fleet table and the
rollout timeline are in the page the browser built, and a screenshot of it is a real picture.

Chromium: tests/integration/browser_helpers.py. GPUOPS_REPORT_SCREENSHOT=<path> keeps the screenshot
(docs/images/fleet-report.png is made that way)."""

import json
import os
import re
import subprocess
import sys
from html.parser import HTMLParser

import pytest

from ansible_run import run_play
from browser_helpers import browser, chromium, screenshot
from conftest import REPO, gpu_pod, wait_until

A100 = ['a100-0', 'a100-1']
GPU = 'nvidia.com/gpu'
TITLE = 'GPU fleet after the A100 MIG rollout & its timeline'
EVENTS = ['cordoned', 'drained', 'labelled', 'reported', 'verified', 'uncordoned']
VOID = {'area', 'base', 'br', 'col', 'embed', 'hr', 'img', 'input', 'link', 'meta', 'source', 'track', 'wbr'}


class Dom(HTMLParser):
    """The elements of a serialised DOM: (tag, attributes, ids of the enclosing elements, text)."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.elements, self.stack = [], []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        element = {'tag': tag, 'attrs': dict(attrs), 'within': [e['attrs'].get('id') for e in self.stack],
                   'parents': list(self.stack), 'text': ''}
        self.elements.append(element)
        if tag not in VOID:
            self.stack.append(element)

    def handle_endtag(self, tag):
        for index in range(len(self.stack) - 1, -1, -1):
            if self.stack[index]['tag'] == tag:
                del self.stack[index:]
                break

    def handle_data(self, data):
        for element in self.stack:
            element['text'] += data

    def find(self, tag, within=None, css=None):
        return [e for e in self.elements if e['tag'] == tag and (within is None or within in e['within'])
                and (css is None or css in e['attrs'].get('class', '').split())]


def report_playbook(kubeconfig, variables, tmp_path, check=False, extra_env=None):
    """ansible-playbook playbooks/report.yml -e @vars.json; (rc, output)."""
    path = tmp_path / ('vars-%d.json' % len(list(tmp_path.glob('vars-*.json'))))
    path.write_text(json.dumps(dict(variables, gpuops_kubeconfig=kubeconfig)))
    env = dict(os.environ, ANSIBLE_NOCOLOR='1', ANSIBLE_LOCALHOST_WARNING='false',
               ANSIBLE_INVENTORY_UNPARSED_WARNING='false', ANSIBLE_PYTHON_INTERPRETER=sys.executable,
               **(extra_env or {}))
    cmd = [os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'),
           os.path.join(REPO, 'playbooks', 'report.yml'), '-e', '@%s' % path] + (['--check'] if check else [])
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, check=False, cwd=str(tmp_path))
    return proc.returncode, proc.stdout + proc.stderr


def gpus_of(core, names):
    return sum(int((core.read_node(n).status.allocatable or {}).get(GPU, '0')) for n in names)


def gpu_node_names(core):
    """The nodes the testbed gave GPUs (its own annotation, not what the collection reads)."""
    return sorted(n.metadata.name for n in core.list_node().items
                  if int((n.metadata.annotations or {}).get('gpusim.gpuops.dev/gpus', '0')) > 0)


@pytest.fixture(scope='module')
def a100_ready(testbed, core):
    wait_until('GFD labels on %s' % A100,
               lambda: all((core.read_node(n).metadata.labels or {}).get('nvidia.com/gpu.product') for n in A100), 180)


def real_rollout(testbed, core, namespace):
    """all-1g.5gb on both A100 nodes, one at a time, with a GPU pod to evict on a100-0: the module's
    result, checked to carry a timeline (the engine records one per node)."""
    core.create_namespaced_pod(namespace, gpu_pod('train', 'a100-0'))
    task = {'name': 'rollout', 'register': 'r', 'ignore_errors': True, 'gpuops.gpu.mig_rollout': {
        'assignments': [{'nodes': A100, 'config': 'all-1g.5gb'}], 'max_unavailable': 1,
        'operator_namespace': 'gpu-operator', 'poll_interval': 0.3, 'verify_timeout': 60, 'state_timeout': 60}}
    rc, results, raw = run_play(testbed.kubeconfig, [task])
    result = results.get('rollout') or {}
    assert rc == 0 and not result.get('failed') and result.get('changed'), raw[-3000:]
    missing = dict((e['node'], sorted(set(EVENTS) - set(e.get('timeline') or {})))
                   for e in result['nodes'] if set(EVENTS) - set(e.get('timeline') or {}) - {'drained'})
    if missing:
        pytest.fail('the mig_rollout result has no complete node timeline (events missing: %s); the report '
                    'timeline needs the engine to record nodes[].timeline' % missing)
    return result


def test_html_report_of_a_real_rollout(testbed, core, a100_ready, namespace, tmp_path):
    chromium()
    gpu_nodes = gpu_node_names(core)
    gpus_before = gpus_of(core, A100)
    rc, out = report_playbook(testbed.kubeconfig, {'gpuops_report_dir': 'before'}, tmp_path)
    assert rc == 0, out[-4000:]
    assert os.path.realpath(str(tmp_path / 'before' / 'fleet.json')) in out

    rollout = real_rollout(testbed, core, namespace)
    gpus_after = gpus_of(core, A100)
    assert gpus_after > gpus_before  # 8 GPUs become 56 MIG devices per node (single strategy)

    rc, out = report_playbook(testbed.kubeconfig, {
        'gpuops_report_dir': 'after', 'gpuops_report_title': TITLE,
        'gpuops_report_before': 'before/fleet.json', 'gpuops_report_rollout': rollout}, tmp_path)
    assert rc == 0, out[-4000:]
    report = tmp_path / 'after'
    assert sorted(p.name for p in report.iterdir()) == ['fleet-report.html', 'fleet.csv', 'fleet.json']
    assert all(oct(p.stat().st_mode & 0o777) == '0o644' for p in report.iterdir())
    assert 'NODE ' in out  # the text table is still printed

    dom = Dom(browser(tmp_path, '--dump-dom', (report / 'fleet-report.html').as_uri()))
    check_chart(dom, json.loads((report / 'fleet.json').read_text()), gpus_before, gpus_after)
    check_tables(dom, gpu_nodes, report)
    check_timeline(dom, rollout)
    check_screenshot(tmp_path, report)


def check_chart(dom, data, gpus_before, gpus_after):
    pairs = set((n.get('product') or 'unknown', r) for fleet in (data, data['before'])
                for n in fleet['nodes'] for r in n.get('allocatable') or {})
    bars = dom.find('rect', 'capacity-chart', 'bar')
    assert len(bars) == 2 * len(pairs), [b['attrs'] for b in bars]
    assert len(dom.find('rect', 'capacity-chart', 'bar-before')) == len(pairs)
    a100 = dict((b['attrs']['class'].split()[-1], int(b['attrs']['data-value'])) for b in bars
                if b['attrs']['data-product'] == 'NVIDIA-A100-SXM4-40GB' and b['attrs']['data-resource'] == 'gpu')
    assert a100 == {'bar-before': gpus_before, 'bar-after': gpus_after}
    widths = dict((b['attrs']['class'].split()[-1], float(b['attrs']['width'])) for b in bars
                  if b['attrs']['data-product'] == 'NVIDIA-A100-SXM4-40GB' and b['attrs']['data-resource'] == 'gpu')
    assert widths['bar-after'] > widths['bar-before'] > 0
    texts = [t['text'] for t in dom.find('text', 'capacity-chart')]
    assert '%d (+%d)' % (gpus_after, gpus_after - gpus_before) in texts


def check_tables(dom, gpu_nodes, report):
    rows = [tr for tr in dom.find('tr', 'fleet-table') if tr['parents'][-1]['tag'] == 'tbody']
    names = [dom_cells(dom, tr)[0] for tr in rows]
    assert names == gpu_nodes
    assert [line.split(',')[0] for line in (report / 'fleet.csv').read_text().splitlines()] == ['NODE'] + gpu_nodes
    assert [h['text'] for h in dom.find('th', 'fleet-table')][:3] == ['NODE', 'PRODUCT', 'GPUS']
    assert dom.find('h1')[0]['text'] == TITLE  # escaped in the file ('&amp;'), text again in the DOM


def dom_cells(dom, tr):
    return [e['text'] for e in dom.elements if e['tag'] == 'td' and e['parents'] and e['parents'][-1] is tr]


def check_timeline(dom, rollout):
    rows = dom.find('g', 'rollout-timeline', 'timeline-row')
    assert [g['attrs']['data-node'] for g in rows] == A100  # one batch after the other
    segments = dom.find('rect', 'rollout-timeline', 'segment')
    by_node = dict((name, [s for s in segments if s['attrs']['data-node'] == name]) for name in A100)
    a100_0 = [s['attrs']['data-event'] for s in by_node['a100-0']]
    assert a100_0 == EVENTS, a100_0  # its pod was evicted: it went through the drain
    a100_1 = [s['attrs']['data-event'] for s in by_node['a100-1']]
    assert a100_1 in (EVENTS, [e for e in EVENTS if e != 'drained']), a100_1  # no pod: drain may be skipped
    first_end = max(float(s['attrs']['x']) + float(s['attrs']['width']) for s in by_node['a100-0'])
    assert min(float(s['attrs']['x']) for s in by_node['a100-1']) >= first_end - 1.0
    table = [tr for tr in dom.find('tr', 'rollout-table') if tr['parents'][-1]['tag'] == 'tbody']
    cells = dict((dom_cells(dom, tr)[0], dom_cells(dom, tr)) for tr in table)
    assert sorted(cells) == A100
    assert cells['a100-0'][3] == 'done' and cells['a100-0'][5] == '1'   # result, evicted pods
    assert [e['node'] for e in rollout['nodes']] and all(e['phase'] == 'done' for e in rollout['nodes'])


def check_screenshot(tmp_path, report):
    screenshot(tmp_path, report / 'fleet-report.html', 'GPUOPS_REPORT_SCREENSHOT')


def test_check_mode_still_writes_the_files(testbed, a100_ready, tmp_path):
    rc, out = report_playbook(testbed.kubeconfig, {'gpuops_report_dir': 'checked'}, tmp_path, check=True)
    assert rc == 0, out[-4000:]
    data = json.loads((tmp_path / 'checked' / 'fleet.json').read_text())
    assert data['nodes'] and data['before'] is None and data['rollout'] is None
    assert (tmp_path / 'checked' / 'fleet-report.html').read_text().startswith('<!DOCTYPE html>')


def test_bad_report_variables_fail_before_reading(testbed, tmp_path):
    rc, out = report_playbook(testbed.kubeconfig, {'gpuops_report_dir': 'x', 'gpuops_report_before': 'nope.json'},
                              tmp_path)
    assert rc != 0 and 'no such file on the controller: nope.json' in out, out[-3000:]
    assert 'TASK [Read the GPU nodes]' not in out and not (tmp_path / 'x').exists()


FILES = ['fleet-report.html', 'fleet.csv', 'fleet.json']
PUBLISH_TASK = 'TASK [Write fleet-report.html, fleet.csv and fleet.json into the ConfigMap]'


def recap_changed(out):
    return [int(n) for n in re.findall(r'changed=(\d+)', out.split('PLAY RECAP')[-1])]


def config_map(core, namespace, name):
    found = [c for c in core.list_namespaced_config_map(namespace).items if c.metadata.name == name]
    return found[0] if found else None


def test_report_published_into_a_configmap(testbed, core, a100_ready, namespace, tmp_path):
    target = '%s/gpuops-fleet' % namespace
    stats = {'ANSIBLE_SHOW_CUSTOM_STATS': '1'}
    rc, out = report_playbook(testbed.kubeconfig, {'gpuops_report_publish_configmap': target}, tmp_path, check=True)
    assert rc == 0, out[-4000:]
    assert 'Would write ConfigMap %s: fleet-report.html, fleet.csv, fleet.json' % target in out
    assert config_map(core, namespace, 'gpuops-fleet') is None

    variables = {'gpuops_report_publish_configmap': target, 'gpuops_report_dir': 'pub'}
    rc, out = report_playbook(testbed.kubeconfig, variables, tmp_path, extra_env=stats)
    assert rc == 0, out[-4000:]
    written = config_map(core, namespace, 'gpuops-fleet')
    assert written.metadata.labels['app.kubernetes.io/managed-by'] == 'gpuops.gpu'
    assert written.data == dict((f, (tmp_path / 'pub' / f).read_text()) for f in FILES)
    assert json.loads(written.data['fleet.json'])['nodes']
    assert 'CUSTOM STATS' in out and '"published": "configmap/%s"' % target in out
    assert '"nodes": %d' % len(json.loads(written.data['fleet.json'])['nodes']) in out
    assert '<!DOCTYPE' not in out.split('CUSTOM STATS')[-1]  # a summary, never the page

    rc, out = report_playbook(testbed.kubeconfig, variables, tmp_path)
    assert rc == 0 and recap_changed(out) == [0], out[-4000:]
    assert config_map(core, namespace, 'gpuops-fleet').metadata.resource_version == written.metadata.resource_version


def test_a_foreign_configmap_is_refused_before_any_write(testbed, core, namespace, tmp_path):
    core.create_namespaced_config_map(namespace, {'metadata': {'name': 'theirs'}, 'data': {'a': 'b'}})
    rc, out = report_playbook(testbed.kubeconfig, {'gpuops_report_publish_configmap': namespace + '/theirs'}, tmp_path)
    assert rc != 0 and 'ConfigMap %s/theirs exists and gpuops.gpu did not create it' % namespace in out, out[-3000:]
    assert PUBLISH_TASK not in out
    assert config_map(core, namespace, 'theirs').data == {'a': 'b'}
