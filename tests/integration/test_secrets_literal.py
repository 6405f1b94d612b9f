"""Secrets stay literal: registry passwords with Jinja in them go through the collection's playbooks the way a
user passes them (``-e @vars.yml``, a vault-style ``{{ name }}`` reference, an AWX credential's environment
variable) and land verbatim in the pull Secrets — never templated (ansible-core 2.19 templates strings from
vars files: ``Pw{{ 6*7 }}x`` would become ``Pw42x``), and never in the output of ``ansible-playbook -v``,
templated or not (an undefined name inside one would otherwise fail the run with the value in the error)."""

import base64
import json
import os
import subprocess
import sys

import pytest
import yaml

from cluster_policy_example import gpu_operator_csv_path
from conftest import REPO
from ansible_collections.gpuops.gpu.tests.unit.extensions.awx_files import load_awx

GPU_NS = 'gpu-operator'
REGISTRY = 'registry.example.com:5000'
MIRROR = 'mirror.example.com:8443'
USER = 'robot$gpu'
TOKEN = 'eyJhbGciOiJSUzI1NiJ9.LITERAL-TOKEN-SENTINEL.c2ln\n'
ARITHMETIC = 'Pw{{ 6*7 }}x-SENTINEL-5c1e'
UNDEFINED = 'Pw{{ undefined_name }}x-SENTINEL-77ab'
BOTH = 'M{{ undefined_mirror_name }}{{ 6*7 }}m-SENTINEL-0d42'
FROM_ENV = 'E{{ 6*7 }}e{% if true %}-SENTINEL-e9f3'


pytestmark = pytest.mark.usefixtures('cluster_policy')


def run_playbook(kubeconfig, playbook, tmp_path, files, env=None):
    """ansible-playbook -v playbooks/<playbook> -e @<file> for each of ``files`` (name -> variables, written
    as YAML the way a user writes a vars file); (rc, stdout + stderr)."""
    cmd = [os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-v',
           os.path.join(REPO, 'playbooks', playbook)]
    for name, variables in files.items():
        path = tmp_path / name
        path.write_text(yaml.safe_dump(variables, default_style='"'))
        cmd += ['-e', '@' + str(path)]
    environ = dict(os.environ, K8S_AUTH_KUBECONFIG=kubeconfig, ANSIBLE_LOCALHOST_WARNING='false',
                   ANSIBLE_INVENTORY_UNPARSED_WARNING='false', ANSIBLE_PYTHON_INTERPRETER=sys.executable,
                   ANSIBLE_STDOUT_CALLBACK='default', ANSIBLE_NOCOLOR='1')
    environ.update(env or {})
    proc = subprocess.run(cmd, env=environ, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=900, check=False)
    return proc.returncode, proc.stdout


def stored_password(core, name, registry):
    """The password in the docker config of Secret ``name`` for ``registry`` (from its user:password auth)."""
    secret = core.read_namespaced_secret(name, GPU_NS)
    auths = json.loads(base64.b64decode(secret.data['.dockerconfigjson']))['auths']
    user, password = base64.b64decode(auths[registry]['auth']).decode().split(':', 1)
    assert user == USER
    return password


def forms(secret):
    """The secret and what Ansible would have made of it: rendered (where it renders), the auth field, the
    sentinel alone (so no part of the value is echoed either)."""
    out = {secret, 'SENTINEL-' + secret.split('SENTINEL-')[1],
           base64.b64encode(('%s:%s' % (USER, secret)).encode()).decode()}
    out.add(secret.replace('{{ 6*7 }}', '42'))
    return out


def assert_not_echoed(raw, secret):
    for form in forms(secret):
        assert form not in raw, 'the secret (or a form of it) appears in the ansible-playbook -v output'
    assert 'undefined_' not in raw, 'a name from inside the secret appears in the output'


def vgpu_vars(token_file):
    return {'vgpu_operator_namespace': GPU_NS, 'vgpu_token_file': token_file,
            'vgpu_driver_repository': REGISTRY + '/nvidia-vgpu', 'vgpu_driver_version': '580.95.05-grid',
            'vgpu_registry_username': USER}


@pytest.mark.parametrize('secret', [ARITHMETIC, UNDEFINED], ids=['arithmetic', 'undefined-name'])
def test_vgpu_password_from_a_vars_file_is_stored_verbatim(testbed, core, token_file, tmp_path, secret):
    rc, raw = run_playbook(testbed.kubeconfig, 'vgpu.yml', tmp_path,
                           {'vars.yml': vgpu_vars(token_file), 'vault.yml': {'vgpu_registry_password': secret}})
    assert rc == 0, raw[-3000:]
    assert stored_password(core, 'gpuops-vgpu-registry', REGISTRY) == secret
    assert_not_echoed(raw, secret)


def test_mirror_password_through_a_vault_style_reference_is_stored_verbatim(testbed, core, tmp_path):
    variables = {'mirror_platform': 'kubernetes', 'mirror_operator_namespace': GPU_NS, 'mirror_registry': MIRROR,
                 'mirror_repositories': ['nvcr.io/nvidia', 'ghcr.io/nvidia'], 'mirror_csv_file': gpu_operator_csv_path(),
                 'mirror_registry_username': USER, 'mirror_registry_password': '{{ vault_mirror_password }}'}
    rc, raw = run_playbook(testbed.kubeconfig, 'mirror.yml', tmp_path,
                           {'vars.yml': variables, 'vault.yml': {'vault_mirror_password': BOTH}})
    assert rc == 0, raw[-3000:]
    assert stored_password(core, 'gpuops-mirror-pull', MIRROR) == BOTH
    assert_not_echoed(raw, BOTH)


def test_vgpu_password_from_an_awx_credential_environment_is_stored_verbatim(testbed, core, token_file, tmp_path):
    """As the AWX job template does it: the credential injects GPUOPS_REGISTRY_PASSWORD, the template's
    extra vars name it (extensions/awx/job_templates.yml)."""
    with open(os.path.join(REPO, 'extensions', 'awx', 'job_templates.yml')) as handle:
        templates = load_awx(handle)
    extra = [t for t in templates['controller_templates'] if t['playbook'] == 'playbooks/vgpu.yml'][0]['extra_vars']
    variables = dict(vgpu_vars(token_file), vgpu_registry_password_env=extra['vgpu_registry_password_env'])
    rc, raw = run_playbook(testbed.kubeconfig, 'vgpu.yml', tmp_path, {'vars.yml': variables},
                           env={'GPUOPS_REGISTRY_PASSWORD': FROM_ENV, 'GPUOPS_NGC_API_KEY': ''})
    assert rc == 0, raw[-3000:]
    assert stored_password(core, 'gpuops-vgpu-registry', REGISTRY) == FROM_ENV
    assert_not_echoed(raw, FROM_ENV)
