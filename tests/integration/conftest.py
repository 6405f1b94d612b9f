"""Fixtures for integration tests on the virtual GPU cluster (tests/testbed).

One cluster per test MODULE (isolation: ClusterPolicy, MIG and sharing state are cluster-wide),
`testbed up` before its first test, `testbed down` after its last (a warm up takes ~10 s).
Environment:
  GPUOPS_TESTBED_NAME     cluster name prefix (default gpuops-it; the module name is appended
                          unless GPUOPS_TESTBED_REUSE=1, which uses the name as given)
  GPUOPS_TESTBED_CONFIG   config file (default tests/testbed/configs/default.yaml; a test module's
                          TESTBED_CONFIG wins: test_chaos.py runs on configs/chaos.yaml)
  GPUOPS_TESTBED_KEEP=1   leave the cluster running after the session (for debugging)
  GPUOPS_TESTBED_REUSE=1  use an already-running cluster of that name as is (no up/down)
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
    def frozen(self, component: str):
        """``component`` SIGSTOPped inside the block, thawed on the way out whatever happens."""
        self.chaos("freeze", component)
        try:
            yield
        finally:
            self.chaos("thaw", component)

    @contextlib.contextmanager
    def killed(self, component: str):
        """``component`` SIGKILLed inside the block, started again (same argv, data) on the way out."""
        self.chaos("kill", component)
        try:
            yield
        finally:
            self.chaos("start", component)

    @contextlib.contextmanager
    def not_ready(self, node: str):
        """``node`` reports Ready=False inside the block, Ready again on the way out."""
        self.chaos("not-ready", node)
        try:
            yield
        finally:
            self.chaos("ready", node)


@contextlib.contextmanager
def virtual_gpu_cluster(name: str, config: str | None = None):
    """A virtual GPU cluster named ``name`` (GPUOPS_TESTBED_CONFIG / _KEEP / _REUSE as above), brought
    up on entry and down on exit: the ``testbed`` fixture, and a second cluster where a test needs two.
    ``config``: this config file instead (a module's ``TESTBED_CONFIG``)."""
    config = os.path.abspath(config or os.environ.get("GPUOPS_TESTBED_CONFIG", DEFAULT_CONFIG))
    reuse = os.environ.get("GPUOPS_TESTBED_REUSE") == "1"
    keep = os.environ.get("GPUOPS_TESTBED_KEEP") == "1" or reuse
    if reuse:
        r = subprocess.run([sys.executable, TESTBED, "--name", name, "kubeconfig"],
                           capture_output=True, text=True, check=False)
    else:
        t = time.monotonic()
        r = subprocess.run([sys.executable, TESTBED, "--name", name, "up", "--config", config],
                           stdout=subprocess.PIPE, stderr=None, text=True, check=False)
        sys.stderr.write(f"testbed up took {time.monotonic() - t:.1f}s\n")
    if r.returncode != 0:
        if not keep:
            subprocess.run([sys.executable, TESTBED, "--name", name, "down"], check=False)
        pytest.fail(f"testbed up failed (exit {r.returncode}); see the output above", pytrace=False)
    kubeconfig = r.stdout.strip().splitlines()[-1]
    with open(config) as f:
        cfg = yaml.safe_load(f)
    try:
        yield Testbed(name=name, kubeconfig=kubeconfig, config_path=config, config=cfg,
                      state_dir=os.path.dirname(kubeconfig))
    finally:
        if not keep:
            subprocess.run([sys.executable, TESTBED, "--name", name, "down"], check=False)


@pytest.fixture(scope="module")
def testbed(request) -> Testbed:
    name = os.environ.get("GPUOPS_TESTBED_NAME", "gpuops-it")
    if os.environ.get("GPUOPS_TESTBED_REUSE") != "1":
        stem = re.sub(r"[^a-z0-9]+", "-", request.module.__name__.rsplit(".", 1)[-1].lower())
        name = f"{name}-{stem.replace('test-', '')[:24].strip('-')}"
    # a module may name its own (smaller) cluster: TESTBED_CONFIG = path of a tests/testbed/configs file
    with virtual_gpu_cluster(name, getattr(request.module, "TESTBED_CONFIG", None)) as tb:
        yield tb


@pytest.fixture(scope="module")
def api_client(testbed):
    import kubernetes  # a missing client is an error, never a skip

    return kubernetes.config.new_client_from_config(config_file=testbed.kubeconfig)


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
