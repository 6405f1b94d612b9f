"""The version matrix of `make test`: virtualenvs with the oldest versions the collection claims (oldest.txt, this
Python) and the newest it supports (newest.txt: the execution environment's Python 3.12 and its ee-constraints.txt),
cached under $GPUOPS_CACHE by the hash of their pins, constraints and interpreter, and built once (a lock keeps two
builders apart). The newest venv fails to build when it installs a package ee-constraints.txt does not pin, so
the EE's constraints stay complete. The runner's compat stage runs the unit tests in them;
tests/integration/test_compat.py runs a short play with their ansible-playbook. The core-2.17, core-2.18 and
core-2.20 venvs (ansible-core alone, core-<version>.txt) complete the AWX loader's run on every supported
ansible-core (tests/integration/test_awx_loader.py).

Collections: a matrix venv has ansible-core only. ``collections_root(dest)`` lays out an ansible_collections tree
with this checkout as gpuops.gpu and kubernetes.core, ansible.posix and awx.awx from the main virtualenv (the versions
the collection is tested with), for PYTHONPATH and ANSIBLE_COLLECTIONS_PATH.

    python tests/compat/venvs.py ensure oldest     # prints the venv's bin directory
"""

import fcntl
import hashlib
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CACHE = os.environ.get('GPUOPS_CACHE', os.path.expanduser('~/.cache/gpuops'))
NAMES = ('oldest', 'newest')
# ansible-core alone, for the AWX loader on every supported ansible-core (with oldest, newest and the main venv)
CORE_ONLY = ('core-2.17', 'core-2.18', 'core-2.20')
# the venvs built with the execution environment's Python 3.12 (ansible-core 2.20 and later need it)
ON_312 = ('newest', 'core-2.20')
SHARED = (('kubernetes', 'core'), ('ansible', 'posix'), ('awx', 'awx'))
CONSTRAINTS = os.path.join(REPO, 'ee-constraints.txt')
# the packages only the tests install (pytest and what it needs), not pinned for the EE
TEST_ONLY = ('pytest', 'pytest-timeout', 'pluggy', 'iniconfig', 'pygments')


def newest_python():
    """The Python 3.12 the newest venv is built with, as the execution environment has it: $GPUOPS_NEWEST_PYTHON,
    else pyenv's, else python3.12 on PATH (the first that runs)."""
    import glob
    import shutil
    candidates = [os.environ.get('GPUOPS_NEWEST_PYTHON')] + sorted(glob.glob(os.path.expanduser(
        '~/.pyenv/versions/3.12*/bin/python3.12')), reverse=True) + [shutil.which('python3.12')]
    for python in filter(None, candidates):
        if subprocess.run([python, '-c', 'import sys; assert sys.version_info[:2] == (3, 12)'],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False).returncode == 0:
            return python
    raise SystemExit('the newest version matrix needs Python 3.12 (the execution environment\'s): install it '
                     '(e.g. `pyenv install 3.12`) or set GPUOPS_NEWEST_PYTHON to its interpreter')


def unpinned(bin_dir):
    """The packages of a venv that ee-constraints.txt does not pin, nor TEST_ONLY names."""
    with open(CONSTRAINTS) as f:
        pinned = set(line.split('==')[0].strip().lower().replace('_', '-') for line in f if '==' in line)
    out = subprocess.run([os.path.join(bin_dir, 'python'), '-m', 'pip', 'freeze', '--all', '--disable-pip-version-check'],
                         stdout=subprocess.PIPE, text=True, check=True).stdout.split()
    names = set(line.split('==')[0].lower().replace('_', '-') for line in out)
    return sorted(names - pinned - set(TEST_ONLY) - {'pip', 'setuptools', 'wheel'})


def ensure(name, python=None):
    """The bin directory of the matrix venv ``name`` (built from tests/compat/<name>.txt when missing)."""
    python = python or (newest_python() if name in ON_312 else sys.executable)
    pins = os.path.join(HERE, name + '.txt')
    digest = hashlib.sha256(python.encode())
    for path in (pins, CONSTRAINTS, os.path.join(REPO, 'requirements.txt')):
        with open(path, 'rb') as f:
            digest.update(f.read())
    key = digest.hexdigest()[:12]
    venv = os.path.join(CACHE, 'compat-%s-%s' % (name, key))
    os.makedirs(CACHE, exist_ok=True)
    with open(venv + '.lock', 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists(os.path.join(venv, '.done')):
            subprocess.run([python, '-m', 'venv', '--clear', venv], check=True)
            subprocess.run([os.path.join(venv, 'bin', 'pip'), 'install', '-q', '--disable-pip-version-check',
                            '-r', pins], check=True)
            extra = unpinned(os.path.join(venv, 'bin')) if name == 'newest' else []
            if extra:
                raise SystemExit('ee-constraints.txt does not pin %s, which the newest venv installed: pin them'
                                 % ', '.join(extra))
            open(os.path.join(venv, '.done'), 'w').close()
    return os.path.join(venv, 'bin')


def collections_root(dest, collection=REPO):
    """``dest`` laid out as an ansible_collections root: gpuops.gpu -> ``collection``, the shared collections ->
    the main virtualenv's copies. Returns ``dest``."""
    site = next(p for p in sys.path if p.endswith('site-packages') and os.path.isdir(os.path.join(p, 'ansible_collections')))
    links = [(('gpuops', 'gpu'), collection)] + [(parts, os.path.join(site, 'ansible_collections', *parts)) for parts in SHARED]
    for parts, target in links:
        link = os.path.join(dest, 'ansible_collections', *parts)
        os.makedirs(os.path.dirname(link), exist_ok=True)
        if not os.path.islink(link):
            os.symlink(os.path.abspath(target), link)
    return dest


def versions(bin_dir):
    """'ansible-core X, kubernetes Y' of a matrix venv."""
    out = subprocess.run([os.path.join(bin_dir, 'python'), '-c', 'import ansible.release, kubernetes; print('
                          '"ansible-core %s, kubernetes %s" % (ansible.release.__version__, kubernetes.__version__))'],
                         stdout=subprocess.PIPE, text=True, check=True)
    return out.stdout.strip()


if __name__ == '__main__':
    if len(sys.argv) != 3 or sys.argv[1] != 'ensure' or sys.argv[2] not in NAMES + CORE_ONLY:
        sys.exit('usage: venvs.py ensure %s' % '|'.join(NAMES + CORE_ONLY))
    print(ensure(sys.argv[2]))
