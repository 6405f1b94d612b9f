# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""GPU node placement: taints we own on nodes / MachineSet templates, and the matching
tolerations on the three layers that must run on those nodes. Pure, no I/O.

Ownership: the taints gpuops.gpu put on an object are recorded in the annotation
``gpuops.gpu/owned-taints`` (JSON list of ``key:effect``, the identity Kubernetes keys taints
by). A run changes or removes only those, plus the ones the user names explicitly in
``remove``; any other taint (cloud provider, node lifecycle, other tools) is left alone.

Toleration layers (all three REPLACE their default list, see tolerations.py; the layers are
written before any taint so nothing is evicted):
- NFD worker: ``NodeFeatureDiscovery`` (nfd.openshift.io/v1) ``spec.operand.workerTolerations``
  (cluster-nfd-operator release-4.22 appends them to its built-in ``Exists NoSchedule``);
- GPU operator pod: OLM ``Subscription`` ``spec.config.tolerations``;
- GPU operands: ``ClusterPolicy`` ``spec.daemonsets.tolerations`` (replaces the built-in
  ``nvidia.com/gpu`` toleration, so it is always kept).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import json

from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import label_key_errors, suggest, type_name
from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import (
    CLUSTER_POLICY_API_VERSION, CLUSTER_POLICY_KIND)
from ansible_collections.gpuops.gpu.plugins.module_utils.common.objects import meta_of
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import tolerations as tol
from ansible_collections.gpuops.gpu.plugins.module_utils.common.merge import get_path

OWNED_ANNOTATION = 'gpuops.gpu/owned-taints'
LAYERS = ('nfd', 'subscription', 'cluster_policy')
LAYER_PATHS = {
    'nfd': ('spec', 'operand', 'workerTolerations'),
    'subscription': ('spec', 'config', 'tolerations'),
    'cluster_policy': ('spec', 'daemonsets', 'tolerations'),
}
# layer -> (key of the objects in ``cluster``, kind, apiVersion, what to do when there is none)
LAYER_SOURCES = {
    'nfd': ('nfd', 'NodeFeatureDiscovery', 'nfd.openshift.io/v1', 'install NFD first (gpuops.gpu.nfd)'),
    'subscription': ('subscriptions', 'Subscription', 'operators.coreos.com/v1alpha1',
                     'install the GPU operator with OLM first (gpuops.gpu.gpu_operator)'),
    'cluster_policy': ('cluster_policies', CLUSTER_POLICY_KIND, CLUSTER_POLICY_API_VERSION,
                       'install the GPU operator and its ClusterPolicy first'),
}
_TAINT_RESULTS = ('added', 'updated', 'removed', 'adopted', 'kept', 'conflicts')


def identity(taint):
    """'key:effect', how Kubernetes identifies a taint (one per key and effect)."""
    return '%s:%s' % (taint.get('key'), taint.get('effect'))


def owned_taints(annotations):
    """The identities recorded in the ownership annotation (unreadable values count as none)."""
    raw = (annotations or {}).get(OWNED_ANNOTATION)
    if not raw:
        return []
    try:
        value = json.loads(raw)
    except ValueError:
        return []
    return [str(v) for v in value] if isinstance(value, list) else []


def remove_spec_errors(specs, path='remove'):
    """``remove`` entries are 'key' (every effect) or 'key:effect'."""
    if specs is None:
        return []
    if not isinstance(specs, (list, tuple)):
        return ['%s must be a list of taint keys or key:effect, got %s' % (path, type_name(specs))]
    errors = []
    for index, spec in enumerate(specs):
        if not isinstance(spec, str) or not spec:
            errors.append('%s[%d] must be a taint key or key:effect string' % (path, index))
            continue
        key, sep, effect = spec.rpartition(':') if ':' in spec else (spec, '', '')
        errors.extend('%s[%d] key %s' % (path, index, e) for e in label_key_errors(key))
        if sep and effect not in tol.TAINT_EFFECTS:
            errors.append("%s[%d] effect must be one of %s, got '%s'"
                          % (path, index, ', '.join(tol.TAINT_EFFECTS), effect))
    return errors


def _matches_remove(taint, specs):
    for spec in specs or []:
        key, sep, effect = spec.rpartition(':') if ':' in spec else (spec, '', '')
        if taint.get('key') == key and (not sep or taint.get('effect') == effect):
            return True
    return False


def _same(a, b):
    return (a.get('key'), a.get('value') or '', a.get('effect')) == (b.get('key'), b.get('value') or '', b.get('effect'))


def _clean(taint):
    out = {'key': taint['key'], 'effect': taint['effect']}
    if taint.get('value'):
        out['value'] = taint['value']
    return out


def plan_taints(current, owned, desired, state='present', remove=None):
    """New taint list and ownership for one object.

    ``current``: the object's taints; ``owned``: identities from the annotation; ``desired``: the
    taints to have (``state=present``) or to take away (``state=absent``); ``remove``: foreign
    taints to remove anyway ('key' or 'key:effect').

    present: desired taints are added (or their value updated when we own them); taints we own
    that are no longer desired are removed; a foreign taint with the same key and effect and the
    same value is adopted; with another value it is a conflict (unless ``remove`` names it).
    absent: desired taints we own are removed; foreign ones are kept (listed in ``kept``) unless
    ``remove`` names them. Returns ``{'taints', 'owned', 'added', 'updated', 'removed',
    'adopted', 'kept', 'conflicts', 'changed'}`` (identities in the lists).
    """
    planner = _TaintPlanner(owned, desired, state, remove)
    for taint in current or []:
        if isinstance(taint, dict):
            planner.visit(dict(taint))
    if state == 'present':
        planner.add_missing()
    return planner.result()


class _TaintPlanner(object):
    """The state of one plan_taints() run: taints kept so far, identities owned, what happened."""

    def __init__(self, owned, desired, state, remove):
        self.owned = list(owned or [])
        self.desired = [_clean(t) for t in (desired or [])]
        self.ids = [identity(t) for t in self.desired]
        self.state = state
        self.remove = remove
        self.new_owned = list(self.owned)
        self.out = []
        self.changes = dict((key, []) for key in _TAINT_RESULTS)

    def visit(self, taint):
        """Decide one current taint: keep it (possibly updated) or drop it."""
        ident = identity(taint)
        wanted = self.state == 'present' and ident in self.ids
        if _matches_remove(taint, self.remove) and not (wanted and ident in self.owned):
            return self._drop(ident)
        if self.state == 'absent':
            if ident in self.ids and ident in self.owned:
                return self._drop(ident)
            if ident in self.ids:
                self.changes['kept'].append(ident)
        elif wanted:
            taint = self._reconcile(taint, ident, self.desired[self.ids.index(ident)])
        elif ident in self.owned:
            return self._drop(ident)
        self.out.append(taint)
        return None

    def _drop(self, ident):
        self.changes['removed'].append(ident)
        if ident in self.new_owned:
            self.new_owned.remove(ident)

    def _reconcile(self, taint, ident, want):
        """A current taint with the identity of a desired one: update, adopt or report a conflict."""
        if _same(taint, want):
            if ident not in self.owned:
                self.changes['adopted'].append(ident)
                self.new_owned.append(ident)
            return taint
        if ident in self.owned:
            self.changes['updated'].append(ident)
            return dict(want)
        self.changes['conflicts'].append('%s (has value %r, wanted %r; not ours: remove it first or name it in '
                                         'remove)' % (ident, taint.get('value') or '', want.get('value') or ''))
        return taint

    def add_missing(self):
        """Append the desired taints the object does not carry yet (and own them)."""
        present_ids = [identity(t) for t in self.out]
        for want, ident in zip(self.desired, self.ids):
            if ident not in present_ids:
                self.out.append(dict(want))
                self.changes['added'].append(ident)
                if ident not in self.new_owned:
                    self.new_owned.append(ident)

    def result(self):
        # identities we recorded but that are gone from the object are forgotten
        final_ids = [identity(t) for t in self.out]
        new_owned = sorted(set(o for o in self.new_owned if o in final_ids))
        result = dict(self.changes)
        result['taints'] = self.out
        result['owned'] = new_owned
        result['changed'] = bool(result['added'] or result['updated'] or result['removed']) \
            or new_owned != sorted(set(self.owned))
        return result


def owned_annotation_value(owned):
    """Annotation value for ``owned`` (None removes the annotation)."""
    return json.dumps(sorted(owned), separators=(',', ':')) if owned else None


# --- tolerations on the three layers ---------------------------------------------------------

def _nest(path, value):
    out = value
    for part in reversed(path):
        out = {part: out}
    return out


def daemonsets_not_ready_for(daemonsets, taints, owner_kind=None):
    """``namespace/name`` of the DaemonSets whose pods would not survive ``taints``: the pod
    template does not tolerate every taint, or the rollout of the template is not finished
    (observedGeneration behind, or not every scheduled pod updated — except for ``OnDelete``
    DaemonSets such as the operator's driver, whose pods are replaced by its upgrade controller,
    not by time). ``owner_kind`` keeps only DaemonSets owned by that kind (e.g. ClusterPolicy)."""
    waiting = []
    for ds in daemonsets or []:
        md = meta_of(ds)
        if owner_kind and not any(o.get('kind') == owner_kind for o in md.get('ownerReferences') or []):
            continue
        pod = (((ds.get('spec') or {}).get('template') or {}).get('spec') or {})
        status = ds.get('status') or {}
        tolerated = all(any(tol.tolerates(t, taint) for t in pod.get('tolerations') or []) for taint in taints or [])
        on_delete = (((ds.get('spec') or {}).get('updateStrategy') or {}).get('type')) == 'OnDelete'
        rolled = (status.get('observedGeneration') or 0) >= (md.get('generation') or 0) and \
            (on_delete or (status.get('updatedNumberScheduled') or 0) >= (status.get('desiredNumberScheduled') or 0))
        if not (tolerated and rolled):
            waiting.append('%s/%s' % (md.get('namespace'), md.get('name')))
    return waiting


def placement_tolerations(taints, extra=None, match_value=False):
    """Tolerations every layer needs: one per taint (Exists on key and effect unless
    ``match_value``), plus ``extra``, plus ``nvidia.com/gpu``. Raises ValueError."""
    return tol.merge_tolerations(tol.tolerations_for_taints(taints, match_value=match_value), extra,
                                 keep_gpu=True)


def placement_plan(config, cluster=None):
    """Validation and toleration patches for the gpu_node_placement role.

    ``config``: taints, tolerations (extra), match_value, layers, state, remove.
    ``cluster``: nfd (list of NodeFeatureDiscovery), subscriptions (list), cluster_policies
    (list), with the objects as read. Returns ``{'errors', 'warnings', 'tolerations',
    'patches': [{'layer', 'api_version', 'kind', 'name', 'namespace', 'patch', 'definition',
    'before', 'after', 'changed'}]}``.
    """
    config = dict(config or {})
    cluster = dict(cluster or {})
    plan = {'errors': [], 'warnings': [], 'tolerations': [], 'patches': []}
    errors, layers = _placement_config_errors(config)
    plan['errors'].extend(errors)
    if errors:
        return plan
    taints = config.get('taints') if config.get('state', 'present') == 'present' else []
    wanted = placement_tolerations(taints, config.get('tolerations'), bool(config.get('match_value')))
    plan['tolerations'] = wanted
    for layer in LAYERS:
        if layer not in layers:
            continue
        key, kind, _api_version, hint = LAYER_SOURCES[layer]
        objects = cluster.get(key) or []
        if not objects:
            plan['errors'].append('no %s found for the %s layer: %s, or drop %s from gpu_node_placement_layers'
                                  % (kind, layer, hint, layer))
        for obj in objects:
            try:
                plan['patches'].append(_layer_patch(layer, obj, wanted))
            except ValueError as exc:
                plan['errors'].append(str(exc))
    return plan


def _placement_config_errors(config):
    """(errors, layers) of the role's input."""
    errors = ['gpu_node_placement_' + e for e in tol.taint_errors(config.get('taints'), 'taints')
              + tol.toleration_errors(config.get('tolerations'), 'tolerations')
              + remove_spec_errors(config.get('remove'), 'remove')]
    state = config.get('state', 'present')
    if state not in ('present', 'absent'):
        errors.append("gpu_node_placement_state must be present or absent, got '%s'" % state)
    layers = config.get('layers')
    if layers is None:
        layers = list(LAYERS)
    if not isinstance(layers, (list, tuple)):
        errors.append('gpu_node_placement_layers must be a list, got %s' % type_name(layers))
        layers = []
    for layer in layers:
        if layer not in LAYERS:
            hint = suggest(layer, LAYERS)
            errors.append("gpu_node_placement_layers: unknown layer '%s'%s (known: %s)" % (
                layer, "; did you mean '%s'?" % hint if hint else '', ', '.join(LAYERS)))
    return errors, layers


def _layer_patch(layer, obj, wanted):
    """The patch that merges ``wanted`` into one object's toleration list; ValueError when its
    current tolerations are invalid."""
    _key, kind, api_version, _hint = LAYER_SOURCES[layer]
    path = LAYER_PATHS[layer]
    md = meta_of(obj)
    before = list(get_path(obj, path) or [])
    try:
        after = tol.merge_tolerations(before, wanted, keep_gpu=True)
    except ValueError as exc:
        raise ValueError('%s %s has invalid tolerations at %s: %s' % (kind, md.get('name'), '.'.join(path), exc))
    metadata = {'name': md.get('name')}
    if md.get('namespace'):
        metadata['namespace'] = md['namespace']
    definition = {'apiVersion': api_version, 'kind': kind, 'metadata': metadata, 'spec': _nest(path[1:], after)}
    return {'layer': layer, 'api_version': api_version, 'kind': kind, 'name': md.get('name'),
            'namespace': md.get('namespace'), 'patch': _nest(path, after), 'definition': definition,
            'before': before, 'after': after, 'changed': after != before}
