"""gpuops.gpu.hami on the virtual GPU cluster: refuses to run next to the GPU operator's device plugin,
switches it off when allowed (the real gpu-operator then removes its device-plugin DaemonSet), labels
the HAMi nodes, installs the HAMi chart with kubernetes.core.helm (helm built by
tests/testbed/hack/install-helm.sh), idempotency, check mode, bad input. The chart (HAMi's own, or the
tests' stand-in when the module proxy refuses HAMi's module): hami_helpers.py.

What these tests prove is the role's side, whichever chart: what it refuses, what it writes to the ClusterPolicy and
the nodes, the release it installs, upgrades and removes and the values it hands Helm, and that the chart's
device-plugin pods land on the nodes it labelled. They do not prove what HAMi does with those values (its scheduler,
device splitting, memory limits): no assertion reads back what the stand-in chart itself defines (docs/testbed.md,
"What the stand-ins prove").
"""

import json
import os
import subprocess

import pytest
import yaml

from ansible_run import changed_tasks, run_role
from conftest import gpu_pod, wait_until
from hami_helpers import HAMI_NODES, NAMESPACE, OTHER_NODES, node_labels, ready_chart, releases, snapshot
from policy_helpers import POLICY_NAME, get_policy


@pytest.fixture(scope='module')
def chart(tmp_path_factory, custom, core):
    return ready_chart(tmp_path_factory, custom, core)


def base_vars(chart, helm, **extra):
    variables = {'hami_chart_ref': chart, 'hami_helm_binary': helm, 'hami_namespace': NAMESPACE,
                 'hami_node_selector': 'gpuops.dev/pool=training', 'hami_device_split_count': 4,
                 'hami_device_memory_scaling': 1.5, 'hami_wait_timeout': 120}
    variables.update(extra)
    return variables


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
    # the record of what the role labelled lives in the release (Helm's release Secret), not on the nodes
    assert values['gpuopsGpu'] == {'nodes': sorted(HAMI_NODES), 'nodeLabels': ['gpu']}
    for name in HAMI_NODES + OTHER_NODES:
        annotations = core.read_node(name).metadata.annotations or {}
        assert not [k for k in annotations if k.startswith('gpuops.gpu/hami')], (name, annotations)
    # the release's device-plugin pods run on exactly the nodes the role labelled, so the labels the role sets and
    # the node selector it hands the chart agree (Kubernetes places the DaemonSet's pods). What the chart renders from
    # the values and what HAMi then does with them (split count, memory scaling, its scheduler) is the chart's and
    # HAMi's, not checked here: with the stand-in chart it would only read back the stand-in's own templates
    pods = core.list_namespaced_pod(NAMESPACE, label_selector='app.kubernetes.io/component=hami-device-plugin').items
    assert sorted(p.spec.node_name for p in pods if p.status.phase == 'Running') == sorted(HAMI_NODES)

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
    """A changed split count becomes a new revision of the same release with the new value and the others kept;
    nothing else changes (what HAMi does with the value is HAMi's: not checked here)."""
    policy_spec = get_policy(custom)['spec']
    status = json.loads(helm_run(testbed, helm, 'status', 'hami', '-n', NAMESPACE, '-o', 'json'))
    values = json.loads(helm_run(testbed, helm, 'get', 'values', 'hami', '-n', NAMESPACE, '-o', 'json'))
    rc, results, raw = run_role(testbed.kubeconfig, 'hami', base_vars(chart, helm, hami_device_split_count=8))
    assert rc == 0, raw[-3000:]
    assert changed_tasks(results) == ['present | Install HAMi'], changed_tasks(results)
    upgraded = json.loads(helm_run(testbed, helm, 'status', 'hami', '-n', NAMESPACE, '-o', 'json'))
    assert (upgraded['version'], upgraded['info']['status']) == (status['version'] + 1, 'deployed')
    values['devicePlugin']['deviceSplitCount'] = 8
    assert json.loads(helm_run(testbed, helm, 'get', 'values', 'hami', '-n', NAMESPACE, '-o', 'json')) == values
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


# ---------------------------------------------------------------------------------------- reset

KEEP = 'example.com/keep'  # a label nobody asked the reset to remove


def helm_run(testbed, helm, *args):
    return subprocess.run([helm] + list(args), check=True, env=dict(os.environ, KUBECONFIG=testbed.kubeconfig),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True).stdout


def helm_releases(core):
    """(namespace, release) of every Helm release on the cluster."""
    return sorted(set((s.metadata.namespace, s.metadata.labels['name']) for s in core.list_secret_for_all_namespaces(
        label_selector='owner=helm').items))


@pytest.fixture()
def victim(testbed, core, helm, tmp_path):
    """A Helm release in the GPU operator's namespace (not HAMi) and a label on two nodes that nobody asked to
    remove, both named by forged gpuops.gpu/hami-* annotations: on a HAMi node (naming the real release and the
    label) and on another node (naming the victim release and the label). Written here as an admin; the rollout
    account may not write these annotation keys at all (its node policy)."""
    ns = testbed.config['cluster']['operator_namespace']
    chart = tmp_path / 'victim'
    (chart / 'templates').mkdir(parents=True)
    (chart / 'Chart.yaml').write_text(yaml.safe_dump({'apiVersion': 'v2', 'name': 'victim', 'version': '1.0.0'}))
    (chart / 'templates' / 'cm.yaml').write_text('apiVersion: v1\nkind: ConfigMap\nmetadata: {name: victim}\n'
                                                 'data: {a: b}\n')
    helm_run(testbed, helm, 'install', 'victim', str(chart), '-n', ns)
    forged = {HAMI_NODES[0]: {'gpuops.gpu/hami-release': '%s/hami' % NAMESPACE,
                              'gpuops.gpu/hami-labels': 'gpu,%s' % KEEP},
              OTHER_NODES[0]: {'gpuops.gpu/hami-release': '%s/victim' % ns, 'gpuops.gpu/hami-labels': KEEP}}
    for name, annotations in forged.items():
        core.patch_node(name, {'metadata': {'labels': {KEEP: 'yes'}, 'annotations': annotations}})
    yield ns, forged
    subprocess.run([helm, 'uninstall', 'victim', '-n', ns], env=dict(os.environ, KUBECONFIG=testbed.kubeconfig),
                   check=False, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    for name in forged:
        core.patch_node(name, {'metadata': {'labels': {KEEP: None}, 'annotations': {
            'gpuops.gpu/hami-release': None, 'gpuops.gpu/hami-labels': None}}})


def reset_vars(testbed, helm):
    return {'reset_operator_namespace': testbed.config['cluster']['operator_namespace'], 'reset_helm_binary': helm,
            'reset_hami_namespace': NAMESPACE, 'reset_verify_timeout': 120}


def test_reset_removes_recorded_hami_and_ignores_forged_annotations(testbed, core, custom, chart, helm, victim):
    ns, forged = victim
    rc, results, raw = run_role(testbed.kubeconfig, 'hami', base_vars(chart, helm, hami_disable_operator_device_plugin=True))
    assert rc == 0, raw[-3000:]
    assert releases(core) and node_labels(core, HAMI_NODES[0]).get('gpu') == 'on'
    assert (ns, 'victim') in helm_releases(core)

    before = snapshot(core, custom)
    rc, results, raw = run_role(testbed.kubeconfig, 'reset', reset_vars(testbed, helm), check=True)
    assert rc == 0, raw[-4000:]
    assert snapshot(core, custom) == before

    rc, results, raw = run_role(testbed.kubeconfig, 'reset', reset_vars(testbed, helm))
    assert rc == 0, raw[-4000:]
    # the recorded HAMi release and its labels are gone ...
    assert releases(core) == []
    assert all('gpu' not in node_labels(core, n) for n in HAMI_NODES)
    assert get_policy(custom)['spec']['devicePlugin']['enabled'] is True
    # ... and nothing the forged annotations named: the release in the operator's namespace, the other label
    assert (ns, 'victim') in helm_releases(core)
    for name in forged:
        assert node_labels(core, name).get(KEEP) == 'yes', name
    # the old annotations came off the node the reset unlabelled; the other node was not touched
    assert not [k for k in core.read_node(HAMI_NODES[0]).metadata.annotations or {} if k.startswith('gpuops.gpu/hami')]
    other = core.read_node(OTHER_NODES[0]).metadata.annotations or {}
    assert dict((k, other.get(k)) for k in forged[OTHER_NODES[0]]) == forged[OTHER_NODES[0]]

    before = snapshot(core, custom)
    rc, results, raw = run_role(testbed.kubeconfig, 'reset', reset_vars(testbed, helm))
    assert rc == 0, raw[-3000:]
    assert changed_tasks(results) == [], changed_tasks(results)
    assert snapshot(core, custom) == before


def test_a_release_without_record_is_refused_by_the_reset_and_removed_by_hami_absent(
        testbed, core, custom, chart, helm, tmp_path):
    """A release as an earlier version of the collection left it: the role's values without the record, the nodes
    annotated gpuops.gpu/hami-release and gpuops.gpu/hami-labels."""
    rc, results, raw = run_role(testbed.kubeconfig, 'hami', base_vars(chart, helm, hami_disable_operator_device_plugin=True))
    assert rc == 0, raw[-3000:]
    values = json.loads(helm_run(testbed, helm, 'get', 'values', 'hami', '-n', NAMESPACE, '-o', 'json'))
    values.pop('gpuopsGpu')
    (tmp_path / 'values.yaml').write_text(yaml.safe_dump(values))
    helm_run(testbed, helm, 'upgrade', 'hami', chart, '-n', NAMESPACE, '-f', str(tmp_path / 'values.yaml'))
    for name in HAMI_NODES:
        core.patch_node(name, {'metadata': {'annotations': {'gpuops.gpu/hami-release': '%s/hami' % NAMESPACE,
                                                            'gpuops.gpu/hami-labels': 'gpu'}}})

    before = snapshot(core, custom)
    rc, results, raw = run_role(testbed.kubeconfig, 'reset', reset_vars(testbed, helm))
    assert rc != 0
    assert 'HAMi release %s/hami has no record of the nodes gpuops.gpu.hami labelled' % NAMESPACE in raw, raw[-3000:]
    assert 'hami_state: absent, hami_namespace: %s, hami_release_name: hami' % NAMESPACE in raw
    assert snapshot(core, custom) == before

    rc, results, raw = run_role(testbed.kubeconfig, 'hami', base_vars(chart, helm, hami_state='absent'))
    assert rc == 0, raw[-4000:]
    assert 'has no record of the nodes gpuops.gpu.hami labelled' in raw
    assert releases(core) == []
    for name in HAMI_NODES:
        assert 'gpu' not in node_labels(core, name), name
        assert not [k for k in core.read_node(name).metadata.annotations or {} if k.startswith('gpuops.gpu/hami')]
    assert get_policy(custom)['spec']['devicePlugin']['enabled'] is True
