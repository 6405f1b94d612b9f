"""The version matrix of `make test`: virtualenvs with the oldest versions the collection claims (oldest.txt) and
the newest ones this Python runs (newest.txt), cached under $GPUOPS_CACHE by the hash of their pins and built once
(a lock keeps two builders apart). The runner's compat stage runs the unit tests in them;
tests/integration/test_compat.py runs a short play with their ansible-playbook.

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
SHARED = (('kubernetes', 'core'), ('ansible', 'posix'), ('awx', 'awx'))


def ensure(name, python=sys.executable):
    """The bin directory of the matrix venv ``name`` (built from tests/compat/<name>.txt when missing)."""
    pins = os.path.join(HERE, name + '.txt')
    with open(pins, 'rb') as f:
        key = hashlib.sha256(f.read()).hexdigest()[:12]
    venv = os.path.join(CACHE, 'compat-%s-%s' % (name, key))
    os.makedirs(CACHE, exist_ok=True)
    with open(venv + '.lock', 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists(os.path.join(venv, '.done')):
            subprocess.run([python, '-m', 'venv', '--clear', venv], check=True)
            subprocess.run([os.path.join(venv, 'bin', 'pip'), 'install', '-q', '--disable-pip-version-check',
                            '-r', pins], check=True)
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
    if len(sys.argv) != 3 or sys.argv[1] != 'ensure' or sys.argv[2] not in NAMES:
        sys.exit('usage: venvs.py ensure %s' % '|'.join(NAMES))
    print(ensure(sys.argv[2]))
