"""gpuops.gpu.mirror on the virtual GPU cluster: the OpenShift objects are checked against the real
CRD schemas by the real apiserver (no OpenShift controller runs them), the simulated OLM drops the
default CatalogSources when OperatorHub disables them, and on the Kubernetes path the REAL
gpu-operator renders every operand DaemonSet from the mirror with the pull Secret."""

import base64
import json
import os
import subprocess
import sys

import pytest
import yaml
from kubernetes import client

from ansible_collections.gpuops.gpu.plugins.module_utils.plans.mirror_air_gap import public_registry_references
from ansible_collections.gpuops.gpu.plugins.module_utils.plans.mirror import mirror_plan
from ansible_run import changed_tasks, run_role
from cluster_policy_example import gpu_operator_csv_path
from conftest import wait_until
from policy_helpers import CP, ensure_cluster_policy
from role_cases import assert_failed, assert_secret_free, config_maps_text, failures

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MIRROR = 'mirror.example.com:8443'
USER = 'svc-gpu-mirror'
PASSWORD = 'Mirror-Pa55-SENTINEL-7f3a'
AUTH = base64.b64encode(('%s:%s' % (USER, PASSWORD)).encode()).decode()
SECRETS = (PASSWORD, AUTH)
PEM = ('-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ2F0YWxvZ01pcnJvckNBMA0GCSqGSIb3DQEBCwUAMBIx\n'
       '-----END CERTIFICATE-----\n')
EXISTING_AUTHS = {'cloud.openshift.com': {'auth': 'b3BlbnNoaWZ0', 'email': 'ops@example.com'},
                  'quay.io': {'auth': 'cXVheQ=='}, 'registry.redhat.io': {'auth': 'cmVkaGF0'}}
GPU_NS = 'gpu-operator'  # the testbed runs the real operator there
G = {'cs': ('operators.coreos.com', 'v1alpha1', 'catalogsources'),
     'idms': ('config.openshift.io', 'v1', 'imagedigestmirrorsets'),
     'itms': ('config.openshift.io', 'v1', 'imagetagmirrorsets'),
     'icsp': ('operator.openshift.io', 'v1alpha1', 'imagecontentsourcepolicies'),
     'hub': ('config.openshift.io', 'v1', 'operatorhubs'),
     'image': ('config.openshift.io', 'v1', 'images'),
     'cp': CP}


@pytest.fixture(scope='module', autouse=True)
def openshift_like(core, custom):
    """What an OpenShift cluster already has: openshift-config with the global pull secret."""
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name='openshift-config')))
    data = base64.b64encode(json.dumps({'auths': EXISTING_AUTHS}).encode()).decode()
    core.create_namespaced_secret('openshift-config', client.V1Secret(
        metadata=client.V1ObjectMeta(name='pull-secret'), type='kubernetes.io/dockerconfigjson',
        data={'.dockerconfigjson': data}))
    ensure_cluster_policy(custom)


def base_vars(tmp):
    return {'mirror_registry': MIRROR, 'mirror_openshift_version': '4.18', 'mirror_registry_username': USER,
            'mirror_registry_password': PASSWORD, 'mirror_ca_bundle': PEM,
            'mirror_repositories': ['nvcr.io/nvidia', 'registry.redhat.io', 'registry.connect.redhat.com',
                                    {'source': 'ghcr.io/nvidia', 'mirror': MIRROR + '/ghcr/nvidia'}],
            'mirror_csv_file': gpu_operator_csv_path(), 'mirror_image_list_path': os.path.join(tmp, 'isc.yaml')}


def cluster_list(custom, key, namespace=None):
    if namespace:
        group, version, plural = G[key]
        return custom.list_namespaced_custom_object(group, version, namespace, plural).get('items', [])
    return custom.list_cluster_custom_object(*G[key]).get('items', [])


def snapshot(core, custom):
    """What the role could write, by resourceVersion (ClusterPolicy: its spec, the operator writes status)."""
    out = {}
    for key in ('idms', 'itms', 'icsp', 'hub', 'image'):
        for obj in cluster_list(custom, key):
            out[(key, obj['metadata']['name'])] = obj['metadata']['resourceVersion']
    for obj in cluster_list(custom, 'cs', 'openshift-marketplace'):
        out[('cs', obj['metadata']['name'])] = obj['metadata']['resourceVersion']
    for cm in core.list_namespaced_config_map('openshift-config').items:
        out[('cm', 'openshift-config', cm.metadata.name)] = cm.metadata.resource_version
    for ns in ('openshift-config', GPU_NS):
        for secret in core.list_namespaced_secret(ns).items:
            out[('secret', ns, secret.metadata.name)] = secret.metadata.resource_version
    for obj in cluster_list(custom, 'cp'):
        out[('cp', obj['metadata']['name'])] = json.dumps(obj['spec'], sort_keys=True)
    return out


def pull_secret_auths(core, namespace='openshift-config', name='pull-secret'):
    secret = core.read_namespaced_secret(name, namespace)
    return json.loads(base64.b64decode(secret.data['.dockerconfigjson']))['auths']


def test_openshift_check_mode_writes_nothing(testbed, core, custom, tmp_path):
    before = snapshot(core, custom)
    rc, results, raw = run_role(testbed.kubeconfig, 'mirror', base_vars(str(tmp_path)), check=True, diff=True)
    assert rc == 0, raw[-3000:]
    assert snapshot(core, custom) == before
    assert not (tmp_path / 'isc.yaml').exists()
    assert_secret_free(raw, SECRETS)


def test_openshift_mirror_applies_then_is_idempotent(testbed, core, custom, tmp_path):
    variables = base_vars(str(tmp_path))
    rc, results, raw = run_role(testbed.kubeconfig, 'mirror', variables)
    assert rc == 0, raw[-3000:]
    assert_secret_free(raw, SECRETS)

    sources = {s['metadata']['name']: s for s in cluster_list(custom, 'cs', 'openshift-marketplace')}
    assert sources['certified-operators-mirror']['spec']['image'] == MIRROR + '/redhat/certified-operator-index:v4.18'
    assert sources['redhat-operators-mirror']['spec']['image'] == MIRROR + '/redhat/redhat-operator-index:v4.18'
    # OperatorHub disableAllDefaultSources: the (simulated) marketplace removes the default sources
    hub = custom.get_cluster_custom_object(*G['hub'], 'cluster')
    assert hub['spec']['disableAllDefaultSources'] is True
    wait_until('default CatalogSources removed', lambda: not {'certified-operators', 'redhat-operators'} & {
        s['metadata']['name'] for s in cluster_list(custom, 'cs', 'openshift-marketplace')}, 30)
    idms = custom.get_cluster_custom_object(*G['idms'], 'gpuops-mirror')['spec']['imageDigestMirrors']
    assert {'source': 'nvcr.io/nvidia', 'mirrors': [MIRROR + '/nvidia']} in idms
    assert {'source': 'ghcr.io/nvidia', 'mirrors': [MIRROR + '/ghcr/nvidia']} in idms
    itms = custom.get_cluster_custom_object(*G['itms'], 'gpuops-mirror')['spec']['imageTagMirrors']
    assert [e['source'] for e in itms] == [e['source'] for e in idms]
    assert cluster_list(custom, 'icsp') == []
    # the global pull secret keeps every existing entry and gains the mirror
    auths = pull_secret_auths(core)
    assert {k: auths[k] for k in EXISTING_AUTHS} == EXISTING_AUTHS
    assert auths[MIRROR] == {'auth': AUTH}
    # additionalTrustedCA
    ca = core.read_namespaced_config_map('gpuops-mirror-ca', 'openshift-config')
    assert ca.data == {'mirror.example.com..8443': PEM}
    image = custom.get_cluster_custom_object(*G['image'], 'cluster')
    assert image['spec']['additionalTrustedCA'] == {'name': 'gpuops-mirror-ca'}
    # the oc-mirror ImageSetConfiguration from the CSV relatedImages
    isc = yaml.safe_load((tmp_path / 'isc.yaml').read_text())
    assert isc['apiVersion'] == 'mirror.openshift.io/v2alpha1' and isc['kind'] == 'ImageSetConfiguration'
    assert {'catalog': 'registry.redhat.io/redhat/certified-operator-index:v4.18',
            'packages': [{'name': 'gpu-operator-certified'}]} in isc['mirror']['operators']
    related = [i['image'] for i in yaml.safe_load(open(gpu_operator_csv_path()))['spec']['relatedImages']]
    names = [i['name'] for i in isc['mirror']['additionalImages']]
    assert set(related) <= set(names)
    # nothing created names a public registry (the pure check, over what the apiserver holds)
    created = [sources['certified-operators-mirror'], sources['redhat-operators-mirror'], hub, image,
               custom.get_cluster_custom_object(*G['idms'], 'gpuops-mirror'),
               custom.get_cluster_custom_object(*G['itms'], 'gpuops-mirror'), ca.to_dict()]
    assert public_registry_references(created, [MIRROR]) == []
    assert_secret_free(config_maps_text(core), SECRETS, 'ConfigMaps')

    # second run: nothing changes
    before = snapshot(core, custom)
    rc, results, raw = run_role(testbed.kubeconfig, 'mirror', variables)
    assert rc == 0, raw[-3000:]
    assert changed_tasks(results) == []
    assert snapshot(core, custom) == before


def run_site(kubeconfig, variables, tmp_path):
    """ansible-playbook playbooks/site.yml -e @vars.json, as a user runs it; (rc, output)."""
    path = tmp_path / 'site-vars.json'
    path.write_text(json.dumps(variables))
    env = dict(os.environ, K8S_AUTH_KUBECONFIG=kubeconfig, ANSIBLE_NOCOLOR='1', ANSIBLE_LOCALHOST_WARNING='false',
               ANSIBLE_INVENTORY_UNPARSED_WARNING='false', ANSIBLE_PYTHON_INTERPRETER=sys.executable)
    cmd = [os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'),
           os.path.join(REPO, 'playbooks', 'site.yml'), '-e', '@%s' % path]
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600,
                          check=False, cwd=str(tmp_path))
    return proc.returncode, proc.stdout


def test_site_installs_from_the_mirrored_catalogs(testbed, core, custom, tmp_path):
    """site.yml with only the mirror and install steps on: the install roles take the CatalogSources the mirror
    role published (mirror_result), with no catalog name given, while the default sources are gone. (Before the
    Kubernetes case, which leaves the ClusterPolicy pointing at images the simulated nodes cannot pull.)"""
    variables = dict(base_vars(str(tmp_path)), gpuops_install=True, nfd_min_gpu_nodes=0, nfd_poll_interval=1,
                     gpu_operator_olm_channel='stable', gpu_operator_olm_starting_csv='gpu-operator-certified.v25.10.1',
                     gpu_operator_cluster_policy_name='gpu-cluster-policy', gpu_operator_poll_interval=1,
                     gpu_operator_ready_timeout=120)
    assert not [k for k in variables if k.endswith(('_olm_source', '_olm_source_namespace'))]
    rc, out = run_site(testbed.kubeconfig, variables, tmp_path)
    assert rc == 0, out[-6000:]
    assert_secret_free(out, SECRETS)
    sources = {s['metadata']['name'] for s in cluster_list(custom, 'cs', 'openshift-marketplace')}
    assert {'redhat-operators-mirror', 'certified-operators-mirror'} <= sources
    assert not {'redhat-operators', 'certified-operators'} & sources
    olm = ('operators.coreos.com', 'v1alpha1')
    for namespace, package, source in (('openshift-nfd', 'nfd', 'redhat-operators-mirror'),
                                       ('nvidia-gpu-operator', 'gpu-operator-certified', 'certified-operators-mirror')):
        sub = custom.get_namespaced_custom_object(*olm, namespace, 'subscriptions', package)
        assert (sub['spec']['source'], sub['spec']['sourceNamespace']) == (source, 'openshift-marketplace'), sub['spec']
        assert sub['status'].get('installedCSV'), sub['status']
    # the ImageSetConfiguration of the same run covers the collection's own images too
    isc = yaml.safe_load((tmp_path / 'isc.yaml').read_text())
    names = [i['name'] for i in isc['mirror']['additionalImages']]
    assert 'nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0-ubuntu22.04' in names


def test_plan_variants_pass_the_real_schemas(custom):
    """ICSP (OpenShift < 4.13), mirrorSourcePolicy, catalog polling: the objects the role would write,
    validated by the apiserver against the real CRD schemas (server-side dry run, nothing stored)."""
    plurals = {'ImageContentSourcePolicy': G['icsp'], 'ImageDigestMirrorSet': G['idms'],
               'ImageTagMirrorSet': G['itms'], 'CatalogSource': G['cs']}
    for extra in ({'use_icsp': True, 'catalog_sources': []}, {'source_policy': 'NeverContactSource', 'catalog_sources': [
            {'name': 'polled', 'index': 'certified-operator-index', 'poll_interval': '45m'}]}):
        config = {'platform': 'openshift', 'registry': MIRROR, 'repositories': ['nvcr.io/nvidia', 'registry.redhat.io'],
                  'openshift_version': '4.18', 'mirror_set_name': 'gpuops-dry-run'}
        config.update(extra)
        plan = mirror_plan(config)
        assert plan['errors'] == [] and plan['public_references'] == []
        checked = 0
        for obj in plan['objects']:
            if obj['kind'] not in plurals:
                continue
            group, version, plural = plurals[obj['kind']]
            if obj['kind'] == 'CatalogSource':
                custom.create_namespaced_custom_object(group, version, obj['metadata']['namespace'], plural, obj,
                                                       dry_run='All')
            else:
                custom.create_cluster_custom_object(group, version, plural, obj, dry_run='All')
            checked += 1
        assert checked >= 1
    assert cluster_list(custom, 'icsp') == []


def test_bad_inputs_fail_before_writing(testbed, core, custom, tmp_path):
    base = dict(base_vars(str(tmp_path)), mirror_registry='mirror2.example.com', mirror_set_name='gpuops-mirror-2')
    cases = {
        'scheme_in_registry': {'mirror_registry': 'https://mirror2.example.com'},
        'public_catalog_image': {'mirror_catalog_sources': [
            {'name': 'community', 'image': 'registry.redhat.io/redhat/community-operator-index:v4.18'}]},
        'user_without_password': {'mirror_registry_password': ''},
        # Kubernetes: nvcr.io is not mirrored, the operand images would stay public
        'k8s_nvcr_not_mirrored': dict(kubernetes_vars(tmp_path), mirror_repositories=[
            {'source': 'ghcr.io/nvidia', 'mirror': MIRROR + '/ghcr/nvidia'}]),
    }
    before = snapshot(core, custom)
    found, raw = failures(testbed.kubeconfig, 'mirror', base, cases)
    expected = {'scheme_in_registry': 'must not have a scheme', 'public_catalog_image': 'public registry',
                'user_without_password': 'set both mirror_registry_username and mirror_registry_password',
                'k8s_nvcr_not_mirrored': 'has no mirror'}
    assert_failed(found, raw, expected, 'Check ')
    assert snapshot(core, custom) == before
    assert not (tmp_path / 'isc.yaml').exists() and not (tmp_path / 'images.txt').exists()
    with pytest.raises(client.ApiException):
        core.read_namespaced_secret('gpuops-mirror-pull', GPU_NS)
    assert_secret_free(raw, SECRETS)


def kubernetes_vars(tmp_path):
    return {'mirror_platform': 'kubernetes', 'mirror_operator_namespace': GPU_NS, 'mirror_registry': MIRROR,
            'mirror_repositories': ['nvcr.io/nvidia', {'source': 'ghcr.io/nvidia', 'mirror': MIRROR + '/ghcr/nvidia'}],
            'mirror_registry_username': USER, 'mirror_registry_password': PASSWORD,
            'mirror_csv_file': gpu_operator_csv_path(), 'mirror_image_list_path': str(tmp_path / 'images.txt'),
            'mirror_image_list_format': 'list', 'mirror_ca_bundle': ''}


def test_kubernetes_operands_pull_from_the_mirror(testbed, core, custom, apps, tmp_path):
    listing = tmp_path / 'images.txt'
    variables = kubernetes_vars(tmp_path)

    rc, results, raw = run_role(testbed.kubeconfig, 'mirror', variables)
    assert rc == 0, raw[-3000:]
    assert_secret_free(raw, SECRETS)
    assert pull_secret_auths(core, GPU_NS, 'gpuops-mirror-pull') == {MIRROR: {'auth': AUTH}}
    images = listing.read_text().splitlines()
    assert images == sorted(images) and any(i.startswith('nvcr.io/nvidia/driver@sha256:') for i in images)

    def rendered():
        daemonsets = apps.list_namespaced_daemon_set(GPU_NS).items
        pods = [ds.spec.template.spec for ds in daemonsets]
        images = [c.image for p in pods for c in (p.containers or []) + (p.init_containers or [])]
        secrets = [[s.name for s in (p.image_pull_secrets or [])] for p in pods]
        ok = daemonsets and all(i.startswith(MIRROR + '/') for i in images) and \
            all('gpuops-mirror-pull' in s for s in secrets)
        return ok and daemonsets

    daemonsets = wait_until('operand DaemonSets rendered from the mirror by the gpu-operator', rendered, 90, 1)
    rendered_objects = [dict(apps.api_client.sanitize_for_serialization(ds), kind='DaemonSet') for ds in daemonsets]
    policy = custom.get_cluster_custom_object(*G['cp'], 'gpu-cluster-policy')
    assert public_registry_references(rendered_objects + [policy], [MIRROR]) == []
    assert_secret_free(config_maps_text(core), SECRETS, 'ConfigMaps')

    before = snapshot(core, custom)
    rc, results, raw = run_role(testbed.kubeconfig, 'mirror', variables)
    assert rc == 0 and changed_tasks(results) == [], raw[-3000:]
    assert snapshot(core, custom) == before
