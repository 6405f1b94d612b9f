"""What a user does with a release: `ansible-galaxy collection build`, a fresh virtualenv with ansible-core and
the collection's own requirements.txt, `ansible-galaxy collection install` of the tarball (kubernetes.core
resolved as its dependency, offline, from a local tarball), then the collection's report playbook by its FQCN
against the virtual cluster. Nothing of the test environment (PYTHONPATH, collections path) leaks in.

And what a newcomer does from a clone: the README's first commands, run literally, reach a check-mode MIG plan."""

import fcntl
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

from ansible_run import facts_diff, node_facts
from policy_helpers import ensure_cluster_policy

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)


def run(cmd, env=None, cwd=None, timeout=900):
    proc = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout, check=False)
    assert proc.returncode == 0, '%s failed:\n%s' % (' '.join(cmd), proc.stdout[-4000:])
    return proc.stdout


def pinned(name):
    with open(os.path.join(REPO, 'tests', 'requirements-dev.txt')) as handle:
        return next(line.strip() for line in handle if re.match(r'^%s==' % re.escape(name), line.strip()))


def kubernetes_core_tarball(dest):
    """A Galaxy tarball of the kubernetes.core this virtualenv tests with, so the dependency installs offline.
    An installed collection keeps its MANIFEST.json and FILES.json (all a tarball adds to the files); the
    ansible package leaves some listed files out, so FILES.json (and its checksum in MANIFEST.json) is
    rewritten for the files that are there."""
    src = os.path.join(sysconfig.get_paths()['purelib'], 'ansible_collections', 'kubernetes', 'core')
    with open(os.path.join(src, 'MANIFEST.json')) as handle:
        manifest = json.load(handle)
    with open(os.path.join(src, 'FILES.json')) as handle:
        files_json = json.load(handle)
    present = [f for f in files_json['files'] if f['name'] == '.' or os.path.lexists(os.path.join(src, f['name']))]
    files_json['files'] = present
    files_bytes = json.dumps(files_json, indent=4).encode()
    manifest['file_manifest_file']['chksum_sha256'] = hashlib.sha256(files_bytes).hexdigest()
    manifest_bytes = json.dumps(manifest, indent=4).encode()
    path = os.path.join(str(dest), 'kubernetes-core-%s.tar.gz' % manifest['collection_info']['version'])
    with tarfile.open(path, 'w:gz') as tar:
        for name, data in (('MANIFEST.json', manifest_bytes), ('FILES.json', files_bytes)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
        for entry in present:
            if entry['name'] != '.':
                tar.add(os.path.join(src, entry['name']), arcname=entry['name'], recursive=False)
    return path


@pytest.fixture(scope='module')
def installed(tmp_path_factory):
    work = tmp_path_factory.mktemp('pkg')
    with open(os.path.join(REPO, 'galaxy.yml')) as handle:
        version = yaml.safe_load(handle)['version']
    run([os.path.join(BIN, 'ansible-galaxy'), 'collection', 'build', '--force', '--output-path', str(work)], cwd=REPO)
    tarball = str(work / ('gpuops-gpu-%s.tar.gz' % version))
    venv = str(work / 'venv')
    run([sys.executable, '-m', 'venv', venv])
    pip = [os.path.join(venv, 'bin', 'python'), '-m', 'pip', 'install', '-q', '--disable-pip-version-check']
    # ansible-core, then exactly what the collection says it needs (read from the tarball)
    with tarfile.open(tarball) as tar:
        requirements = tar.extractfile('requirements.txt').read().decode()
    (work / 'requirements.txt').write_text(requirements)
    run(pip + [pinned('ansible-core'), '-r', str(work / 'requirements.txt')])
    env = dict((k, v) for k, v in os.environ.items()
               if not k.startswith(('ANSIBLE_', 'K8S_AUTH_')) and k not in ('PYTHONPATH', 'KUBECONFIG'))
    env['PATH'] = os.path.join(venv, 'bin') + os.pathsep + env.get('PATH', '')
    collections = str(work / 'collections')
    out = run([os.path.join(venv, 'bin', 'ansible-galaxy'), 'collection', 'install', '--offline', '-p', collections,
               tarball, kubernetes_core_tarball(work)], env=env)
    assert 'gpuops.gpu:%s was installed successfully' % version in out, out
    env['ANSIBLE_COLLECTIONS_PATH'] = collections
    return venv, env


def test_report_playbook_from_the_installed_tarball(testbed, installed):
    venv, env = installed
    env = dict(env, K8S_AUTH_KUBECONFIG=testbed.kubeconfig, ANSIBLE_LOCALHOST_WARNING='false',
               ANSIBLE_INVENTORY_UNPARSED_WARNING='false', ANSIBLE_NOCOLOR='1')
    out = run([os.path.join(venv, 'bin', 'ansible-playbook'), 'gpuops.gpu.report',
               '-e', 'gpuops_report_title=installed-from-tarball'], env=env, cwd=str(os.path.dirname(venv)))
    assert 'installed-from-tarball' in out
    for node in ('a100-0', 'h100-1', 't4-0', 'l40s-0'):
        assert node in out, out[-3000:]
    assert re.search(r'localhost\s*:\s*ok=2\s+changed=0\s+unreachable=0\s+failed=0', out), out[-2000:]
    # the collection and its dependency came from the fresh install, not from the test environment
    listed = run([os.path.join(venv, 'bin', 'ansible-galaxy'), 'collection', 'list', '--format', 'json'], env=env)
    assert set(json.loads(listed)[env['ANSIBLE_COLLECTIONS_PATH'] + '/ansible_collections']) == \
        {'gpuops.gpu', 'kubernetes.core'}


def readme_first_block():
    """The commands of the first bash block of the README's "Against a real cluster" section, as written."""
    with open(os.path.join(REPO, 'README.md')) as handle:
        section = re.search(r'^## Against a real cluster\n(.*?)(?=^## )', handle.read(), re.M | re.S).group(1)
    block = re.search(r'^```bash\n(.*?)^```', section, re.M | re.S).group(1)
    return [line for line in block.splitlines() if line.strip()]


def plain_clone(dest):
    """The files of a clone, copied to ``dest``: the test runner's copy of the work tree holds exactly those (tracked
    and new files git does not ignore), plus the bytecode it compiled, which is left out."""
    shutil.copytree(REPO, str(dest), ignore=shutil.ignore_patterns('__pycache__', '.git'))
    return dest


def wheelhouse(requirements):
    """A directory of the wheels pip downloads for ``requirements`` (pip arguments), under $GPUOPS_CACHE, made once
    per set of requirements (a lock keeps two makers apart)."""
    cache = os.environ.get('GPUOPS_CACHE', os.path.expanduser('~/.cache/gpuops'))
    digest = hashlib.sha256(json.dumps(requirements).encode())
    with open(requirements[-1], 'rb') as handle:
        digest.update(handle.read())
    path = os.path.join(cache, 'wheels-' + digest.hexdigest()[:12])
    os.makedirs(cache, exist_ok=True)
    with open(path + '.lock', 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists(os.path.join(path, '.done')):
            run([sys.executable, '-m', 'pip', 'download', '-q', '--disable-pip-version-check', '--only-binary=:all:',
                 '-d', path] + requirements)
            open(os.path.join(path, '.done'), 'w').close()
    return path


def test_the_readme_first_commands_reach_a_mig_plan(testbed, core, custom, tmp_path):
    """The README's first block, line by line as written, in bash, from a copy of a clone, in a fresh virtualenv
    holding only ansible-core (which the README takes as given), with a HOME of its own whose ~/.kube/config is the
    virtual cluster's. kubernetes.core is put where `ansible-galaxy collection install .` finds it installed
    (~/.ansible/collections), because Galaxy cannot be reached from here; everything else is the README's."""
    ensure_cluster_policy(custom)
    block = readme_first_block()
    assert any('ansible-playbook' in line and '--check' in line for line in block), block
    clone = plain_clone(tmp_path / 'clone')
    home = tmp_path / 'home'
    (home / '.kube').mkdir(parents=True)
    with open(testbed.kubeconfig) as handle:
        (home / '.kube' / 'config').write_text(handle.read())
    venv = str(tmp_path / 'venv')
    run([sys.executable, '-m', 'venv', venv])
    env = dict((k, v) for k, v in os.environ.items()
               if not k.startswith(('ANSIBLE_', 'K8S_AUTH_', 'GPUOPS_')) and k not in ('PYTHONPATH', 'KUBECONFIG'))
    # pip installs from a local copy of what the package index serves for these requirements (kept between runs)
    env.update(HOME=str(home), PATH=os.path.join(venv, 'bin') + os.pathsep + env.get('PATH', ''), ANSIBLE_NOCOLOR='1',
               PIP_NO_INDEX='1', PIP_FIND_LINKS=wheelhouse([pinned('ansible-core'), '-r',
                                                            os.path.join(REPO, 'requirements.txt')]),
               PIP_DISABLE_PIP_VERSION_CHECK='1')
    run([os.path.join(venv, 'bin', 'python'), '-m', 'pip', 'install', '-q', pinned('ansible-core')], env=env)
    run([os.path.join(venv, 'bin', 'ansible-galaxy'), 'collection', 'install', '--offline',
         kubernetes_core_tarball(tmp_path)], env=env)
    (clone / 'vars.yml').write_text(yaml.safe_dump({
        'mig_operator_namespace': 'gpu-operator', 'mig_strategy': 'mixed',
        'mig_assignments': [{'nodes': ['a100-1'], 'config': 'all-1g.5gb'}]}))
    before = node_facts(core)
    out = run(['bash', '-euo', 'pipefail', '-c', '\n'.join(block)], env=env, cwd=str(clone))
    assert 'gpuops.gpu:' in out and 'was installed successfully' in out, out[-3000:]
    # the plan names the node and the layout, and the run wrote nothing
    assert re.search(r'a100-1.*all-1g\.5gb', out), out[-4000:]
    assert re.search(r'localhost\s*:\s*ok=\d+\s+changed=[1-9]\d*\s+unreachable=0\s+failed=0', out), out[-3000:]
    assert facts_diff(before, node_facts(core)) == []
    # the collection ran from the fresh install in the README's HOME, not from the test environment
    listed = run([os.path.join(venv, 'bin', 'ansible-galaxy'), 'collection', 'list', '--format', 'json'], env=env)
    paths = json.loads(listed)
    assert 'gpuops.gpu' in paths[str(home / '.ansible' / 'collections' / 'ansible_collections')], paths
