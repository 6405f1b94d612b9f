"""Builders shared by the gpusim unit tests."""
import copy
import json

from gpusim import config as config_mod
from gpusim import contract as C
from gpusim.catalog import Catalog


ARCH = {"8": "Ampere", "9": "Hopper", "10": "Blackwell"}   # go-nvlib's names by compute capability major


def _index(local_gpus, row, prof):
    by_id = {gi_id: index for index, gi_id in local_gpus.GI_PROFILE_IDS[row["memory_slices"]].items()}
    return by_id[prof["gi_id"]]


def catalog_dump():
    """The collection's MIG-capable catalog rows in the shape of tests/testbed/build.sh's dump of NVIDIA's
    mock NVML: the simulator's own logic under test over known GPUs, without the Go build. (The simulator
    itself reads NVIDIA's dump; tests/integration/test_gpusim_gpus.py pins the catalog rows to it.)"""
    from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import catalog as collection_catalog
    from gpusim import local_gpus
    gpus = []
    for key in collection_catalog.product_names():
        row = collection_catalog.get_product(key)
        if not row["mig_capable"]:
            continue  # the simulator's fallback rows (gpusim.local_gpus) serve the GPUs without MIG
        gpus.append({
            "name": "NVIDIA " + row["product"], "memory_mib": row["memory_mib"],
            "pci_device_id": row["pci_device_id"], "compute_capability": row["compute_capability"],
            "mig_capable": True,
            "architecture": ARCH[row["compute_capability"].split(".")[0]], "brand": "Nvidia",
            # the NVML profile index, which the mock also returns as the profile ID (local_gpus.GI_PROFILE_IDS)
            "profiles": [{"name": name, "profile": _index(local_gpus, row, prof), "id": _index(local_gpus, row, prof),
                          "multiprocessors": 14 * prof["compute_slices"], "copy_engines": prof["compute_slices"],
                          "slice_count": prof["compute_slices"], "instance_count": prof["max"],
                          "memory_mib": prof["memory_mib"],
                          "placements": [{"start": start, "size": prof["size"]} for start in prof["placements"]]}
                         for name, prof in sorted(row["profiles"].items())]})
    return {"source": {}, "gpus": gpus}


CATALOG = Catalog(dump=catalog_dump())


def product(name):
    p = CATALOG.product(name)
    assert p is not None, name
    return p


def cfg(**sim):
    return config_mod.load(json.dumps({"simulation": sim}) if sim else None)


def node(name="gpu-0", product_name="NVIDIA-A100-SXM4-40GB", gpus=8, labels=None,
         annotations=None, capacity=None, allocatable=None):
    ann = {C.ANN_KWOK: "fake"}
    if product_name:
        ann[C.ANN_PRODUCT] = product_name
        ann[C.ANN_GPUS] = str(gpus)
    ann.update(annotations or {})
    cap = {"cpu": "96", "memory": "1Ti", "pods": "250"}
    cap.update(capacity or {})
    alloc = copy.deepcopy(cap) if allocatable is None else dict(allocatable)
    return {"metadata": {"name": name, "uid": "uid-" + name, "labels": dict(labels or {}),
                         "annotations": ann, "resourceVersion": "1"},
            "status": {"capacity": cap, "allocatable": alloc}}


def apply_plan(n, plan):
    """Apply a deviceplugin.Plan (merge patches) to a node dict, like the API server would."""
    n = copy.deepcopy(n)
    md = n["metadata"]
    for section in ("labels", "annotations"):
        for k, v in (plan.metadata.get(section) or {}).items():
            if v is None:
                md.setdefault(section, {}).pop(k, None)
            else:
                md.setdefault(section, {})[k] = v
    for section in ("capacity", "allocatable"):
        for k, v in (plan.status.get(section) or {}).items():
            if v is None:
                n["status"][section].pop(k, None)
            else:
                n["status"][section][k] = v
    return n


def apply_step(n, step):
    n = copy.deepcopy(n)
    md = n["metadata"]
    for section, patch in (("labels", step.labels), ("annotations", step.annotations)):
        for k, v in patch.items():
            if v is None:
                md.setdefault(section, {}).pop(k, None)
            else:
                md.setdefault(section, {})[k] = v
    return n


def cluster_policy(strategy="single", dp_config=None, dp_default="", mig_config=None, **extra):
    spec = {"mig": {"strategy": strategy},
            "devicePlugin": {"enabled": True, "config": {"name": dp_config or "",
                                                         "default": dp_default}},
            "gfd": {"enabled": True}, "migManager": {"enabled": True}}
    if mig_config:
        spec["migManager"]["config"] = {"name": mig_config}
    spec.update(extra)
    return {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy",
            "metadata": {"name": "gpu-cluster-policy"}, "spec": spec}


def configmap(name, data):
    return {"metadata": {"name": name, "namespace": "gpu-operator"}, "data": data}


TS_CONFIG = """version: v1
sharing:
  timeSlicing:
    resources:
    - name: nvidia.com/gpu
      replicas: 4
"""


class FakeInformer(object):
    """An informer's cache in memory: the objects of the resource ``res`` by key (their name unless ``key`` says
    otherwise), the handlers told of each object put, as the real informer's ``update_local`` tells them."""

    def __init__(self, *objs, **kwargs):
        self.res = kwargs.get("res")
        self.key = kwargs.get("key") or (lambda o: o["metadata"]["name"])
        self.store = dict((self.key(o), o) for o in objs)
        self.handlers = []

    def add_handler(self, fn):
        self.handlers.append(fn)

    def get(self, key):
        return self.store.get(key)

    def items(self):
        return list(self.store.values())

    def keys(self):
        return list(self.store)

    def by_index(self, _name, value):
        return [p for p in self.store.values() if p["spec"].get("nodeName") == value]

    def put(self, obj):
        old = self.store.get(self.key(obj))
        self.store[self.key(obj)] = obj
        for fn in self.handlers:
            fn("MODIFIED" if old else "ADDED", obj, old)

    def update_local(self, obj):
        self.put(obj)

    def wait_synced(self, timeout=None):
        return True
