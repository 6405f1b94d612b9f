"""What the DRA integration tests share: the stand-in of NVIDIA's DRA driver chart, its install, and readers of
the ResourceSlices the simulated kubelet plugin publishes (tests/testbed/gpusim/agents/dra.py).

STANDIN_CHART: NVIDIA's chart (nvidia-dra-driver-gpu, kubernetes-sigs/dra-driver-nvidia-gpu v25.12.0) is not
served here as a Go module, so these tests install a small chart written by us from the upstream chart's
documented behaviour (docs/facts.md, "Dynamic Resource Allocation"): the same chart name, the kubelet-plugin
DaemonSet named and labelled as upstream names it (``<chart>-kubelet-plugin``, selector label
``<chart>-component: kubelet-plugin``) with the default node affinity on NFD's
``feature.node.kubernetes.io/pci-10de.present`` (or ``nvidia.com/gpu.present``) and the values keys
``kubeletPlugin.{nodeSelector,affinity,tolerations}``, and the DeviceClasses ``gpu.nvidia.com`` (with
``extendedResourceName: nvidia.com/gpu``) and ``mig.nvidia.com``. No controller, webhook or ComputeDomain
parts. gpusim publishes the slices where the DaemonSet's pods run. It proves what the scheduler and the
collection do with what the driver publishes, not the driver's chart (docs/testbed.md, "What the stand-ins prove").
"""

import subprocess

import yaml

from conftest import wait_until

CHART_NAME = "nvidia-dra-driver-gpu"
NAMESPACE = "nvidia-dra-driver-gpu"
DRIVER = "gpu.nvidia.com"
PLUGIN_LABEL = "%s-component=kubelet-plugin" % CHART_NAME

_SELECTOR = "{{ .Chart.Name }}-component: kubelet-plugin"
_DAEMONSET = """apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: {{ .Chart.Name }}-kubelet-plugin
  namespace: {{ .Release.Namespace }}
  labels:
    app.kubernetes.io/name: {{ .Chart.Name }}
    app.kubernetes.io/instance: {{ .Release.Name }}
spec:
  selector:
    matchLabels:
      %(sel)s
  updateStrategy:
    type: RollingUpdate
    rollingUpdate:
      maxUnavailable: "100%%"
  template:
    metadata:
      labels:
        app.kubernetes.io/name: {{ .Chart.Name }}
        app.kubernetes.io/instance: {{ .Release.Name }}
        %(sel)s
    spec:
      priorityClassName: system-node-critical
      terminationGracePeriodSeconds: 0
      containers:
      - name: gpus
        image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
        command: ["gpu-kubelet-plugin"]
      {{- with .Values.kubeletPlugin.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .Values.kubeletPlugin.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .Values.kubeletPlugin.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
""" % {"sel": _SELECTOR}
_DEVICECLASS = """{{- if .Values.resources.gpus.enabled }}
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: %(name)s
spec:
  selectors:
  - cel:
      expression: "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == '%(type)s'"
%(extra)s{{- end }}
"""


def _affinity_term(key, value):
    return {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}


STANDIN_CHART = {
    "Chart.yaml": {"apiVersion": "v2", "name": CHART_NAME, "version": "25.12.0-gpuops-standin",
                   "appVersion": "25.12.0",
                   "description": "gpuops.gpu test stand-in for NVIDIA's DRA driver chart (kubelet plugin, DeviceClasses)"},
    "values.yaml": {
        "image": {"repository": "nvidia/k8s-dra-driver-gpu", "tag": "v25.12.0"},
        "resources": {"gpus": {"enabled": True}},
        "kubeletPlugin": {
            "nodeSelector": {}, "tolerations": [],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                _affinity_term("feature.node.kubernetes.io/pci-10de.present", "true"),
                _affinity_term("nvidia.com/gpu.present", "true")]}}}}},
    "templates/kubeletplugin.yaml": _DAEMONSET,
    "templates/deviceclass-gpu.yaml": _DEVICECLASS % {
        "name": "gpu.nvidia.com", "type": "gpu", "extra": "  extendedResourceName: nvidia.com/gpu\n"},
    "templates/deviceclass-mig.yaml": _DEVICECLASS % {"name": "mig.nvidia.com", "type": "mig", "extra": ""},
}


def write_chart(root):
    """Write the stand-in chart under ``root`` (a pathlib.Path); returns its directory as a string."""
    chart = root / CHART_NAME
    for name, content in STANDIN_CHART.items():
        path = chart / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content if isinstance(content, str) else yaml.safe_dump(content))
    return str(chart)


def helm_install(helm, kubeconfig, chart, values, release=CHART_NAME, namespace=NAMESPACE):
    """``helm upgrade --install`` the chart with ``values`` (a dict); fails the test with helm's output."""
    proc = subprocess.run([helm, "upgrade", "--install", release, chart, "--namespace", namespace,
                           "--create-namespace", "--kubeconfig", kubeconfig, "--values", "-"],
                          input=yaml.safe_dump(values), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, check=False)
    assert proc.returncode == 0, proc.stdout
    return proc.stdout


def slices(custom):
    """The driver's ResourceSlices: {pool (node) name: [slice, ...]}."""
    out = {}
    for s in custom.list_cluster_custom_object("resource.k8s.io", "v1", "resourceslices")["items"]:
        if s["spec"]["driver"] == DRIVER:
            out.setdefault(s["spec"]["pool"]["name"], []).append(s)
    return out


def devices(custom, node):
    """{device name: device} of the node's pool ({} when it has none)."""
    return {d["name"]: d for s in slices(custom).get(node, []) for d in s["spec"].get("devices") or []}


def wait_pools(custom, nodes, timeout=90):
    """Wait until exactly ``nodes`` have a pool of the driver (one slice each); returns slices()."""
    want = sorted(nodes)

    def done():
        got = slices(custom)
        return got if sorted(got) == want and all(len(v) == 1 for v in got.values()) else None
    return wait_until(lambda: "pools %s (have %s)" % (want, sorted(slices(custom))), done, timeout)
