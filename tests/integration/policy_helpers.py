"""Helpers shared by the quotas / hami / reset integration tests: the ClusterPolicy NVIDIA ships in
its OLM bundle (read from the gpu-operator Go module at test time, never copied), created and
reconciled to ready by the real gpu-operator of the virtual GPU cluster; a device-plugin sharing
config (time-slicing) switched on the way a user of the operator would."""

import os
import time

import yaml

from cluster_policy_example import clusterpolicy_example
from conftest import wait_until

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CP = ('nvidia.com', 'v1', 'clusterpolicies')
POLICY_NAME = 'gpu-cluster-policy'
MANAGED = {'app.kubernetes.io/managed-by': 'gpuops.gpu'}


def wait_for(predicate, timeout=120, interval=0.5, what='condition'):
    """conftest.wait_until with the predicate first (the order these helpers' callers use)."""
    return wait_until(what, predicate, timeout, interval)


def get_policy(custom, name=POLICY_NAME):
    return custom.get_cluster_custom_object(*CP, name)


def ensure_cluster_policy(custom, name=POLICY_NAME, timeout=240):
    """Create the CSV example ClusterPolicy (unless there is one) and wait for state ready."""
    if not custom.list_cluster_custom_object(*CP).get('items'):
        custom.create_cluster_custom_object(*CP, clusterpolicy_example(name))
    return wait_for(lambda: (get_policy(custom, name).get('status') or {}).get('state') == 'ready',
                    timeout, 1, 'ClusterPolicy %s ready' % name)


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
    wait_for(lambda: all((core.read_node(n).metadata.labels or {}).get('nvidia.com/gpu.replicas') == str(replicas)
                         for n in nodes), 90, 0.5, 'nvidia.com/gpu.replicas=%d on %s' % (replicas, nodes))


def wait_quiet(core, quiet=3.0, timeout=90):
    """Wait until no node object has changed for ``quiet`` seconds (the simulated device plugins and the
    operator settle after a ClusterPolicy change), so that "nothing was written" can be checked."""
    end = time.monotonic() + timeout
    last, since = None, time.monotonic()
    while time.monotonic() < end:
        now = dict((n.metadata.name, n.metadata.resource_version) for n in core.list_node().items)
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return
        time.sleep(0.5)
    raise AssertionError('nodes kept changing for %ss' % timeout)


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
