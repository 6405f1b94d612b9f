"""Fixtures for integration tests on the virtual GPU cluster (tests/testbed).

One cluster per test MODULE (isolation: ClusterPolicy, MIG and sharing state are cluster-wide),
`testbed up` before its first test (started in the background while the module before it on the same
worker runs its last test), `testbed down` after its last (a warm up takes ~15 s, mostly waiting).
Environment:
  GPUOPS_TESTBED_NAME     cluster name prefix (default gpuops-it; the module name is appended
                          unless GPUOPS_TESTBED_REUSE=1, which uses the name as given)
  GPUOPS_TESTBED_CONFIG   config file (default tests/testbed/configs/default.yaml; a test module's
                          TESTBED_CONFIG wins: test_chaos.py runs on configs/chaos.yaml)
  GPUOPS_TESTBED_KEEP=1   leave the cluster running after the session (for debugging)
  GPUOPS_TESTBED_REUSE=1  use an already-running cluster of that name as is (no up/down)
  GPUOPS_TESTBED_AHEAD=0  never start the next module's cluster ahead
  GPUOPS_IT_FILE_TIMES    seconds per test module of the last run: the longest modules start first
  GPUOPS_IT_CPU_LOG       each cluster appends its CPU seconds (components, tests) here at teardown
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import subprocess
import sys
import time

import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TESTBED = os.path.join(REPO, "tests", "testbed", "testbed")
DEFAULT_CONFIG = os.path.join(REPO, "tests", "testbed", "configs", "default.yaml")


@dataclasses.dataclass
class Testbed:
    name: str
    kubeconfig: str
    config_path: str
    config: dict
    state_dir: str

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, TESTBED, "--name", self.name, *args],
                              capture_output=True, text=True, check=check)

    def status(self) -> dict:
        return json.loads(self.cli("status", "--json").stdout)

    def process_running(self, component: str) -> bool:
        return self.status()["processes"].get(component, "").startswith("running")

    def gpusim_expected(self) -> bool:
        """gpusim is part of this checkout and enabled: its agents must be running."""
        return bool(self.config.get("cluster", {}).get("gpusim", True)) and os.path.exists(
            os.path.join(REPO, "tests", "testbed", "gpusim", "__main__.py"))

    def state(self) -> dict:
        with open(os.path.join(self.state_dir, "state.json")) as f:
            return json.load(f)

    # -- faults (tests/testbed/vcluster/chaos.py; by the PIDs the testbed recorded, never by name)

    def chaos(self, action: str, target: str, *extra: str) -> None:
        """``testbed chaos ACTION TARGET``: freeze/thaw/kill/start a component, delete-node/
        add-node/not-ready/ready a node; fails the test when the fault could not be made."""
        r = self.cli("chaos", action, target, *extra, check=False)
        if r.returncode != 0:
            pytest.fail(f"testbed chaos {action} {target} failed: {r.stderr[-2000:]}", pytrace=False)

    @contextlib.contextmanager
    def _fault(self, action: str, undo: str, target: str):
        """``testbed chaos ACTION TARGET`` inside the block, ``testbed chaos UNDO TARGET`` on the way out
        whatever happens."""
        self.chaos(action, target)
        try:
            yield
        finally:
            self.chaos(undo, target)

    def frozen(self, component: str):
        """``component`` SIGSTOPped inside the block, thawed on the way out."""
        return self._fault("freeze", "thaw", component)

    def killed(self, component: str):
        """``component`` SIGKILLed inside the block, started again (same argv, data) on the way out."""
        return self._fault("kill", "start", component)

    def not_ready(self, node: str):
        """``node`` reports Ready=False inside the block, Ready again on the way out."""
        return self._fault("not-ready", "ready", node)


def _config_path(config: str | None) -> str:
    return os.path.abspath(config or os.environ.get("GPUOPS_TESTBED_CONFIG", DEFAULT_CONFIG))


def _start_up(name: str, config: str) -> subprocess.Popen:
    """``testbed up`` of cluster ``name`` in the background (its kubeconfig path is the last line of stdout)."""
    return subprocess.Popen([sys.executable, TESTBED, "--name", name, "up", "--config", config],
                            stdout=subprocess.PIPE, stderr=None, text=True)


# clusters started ahead of their test module (pytest_runtest_protocol below): name -> (config, Popen)
_STARTED_AHEAD: dict = {}


@contextlib.contextmanager
def virtual_gpu_cluster(name: str, config: str | None = None):
    """A virtual GPU cluster named ``name`` (GPUOPS_TESTBED_CONFIG / _KEEP / _REUSE as above), brought
    up on entry (or taken over from the start ahead of its module) and down on exit: the ``testbed``
    fixture, and a second cluster where a test needs two. ``config``: this config file instead (a
    module's ``TESTBED_CONFIG``)."""
    config = _config_path(config)
    reuse = os.environ.get("GPUOPS_TESTBED_REUSE") == "1"
    keep = os.environ.get("GPUOPS_TESTBED_KEEP") == "1" or reuse
    waited = 0.0
    if reuse:
        r = subprocess.run([sys.executable, TESTBED, "--name", name, "kubeconfig"],
                           capture_output=True, text=True, check=False)
    else:
        t = time.monotonic()
        ahead_config, proc = _STARTED_AHEAD.pop(name, (config, None))
        if ahead_config != config:  # started ahead with another config: `up` again reconciles it
            proc.communicate()
            proc = None
        proc = proc or _start_up(name, config)
        out = proc.communicate()[0]
        r = subprocess.CompletedProcess(proc.args, proc.returncode, out)
        waited = time.monotonic() - t
        sys.stderr.write(f"testbed up: waited {waited:.1f}s for it\n")
    if r.returncode != 0:
        if not keep:
            subprocess.run([sys.executable, TESTBED, "--name", name, "down"], check=False)
        pytest.fail(f"testbed up failed (exit {r.returncode}); see the output above", pytrace=False)
    kubeconfig = r.stdout.strip().splitlines()[-1]
    with open(config) as f:
        cfg = yaml.safe_load(f)
    started = _own_cpu()
    tb = Testbed(name=name, kubeconfig=kubeconfig, config_path=config, config=cfg,
                 state_dir=os.path.dirname(kubeconfig))
    try:
        yield tb
    finally:
        _report_cpu(tb, [now - then for now, then in zip(_own_cpu(), started)], waited)
        if not keep:
            subprocess.run([sys.executable, TESTBED, "--name", name, "down"], check=False)


def _own_cpu() -> tuple:
    """CPU seconds of the test process itself (API clients, polling) and of its finished children
    (ansible-playbook runs, testbed CLI calls)."""
    import resource

    return tuple(u.ru_utime + u.ru_stime for u in (resource.getrusage(resource.RUSAGE_SELF),
                                                   resource.getrusage(resource.RUSAGE_CHILDREN)))


def _process_cpu(pid: int) -> float:
    """CPU seconds of a running process and its waited-for children (/proc/PID/stat), 0 when gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(v) for v in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def _report_cpu(tb: Testbed, own_cpu: list, waited: float) -> None:
    """Where a cluster's CPU went: each component's CPU seconds, and those of the test process and its own
    runs (ansible-playbook, helpers) while it was up; with the seconds the tests waited for its `up`. One
    line on stderr, and appended to $GPUOPS_IT_CPU_LOG when set (tests/runner.py prints the costliest)."""
    try:
        procs = tb.state().get("procs", {})
    except (OSError, ValueError):
        procs = {}
    cpu = {comp: round(_process_cpu(rec["pid"]), 1) for comp, rec in sorted(procs.items())}
    cpu["pytest"], cpu["test-runs"] = (round(v, 1) for v in own_cpu)
    line = json.dumps({"cluster": tb.name, "cpu_s": cpu, "total_s": round(sum(cpu.values()), 1),
                       "up_wait_s": round(waited, 1)})
    sys.stderr.write(f"cluster cpu: {line}\n")
    if os.environ.get("GPUOPS_IT_CPU_LOG"):
        with open(os.environ["GPUOPS_IT_CPU_LOG"], "a") as f:
            f.write(line + "\n")


def _cluster_name(module) -> str:
    name = os.environ.get("GPUOPS_TESTBED_NAME", "gpuops-it")
    if os.environ.get("GPUOPS_TESTBED_REUSE") == "1":
        return name
    stem = re.sub(r"[^a-z0-9]+", "-", module.__name__.rsplit(".", 1)[-1].lower())
    return f"{name}-{stem.replace('test-', '')[:24].strip('-')}"


@pytest.fixture(scope="module")
def testbed(request) -> Testbed:
    # a module may name its own (smaller) cluster: TESTBED_CONFIG = path of a tests/testbed/configs file
    with virtual_gpu_cluster(_cluster_name(request.module), getattr(request.module, "TESTBED_CONFIG", None)) as tb:
        yield tb


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    """While the last test of a module runs, start the cluster of the next module in the background: most of
    a `testbed up` is waiting (CRDs established, nodes Ready), which the running test fills with work. Only for
    a next module that takes the conftest ``testbed`` fixture as it is (a module that redefines it, like
    test_install.py, chooses its config at run time). GPUOPS_TESTBED_AHEAD=0 turns it off."""
    if (nextitem is None or nextitem.module is item.module or "testbed" not in nextitem.fixturenames
            or "testbed" in vars(nextitem.module) or os.environ.get("GPUOPS_TESTBED_AHEAD") == "0"
            or os.environ.get("GPUOPS_TESTBED_REUSE") == "1"):
        return None
    name = _cluster_name(nextitem.module)
    if name not in _STARTED_AHEAD:
        config = _config_path(getattr(nextitem.module, "TESTBED_CONFIG", None))
        _STARTED_AHEAD[name] = (config, _start_up(name, config))
    return None


def pytest_collection_modifyitems(items):
    """The longest test modules first (their seconds from the last run in $GPUOPS_IT_FILE_TIMES, written by
    tests/runner.py; the modules not in it after them, in file order): with the files spread over a few workers,
    a long file started last would run alone at the end. Tests keep their order inside a module."""
    path = os.environ.get("GPUOPS_IT_FILE_TIMES")
    if not path or not os.path.exists(path):
        return
    with open(path) as f:
        seconds = json.load(f)
    first = {}
    for index, item in enumerate(items):
        first.setdefault(item.module.__name__, index)
    items.sort(key=lambda item: (-seconds.get(item.module.__name__.rsplit(".", 1)[-1], 0),
                                 first[item.module.__name__]))


def pytest_sessionfinish(session):
    """A cluster started ahead for a module that then did not run (an interrupted session) goes down."""
    for name, (_config, proc) in list(_STARTED_AHEAD.items()):
        proc.communicate()
        subprocess.run([sys.executable, TESTBED, "--name", name, "down"], check=False)
    _STARTED_AHEAD.clear()


@pytest.fixture(scope="module")
def api_client(testbed):
    import kubernetes  # a missing client is an error, never a skip

    return kubernetes.config.new_client_from_config(config_file=testbed.kubeconfig)


@pytest.fixture(scope="module")
def operator_ns(testbed) -> str:
    """The namespace of the GPU operator on the module's cluster (its config's cluster.operator_namespace)."""
    return testbed.config["cluster"].get("operator_namespace", "gpu-operator")


@pytest.fixture(scope="module")
def cluster_policy(custom):
    """What an install leaves behind: NVIDIA's OLM example ClusterPolicy, reconciled to ready (a module that
    needs it for every test says ``pytestmark = pytest.mark.usefixtures("cluster_policy")``)."""
    from policy_helpers import ensure_cluster_policy

    ensure_cluster_policy(custom)


@pytest.fixture(scope="module")
def token_file(request, tmp_path_factory) -> str:
    """A file holding the module's ``TOKEN`` as written: the client_configuration_token file of a literal
    bearer token."""
    path = tmp_path_factory.mktemp("token") / "client_configuration_token.tok"
    path.write_bytes(request.module.TOKEN.encode())
    return str(path)


def _api_fixture(name, api_class):
    """A module-scoped fixture ``name``: kubernetes.client.<api_class> over the testbed's api_client."""
    def api(api_client):
        import kubernetes

        return getattr(kubernetes.client, api_class)(api_client)
    api.__doc__ = f"kubernetes.client.{api_class} on the module's virtual GPU cluster."
    return pytest.fixture(scope="module", name=name)(api)


# the one set of API fixtures of the integration tests
core = _api_fixture("core", "CoreV1Api")
custom = _api_fixture("custom", "CustomObjectsApi")
apps = _api_fixture("apps", "AppsV1Api")
batch = _api_fixture("batch", "BatchV1Api")
policy = _api_fixture("policy", "PolicyV1Api")
rbac = _api_fixture("rbac", "RbacAuthorizationV1Api")
extensions = _api_fixture("extensions", "ApiextensionsV1Api")
admission = _api_fixture("admission", "AdmissionregistrationV1Api")


@pytest.fixture(scope="session")
def helm():
    """The helm binary (built once from its Go module by tests/testbed/hack/install-helm.sh and cached;
    seconds when cached)."""
    proc = subprocess.run([os.path.join(REPO, "tests", "testbed", "hack", "install-helm.sh")],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=False)
    if proc.returncode != 0:
        pytest.fail("tests/testbed/hack/install-helm.sh failed:\n" + proc.stderr[-3000:])
    return proc.stdout.strip().splitlines()[-1]


def read_lease(coordination, namespace, name="gpuops-gpu-rollout"):
    """The Lease ``name`` (by default the rollout lock), or None when there is none."""
    from kubernetes import client
    try:
        return coordination.read_namespaced_lease(name, namespace)
    except client.exceptions.ApiException as exc:
        if exc.status == 404:
            return None
        raise


def create_namespace(core, name, labels=None):
    """Create a namespace and wait for its default ServiceAccount (pods are only admitted then)."""
    core.create_namespace({"apiVersion": "v1", "kind": "Namespace",
                           "metadata": {"name": name, "labels": labels or {}}})
    wait_until(f"the default ServiceAccount in {name}",
               lambda: any(sa.metadata.name == "default" for sa in core.list_namespaced_service_account(name).items),
               60, 0.2)
    return name


def gpu_pod(name, node, limits=None, labels=None):
    """A pod bound to ``node`` (no scheduler: KWOK runs it whatever the node advertises) that asks for
    ``limits`` (default one nvidia.com/gpu)."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels or {"app": name}},
            "spec": {"nodeName": node, "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "cuda", "image": "nvcr.io/nvidia/cuda:12.4.0-base-ubi9",
                                     "resources": {"limits": limits or {"nvidia.com/gpu": "1"}}}]}}


def gpu_deployment(apps, policy, namespace, name, replicas, min_available, avoid_nodes=()):
    """A Deployment of ``replicas`` one-GPU pods on the training pool (never on ``avoid_nodes``) under a
    PodDisruptionBudget minAvailable ``min_available``, both named ``name``; the pods are labelled app=name."""
    pod = gpu_pod(name, None)
    spec = dict(pod["spec"], nodeSelector={"gpuops.dev/pool": "training"})
    del spec["nodeName"]
    if avoid_nodes:
        avoid = {"key": "kubernetes.io/hostname", "operator": "NotIn", "values": list(avoid_nodes)}
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [avoid]}]}}}
    apps.create_namespaced_deployment(namespace, {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}}, "spec": spec}}})
    policy.create_namespaced_pod_disruption_budget(namespace, {
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name},
        "spec": {"minAvailable": min_available, "selector": {"matchLabels": {"app": name}}}})


@pytest.fixture
def namespace(core, request):
    """A fresh namespace per test, deleted afterwards."""
    base = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower())[:40].strip("-")
    name = create_namespace(core, f"t-{base}-{int(time.time() * 1000) % 1000000}")
    yield name
    core.delete_namespace(name)


def wait_until(what, fn, timeout: float = 60.0, interval: float = 0.5):
    """The one wait of the integration tests: poll fn() every `interval` seconds until it returns a
    truthy value, and return that value; on timeout fail the test with `what` (a text, or a function
    returning one, called then: it can report what fn saw)."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout:.0f}s waiting for {what() if callable(what) else what} "
                f"(last value: {last!r})")
