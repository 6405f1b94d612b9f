# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpuops.gpu.node_taints against the cluster: read the selected Nodes and MachineSets (every one
missing is an input error, before any write), plan each with placement.plan_taints, write with a
resourceVersion-guarded merge patch (re-read and re-plan on 409)."""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.module_utils.common.objects import meta_of
from ansible_collections.gpuops.gpu.plugins.module_utils.plans import placement
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.tolerations import taint_errors
from ansible_collections.gpuops.gpu.plugins.module_utils.common.errors import InputError

try:
    from kubernetes.dynamic.exceptions import ConflictError, NotFoundError
except ImportError:  # pragma: no cover - the module reports the missing library
    ConflictError = NotFoundError = Exception

MERGE_PATCH = 'application/merge-patch+json'
KINDS = {
    'Node': ('v1', ('spec', 'taints')),
    'MachineSet': ('machine.openshift.io/v1beta1', ('spec', 'template', 'spec', 'taints')),
}


def _dict(obj):
    return obj.to_dict() if hasattr(obj, 'to_dict') else obj


def _taints_of(obj, kind):
    node = obj
    for part in KINDS[kind][1]:
        node = (node or {}).get(part)
    return list(node or [])


def _nest(path, value):
    out = value
    for part in reversed(path):
        out = {part: out}
    return out


class Taints(object):
    def __init__(self, conn, params):
        self.params = params
        self.apis = {}
        self.dynamic = conn.dynamic

    def api(self, kind):
        if kind not in self.apis:
            self.apis[kind] = self.dynamic.resources.get(api_version=KINDS[kind][0], kind=kind)
        return self.apis[kind]

    def read_all(self):
        """[(kind, object)] for every selected object; InputError before any write when one is missing."""
        params = self.params
        found, errors = {}, []
        if params['nodes'] or params['label_selector']:
            for name in params['nodes']:
                try:
                    found[('Node', name)] = _dict(self.api('Node').get(name=name))
                except NotFoundError:
                    errors.append('node %s does not exist' % name)
            if params['label_selector']:
                items = _dict(self.api('Node').get(label_selector=params['label_selector'])).get('items') or []
                if not items and params['require_match']:
                    errors.append("label_selector '%s' matches no node" % params['label_selector'])
                for item in items:
                    found[('Node', item['metadata']['name'])] = item
        if params['machinesets'] or params['machineset_selector']:
            ns = params['machine_namespace']
            try:
                api = self.api('MachineSet')
            except Exception as exc:  # ResourceNotFoundError: no machine API (not OpenShift)
                raise InputError('MachineSets are not served by this cluster (machine.openshift.io/v1beta1): %s'
                                 % exc)
            for name in params['machinesets']:
                try:
                    found[('MachineSet', name)] = _dict(api.get(name=name, namespace=ns))
                except NotFoundError:
                    errors.append('MachineSet %s/%s does not exist' % (ns, name))
            if params['machineset_selector']:
                items = _dict(api.get(namespace=ns, label_selector=params['machineset_selector'])).get('items') or []
                if not items and params['require_match']:
                    errors.append("machineset_selector '%s' matches no MachineSet in %s"
                                  % (params['machineset_selector'], ns))
                for item in items:
                    found[('MachineSet', item['metadata']['name'])] = item
        if errors:
            raise InputError('; '.join(errors))
        return [(kind, found[(kind, name)]) for kind, name in sorted(found)]

    def plan(self, kind, obj):
        params = self.params
        md = meta_of(obj)
        result = placement.plan_taints(_taints_of(obj, kind), placement.owned_taints(md.get('annotations')),
                                       params['taints'], params['state'], params['remove'])
        result['kind'] = kind
        result['name'] = md.get('name')
        if md.get('namespace'):
            result['namespace'] = md['namespace']
        result['before'] = _taints_of(obj, kind)
        result['resource_version'] = md.get('resourceVersion')
        return result

    def write(self, kind, obj, plan):
        """Apply one plan; on 409 re-read and plan again (returns the final plan)."""
        for _attempt in range(max(self.params['conflict_retries'], 0) + 1):
            if not plan['changed']:
                return plan
            if plan['conflicts']:
                raise InputError('%s %s: %s' % (kind, plan['name'], '; '.join(plan['conflicts'])))
            body = _nest(KINDS[kind][1], plan['taints'] or None)
            body['metadata'] = {'resourceVersion': plan['resource_version'], 'annotations': {
                placement.OWNED_ANNOTATION: placement.owned_annotation_value(plan['owned'])}}
            try:
                self.api(kind).patch(body=body, name=plan['name'], namespace=plan.get('namespace'),
                                     content_type=MERGE_PATCH)
                return plan
            except ConflictError:
                obj = _dict(self.api(kind).get(name=plan['name'], namespace=plan.get('namespace')))
                plan = self.plan(kind, obj)
        raise InputError('%s %s kept changing concurrently (%d conflicts); run again'
                         % (kind, plan['name'], self.params['conflict_retries'] + 1))


def _public(plan):
    out = dict((k, plan[k]) for k in ('kind', 'name', 'changed', 'added', 'updated', 'removed', 'adopted',
                                      'kept'))
    if plan.get('namespace'):
        out['namespace'] = plan['namespace']
    out['taints'] = plan['taints']
    return out


def run(conn, params, check_mode):
    errors = taint_errors(params['taints'], 'taints') + placement.remove_spec_errors(params['remove'])
    if not (params['nodes'] or params['label_selector'] or params['machinesets'] or params['machineset_selector']):
        errors.append('select something to taint: nodes, label_selector, machinesets or machineset_selector')
    if errors:
        raise InputError('; '.join(errors))
    engine = Taints(conn, params)
    objects = engine.read_all()
    plans = [engine.plan(kind, obj) for kind, obj in objects]
    conflicts = ['%s %s: %s' % (p['kind'], p['name'], c) for p in plans for c in p['conflicts']]
    if conflicts:
        raise InputError('taint conflicts, nothing changed: ' + '; '.join(conflicts))
    final = []
    for (kind, obj), plan in zip(objects, plans):
        if not check_mode:
            plan = engine.write(kind, obj, plan)
        final.append(plan)
    changed = [p for p in final if p['changed']]
    diff = {'before': {}, 'after': {}}
    for plan in changed:
        label = '%s/%s' % (plan['kind'], plan['name'])
        diff['before'][label] = plan['before']
        diff['after'][label] = plan['taints']
    return {'changed': bool(changed), 'objects': [_public(p) for p in final],
            'changed_objects': ['%s/%s' % (p['kind'], p['name']) for p in changed], 'diff': diff}
