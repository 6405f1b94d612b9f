"""gpuops.gpu.dra, DRA resources as code, on the virtual GPU cluster (a real kube-apiserver v1.36 serving
resource.k8s.io/v1): DeviceClasses with CEL built from typed fields, ResourceClaimTemplates per team namespace
(whole GPU, MIG profile, time-sliced and MPS shares through NVIDIA's GpuConfig), ResourceQuotas on
<class>.deviceclass.resource.k8s.io/devices; check mode and --diff write nothing, a second run changes nothing,
bad CEL is refused by the API server's dry run before any write, bad input before anything is read back, and
removing an entry removes only what the role wrote."""

import pytest
from kubernetes.dynamic import DynamicClient

from ansible_run import changed_tasks, run_role
from conftest import create_namespace

TEAM = 'gpuops-it/dra-team'
NAMESPACES = {'dra-a': {TEAM: 'ml'}, 'dra-b': {TEAM: 'ml'}, 'dra-c': {}}
MANAGED = 'app.kubernetes.io/managed-by'
ROLE = 'gpuops.gpu/role'
USER_CLASS = 'user-own.example.com'  # a DeviceClass of the cluster's own, never touched by the role
GATES = {'TimeSlicingSettings': True, 'MPSSupport': True}

CLASSES = [
    {'name': 'h100.gpuops-it.example.com', 'type': 'gpu', 'product_name': 'NVIDIA H100 80GB HBM3',
     'memory_min': '40Gi', 'cuda_compute_capability_min': '9.0', 'driver_version_min': '550.54.15',
     'architecture': ['Hopper'], 'extended_resource_name': 'gpuops-it.example.com/h100'},
    {'name': 'mig-1g.gpuops-it.example.com', 'mig_profile': '1g.10gb'},
    {'name': 'shared.gpuops-it.example.com', 'type': 'gpu', 'driver_version_max': '999.0',
     'cel': "device.attributes['gpu.nvidia.com'].brand == 'Nvidia'",
     'sharing': {'strategy': 'TimeSlicing', 'interval': 'Short'}},
]
TEMPLATES = [
    {'name': 'one-h100', 'namespace_selector': TEAM + '=ml', 'device_class': 'h100.gpuops-it.example.com'},
    {'name': 'mig-small', 'namespace': 'dra-a', 'device_class': 'mig-1g.gpuops-it.example.com'},
    {'name': 'mps-half', 'namespace': 'dra-a', 'device_class': 'h100.gpuops-it.example.com', 'count': 2,
     'sharing': {'strategy': 'MPS', 'active_thread_percentage': 50, 'pinned_memory_limit': '10Gi',
                 'per_device_pinned_memory_limit': {1: '5Gi'}}},
    {'name': 'user-class', 'namespace': 'dra-c', 'device_class': USER_CLASS},
]
QUOTAS = [{'namespace_selector': TEAM + '=ml',
           'devices': {'h100.gpuops-it.example.com': 4, 'mig-1g.gpuops-it.example.com': 7}}]
VARIABLES = {'dra_device_classes': CLASSES, 'dra_claim_templates': TEMPLATES, 'dra_quotas': QUOTAS,
             'dra_driver_feature_gates': GATES}


@pytest.fixture(scope='module')
def dyn(api_client):
    return DynamicClient(api_client)


@pytest.fixture(scope='module')
def apis(dyn):
    return {'classes': dyn.resources.get(api_version='resource.k8s.io/v1', kind='DeviceClass'),
            'templates': dyn.resources.get(api_version='resource.k8s.io/v1', kind='ResourceClaimTemplate'),
            'quotas': dyn.resources.get(api_version='v1', kind='ResourceQuota')}


@pytest.fixture(scope='module', autouse=True)
def namespaces(core, apis):
    for name, labels in NAMESPACES.items():
        create_namespace(core, name, labels)
    apis['classes'].create({'apiVersion': 'resource.k8s.io/v1', 'kind': 'DeviceClass',
                            'metadata': {'name': USER_CLASS},
                            'spec': {'selectors': [{'cel': {'expression': "device.driver == 'gpu.nvidia.com'"}}]}})
    yield
    for name in NAMESPACES:
        core.delete_namespace(name)
    for item in objects(apis)['classes'].values():
        if item.metadata.name == USER_CLASS or (item.metadata.labels or {}).get(ROLE) == 'dra':
            apis['classes'].delete(name=item.metadata.name)


def objects(apis):
    """{'classes': {name: obj}, 'templates': {ns/name: obj}, 'quotas': {ns/name: obj}} of the test's objects."""
    out = {}
    for key, api in apis.items():
        found = {}
        for item in api.get().items:
            namespace = item.metadata.namespace
            if namespace and namespace not in NAMESPACES:
                continue
            found[(namespace + '/' if namespace else '') + item.metadata.name] = item
        out[key] = found
    return out


def written(apis):
    """What a write by the role would change: spec and labels of every object (not resourceVersion, which the
    quota controller moves on its own)."""
    return dict((key, dict((name, (str(obj.spec), str(obj.metadata.labels))) for name, obj in found.items()))
                for key, found in objects(apis).items())


def managed(apis):
    return dict((key, sorted(name for name, obj in found.items() if (obj.metadata.labels or {}).get(ROLE) == 'dra'))
                for key, found in objects(apis).items())


# ---------------------------------------------------------------------------------------- tests

def test_check_mode_and_diff_write_nothing(testbed, apis):
    before = written(apis)
    rc, results, raw = run_role(testbed.kubeconfig, 'dra', VARIABLES, check=True, diff=True)
    assert rc == 0, raw[-3000:]
    assert results['Write the DeviceClasses']['changed'] is True
    assert results['Write the ResourceClaimTemplates']['changed'] is True
    diffs = [r.get('diff') for r in results['Write the DeviceClasses']['results']]
    assert any(d and 'after' in d for d in diffs), diffs
    assert written(apis) == before
    assert results['Report the DRA resources']['ansible_facts']['dra_resources_result']['device_classes'] == [
        c['name'] for c in CLASSES]


def test_create_then_second_run_changes_nothing(testbed, apis):
    rc, results, raw = run_role(testbed.kubeconfig, 'dra', VARIABLES)
    assert rc == 0, raw[-3000:]
    have = objects(apis)
    h100 = have['classes']['h100.gpuops-it.example.com']
    expression = h100.spec.selectors[0].cel.expression
    assert "productName == 'NVIDIA H100 80GB HBM3'" in expression, expression
    assert "driverVersion.compareTo(semver('550.54.15')) >= 0" in expression, expression
    assert h100.spec.extendedResourceName == 'gpuops-it.example.com/h100'
    assert h100.metadata.labels[MANAGED] == 'gpuops.gpu' and h100.metadata.labels[ROLE] == 'dra'
    shared = have['classes']['shared.gpuops-it.example.com'].spec.config[0].opaque
    assert shared.driver == 'gpu.nvidia.com'
    assert shared.parameters.kind == 'GpuConfig' and shared.parameters.sharing.timeSlicingConfig.interval == 'Short'
    for namespace in ('dra-a', 'dra-b'):
        request = have['templates'][namespace + '/one-h100'].spec.spec.devices.requests[0]
        assert request.exactly.deviceClassName == 'h100.gpuops-it.example.com' and request.exactly.count == 1
        quota = have['quotas'][namespace + '/gpu-dra-quota']
        assert quota.spec.hard['h100.gpuops-it.example.com.deviceclass.resource.k8s.io/devices'] == '4'
    assert 'dra-c/one-h100' not in have['templates']
    mps = have['templates']['dra-a/mps-half'].spec.spec.devices.config[0].opaque.parameters.sharing
    assert mps.strategy == 'MPS' and mps.mpsConfig.defaultActiveThreadPercentage == 50
    assert mps.mpsConfig.defaultPerDevicePinnedMemoryLimit['1'] == '5Gi'
    assert have['templates']['dra-c/user-class'].spec.spec.devices.requests[0].exactly.deviceClassName == USER_CLASS
    before = written(apis)
    rc, results, raw = run_role(testbed.kubeconfig, 'dra', VARIABLES)
    assert rc == 0, raw[-3000:]
    assert changed_tasks(results) == [], changed_tasks(results)
    assert written(apis) == before
    rc, results, raw = run_role(testbed.kubeconfig, 'dra', VARIABLES, check=True, diff=True)
    assert rc == 0 and changed_tasks(results) == [], raw[-3000:]


def test_a_changed_template_is_replaced(testbed, apis):
    """A template's spec is immutable: the role deletes it and writes it again; check mode only says so."""
    changed = dict(VARIABLES, dra_claim_templates=[dict(TEMPLATES[1], count=2)] + TEMPLATES[:1] + TEMPLATES[2:])
    before = written(apis)
    rc, results, raw = run_role(testbed.kubeconfig, 'dra', changed, check=True, diff=True)
    assert rc == 0, raw[-3000:]
    assert written(apis) == before
    rc, results, raw = run_role(testbed.kubeconfig, 'dra', changed)
    assert rc == 0, raw[-3000:]
    assert results['Report the DRA resources']['ansible_facts']['dra_resources_result']['replaced'] == [
        'ResourceClaimTemplate dra-a/mig-small']
    assert objects(apis)['templates']['dra-a/mig-small'].spec.spec.devices.requests[0].exactly.count == 2
    rc, results, raw = run_role(testbed.kubeconfig, 'dra', changed)
    assert rc == 0 and changed_tasks(results) == [], raw[-3000:]
    rc, results, raw = run_role(testbed.kubeconfig, 'dra', VARIABLES)
    assert rc == 0, raw[-3000:]
    assert objects(apis)['templates']['dra-a/mig-small'].spec.spec.devices.requests[0].exactly.count == 1


def test_bad_cel_is_refused_by_the_dry_run_before_any_write(testbed, apis):
    before = written(apis)
    bad = dict(VARIABLES, dra_device_classes=CLASSES + [
        {'name': 'new.gpuops-it.example.com', 'type': 'gpu'},
        {'name': 'bad-cel.gpuops-it.example.com', 'cel': "device.attributes['gpu.nvidia.com'].productName =="}])
    rc, results, raw = run_role(testbed.kubeconfig, 'dra', bad)
    assert rc != 0
    message = str(results['Report what the API server refused']['msg'])
    assert 'refused these objects in a dry run; nothing was written' in message, message
    assert 'bad-cel.gpuops-it.example.com' in message and 'compil' in message.lower(), message
    assert 'Write the DeviceClasses' not in results
    assert written(apis) == before  # the good new class was not written either


def test_bad_input_is_refused_before_anything_is_written(testbed, apis):
    before = written(apis)
    bad = dict(VARIABLES, dra_driver_feature_gates={'TimeSlicingSettings': True}, dra_claim_templates=TEMPLATES + [
        {'name': 'typo', 'namespace': 'dra-a', 'device_class': 'h100.gpuops-it.example.co'},
        {'name': 'own', 'namespace': 'dra-a', 'device_class': USER_CLASS, 'sharing': {'strategy': 'Spatial'}}],
        dra_device_classes=CLASSES + [{'name': USER_CLASS, 'type': 'gpu'}])
    rc, results, raw = run_role(testbed.kubeconfig, 'dra', bad)
    assert rc != 0
    errors = results['Check the DRA resources before writing anything']['msg']
    text = '\n'.join(errors)
    assert "dra_claim_templates[2] 'mps-half'.sharing: sharing with MPS needs the DRA driver feature gate MPSSupport" \
        in text, text
    assert "device_class 'h100.gpuops-it.example.co' is neither a DeviceClass in the cluster nor in " \
           "dra_device_classes; did you mean 'h100.gpuops-it.example.com'?" in text, text
    assert "dra_claim_templates[5] 'own'.sharing.strategy must be one of TimeSlicing, MPS" in text, text
    assert 'DeviceClass %s exists and was not written by the dra role' % USER_CLASS in text, text
    assert 'Dry-run every DeviceClass, ResourceClaimTemplate and ResourceQuota (the API server compiles the CEL)' \
        not in results
    assert written(apis) == before


def test_removing_entries_removes_only_what_the_role_wrote(testbed, apis):
    fewer = dict(VARIABLES, dra_device_classes=CLASSES[:1], dra_claim_templates=TEMPLATES[:1], dra_quotas=[])
    rc, results, raw = run_role(testbed.kubeconfig, 'dra', fewer)
    assert rc == 0, raw[-3000:]
    assert managed(apis) == {'classes': ['h100.gpuops-it.example.com'],
                             'templates': ['dra-a/one-h100', 'dra-b/one-h100'], 'quotas': []}
    assert USER_CLASS in objects(apis)['classes']
    deleted = results['Report the DRA resources']['ansible_facts']['dra_resources_result']['deleted']
    assert 'DeviceClass mig-1g.gpuops-it.example.com' in deleted and 'ResourceQuota dra-a/gpu-dra-quota' in deleted
    rc, results, raw = run_role(testbed.kubeconfig, 'dra', {})
    assert rc == 0, raw[-3000:]
    assert managed(apis) == {'classes': [], 'templates': [], 'quotas': []}
    assert USER_CLASS in objects(apis)['classes']
