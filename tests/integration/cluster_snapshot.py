"""A whole virtual cluster recorded object by object, to prove a run did not write to it: every object of
every listable API resource with its resourceVersion and a fingerprint without what the cluster itself
rewrites (status, node heartbeats, the simulated agents' bookkeeping, Lease renewals). Used by
test_isolation.py (the default cluster of a run aimed elsewhere) and test_multi_cluster.py."""

import copy
import json
import time

import pytest

# What moves on its own in an idle virtual cluster, never a write of ours: node heartbeats and the simulated
# agents' bookkeeping annotations, lease renewals.
OWN_ANNOTATION_PREFIXES = ('gpusim.gpuops.dev/',)
LEASE_HEARTBEAT = ('renewTime', 'acquireTime', 'leaseTransitions', 'holderIdentity')


def get(api_client, path):
    return api_client.call_api(path, 'GET', auth_settings=['BearerToken'], response_type=object,
                               _return_http_data_only=True, _request_timeout=30)


def listable(api_client):
    """(list path, group/version, resource) of every resource the API lists (subresources left out)."""
    versions = ['v1'] + [group['preferredVersion']['groupVersion'] for group in get(api_client, '/apis')['groups']]
    out = []
    for group_version in versions:
        base = ('/api/' if group_version == 'v1' else '/apis/') + group_version
        for resource in get(api_client, base)['resources']:
            if '/' not in resource['name'] and 'list' in resource.get('verbs', []):
                out.append(('%s/%s' % (base, resource['name']), group_version, resource['name']))
    return out


def fingerprint(resource, obj):
    """``obj`` without what the cluster itself rewrites: resourceVersion, managedFields, status, the
    simulated agents' annotations, a Lease's renewals."""
    obj = copy.deepcopy(obj)
    meta = obj.get('metadata', {})
    for key in ('resourceVersion', 'managedFields'):
        meta.pop(key, None)
    annotations = dict((k, v) for k, v in (meta.get('annotations') or {}).items()
                       if not k.startswith(OWN_ANNOTATION_PREFIXES))
    meta['annotations'] = annotations
    obj.pop('status', None)
    if resource == 'leases':
        for key in LEASE_HEARTBEAT:
            obj.get('spec', {}).pop(key, None)
    return json.dumps(obj, sort_keys=True)


def snapshot(api_client):
    """{(group/version, resource, namespace, name): (resourceVersion, fingerprint)} of every object."""
    out = {}
    for path, group_version, resource in listable(api_client):
        for obj in get(api_client, path).get('items', []):
            meta = obj['metadata']
            out[(group_version, resource, meta.get('namespace', ''), meta['name'])] = (
                meta.get('resourceVersion'), fingerprint(resource, obj))
    return out


def settled_snapshot(api_client, quiet=10.0, timeout=90.0, what='the cluster'):
    """snapshot() once no object has been created or deleted for ``quiet`` seconds (a cluster just up
    still records its nodes' registration Events)."""
    last, since = snapshot(api_client), time.monotonic()
    deadline = since + timeout
    while time.monotonic() < deadline:
        time.sleep(2)
        now = snapshot(api_client)
        if set(now) != set(last):
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return now
    pytest.fail('%s did not settle in %ss' % (what, timeout))


def changes(before, after):
    """(what changed besides status and heartbeats, how many objects moved by resourceVersion only)."""
    changed, moved = [], 0
    for key in sorted(set(before) | set(after)):
        if key not in before or key not in after:
            changed.append('%s %s' % ('created' if key not in before else 'deleted', '/'.join(key)))
        elif before[key][0] != after[key][0]:
            if before[key][1] != after[key][1]:
                changed.append('changed ' + '/'.join(key))
            else:
                moved += 1
    return changed, moved
