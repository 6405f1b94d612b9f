# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Upgrade of NFD and the GPU operator installed through OLM to a pinned CSV. Pure, no I/O.

From what the upgrade role read (Subscriptions, InstallPlans, OperatorGroups, CSVs and
PackageManifests of each operator, the ClusterPolicy, the rollout lock Lease, the nodes), decide:

* per operator, whether it is at the target already (nothing to do), or may be upgraded: the
  target is in the channel's entries of the catalog, is newer than the installed CSV, the installed
  CSV is ``Succeeded``, the Subscription uses Manual approval, and OLM offers an unapproved
  InstallPlan for exactly that CSV (the one plan the upgrade approves);
* whether the cluster is quiet: the ClusterPolicy is ``ready`` and no MIG or sharing change is in
  progress (the rollout lock is held, a node carries the rollout engine's resume annotations, or
  the MIG manager is applying a config);
* the ClusterPolicy ``driver.upgradePolicy`` patch from the role's snake_case variables, in the
  field names of the CRD (docs/upgrade.md);
* each node's driver upgrade state (label ``nvidia.com/gpu-driver-upgrade-state``).

Every error is reported at once; the role stops before its first write when there is one.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json
import re

from ansible_collections.gpuops.gpu.plugins.module_utils.common import names
from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import (
    is_ascii_digits, is_int, type_name, unknown_key_errors)
from ansible_collections.gpuops.gpu.plugins.module_utils.common.lease import describe
from ansible_collections.gpuops.gpu.plugins.module_utils.common.objects import meta_of, name_of
from ansible_collections.gpuops.gpu.plugins.module_utils.common.selector import selector_errors
from ansible_collections.gpuops.gpu.plugins.module_utils.plans import olm

LABEL_DRIVER_UPGRADE_STATE = 'nvidia.com/gpu-driver-upgrade-state'
# the role's variable names -> ClusterPolicy driver.upgradePolicy fields (NVIDIA/k8s-operator-libs
# api/upgrade/v1alpha1/upgrade_spec.go, docs/upgrade.md)
POLICY_FIELDS = {'auto_upgrade': 'autoUpgrade', 'max_parallel_upgrades': 'maxParallelUpgrades',
                 'max_unavailable': 'maxUnavailable', 'drain': 'drain', 'pod_deletion': 'podDeletion',
                 'wait_for_completion': 'waitForCompletion'}
SECTION_FIELDS = {
    'drain': {'enable': 'enable', 'force': 'force', 'pod_selector': 'podSelector',
              'timeout_seconds': 'timeoutSeconds', 'delete_empty_dir': 'deleteEmptyDir'},
    'pod_deletion': {'force': 'force', 'timeout_seconds': 'timeoutSeconds', 'delete_empty_dir': 'deleteEmptyDir'},
    'wait_for_completion': {'pod_selector': 'podSelector', 'timeout_seconds': 'timeoutSeconds'},
}
BOOLS = ('auto_upgrade', 'enable', 'force', 'delete_empty_dir')
COUNTS = ('max_parallel_upgrades', 'timeout_seconds')
MIG_CHANGING = ('pending', 'rebooting')
_MAX_UNAVAILABLE = re.compile(r'^(\d+)%?$', re.ASCII)  # digits 0-9 only (\d alone takes other scripts' digits)


# --- versions ----------------------------------------------------------------------------------

def version_key(version):
    """A sort key for CSV versions: '26.7.0' < '26.10.0'; '4.18.0-202509100907' after '4.18.0'."""
    parts = re.split(r'[.\-+]', str(version or '').lstrip('v'))
    return tuple((0, int(p), '') if is_ascii_digits(p) else (1, 0, p) for p in parts if p != '')


def compare_versions(a, b):
    """-1, 0 or 1 as version ``a`` is older than, the same as, or newer than ``b``."""
    ka, kb = version_key(a), version_key(b)
    return (ka > kb) - (ka < kb)


def csv_version_of(name, entries=None):
    """The version of CSV ``name``: from the channel entries when listed, else from the name
    ('gpu-operator-certified.v26.7.0' -> '26.7.0', 'nfd.4.18.0-2025' -> '4.18.0-2025')."""
    for entry in entries or []:
        if entry.get('name') == name and entry.get('version'):
            return entry['version']
    rest = name.split('.', 1)[1] if '.' in (name or '') else (name or '')
    return rest[1:] if rest[:1] == 'v' and is_ascii_digits(rest[1:2]) else rest


# --- driver.upgradePolicy ----------------------------------------------------------------------

def _value_errors(key, value, path):
    if key in BOOLS and not isinstance(value, bool):
        return ['%s must be true or false, got %s' % (path, type_name(value))]
    if key in COUNTS and (not is_int(value) or value < 0):
        return ['%s must be a whole number of 0 or more, got %r' % (path, value)]
    if key == 'max_unavailable' and (isinstance(value, bool) or not _MAX_UNAVAILABLE.match(str(value))):
        return ["%s must be a node count like 2 or a percentage like '25%%', got %r" % (path, value)]
    if key == 'pod_selector':
        return selector_errors(value, path)
    return []


def _convert(key, value):
    if key in COUNTS:
        return int(value)
    if key == 'max_unavailable':
        text = str(value)
        return text if text.endswith('%') else int(text)
    return value


def driver_upgrade_policy(policy, path='upgrade_driver_upgrade_policy'):
    """``(patch, errors)``: the ClusterPolicy spec patch ``{'driver': {'upgradePolicy': {...}}}``
    for the options set (None = leave as it is), ``{}`` when none is set."""
    if policy in (None, {}):
        return {}, []
    if not isinstance(policy, dict):
        return {}, ['%s must be a mapping, got %s' % (path, type_name(policy))]
    errors = unknown_key_errors(policy, sorted(POLICY_FIELDS), path)
    out = {}
    for key, field in sorted(POLICY_FIELDS.items()):
        value = policy.get(key)
        if value is None:
            continue
        if key in SECTION_FIELDS:
            section, section_errors = _section(value, key, '%s.%s' % (path, key))
            errors.extend(section_errors)
            if section:
                out[field] = section
            continue
        value_errors = _value_errors(key, value, '%s.%s' % (path, key))
        errors.extend(value_errors)
        if not value_errors:
            out[field] = _convert(key, value)
    return ({'driver': {'upgradePolicy': out}} if out and not errors else {}), errors


def _section(value, key, path):
    if not isinstance(value, dict):
        return {}, ['%s must be a mapping, got %s' % (path, type_name(value))]
    known = SECTION_FIELDS[key]
    errors = unknown_key_errors(value, sorted(known), path)
    out = {}
    for sub, field in sorted(known.items()):
        if value.get(sub) is None:
            continue
        sub_errors = _value_errors(sub, value[sub], '%s.%s' % (path, sub))
        errors.extend(sub_errors)
        if not sub_errors:
            out[field] = _convert(sub, value[sub])
    return out, errors


# --- nodes and the rollout lock ----------------------------------------------------------------

def driver_upgrade_states(nodes):
    """``[{'node', 'state'}]`` of the nodes carrying ``nvidia.com/gpu-driver-upgrade-state``, by name."""
    out = []
    for node in nodes or []:
        md = meta_of(node)
        state = (md.get('labels') or {}).get(LABEL_DRIVER_UPGRADE_STATE)
        if state is not None:
            out.append({'node': md.get('name'), 'state': state})
    return sorted(out, key=lambda n: n['node'] or '')


def changes_in_progress(lock, nodes):
    """Messages naming each MIG or sharing change in progress: the rollout lock held by a run (``lock``:
    its state as gpuops.gpu.rollout_lock reads it, None when unread), nodes with the rollout engine's
    resume annotations (a run that stopped or was killed), nodes whose MIG manager is applying a config."""
    out = []
    state = lock or {'state': 'free'}
    if state['state'] == 'held':
        out.append('the rollout lock (Lease %s) is held by %s; wait until that rollout ends'
                   % (names.LOCK_LEASE_NAME, describe(state)))
    for node in sorted(nodes or [], key=lambda n: name_of(n) or ''):
        md = meta_of(node)
        ann, labels = md.get('annotations') or {}, md.get('labels') or {}
        target = ann.get(names.ANN_ROLLOUT_TARGET)
        if target or ann.get(names.ANN_ROLLOUT_PHASE):
            out.append('node %s is in a rollout (%s %s, phase %s); finish it by re-running that rollout, or run '
                       'the reset role' % (md.get('name'), names.ANN_ROLLOUT_TARGET, target or '-',
                                           ann.get(names.ANN_ROLLOUT_PHASE) or '-'))
        if labels.get(names.LABEL_MIG_STATE) in MIG_CHANGING:
            out.append('node %s is applying a MIG config (%s=%s); wait until it is success'
                       % (md.get('name'), names.LABEL_MIG_STATE, labels[names.LABEL_MIG_STATE]))
    return out


# --- one operator ------------------------------------------------------------------------------

def _installed(op):
    """(Subscription, installed CSV name, installed CSV dict or None)."""
    sub = op.get('subscription')
    installed = ((sub or {}).get('status') or {}).get('installedCSV')
    csv = next((c for c in op.get('csvs') or [] if name_of(c) == installed), None)
    return sub, installed, csv


def _catalog_errors(op, sub, target):
    """(channel entries, errors) of the catalog check; entries None when the package API is not served."""
    if not op.get('package_api'):
        return None, []
    manifest = op.get('manifest')
    spec = (sub or {}).get('spec') or {}
    if manifest is None:
        return None, ['%s: catalog %s/%s has no package %s' % (
            op['name'], spec.get('sourceNamespace'), spec.get('source'), op['package'])]
    try:
        _channel, info = olm.package_channel(manifest, spec.get('channel'), target)
    except olm.OlmError as exc:
        return None, ['%s: the target %s is not in the catalog: %s' % (op['name'], target, exc)]
    return info.get('entries') or [], []


def _state_errors(op, sub, installed, csv):
    name, ns = op['name'], op['namespace']
    if sub is None:
        return ['%s: Subscription %s/%s not found; install the operator first (playbooks/install.yml) or set '
                '%s_subscription' % (name, ns, op['subscription_name'], op['var_prefix'])]
    errors = []
    if ((sub.get('spec') or {}).get('installPlanApproval') or 'Automatic') != 'Manual':
        errors.append('%s: Subscription %s/%s has Automatic InstallPlan approval, so OLM upgrades it by itself; '
                      'install it with approval Manual to pin versions' % (name, ns, sub['metadata']['name']))
    if not installed:
        errors.append('%s: Subscription %s/%s has no installed CSV yet (%s)' % (
            name, ns, sub['metadata']['name'], olm.describe_wait(sub, [], None)))
    elif olm.csv_phase(csv)[0] != olm.CSV_SUCCEEDED:
        phase, reason, message = olm.csv_phase(csv)
        errors.append('%s: the installed CSV %s is %s%s%s, not Succeeded; fix it before upgrading' % (
            name, installed, phase or 'missing', ' (%s)' % reason if reason else '', ': ' + message if message else ''))
    return errors


def _offered_plan(op, sub, target):
    """(the unapproved InstallPlan name for ``target``, errors)."""
    plans = olm.subscription_plans(op.get('install_plans') or [], sub)
    approve, held = olm.plans_to_approve(plans, target)
    if approve:
        return approve[0]['name'], []
    done = [p for p in plans if target in olm.plan_csvs(p) and olm.plan_phase(p) not in ('Complete', 'Failed')]
    if done:  # approved already, installing
        return done[0]['metadata']['name'], []
    offered = ', '.join('%s for %s' % (h['name'], ', '.join(h['csvs'])) for h in held) or 'none'
    return None, ['%s: OLM offers no InstallPlan for %s (unapproved InstallPlans: %s); OLM offers one update '
                  'for the installed CSV: pick the CSV of that InstallPlan as the target'
                  % (op['name'], target, offered)]


def operator_plan(op):
    """The decision for one operator: ``{'operator', 'from', 'to', 'from_version', 'to_version',
    'action' ('upgrade' | 'none'), 'install_plan', 'errors', 'warnings', 'module_params'}``."""
    target = op['target']
    sub, installed, csv = _installed(op)
    out = {'operator': op['name'], 'namespace': op['namespace'], 'package': op['package'], 'from': installed,
           'to': target, 'from_version': None, 'to_version': None, 'action': 'none', 'install_plan': None,
           'errors': [], 'warnings': [], 'module_params': {}}
    errors = out['errors']
    errors.extend(_state_errors(op, sub, installed, csv))
    if sub is None:
        return out
    entries, catalog_errors = _catalog_errors(op, sub, target)
    errors.extend(catalog_errors)
    if not op.get('package_api'):
        out['warnings'].append('%s: the PackageManifest API is not served or not readable; the target is checked '
                               'against the InstallPlans OLM offers only' % op['name'])
    out['from_version'] = ((csv or {}).get('spec') or {}).get('version') or (
        csv_version_of(installed, entries) if installed else None)
    out['to_version'] = csv_version_of(target, entries)
    if installed == target or errors:
        return out
    if compare_versions(out['to_version'], out['from_version']) <= 0:
        errors.append('%s: the target %s (%s) is not newer than the installed %s (%s); OLM does not downgrade'
                      % (op['name'], target, out['to_version'], installed, out['from_version']))
        return out
    out['install_plan'], plan_errors = _offered_plan(op, sub, target)
    errors.extend(plan_errors)
    if not errors:
        out['action'] = 'upgrade'
        out['module_params'] = _module_params(op, sub)
    return out


def _module_params(op, sub):
    """gpuops.gpu.olm_operator parameters that change nothing but the pin: the Subscription's own
    channel and source, the OperatorGroup's own target namespaces."""
    spec = sub.get('spec') or {}
    groups = op.get('operator_groups') or []
    params = {'package': op['package'], 'namespace': op['namespace'], 'subscription_name': sub['metadata']['name'],
              'channel': spec.get('channel') or '', 'source': spec.get('source'),
              'source_namespace': spec.get('sourceNamespace'), 'starting_csv': op['target'], 'approval': 'Manual',
              'create_namespace': False}
    if len(groups) == 1:
        params['target_namespaces'] = olm.operator_group_targets(groups[0])
    if spec.get('config'):
        params['config'] = spec['config']
    return params


# --- the whole upgrade -------------------------------------------------------------------------

def _policy_errors(cluster_policy, needed):
    """The ClusterPolicy must be ready: always when one exists, and it must exist when ``needed``."""
    info = cluster_policy or {}
    policy = info.get('cluster_policy')
    if policy is None:
        if needed:
            return ['no single ClusterPolicy to check (%s); the GPU operator upgrade and the driver upgrade policy '
                    'need one that is ready' % ('; '.join(info.get('errors') or []) or 'none found')]
        return []
    state = info.get('state') or ((policy.get('status') or {}).get('state')) or ''
    if state != 'ready':
        return ['ClusterPolicy %s is %s, not ready; an upgrade starts from a working GPU stack only: fix it first'
                % (policy['metadata']['name'], state or 'without a state')]
    return []


def upgrade_plan(request):
    """The plan of an upgrade run from what the role read (``request``: ``operators`` (see
    ``operator_plan``), ``cluster_policy`` (cluster_policy_info's result), ``lock`` (the rollout lock's
    state as gpuops.gpu.rollout_lock returns it), ``nodes``, ``driver_upgrade_policy``). Returns ``{'operators', 'upgrades', 'cluster_policy_patch',
    'errors', 'warnings', 'actions', 'changes'}``."""
    operators = [operator_plan(op) for op in request.get('operators') or []]
    patch, errors = driver_upgrade_policy(request.get('driver_upgrade_policy'))
    needs_policy = bool(patch) or any(op['operator'] == 'gpu_operator' for op in operators)
    errors = [e for op in operators for e in op['errors']] + errors
    if operators or patch:  # nothing else to write (a driver upgrade alone: its module checks the ClusterPolicy)
        errors.extend(_policy_errors(request.get('cluster_policy'), needs_policy))
    errors.extend(changes_in_progress(request.get('lock'), request.get('nodes')))
    upgrades = [op for op in operators if op['action'] == 'upgrade']
    actions = []
    for op in operators:
        if op['action'] == 'upgrade':
            actions.append('%s: approve InstallPlan %s/%s to go from %s to %s' % (
                op['operator'], op['namespace'], op['install_plan'], op['from'], op['to']))
        elif not op['errors']:
            actions.append('%s: at %s already, nothing to do' % (op['operator'], op['from']))
    if patch:
        actions.append('ClusterPolicy: set driver.upgradePolicy %s (where it differs)'
                       % json.dumps(patch['driver']['upgradePolicy'], sort_keys=True))
    return {'operators': operators, 'upgrades': [] if errors else upgrades,
            'cluster_policy_patch': patch, 'errors': errors,
            'warnings': [w for op in operators for w in op['warnings']], 'actions': actions,
            'changes': not errors and bool(upgrades)}
