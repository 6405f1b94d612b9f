# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""execution-environment.yml: `ansible-builder create` makes a valid build context from the collection
tarball, and ansible-builder's own introspection (what the image build runs in its builder stage)
finds the Python and system requirements of gpuops.gpu and kubernetes.core.

Building the image itself needs a container engine (podman or docker with a daemon), which CI does not
have; see docs/execution-environment.md.
"""

from __future__ import (absolute_import, division, print_function)
__metaclass__ = type

import gzip
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile

import pytest
import yaml

from ee_definition import build_args

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
BIN = os.path.dirname(sys.executable)
EE_FILE = os.path.join(REPO, 'execution-environment.yml')


def _load(path):
    with open(os.path.join(REPO, path)) as handle:
        return yaml.safe_load(handle)


def _pins(path):
    """{name: 'name==x'} from a pip requirements file."""
    out = {}
    with open(os.path.join(REPO, path)) as handle:
        for line in handle:
            line = line.split('#', 1)[0].strip()
            if line:
                out[re.split(r'[<>=!~\[; ]', line, maxsplit=1)[0].lower()] = line
    return out


def _v(text):
    return tuple(int(x) for x in text.split('.'))


def _tool(name):
    path = os.path.join(BIN, name)
    if not os.path.exists(path):
        pytest.fail('%s is not installed next to %s: add it to tests/requirements-dev.txt' % (name, sys.executable))
    return path


EE = _load('execution-environment.yml')
GALAXY = _load('galaxy.yml')
TARBALL = 'gpuops-gpu-%s.tar.gz' % GALAXY['version']


def _testbed_helm_version():
    with open(os.path.join(REPO, 'tests', 'testbed', 'hack', 'install-helm.sh')) as handle:
        match = re.search(r'^HELM_VERSION=\$\{HELM_VERSION:-(v[0-9.]+)\}$', handle.read(), re.M)
    assert match, 'HELM_VERSION default not found in tests/testbed/hack/install-helm.sh'
    return match.group(1)


HELM_ARGS = build_args(EE)
HELM_VERSION = HELM_ARGS.get('HELM_VERSION')
HELM_TARBALL = 'helm-%s-linux-amd64.tar.gz' % HELM_VERSION


def test_definition_is_v3_with_a_base_image_and_pinned_tools():
    assert EE['version'] == 3
    # by digest: every build starts from the same image
    assert re.match(r'^[a-z0-9./-]+:stream9@sha256:[0-9a-f]{64}$', EE['images']['base_image']['name'])
    deps = EE['dependencies']
    constraints = _pins('ee-constraints.txt')
    # the image runs the ansible-core and ansible-runner of its constraints, which the newest version matrix
    # (tests/compat/newest.txt, built from the same file) tests
    assert deps['ansible_core']['package_pip'] == constraints['ansible-core']
    assert deps['ansible_runner']['package_pip'] == constraints['ansible-runner']
    assert deps['python'] == 'requirements.txt'
    assert deps['system'] == 'bindep.txt'


def test_every_python_package_is_pinned_and_the_python_is_the_matrix_one():
    constraints = _pins('ee-constraints.txt')
    assert constraints and all(re.match(r'^[A-Za-z0-9_.-]+==[0-9][^ ]*$', pin) for pin in constraints.values())
    # the collection's own requirements and kubernetes.core's are pinned too (the image gets no range)
    for name in list(_pins('requirements.txt')) + ['requests-oauthlib']:
        assert name.lower() in constraints, '%s is not pinned in ee-constraints.txt' % name
    # every pip run of the image takes the constraints: set in the base stage the others derive from
    files = dict((f['dest'], f['src']) for f in EE['additional_build_files'])
    assert files.get('constraints') == 'ee-constraints.txt'
    assert EE['additional_build_steps']['prepend_base'] == [
        'COPY _build/constraints/ee-constraints.txt /etc/gpuops/ee-constraints.txt',
        'ENV PIP_CONSTRAINT=/etc/gpuops/ee-constraints.txt']
    # the interpreter the newest matrix venv is built with
    with open(os.path.join(REPO, 'tests', 'compat', 'newest.txt')) as handle:
        newest = handle.read()
    assert '-c ../../ee-constraints.txt' in newest.splitlines()
    assert EE['dependencies']['python_interpreter'] == {'package_system': 'python3.12',
                                                        'python_path': '/usr/bin/python3.12'}


def test_galaxy_requirements_follow_galaxy_yml():
    collections = EE['dependencies']['galaxy']['collections']
    by_name = dict((c['name'], c) for c in collections)
    own = by_name.get('/build/collections/' + TARBALL)
    assert own is not None, 'the EE must install %s (version from galaxy.yml): %s' % (TARBALL, sorted(by_name))
    assert own['type'] == 'file'
    for name, version in GALAXY.get('dependencies', {}).items():
        # the version the tests run with (this virtualenv's), inside the range galaxy.yml declares
        manifest = os.path.join(sysconfig.get_paths()['purelib'], 'ansible_collections', *name.split('.'),
                                'MANIFEST.json')
        with open(manifest) as handle:
            tested = json.load(handle)['collection_info']['version']
        assert by_name[name]['version'] == tested, 'the EE installs %s %s; the tests run %s' % (
            name, by_name[name]['version'], tested)
        low, high = re.match(r'^>=([0-9.]+),<([0-9.]+)$', version).groups()
        assert _v(low) <= _v(tested) < _v(high), (name, tested, version)
    assert any(t.endswith(':' + GALAXY['version']) for t in EE['options']['tags'])


def test_helm_is_pinned_with_checksums_and_follows_the_testbed():
    # the EE's helm is the one the integration tests run kubernetes.core.helm with
    assert HELM_VERSION == _testbed_helm_version()
    # sha256 sums published in the Helm release notes, one per architecture the build step knows
    for arch in ('AMD64', 'ARM64'):
        assert re.match(r'^[0-9a-f]{64}$', HELM_ARGS.get('HELM_SHA256_' + arch) or ''), arch
    assert HELM_ARGS['HELM_SHA256_AMD64'] != HELM_ARGS['HELM_SHA256_ARM64']
    assert 'TARGETARCH' in HELM_ARGS
    # the tarball comes from the build context (supplied by the user), never from a download in the build
    files = dict((f['dest'], f['src']) for f in EE['additional_build_files'])
    assert files.get('helm') == 'helm-%s-linux-*.tar.gz' % HELM_VERSION
    steps = '\n'.join(str(s) for s in EE['additional_build_steps']['append_final'])
    for word in ('curl', 'wget', 'http://', 'https://'):
        assert word not in steps, word


@pytest.fixture(scope='module')
def built(tmp_path_factory):
    """The collection tarball and the EE definition side by side, as in a checkout after
    `ansible-galaxy collection build`, with a (fake) helm release tarball next to them."""
    work = tmp_path_factory.mktemp('ee')
    subprocess.run([os.path.join(BIN, 'ansible-galaxy'), 'collection', 'build', '--force', '--output-path', str(work)],
                   cwd=REPO, check=True, stdout=subprocess.PIPE)
    assert (work / TARBALL).exists()
    _fake_helm_tarball(work / HELM_TARBALL, HELM_VERSION)
    for name in ('execution-environment.yml', 'requirements.txt', 'bindep.txt', 'ee-constraints.txt'):
        shutil.copy(os.path.join(REPO, name), str(work / name))
    return work


def test_ansible_builder_create_makes_the_build_context(built):
    proc = subprocess.run([_tool('ansible-builder'), 'create', '--file', 'execution-environment.yml',
                           '--context', 'context', '--output-filename', 'Containerfile', '-v', '2'],
                          cwd=str(built), check=False, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.returncode == 0, proc.stdout
    assert 'No matches' not in proc.stdout, proc.stdout
    ctx = built / 'context'
    containerfile = (ctx / 'Containerfile').read_text()
    base = EE['images']['base_image']['name']
    assert 'ARG EE_BASE_IMAGE="%s"' % base in containerfile
    assert 'FROM $EE_BASE_IMAGE AS base' in containerfile
    refs = (EE['dependencies']['ansible_core']['package_pip'], EE['dependencies']['ansible_runner']['package_pip'])
    assert 'ARG ANSIBLE_INSTALL_REFS="%s %s"' % refs in containerfile
    # the constraints are in place before the first pip run of the base stage (ansible-core's install)
    base = containerfile[containerfile.index('FROM $EE_BASE_IMAGE AS base'):containerfile.index('FROM base AS galaxy')]
    constraint = base.index('ENV PIP_CONSTRAINT=/etc/gpuops/ee-constraints.txt')
    assert constraint < base.index('/output/scripts/pip_install') < base.index('$ANSIBLE_INSTALL_REFS')
    with open(os.path.join(REPO, 'ee-constraints.txt')) as handle:
        assert (ctx / '_build' / 'constraints' / 'ee-constraints.txt').read_text() == handle.read()
    # the builder stage introspects the installed collections, the final stage proves they load
    assert 'introspect.py introspect --user-pip=requirements.txt --user-bindep=bindep.txt' in containerfile
    assert 'ansible-doc -t module gpuops.gpu.gpu_nodes_info' in containerfile
    # helm: the pinned version and sums as build args, the tarball copied from the build context, the
    # checksum-checked install before the final check, and `helm version` as its smoke check
    final = containerfile[containerfile.index('FROM base AS final'):]
    for name, value in sorted(HELM_ARGS.items()):
        assert ('ARG %s=%s' % (name, value) if value else 'ARG %s' % name) in final.splitlines(), name
    assert 'COPY _build/helm/ /tmp/helm-dist/' in final
    run = _helm_run_step(containerfile)
    assert 'sha256sum --check' in run and '$HELM_SHA256_AMD64' in run and '$HELM_SHA256_ARM64' in run
    assert '/usr/local/bin/helm' in run and run.rstrip().endswith('/usr/local/bin/helm version')
    assert final.index('COPY _build/helm/') < final.index(run) < final.index('ansible-doc -t module')
    assert (ctx / '_build' / 'helm' / HELM_TARBALL).exists(), 'the helm tarball was not copied into the build context'

    build = ctx / '_build'
    tarball = build / 'collections' / TARBALL
    assert tarball.exists(), 'the collection tarball was not copied into the build context'
    with tarfile.open(str(tarball)) as tar:
        manifest = json.load(tar.extractfile('MANIFEST.json'))
    assert (manifest['collection_info']['namespace'], manifest['collection_info']['name']) == ('gpuops', 'gpu')
    requirements = yaml.safe_load((build / 'requirements.yml').read_text())
    assert {'name': '/build/collections/' + TARBALL, 'type': 'file'} in requirements['collections']
    assert any(c['name'] == 'kubernetes.core' for c in requirements['collections'])
    with open(os.path.join(REPO, 'requirements.txt')) as handle:
        assert (build / 'requirements.txt').read_text() == handle.read()
    with open(os.path.join(REPO, 'bindep.txt')) as handle:
        assert (build / 'bindep.txt').read_text() == handle.read()


def test_introspection_finds_the_collection_requirements(built):
    """What the image's builder stage computes: every installed collection's requirements.txt /
    bindep.txt (or meta/execution-environment.yml) merged with the EE's own files."""
    inst = built / 'collections'
    subprocess.run([os.path.join(BIN, 'ansible-galaxy'), 'collection', 'install', '--no-deps', '--force', '-p',
                    str(inst), str(built / TARBALL)], check=True, stdout=subprocess.PIPE)
    # kubernetes.core as this virtualenv has it (the ansible package), next to the installed tarball
    kube = os.path.join(sysconfig.get_paths()['purelib'], 'ansible_collections', 'kubernetes')
    assert os.path.isdir(kube), kube
    os.symlink(kube, str(inst / 'ansible_collections' / 'kubernetes'))
    out = subprocess.run([_tool('ansible-builder'), 'introspect', '--sanitize', '--user-pip', 'requirements.txt',
                          '--user-bindep', 'bindep.txt', str(inst)], cwd=str(built), check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    data = yaml.safe_load(out[out.index('---'):])

    def origin(lines, collection):
        return sorted(line.split('#')[0].strip() for line in lines if line.endswith('from collection ' + collection))

    # PyYAML is left out of collection requirements on purpose by ansible-builder (ansible-core brings it)
    assert origin(data['python'], 'gpuops.gpu') == ['jsonpatch', 'kubernetes>=29.0.0']
    assert 'kubernetes>=24.2.0' in origin(data['python'], 'kubernetes.core')
    assert origin(data['python'], 'user') == sorted(_pins('requirements.txt').values())
    assert origin(data['system'], 'gpuops.gpu') == ['python3 [platform:dpkg platform:rpm]']


def _fake_helm_tarball(path, version):
    """A tarball laid out like a helm release (linux-<arch>/helm) whose helm prints `version`."""
    script = ('#!/bin/sh\n'
              'if [ "$2" = "--template" ]; then printf %s "$V"; else echo "version.BuildInfo{Version:\\"$V\\"}"; fi\n')
    data = script.replace('$V', version).encode()
    # deterministic bytes (no name or mtime in the gzip header), so that the sha256 of a second copy is the same
    with open(str(path), 'wb') as raw, gzip.GzipFile(filename='', fileobj=raw, mode='wb', mtime=0) as gz, \
            tarfile.open(fileobj=gz, mode='w') as tar:
        info = tarfile.TarInfo('linux-amd64/helm')
        info.size, info.mode = len(data), 0o755
        tar.addfile(info, io.BytesIO(data))
    with open(str(path), 'rb') as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def _helm_run_step(containerfile):
    lines = [line for line in containerfile.splitlines() if line.startswith('RUN ') and '/usr/local/bin/helm' in line]
    assert len(lines) == 1, lines
    return lines[0]


@pytest.fixture(scope='module')
def helm_step(built):
    """The helm RUN step from the generated Containerfile, with its two absolute paths moved under a
    temporary directory so it can run here as the build would run it."""
    containerfile = (built / 'context' / 'Containerfile')
    if not containerfile.exists():  # this test alone: make the build context as the test above does
        subprocess.run([_tool('ansible-builder'), 'create', '--file', 'execution-environment.yml', '--context',
                        'context', '--output-filename', 'Containerfile'], cwd=str(built), check=True,
                       stdout=subprocess.PIPE)
    return _helm_run_step(containerfile.read_text())[len('RUN '):]


def _run_helm_step(step, tmp_path, tarballs, **args):
    dist, prefix = tmp_path / 'dist', tmp_path / 'prefix'
    dist.mkdir(parents=True)
    (prefix / 'bin').mkdir(parents=True)
    for name, version in tarballs.items():
        _fake_helm_tarball(dist / name, version)
    env = dict(os.environ, PYCMD=sys.executable, TARGETARCH='amd64')
    env.update((k, v) for k, v in HELM_ARGS.items() if v)
    env.update(args)
    script = step.replace('/tmp/helm-dist', str(dist)).replace('/usr/local/bin', str(prefix / 'bin'))
    proc = subprocess.run(['/bin/sh', '-c', script], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, check=False)
    return proc, prefix / 'bin' / 'helm', dist


def test_helm_step_installs_a_tarball_whose_sha256_matches(helm_step, tmp_path):
    digest = _fake_helm_tarball(tmp_path / 'probe.tar.gz', HELM_VERSION)
    proc, helm, dist = _run_helm_step(helm_step, tmp_path, {HELM_TARBALL: HELM_VERSION}, HELM_SHA256_AMD64=digest)
    assert proc.returncode == 0, proc.stdout
    assert os.access(str(helm), os.X_OK)
    assert 'Version:"%s"' % HELM_VERSION in proc.stdout  # the `helm version` smoke check ran
    assert not dist.exists()  # the tarball does not stay in the image


def test_helm_step_refuses_a_tarball_with_another_sha256(helm_step, tmp_path):
    # the fake tarball against the real pinned sum: the build stops before installing anything
    proc, helm = _run_helm_step(helm_step, tmp_path, {HELM_TARBALL: HELM_VERSION})[:2]
    assert proc.returncode != 0
    assert 'is not the pinned %s' % HELM_ARGS['HELM_SHA256_AMD64'] in proc.stdout, proc.stdout
    assert not helm.exists()


def test_helm_step_names_the_missing_tarball(helm_step, tmp_path):
    proc, helm = _run_helm_step(helm_step, tmp_path, {HELM_TARBALL: HELM_VERSION}, TARGETARCH='arm64')[:2]
    assert proc.returncode != 0
    assert 'helm-%s-linux-arm64.tar.gz is not in the build context' % HELM_VERSION in proc.stdout, proc.stdout
    assert not helm.exists()
    proc = _run_helm_step(helm_step, tmp_path / 'b', {HELM_TARBALL: HELM_VERSION}, TARGETARCH='s390x')[0]
    assert proc.returncode != 0 and 'no pinned sha256 for architecture s390x' in proc.stdout, proc.stdout


def test_helm_step_checks_the_installed_version(helm_step, tmp_path):
    digest = _fake_helm_tarball(tmp_path / 'probe.tar.gz', 'v3.0.0')
    proc = _run_helm_step(helm_step, tmp_path, {HELM_TARBALL: 'v3.0.0'}, HELM_SHA256_AMD64=digest)[0]
    assert proc.returncode != 0
    assert 'reports v3.0.0, not %s' % HELM_VERSION in proc.stdout, proc.stdout
