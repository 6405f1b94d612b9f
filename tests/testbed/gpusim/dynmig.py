"""Simulated NVIDIA DRA kubelet plugin with the driver's ``DynamicMIG`` gate on (pure): partitionable devices.

What the real plugin announces then (kubernetes-sigs/dra-driver-nvidia-gpu v25.12.0, docs/facts.md "Dynamic MIG
in the testbed's kubelet plugin"): for every GPU the full GPU ``gpu-<minor>`` and one device per possible
placement of every GPU-instance profile (``gpu-<minor>-mig-<profile>-<GI profile ID>-<start>``, no uuid: the MIG
device is created when a claim is prepared). One counter set per GPU, ``gpu-<minor>-counter-set``, holds one
counter per capacity (the largest value over all profiles, names made DNS labels: ``copy-engines``, ...) plus
``memory-slice-<i>`` = 1 per memory slice; a partition consumes its profile's capacities and the memory slices
of its placement, the full GPU consumes everything. So the scheduler never allocates overlapping placements.
From Kubernetes 1.35 the pool has G + 1 slices: the counter sets first, then the devices of each GPU.
"""

import re

from gpusim import contract as C
from gpusim import dra

# per node: "true" / "false" overrides simulation.driver.dynamic_mig (the gate of the driver's chart,
# featureGates.DynamicMIG, is one setting per DaemonSet; the annotation lets one test node differ)
ANN_DYNAMIC_MIG = C.PREFIX + "dra-dynamic-mig"

# (capacity as the driver names it, key in a catalog profile's dra_capacity); memory is the profile's memory_mib
ENGINES = ("multiprocessors", "copyEngines", "decoders", "encoders", "jpegEngines", "ofaEngines")


def enabled(node, driver):
    """Whether the simulated plugin runs with the DynamicMIG gate on for this node."""
    value = C.node_annotations(node or {}).get(ANN_DYNAMIC_MIG)
    if value is not None:
        return str(value).strip().lower() == "true"
    return bool((driver or {}).get("dynamic_mig", False))


def counter_name(capacity):
    """mig.go camelToDNSName: copyEngines -> copy-engines."""
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1-\2", capacity)
    return dra.rfc1123(re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1-\2", name))


def profile_capacities(prof):
    """partitions.go MigSpec.PartCapacities: every engine count (0 when absent) and memory in bytes."""
    got = prof.get("dra_capacity") or {}
    caps = {name: int(got.get(name, 0)) for name in ENGINES}
    caps["memory"] = int(prof["memory_mib"]) * 2 ** 20
    return caps


def placements(product):
    """Every possible placement: [(profile, start, size)], profile by profile (C == G profiles only)."""
    return [(name, int(start), int(prof["size"]))
            for name, prof in sorted(product["profiles"].items()) for start in prof["placements"]]


def max_capacities(product):
    """nvlib.go inspectMigProfilesAndPlacements: the largest value of each capacity over all profiles."""
    out = {}
    for name, _start, _size in placements(product):
        for cap, value in profile_capacities(product["profiles"][name]).items():
            out[cap] = max(out.get(cap, 0), value)
    return out


def mem_slices(product):
    """The memory slice count as the driver infers it: the largest placement size."""
    return max([size for _n, _s, size in placements(product)] or [0])


def counter_set_name(minor):
    return "gpu-%d-counter-set" % minor


def counters(caps, start, size):
    """partitions.go capacitiesToCounters + addCountersForMemSlices: {counter name: {"value": "<n>"}}."""
    out = {counter_name(cap): {"value": str(v)} for cap, v in caps.items()}
    for i in range(start, start + size):
        out["memory-slice-%d" % i] = {"value": "1"}
    return dict(sorted(out.items()))


def counter_set(product, minor):
    return {"name": counter_set_name(minor), "counters": counters(max_capacities(product), 0, mem_slices(product))}


def _capacity(caps):
    return {name: {"value": str(v)} for name, v in sorted(caps.items())}


def full_gpu(node_name, product, driver, minor):
    """GpuInfo.PartGetDevice: the whole GPU, consuming every counter of its set."""
    caps = max_capacities(product)
    dev = dra.gpu_device(node_name, product, driver, minor)
    dev["capacity"] = _capacity(caps)
    dev["consumesCounters"] = [{"counterSet": counter_set_name(minor),
                                "counters": counters(caps, 0, mem_slices(product))}]
    return dev


def partition(node_name, product, driver, minor, profile_name, start, size):
    """MigSpec.PartGetDevice: one possible placement of a profile (no uuid, no memorySlice capacities)."""
    prof = product["profiles"][profile_name]
    caps = profile_capacities(prof)
    dev = dra.mig_device(node_name, product, driver, minor, profile_name, start, size)
    dev["attributes"].pop("uuid")
    dev["capacity"] = _capacity(caps)
    dev["consumesCounters"] = [{"counterSet": counter_set_name(minor), "counters": counters(caps, start, size)}]
    return dev


def gpu_devices(node_name, product, driver, minor):
    """The full GPU and all its possible partitions, sorted by name (the order the scheduler tries them)."""
    devs = [full_gpu(node_name, product, driver, minor)]
    devs += [partition(node_name, product, driver, minor, *p) for p in placements(product)]
    return sorted(devs, key=lambda d: d["name"])


def slices(node_name, product, driver, gpus):
    """driver.go generateSplitResourceSlices: [{"sharedCounters": [...]}, {"devices": [...]} per GPU]."""
    return ([{"sharedCounters": [counter_set(product, m) for m in range(gpus)]}]
            + [{"devices": gpu_devices(node_name, product, driver, m)} for m in range(gpus)])


def fits(counter_sets, devices):
    """Whether allocating all these devices together stays within the counter sets (what the scheduler checks)."""
    left = {s["name"]: {k: int(v["value"]) for k, v in s["counters"].items()} for s in counter_sets}
    for dev in devices:
        for use in dev.get("consumesCounters") or []:
            for name, v in use["counters"].items():
                left[use["counterSet"]][name] -= int(v["value"])
    return all(v >= 0 for s in left.values() for v in s.values())
