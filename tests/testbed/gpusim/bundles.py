"""OLM bundle content read at run time from the Go module cache (never copied into the repo).

gpu-operator: <module>/bundle/manifests/gpu-operator-certified.clusterserviceversion.yaml of the
version the testbed pins (tests/testbed/hack/versions.env GPU_OPERATOR_VERSION).
nfd: <openshift/cluster-nfd-operator module>/manifests/stable/manifests/nfd.clusterserviceversion.yaml.
Falls back to small built-in CSVs (a full-enough ClusterPolicy / NodeFeatureDiscovery example).
"""

import copy
import functools
import glob
import json
import logging
import os
import re

import yaml

log = logging.getLogger("gpusim.bundles")

_HERE = os.path.dirname(os.path.abspath(__file__))
TESTBED_DIR = os.path.dirname(_HERE)


def escape_module_path(path):
    """Go module cache escaping: uppercase letters become '!' + lowercase."""
    return re.sub(r"[A-Z]", lambda m: "!" + m.group(0).lower(), path)


def gomodcache():
    if os.environ.get("GOMODCACHE"):
        return os.environ["GOMODCACHE"]
    gopath = os.environ.get("GOPATH") or os.path.expanduser("~/go")
    return os.path.join(gopath.split(os.pathsep)[0], "pkg", "mod")


def versions_env(path=None):
    path = path or os.path.join(TESTBED_DIR, "hack", "versions.env")
    out = {}
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line and not line.startswith("#") and "=" in line:
                    k, v = line.split("=", 1)
                    out[k.strip()] = v.strip()
    except OSError:
        pass
    return out


def testbed_assets():
    """{key: module dir} recorded by the testbed CLI in its state.json (when started by it)."""
    state = os.environ.get("GPUOPS_TESTBED_STATE")
    if not state:
        return {}
    try:
        with open(os.path.join(state, "state.json")) as f:
            return json.load(f).get("assets") or {}
    except (OSError, ValueError):
        return {}


def module_dir(key, cfg_olm=None):
    cfg_olm = cfg_olm or {}
    explicit = cfg_olm.get("%s_module_dir" % key.replace("-", "_"))
    if explicit:
        return explicit if os.path.isdir(explicit) else None
    assets = testbed_assets()
    if assets.get(key) and os.path.isdir(assets[key]):
        return assets[key]
    cache = gomodcache()
    if key == "gpu-operator":
        version = versions_env().get("GPU_OPERATOR_VERSION")
        base = os.path.join(cache, escape_module_path("github.com/NVIDIA/gpu-operator"))
        if version and os.path.isdir(base + "@" + version):
            return base + "@" + version
        found = sorted(glob.glob(base + "@*"))
        return found[-1] if found else None
    if key == "nfd-operator":
        found = sorted(glob.glob(os.path.join(cache, "github.com", "openshift",
                                              "cluster-nfd-operator@*")))
        return found[-1] if found else None
    return None


def _read_csv(path):
    try:
        with open(path) as f:
            for doc in yaml.safe_load_all(f):
                if doc and doc.get("kind") == "ClusterServiceVersion":
                    return doc
    except (OSError, yaml.YAMLError) as exc:
        log.warning("cannot read %s: %s", path, exc)
    return None


@functools.lru_cache(maxsize=8)
def _bundle_csv_cached(bundle, moddir):
    if bundle == "gpu-operator" and moddir:
        return _read_csv(os.path.join(moddir, "bundle", "manifests",
                                      "gpu-operator-certified.clusterserviceversion.yaml"))
    if bundle == "nfd" and moddir:
        return _read_csv(os.path.join(moddir, "manifests", "stable", "manifests",
                                      "nfd.clusterserviceversion.yaml"))
    return None


def bundle_csv(bundle, cfg_olm=None):
    """The upstream CSV document for a bundle key ("gpu-operator" | "nfd"), or a built-in one."""
    key = {"gpu-operator": "gpu-operator", "nfd": "nfd-operator"}.get(bundle)
    moddir = module_dir(key, cfg_olm) if key else None
    doc = _bundle_csv_cached(bundle, moddir)
    if doc is not None:
        return copy.deepcopy(doc), "module:%s" % moddir
    return builtin_csv(bundle), "builtin"


# A ClusterPolicy example with every section the operator reads, shaped like the alm-examples
# of the gpu-operator OLM bundle (NVIDIA/gpu-operator bundle/manifests/*.clusterserviceversion.yaml;
# images come from the operator env).
_CLUSTER_POLICY_EXAMPLE = {
    "apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy",
    "metadata": {"name": "gpu-cluster-policy"},
    "spec": {
        "operator": {"defaultRuntime": "crio", "use_ocp_driver_toolkit": True, "initContainer": {}},
        "sandboxWorkloads": {"enabled": False, "defaultWorkload": "container"},
        "driver": {"enabled": True, "useNvidiaDriverCRD": False, "kernelModuleType": "auto",
                   "licensingConfig": {"nlsEnabled": True, "secretName": ""},
                   "repoConfig": {"configMapName": ""}, "certConfig": {"name": ""},
                   "virtualTopology": {"config": ""}, "kernelModuleConfig": {"name": ""}},
        "dcgmExporter": {"enabled": True, "config": {"name": ""},
                         "serviceMonitor": {"enabled": True}},
        "dcgm": {"enabled": True},
        "daemonsets": {"updateStrategy": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "1"}},
        "devicePlugin": {"enabled": True, "config": {"name": "", "default": ""},
                         "mps": {"root": "/run/nvidia/mps"}},
        "gfd": {"enabled": True},
        "migManager": {"enabled": True},
        "nodeStatusExporter": {"enabled": True},
        "mig": {"strategy": "single"},
        "toolkit": {"enabled": True},
        "validator": {"plugin": {"env": []}},
        "vgpuManager": {"enabled": False},
        "vgpuDeviceManager": {"enabled": True},
        "sandboxDevicePlugin": {"enabled": True},
        "vfioManager": {"enabled": True},
        "gds": {"enabled": False},
        "gdrcopy": {"enabled": False},
    },
}

_NFD_EXAMPLE = {
    "apiVersion": "nfd.openshift.io/v1", "kind": "NodeFeatureDiscovery",
    "metadata": {"name": "nfd-instance", "namespace": "openshift-nfd"},
    "spec": {"operand": {"imagePullPolicy": "IfNotPresent", "servicePort": 12000},
             "workerConfig": {"configData": "core:\n  sleepInterval: 60s\nsources:\n  pci:\n"
                                            "    deviceClassWhitelist:\n      - \"0200\"\n"
                                            "      - \"03\"\n      - \"12\"\n"
                                            "    deviceLabelFields:\n      - \"vendor\"\n"}},
}

_INSTALL_MODES = [{"type": "OwnNamespace", "supported": True},
                  {"type": "SingleNamespace", "supported": True},
                  {"type": "MultiNamespace", "supported": False},
                  {"type": "AllNamespaces", "supported": False}]


def builtin_csv(bundle):
    if bundle == "gpu-operator":
        examples = [_CLUSTER_POLICY_EXAMPLE]
        display = "NVIDIA GPU Operator"
        owned = [{"name": "clusterpolicies.nvidia.com", "kind": "ClusterPolicy", "version": "v1",
                  "displayName": "ClusterPolicy"},
                 {"name": "nvidiadrivers.nvidia.com", "kind": "NVIDIADriver",
                  "version": "v1alpha1", "displayName": "NVIDIADriver"}]
        deployment = "gpu-operator"
    else:
        examples = [_NFD_EXAMPLE]
        display = "Node Feature Discovery Operator"
        owned = [{"name": "nodefeaturediscoveries.nfd.openshift.io",
                  "kind": "NodeFeatureDiscovery", "version": "v1",
                  "displayName": "NodeFeatureDiscovery"}]
        deployment = "nfd-controller-manager"
    return {
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
        "metadata": {"name": "placeholder", "annotations": {
            "alm-examples": json.dumps(examples, indent=2)}},
        "spec": {
            "displayName": display, "version": "0.0.0", "maturity": "stable",
            "installModes": copy.deepcopy(_INSTALL_MODES),
            "customresourcedefinitions": {"owned": owned},
            "install": {"strategy": "deployment", "spec": {"deployments": [{
                "name": deployment,
                "spec": {"selector": {"matchLabels": {"app": deployment}},
                         "template": {"metadata": {"labels": {"app": deployment}},
                                      "spec": {"containers": [{"name": deployment,
                                                               "image": deployment}]}}}}]}},
            "relatedImages": [],
        },
    }
