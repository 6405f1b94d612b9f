# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""MIG from demand, the demand of DRA ResourceClaims (nodes served by NVIDIA's DRA driver). Pure, no I/O.

Input: the ResourceClaims and DeviceClasses of ``resource.k8s.io/v1`` as the API returns them (dicts), the
Pending pods, and the pool's nodes as ``gpuops.gpu.gpu_nodes_info`` returns them (with their DRA devices).

* **Pending claims.** A claim counts when it is not allocated (no ``status.allocation``) and an unscheduled
  Pending pod uses it (``spec.resourceClaims[].resourceClaimName``, ``status.resourceClaimStatuses[]`` or the
  claim's owner pod). Each request of it (``exactly`` of ``resource.k8s.io/v1``, or the older flat request)
  asks for ``count`` devices of one resource, read from the CEL of the request's selectors and of its
  DeviceClass's selectors, and-ed as the scheduler ands them: a top-level ``&&`` term
  ``device.attributes['gpu.nvidia.com'].profile == '<P>'`` (or ``in [...]``, as gpu/dra_cel.py writes
  ``mig_profile``) makes it ``nvidia.com/mig-<P>``; without a profile, ``...type == 'gpu'`` makes it
  ``nvidia.com/gpu`` (a whole GPU, MIG disabled). A prioritized list (``firstAvailable``) counts its first
  subrequest: the scheduler takes the first that it can allocate, and the pod is Pending because none can be, so
  the first is what the pod's owner asked for first (its others are not counted). A request that leaves more than
  one profile open, none, or cannot be read (allocation mode All, admin access, a missing class, an empty or
  unreadable first choice) is reported in ``unread`` and not counted: the demand is never guessed. A request whose
  selectors name another driver is not a GPU request and is ignored.
* **Allocated claims** are what the pool's DRA nodes use now: ``nodes_with_dra_use`` adds each node's
  allocated DRA devices (``dra_devices`` of gpu_nodes_info, their type and profile as the driver publishes
  them) to its ``requested`` and their pods to its ``gpu_pods``, so that the planner counts them like the pods'
  extended resources: in the demand and as busy nodes (a device held only by pods that ask for GPU extended
  resources, which a DeviceClass may serve through DRA, counts once, through those resources).
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

from ansible_collections.gpuops.gpu.plugins.module_utils.common.checks import is_int
from ansible_collections.gpuops.gpu.plugins.module_utils.common.names import GPU_RESOURCE, MIG_RESOURCE_PREFIX
from ansible_collections.gpuops.gpu.plugins.module_utils.common.objects import meta_of
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.dra import DRIVER
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.dra_select import parse, selector_expressions
from ansible_collections.gpuops.gpu.plugins.module_utils.gpu.mig_demand import unscheduled

_ATTRIBUTES = ('get', ('get', ('device',), ('lit', 'attributes')), ('lit', DRIVER))


def _attribute(tree):
    """The attribute name of ``device.attributes['gpu.nvidia.com'].<name>``, else None."""
    if isinstance(tree, tuple) and len(tree) == 3 and tree[0] == 'get' and tree[1] == _ATTRIBUTES:
        return tree[2][1] if tree[2][0] == 'lit' else None
    return None


def _literal(tree):
    return tree[1] if isinstance(tree, tuple) and tree[0] == 'lit' and isinstance(tree[1], str) else None


def _conjuncts(tree):
    if tree[0] == 'and':
        return _conjuncts(tree[1]) + _conjuncts(tree[2])
    return [tree]


def _term(tree):
    """(attribute or 'driver', set of strings) of a term that pins one to literals, else None."""
    if tree[0] != 'cmp' or tree[1] not in ('==', 'in'):
        return None
    left, right = tree[2], tree[3]
    if tree[1] == '==' and _literal(left) is not None:
        left, right = right, left
    name = 'driver' if left == ('get', ('device',), ('lit', 'driver')) else _attribute(left)
    if name is None:
        return None
    if tree[1] == '==' and _literal(right) is not None:
        return name, set([right[1]])
    if tree[1] == 'in' and right[0] == 'list' and all(_literal(i) is not None for i in right[1]):
        return name, set(i[1] for i in right[1])
    return None


def selector_terms(expressions):
    """``({name: set of values}, problems)``: what the top-level ``&&`` terms of the CEL ``expressions`` pin
    (``driver``, ``profile``, ``type``), intersected over every expression."""
    pinned, problems = {}, []
    for expression in expressions:
        try:
            tree = parse(expression)
        except ValueError as exc:
            problems.append('selector not read (%s)' % exc)
            continue
        for term in filter(None, (_term(t) for t in _conjuncts(tree))):
            pinned[term[0]] = pinned[term[0]] & term[1] if term[0] in pinned else term[1]
    return pinned, problems


def _exact(request):
    """(the request's ``exactly`` part (a prioritized list's first subrequest), or why it cannot be read)."""
    if request.get('firstAvailable') is not None:
        choices = request['firstAvailable']
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            return None, 'a prioritized list (firstAvailable) without a first subrequest'
        exact, why = _counted(choices[0])
        return exact, why and 'the first choice of its prioritized list (%s): %s' % (choices[0].get('name'), why)
    return _counted(request.get('exactly') if isinstance(request.get('exactly'), dict) else request)


def _counted(exact):
    """(``exact``, a request or subrequest that asks for a count of devices of one class, or why it does not)."""
    if not exact.get('deviceClassName'):
        return None, 'no deviceClassName'
    if (exact.get('allocationMode') or 'ExactCount') != 'ExactCount':
        return None, 'allocationMode %s (all matching devices) is not a count' % exact['allocationMode']
    if exact.get('adminAccess'):
        return None, 'admin access does not take a device'
    count = exact.get('count', 1)
    if not is_int(count) or count < 1:
        return None, 'count %r is not a positive integer' % (count,)
    return exact, None


def request_resource(request, classes):
    """``(resource, count, why)`` of one claim request (see the module docstring); ``resource`` None and
    ``why`` None for a request of another driver, ``why`` set when it cannot be read."""
    exact, why = _exact(request if isinstance(request, dict) else {})
    if why:
        return None, 0, why
    spec = classes.get(exact['deviceClassName'])
    if spec is None:
        return None, 0, 'DeviceClass %s not found' % exact['deviceClassName']
    expressions = selector_expressions(spec.get('selectors')) + selector_expressions(exact.get('selectors'))
    pinned, problems = selector_terms(expressions)
    if 'driver' in pinned and pinned['driver'] != set([DRIVER]):
        return None, 0, None
    profiles, count = pinned.get('profile'), exact.get('count', 1)
    if profiles is not None and len(profiles) == 1:
        return MIG_RESOURCE_PREFIX + list(profiles)[0], count, None
    if profiles is not None:
        return None, 0, ('its selectors leave the MIG profiles %s open (ambiguous)' % ', '.join(sorted(profiles))
                         if profiles else 'its selectors ask for conflicting MIG profiles')
    if pinned.get('type') == set(['gpu']):
        return GPU_RESOURCE, count, None
    return None, 0, '; '.join(['no MIG profile in the CEL of DeviceClass %s or the request' % exact['deviceClassName']]
                              + problems)


def _pending_claim_names(pods):
    """(namespace, claim name) and (namespace, pod name) of the unscheduled Pending pods' claims and pods."""
    claims, owners = set(), set()
    for pod in pods or []:
        if not isinstance(pod, dict) or not unscheduled(pod):
            continue
        status, spec = pod.get('status') or {}, pod.get('spec') or {}
        namespace = meta_of(pod).get('namespace')
        owners.add((namespace, meta_of(pod).get('name')))
        for ref in (spec.get('resourceClaims') or []) + (status.get('resourceClaimStatuses') or []):
            if ref.get('resourceClaimName'):
                claims.add((namespace, ref['resourceClaimName']))
    return claims, owners


def _waits(claim, claims, owners):
    meta = meta_of(claim)
    if (claim.get('status') or {}).get('allocation'):
        return False
    if (meta.get('namespace'), meta.get('name')) in claims:
        return True
    return any(ref.get('kind') == 'Pod' and (meta.get('namespace'), ref.get('name')) in owners
               for ref in meta.get('ownerReferences') or [])


def claim_demand(claims, classes, pods):
    """The demand of the unallocated claims of unscheduled Pending pods: ``{'demand': {resource: count},
    'claims': ['namespace/name', ...] (counted), 'unread': ['namespace/name: why', ...]}``."""
    by_class = dict((meta_of(c).get('name'), (c.get('spec') or {})) for c in classes or [] if isinstance(c, dict))
    pending, owners = _pending_claim_names(pods)
    demand, counted, unread = {}, set(), []
    for claim in claims or []:
        if not isinstance(claim, dict) or not _waits(claim, pending, owners):
            continue
        key = '%s/%s' % (meta_of(claim).get('namespace'), meta_of(claim).get('name'))
        for request in ((claim.get('spec') or {}).get('devices') or {}).get('requests') or []:
            resource, count, why = request_resource(request, by_class)
            if why:
                unread.append('%s: request %s: %s' % (key, (request or {}).get('name'), why))
            elif resource:
                demand[resource] = demand.get(resource, 0) + count
                counted.add(key)
    return {'demand': dict(sorted(demand.items())), 'claims': sorted(counted), 'unread': sorted(unread)}


def dra_use(node):
    """``({resource: devices}, [pods])`` of a gpu_nodes_info node's allocated DRA devices. A device whose pods all
    ask for GPU extended resources already counts in ``requested`` (an extended resource a DeviceClass serves
    through DRA, ``extendedResourceName``) and is left out."""
    used, pods = {}, set()
    counted = set(node.get('gpu_pods') or [])
    for device in node.get('dra_devices') or []:
        if not device.get('allocated') or (device.get('pods') and counted.issuperset(device['pods'])):
            continue
        if device.get('type') == 'mig' and device.get('profile'):
            resource = MIG_RESOURCE_PREFIX + device['profile']
        elif device.get('type') == 'gpu':
            resource = GPU_RESOURCE
        else:
            continue
        used[resource] = used.get(resource, 0) + 1
        pods.update(device.get('pods') or [])
    return used, sorted(pods)


def nodes_with_dra_use(nodes):
    """Copies of the gpu_nodes_info ``nodes`` with their allocated DRA devices added to ``requested`` and their
    pods to ``gpu_pods`` (left None when the pods were not read)."""
    out = []
    for node in nodes or []:
        if not isinstance(node, dict) or node.get('requested') is None or node.get('gpu_pods') is None:
            out.append(node)
            continue
        used, pods = dra_use(node)
        copy = dict(node)
        requested = dict(node['requested'])
        for name, qty in used.items():
            requested[name] = requested.get(name, 0) + qty
        copy.update(requested=requested, gpu_pods=sorted(set(node['gpu_pods']) | set(pods)))
        out.append(copy)
    return out
