"""Paths, names and the progress log shared by the testbed CLI modules."""
from __future__ import annotations

import os
import sys
import time

HERE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))  # tests/testbed
REPO = os.path.dirname(os.path.dirname(HERE))
CACHE = os.environ.get("GPUOPS_CACHE") or os.path.expanduser("~/.cache/gpuops")
RUN_ROOT = os.path.join(CACHE, "testbed", "run")
DEFAULT_CONFIG = os.path.join(HERE, "configs", "default.yaml")
MANAGED_LABEL = "gpuops.dev/testbed"
GROUP_LABEL = "gpuops.dev/node-group"
MANAGED_SELECTOR = f"{MANAGED_LABEL}=true"
FIELD_MANAGER = "gpuops-testbed"
COMPONENTS = ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok",
              "gpu-operator", "gpusim"]

T0 = time.monotonic()
QUIET = False


def log(msg: str) -> None:
    if not QUIET:
        print(f"[testbed {time.monotonic() - T0:6.1f}s] {msg}", file=sys.stderr, flush=True)


def die(msg: str, code: int = 1) -> None:
    print(f"testbed: error: {msg}", file=sys.stderr, flush=True)
    sys.exit(code)


def read_versions() -> dict:
    """hack/versions.env as a dict (K8S_VERSION, KWOK_VERSION, ...)."""
    with open(os.path.join(HERE, "hack", "versions.env")) as f:
        pairs = [line.split("=", 1) for line in f if "=" in line and not line.startswith("#")]
    return {k.strip(): v.strip() for k, v in pairs}
