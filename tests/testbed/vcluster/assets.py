"""The binaries (build.sh), the Go module assets (hack/asset-modules.sh) and what the cluster
loads from them: CRDs with their real schemas, kwok stages, the operator's CSV env."""
from __future__ import annotations

import concurrent.futures
import glob
import importlib.util
import os
import subprocess
import sys

import yaml

from gpusim.kube import Resource

from .common import CACHE, FIELD_MANAGER, HERE, die, log
from .processes import run
from .standins import stand_in_crds
from .state import State

# kwok stages (paths under the kwok module's kustomize/stage/), the set kwokctl uses by default.
KWOK_STAGES = [
    "node/fast/node-initialize.yaml",
    "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
    "pod/fast/pod-ready.yaml",
    "pod/fast/pod-complete.yaml",
    "pod/fast/pod-delete.yaml",
    # kwok's own chaos stage: a node labelled node-not-ready.stage.kwok.x-k8s.io=true reports
    # Ready=False (weight 10000 wins over node-initialize); ``testbed chaos not-ready`` sets it
    "node/chaos/node-not-ready.yaml",
]

# CRDs with their real schemas: (asset module key, path inside the module).
# Module versions are pinned in hack/asset-modules.sh.
CRD_FILES = [
    ("kwok", "kustomize/crd/bases/kwok.x-k8s.io_stages.yaml"),
    # kwok serves a pod's container log from the file its Logs object names (gpusim writes both)
    ("kwok", "kustomize/crd/bases/kwok.x-k8s.io_logs.yaml"),
    ("gpu-operator", "deployments/gpu-operator/crds/nvidia.com_clusterpolicies.yaml"),
    ("gpu-operator", "deployments/gpu-operator/crds/nvidia.com_nvidiadrivers.yaml"),
    ("gpu-operator", "deployments/gpu-operator/crds/nvidia.com_gpuclusters.yaml?"),  # ? = optional
    ("olm", "crds/operators.coreos.com_subscriptions.yaml"),
    ("olm", "crds/operators.coreos.com_installplans.yaml"),
    ("olm", "crds/operators.coreos.com_clusterserviceversions.yaml"),
    ("olm", "crds/operators.coreos.com_operatorgroups.yaml"),
    ("olm", "crds/operators.coreos.com_catalogsources.yaml"),
    ("olm", "crds/operators.coreos.com_operatorconditions.yaml"),
    ("openshift-api", "machine/v1beta1/zz_generated.crd-manifests/0000_10_machine-api_01_machinesets-Default.crd.yaml"),
    ("openshift-api", "machine/v1beta1/zz_generated.crd-manifests/0000_10_machine-api_01_machines-Default.crd.yaml"),
    ("openshift-api", "config/v1/zz_generated.crd-manifests/0000_10_config-operator_01_imagedigestmirrorsets.crd.yaml"),
    ("openshift-api", "config/v1/zz_generated.crd-manifests/0000_10_config-operator_01_imagetagmirrorsets.crd.yaml"),
    ("openshift-api", "config/v1/zz_generated.crd-manifests/0000_10_config-operator_01_images-Default.crd.yaml"),
    ("openshift-api", "config/v1/zz_generated.crd-manifests/0000_03_marketplace_01_operatorhubs.crd.yaml"),
    ("openshift-api", "operator/v1alpha1/zz_generated.crd-manifests/0000_10_config-operator_01_imagecontentsourcepolicies.crd.yaml"),
    ("autoscaler", "install/01_clusterautoscaler.crd.yaml"),
    ("autoscaler", "install/02_machineautoscaler.crd.yaml"),
    ("prometheus-op", "example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml"),
    ("prometheus-op", "example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml"),
    ("nfd-operator", "config/crd/bases/nfd.openshift.io_nodefeaturediscoveries.yaml"),
    ("nfd-operator", "config/crd/bases/nfd.openshift.io_nodefeaturerules.yaml"),
    ("nfd-operator", "config/crd/bases/nfd.k8s-sigs.io_nodefeatures.yaml"),
    ("nfd-operator", "config/crd/bases/nfd.k8s-sigs.io_nodefeaturerules.yaml"),
]
CRDS = Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", False,
                "CustomResourceDefinition")
NEEDED_BINARIES = ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok",
                   "gpu-operator"]


def ensure_bin(allow_build: bool) -> str:
    """The bin dir of the current build key ($GPUOPS_TESTBED_BIN wins); builds when missing."""
    if os.environ.get("GPUOPS_TESTBED_BIN"):
        return os.environ["GPUOPS_TESTBED_BIN"]
    binp = run([os.path.join(HERE, "build.sh"), "--print-bin"]).strip()
    if all(os.access(os.path.join(binp, b), os.X_OK) for b in NEEDED_BINARIES) and \
            glob.glob(os.path.join(os.path.dirname(binp), "assets-*.ok")) and \
            os.path.exists(os.path.join(os.path.dirname(binp), "nvml-gpus.json")):
        return binp
    if not allow_build:
        die(f"binaries missing in {binp}; run tests/testbed/build.sh (or drop --no-build)")
    log("binaries missing: running build.sh (a cold build takes many minutes)")
    r = subprocess.run([os.path.join(HERE, "build.sh")], stdout=subprocess.PIPE, text=True)
    if r.returncode != 0:
        die("build.sh failed")
    return r.stdout.strip().splitlines()[-1]


def python_with_kubernetes() -> str:
    """The interpreter for gpusim (needs the kubernetes client): $GPUOPS_VENV's python if set,
    else this interpreter when it has the client, else $GPUOPS_CACHE/venv's python."""
    if os.environ.get("GPUOPS_VENV"):
        return os.path.join(os.environ["GPUOPS_VENV"], "bin", "python")
    if importlib.util.find_spec("kubernetes") is not None:
        return sys.executable
    venv_py = os.path.join(CACHE, "venv", "bin", "python")
    return venv_py if os.access(venv_py, os.X_OK) else sys.executable


def asset_dirs(st: State) -> dict:
    """{module key: directory} of the Go modules whose files the cluster loads (cached in state)."""
    cached = st.data.get("assets")
    if cached and all(os.path.isdir(d) for d in cached.values()):
        return cached
    out = run([os.path.join(HERE, "hack", "asset-modules.sh")])
    dirs = dict(line.split(" ", 1) for line in out.strip().splitlines())
    st.data["assets"] = dirs
    st.save()
    return dirs


def read_yaml_docs(path: str) -> list:
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def resource_of(obj: dict) -> Resource:
    """The REST resource of a manifest (plural: the kind in lower case + "s")."""
    group, _, version = obj["apiVersion"].rpartition("/")
    return Resource(group, version, obj["kind"].lower() + "s",
                    bool(obj["metadata"].get("namespace")), obj["kind"])


def install_crds(kube, assets: dict) -> list:
    """Server-side apply every CRD of CRD_FILES and the stand-ins (8 at a time); returns their names."""
    docs = []
    for key, rel in CRD_FILES:
        optional = rel.endswith("?")
        rel = rel.rstrip("?")
        path = os.path.join(assets[key], rel)
        if not os.path.exists(path):
            if optional:
                continue
            die(f"CRD file missing from module cache: {path}")
        docs += [d for d in read_yaml_docs(path) if d.get("kind") == "CustomResourceDefinition"]
    # APIs no served module carries (standins.py); GPUCluster's only when the operator module has none
    docs += stand_in_crds({d.get("metadata", {}).get("name") for d in docs})

    def one(d):
        d.get("metadata", {}).pop("creationTimestamp", None)
        d.pop("status", None)
        kube.apply(CRDS, d, FIELD_MANAGER)
        return d["metadata"]["name"]

    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        return list(ex.map(one, docs))


def crds_established(kube, names: list) -> bool:
    items, _ = kube.list(CRDS)
    est = {i["metadata"]["name"] for i in items
           if any(c["type"] == "Established" and c["status"] == "True"
                  for c in i.get("status", {}).get("conditions", []))}
    return all(n in est for n in names)


def apply_kwok_stages(kube, assets: dict) -> None:
    """The kwok stages as Stage objects, so that tests and simulators can add chaos stages at
    run time."""
    for rel in KWOK_STAGES:
        for doc in read_yaml_docs(os.path.join(assets["kwok"], "kustomize", "stage", rel)):
            kube.apply(resource_of(doc), doc, FIELD_MANAGER)


def csv_operator_env(mod: str) -> dict:
    """The operand image env vars (DRIVER_IMAGE, DEVICE_PLUGIN_IMAGE, ...) of the operator container
    in the module's OLM bundle CSV, as OLM would set them; ClusterPolicies without image fields
    (like the CSV's alm-examples) fall back to these."""
    env = {}
    path = os.path.join(mod, "bundle", "manifests", "gpu-operator-certified.clusterserviceversion.yaml")
    if not os.path.exists(path):
        return env
    csv = read_yaml_docs(path)[0]
    for dep in csv["spec"]["install"]["spec"]["deployments"]:
        for c in dep["spec"]["template"]["spec"]["containers"]:
            for e in c.get("env") or []:
                if "value" in e and e["name"] != "OPERATOR_NAMESPACE":
                    env[e["name"]] = str(e["value"])
    return env
