#!/usr/bin/env python3
"""`make test` / `make demo` driver: runs the stages, times them, prints one summary line per stage
and a final ``N passed, N failed`` line (tests counted across stages). Exit status 1 when any stage
fails. Run it with the project's virtualenv Python (the Makefile does).

Stages: lint, sanity, unit, package, integration, molecule (default: all). When integration runs, the
other stages run beside it in a second lane (lint, sanity, unit, package, then molecule once the virtual
cluster's binaries are built): the integration files wait on their clusters a tenth of the time, and the
second lane fills that. A stage of the second lane prints its output in one piece when it ends.
"""

import compileall
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.environ.get('GPUOPS_CACHE', os.path.expanduser('~/.cache/gpuops'))
VENV_BIN = os.path.dirname(sys.executable)
SITE = next(p for p in sys.path if p.endswith('site-packages'))
# one build folder per run (a second `make demo` while `make test` runs must not pull the copy
# from under it); removed at the end of the run
BUILD = os.path.join(CACHE, 'build', hashlib.sha256(REPO.encode()).hexdigest()[:12], 'run-%d' % os.getpid())
COLL_ROOT = os.path.join(BUILD, 'collections')
COLL = os.path.join(COLL_ROOT, 'ansible_collections', 'gpuops', 'gpu')
ALL_STAGES = ['lint', 'sanity', 'unit', 'compat', 'package', 'integration', 'molecule']


LANE = threading.local()  # .out: the file a stage of the second lane writes its output to
BINARIES_BUILT = threading.Event()  # set by the integration stage once the virtual cluster's binaries exist
PRINT_LOCK = threading.Lock()


def log(msg):
    out = getattr(LANE, 'out', None)
    if out is not None:
        out.write(msg + '\n')
        out.flush()
        return
    with PRINT_LOCK:
        print(msg, flush=True)


def env(**extra):
    e = dict(os.environ)
    e['PATH'] = VENV_BIN + os.pathsep + e.get('PATH', '')
    e['ANSIBLE_COLLECTIONS_PATH'] = COLL_ROOT
    e['PYTHONPATH'] = COLL_ROOT
    e['PYTHONUNBUFFERED'] = '1'
    e['ANSIBLE_NOCOLOR'] = '1'
    e['ANSIBLE_FORCE_COLOR'] = '0'
    e.update(extra)
    return e


def run(cmd, cwd=REPO, extra_env=None, capture=False):
    log('$ ' + ' '.join(cmd))
    out = getattr(LANE, 'out', None)
    if capture:
        p = subprocess.run(cmd, cwd=cwd, env=env(**(extra_env or {})), text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        (out or sys.stdout).write(p.stdout)
        (out or sys.stdout).flush()
        return p.returncode, p.stdout
    if out is not None:
        return subprocess.run(cmd, cwd=cwd, env=env(**(extra_env or {})), stdout=out,
                              stderr=subprocess.STDOUT).returncode, ''
    return subprocess.run(cmd, cwd=cwd, env=env(**(extra_env or {}))).returncode, ''


def project_files():
    out = subprocess.run(['git', 'ls-files', '-co', '--exclude-standard', '-z'], cwd=REPO,
                         check=True, stdout=subprocess.PIPE).stdout.decode()
    return sorted(f for f in out.split('\0') if f and os.path.isfile(os.path.join(REPO, f)))


# Development tooling that is not part of the collection (galaxy.yml build_ignore); ansible-test
# sanity checks the collection and its tests, not these.
SANITY_EXCLUDE = ('tests/testbed/', 'tests/runner.py', 'bench/', '.ci/')


def lay_out(root, exclude=()):
    """Lay the collection out at <root>/ansible_collections/gpuops/gpu (a copy of the tracked and
    untracked-not-ignored files) next to kubernetes.core from the virtualenv; return its path."""
    coll = os.path.join(root, 'ansible_collections', 'gpuops', 'gpu')
    if os.path.isdir(coll):
        shutil.rmtree(coll)
    for rel in project_files():
        if rel.startswith(exclude):
            continue
        dst = os.path.join(coll, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy2(os.path.join(REPO, rel), dst)
    kube = os.path.join(root, 'ansible_collections', 'kubernetes')
    if os.path.islink(kube):
        os.remove(kube)
    if not os.path.exists(kube):
        os.symlink(os.path.join(SITE, 'ansible_collections', 'kubernetes'), kube)
    return coll


def pytest_counts(junit):
    try:
        root = ET.parse(junit).getroot()
    except (OSError, ET.ParseError):
        return 0, 1, 0
    suites = [root] if root.tag == 'testsuite' else root.findall('testsuite')
    total = sum(int(s.get('tests', 0)) for s in suites)
    bad = sum(int(s.get('failures', 0)) + int(s.get('errors', 0)) for s in suites)
    skipped = sum(int(s.get('skipped', 0)) for s in suites)
    return total - bad - skipped, bad, skipped  # a skipped test is never counted as passed


# seconds per integration test file of the last runs: the next run starts the longest files first
IT_FILE_TIMES = os.path.join(CACHE, 'integration-file-times.json')
# before the first run on a machine: the slowest files of a full run on 2 cores (the others start after them)
IT_FILE_TIMES_SEED = {'test_isolation': 456, 'test_mig_rollout': 332, 'test_bad_input': 316, 'test_hami': 300,
                      'test_multi_cluster': 228, 'test_mig_role': 227, 'test_install': 218, 'test_reset': 209,
                      'test_install_helm': 192, 'test_sharing': 182, 'test_chaos': 163, 'test_monitoring': 163,
                      'test_placement': 147, 'test_upgrade': 146, 'test_awx_progress': 135}
IT_CPU_LOG = os.path.join(BUILD, 'integration-cpu.jsonl')


def file_times(junit, record, top=15):
    """Log the test files that took longest (their tests' times summed, from the JUnit report): where the
    time of a stage goes. With xdist the files run side by side, so the sum exceeds the stage's wall time.
    With ``record`` (a run of the whole directory, not one narrowed by GPUOPS_TESTS), the times are kept in
    IT_FILE_TIMES (merged over runs) to order the next run."""
    try:
        root = ET.parse(junit).getroot()
    except (OSError, ET.ParseError):
        return
    per_file = {}
    for case in root.iter('testcase'):
        name = (case.get('classname') or '?').split('.')[-1]
        per_file[name] = per_file.get(name, 0.0) + float(case.get('time') or 0)
    slowest = sorted(per_file.items(), key=lambda kv: -kv[1])[:top]
    if slowest:
        log('slowest test files (seconds, tests summed): ' + ', '.join('%s %.0f' % kv for kv in slowest))
    if not record:
        return
    try:
        with open(IT_FILE_TIMES) as handle:
            known = json.load(handle)
    except (OSError, ValueError):
        known = {}
    known.update((name, round(secs, 1)) for name, secs in per_file.items())
    with open(IT_FILE_TIMES, 'w') as handle:
        json.dump(known, handle, indent=1, sort_keys=True)


def cluster_cpu(top=15):
    """Log the virtual clusters that cost the most CPU (tests/integration/conftest.py appends one line per
    cluster to IT_CPU_LOG: each component's CPU seconds and the test's own, ansible-playbook runs included)."""
    try:
        with open(IT_CPU_LOG) as handle:
            rows = [json.loads(line) for line in handle if line.strip()]
    except (OSError, ValueError):
        return
    rows.sort(key=lambda row: -row['total_s'])
    runs = sum(row['cpu_s'].get('pytest', 0) + row['cpu_s'].get('test-runs', 0) for row in rows)
    log('cluster cpu (seconds: total, of it the tests and their ansible-playbook runs): %s; all %d clusters: '
        '%.0f, of it the tests %.0f; tests waited %.0fs for `testbed up`' % (', '.join('%s %.0f/%.0f' % (
            row['cluster'], row['total_s'], row['cpu_s'].get('pytest', 0) + row['cpu_s'].get('test-runs', 0))
            for row in rows[:top]), len(rows), sum(row['total_s'] for row in rows), runs,
            sum(row.get('up_wait_s', 0) for row in rows)))


def cpu_times():
    """(busy, total) jiffies of all CPUs since boot, from /proc/stat (None where there is none)."""
    try:
        with open('/proc/stat') as handle:
            fields = [int(v) for v in handle.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields) - idle, sum(fields)


def cpu_busy_since(start):
    """'cpu busy N% of M cores' between ``start`` (cpu_times()) and now: how loaded the machine was."""
    end = cpu_times()
    if not start or not end or end[1] == start[1]:
        return 'cpu load unknown'
    return 'cpu busy %d%% of %d cores' % (round(100.0 * (end[0] - start[0]) / (end[1] - start[1])), os.cpu_count() or 1)


def run_pytest(path, extra=None):
    # development only: GPUOPS_TESTS="tests/integration/test_hami.py -k removal" runs just that
    narrowed = os.environ.get('GPUOPS_TESTS', '').split()
    path_args = narrowed if narrowed and narrowed[0].startswith(path) else [path]
    if not os.path.isdir(os.path.join(COLL, path)) or not any(
            f.startswith('test_') for _, _, fs in os.walk(os.path.join(COLL, path)) for f in fs):
        return None
    junit = os.path.join(BUILD, path.replace('/', '_') + '.xml')
    if path == 'tests/integration' and not os.path.exists(IT_FILE_TIMES):
        with open(IT_FILE_TIMES, 'w') as handle:
            json.dump(IT_FILE_TIMES_SEED, handle, indent=1, sort_keys=True)
    started = cpu_times()
    rc, _ = run([sys.executable, '-m', 'pytest'] + path_args + ['-ra', '-p', 'no:cacheprovider',
                 '--junitxml', junit] + (extra or []), cwd=COLL,
                extra_env={'GPUOPS_IT_FILE_TIMES': IT_FILE_TIMES, 'GPUOPS_IT_CPU_LOG': IT_CPU_LOG})
    passed, failed, skipped = pytest_counts(junit)
    if path == 'tests/integration':
        file_times(junit, record=path_args == [path])
        cluster_cpu()
        log('integration: %s' % cpu_busy_since(started))
    if rc != 0 and failed == 0:
        failed = 1
    return passed, failed, skipped


# ---------------------------------------------------------------------------------------- stages

def stage_lint():
    """ansible-lint (production profile), antsibull-docs' lint of every plugin's and role's docs, and
    antsibull-changelog's lint of changelogs/ (the fragments and changelog.yaml)."""
    results = [run(['ansible-lint', '--offline', '--profile', 'production', '--strict'], cwd=COLL)[0],
               run(['antsibull-docs', 'lint-collection-docs', '--plugin-docs', '.'], cwd=COLL)[0],
               run(['antsibull-changelog', 'lint'], cwd=COLL)[0]]
    return sum(1 for rc in results if rc == 0), sum(1 for rc in results if rc != 0)


def sanity_venv():
    """ansible-test's own pinned sanity requirements, in a virtualenv of their own (their pins
    differ from ansible-lint's), keyed by the ansible-core version; built once."""
    import ansible_test
    import ansible.release
    reqdir = os.path.join(os.path.dirname(ansible_test.__file__), '_data', 'requirements')
    reqs = sorted(os.path.join(reqdir, f) for f in os.listdir(reqdir)
                  if f.startswith('sanity.') and f.endswith('.txt'))
    venv = os.path.join(CACHE, 'sanity-venv-' + ansible.release.__version__)
    if not os.path.exists(os.path.join(venv, '.done')):
        subprocess.run([sys.executable, '-m', 'venv', '--clear', venv], check=True)
        pip = [os.path.join(venv, 'bin', 'pip'), 'install', '-q', '--disable-pip-version-check']
        subprocess.run(pip + ['ansible-core==' + ansible.release.__version__]
                       + [a for r in reqs for a in ('-r', r)], check=True)
        open(os.path.join(venv, '.done'), 'w').close()
    return os.path.join(venv, 'bin')


PIP_BOOTSTRAP = '''# Written by gpuops.gpu tests/runner.py: ansible-test normally downloads a pip bootstrap script
# from a host this machine cannot reach. This stand-in installs pip with ensurepip, gives the new
# virtualenv the pip settings of the machine (CA bundle, index) in its own pip.conf (ansible-test
# runs pip with a reduced environment), then installs the same pinned packages from the index.
import ensurepip, os, subprocess, sys
ensurepip.bootstrap(upgrade=True)
with open(os.path.join(sys.prefix, 'pip.conf'), 'w') as f:
    f.write(%r)
os.environ.pop('PIP_CONFIG_FILE', None)  # ensurepip points it at /dev/null
args = [a for a in sys.argv[1:] if a not in ('--no-setuptools', '--no-wheel')]
subprocess.check_call([sys.executable, '-m', 'pip', 'install'] + args)
'''


def pip_bootstrap():
    """Provide ansible-test's pip bootstrap script for the venvs some sanity tests create."""
    import ansible_test
    src = open(os.path.join(os.path.dirname(ansible_test.__file__), '_internal',
                            'python_requirements.py')).read()
    version = re.search(r"pip='([0-9.]+)'", src).group(1)
    path = os.path.expanduser('~/.ansible/test/cache/get_pip_%s.py' % version.replace('.', '_'))
    conf = '[global]\n'
    for opt, names in (('cert', ('PIP_CERT', 'SSL_CERT_FILE', 'REQUESTS_CA_BUNDLE')),
                       ('index-url', ('PIP_INDEX_URL',)), ('trusted-host', ('PIP_TRUSTED_HOST',))):
        value = next((os.environ[n] for n in names if os.environ.get(n)), None)
        if value:
            conf += '%s = %s\n' % (opt, value)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.write(PIP_BOOTSTRAP % conf)


def stage_sanity():
    pip_bootstrap()
    vbin = sanity_venv()
    coll = lay_out(os.path.join(BUILD, 'sanity'), exclude=SANITY_EXCLUDE)
    rc, out = run([os.path.join(vbin, 'ansible-test'), 'sanity', '--local', '--python',
                   '%d.%d' % sys.version_info[:2], '--color', 'no'], cwd=coll, capture=True,
                  extra_env={'PATH': vbin + os.pathsep + os.environ.get('PATH', '')})
    ran = len(re.findall(r'^Running sanity test ', out, re.M))
    m = re.search(r'The (\d+) sanity test\(s\) listed below \(out of (\d+)\) failed', out)
    failed = int(m.group(1)) if m else (1 if rc else 0)
    return max(ran - failed, 0), failed


def stage_unit():
    return run_pytest('tests/unit')


# The unit tests the version matrix runs. Left out: tests/unit/extensions (the development tool chain: ansible-lint,
# ansible-builder, molecule, pinned to the main virtualenv) and tests/unit/plugins/inventory (they build the plugin
# outside Ansible's plugin loader, which ansible-core 2.16 needs; tests/integration/test_compat.py runs the plugin
# through ansible-inventory instead).
COMPAT_UNIT = ['tests/unit/plugins', 'tests/unit/test_architecture.py', '--ignore', 'tests/unit/plugins/inventory']


def stage_compat():
    """The unit tests with the oldest versions the collection claims and with the newest (tests/compat/)."""
    sys.path.insert(0, os.path.join(REPO, 'tests', 'compat'))
    import venvs
    passed = failed = 0
    for name in venvs.NAMES:
        vbin = venvs.ensure(name)
        root = venvs.collections_root(os.path.join(BUILD, 'compat-collections'), COLL)
        log('compat %s: %s' % (name, venvs.versions(vbin)))
        junit = os.path.join(BUILD, 'compat-%s.xml' % name)
        rc, _ = run([os.path.join(vbin, 'python'), '-m', 'pytest'] + COMPAT_UNIT + [
            '-q', '-p', 'no:cacheprovider', '--junitxml', junit], cwd=os.path.join(root, 'ansible_collections', 'gpuops', 'gpu'),
            extra_env={'PATH': vbin + os.pathsep + os.environ.get('PATH', ''), 'PYTHONPATH': root,
                       'ANSIBLE_COLLECTIONS_PATH': root})
        p, f, _s = pytest_counts(junit)
        passed, failed = passed + p, failed + (f or (1 if rc else 0))
    return passed, failed


# The collection tarball: what only the virtual GPU cluster and the development tooling use stays out
# (galaxy.yml build_ignore), the user docs go in. Checked on the built tarball by stage_package and
# tests/unit/extensions/test_package_contents.py.
TARBALL_EXCLUDED = ('tests/testbed/', 'tests/integration/', 'tests/unit/', 'tests/runner.py',
                    'tests/requirements-dev.txt', 'bench/', 'extensions/', 'Makefile', 'docs/testbed.md',
                    'docs/performance.md', 'playbooks/vars/')
TARBALL_REQUIRED = ('README.md', 'LICENSE', 'requirements.txt', 'bindep.txt', 'execution-environment.yml',
                    'ee-constraints.txt', 'meta/runtime.yml', 'changelogs/changelog.yaml', 'docs/quickstart-openshift.md',
                    'docs/user-guide.md', 'docs/awx.md', 'docs/rbac.md', 'docs/install.md')


def tarball_contents_errors(names, root=REPO):
    """What is wrong with the file names of a collection tarball built from ``root``: a file only the
    virtual GPU cluster uses is in it, or a user doc (TARBALL_REQUIRED, every other docs/*.md, every
    playbook, CHANGELOG.rst once released) is missing. An empty list when it is right."""
    names = {n[2:] if n.startswith('./') else n for n in names}
    errors = ['%s is only for the virtual GPU cluster or development: add it to build_ignore in galaxy.yml' % n
              for n in sorted(names) if n.startswith(TARBALL_EXCLUDED) or n + '/' in TARBALL_EXCLUDED]
    wanted = set(TARBALL_REQUIRED)
    for sub, ext in (('docs', '.md'), ('playbooks', '.yml')):
        wanted.update('%s/%s' % (sub, f) for f in os.listdir(os.path.join(root, sub)) if f.endswith(ext))
    if os.path.exists(os.path.join(root, 'CHANGELOG.rst')):
        wanted.add('CHANGELOG.rst')
    errors += ['%s is missing from the tarball (users need it): check build_ignore in galaxy.yml' % n
               for n in sorted(wanted) if n not in names and not n.startswith(TARBALL_EXCLUDED)]
    return errors


def check_tarball(path):
    """stage_package's contents check: log every problem, True when there is none."""
    import tarfile
    with tarfile.open(path) as tar:
        errors = tarball_contents_errors(tar.getnames(), root=COLL)
    for error in errors:
        log(error)
    if not errors:
        log('tarball contents: no testbed-only files, every user doc and playbook present')
    return not errors


def stage_package():
    """`ansible-galaxy collection build` → the tarball has no testbed-only files and has the user docs →
    install into an empty collections path → every plugin that exists is listed by ansible-doc from the
    installed copy."""
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        rc, _ = run(['ansible-galaxy', 'collection', 'build', '--output-path', tmp, '--force'], cwd=COLL)
        tarballs = [f for f in os.listdir(tmp) if f.endswith('.tar.gz')]
        if rc != 0 or not tarballs:
            return 0, 1
        passed += 1
        if check_tarball(os.path.join(tmp, tarballs[0])):
            passed += 1
        else:
            failed += 1
        inst = os.path.join(tmp, 'installed')
        rc, _ = run(['ansible-galaxy', 'collection', 'install', '--no-deps', '--force', '-p', inst,
                     os.path.join(tmp, tarballs[0])], extra_env={'ANSIBLE_COLLECTIONS_PATH': inst})
        if rc != 0:
            return passed, 1
        passed += 1
        kube_site = os.path.join(SITE)  # kubernetes.core comes from the venv (no Galaxy server)
        paths = inst + os.pathsep + kube_site
        for ptype, subdir, pattern in (('module', 'modules', r'^(\w+)\.py$'),
                                       ('filter', 'filter', r'^(\w+)\.yml$')):
            src = os.path.join(REPO, 'plugins', subdir)
            expected = sorted(m.group(1) for f in (os.listdir(src) if os.path.isdir(src) else [])
                              for m in [re.match(pattern, f)] if m)
            rc, out = run(['ansible-doc', '-t', ptype, '-l', 'gpuops.gpu', '--json'], cwd=tmp,
                          capture=True, extra_env={'ANSIBLE_COLLECTIONS_PATH': paths,
                                                   'PYTHONPATH': ''})
            listed = sorted(n.split('.')[-1] for n in re.findall(r'"(gpuops\.gpu\.\w+)"', out))
            if rc == 0 and listed == expected:
                passed += 1
                log('ansible-doc -t %s lists %d plugin(s): %s' % (ptype, len(listed), ', '.join(listed) or '-'))
            else:
                failed += 1
                log('ansible-doc -t %s listed %s, expected %s' % (ptype, listed, expected))
    return passed, failed


def ensure_chromium():
    """tests/integration/test_fleet_report.py opens the HTML report in headless Chromium from the OS
    packages: install it when it is missing and this run can (root, apt-get). Otherwise that test
    fails and says how to install it."""
    if shutil.which('chromium') or shutil.which('chromium-browser'):
        return
    if os.geteuid() != 0 or not shutil.which('apt-get'):
        log('chromium is missing and this run cannot install it (needs root and apt-get): '
            'test_fleet_report.py will fail')
        return
    apt_env = dict(os.environ, DEBIAN_FRONTEND='noninteractive')
    for cmd in (['apt-get', 'update'], ['apt-get', 'install', '-y', '--no-install-recommends', 'chromium']):
        log('$ ' + ' '.join(cmd))
        if subprocess.run(cmd, env=apt_env).returncode != 0:
            log('installing chromium failed: test_fleet_report.py will fail')
            return


def stage_integration():
    ensure_chromium()
    # the virtual GPU cluster's binaries and helm (Helm install paths), both cached by version
    for script in (os.path.join(REPO, 'tests', 'testbed', 'build.sh'),
                   os.path.join(REPO, 'tests', 'testbed', 'hack', 'install-helm.sh')):
        if os.path.exists(script):
            rc, _ = run(['bash', script])
            if rc != 0:
                return 0, 1
    BINARIES_BUILT.set()
    # each test file brings up its own virtual cluster: files run side by side, GPUOPS_IT_WORKERS at a time
    workers = os.environ.get('GPUOPS_IT_WORKERS', '2')
    # the files in the order conftest.py gives them (the longest of the last run first), not xdist's
    return run_pytest('tests/integration', ['--timeout', '900', '--durations', '25'] + (
        ['-n', workers, '--dist', 'loadfile', '--no-loadscope-reorder'] if workers not in ('0', '1') else []))


def stage_molecule():
    if 'integration' in RUNNING:  # the scenarios' clusters need the binaries the integration stage builds
        BINARIES_BUILT.wait()
    scen = os.path.join(REPO, 'extensions', 'molecule')
    names = sorted(d for d in os.listdir(scen) if os.path.isfile(os.path.join(scen, d, 'molecule.yml'))) \
        if os.path.isdir(scen) else []
    if not names:
        return None
    passed = failed = 0
    for name in names:
        rc, _ = run(['molecule', 'test', '-s', name], cwd=os.path.join(COLL, 'extensions'))
        passed, failed = (passed + 1, failed) if rc == 0 else (passed, failed + 1)
    return passed, failed


def stage_demo():
    """Virtual GPU cluster → playbooks/site.yml (fleet table before and after) → cluster down
    (DEMO_KEEP=1 leaves it running and prints how to reach it)."""
    testbed = [sys.executable, os.path.join(REPO, 'tests', 'testbed', 'testbed'), '--name', 'demo']
    rc, out = run(testbed + ['up'], capture=True)
    if rc != 0:
        return 0, 1
    kubeconfig = out.strip().splitlines()[-1]
    try:
        rc, _ = run(['ansible-playbook', os.path.join(COLL, 'playbooks', 'site.yml'),
                     '-e', '@' + os.path.join(COLL, 'playbooks', 'vars', 'demo.yml')],
                    extra_env={'K8S_AUTH_KUBECONFIG': kubeconfig, 'ANSIBLE_STDOUT_CALLBACK': 'ansible.builtin.default',
                               'ANSIBLE_CALLBACK_RESULT_FORMAT': 'yaml', 'ANSIBLE_LOCALHOST_WARNING': 'false',
                               'ANSIBLE_INVENTORY_UNPARSED_WARNING': 'false'})
    finally:
        if os.environ.get('DEMO_KEEP') == '1':
            log('\nThe virtual GPU cluster is still running: export KUBECONFIG=%s\n'
                'Stop it with: %s down' % (kubeconfig, ' '.join(testbed)))
        else:
            run(testbed + ['down'])
    return (1, 0) if rc == 0 else (0, 1)


STAGES = {'lint': stage_lint, 'sanity': stage_sanity, 'unit': stage_unit, 'compat': stage_compat, 'package': stage_package,
          'integration': stage_integration, 'molecule': stage_molecule, 'demo': stage_demo}


def main(argv):
    wanted = argv or ALL_STAGES
    unknown = [s for s in wanted if s not in STAGES]
    if unknown:
        log('unknown stage(s): %s; choose from %s' % (', '.join(unknown), ', '.join(STAGES)))
        return 2
    os.makedirs(BUILD, exist_ok=True)
    try:
        return run_stages(wanted)
    finally:
        shutil.rmtree(BUILD, ignore_errors=True)


RUNNING = set()  # the stages of this run


def run_stage(name, results):
    """Run one stage, timed; its (name, result, seconds) goes to ``results``. A stage that crashes failed."""
    log('\n==================== stage: %s ====================' % name)
    start = time.monotonic()
    try:
        res = STAGES[name]()
    except Exception as exc:  # a broken stage is a failed stage, never a silent pass
        log('stage %s crashed: %r' % (name, exc))
        res = (0, 1)
    results[name] = (res, time.monotonic() - start)
    log('==================== stage %s ended after %.0fs ====================' % (name, time.monotonic() - start))


def second_lane(names, results):
    """The stages beside integration, one after the other; each one's output goes to a file and is printed
    in one piece when the stage ends."""
    for name in names:
        with tempfile.TemporaryFile('w+') as out:
            LANE.out = out
            try:
                run_stage(name, results)
            finally:
                LANE.out = None
            out.seek(0)
            with PRINT_LOCK:
                sys.stdout.write(out.read())
                sys.stdout.flush()


def run_stages(wanted):
    coll = lay_out(COLL_ROOT)
    # Byte-compiled once here: with PYTHONDONTWRITEBYTECODE set (as on CI) every Ansible worker, which loads the
    # collection's plugins afresh, would compile them from source again.
    compileall.compile_dir(os.path.join(coll, 'plugins'), quiet=1)
    RUNNING.update(wanted)
    results = {}
    started = time.monotonic()
    if 'integration' in wanted and len(wanted) > 1:
        lane = threading.Thread(target=second_lane, args=([n for n in wanted if n != 'integration'], results))
        lane.start()
        run_stage('integration', results)
        BINARIES_BUILT.set()  # a failed build: molecule starts anyway and reports it
        lane.join()
    else:
        for name in wanted:
            run_stage(name, results)
    log('\n==================== summary ====================')
    total_p = total_f = total_s = 0
    for name in wanted:
        res, secs = results[name]
        if res is None:
            log('%-12s no tests yet                               %7.1fs' % (name, secs))
            continue
        p, f, s = (tuple(res) + (0,))[:3]
        total_p, total_f, total_s = total_p + p, total_f + f, total_s + s
        log('%-12s %-6s %5d passed %4d failed %4d skipped %7.1fs'
            % (name, 'FAILED' if f else 'ok', p, f, s, secs))
    log('%d passed, %d failed, %d skipped in %.0fs%s' % (
        total_p, total_f, total_s, time.monotonic() - started,
        ' (integration and the other stages side by side)' if 'integration' in wanted and len(wanted) > 1 else ''))
    return 1 if total_f or not total_p else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
