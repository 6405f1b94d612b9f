"""Install with Helm (plain Kubernetes) on the virtual GPU cluster: the nfd and gpu_operator roles
with kubernetes.core.helm, the helm CLI built from its Go module (tests/testbed/hack/install-helm.sh)
and the charts shipped inside the gpu-operator Go module (deployments/gpu-operator and its
node-feature-discovery subchart), read from the module cache. The REAL gpu-operator controller
reconciles the ClusterPolicy the chart renders, patched by cluster_policy with the overrides.

The NFD worker of the chart does not run on KWOK nodes; the PCI labels come from gpusim's
simulated nfd-worker (default config: every GPU node), so the label wait passes at once here."""

import os

import pytest

from ansible_run import run_play_stats
from cluster_policy_example import gpu_operator_module_dir
from policy_helpers import CP, DEDICATED, GPU_TOL, INSTALL_ROLES, INSTALL_VARS


@pytest.fixture(scope='module')
def chart():
    return os.path.join(gpu_operator_module_dir(), 'deployments', 'gpu-operator')


@pytest.fixture(scope='module')
def variables(helm, chart):
    return dict(
        INSTALL_VARS,
        nfd_install_method='helm',
        nfd_namespace='node-feature-discovery',
        nfd_namespace_labels={},
        nfd_helm_chart_ref=os.path.join(chart, 'charts', 'node-feature-discovery'),
        nfd_helm_binary=helm,
        gpu_operator_install_method='helm',
        gpu_operator_namespace='gpu-operator',   # where the testbed's operator runs its operands
        gpu_operator_namespace_labels={},
        gpu_operator_helm_chart_ref=chart,
        gpu_operator_helm_binary=helm,
        # NFD comes from the nfd role; the CRD upgrade hook is a Job for a real cluster
        gpu_operator_helm_values={'nfd': {'enabled': False}, 'operator': {'upgradeCRD': False}},
    )


def releases(core):
    """Helm releases as helm stores them (Secrets owner=helm), name -> latest revision."""
    out = {}
    for secret in core.list_secret_for_all_namespaces(label_selector='owner=helm').items:
        labels = secret.metadata.labels
        out[labels['name']] = max(out.get(labels['name'], 0), int(labels['version']))
    return out


def test_helm_install_then_no_change_and_check_mode(testbed, variables, core, apps, custom):

    rc, _results, _stats, raw = run_play_stats(testbed.kubeconfig, INSTALL_ROLES, vars=variables)
    assert rc == 0, raw
    assert releases(core) == {'node-feature-discovery': 1, 'gpu-operator': 1}
    worker = apps.read_namespaced_daemon_set('node-feature-discovery-worker', 'node-feature-discovery')
    assert [t.to_dict() for t in worker.spec.template.spec.tolerations] == [
        dict(DEDICATED, toleration_seconds=None), dict(GPU_TOL, value=None, toleration_seconds=None)]
    policy = custom.get_cluster_custom_object(*CP, 'cluster-policy')
    assert policy['status']['state'] == 'ready'
    assert policy['spec']['mig'] == {'strategy': 'mixed'}           # chart default single, override mixed
    assert policy['spec']['daemonsets']['tolerations'] == [DEDICATED, GPU_TOL]   # set through the chart values
    assert policy['spec']['daemonsets']['priorityClassName'] == 'system-node-critical'  # chart value kept
    rv = policy['metadata']['resourceVersion']

    rc, _results, stats, raw = run_play_stats(testbed.kubeconfig, INSTALL_ROLES, vars=variables)
    assert rc == 0 and stats.get('changed') == 0, raw

    rc, _results, stats, raw = run_play_stats(testbed.kubeconfig, INSTALL_ROLES, check=True,
                                              vars=dict(variables, gpu_operator_mig_strategy='single'))
    assert rc == 0 and stats.get('changed', 0) >= 1, raw
    assert releases(core) == {'node-feature-discovery': 1, 'gpu-operator': 1}
    policy = custom.get_cluster_custom_object(*CP, 'cluster-policy')
    assert policy['metadata']['resourceVersion'] == rv and policy['spec']['mig'] == {'strategy': 'mixed'}
