# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A GPU driver upgrade through the GPU operator's own upgrade controller. Pure, no I/O.

The operator replaces the driver on the nodes by itself once the ClusterPolicy's ``driver`` names a new
image and ``driver.upgradePolicy.autoUpgrade`` is on: node by node it walks the states of the label
``nvidia.com/gpu-driver-upgrade-state`` (cordon, wait for jobs, delete the GPU pods, drain as a fallback,
restart the driver pod, validate, uncordon) to ``upgrade-done`` (docs/facts.md, "Driver upgrades through the
operator"). This module decides, from what the driver_upgrade module read:

* ``plan``: the image the operator will render for the target, the nodes whose driver pod runs another image,
  in batches of the parallelism the policy gives (``maxParallelUpgrades``, ``maxUnavailable`` against the
  nodes that are unavailable already), the GPU pods the operator would delete on each node and what would
  stop it (PodDisruptionBudgets, pods without a controller, emptyDir data), the ClusterPolicy patch (target
  and typed policy), and every input error at once;
* while it follows the upgrade: each node's state, whether its driver pod runs the target and is ready,
  the operator's reason from its Events, the per-node timeline (``timeline_events``).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import re

from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import is_int
from ansible_collections.gpuops.gpu.plugins.module_utils.common.objects import labels_of, meta_of, name_of
from ansible_collections.gpuops.gpu.plugins.module_utils.common.selector import blocking_pdbs
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.upgrade import driver_upgrade_policy

LABEL_STATE = 'nvidia.com/gpu-driver-upgrade-state'
LABEL_SKIP = 'nvidia.com/gpu-driver-upgrade.skip'
LABEL_DRAIN_SKIP = 'nvidia.com/gpu-driver-upgrade-drain.skip'
ANN_INITIAL_UNSCHEDULABLE = 'nvidia.com/gpu-driver-upgrade.node-initial-state.unschedulable'
# set by this collection when it paused the operator's upgrades (autoUpgrade false) on a node the operator had
# cordoned: the operator then takes the node for one a user cordoned and leaves it cordoned at the end. The mark is
# an annotation (what is read) and a label of the same key: removing the label with the uncordon is a node label
# change, which wakes the operator's upgrade controller (it watches node labels, not cordons), so the next node gets
# the slot the cordon held at once rather than at the controller's 2-minute requeue (docs/facts.md)
ANN_PAUSED_CORDONED = 'gpuops.gpu/driver-upgrade-paused'
LABEL_PAUSED_CORDONED = ANN_PAUSED_CORDONED
DRIVER_POD_LABEL = ('app', 'nvidia-driver-daemonset')
# the driver pods of the DaemonSets of NVIDIADriver objects (plans/driver_pools.py)
COMPONENT_LABEL = ('app.kubernetes.io/component', 'nvidia-driver')
EVENT_REASON = 'GPUDriverUpgrade'
EVENT_STATE_PREFIX = 'Successfully updated node state label to '
# client-go's EventCorrelator folds more than 10 similar Events of an object in 10 minutes into one Event whose
# message it replaces each time, behind this prefix (k8s.io/client-go/tools/record/events_cache.go)
EVENT_COMBINED = '(combined from similar events): '
NFD_OS_ID = 'feature.node.kubernetes.io/system-os_release.ID'
NFD_OS_VERSION = 'feature.node.kubernetes.io/system-os_release.VERSION_ID'
NFD_KERNEL = 'feature.node.kubernetes.io/kernel-version.full'

DONE, FAILED, REQUIRED = 'upgrade-done', 'upgrade-failed', 'upgrade-required'
# the states in the order a node passes them (k8s-operator-libs pkg/upgrade/consts.go)
STATES = (REQUIRED, 'cordon-required', 'wait-for-jobs-required', 'pod-deletion-required', 'drain-required',
          'node-maintenance-required', 'post-maintenance-required', 'pod-restart-required', 'validation-required',
          'uncordon-required', DONE, FAILED)
IN_PROGRESS = STATES[1:10]
# what the status line says of a node in each state (rollout/progress.py status_line); 'done' and 'failed'
# are the phases of a node that finished or is held
PHASE_WORDS = ((REQUIRED, 'waiting for a slot'), ('cordon-required', 'cordoning'),
               ('wait-for-jobs-required', 'waiting for jobs'), ('pod-deletion-required', 'deleting GPU pods'),
               ('drain-required', 'draining'), ('pod-restart-required', 'restarting the driver'),
               ('validation-required', 'validating'), ('uncordon-required', 'uncordoning'),
               ('unlabelled', 'waiting for the operator'), ('retrying', 'retried, waiting for the operator'),
               ('done', 'done'), ('failed', 'held'))
# the state a node entered -> the rollout timeline event it stands for (the fleet report's events,
# rollout/progress.py TIMELINE_ORDER): the operator started the node, cordoned it, deleted its GPU pods (or
# drained it), the new driver pod runs and is ready, the validator passed, the node is back in service
TIMELINE = (('cordon-required', 'started'), ('wait-for-jobs-required', 'cordoned'), ('pod-restart-required', 'drained'),
            ('validation-required', 'reported'), ('uncordon-required', 'verified'), (DONE, 'uncordoned'))
POLICY_DEFAULTS = {'maxParallelUpgrades': 1, 'maxUnavailable': '25%'}  # the CRD's defaults (upgrade_spec.go)
_TAG = re.compile(r'^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$')
_DIGEST = re.compile(r'^sha256:[a-f0-9]{64}$')
_VERSION = re.compile(r'^(\d+\.\d+(?:\.\d+)?)(?:-.+)?$')
_PERCENT = re.compile(r'^(\d+)%$', re.ASCII)


# --- images -----------------------------------------------------------------------------------

def split_image(image):
    """``(repository, name, tag or None, digest or None)`` of an image reference:
    'nvcr.io/nvidia/driver:580.95.05-rhcos4.18' -> ('nvcr.io/nvidia', 'driver', '580.95.05-rhcos4.18', None)."""
    text = str(image or '')
    digest = None
    if '@' in text:
        text, digest = text.split('@', 1)
    path, _sep, last = text.rpartition('/')
    tag = None
    if ':' in last:
        last, tag = last.split(':', 1)
    return path, last, tag, digest


def image_version(image):
    """The driver version an image runs: its tag up to the OS suffix ('580.95.05-rhcos4.18' -> '580.95.05'),
    the digest's start for a digest image (``sha256:838f50e304e8``), '' when neither says."""
    _repo, _name, tag, digest = split_image(image)
    if tag:
        match = _VERSION.match(tag)
        return match.group(1) if match else tag
    return (digest or '')[:19]  # sha256: and 12 hex digits, as `docker images` shows an image ID


def os_tag(nodes):
    """The OS suffix the operator appends to the driver tag: NFD's os-release ID and VERSION_ID of the first GPU
    node (gpu-operator controllers/object_controls.go kernelFullVersion: ``rhcos4.18``, ``ubuntu22.04``)."""
    gpu = sorted((n for n in nodes or [] if labels_of(n).get('nvidia.com/gpu.present') == 'true'), key=name_of)
    labels = labels_of(gpu[0]) if gpu else {}
    if labels.get(NFD_OS_ID) and labels.get(NFD_OS_VERSION):
        return labels[NFD_OS_ID] + labels[NFD_OS_VERSION]
    return ''


def target_image(driver, node, tag_suffix):
    """The image the operator renders for ``driver`` (ClusterPolicy ``spec.driver`` with the target merged in)
    on ``node`` (resolveDriverTag and api/nvidia/v1 imagePath): ``repository/image@sha256:...`` for a digest,
    else ``repository/image:version-<os tag>``; with ``usePrecompiled`` the node's kernel comes before the
    OS tag."""
    repository, image, version = driver.get('repository') or '', driver.get('image') or '', driver.get('version') or ''
    if version.startswith('sha256:'):
        return '%s/%s@%s' % (repository, image, version)
    if driver.get('usePrecompiled'):
        version = '%s-%s' % (version, labels_of(node).get(NFD_KERNEL, ''))
    return '%s/%s:%s%s' % (repository, image, version, '-' + tag_suffix if tag_suffix else '')


# --- pods -------------------------------------------------------------------------------------

def is_driver_pod(pod):
    labels = labels_of(pod)
    return labels.get(DRIVER_POD_LABEL[0]) == DRIVER_POD_LABEL[1] or labels.get(COMPONENT_LABEL[0]) == COMPONENT_LABEL[1]


def driver_pods_by_node(pods):
    """{node: the newest driver pod on it that is not being deleted (else the newest)}."""
    out = {}
    for pod in sorted((p for p in pods or [] if is_driver_pod(p)),
                      key=lambda p: (not meta_of(p).get('deletionTimestamp'), meta_of(p).get('creationTimestamp') or '')):
        node = (pod.get('spec') or {}).get('nodeName')
        if node:
            out[node] = pod
    return out


def pod_image(pod):
    containers = (pod or {}).get('spec', {}).get('containers') or []
    return containers[0].get('image') if containers else None


def pod_ready(pod):
    """Running with every container ready (k8s-operator-libs isDriverPodInSync)."""
    status = (pod or {}).get('status') or {}
    statuses = status.get('containerStatuses') or []
    return status.get('phase') == 'Running' and bool(statuses) and all(s.get('ready') for s in statuses)


def pod_words(pod):
    """The driver pod's status in words: name, phase, ready or not, restarts, the reason a container waits."""
    if not pod:
        return 'no driver pod on the node'
    status = pod.get('status') or {}
    statuses = (status.get('initContainerStatuses') or []) + (status.get('containerStatuses') or [])
    restarts = sum(int(s.get('restartCount') or 0) for s in statuses)
    waiting = ['%s: %s%s' % (s.get('name'), w.get('reason'), ' (%s)' % w['message'] if w.get('message') else '')
               for s in statuses for w in [((s.get('state') or {}).get('waiting') or {})] if w.get('reason')]
    words = '%s %s, %s, %d restart(s), image %s' % (
        name_of(pod), status.get('phase') or 'Pending', 'ready' if pod_ready(pod) else 'not ready', restarts,
        pod_image(pod) or '-')
    if meta_of(pod).get('deletionTimestamp'):
        words += ', terminating'
    return words + ('; waiting: %s' % ', '.join(waiting) if waiting else '')


def _gpu_resource(name):
    return name.startswith('nvidia.com/gpu') or name.startswith('nvidia.com/mig-')


def operator_gpu_pod(pod):
    """The pods the operator deletes before it replaces the driver (gpu-operator cmd/gpu-operator/main.go
    gpuPodSpecFilter): Running or Pending, a container whose requests or limits name a resource starting with
    ``nvidia.com/gpu`` or ``nvidia.com/mig-``. Init containers are not looked at."""
    if ((pod.get('status') or {}).get('phase')) not in ('Running', 'Pending'):
        return False
    for container in (pod.get('spec') or {}).get('containers') or []:
        resources = container.get('resources') or {}
        if any(_gpu_resource(r) for kind in ('limits', 'requests') for r in (resources.get(kind) or {})):
            return True
    return False


def _owned_by_daemonset(pod):
    return any(o.get('kind') == 'DaemonSet' for o in meta_of(pod).get('ownerReferences') or [])


def deletion_blockers(pod, pdbs, spec):
    """Why the operator's drain helper (k8s.io/kubectl/pkg/drain, through the Eviction API) would not delete
    ``pod`` with ``spec`` (``podDeletion`` or ``drain``: ``force``, ``deleteEmptyDir``): the
    PodDisruptionBudgets that allow no disruption now, no controller without force, emptyDir without
    deleteEmptyDir."""
    out = ['PodDisruptionBudget %s allows no disruption' % p for p in blocking_pdbs(pod, pdbs)]
    if not meta_of(pod).get('ownerReferences') and not spec.get('force'):
        out.append('no controller manages it (force is false)')
    if any('emptyDir' in v for v in (pod.get('spec') or {}).get('volumes') or []) and not spec.get('deleteEmptyDir'):
        out.append('it has emptyDir data (deleteEmptyDir is false)')
    return out


def _ref(pod):
    return '%s/%s' % (meta_of(pod).get('namespace'), name_of(pod))


# --- the policy -------------------------------------------------------------------------------

def scaled_unavailable(value, total):
    """maxUnavailable as a node count (intstr.GetScaledValueFromIntOrPercent, rounding up), None when it is
    neither a count nor a percentage."""
    if is_int(value):
        return value
    text = str(value)
    if text.isdigit():
        return int(text)
    match = _PERCENT.match(text)
    if not match:
        return None
    return -(-total * int(match.group(1)) // 100)


def policy_patch(target, policy, current_driver):
    """``(ClusterPolicy spec patch, errors)``: the target (``version``, and ``repository`` / ``image`` where
    given) and the typed policy (plans/upgrade.py driver_upgrade_policy, in the CRD's field names) with
    ``autoUpgrade: true``, only the fields that differ from ``current_driver``."""
    patch, errors = driver_upgrade_policy(policy, 'policy')
    if isinstance(policy, dict) and policy.get('auto_upgrade') is False:
        errors.append('policy.auto_upgrade is false: the operator upgrades nothing then; leave it out (the upgrade '
                      'turns it on) and use on_failure: pause to stop the operator on a failure')
    wanted = dict((patch.get('driver') or {}).get('upgradePolicy') or {}, autoUpgrade=True)
    current = current_driver or {}
    upgrade_policy = current.get('upgradePolicy') or {}
    out = {}
    for key, value in sorted(wanted.items()):
        if isinstance(value, dict):
            section = dict((k, v) for k, v in value.items() if (upgrade_policy.get(key) or {}).get(k) != v)
            if section:
                out[key] = section
        elif upgrade_policy.get(key) != value:
            out[key] = value
    driver = dict((k, target[k]) for k in ('version', 'repository', 'image')
                  if target.get(k) and current.get(k) != target[k])
    if out:
        driver['upgradePolicy'] = out
    return ({'driver': driver} if driver else {}), errors


def effective_policy(current_driver, patch):
    """The driver.upgradePolicy the operator will act on: the current one with the patch over it, the CRD's
    defaults for what neither sets."""
    out = dict(POLICY_DEFAULTS)
    for source in ((current_driver or {}).get('upgradePolicy') or {}, ((patch.get('driver') or {}).get('upgradePolicy')) or {}):
        for key, value in source.items():
            out[key] = dict(out.get(key) or {}, **value) if isinstance(value, dict) else value
    return out


def target_errors(target):
    """Why the target cannot be rendered into an image reference."""
    errors = []
    version = target.get('version')
    if not isinstance(version, str) or not version.strip():
        errors.append('version is empty: give the driver version to upgrade to, for example 580.105.08 (the tag of '
                      'the driver image, without the OS suffix the operator appends)')
    elif not (_TAG.match(version) or _DIGEST.match(version)):
        errors.append("version '%s' is not an image tag (letters, digits, '_', '.' and '-', at most 128, not "
                      "starting with '.' or '-') nor a sha256: digest" % version)
    for key in ('repository', 'image'):
        value = target.get(key)
        if value is not None and (not isinstance(value, str) or re.search(r'\s|[:@]$|^/|/$', value)):
            what = 'repository (registry/path)' if key == 'repository' else 'name'
            errors.append('%s %r is not an image %s' % (key, value, what))
    return errors


def parallelism_errors(policy, pool, unavailable):
    """Why ``policy`` (the effective one, CRD field names) cannot roll ``pool`` driver nodes; ``unavailable``:
    how many of them are cordoned or not Ready now for another reason than a driver upgrade."""
    errors = []
    parallel, max_unavailable = policy.get('maxParallelUpgrades'), policy.get('maxUnavailable')
    if not is_int(parallel) or parallel < 0:
        errors.append('max_parallel_upgrades must be a whole number, got %r' % (parallel,))
    elif parallel == 0:
        errors.append('max_parallel_upgrades is 0, which the operator reads as "no limit": every one of the %d '
                      'driver nodes at once; give the number of nodes to upgrade at once (1 to %d)' % (pool, pool))
    elif pool and parallel > pool:
        errors.append('max_parallel_upgrades %d is more than the %d node(s) that run the driver; give 1 to %d'
                      % (parallel, pool, pool))
    count = scaled_unavailable(max_unavailable, pool)
    if count is None or isinstance(max_unavailable, bool):
        errors.append("max_unavailable must be a node count like 1 or a percentage like '25%%', got %r"
                      % (max_unavailable,))
    elif count < 1:
        errors.append('max_unavailable %r is 0 node(s) of %d: the operator would never start a node; give at '
                      'least 1' % (max_unavailable, pool))
    elif isinstance(max_unavailable, str) and max_unavailable.endswith('%') and int(max_unavailable[:-1]) > 100:
        errors.append('max_unavailable %r is above 100%%' % max_unavailable)
    elif not isinstance(max_unavailable, str) and pool and count > pool:
        errors.append('max_unavailable %d is more than the %d node(s) that run the driver; give 1 to %d (or a '
                      'percentage)' % (count, pool, pool))
    elif count is not None and unavailable >= count:
        errors.append('%d of the %d driver node(s) are cordoned (not by a driver upgrade) or not Ready, and '
                      'max_unavailable %r allows %d: the operator would start no node but the cordoned ones; uncordon '
                      'them or raise max_unavailable' % (unavailable, pool, max_unavailable, count))
    return errors


def batch_size(policy, pool, unavailable):
    """Nodes the operator starts at once (GetUpgradesAvailable at the start): maxParallelUpgrades, capped by
    maxUnavailable less the nodes unavailable already."""
    parallel = policy.get('maxParallelUpgrades') or pool
    count = scaled_unavailable(policy.get('maxUnavailable'), pool)
    return max(1, min(parallel, (count if count is not None else pool) - unavailable))


# --- nodes ------------------------------------------------------------------------------------

def _ready_condition(node):
    return all(c.get('status') == 'True' for c in (node.get('status') or {}).get('conditions') or []
               if c.get('type') == 'Ready')


def unavailable(node):
    """Cordoned or not Ready (GetCurrentUnavailableNodes)."""
    return bool((node.get('spec') or {}).get('unschedulable')) or not _ready_condition(node)


def node_state(node):
    return labels_of(node).get(LABEL_STATE, '')


def at_target(pod, image):
    """The node's driver pod runs ``image`` and is ready."""
    return pod is not None and pod_image(pod) == image and pod_ready(pod) and not meta_of(pod).get('deletionTimestamp')


def node_done(node, pod, image):
    return node_state(node) == DONE and at_target(pod, image)


def _policy_errors(policy_obj):
    current = (policy_obj.get('spec') or {}).get('driver') or {}
    errors = []  # useNvidiaDriverCRD: plans/driver_pools.py selection_errors
    if current.get('enabled') is False:
        errors.append('ClusterPolicy %s has driver.enabled: false: the operator does not manage the driver, so '
                      'there is nothing it would upgrade' % name_of(policy_obj))
    return errors


def _full_target(target, current, drivers):
    """``(target, errors)``: ``repository`` and ``image`` default to the ClusterPolicy's, else to those of the
    driver that runs (OLM's DRIVER_IMAGE when the ClusterPolicy names none)."""
    target = dict(target or {})
    errors = target_errors(target)
    running = next((pod_image(p) for _n, p in sorted(drivers.items())), None)
    run_repo, run_name, _tag, _digest = split_image(running)
    for key, fallback in (('repository', run_repo), ('image', run_name)):
        if not target.get(key):
            target[key] = current.get(key) or fallback or ''
            if not target[key]:
                errors.append('%s: the ClusterPolicy names none and no driver pod runs to take it from; give %s'
                              % (key, key))
    return target, errors


def _held_slots(pool, nodes):
    """Driver nodes cordoned or NotReady for another reason than this upgrade (the operator's own cordon ends with
    the node; so does that of a node marked when the upgrade was paused): these keep their slot."""
    return sum(1 for n in pool if unavailable(nodes[n]) and node_state(nodes[n]) not in IN_PROGRESS + (FAILED,)
               and ANN_PAUSED_CORDONED not in (meta_of(nodes[n]).get('annotations') or {}))


def _node_entry(node, pod, image):
    state = node_state(node)
    return {'node': name_of(node), 'from': image_version(pod_image(pod)), 'to': image_version(image),
            'image_from': pod_image(pod), 'image_to': image, 'state': state,
            'cordoned': bool((node.get('spec') or {}).get('unschedulable')), 'driver_pod': pod_words(pod),
            'change': not at_target(pod, image) or state not in (DONE, ''), 'resume': state in IN_PROGRESS + (FAILED,),
            'pods_to_evict': [], 'blocking_pdbs': [], 'blockers': {}, 'fallback_drain': []}


def empty_plan(errors):
    return {'errors': errors, 'warnings': [], 'nodes': [], 'upgrade': [], 'batches': [], 'skipped': [], 'patch': {},
            'policy': {}, 'target_image': [], 'batch_size': 0, 'changes': False}


def plan(request):
    """The plan of a driver upgrade. ``request``: ``cluster_policy`` (the object), ``nodes``, ``pods`` (every
    active pod: the driver pods and the workloads), ``pdbs``, ``target`` (``version``, ``repository``,
    ``image``; the last two default to the ClusterPolicy's, else to the running driver's), ``policy`` (typed,
    snake_case: plans/upgrade.py). Returns ``{'errors', 'warnings', 'target_image', 'patch', 'policy',
    'batch_size', 'nodes' (one entry per driver node), 'upgrade' (the names whose driver changes), 'batches'
    (rollout_summary's plan format), 'skipped', 'changes'}``."""
    policy_obj = request.get('cluster_policy')
    if policy_obj is None:
        return empty_plan(['no ClusterPolicy found: install the GPU operator and its ClusterPolicy first'])
    current = (policy_obj.get('spec') or {}).get('driver') or {}
    nodes = dict((name_of(n), n) for n in request.get('nodes') or [])
    pods = request.get('pods') or []
    drivers = driver_pods_by_node(pods)
    target, errors = _full_target(request.get('target'), current, drivers)
    errors = _policy_errors(policy_obj) + errors
    patch, policy_errors = policy_patch(target, request.get('policy'), current)
    errors.extend(policy_errors)
    driver = dict(current, **dict((k, target[k]) for k in ('version', 'repository', 'image') if target.get(k)))
    suffix, warnings = os_tag(nodes.values()), []
    if not suffix and not str(target.get('version') or '').startswith('sha256:'):
        warnings.append('no GPU node has the NFD os-release labels: the operator cannot name the driver image '
                        '(it appends <ID><VERSION_ID>); run NFD first')
    effective = effective_policy(current, patch)
    pool = sorted(n for n in drivers if n in nodes)
    managed = request.get('managed_nodes') or len(pool)  # one NVIDIADriver's: the operator counts every pool's
    errors.extend(parallelism_errors(effective, managed, _held_slots(pool, nodes)) if pool else [
        'no driver pod (label app=nvidia-driver-daemonset) runs on any node: the operator has no driver to upgrade '
        '(driver disabled, or preinstalled on the hosts)'])
    entries = [_node_entry(nodes[n], drivers[n], target_image(driver, nodes[n], suffix)) for n in pool]
    skipped = []
    for entry in entries:  # the operator leaves these as they are
        if labels_of(nodes[entry['node']]).get(LABEL_SKIP) == 'true':
            if not at_target(drivers[entry['node']], entry['image_to']):
                skipped.append(entry['node'])
            entry['change'] = False
    _all_evictions(entries, pods, request.get('pdbs') or [], effective)
    upgrade = [e['node'] for e in entries if e['change']]
    size = batch_size(effective, managed, sum(1 for n in pool if unavailable(nodes[n]))) if not errors else 0
    if skipped:
        warnings.append('node(s) %s carry %s=true: the operator leaves their driver as it is'
                        % (', '.join(skipped), LABEL_SKIP))
    return {'errors': errors, 'warnings': warnings, 'target_image': sorted(set(e['image_to'] for e in entries)),
            'patch': patch, 'policy': effective, 'batch_size': size, 'nodes': entries, 'upgrade': upgrade,
            'batches': _batches([e for e in entries if e['change']], size), 'skipped': skipped,
            'changes': not errors and bool(upgrade or patch)}


def _all_evictions(entries, pods, pdbs, effective):
    deletion = dict({'force': False, 'deleteEmptyDir': False}, **(effective.get('podDeletion') or {}))
    by_node = {}
    for pod in pods:
        by_node.setdefault((pod.get('spec') or {}).get('nodeName'), []).append(pod)
    for entry in entries:
        if entry['change']:
            _evictions(entry, by_node.get(entry['node']) or [], pdbs, deletion, effective.get('drain') or {})


def _evictions(entry, pods, pdbs, deletion, drain):
    """The GPU pods the operator deletes on the node, what would stop it, and, when ``drain.enable``, the pods
    its fallback drain evicts."""
    for pod in pods:
        if not operator_gpu_pod(pod) or _owned_by_daemonset(pod):
            continue
        ref = _ref(pod)
        entry['pods_to_evict'].append(ref)
        why = deletion_blockers(pod, pdbs, deletion)
        if why:
            entry['blockers'][ref] = why
        entry['blocking_pdbs'].extend(p for p in blocking_pdbs(pod, pdbs) if p not in entry['blocking_pdbs'])
    if drain.get('enable') and entry['blockers']:
        entry['fallback_drain'] = [_ref(p) for p in pods if not _owned_by_daemonset(p)
                                   and not is_driver_pod(p) and labels_of(p).get(LABEL_DRAIN_SKIP) != 'true'
                                   and (p.get('status') or {}).get('phase') not in ('Succeeded', 'Failed')]


def _batches(entries, size):
    """The rollout summary's plan format: ``[{'batch': i, 'nodes': [...]}]``, the cordoned nodes and those the
    operator started already first (it moves them on without a slot), then ``size`` nodes at a time by name."""
    first = [e for e in entries if e['cordoned'] or e['resume']]
    rest = [e for e in entries if e not in first]
    groups = ([first] if first else []) + [rest[i:i + size] for i in range(0, len(rest), size or 1)]
    keys = ('node', 'from', 'to', 'state', 'resume', 'pods_to_evict', 'blocking_pdbs', 'blockers', 'fallback_drain')
    return [{'batch': i + 1, 'nodes': [dict((k, e[k]) for k in keys) for e in group]}
            for i, group in enumerate(groups)]


def plan_lines(result):
    """The plan in words (one line per batch and per blocked pod)."""
    if result['errors']:
        return []
    lines = []
    if not result['upgrade']:
        lines.append('driver: every driver node runs %s already, nothing to upgrade' % ', '.join(result['target_image']))
    for batch in result['batches']:
        lines.append('batch %d: %s' % (batch['batch'], ', '.join(
            '%s %s -> %s%s' % (n['node'], n['from'] or '?', n['to'], ' (resumes from %s)' % n['state'] if n['resume']
                               else '') for n in batch['nodes'])))
        for n in batch['nodes']:
            if n['pods_to_evict']:
                lines.append('  %s: the operator deletes GPU pod(s) %s' % (n['node'], ', '.join(n['pods_to_evict'])))
            for ref, why in sorted(n['blockers'].items()):
                lines.append('  %s: %s would block: %s%s' % (n['node'], ref, '; '.join(why), (
                    ' (then the operator drains the node: %s)' % ', '.join(n['fallback_drain'])
                    if n['fallback_drain'] else ' (the node would end upgrade-failed)')))
    if result['patch']:
        lines.append('ClusterPolicy: set %s' % flat(result['patch']['driver'], 'driver'))
    return lines


def flat(value, path):
    """``{'a': {'b': True}}`` -> ``path.a.b=true``."""
    if isinstance(value, dict):
        return ', '.join(flat(v, '%s.%s' % (path, k)) for k, v in sorted(value.items()))
    return '%s=%s' % (path, str(value).lower() if isinstance(value, bool) else value)


# --- following the upgrade --------------------------------------------------------------------

def event_time(event):
    return event.get('lastTimestamp') or event.get('eventTime') or event.get('firstTimestamp') or ''


def node_events(events, node, since):
    """The operator's upgrade Events on ``node`` last seen at or after ``since`` (ISO 8601, to the second),
    oldest first."""
    out = [e for e in events or [] if e.get('reason') == EVENT_REASON
           and (e.get('involvedObject') or {}).get('name') == node and event_time(e)[:19] >= (since or '')[:19]]
    return sorted(out, key=event_time)


def operator_reason(events, node, since):
    """What the operator last said about the node: its newest Warning upgrade Event, else its newest one."""
    mine = node_events(events, node, since)
    warnings = [e for e in mine if e.get('type') == 'Warning']
    pick = (warnings or mine or [None])[-1]
    return (pick or {}).get('message') or 'the operator gave no reason (no %s Event on the node)' % EVENT_REASON


def millis(when):
    """An Event's time (to the second) as the progress times are written: ``...:31Z`` -> ``...:31.000Z``."""
    return when[:-1] + '.000Z' if len(when) == 20 and when.endswith('Z') else when


def event_states(events, node, since):
    """``[(state, time)]`` the operator's Events say the node entered since ``since``."""
    out = []
    for event in node_events(events, node, since):
        message = (event.get('message') or '').split(EVENT_COMBINED, 1)[-1]
        if message.startswith(EVENT_STATE_PREFIX):
            out.append((message[len(EVENT_STATE_PREFIX):].strip(), millis(event_time(event))))
    # Event times are to the second: states of the same second in the order a node passes them
    return sorted(out, key=lambda e: (e[1], STATES.index(e[0]) if e[0] in STATES else len(STATES)))


def merge_states(recorded, from_events, now_state, now, done):
    """The states a node entered, in order, with their times: ``recorded`` (``[(state, time)]`` so far) plus those
    the operator's Events name (``from_events``) and the state the node shows ``now`` (``upgrade-done`` only once
    ``done``: before, it is the old driver's). A state the Events date earlier than it was first seen takes the
    Event's time (the operator's own, to the second). Events past the state the node shows are left for the
    next poll (they were read after the node), so the last state recorded is the node's. Returns
    ``(states, entered)``: the new list and the states newly entered."""
    names = [s for s, _t in from_events]
    if now_state in names:
        from_events = from_events[:len(names) - names[::-1].index(now_state)]
    when = {}
    for state, at in from_events:
        when[state] = min(when.get(state, at), at)
    states = [(s, min(t, when.get(s, t))) for s, t in recorded]
    seen = set(s for s, _t in states)
    entered = [(s, when[s]) for s, _t in from_events
               if s not in seen and s != now_state and (s != DONE or done) and not seen.add(s)]
    if now_state and now_state not in seen and (now_state != DONE or done):
        entered.append((now_state, min(now, when.get(now_state, now))))
    return states + entered, [s for s, _t in entered]


def timeline_events(states):
    """The rollout timeline of a node (event -> time) from the states it entered (``[(state, time)]``,
    in order), for the fleet report: see TIMELINE."""
    out, last = {}, ''
    for state, event in TIMELINE:
        times = [when for seen, when in states if seen == state]
        if times:  # never before the step it follows (Event times are to the second, the polls' to the ms)
            out[event] = last = max(min(times), last)
    return out


def phase_of(state, done):
    """The progress phase of a node: 'done', 'failed', the operator's state, or 'unlabelled'."""
    if done:
        return 'done'
    if state == FAILED:
        return 'failed'
    return state or 'unlabelled'


def paused_annotations(nodes):
    """The nodes to mark before the operator's upgrades are paused (autoUpgrade false removes every state
    label): those the operator cordoned for the upgrade, so the resumed upgrade uncordons them at the end."""
    out = []
    for node in nodes or []:
        state = node_state(node)
        if (state in IN_PROGRESS[1:] or state == FAILED) and (node.get('spec') or {}).get('unschedulable') \
                and ANN_INITIAL_UNSCHEDULABLE not in (meta_of(node).get('annotations') or {}):
            out.append(name_of(node))
    return out


def describe_policy(policy):
    return 'maxParallelUpgrades %s, maxUnavailable %s' % (policy.get('maxParallelUpgrades'), policy.get('maxUnavailable'))
