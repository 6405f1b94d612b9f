"""The simulated GPUs: what NVIDIA's mock NVML answers (go-nvml pkg/nvml/mock, dumped by
tests/testbed/nvml/main.go into the build cache by tests/testbed/build.sh), plus the simulator's own rows
for what the mock lacks or gets wrong (gpusim.local_gpus, each use logged). Nothing of the collection is
loaded here: the collection's MIG catalog is checked against these GPUs, not copied into them.

A product entry (what deviceplugin, gfd, migparted and placement read)::

    {'product': 'NVIDIA A100-SXM4-40GB', 'gfd_product': 'NVIDIA-A100-SXM4-40GB', 'memory_mib': 40960,
     'architecture': 'Ampere', 'brand': 'Nvidia', 'compute_capability': '8.0', 'pci_device_id': '0x20B0',
     'mig_capable': True,
     'memory_slices': 8, 'compute_slices': 7, 'source': 'go-nvml v0.13.4-1',
     'profiles': {'1g.5gb': {'size': 1, 'placements': [0, ..., 6], 'max': 7, 'compute_slices': 1,
                             'memory_mib': 4864, 'profile': 0, 'gi_id': 19,
                             'dra_capacity': {'multiprocessors': 14, 'copyEngines': 1, ...}}, ...}}
"""

import copy
import json
import logging
import os
import re
import subprocess

from gpusim import local_gpus

_HERE = os.path.dirname(os.path.abspath(__file__))
BUILD_SH = os.path.join(_HERE, "..", "build.sh")
LOG = logging.getLogger("gpusim.catalog")
_PREFIX_RE = re.compile(r"^(?:NVIDIA|Tesla)-", re.IGNORECASE)
_SUFFIX_RE = re.compile(r"(?:-MIG-.*|-SHARED)$", re.IGNORECASE)


def dump_path():
    """$GPUSIM_NVML_GPUS, else nvml-gpus.json beside the bin dir of the current build key."""
    if os.environ.get("GPUSIM_NVML_GPUS"):
        return os.environ["GPUSIM_NVML_GPUS"]
    binp = subprocess.run(["bash", BUILD_SH, "--print-bin"], check=True, stdout=subprocess.PIPE,
                          universal_newlines=True).stdout.strip()
    return os.path.join(os.path.dirname(binp), "nvml-gpus.json")


def load_dump(path=None):
    path = path or dump_path()
    if not os.path.exists(path):
        raise FileNotFoundError("%s missing: run tests/testbed/build.sh (it dumps NVIDIA's mock NVML)" % path)
    with open(path) as f:
        return json.load(f)


def clean(name):
    """A product name in any spelling (GFD label, NVML name, short key) -> lookup key."""
    name = "-".join(str(name).strip().split())
    return _PREFIX_RE.sub("", _SUFFIX_RE.sub("", name)).lower()


def corrected(gpu):
    """The dump's GPU with local_gpus.CORRECTIONS applied (a new dict; 'corrected' lists what changed)."""
    fix = local_gpus.CORRECTIONS.get(gpu["name"])
    out = copy.deepcopy(gpu)
    out["corrected"] = []
    if not fix:
        return out
    for field in ("name", "pci_device_id", "memory_mib"):
        if field in fix and fix[field] != out[field]:
            out[field] = fix[field]
            out["corrected"].append(field)
    for prof in out["profiles"]:
        label = prof["name"]
        for field, value in (fix.get("profiles") or {}).get(prof["profile"], {}).items():
            value = [{"start": s, "size": n} for s, n in value] if field == "placements" else value
            if value != prof[field]:
                prof[field] = value
                out["corrected"].append("%s.%s" % (label, field))
    return out


# the GPU-instance profile's counts as the dump names them -> as NVIDIA's DRA driver names them (capacity)
ENGINES = (("multiprocessors", "multiprocessors"), ("copy_engines", "copyEngines"), ("decoders", "decoders"),
           ("encoders", "encoders"), ("jpeg_engines", "jpegEngines"), ("ofa_engines", "ofaEngines"))


def entry(gpu, source):
    """A product entry from one GPU in the dump's shape."""
    profiles = {}
    slices = max([int(x["start"]) + int(x["size"]) for p in gpu["profiles"] for x in p["placements"]] or [0])
    for p in gpu["profiles"]:
        places = p["placements"]
        profiles[p["name"]] = {
            "profile": p["profile"], "size": int(places[0]["size"]) if places else 0,
            "gi_id": local_gpus.GI_PROFILE_IDS.get(slices, {}).get(p["profile"], p.get("id")),
            "placements": sorted(int(x["start"]) for x in places), "max": int(p["instance_count"]),
            "compute_slices": int(p["slice_count"]), "memory_mib": int(p["memory_mib"]),
            "dra_capacity": {name: int(p[key]) for key, name in ENGINES if key in p}}
    arch, brand = local_gpus.FALLBACK_ARCH.get(gpu["name"], ("", ""))
    return {
        "product": gpu["name"], "gfd_product": "-".join(gpu["name"].split()),
        "architecture": gpu.get("architecture") or arch, "brand": gpu.get("brand") or brand,
        "memory_mib": int(gpu["memory_mib"]), "compute_capability": gpu["compute_capability"],
        "pci_device_id": gpu["pci_device_id"], "alt_pci_device_ids": [],
        "mig_capable": bool(gpu["mig_capable"] and profiles), "source": source,
        "memory_slices": max([s + p["size"] for p in profiles.values() for s in p["placements"]] or [0]),
        "compute_slices": max([p["compute_slices"] for p in profiles.values()] or [0]),
        "profiles": profiles}


def products(dump):
    """{lookup key: entry} of every simulated GPU: the mock's (corrected), then the fallback rows."""
    source = "go-nvml %s" % dump.get("source", {}).get("github.com/NVIDIA/go-nvml", "?")
    out = {}
    for gpu in dump["gpus"]:
        fixed = corrected(gpu)
        e = entry(fixed, source)
        e["corrected"] = fixed["corrected"]
        out[clean(e["product"])] = e
    for gpu in local_gpus.FALLBACK:
        e = entry(gpu, "gpusim fallback (not from NVIDIA)")
        out.setdefault(clean(e["product"]), e)
    return out


def merge(base, name, override):
    """An entry with simulation.catalog_overrides[name] merged in (profiles by name; None removes one)."""
    merged = copy.deepcopy(base) if base else entry({
        "name": name, "memory_mib": 0, "pci_device_id": None, "compute_capability": None,
        "mig_capable": False, "profiles": []}, "simulation.catalog_overrides")
    for field, value in override.items():
        if field != "profiles":
            merged[field] = value
    for pname, prof in (override.get("profiles") or {}).items():
        if prof is None:
            merged["profiles"].pop(pname, None)
        else:
            merged["profiles"].setdefault(pname, {}).update(prof)
    profs = merged["profiles"].values()
    merged.setdefault("mig_capable", bool(merged["profiles"]))
    if profs:
        merged["memory_slices"] = max(s + int(p["size"]) for p in profs for s in p["placements"])
        merged["compute_slices"] = max(int(p["compute_slices"]) for p in profs)
    return merged


class Catalog(object):
    """Product lookups (any spelling) over the simulated GPUs, with simulation.catalog_overrides."""

    def __init__(self, overrides=None, path=None, dump=None):
        self._products = products(dump if dump is not None else load_dump(path))
        for name, override in (overrides or {}).items():
            key = clean(name)
            self._products[key] = merge(self._products.get(key), name, override)
        self._logged = set()

    def product(self, name):
        """The entry for any spelling of the product, or None when the simulator has no such GPU."""
        if not name:
            return None
        found = self._products.get(clean(name))
        if found and found["product"] not in self._logged:
            self._logged.add(found["product"])
            if found["source"].startswith("go-nvml") and found.get("corrected"):
                LOG.info("GPU %s: NVIDIA's mock NVML (%s) with the simulator's corrections of %s "
                         "(gpusim/local_gpus.py)", found["product"], found["source"], ", ".join(found["corrected"]))
            else:
                LOG.info("GPU %s: from %s", found["product"], found["source"])
        return copy.deepcopy(found) if found else None

    def names(self):
        return sorted(e["product"] for e in self._products.values())
