# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A rollout bound to its cluster and to the plan a person approved.

An AWX workflow runs a rollout role in check mode (the plan), waits for an approval, then runs the same role
for real (the apply). The plan job hands on what it planned (``approved_plan``: the kind, the cluster it read,
the changes and their digest); the apply job computes its plan again and goes ahead only when it reached the
same cluster and its changes have the same digest (``approval_errors``). The changes are what a person approves:
the nodes per batch with their configuration from and to, and the role's other writes (documents, ClusterPolicy
patch). The pods a drain would evict are not part of them: workloads come and go between plan and apply, and the
drain handles them (PodDisruptionBudgets included).

A cluster is named by its API server URL and the UID of its ``kube-system`` namespace (the server URL alone may
point at another cluster after a DNS or load-balancer change; the UID does not change while the cluster lives).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import hashlib
import json

from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import type_name, unknown_key_errors

# Per node of a batch: what the drain would meet now, not what is approved.
TRANSIENT_NODE_KEYS = ('pods_to_evict', 'blocking_pdbs')
CLUSTER_KEYS = ('server', 'uid')
APPROVED_KEYS = ('kind', 'digest', 'cluster', 'changes')


def changes(plan):
    """The approvable part of a role's ``plan`` (a mapping): every value as given, except that the nodes of a
    ``batches`` list (the rollout modules' check-mode ``plan``) lose their transient keys."""
    out = dict(plan or {})
    if isinstance(out.get('batches'), list):
        out['batches'] = [_batch(batch) for batch in out['batches']]
    return out


def _batch(batch):
    if not isinstance(batch, dict) or not isinstance(batch.get('nodes'), list):
        return batch
    nodes = [dict((k, v) for k, v in node.items() if k not in TRANSIENT_NODE_KEYS) if isinstance(node, dict) else node
             for node in batch['nodes']]
    return dict(batch, nodes=nodes)


def digest(kind, planned):
    """sha256 of the kind and the changes, as canonical JSON (sorted keys, no spaces)."""
    text = json.dumps({'kind': kind, 'changes': planned}, sort_keys=True, separators=(',', ':'), default=str)
    return hashlib.sha256(text.encode('utf-8')).hexdigest()


def approved_plan(kind, plan, cluster):
    """What a plan job hands on to the approval and the apply: {kind, digest, cluster, changes}."""
    planned = changes(plan)
    return {'kind': kind, 'digest': digest(kind, planned), 'cluster': dict((k, cluster.get(k) or '') for k in CLUSTER_KEYS),
            'changes': planned}


def input_errors(approved, expected_cluster):
    """Malformed ``approved`` (an approved_plan result, or empty) and ``expected_cluster`` ({server, uid}, or empty)."""
    errors = []
    for name, value, keys in (('approved_plan', approved, APPROVED_KEYS), ('expected_cluster', expected_cluster, CLUSTER_KEYS)):
        if value in (None, '', {}):
            continue
        if not isinstance(value, dict):
            errors.append('%s must be a mapping (%s), got %s' % (name, ', '.join(keys), type_name(value)))
            continue
        errors.extend(unknown_key_errors(value, list(keys), name))
    if isinstance(approved, dict) and approved:
        missing = [k for k in APPROVED_KEYS if k not in approved]
        if missing:
            errors.append('approved_plan lacks %s: pass on the gpuops_plan artifact of the plan job unchanged'
                          % ', '.join(missing))
    return errors


def cluster_errors(seen, expected, what):
    """Messages for each of server / uid that ``expected`` names and ``seen`` differs in."""
    out = []
    for key, label in (('server', 'API server'), ('uid', 'kube-system namespace UID')):
        if (expected or {}).get(key) and expected[key] != seen.get(key):
            out.append('this job reached the cluster with %s %s, but %s names %s; nothing was changed. Check the '
                       "job's credential and inventory" % (label, seen.get(key) or '(unknown)', what, expected[key]))
    return out


def approval_errors(kind, plan, cluster, approved, expected_cluster):
    """Why the apply may not go ahead: another cluster than the workflow's (``expected_cluster``) or the plan's,
    another kind, or changes whose digest differs from the approved one (both change lists in the message)."""
    errors = cluster_errors(cluster, expected_cluster, "the workflow's inventory (gpuops_cluster)")
    if not approved:
        return errors
    errors.extend(cluster_errors(cluster, approved.get('cluster'), 'the approved plan'))
    if approved.get('kind') != kind:
        errors.append('the approved plan is a %s plan, this is a %s run; nothing was changed' % (approved.get('kind'), kind))
        return errors
    now = approved_plan(kind, plan, cluster)
    if now['digest'] != approved.get('digest'):
        errors.append('the %s plan changed since it was approved (digest %s, approved %s); nothing was changed. Plan '
                      'again and approve the new plan. Approved: %s. Now: %s'
                      % (kind, now['digest'][:12], str(approved.get('digest'))[:12],
                         _compact(approved.get('changes')), _compact(now['changes'])))
    return errors


def _compact(value):
    return json.dumps(value, sort_keys=True, separators=(',', ':'), default=str)
