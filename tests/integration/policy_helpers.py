"""Helpers shared by the integration tests around the GPU operator: the ClusterPolicy NVIDIA ships in its
OLM bundle (read from the gpu-operator Go module at test time, never copied), created and reconciled to
ready by the real gpu-operator of the virtual GPU cluster; a device-plugin sharing config (time-slicing)
switched on the way a user of the operator would; the nfd + gpu_operator install both install tests
run (OLM and Helm) with the variables they share."""

import os
import time

import yaml

from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import CLUSTER_POLICY as CP
from ansible_run import include
from cluster_policy_example import clusterpolicy_example
from conftest import wait_until

POLICY_NAME = 'gpu-cluster-policy'
MANAGED = {'app.kubernetes.io/managed-by': 'gpuops.gpu'}
GPU_TOL = {'key': 'nvidia.com/gpu', 'operator': 'Exists', 'effect': 'NoSchedule'}
DEDICATED = {'key': 'dedicated', 'operator': 'Equal', 'value': 'gpu', 'effect': 'NoSchedule'}
INSTALL_ROLES = [include('nfd'), include('gpu_operator')]
INSTALL_VARS = {  # what the OLM and the Helm install tests share
    'nfd_gpu_node_selector': 'gpuops.dev/pool',   # the testbed's GPU node groups
    'nfd_worker_tolerations': [DEDICATED],
    'nfd_poll_interval': 1,
    'gpu_operator_mig_strategy': 'mixed',
    'gpu_operator_daemonset_tolerations': [DEDICATED],
    'gpu_operator_poll_interval': 1,
    'gpu_operator_ready_timeout': 180,
}


CONSOLE = ('operator.openshift.io', 'v1', 'consoles')
CONSOLE_CRDS = ('operator/v1/zz_generated.crd-manifests/0000_50_console_01_consoles.crd.yaml',
                'console/v1/zz_generated.crd-manifests/90_consoleplugins.crd.yaml')


def openshift_console(testbed, core, custom, extensions, plugins=None):
    """What OpenShift's console brings that the monitoring role uses: the namespace for console dashboards,
    the console operator's CRDs (read from the openshift/api module the testbed pins) and the Console
    ``cluster`` (with ``plugins`` enabled, when given)."""
    core.create_namespace({'metadata': {'name': 'openshift-config-managed'}})
    module_dir = testbed.state()['assets']['openshift-api']
    for rel in CONSOLE_CRDS:
        with open(os.path.join(module_dir, rel)) as handle:
            crd = yaml.safe_load(handle)
        extensions.create_custom_resource_definition(crd)
        wait_until('CRD %s established' % crd['metadata']['name'], lambda: any(
            c.type == 'Established' and c.status == 'True' for c in
            extensions.read_custom_resource_definition(crd['metadata']['name']).status.conditions or []), 30)
    custom.create_cluster_custom_object(*CONSOLE, {
        'apiVersion': 'operator.openshift.io/v1', 'kind': 'Console', 'metadata': {'name': 'cluster'},
        'spec': {'plugins': plugins} if plugins is not None else {}})


def get_policy(custom, name=POLICY_NAME):
    return custom.get_cluster_custom_object(*CP, name)


def ensure_cluster_policy(custom, name=POLICY_NAME, timeout=240):
    """Create the CSV example ClusterPolicy (unless there is one) and wait for state ready."""
    if not custom.list_cluster_custom_object(*CP).get('items'):
        custom.create_cluster_custom_object(*CP, clusterpolicy_example(name))
    return wait_until('ClusterPolicy %s ready' % name,
                      lambda: (get_policy(custom, name).get('status') or {}).get('state') == 'ready', timeout, 1)


def time_slicing_config(replicas):
    return yaml.safe_dump({'version': 'v1', 'sharing': {'timeSlicing': {'resources': [
        {'name': 'nvidia.com/gpu', 'replicas': replicas}]}}})


def enable_time_slicing(core, custom, namespace, nodes, replicas=4, cm_name='gpuops-device-plugin-config',
                        key='ts', labels=None):
    """Device-plugin ConfigMap with one time-slicing key, ClusterPolicy devicePlugin.config pointing at
    it, the nodes labelled nvidia.com/device-plugin.config=<key>; waits for the replicas label."""
    body = {'metadata': {'name': cm_name, 'labels': dict(MANAGED if labels is None else labels)},
            'data': {key: time_slicing_config(replicas)}}
    try:
        core.create_namespaced_config_map(namespace, body)
    except Exception:  # already there: replace its content
        core.patch_namespaced_config_map(cm_name, namespace, body)
    custom.patch_cluster_custom_object(*CP, POLICY_NAME, {'spec': {'devicePlugin': {'config': {'name': cm_name,
                                                                                               'default': ''}}}})
    for node in nodes:
        core.patch_node(node, {'metadata': {'labels': {'nvidia.com/device-plugin.config': key}}})
    wait_until('nvidia.com/gpu.replicas=%d on %s' % (replicas, nodes), lambda: all(
        (core.read_node(n).metadata.labels or {}).get('nvidia.com/gpu.replicas') == str(replicas) for n in nodes), 90)


def wait_quiet(core, quiet=3.0, timeout=90):
    """Wait until no node object has changed for ``quiet`` seconds (the simulated device plugins and the
    operator settle after a ClusterPolicy change), so that "nothing was written" can be checked."""
    seen = {'versions': None, 'since': 0.0}

    def quiet_long_enough():
        now = dict((n.metadata.name, n.metadata.resource_version) for n in core.list_node().items)
        if now != seen['versions']:
            seen.update(versions=now, since=time.monotonic())
        return time.monotonic() - seen['since'] >= quiet
    wait_until('no node to change for %ss' % quiet, quiet_long_enough, timeout)


WRITABLE_LABELS = ('gpu', 'nvidia.com/mig.config', 'nvidia.com/device-plugin.config')


def node_writes(core):
    """Per node, what the gpuops.gpu roles may write on it: a few labels, the cordon, gpuops.gpu/*
    annotations (compared instead of resourceVersions, which the simulated agents bump on their own)."""
    result = {}
    for node in core.list_node().items:
        labels = node.metadata.labels or {}
        result[node.metadata.name] = (
            dict((k, labels.get(k)) for k in WRITABLE_LABELS if k in labels), bool(node.spec.unschedulable),
            dict((k, v) for k, v in (node.metadata.annotations or {}).items() if k.startswith('gpuops.gpu/')))
    return result
