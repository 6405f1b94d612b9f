"""Simulated NVIDIA DRA kubelet plugin (driver gpu.nvidia.com), pure part: the ResourceSlice of one node.

What the real plugin publishes (kubernetes-sigs/dra-driver-nvidia-gpu v25.12.0, docs/facts.md "Dynamic
Resource Allocation"): one pool per node (pool name = node name, one slice, owned by the Node, generateName
``<index>-gpu.nvidia.com-<node>-``) listing
  * every GPU with MIG disabled as ``gpu-<minor>`` (type gpu, memory capacity in bytes);
  * for a GPU with MIG enabled, only its MIG devices (static MIG, the ``DynamicMIG`` gate off), each
    ``gpu-<minor>-mig-<profile without dots>-<GI profile ID>-<placement start>`` (type mig, parentUUID,
    profile, the GPU-instance profile's engine counts, memory in bytes, one ``memorySlice<i>`` per slice).
With the gate on, gpusim.dynmig gives the pool's slices instead (parts()).
The MIG devices are where the simulated MIG manager put them (gpusim.placement, from the node's
gpusim.gpuops.dev/mig-applied state); the GPU facts are the simulated GPUs' (gpusim.catalog).
UUIDs and PCI bus IDs are made up by the simulator (stable per node and GPU).
"""

import re
import uuid

from gpusim import contract as C
from gpusim import deviceplugin
from gpusim import placement

DRIVER = "gpu.nvidia.com"
API_VERSION = "resource.k8s.io/v1"
# the kubelet plugin's pods (chart nvidia-dra-driver-gpu, selector label of component "kubelet-plugin")
PLUGIN_POD_LABEL = ("nvidia-dra-driver-gpu-component", "kubelet-plugin")
PCI_BUS_ID = "resource.kubernetes.io/pciBusID"
_NS = uuid.UUID("5f1b0c2e-9d43-4c4e-8a57-6a0d2b7e7a11")


def semver(text):
    """Masterminds semver (v1) parse + String(), as the driver formats versions: '580.95.05' -> '580.95.5'."""
    m = re.match(r"^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?", str(text or "").strip())
    if not m:
        raise ValueError("not a version: %r" % text)
    return "%d.%d.%d" % tuple(int(x or 0) for x in m.groups())


def gpu_uuid(node_name, minor):
    return "GPU-%s" % uuid.uuid5(_NS, "%s/%d" % (node_name, minor))


def mig_uuid(node_name, minor, profile, start):
    return "MIG-%s" % uuid.uuid5(_NS, "%s/%d/%s/%d" % (node_name, minor, profile, start))


def _str(v):
    return {"string": v}


def _common(product, driver, gpu_id, minor):
    return {
        "uuid": _str(gpu_id), "productName": _str(product["product"]), "brand": _str(product.get("brand") or ""),
        "architecture": _str(product.get("architecture") or ""),
        "cudaComputeCapability": {"version": semver(product["compute_capability"])},
        "driverVersion": {"version": semver(driver["version"])},
        "cudaDriverVersion": {"version": semver(driver["cuda"])},
        PCI_BUS_ID: _str("0000:%02x:00.0" % (0x10 + minor)),
    }


def gpu_device(node_name, product, driver, minor):
    attrs = _common(product, driver, gpu_uuid(node_name, minor), minor)
    attrs["type"] = _str("gpu")
    return {"name": "gpu-%d" % minor, "attributes": attrs,
            "capacity": {"memory": {"value": str(int(product["memory_mib"]) * 2 ** 20)}}}


def rfc1123(name):
    """mig.go toRFC1123Compliant."""
    name = re.sub(r"[^a-z0-9-.]", "-", name.lower()).strip("-")
    return (name[:-1] if name.endswith(".") else name)[:253]


def mig_device_name(minor, profile_name, gi_id, start):
    """mig.go ToCanonicalName: 1g.5gb+me on GPU 0 at slice 3 -> gpu-0-mig-1g5gb-me-20-3."""
    return "gpu-%d-mig-%s-%d-%d" % (minor, rfc1123(profile_name.replace(".", "")), gi_id, start)


def mig_device(node_name, product, driver, minor, profile_name, start, size):
    prof = product["profiles"][profile_name]
    attrs = _common(product, driver, mig_uuid(node_name, minor, profile_name, start), minor)
    attrs.update({"type": _str("mig"), "parentUUID": _str(gpu_uuid(node_name, minor)),
                  "profile": _str(profile_name)})
    capacity = {name: {"value": str(n)} for name, n in sorted((prof.get("dra_capacity") or {}).items())}
    capacity["memory"] = {"value": str(int(prof["memory_mib"]) * 2 ** 20)}
    for i in range(start, start + size):
        capacity["memorySlice%d" % i] = {"value": "1"}
    return {"name": mig_device_name(minor, profile_name, int(prof["gi_id"]), start),
            "attributes": attrs, "capacity": capacity}


def devices(node, product, gpus, driver):
    """The devices the plugin publishes for the node, sorted by name (the driver sorts by canonical name)."""
    name = C.node_name(node)
    out = []
    for minor, state in enumerate(deviceplugin.read_mig_state(node, gpus)):
        if not state["mig"] or not product.get("mig_capable"):
            out.append(gpu_device(name, product, driver, minor))
            continue
        placed, err = placement.create_instances(product, state["devices"])
        for profile_name, start, size in (placed or []) if err is None else []:
            out.append(mig_device(name, product, driver, minor, profile_name, start, size))
    return sorted(out, key=lambda d: d["name"])


def slice_spec(node_name, devs, generation=1, count=1, part=None):
    """A slice's spec: ``devs`` (the static pool's one slice) or ``part`` ({"devices"} or {"sharedCounters"})."""
    spec = {"driver": DRIVER, "nodeName": node_name,
            "pool": {"name": node_name, "generation": generation, "resourceSliceCount": count}}
    spec.update(part if part is not None else {"devices": devs})
    return spec


def index_length(count):
    """resourceslicecontroller.go getIndexLength: at least 5 hex digits."""
    return max(5, len("%x" % max(count - 1, 0)))


def slice_index(name, count):
    """resourceslicecontroller.go decodeIndex: the slice's index from its name, None when it does not match."""
    prefix = name.split("-", 1)[0]
    if "-" not in name or len(prefix) != index_length(count):
        return None
    try:
        return int(prefix, 16)
    except ValueError:
        return None


def new_slice(node, devs, index=0, count=1, part=None, generation=1):
    """The ResourceSlice to create for a node (the resourceslice controller's generateName and owner)."""
    md = node["metadata"]
    return {"apiVersion": API_VERSION, "kind": "ResourceSlice",
            "metadata": {"generateName": "%0*x-%s-%s-" % (index_length(count), index, DRIVER, md["name"]),
                         "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": md["name"],
                                              "uid": md.get("uid"), "controller": True}]},
            "spec": slice_spec(md["name"], devs, generation, count, part)}


def parts(node, product, gpus, driver, dynamic_mig=False):
    """The pool's slices as {"devices": [...]} or {"sharedCounters": [...]}: one slice (static MIG), or with the
    driver's DynamicMIG gate on a MIG-capable GPU the counter sets and one slice per GPU (gpusim.dynmig)."""
    if dynamic_mig and product.get("mig_capable"):
        from gpusim import dynmig
        return dynmig.slices(C.node_name(node), product, driver, gpus)
    return [{"devices": devices(node, product, gpus, driver)}]


def plan(node, product, gpus, driver, served, current, dynamic_mig=False):
    """The next write for one node: ("create", slice) | ("update", slice) | ("delete", [names]) | None.

    served: whether a kubelet-plugin pod runs on the node; current: the driver's slices of the node's pool.
    Like the resourceslice controller: slices match the desired ones by the index their name starts with; a
    slice of an older generation, without a matching index or a second one for an index goes; one changed
    slice is updated in place with the same pool generation; otherwise the generation goes up (the other
    slices then go as obsolete and come back at the new generation, one write per call).
    """
    if not served or product is None or gpus <= 0:
        return ("delete", sorted(s["metadata"]["name"] for s in current)) if current else None
    want = parts(node, product, gpus, driver, dynamic_mig)
    count = len(want)
    generation = max([int(((s.get("spec") or {}).get("pool") or {}).get("generation") or 1) for s in current] or [1])
    matched, obsolete = {}, []
    for s in sorted(current, key=lambda s: s["metadata"]["name"]):
        index = slice_index(s["metadata"]["name"], count)
        gen = int(((s.get("spec") or {}).get("pool") or {}).get("generation") or 1)
        if gen < generation or index is None or index >= count or index in matched:
            obsolete.append(s["metadata"]["name"])
        else:
            matched[index] = s
    if obsolete:
        return "delete", sorted(obsolete)
    changed = [i for i, s in sorted(matched.items())
               if any((s.get("spec") or {}).get(k) != v
                      for k, v in slice_spec(C.node_name(node), None, generation, count, want[i]).items())
               or any(k in (s.get("spec") or {}) for k in ("devices", "sharedCounters") if k not in want[i])]
    missing = [i for i in range(count) if i not in matched]
    if missing and not changed:
        i = missing[0]
        return "create", new_slice(node, None, i, count, want[i], generation)
    if not changed:
        return None
    i = changed[0]
    if len(changed) > 1 or missing:
        generation += 1
    keep = matched[i]
    spec = {k: v for k, v in (keep.get("spec") or {}).items() if k not in ("devices", "sharedCounters")}
    updated = dict(keep)
    updated["spec"] = dict(spec, **slice_spec(C.node_name(node), None, generation, count, want[i]))
    return "update", updated


def plugin_wait(started, now, delay):
    """Seconds until a kubelet plugin whose pod was first seen Running at ``started`` (monotonic seconds)
    publishes the node's slice: the simulated plugin start time ``delay`` (simulation.dra_plugin_start_seconds,
    0: at once). 0.0 when it is due; ``started`` None (a pod already Running when the simulator started) is due."""
    if delay <= 0 or started is None:
        return 0.0
    return max(0.0, started + delay - now)
