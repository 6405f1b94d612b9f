"""gpuops.gpu.monitoring on the virtual GPU cluster: the real gpu-operator turns our ClusterPolicy patch into the
DCGM exporter DaemonSet (metrics ConfigMap mounted, DCGM_EXPORTER_COLLECTORS) and the ServiceMonitor; the
PrometheusRule, console, ConsolePlugin and GrafanaDashboard objects are checked against their real CRD schemas."""

import json
import os

import pytest
import yaml

from ansible_run import changed_tasks, run_role
from cluster_policy_example import clusterpolicy_example
from conftest import wait_until
from policy_helpers import CONSOLE, CP, ensure_cluster_policy, openshift_console
from role_cases import assert_failed, failures

OP_NS = 'gpu-operator'
POLICY = 'gpu-cluster-policy'
BASE = {'monitoring_wait_timeout': 60}


def dcgm_pods(core):
    return {p.metadata.uid for p in core.list_namespaced_pod(OP_NS, label_selector='app=nvidia-dcgm-exporter').items
            if not p.metadata.deletion_timestamp}


@pytest.fixture(scope='module', autouse=True)
def openshift_like(testbed, core, custom, extensions):
    """The GPU operator installed (the ClusterPolicy of NVIDIA's OLM example, ServiceMonitor off), the namespace
    OpenShift ships for console dashboards, and the console operator's CRDs (read from the openshift/api module)."""
    policy = clusterpolicy_example(POLICY)
    policy['spec'].setdefault('dcgmExporter', {})['serviceMonitor'] = {'enabled': False}
    custom.create_cluster_custom_object(*CP, policy)
    openshift_console(testbed, core, custom, extensions, plugins=['other-plugin'])
    # ready: every operand of the policy written (the operator adds its ConfigMaps after the DCGM pods)
    ensure_cluster_policy(custom, POLICY)
    wait_until('the DCGM exporter pods of the GPU operator', lambda: dcgm_pods(core), 120, 1)


def snapshot(core, custom):
    """Everything the role may write (the operator keeps writing the ClusterPolicy status: compare the spec)."""
    cms = sorted('%s/%s' % (cm.metadata.namespace, cm.metadata.name)
                 for ns in (OP_NS, 'openshift-config-managed') for cm in core.list_namespaced_config_map(ns).items)
    rules = [r['metadata']['name'] for r in custom.list_namespaced_custom_object(
        'monitoring.coreos.com', 'v1', OP_NS, 'prometheusrules')['items']]
    return (json.dumps(custom.get_cluster_custom_object(*CP, POLICY)['spec'], sort_keys=True),
            core.read_namespace(OP_NS).metadata.labels, cms, rules,
            custom.get_cluster_custom_object(*CONSOLE, 'cluster')['spec'].get('plugins'))


def test_bad_inputs_fail_before_writing(testbed, core, custom):
    before = snapshot(core, custom)
    cases = {
        'help-with-comma': {'monitoring_dcgm_metrics_extra': [
            {'field': 'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL', 'type': 'counter', 'help': 'ECC errors, double bit'}]},
        'alert-field-missing': {'monitoring_dcgm_metrics': [
            {'field': 'DCGM_FI_DEV_GPU_TEMP', 'type': 'gauge', 'help': 'Temperature.'}]},
        'no-grafana-namespace': {'monitoring_platform': 'kubernetes'},
        'no-such-cluster-policy': {'monitoring_cluster_policy_name': 'not-there'},
        'console-plugin-not-installed': {'monitoring_console_plugin': True},
    }
    got, raw = failures(testbed.kubeconfig, 'monitoring', BASE, cases)
    expected = {'help-with-comma': 'must not contain a comma',
                'alert-field-missing': 'DCGM_FI_DEV_XID_ERRORS is missing from the metric list',
                'no-grafana-namespace': 'the Grafana namespace monitoring does not exist',
                'no-such-cluster-policy': 'exactly one ClusterPolicy is needed (found 0)',
                'console-plugin-not-installed': 'the ConsolePlugin console-plugin-nvidia-gpu does not exist'}
    assert_failed(got, raw, expected, 'Check the inputs before')
    assert snapshot(core, custom) == before


def test_check_mode_writes_nothing(testbed, core, custom):
    before = snapshot(core, custom)
    rc, results, raw = run_role(testbed.kubeconfig, 'monitoring', BASE, check=True)
    assert rc == 0, raw[-3000:]
    assert results['Point the ClusterPolicy DCGM exporter at the metrics and the ServiceMonitor']['changed'] is True
    assert results['Write the GPU dashboard for the OpenShift console']['changed'] is True
    assert snapshot(core, custom) == before


def test_apply_then_idempotent(testbed, core, custom, apps):
    rc, results, raw = run_role(testbed.kubeconfig, 'monitoring', BASE)
    assert rc == 0, raw[-3000:]
    assert core.read_namespace(OP_NS).metadata.labels['openshift.io/cluster-monitoring'] == 'true'
    csv = core.read_namespaced_config_map('gpuops-dcgm-metrics', OP_NS).data['dcgm-metrics.csv']
    lines = [line for line in csv.splitlines() if line and not line.startswith('#')]
    assert lines[0] == 'DCGM_FI_PROF_GR_ENGINE_ACTIVE, gauge, Ratio of time the graphics engine is active (works per MIG instance).'
    assert all(len(line.split(',')) == 3 for line in lines)
    assert 'DCGM_FI_PROF_PIPE_FP64_ACTIVE, gauge, Ratio of cycles the FP64 pipe is active.' in lines
    spec = custom.get_cluster_custom_object(*CP, POLICY)['spec']['dcgmExporter']
    assert spec['enabled'] is True and spec['config'] == {'name': 'gpuops-dcgm-metrics'}
    assert spec['serviceMonitor'] == {'enabled': True, 'interval': '15s'}
    # the real operator reconciled it: ServiceMonitor, metrics file mounted into the exporter
    monitor = custom.get_namespaced_custom_object('monitoring.coreos.com', 'v1', OP_NS, 'servicemonitors',
                                                  'nvidia-dcgm-exporter')
    assert monitor['spec']['endpoints'][0]['interval'] == '15s'

    def exporter_uses_our_metrics():
        ds = apps.read_namespaced_daemon_set('nvidia-dcgm-exporter', OP_NS).spec.template.spec
        env = {e.name: e.value for e in ds.containers[0].env or []}
        volumes = {v.name: v.config_map.name for v in ds.volumes or [] if v.config_map}
        return env.get('DCGM_EXPORTER_COLLECTORS') == '/etc/dcgm-exporter/dcgm-metrics.csv' \
            and volumes.get('metrics-config') == 'gpuops-dcgm-metrics'
    wait_until('the operator to mount gpuops-dcgm-metrics into the DCGM exporter', exporter_uses_our_metrics, 60)
    rule = custom.get_namespaced_custom_object('monitoring.coreos.com', 'v1', OP_NS, 'prometheusrules', 'gpuops-gpu-alerts')
    alerts = {r['alert']: r for g in rule['spec']['groups'] for r in g['rules']}
    # applied with every alert; what the alerts do is evaluated by promtool in test_alerts.py
    assert sorted(alerts) == ['GPUMIGConfigFailed', 'GPUMIGConfigStuck', 'GPUMemoryAlmostFull', 'GPUMetricsDown',
                              'GPUTemperatureHigh', 'GPUUnavailable', 'GPUVGPUUnlicensed', 'GPUXidError',
                              'GPUXidErrorCritical']
    assert rule['metadata']['labels'] == {'app.kubernetes.io/managed-by': 'gpuops.gpu'}
    dashboard = core.read_namespaced_config_map('gpuops-gpu-dashboard', 'openshift-config-managed')
    assert dashboard.metadata.labels['console.openshift.io/dashboard'] == 'true'
    assert dashboard.metadata.labels['console.openshift.io/odc-dashboard'] == 'true'
    board = json.loads(dashboard.data['gpuops-gpu-dashboard.json'])
    assert board['uid'] == 'gpuops-gpu-fleet'
    exprs = ' '.join(t['expr'] for p in board['panels'] for t in p.get('targets', []))
    assert 'DCGM_FI_PROF_GR_ENGINE_ACTIVE' in exprs and 'DCGM_FI_DEV_XID_ERRORS' in exprs

    before = snapshot(core, custom)
    rc, results, raw = run_role(testbed.kubeconfig, 'monitoring', BASE)
    assert rc == 0, raw[-3000:]
    assert changed_tasks(results) == [], changed_tasks(results)
    assert snapshot(core, custom) == before


def test_metric_change_restarts_exporter_and_console_plugin_enabled(testbed, core, custom):
    custom.create_cluster_custom_object('console.openshift.io', 'v1', 'consoleplugins', {
        'apiVersion': 'console.openshift.io/v1', 'kind': 'ConsolePlugin',
        'metadata': {'name': 'console-plugin-nvidia-gpu'},
        'spec': {'displayName': 'NVIDIA GPU', 'backend': {'type': 'Service', 'service': {
            'name': 'console-plugin-nvidia-gpu', 'namespace': OP_NS, 'port': 9443, 'basePath': '/'}}}})
    pods_before = dcgm_pods(core)
    assert pods_before
    extra = [{'field': 'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL', 'type': 'counter', 'help': 'Double-bit volatile ECC errors.'}]
    rc, results, raw = run_role(testbed.kubeconfig, 'monitoring',
                                dict(BASE, monitoring_console_plugin=True, monitoring_dcgm_metrics_extra=extra))
    assert rc == 0, raw[-3000:]
    assert results['Restart the DCGM exporter pods to load the new metric list']['changed'] is True
    csv = core.read_namespaced_config_map('gpuops-dcgm-metrics', OP_NS).data['dcgm-metrics.csv']
    assert csv.rstrip().endswith('DCGM_FI_DEV_ECC_DBE_VOL_TOTAL, counter, Double-bit volatile ECC errors.')
    wait_until('new DCGM exporter pods', lambda: dcgm_pods(core) and not (dcgm_pods(core) & pods_before), 60)
    assert custom.get_cluster_custom_object(*CONSOLE, 'cluster')['spec']['plugins'] == [
        'other-plugin', 'console-plugin-nvidia-gpu']


def test_plain_kubernetes_grafana_dashboard(testbed, core, custom):
    core.create_namespace({'metadata': {'name': 'monitoring'}})
    rc, results, raw = run_role(testbed.kubeconfig, 'monitoring', dict(
        BASE, monitoring_platform='kubernetes',
        monitoring_service_monitor_additional_labels={'release': 'kube-prometheus-stack'},
        monitoring_alert_rule_labels={'release': 'kube-prometheus-stack'}))
    assert rc == 0, raw[-3000:]
    assert results['Write the GPU dashboard for the OpenShift console'].get('skipped') is True
    board = core.read_namespaced_config_map('gpuops-gpu-dashboard', 'monitoring')
    assert board.metadata.labels['grafana_dashboard'] == '1'
    assert json.loads(board.data['gpuops-gpu-dashboard.json'])['title'] == 'NVIDIA GPUs (gpuops.gpu)'
    rule = custom.get_namespaced_custom_object('monitoring.coreos.com', 'v1', OP_NS, 'prometheusrules', 'gpuops-gpu-alerts')
    assert rule['metadata']['labels']['release'] == 'kube-prometheus-stack'
    wait_until('the operator to label the ServiceMonitor for kube-prometheus-stack', lambda: custom.get_namespaced_custom_object(
        'monitoring.coreos.com', 'v1', OP_NS, 'servicemonitors', 'nvidia-dcgm-exporter')['metadata'].get(
        'labels', {}).get('release') == 'kube-prometheus-stack', 60)


GRAFANA_DASHBOARDS = ('grafana.integreatly.org', 'v1beta1', 'grafanadashboards')
GRAFANA_CRD = 'config/crd/bases/grafana.integreatly.org_grafanadashboards.yaml'
GRAFANA_TASK = 'Write the GPU dashboard for the Grafana Operator (GrafanaDashboard)'


def grafana_dashboards(custom):
    return custom.list_namespaced_custom_object(*GRAFANA_DASHBOARDS[:2], OP_NS, GRAFANA_DASHBOARDS[2])['items']


def test_grafana_operator_dashboard(testbed, core, custom, extensions):
    """OpenShift with the Grafana Operator (its real GrafanaDashboard CRD, from the grafana-operator module):
    check mode writes nothing, then the GrafanaDashboard carries the dashboard JSON; the second run changes
    nothing; another instanceSelector (immutable) fails before any write."""
    with open(os.path.join(testbed.state()['assets']['grafana-op'], GRAFANA_CRD)) as f:
        crd = yaml.safe_load(f)
    extensions.create_custom_resource_definition(crd)
    wait_until('CRD %s established' % crd['metadata']['name'], lambda: any(
        c.type == 'Established' and c.status == 'True' for c in
        extensions.read_custom_resource_definition(crd['metadata']['name']).status.conditions or []), 30)

    rc, results, raw = run_role(testbed.kubeconfig, 'monitoring', BASE, check=True)
    assert rc == 0, raw[-3000:]
    assert results[GRAFANA_TASK]['changed'] is True
    assert grafana_dashboards(custom) == []

    rc, results, raw = run_role(testbed.kubeconfig, 'monitoring', BASE)
    assert rc == 0, raw[-3000:]
    [board] = grafana_dashboards(custom)
    assert board['metadata']['name'] == 'gpuops-gpu-dashboard'
    assert board['spec']['instanceSelector'] == {'matchLabels': {'dashboards': 'grafana'}}
    assert board['spec']['allowCrossNamespaceImport'] is True
    assert isinstance(board['spec']['json'], str)  # the dashboard JSON as text, not an object
    assert json.loads(board['spec']['json'])['uid'] == 'gpuops-gpu-fleet'

    before = snapshot(core, custom), grafana_dashboards(custom)
    rc, results, raw = run_role(testbed.kubeconfig, 'monitoring', BASE)
    assert rc == 0, raw[-3000:]
    assert changed_tasks(results) == [], changed_tasks(results)
    assert results[GRAFANA_TASK]['changed'] is False
    assert (snapshot(core, custom), grafana_dashboards(custom)) == before

    got, raw = failures(testbed.kubeconfig, 'monitoring', BASE, {'other-instances': {
        'monitoring_grafana_operator_instance_selector': {'matchLabels': {'dashboards': 'team-a'}}}})
    assert_failed(got, raw, {'other-instances': 'spec.instanceSelector cannot be changed'}, 'Check the inputs before')
    assert (snapshot(core, custom), grafana_dashboards(custom)) == before
