"""gpuops.gpu.hami on the virtual GPU cluster: refuses to run next to the GPU operator's device plugin,
switches it off when allowed (the real gpu-operator then removes its device-plugin DaemonSet), labels
the HAMi nodes, installs the HAMi chart with kubernetes.core.helm (helm built by
tests/testbed/hack/install-helm.sh), idempotency, check mode, bad input.

The chart: HAMi's own charts/hami, read from the HAMi Go module in the module cache
(`go mod download github.com/Project-HAMi/HAMi@HAMI_MODULE_VERSION`). When the module proxy does
not serve that module (it answers 403 here), the tests fall back to STAND-IN: a small chart written
by these tests (not a copy of HAMi's) with the same name, the same values keys the role sets
(devicePlugin.deviceSplitCount / deviceMemoryScaling / deviceCoreScaling / migStrategy /
nvidiaNodeSelector, scheduler.defaultSchedulerPolicy) and objects named and labelled as HAMi's
chart names them (DaemonSet hami-device-plugin with component label hami-device-plugin, ConfigMap
hami-scheduler-device with device-config.yaml, Deployment hami-scheduler). It proves the role's
Helm wiring, not HAMi's chart; see docs/hami.md "Tested how".
"""

import json
import os
import subprocess

import pytest
import yaml

from ansible_run import changed_tasks, run_role
from conftest import gpu_pod, wait_until
from policy_helpers import POLICY_NAME, ensure_cluster_policy, get_policy, node_writes

HAMI_MODULE = 'github.com/Project-HAMi/HAMi'
HAMI_MODULE_VERSION = 'v0.0.0-20260821062039-4707fb02c91c'  # tag v2.10.0 (chart 2.10.0)
NAMESPACE = 'hami-system'
HAMI_NODES = ['a100-0', 'a100-1', 'h100-0', 'h100-1']  # gpuops.dev/pool=training
OTHER_NODES = ['t4-0', 'l40s-0', 'cpu-0']

STANDIN_CHART = {
    'Chart.yaml': {'apiVersion': 'v2', 'name': 'hami', 'version': '2.10.0-gpuops-standin', 'appVersion': '2.10.0',
                   'description': 'gpuops.gpu test stand-in for the HAMi chart (values interface only)'},
    'values.yaml': {
        'resourceName': 'nvidia.com/gpu', 'resourceMem': 'nvidia.com/gpumem', 'resourceCores': 'nvidia.com/gpucores',
        'schedulerName': 'hami-scheduler',
        'scheduler': {'defaultSchedulerPolicy': {'nodeSchedulerPolicy': 'binpack', 'gpuSchedulerPolicy': 'spread'}},
        'devicePlugin': {'enabled': True, 'deviceSplitCount': 10, 'deviceMemoryScaling': 1, 'deviceCoreScaling': 1,
                         'migStrategy': 'none', 'runtimeClassName': '', 'nvidiaNodeSelector': {'gpu': 'on'},
                         'tolerations': []}},
    'templates/device-configmap.yaml': '''apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-scheduler-device
  labels: {app.kubernetes.io/component: hami-scheduler}
data:
  device-config.yaml: |-
    nvidia:
      resourceCountName: {{ .Values.resourceName }}
      resourceMemoryName: {{ .Values.resourceMem }}
      resourceCoreName: {{ .Values.resourceCores }}
      deviceSplitCount: {{ .Values.devicePlugin.deviceSplitCount }}
      deviceMemoryScaling: {{ .Values.devicePlugin.deviceMemoryScaling }}
      deviceCoreScaling: {{ .Values.devicePlugin.deviceCoreScaling }}
''',
    'templates/scheduler.yaml': '''apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-scheduler
  labels: {app.kubernetes.io/component: hami-scheduler}
spec:
  replicas: 1
  selector: {matchLabels: {app.kubernetes.io/component: hami-scheduler}}
  template:
    metadata: {labels: {app.kubernetes.io/component: hami-scheduler}}
    spec:
      tolerations: [{operator: Exists}]
      containers:
        - name: vgpu-scheduler-extender
          image: projecthami/hami:v2.10.0
          command: [scheduler, --scheduler-name={{ .Values.schedulerName }},
                    --node-scheduler-policy={{ .Values.scheduler.defaultSchedulerPolicy.nodeSchedulerPolicy }},
                    --gpu-scheduler-policy={{ .Values.scheduler.defaultSchedulerPolicy.gpuSchedulerPolicy }}]
''',
    'templates/device-plugin.yaml': '''{{- if .Values.devicePlugin.enabled }}
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: {{ .Release.Name }}-device-plugin
  labels: {app.kubernetes.io/component: hami-device-plugin}
spec:
  selector: {matchLabels: {app.kubernetes.io/component: hami-device-plugin}}
  template:
    metadata: {labels: {app.kubernetes.io/component: hami-device-plugin, hami.io/webhook: ignore}}
    spec:
      {{- if .Values.devicePlugin.runtimeClassName }}
      runtimeClassName: {{ .Values.devicePlugin.runtimeClassName }}
      {{- end }}
      nodeSelector: {{ toYaml .Values.devicePlugin.nvidiaNodeSelector | nindent 8 }}
      tolerations: [{operator: Exists}]
      containers:
        - name: device-plugin
          image: projecthami/hami:v2.10.0
          command: [nvidia-device-plugin, --mig-strategy={{ .Values.devicePlugin.migStrategy }}]
{{- end }}
''',
}


def real_hami_chart():
    """(chart dir or None, why not)."""
    proc = subprocess.run(['go', 'mod', 'download', '-json', '%s@%s' % (HAMI_MODULE, HAMI_MODULE_VERSION)],
                          cwd='/', stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=False,
                          env=dict(os.environ, GOFLAGS='', GOTOOLCHAIN='local'))
    try:
        info = json.loads(proc.stdout)
    except ValueError:
        return None, (proc.stderr or proc.stdout).strip()
    chart = os.path.join(info.get('Dir') or '/nonexistent', 'charts', 'hami')
    if info.get('Error') or not os.path.isfile(os.path.join(chart, 'Chart.yaml')):
        return None, info.get('Error') or 'no charts/hami in %s' % info.get('Dir')
    return chart, None


@pytest.fixture(scope='module')
def chart(tmp_path_factory):
    real, why = real_hami_chart()
    if real:
        return real
    print('HAMi chart from the Go module unavailable (%s); using the stand-in chart' % why)
    root = tmp_path_factory.mktemp('chart') / 'hami'
    for name, content in STANDIN_CHART.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content if isinstance(content, str) else yaml.safe_dump(content))
    return str(root)


@pytest.fixture(scope='module', autouse=True)
def policy_ready(custom, core):
    ensure_cluster_policy(custom)
    wait_until('GFD labels', lambda: all((core.read_node(n).metadata.labels or {}).get('nvidia.com/gpu.product')
                                         for n in HAMI_NODES), 120)


def base_vars(chart, helm, **extra):
    variables = {'hami_chart_ref': chart, 'hami_helm_binary': helm, 'hami_namespace': NAMESPACE,
                 'hami_node_selector': 'gpuops.dev/pool=training', 'hami_device_split_count': 4,
                 'hami_device_memory_scaling': 1.5, 'hami_wait_timeout': 120}
    variables.update(extra)
    return variables


def snapshot(core, custom):
    """What the role may write: the ClusterPolicy spec, node labels and cordons, the release Secrets."""
    nodes = node_writes(core)
    releases = sorted(s.metadata.name for s in core.list_secret_for_all_namespaces(
        label_selector='owner=helm').items)
    return {'policy': get_policy(custom)['spec'], 'nodes': nodes, 'releases': releases}


def node_labels(core, name):
    return core.read_node(name).metadata.labels or {}


# ---------------------------------------------------------------------------------------- tests

def test_refuses_while_the_operator_device_plugin_is_enabled(testbed, core, custom, chart, helm):
    before = snapshot(core, custom)
    rc, results, raw = run_role(testbed.kubeconfig, 'hami', base_vars(chart, helm))
    assert rc != 0
    assert "device plugin is still enabled in ClusterPolicy %s" % POLICY_NAME in raw, raw[-3000:]
    assert 'hami_disable_operator_device_plugin: true' in raw
    assert snapshot(core, custom) == before


BAD = [
    ({'hami_chart_ref': ''}, 'hami_chart_ref is empty'),
    ({'hami_nodes': ['a100-0', 'nope-1']}, 'node(s) not found: nope-1'),
    ({'hami_device_split_count': 0}, 'hami_device_split_count must be at least 1'),
    ({'hami_node_label': {'gpu': True}}, 'must be strings'),
    ({'hami_helm_binary': '/nonexistent/helm'}, '/nonexistent/helm'),
]


@pytest.mark.parametrize('extra,fragment', BAD)
def test_bad_input_fails_before_writing(testbed, core, custom, chart, helm, extra, fragment):
    before = snapshot(core, custom)
    variables = base_vars(chart, helm, hami_disable_operator_device_plugin=True, **extra)
    rc, results, raw = run_role(testbed.kubeconfig, 'hami', variables)
    assert rc != 0
    assert fragment in raw, raw[-3000:]
    assert snapshot(core, custom) == before


def test_check_mode_writes_nothing(testbed, core, custom, chart, helm):
    before = snapshot(core, custom)
    variables = base_vars(chart, helm, hami_disable_operator_device_plugin=True)
    rc, results, raw = run_role(testbed.kubeconfig, 'hami', variables, check=True)
    assert rc == 0, raw[-3000:]
    assert results['present | Install HAMi']['changed'] is True
    assert results["present | Switch the GPU operator's device plugin off"]['changed'] is True
    assert snapshot(core, custom) == before


def test_install_then_idempotent(testbed, core, custom, apps, chart, helm):
    variables = base_vars(chart, helm, hami_disable_operator_device_plugin=True)
    rc, results, raw = run_role(testbed.kubeconfig, 'hami', variables)
    assert rc == 0, raw[-4000:]
    # the operator's device plugin is off and the real gpu-operator removed its DaemonSet
    assert get_policy(custom)['spec']['devicePlugin']['enabled'] is False
    ns = testbed.config['cluster']['operator_namespace']
    wait_until('operator device-plugin DaemonSet removed', lambda: 'nvidia-device-plugin-daemonset' not in [
        d.metadata.name for d in apps.list_namespaced_daemon_set(ns).items], 60)
    # only the selected nodes carry gpu=on
    for name in HAMI_NODES:
        assert node_labels(core, name).get('gpu') == 'on', name
    for name in OTHER_NODES:
        assert 'gpu' not in node_labels(core, name), name
    # the release the apiserver holds, with the values the role set
    status = json.loads(subprocess.run([helm, 'status', 'hami', '-n', NAMESPACE, '-o', 'json'], check=True,
                                       env=dict(os.environ, KUBECONFIG=testbed.kubeconfig),
                                       stdout=subprocess.PIPE, text=True).stdout)
    assert status['info']['status'] == 'deployed'
    values = json.loads(subprocess.run([helm, 'get', 'values', 'hami', '-n', NAMESPACE, '-o', 'json'], check=True,
                                       env=dict(os.environ, KUBECONFIG=testbed.kubeconfig),
                                       stdout=subprocess.PIPE, text=True).stdout)
    assert values['devicePlugin']['deviceSplitCount'] == 4
    assert values['devicePlugin']['deviceMemoryScaling'] == 1.5
    assert values['devicePlugin']['nvidiaNodeSelector'] == {'gpu': 'on'}
    assert values['scheduler']['defaultSchedulerPolicy'] == {'nodeSchedulerPolicy': 'binpack',
                                                             'gpuSchedulerPolicy': 'spread'}
    device_config = yaml.safe_load(core.read_namespaced_config_map('hami-scheduler-device', NAMESPACE)
                                   .data['device-config.yaml'])['nvidia']
    assert device_config['deviceSplitCount'] == 4 and device_config['deviceMemoryScaling'] == 1.5
    plugin = apps.read_namespaced_daemon_set('hami-device-plugin', NAMESPACE)
    assert plugin.spec.template.spec.node_selector == {'gpu': 'on'}
    pods = core.list_namespaced_pod(NAMESPACE, label_selector='app.kubernetes.io/component=hami-device-plugin').items
    assert sorted(p.spec.node_name for p in pods if p.status.phase == 'Running') == sorted(HAMI_NODES)
    assert apps.read_namespaced_deployment('hami-scheduler', NAMESPACE).spec.replicas == 1

    before = snapshot(core, custom)
    rc, results, raw = run_role(testbed.kubeconfig, 'hami', variables)
    assert rc == 0, raw[-3000:]
    assert changed_tasks(results) == [], changed_tasks(results)
    assert snapshot(core, custom) == before
    rc, results, raw = run_role(testbed.kubeconfig, 'hami', variables, check=True)
    assert rc == 0 and changed_tasks(results) == [], raw[-3000:]
    # with the operator's plugin off, no flag is needed any more
    rc, results, raw = run_role(testbed.kubeconfig, 'hami', base_vars(chart, helm))
    assert rc == 0 and changed_tasks(results) == [], raw[-3000:]


def test_a_value_change_upgrades_the_release(testbed, core, custom, chart, helm):
    policy_spec = get_policy(custom)['spec']
    rc, results, raw = run_role(testbed.kubeconfig, 'hami', base_vars(chart, helm, hami_device_split_count=8))
    assert rc == 0, raw[-3000:]
    assert changed_tasks(results) == ['present | Install HAMi'], changed_tasks(results)
    device_config = yaml.safe_load(core.read_namespaced_config_map('hami-scheduler-device', NAMESPACE)
                                   .data['device-config.yaml'])['nvidia']
    assert device_config['deviceSplitCount'] == 8
    assert get_policy(custom)['spec'] == policy_spec


# ---------------------------------------------------------------------------------------- removal

def hami_pod(core, name, node, resources):
    """A pod bound to ``node`` (HAMi's scheduler extender is not running here) that KWOK runs."""
    core.create_namespaced_pod('default', gpu_pod(name, node, resources))
    wait_until('pod %s' % name, lambda: core.read_namespaced_pod(name, 'default').status.phase == 'Running', 60)


def delete_pod(core, name):
    core.delete_namespaced_pod(name, 'default', grace_period_seconds=0)
    wait_until('pod %s gone' % name,
               lambda: name not in [p.metadata.name for p in core.list_namespaced_pod('default').items], 60)


def releases(core):
    return sorted(s.metadata.name for s in core.list_namespaced_secret(NAMESPACE, label_selector='owner=helm').items)


def test_removal_refused_while_pods_use_hami(testbed, core, custom, chart, helm):
    hami_pod(core, 'vgpu-task', 'a100-1', {'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '3000'})
    try:
        before = snapshot(core, custom)
        rc, results, raw = run_role(testbed.kubeconfig, 'hami', base_vars(chart, helm, hami_state='absent'))
        assert rc != 0
        assert 'pods still use HAMi (default/vgpu-task on a100-1)' in raw, raw[-3000:]
        assert 'hami_remove_with_pods: true' in raw
        assert snapshot(core, custom) == before
    finally:
        delete_pod(core, 'vgpu-task')


def test_removal_check_mode_writes_nothing(testbed, core, custom, chart, helm):
    before = snapshot(core, custom)
    rc, results, raw = run_role(testbed.kubeconfig, 'hami', base_vars(chart, helm, hami_state='absent'), check=True)
    assert rc == 0, raw[-3000:]
    assert changed_tasks(results) == ["absent | Switch the GPU operator's device plugin back on",
                                      'absent | Take the HAMi labels off the nodes', 'absent | Uninstall HAMi'], \
        changed_tasks(results)
    assert snapshot(core, custom) == before


def test_remove_then_idempotent(testbed, core, custom, apps, chart, helm):
    # a label somebody else set on a node the role did not label stays
    core.patch_node('t4-0', {'metadata': {'labels': {'gpu': 'on'}}})
    try:
        rc, results, raw = run_role(testbed.kubeconfig, 'hami', base_vars(chart, helm, hami_state='absent'))
        assert rc == 0, raw[-4000:]
        assert releases(core) == []
        assert apps.list_namespaced_daemon_set(NAMESPACE).items == []
        for name in HAMI_NODES:
            assert 'gpu' not in node_labels(core, name), name
            annotations = core.read_node(name).metadata.annotations or {}
            assert not [k for k in annotations if k.startswith('gpuops.gpu/hami')], annotations
        assert node_labels(core, 't4-0').get('gpu') == 'on'
        # the operator's device plugin is back: the real gpu-operator recreates its DaemonSet, KWOK runs the pods
        assert get_policy(custom)['spec']['devicePlugin']['enabled'] is True
        ns = testbed.config['cluster']['operator_namespace']
        running = sorted(p.spec.node_name for p in core.list_namespaced_pod(
            ns, label_selector='app=nvidia-device-plugin-daemonset').items if p.status.phase == 'Running')
        assert set(HAMI_NODES) <= set(running), running

        before = snapshot(core, custom)
        rc, results, raw = run_role(testbed.kubeconfig, 'hami', base_vars(chart, helm, hami_state='absent'))
        assert rc == 0, raw[-3000:]
        assert changed_tasks(results) == [], changed_tasks(results)
        assert snapshot(core, custom) == before
    finally:
        core.patch_node('t4-0', {'metadata': {'labels': {'gpu': None}}})


def test_reset_removes_hami(testbed, core, custom, chart, helm):
    variables = base_vars(chart, helm, hami_disable_operator_device_plugin=True)
    rc, results, raw = run_role(testbed.kubeconfig, 'hami', variables)
    assert rc == 0, raw[-3000:]
    assert releases(core) and node_labels(core, HAMI_NODES[0]).get('gpu') == 'on'
    variables = {'reset_operator_namespace': testbed.config['cluster']['operator_namespace'],
                 'reset_helm_binary': helm, 'reset_verify_timeout': 120}
    rc, results, raw = run_role(testbed.kubeconfig, 'reset', variables)
    assert rc == 0, raw[-4000:]
    assert releases(core) == []
    assert all('gpu' not in node_labels(core, n) for n in HAMI_NODES)
    assert get_policy(custom)['spec']['devicePlugin']['enabled'] is True
    before = snapshot(core, custom)
    rc, results, raw = run_role(testbed.kubeconfig, 'reset', variables)
    assert rc == 0, raw[-3000:]
    assert changed_tasks(results) == [], changed_tasks(results)
    assert snapshot(core, custom) == before
