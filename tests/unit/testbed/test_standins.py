"""The testbed's stand-in CRDs (tests/testbed/vcluster/standins.py) hold every field roles/openshift_ai writes,
so the API server prunes nothing the collection sets, and their names are what the collection asks for."""

import pytest

from ansible_collections.gpuops.gpu.plugins.module_utils.plans import openshift_ai
from vcluster.standins import stand_in_crds

NODES = [{'metadata': {'name': 'n'}, 'status': {'allocatable': {'nvidia.com/gpu': '8'}}}]


def _unknown(value, schema, path):
    """Paths of ``value`` the structural ``schema`` does not declare."""
    if schema.get('x-kubernetes-int-or-string'):
        return [] if isinstance(value, (int, str)) else [path]
    if isinstance(value, dict):
        props, extra = schema.get('properties'), schema.get('additionalProperties')
        if props is None:
            return [] if extra or schema.get('type') == 'object' and path.endswith('metadata') else [path]
        out = []
        for key, item in value.items():
            out += _unknown(item, props[key], path + '.' + key) if key in props else [path + '.' + key]
        return out
    if isinstance(value, list):
        return [p for i, item in enumerate(value) for p in _unknown(item, schema['items'], '%s[%d]' % (path, i))]
    return []


@pytest.mark.parametrize('kind', sorted(openshift_ai.KINDS))
def test_stand_in_declares_every_field_the_role_writes(kind):
    crds = dict((c['metadata']['name'], c) for c in stand_in_crds())
    names = openshift_ai.profile_kind(kind)
    crd = crds[names['crd']]
    version = [v for v in crd['spec']['versions'] if '%s/%s' % (crd['spec']['group'], v['name']) == names['api_version']]
    assert len(version) == 1, 'the stand-in does not serve %s' % names['api_version']
    version = version[0]
    assert version['served'] is True
    assert crd['spec']['names']['kind'] == names['kind']
    config = {'namespace': 'redhat-ods-applications', 'kind': kind,
              'taints': [{'key': 'dedicated', 'value': 'gpu', 'effect': 'NoExecute'}], 'match_value': True}
    plan = openshift_ai.openshift_ai_plan(config, {'nodes': NODES})
    assert plan['errors'] == [] and plan['apply']
    definition = plan['apply'][0]['definition']
    assert _unknown(definition, version['schema']['openAPIV3Schema'], '') == []
    assert _unknown({'spec': {'bogus': 1}}, version['schema']['openAPIV3Schema'], '') == ['.spec.bogus']


def test_the_gpucluster_stand_in_declares_every_field_the_dra_role_writes():
    from ansible_collections.gpuops.gpu.plugins.module_utils.plans.gpucluster import gpucluster_plan
    crds = dict((c['metadata']['name'], c) for c in stand_in_crds())
    crd = crds['gpuclusters.nvidia.com']
    assert crd['spec']['scope'] == 'Cluster' and crd['spec']['names']['kind'] == 'GPUCluster'
    version = crd['spec']['versions'][0]
    assert version['name'] == 'v1alpha1' and version['subresources'] == {'status': {}}
    config = {'driver_repository': 'r.example.com/nvidia', 'driver_image': 'dra-driver-nvidia-gpu',
              'driver_version': 'v0.5.0', 'feature_gates': {'MPSSupport': True},
              'kubelet_plugin': {'env': {'A': 'b'}, 'resources': {'limits': {'memory': '1Gi'}},
                                 'healthcheck': {'enabled': True, 'port': 51516}},
              'compute_domains': True, 'dcgm': True, 'dcgm_exporter': False}
    reads = {'crd_served': True, 'resource_v1_served': True, 'nodes': [], 'cluster_policies': [], 'existing': []}
    definition = gpucluster_plan(config, reads)['definition']
    assert _unknown(definition, version['schema']['openAPIV3Schema'], '') == []
    # the module's own CRD wins: no stand-in then
    assert 'gpuclusters.nvidia.com' not in [c['metadata']['name'] for c in stand_in_crds({'gpuclusters.nvidia.com'})]
