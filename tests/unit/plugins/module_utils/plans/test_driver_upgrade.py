# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Driver upgrade through the operator (pure): images, the plan, its input errors, the follow helpers."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import copy

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.plans import driver_upgrade as du

OLD = 'nvcr.io/nvidia/driver:580.95.05-rhcos4.18'
NEW = 'nvcr.io/nvidia/driver:580.105.08-rhcos4.18'
DIGEST = 'nvcr.io/nvidia/driver@sha256:' + 'a' * 64


def node(name, state='upgrade-done', cordoned=False, ready=True, labels=None, annotations=None):
    out = {'metadata': {'name': name, 'labels': dict({
        'nvidia.com/gpu.present': 'true', du.NFD_OS_ID: 'rhcos', du.NFD_OS_VERSION: '4.18',
        du.NFD_KERNEL: '5.14.0-427.50.1.el9_4.x86_64'}, **(labels or {})), 'annotations': dict(annotations or {})},
        'spec': {'unschedulable': True} if cordoned else {},
        'status': {'conditions': [{'type': 'Ready', 'status': 'True' if ready else 'False'}]}}
    if state:
        out['metadata']['labels'][du.LABEL_STATE] = state
    return out


def driver_pod(node_name, image=OLD, ready=True, created='2026-01-01T00:00:00Z', restarts=0):
    return {'metadata': {'name': 'nvidia-driver-daemonset-' + node_name, 'namespace': 'nvidia-gpu-operator',
                         'labels': {'app': 'nvidia-driver-daemonset'}, 'creationTimestamp': created,
                         'ownerReferences': [{'kind': 'DaemonSet', 'name': 'nvidia-driver-daemonset'}]},
            'spec': {'nodeName': node_name, 'containers': [{'name': 'nvidia-driver-ctr', 'image': image}]},
            'status': {'phase': 'Running', 'containerStatuses': [
                {'name': 'nvidia-driver-ctr', 'ready': ready, 'restartCount': restarts}]}}


def gpu_pod(name, node_name, labels=None, owned=True, empty_dir=False, phase='Running', resource='nvidia.com/gpu'):
    pod = {'metadata': {'name': name, 'namespace': 'team-a', 'labels': dict(labels or {'app': name})},
           'spec': {'nodeName': node_name, 'containers': [{'name': 'c', 'resources': {'limits': {resource: 1}}}]},
           'status': {'phase': phase}}
    if owned:
        pod['metadata']['ownerReferences'] = [{'kind': 'ReplicaSet', 'name': name}]
    if empty_dir:
        pod['spec']['volumes'] = [{'name': 'scratch', 'emptyDir': {}}]
    return pod


def pdb(name, labels, allowed=0):
    return {'metadata': {'name': name, 'namespace': 'team-a'}, 'spec': {'selector': {'matchLabels': labels}},
            'status': {'disruptionsAllowed': allowed}}


POLICY = {'metadata': {'name': 'gpu-cluster-policy'}, 'status': {'state': 'ready', 'namespace': 'nvidia-gpu-operator'},
          'spec': {'driver': {'enabled': True, 'upgradePolicy': {
              'autoUpgrade': True, 'maxParallelUpgrades': 1, 'maxUnavailable': '25%',
              'podDeletion': {'force': False, 'timeoutSeconds': 300, 'deleteEmptyDir': False},
              'drain': {'enable': False, 'force': False, 'timeoutSeconds': 300, 'deleteEmptyDir': False}}}}}


def request(nodes=None, pods=None, pdbs=None, version='580.105.08', policy=None, cluster_policy='default', **target):
    nodes = nodes if nodes is not None else [node('gpu-%d' % i) for i in range(4)]
    pods = pods if pods is not None else [driver_pod(n['metadata']['name']) for n in nodes]
    return {'cluster_policy': copy.deepcopy(POLICY if cluster_policy == 'default' else cluster_policy), 'nodes': nodes, 'pods': pods, 'pdbs': pdbs or [],
            'target': dict({'version': version}, **target), 'policy': policy if policy is not None else {}}


# --- images -----------------------------------------------------------------------------------

def test_images_as_the_operator_renders_them():
    assert du.split_image(OLD) == ('nvcr.io/nvidia', 'driver', '580.95.05-rhcos4.18', None)
    assert du.split_image('registry:5000/driver@sha256:ab') == ('registry:5000', 'driver', None, 'sha256:ab')
    assert du.image_version(OLD) == '580.95.05' and du.image_version(DIGEST) == 'sha256:' + 'a' * 12
    assert du.os_tag([node('b', labels={du.NFD_OS_VERSION: '9.9'}), node('a')]) == 'rhcos4.18'
    assert du.os_tag([{'metadata': {'name': 'cpu'}}]) == ''
    driver = {'repository': 'nvcr.io/nvidia', 'image': 'driver', 'version': '580.105.08'}
    assert du.target_image(driver, node('a'), 'rhcos4.18') == NEW
    assert du.target_image(dict(driver, version='sha256:' + 'b' * 64), node('a'), 'rhcos4.18') == \
        'nvcr.io/nvidia/driver@sha256:' + 'b' * 64
    assert du.target_image(dict(driver, usePrecompiled=True), node('a'), 'rhcos4.18') == \
        'nvcr.io/nvidia/driver:580.105.08-5.14.0-427.50.1.el9_4.x86_64-rhcos4.18'


def test_operator_gpu_pods_and_what_blocks_their_deletion():
    assert du.operator_gpu_pod(gpu_pod('a', 'n'))
    assert du.operator_gpu_pod(gpu_pod('a', 'n', resource='nvidia.com/mig-1g.5gb'))
    assert du.operator_gpu_pod(gpu_pod('a', 'n', resource='nvidia.com/gpu.shared'))
    assert not du.operator_gpu_pod(gpu_pod('a', 'n', phase='Succeeded'))
    assert not du.operator_gpu_pod(gpu_pod('a', 'n', resource='cpu'))
    spec = {'force': False, 'deleteEmptyDir': False}
    blocked = du.deletion_blockers(gpu_pod('a', 'n', owned=False, empty_dir=True), [pdb('a', {'app': 'a'})], spec)
    assert blocked == ['PodDisruptionBudget team-a/a allows no disruption', 'no controller manages it (force is false)',
                       'it has emptyDir data (deleteEmptyDir is false)']
    assert du.deletion_blockers(gpu_pod('a', 'n', owned=False, empty_dir=True), [pdb('a', {'app': 'a'}, 1)],
                                {'force': True, 'deleteEmptyDir': True}) == []


def test_pod_words_name_the_crash():
    pod = driver_pod('a', NEW, ready=False, restarts=12)
    pod['status']['containerStatuses'][0]['state'] = {'waiting': {'reason': 'CrashLoopBackOff', 'message': 'back-off'}}
    assert du.pod_words(pod) == ('nvidia-driver-daemonset-a Running, not ready, 12 restart(s), image %s; waiting: '
                                 'nvidia-driver-ctr: CrashLoopBackOff (back-off)' % NEW)
    assert du.pod_words(None) == 'no driver pod on the node'


# --- the plan ---------------------------------------------------------------------------------

def test_plan_batches_evictions_and_patch():
    nodes = [node('gpu-%d' % i) for i in range(4)]
    pods = [driver_pod(n['metadata']['name']) for n in nodes] + [
        gpu_pod('train', 'gpu-1'), gpu_pod('serve', 'gpu-2', owned=False)]
    result = du.plan(request(nodes, pods, [pdb('train', {'app': 'train'})],
                             policy={'max_parallel_upgrades': 2, 'max_unavailable': '50%'}))
    assert result['errors'] == [] and result['changes']
    assert result['target_image'] == [NEW] and result['batch_size'] == 2
    assert result['patch'] == {'driver': {'version': '580.105.08', 'repository': 'nvcr.io/nvidia', 'image': 'driver',
                                          'upgradePolicy': {'maxParallelUpgrades': 2, 'maxUnavailable': '50%'}}}
    assert [[n['node'] for n in b['nodes']] for b in result['plan' if 'plan' in result else 'batches']] == [
        ['gpu-0', 'gpu-1'], ['gpu-2', 'gpu-3']]
    by_node = dict((n['node'], n) for b in result['batches'] for n in b['nodes'])
    assert by_node['gpu-1']['pods_to_evict'] == ['team-a/train'] and by_node['gpu-1']['blocking_pdbs'] == ['team-a/train']
    assert by_node['gpu-2']['blockers'] == {'team-a/serve': ['no controller manages it (force is false)']}
    assert by_node['gpu-0']['from'] == '580.95.05' and by_node['gpu-0']['to'] == '580.105.08'
    lines = du.plan_lines(result)
    assert lines[0] == 'batch 1: gpu-0 580.95.05 -> 580.105.08, gpu-1 580.95.05 -> 580.105.08'
    assert '  gpu-1: team-a/train would block: PodDisruptionBudget team-a/train allows no disruption (the node would ' \
           'end upgrade-failed)' in lines
    assert lines[-1] == ('ClusterPolicy: set driver.image=driver, driver.repository=nvcr.io/nvidia, '
                         'driver.upgradePolicy.maxParallelUpgrades=2, driver.upgradePolicy.maxUnavailable=50%, '
                         'driver.version=580.105.08')


def test_drain_fallback_is_listed_when_enabled():
    nodes = [node('gpu-0'), node('gpu-1')]
    pods = [driver_pod('gpu-0'), driver_pod('gpu-1'), gpu_pod('train', 'gpu-0'), gpu_pod('web', 'gpu-0', resource='cpu'),
            gpu_pod('skip', 'gpu-0', resource='cpu', labels={du.LABEL_DRAIN_SKIP: 'true'})]
    result = du.plan(request(nodes, pods, [pdb('train', {'app': 'train'})],
                             policy={'drain': {'enable': True}, 'max_unavailable': 1}))
    entry = result['batches'][0]['nodes'][0]
    assert entry['fallback_drain'] == ['team-a/train', 'team-a/web']
    assert 'then the operator drains the node: team-a/train, team-a/web' in '\n'.join(du.plan_lines(result))


def test_rerun_at_the_target_plans_nothing():
    nodes = [node('gpu-0'), node('gpu-1')]
    policy = copy.deepcopy(POLICY)
    policy['spec']['driver'].update(repository='nvcr.io/nvidia', image='driver', version='580.105.08')
    result = du.plan(request(nodes, [driver_pod('gpu-0', NEW), driver_pod('gpu-1', NEW)], cluster_policy=policy))
    assert result['errors'] == [] and not result['changes'] and result['upgrade'] == [] and result['patch'] == {}
    assert du.plan_lines(result) == ['driver: every driver node runs %s already, nothing to upgrade' % NEW]


def test_nodes_in_progress_resume_first_and_skipped_nodes_are_named():
    nodes = [node('gpu-0', 'pod-restart-required', cordoned=True), node('gpu-1'),
             node('gpu-2', labels={du.LABEL_SKIP: 'true'}), node('gpu-3', 'upgrade-failed', cordoned=True)]
    policy = copy.deepcopy(POLICY)
    policy['spec']['driver'].update(repository='nvcr.io/nvidia', image='driver', version='580.105.08')
    pods = [driver_pod('gpu-0', NEW, ready=False), driver_pod('gpu-1'), driver_pod('gpu-2'), driver_pod('gpu-3')]
    result = du.plan(request(nodes, pods, cluster_policy=policy, policy={'max_unavailable': 3}))
    assert result['errors'] == []
    assert [[n['node'] for n in b['nodes']] for b in result['batches']] == [['gpu-0', 'gpu-3'], ['gpu-1']]
    assert result['batches'][0]['nodes'][0]['resume'] and result['skipped'] == ['gpu-2']
    assert 'gpu-2 carry nvidia.com/gpu-driver-upgrade.skip=true' in result['warnings'][0]


def test_repository_and_image_come_from_the_running_driver_when_the_policy_names_none():
    result = du.plan(request([node('a')], [driver_pod('a', 'mirror.example.com/nv/driver@sha256:' + 'c' * 64)]))
    assert result['target_image'] == ['mirror.example.com/nv/driver:580.105.08-rhcos4.18']
    assert result['patch']['driver']['repository'] == 'mirror.example.com/nv'


@pytest.mark.parametrize('kw, message', [
    ({'version': ''}, 'version is empty'),
    ({'version': 'bad tag!'}, "version 'bad tag!' is not an image tag"),
    ({'policy': {'max_parallel_upgrades': 0}}, 'max_parallel_upgrades is 0, which the operator reads as "no limit"'),
    ({'policy': {'max_parallel_upgrades': 5}}, 'max_parallel_upgrades 5 is more than the 4 node(s) that run the driver'),
    ({'policy': {'max_unavailable': '0%'}}, "max_unavailable '0%' is 0 node(s) of 4"),
    ({'policy': {'max_unavailable': 'many'}}, "max_unavailable must be a node count like 2"),
    ({'policy': {'max_unavailable': 9}}, 'max_unavailable 9 is more than the 4 node(s)'),
    ({'policy': {'auto_upgrade': False}}, 'policy.auto_upgrade is false'),
    ({'policy': {'drain': {'enable': 'yes'}}}, 'policy.drain.enable must be true or false'),
    ({'cluster_policy': None}, 'no ClusterPolicy found'),
    ({'pods': []}, 'no driver pod (label app=nvidia-driver-daemonset) runs on any node'),
])
def test_input_errors(kw, message):
    result = du.plan(request(**kw))
    assert any(message in e for e in result['errors']), result['errors']
    assert not result['changes'] and du.plan_lines(result) == []


def test_nodes_cordoned_by_hand_keep_their_slot():
    nodes = [node('gpu-0', cordoned=True), node('gpu-1'), node('gpu-2'), node('gpu-3')]
    result = du.plan(request(nodes, policy={'max_unavailable': 1}))
    assert any('1 of the 4 driver node(s) are cordoned (not by a driver upgrade)' in e for e in result['errors'])
    # cordoned by the operator's upgrade (in progress, failed, or marked when it was paused): not counted
    marked = {du.ANN_PAUSED_CORDONED: 'true'}
    nodes = [node('gpu-0', 'upgrade-failed', cordoned=True), node('gpu-1', '', cordoned=True, annotations=marked),
             node('gpu-2'), node('gpu-3')]
    assert du.plan(request(nodes, policy={'max_unavailable': 1}))['errors'] == []


def test_policy_patch_only_what_differs():
    current = POLICY['spec']['driver']
    patch, errors = du.policy_patch({'version': 'v1'}, {'max_parallel_upgrades': 1, 'pod_deletion': {
        'timeout_seconds': 5, 'force': False}}, current)
    assert errors == [] and patch == {'driver': {'version': 'v1', 'upgradePolicy': {'podDeletion': {'timeoutSeconds': 5}}}}
    off = dict(current, upgradePolicy=dict(current['upgradePolicy'], autoUpgrade=False))
    assert du.policy_patch({}, {}, off)[0] == {'driver': {'upgradePolicy': {'autoUpgrade': True}}}
    assert du.scaled_unavailable('25%', 5) == 2 and du.scaled_unavailable(3, 5) == 3
    assert du.scaled_unavailable('x', 5) is None


# --- following --------------------------------------------------------------------------------

def event(node_name, message, when, kind='Normal'):
    return {'reason': du.EVENT_REASON, 'type': kind, 'message': message, 'lastTimestamp': when,
            'involvedObject': {'kind': 'Node', 'name': node_name}}


EVENTS = [
    event('a', du.EVENT_STATE_PREFIX + 'upgrade-required', '2026-01-01T10:00:00Z'),
    event('a', du.EVENT_STATE_PREFIX + 'cordon-required', '2026-01-01T10:00:01Z'),
    event('a', '(combined from similar events): ' + du.EVENT_STATE_PREFIX + 'pod-deletion-required',
          '2026-01-01T10:00:02Z'),
    event('a', 'Failed to delete workload pods on the node for the driver upgrade, global timeout reached: 5s',
          '2026-01-01T10:00:07Z', 'Warning'),
    event('a', du.EVENT_STATE_PREFIX + 'upgrade-failed', '2026-01-01T10:00:07Z'),
    event('b', du.EVENT_STATE_PREFIX + 'upgrade-done', '2026-01-01T10:00:07Z'),
    event('a', du.EVENT_STATE_PREFIX + 'upgrade-done', '2025-12-01T10:00:07Z'),  # before the run
]


def test_events_give_the_states_and_the_reason():
    since = '2026-01-01T09:59:59.500Z'
    assert du.event_states(EVENTS, 'a', since) == [
        ('upgrade-required', '2026-01-01T10:00:00.000Z'), ('cordon-required', '2026-01-01T10:00:01.000Z'),
        ('pod-deletion-required', '2026-01-01T10:00:02.000Z'), ('upgrade-failed', '2026-01-01T10:00:07.000Z')]
    assert du.operator_reason(EVENTS, 'a', since).startswith('Failed to delete workload pods')
    assert du.operator_reason([], 'a', since) == 'the operator gave no reason (no GPUDriverUpgrade Event on the node)'


def test_merge_states_and_timeline():
    recorded = [('upgrade-required', '2026-01-01T10:00:00.500Z')]
    events = [('upgrade-required', '2026-01-01T10:00:00.000Z'), ('cordon-required', '2026-01-01T10:00:01.000Z'),
              ('pod-restart-required', '2026-01-01T10:00:03.000Z')]
    states, entered = du.merge_states(recorded, events, 'validation-required', '2026-01-01T10:00:04.200Z', False)
    assert entered == ['cordon-required', 'pod-restart-required', 'validation-required']
    assert states[0] == ('upgrade-required', '2026-01-01T10:00:00.000Z')
    # upgrade-done of the old driver is not the end; of the new one, it is
    assert du.merge_states(states, [], 'upgrade-done', 'T', False)[1] == []
    states, entered = du.merge_states(states, [], 'upgrade-done', '2026-01-01T10:00:06.000Z', True)
    assert entered == ['upgrade-done']
    assert du.timeline_events(states) == {
        'started': '2026-01-01T10:00:01.000Z', 'drained': '2026-01-01T10:00:03.000Z',
        'reported': '2026-01-01T10:00:04.200Z', 'uncordoned': '2026-01-01T10:00:06.000Z'}


def test_events_read_after_the_node_never_end_the_states_past_it():
    # the node read at uncordon-required, the Events a moment later already at upgrade-done
    recorded = [('upgrade-required', '2026-01-01T10:00:00.000Z'), ('validation-required', '2026-01-01T10:00:04.000Z')]
    events = [('validation-required', '2026-01-01T10:00:04.000Z'), ('uncordon-required', '2026-01-01T10:00:05.000Z'),
              ('upgrade-done', '2026-01-01T10:00:06.000Z')]
    states, entered = du.merge_states(recorded, events, 'uncordon-required', '2026-01-01T10:00:05.300Z', False)
    assert entered == ['uncordon-required']
    states, entered = du.merge_states(states, events, 'upgrade-done', '2026-01-01T10:00:06.400Z', True)
    assert entered == ['upgrade-done'] and states[-1] == ('upgrade-done', '2026-01-01T10:00:06.000Z')
    # upgrade-done named by an Event counts only once the new driver is ready
    assert du.merge_states(recorded, events, None, 'T', False)[1] == ['uncordon-required']
    # a state entered again (a retry): what came between its two visits is kept
    looped = [('upgrade-failed', '2026-01-01T10:00:07.000Z'), ('upgrade-required', '2026-01-01T10:00:08.000Z'),
              ('cordon-required', '2026-01-01T10:00:09.000Z')]
    assert du.merge_states(recorded, events + looped, 'upgrade-required', 'T', False)[1] == [
        'uncordon-required', 'upgrade-failed']


def test_done_needs_the_new_driver_ready():
    assert du.node_done(node('a'), driver_pod('a', NEW), NEW)
    assert not du.node_done(node('a'), driver_pod('a', OLD), NEW)
    assert not du.node_done(node('a'), driver_pod('a', NEW, ready=False), NEW)
    assert not du.node_done(node('a', 'uncordon-required'), driver_pod('a', NEW), NEW)
    assert du.phase_of('upgrade-failed', False) == 'failed' and du.phase_of('', False) == 'unlabelled'
    newest = du.driver_pods_by_node([driver_pod('a', OLD), driver_pod('a', NEW, created='2026-02-01T00:00:00Z')])
    assert du.pod_image(newest['a']) == NEW


def test_paused_marks_only_nodes_the_operator_cordoned():
    nodes = [node('a', 'pod-deletion-required', cordoned=True), node('b', 'upgrade-failed', cordoned=True),
             node('c', 'upgrade-required', cordoned=True), node('d', 'drain-required'),
             node('e', 'cordon-required', cordoned=True, annotations={du.ANN_INITIAL_UNSCHEDULABLE: 'true'})]
    assert du.paused_annotations(nodes) == ['a', 'b']


def test_timeline_never_goes_back():
    """A state seen by a poll (to the ms) after one dated by its Event (to the second) keeps the order."""
    states = [('cordon-required', '2026-01-01T10:00:01.500Z'), ('pod-restart-required', '2026-01-01T10:00:01.000Z')]
    assert du.timeline_events(states) == {'started': '2026-01-01T10:00:01.500Z',
                                          'drained': '2026-01-01T10:00:01.500Z'}


def test_states_of_the_same_second_keep_the_operators_order():
    events = [event('a', du.EVENT_STATE_PREFIX + 'wait-for-jobs-required', '2026-01-01T10:00:01Z'),
              event('a', du.EVENT_STATE_PREFIX + 'cordon-required', '2026-01-01T10:00:01Z')]
    assert [s for s, _t in du.event_states(events, 'a', '')] == ['cordon-required', 'wait-for-jobs-required']
