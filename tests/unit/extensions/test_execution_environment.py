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


def _tool(name):
    path = os.path.join(BIN, name)
    if not os.path.exists(path):
        pytest.fail('%s is not installed next to %s: add it to tests/requirements-dev.txt' % (name, sys.executable))
    return path


EE = _load('execution-environment.yml')
GALAXY = _load('galaxy.yml')
TARBALL = 'gpuops-gpu-%s.tar.gz' % GALAXY['version']


def test_definition_is_v3_with_a_base_image_and_pinned_tools():
    assert EE['version'] == 3
    assert EE['images']['base_image']['name']
    deps = EE['dependencies']
    dev = _pins('tests/requirements-dev.txt')
    # the image runs the ansible-core the collection is tested with
    assert deps['ansible_core']['package_pip'] == dev['ansible-core']
    assert deps['ansible_runner']['package_pip'].startswith('ansible-runner')
    if 'ansible-runner' in dev:
        assert deps['ansible_runner']['package_pip'] == dev['ansible-runner']
    assert deps['python'] == 'requirements.txt'
    assert deps['system'] == 'bindep.txt'


def test_galaxy_requirements_follow_galaxy_yml():
    collections = EE['dependencies']['galaxy']['collections']
    by_name = dict((c['name'], c) for c in collections)
    own = by_name.get('/build/collections/' + TARBALL)
    assert own is not None, 'the EE must install %s (version from galaxy.yml): %s' % (TARBALL, sorted(by_name))
    assert own['type'] == 'file'
    for name, version in GALAXY.get('dependencies', {}).items():
        assert by_name[name]['version'] == version, 'EE range for %s differs from galaxy.yml' % name
    assert any(t.endswith(':' + GALAXY['version']) for t in EE['options']['tags'])


@pytest.fixture(scope='module')
def built(tmp_path_factory):
    """The collection tarball and the EE definition side by side, as in a checkout after
    `ansible-galaxy collection build`."""
    work = tmp_path_factory.mktemp('ee')
    subprocess.run([os.path.join(BIN, 'ansible-galaxy'), 'collection', 'build', '--force', '--output-path', str(work)],
                   cwd=REPO, check=True, stdout=subprocess.PIPE)
    assert (work / TARBALL).exists()
    for name in ('execution-environment.yml', 'requirements.txt', 'bindep.txt'):
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
    # the builder stage introspects the installed collections, the final stage proves they load
    assert 'introspect.py introspect --user-pip=requirements.txt --user-bindep=bindep.txt' in containerfile
    assert 'ansible-doc -t module gpuops.gpu.gpu_nodes_info' in containerfile

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
    assert origin(data['python'], 'gpuops.gpu') == ['jsonpatch', 'kubernetes>=24.2.0']
    assert 'kubernetes>=24.2.0' in origin(data['python'], 'kubernetes.core')
    assert origin(data['python'], 'user') == sorted(_pins('requirements.txt').values())
    assert origin(data['system'], 'gpuops.gpu') == ['python3 [platform:dpkg platform:rpm]']
