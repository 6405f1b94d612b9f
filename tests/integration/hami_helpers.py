"""What the HAMi integration tests share (test_hami.py runs the role, test_awx_hami_job.py the AWX job template):
the nodes and namespace, HAMi's chart, the cluster ready for HAMi, and the snapshot of what the role writes.

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

import yaml

from conftest import wait_until
from policy_helpers import ensure_cluster_policy, get_policy, node_writes

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


def hami_chart(tmp_path_factory):
    """HAMi's chart from its Go module, else the stand-in chart written under ``tmp_path_factory``."""
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


def cluster_ready_for_hami(custom, core):
    """What an install leaves (the example ClusterPolicy, ready) and GFD's labels on the HAMi nodes."""
    ensure_cluster_policy(custom)
    wait_until('GFD labels', lambda: all((core.read_node(n).metadata.labels or {}).get('nvidia.com/gpu.product')
                                         for n in HAMI_NODES), 120)


def ready_chart(tmp_path_factory, custom, core):
    """hami_chart() on a cluster ready for HAMi (cluster_ready_for_hami): the ``chart`` fixture of the HAMi tests."""
    cluster_ready_for_hami(custom, core)
    return hami_chart(tmp_path_factory)


def snapshot(core, custom):
    """What the role may write: the ClusterPolicy spec, node labels and cordons, the release Secrets."""
    nodes = node_writes(core)
    releases = sorted(s.metadata.name for s in core.list_secret_for_all_namespaces(
        label_selector='owner=helm').items)
    return {'policy': get_policy(custom)['spec'], 'nodes': nodes, 'releases': releases}


def node_labels(core, name):
    return core.read_node(name).metadata.labels or {}


def releases(core):
    return sorted(s.metadata.name for s in core.list_namespaced_secret(NAMESPACE, label_selector='owner=helm').items)
