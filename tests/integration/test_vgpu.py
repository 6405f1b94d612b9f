"""gpuops.gpu.vgpu on the virtual GPU cluster: the licensing Secret (token verbatim), the pull Secret,
the ClusterPolicy driver settings — and the REAL gpu-operator mounting the Secret into its driver
DaemonSet and pulling the vGPU driver from the private registry. Secrets never in output."""

import base64
import json

import pytest

from ansible_run import changed_tasks, run_play, run_role
from conftest import wait_until
from policy_helpers import CP
from role_cases import assert_failed, assert_secret_free, config_maps_text, failures

GPU_NS = 'gpu-operator'
# A token-shaped sentinel with a trailing newline and no final-newline-stripping tolerance.
TOKEN = 'eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.VGPU-TOKEN-SENTINEL-2c9e.c2lnbmF0dXJl\n'
PASSWORD = 'Registry-Pa55-SENTINEL-91d0'
USER = 'robot$vgpu'
REGISTRY = 'registry.example.com:5000'
AUTH = base64.b64encode(('%s:%s' % (USER, PASSWORD)).encode()).decode()
SECRETS = (TOKEN.strip(), base64.b64encode(TOKEN.encode()).decode(), PASSWORD, AUTH)


pytestmark = pytest.mark.usefixtures('cluster_policy')


def variables(token_file, **extra):
    out = {'vgpu_operator_namespace': GPU_NS, 'vgpu_token_file': token_file,
           'vgpu_gridd_settings': {'ServerPort': 443},
           'vgpu_driver_repository': REGISTRY + '/nvidia-vgpu', 'vgpu_driver_version': '580.95.05-grid',
           'vgpu_registry_username': USER, 'vgpu_registry_password': PASSWORD}
    out.update(extra)
    return out


def snapshot(core, custom):
    out = {'cp': custom.get_cluster_custom_object(*CP, 'gpu-cluster-policy')['spec']['driver']}
    for secret in core.list_namespaced_secret(GPU_NS).items:
        out[secret.metadata.name] = secret.metadata.resource_version
    return json.loads(json.dumps(out))


def test_check_mode_writes_nothing(testbed, core, custom, token_file):
    before = snapshot(core, custom)
    rc, results, raw = run_role(testbed.kubeconfig, 'vgpu', variables(token_file), check=True, diff=True)
    assert rc == 0, raw[-3000:]
    assert snapshot(core, custom) == before
    assert_secret_free(raw, SECRETS)


def test_bad_inputs_fail_before_writing(testbed, core, custom, token_file, tmp_path):
    empty = tmp_path / 'empty.tok'
    empty.write_bytes(b'')
    cases = {
        'missing_token_file': {'vgpu_token_file': str(tmp_path / 'missing.tok')},
        'empty_token_file': {'vgpu_token_file': str(empty)},
        'gridd_typo': {'vgpu_gridd_settings': {'FeatureTyp': 1}},
        # vgpu_driver_version 580.95.05-grid (R580) on hosts whose vGPU manager is vGPU 17.3 (R550)
        'guest_newer_than_host': {'vgpu_host_manager_version': '17.3'},
        'host_version_malformed': {'vgpu_host_manager_version': '17.x'},
    }
    before = snapshot(core, custom)
    found, raw = failures(testbed.kubeconfig, 'vgpu', variables(token_file), cases)
    expected = {'missing_token_file': 'does not exist on the Ansible controller', 'empty_token_file': 'is empty',
                'gridd_typo': "did you mean 'FeatureType'",
                'guest_newer_than_host': 'the vGPU guest driver 580.95.05-grid (vgpu_driver_version, branch R580) is '
                                         'newer than the vGPU manager 17.3 on the hosts',
                'host_version_malformed': "vgpu_host_manager_version '17.x' must be the vGPU software release"}
    assert_failed(found, raw, expected, 'Check the inputs before writing anything')
    assert snapshot(core, custom) == before
    assert_secret_free(raw, SECRETS)


def test_licensing_and_driver_then_idempotent(testbed, core, custom, apps, token_file):
    # the hosts' vGPU manager of the same branch as the guest driver passes the preflight
    rc, results, raw = run_role(testbed.kubeconfig, 'vgpu',
                                variables(token_file, vgpu_host_manager_version='580.95.05'), diff=True)
    assert rc == 0, raw[-3000:]
    assert_secret_free(raw, SECRETS)
    secret = core.read_namespaced_secret('licensing-config', GPU_NS)
    assert sorted(secret.data) == ['client_configuration_token.tok', 'gridd.conf']
    assert base64.b64decode(secret.data['client_configuration_token.tok']) == TOKEN.encode()  # verbatim
    gridd = base64.b64decode(secret.data['gridd.conf']).decode()
    assert [line for line in gridd.splitlines() if not line.startswith('#')] == ['FeatureType=1', 'ServerPort=443']
    pull = core.read_namespaced_secret('gpuops-vgpu-registry', GPU_NS)
    assert pull.type == 'kubernetes.io/dockerconfigjson'
    assert json.loads(base64.b64decode(pull.data['.dockerconfigjson'])) == {'auths': {REGISTRY: {'auth': AUTH}}}
    driver = custom.get_cluster_custom_object(*CP, 'gpu-cluster-policy')['spec']['driver']
    assert driver['licensingConfig'] == {'nlsEnabled': True, 'secretName': 'licensing-config'}
    assert 'configMapName' not in driver['licensingConfig']
    assert (driver['repository'], driver['image'], driver['version']) == (REGISTRY + '/nvidia-vgpu', 'driver',
                                                                          '580.95.05-grid')
    assert driver['imagePullSecrets'] == ['gpuops-vgpu-registry']
    assert_secret_free(config_maps_text(core), SECRETS, 'ConfigMaps')

    # the real operator: driver image from the private registry (+ OS tag), licensing Secret mounted
    def rendered():
        ds = apps.read_namespaced_daemon_set('nvidia-driver-daemonset', GPU_NS)
        pod = ds.spec.template.spec
        image = [c.image for c in pod.containers if c.name == 'nvidia-driver-ctr'][0]
        volume = [v for v in pod.volumes or [] if v.name == 'licensing-config']
        ok = image.startswith(REGISTRY + '/nvidia-vgpu/driver:580.95.05-grid-') and volume and \
            volume[0].secret and volume[0].secret.secret_name == 'licensing-config' and \
            sorted(i.key for i in volume[0].secret.items) == ['client_configuration_token.tok', 'gridd.conf'] and \
            'gpuops-vgpu-registry' in [s.name for s in pod.image_pull_secrets or []]
        return ok
    wait_until('driver DaemonSet with the vGPU image and the licensing Secret', rendered, 90, 1)

    before = snapshot(core, custom)
    rc, results, raw = run_role(testbed.kubeconfig, 'vgpu', variables(token_file))
    assert rc == 0 and changed_tasks(results) == [], raw[-3000:]
    assert snapshot(core, custom) == before
    assert_secret_free(raw, SECRETS)


def test_cluster_policy_info_settings_and_a_patched_removal(testbed, custom):
    """The modules the roles read and write the ClusterPolicy with, on the real CRD: cluster_policy_info returns
    what the operator takes from the ClusterPolicy (the CSV example leaves migManager.config unset: the
    operator's built-in ConfigMap); cluster_policy state patched removes a field with null (the real apiserver's
    server-side dry run in check mode, nothing stored) and never creates a ClusterPolicy it does not find."""
    before = custom.get_cluster_custom_object(*CP, 'gpu-cluster-policy')
    assert before['spec']['devicePlugin']['config'] == {'name': '', 'default': ''}
    remove = {'name': 'gpu-cluster-policy', 'state': 'patched', 'wait': False,
              'overrides': {'devicePlugin': {'config': None}}}
    tasks = [{'name': 'info', 'gpuops.gpu.cluster_policy_info': {}, 'register': 'r'},
             {'name': 'remove', 'gpuops.gpu.cluster_policy': remove, 'register': 'r'}]
    rc, results, raw = run_play(testbed.kubeconfig, tasks, check=True, diff=True)
    assert rc == 0, raw[-3000:]
    info = results['info']
    assert (info['mig_strategy'], info['device_plugin_config'], info['mig_config_map']) == (
        'single', {'name': '', 'default': ''}, 'default-mig-parted-config'), info
    removed = results['remove']
    assert removed['changed'] is True and removed['patch'] == {'devicePlugin': {'config': None}}, removed
    assert 'config' not in removed['spec']['devicePlugin']
    assert 'config' in removed['diff']['before']['spec']['devicePlugin']
    missing = dict(remove, name='not-there', overrides={'mig': {'strategy': 'mixed'}})
    rc, results, raw = run_play(testbed.kubeconfig, [{'name': 'missing', 'gpuops.gpu.cluster_policy': missing,
                                                      'register': 'r', 'ignore_errors': True}])
    assert results['missing']['failed'] is True, raw[-3000:]
    assert 'ClusterPolicy not-there not found (state patched' in results['missing']['msg']
    after = custom.get_cluster_custom_object(*CP, 'gpu-cluster-policy')
    assert after['metadata']['generation'] == before['metadata']['generation']
    assert [p['metadata']['name'] for p in custom.list_cluster_custom_object(*CP)['items']] == ['gpu-cluster-policy']
