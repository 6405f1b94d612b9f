"""What the NVIDIA device plugin advertises and what GPU Feature Discovery labels (pure).

Sources: NVIDIA/k8s-device-plugin v0.20 internal/rm/device_map.go
(resources per MIG strategy, replicas), internal/rm/rm.go (mixed resource names),
internal/plugin/mps.go, cmd/nvidia-device-plugin/main.go validateFlags, internal/lm/*.go (labels).

Inputs everywhere: `product` = gpusim.catalog.Catalog.product(...) dict, `state` = per-GPU list of
{"mig": bool, "devices": {profile: count}}, `strategy` = none|single|mixed, `sharing` =
gpusim.sharing.parse(...) result (or None when the plugin runs without a config file).
"""

import re

from gpusim import placement
from gpusim import sharing as sharing_mod

GPU = "nvidia.com/gpu"
# label suffixes GFD writes under nvidia.com/gpu.* and nvidia.com/mig-<profile>.*
RESOURCE_LABEL_SUFFIXES = (
    "product", "count", "replicas", "sharing-strategy", "memory", "family", "compute.major",
    "compute.minor", "multiprocessors", "slices.gi", "slices.ci", "engines.copy",
    "engines.decoder", "engines.encoder", "engines.jpeg", "engines.ofa",
)
OTHER_OWNED_LABELS = (
    "nvidia.com/mig.capable", "nvidia.com/mig.strategy", "nvidia.com/mps.capable",
    "nvidia.com/gpu.mode",
    "nvidia.com/cuda.driver.major", "nvidia.com/cuda.driver.minor", "nvidia.com/cuda.driver.rev",
    "nvidia.com/cuda.runtime.major", "nvidia.com/cuda.runtime.minor",
    "nvidia.com/cuda.driver-version.major", "nvidia.com/cuda.driver-version.minor",
    "nvidia.com/cuda.driver-version.revision", "nvidia.com/cuda.driver-version.full",
    "nvidia.com/cuda.runtime-version.major", "nvidia.com/cuda.runtime-version.minor",
    "nvidia.com/cuda.runtime-version.full",
)


def is_owned_label(key):
    """Labels GFD owns (removed when no longer produced). gpu.present/deploy.* are not GFD's."""
    if key in OTHER_OWNED_LABELS:
        return True
    for prefix in ("nvidia.com/gpu.", "nvidia.com/mig-"):
        if key.startswith(prefix):
            rest = key[len(prefix):]
            if prefix == "nvidia.com/gpu.":
                return rest in RESOURCE_LABEL_SUFFIXES
            # nvidia.com/mig-<profile>.<suffix>
            for suffix in RESOURCE_LABEL_SUFFIXES:
                if rest.endswith("." + suffix) and len(rest) > len(suffix) + 1:
                    return True
    return False


def is_managed_resource(name):
    """Extended resources this plugin simulation owns on the node."""
    return (name in (GPU, GPU + ".shared")
            or (name.startswith("nvidia.com/mig-")))


def mig_resource_name(profile):
    return "nvidia.com/mig-" + profile.replace("+", ".")


def mig_device_name(profile):
    """nvmlMigDevice.GetName: the profile with '+' replaced by '.' (e.g. 1g.5gb.me)."""
    return profile.replace("+", ".")


def sanitise(text):
    text = re.sub(r"[^A-Za-z0-9\-_. ]", "", text)
    return "-".join(text.split())


def model_name(product):
    return product.get("gfd_product") or sanitise("NVIDIA " + product["product"])


def compute_capability(product):
    cc = product.get("compute_capability")
    if cc is None:
        return 0, 0
    if isinstance(cc, (tuple, list)):
        return int(cc[0]), int(cc[1])
    text = str(cc)
    if "." in text:
        major, minor = text.split(".", 1)
        return int(major), int(minor)
    return int(text), 0


def arch_family(major, minor):
    """internal/lm/resource.go getArchFamily."""
    table = {1: "tesla", 2: "fermi", 3: "kepler", 5: "maxwell", 6: "pascal", 9: "hopper",
             10: "blackwell", 12: "blackwell", 13: "rubin"}
    if major == 7:
        return "volta" if minor < 5 else "turing"
    if major == 8:
        return "ampere" if minor < 9 else "ada-lovelace"
    return table.get(major, "undefined")


class PluginError(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# device plugin


def base_devices(product, state, strategy):
    """Resource name -> device count before sharing (device_map.go buildDeviceMapFromConfigResources).

    Raises PluginError when the plugin would refuse to start.
    """
    if strategy not in ("none", "single", "mixed"):
        raise PluginError("unknown MIG strategy: %s" % strategy)
    devices = {}
    full = [g for g in state if not (g["mig"] and strategy != "none")]
    if full:
        devices[GPU] = len(full)
    if strategy == "none":
        return devices
    mig_gpus = [(i, g) for i, g in enumerate(state) if g["mig"]]
    migs = {}
    for _i, g in mig_gpus:
        for prof, n in g["devices"].items():
            if n > 0:
                migs[prof] = migs.get(prof, 0) + n
    if strategy == "single":
        for i, g in mig_gpus:
            if not any(n > 0 for n in g["devices"].values()):
                raise PluginError("invalid MIG configuration: at least one device with "
                                  "migEnabled=true was not configured correctly: device %d has no "
                                  "MIG devices configured" % i)
        if len(migs) > 1:
            raise PluginError("invalid MIG configuration: more than one MIG device type present "
                              "on node")
        if full and migs:
            raise PluginError("all devices on the node must be configured with the same "
                              "migEnabled value")
        if migs:
            devices[GPU] = sum(migs.values())
        return devices
    for prof, n in migs.items():
        name = mig_resource_name(prof)
        devices[name] = devices.get(name, 0) + n
    return devices


def plugin_resources(product, state, strategy, sharing):
    """Capacity the plugin advertises: {resource: count}. Raises PluginError on plugin failure."""
    sharing = sharing or sharing_mod.empty_config()
    devices = base_devices(product, state, strategy)
    if sharing["strategy"] == sharing_mod.MPS:
        if strategy == "mixed":
            raise PluginError("using --mig-strategy=mixed is not supported with MPS")
        has_mig_devices = strategy == "single" and any(g["mig"] for g in state)
        if has_mig_devices:
            raise PluginError("sharing using MPS is not supported for MIG devices")
        major, minor = compute_capability(product)
        limit = 48 if (major, minor) >= (7, 5) else 16
        for r in sharing["resources"]:
            if r["replicas"] > limit:
                raise PluginError("MPS: %d replicas requested for %s; at most %d clients per GPU "
                                  "are supported" % (r["replicas"], r["name"], limit))
    out = dict(devices)
    for r in sharing["resources"]:
        if r["name"] not in devices:
            continue  # "Skip any resources not matched"
        count = devices[r["name"]] * r["replicas"]
        out.pop(r["name"], None)
        target = r["rename"] or r["name"]
        out[target] = out.get(target, 0) + count
    return out


# ---------------------------------------------------------------------------------------------
# GPU feature discovery


def _replication(sharing, resource):
    if sharing is None:
        return None
    for r in sharing["resources"]:
        if r["name"] == resource:
            return r
    return None


def _base_labels(resource, count, parts, sharing):
    """resourceLabeler.baseLabeler: product/count/replicas/sharing-strategy."""
    info = _replication(sharing, resource)
    if sharing is None:
        replicas = 0
    elif info is not None and info["replicas"] > 0:
        replicas = info["replicas"]
    else:
        replicas = 1
    strategy = "none"
    if sharing is not None and replicas > 1:
        strategy = sharing["strategy"]
    name_parts = [sanitise(p) for p in parts if p]
    shared = info is not None and info["replicas"] > 1
    renamed = info is not None and bool(info["rename"])
    if shared and not renamed:
        name_parts.append("SHARED")
    return {
        resource + ".product": "-".join(name_parts),
        resource + ".count": str(count),
        resource + ".replicas": str(replicas),
        resource + ".sharing-strategy": strategy,
    }


def _mig_attribute_labels(resource, product, profile):
    prof = product["profiles"][profile]
    c, g, _gb, _a, _n = placement.parse_profile(profile)
    labels = {
        resource + ".memory": str(int(prof["memory_mib"])),
        resource + ".slices.gi": str(g),
        resource + ".slices.ci": str(c),
    }
    if prof.get("multiprocessors") is not None:
        labels[resource + ".multiprocessors"] = str(int(prof["multiprocessors"]))
    for eng, n in (prof.get("engines") or {}).items():
        labels["%s.engines.%s" % (resource, eng)] = str(int(n))
    return labels


def _full_gpu_labels(product, count, sharing):
    labels = _base_labels(GPU, count, [model_name(product)], sharing)
    if product.get("memory_mib"):
        labels[GPU + ".memory"] = str(int(product["memory_mib"]))
    major, minor = compute_capability(product)
    if major:
        labels[GPU + ".family"] = arch_family(major, minor)
        labels[GPU + ".compute.major"] = str(major)
        labels[GPU + ".compute.minor"] = str(minor)
    return labels


# the operator's driver DaemonSet pods: the ClusterPolicy's, and those of NVIDIADriver objects (gpu-operator
# internal/state/driver.go AppComponentLabelValue)
DRIVER_POD_LABELS = (("app", "nvidia-driver-daemonset"), ("app.kubernetes.io/component", "nvidia-driver"))


def is_driver_pod(labels):
    return any((labels or {}).get(key) == value for key, value in DRIVER_POD_LABELS)
_DRIVER_TAG = re.compile(r"^(\d+\.\d+(?:\.\d+)?)(?:-.+)?$")


def running_driver(images, default):
    """The driver GFD reports on a node (``default``: the config's ``{version, cuda}``). GFD reads the
    version of the kernel module loaded, that is of the newest Running driver pod's image: the operator
    tags driver images ``<version>-<os tag>`` (``580.105.08-rhcos4.18``, gpu-operator
    controllers/object_controls.go resolveDriverTag). ``images``: the images of the Running driver pods
    on the node, newest last; a digest image (``@sha256:``, what OLM's DRIVER_IMAGE pins), no pod or a
    tag that is not a version keep ``default``."""
    for image in reversed(images or []):
        last = str(image or "").rsplit("/", 1)[-1]
        if "@" in last or ":" not in last:
            continue
        match = _DRIVER_TAG.match(last.split(":", 1)[1])
        if match:
            return dict(default, version=match.group(1))
    return dict(default)


def driver_labels(driver):
    version = str(driver.get("version", "")).split(".")
    major = version[0] if version else ""
    minor = version[1] if len(version) > 1 else ""
    rev = version[2] if len(version) > 2 else ""
    cuda = str(driver.get("cuda", "")).split(".")
    cmaj = cuda[0] if cuda else ""
    cmin = cuda[1] if len(cuda) > 1 else "0"
    return {
        "nvidia.com/cuda.driver.major": major, "nvidia.com/cuda.driver.minor": minor,
        "nvidia.com/cuda.driver.rev": rev,
        "nvidia.com/cuda.runtime.major": cmaj, "nvidia.com/cuda.runtime.minor": cmin,
        "nvidia.com/cuda.driver-version.major": major, "nvidia.com/cuda.driver-version.minor": minor,
        "nvidia.com/cuda.driver-version.revision": rev,
        "nvidia.com/cuda.driver-version.full": str(driver.get("version", "")),
        "nvidia.com/cuda.runtime-version.major": cmaj,
        "nvidia.com/cuda.runtime-version.minor": cmin,
        "nvidia.com/cuda.runtime-version.full": "%s.%s" % (cmaj, cmin),
    }


def gfd_labels(product, state, strategy, sharing, driver):
    """All labels GFD writes for this node (plus nvidia.com/gpu.present). Raises PluginError
    where GFD would fail (MPS requested on a node with a MIG-enabled GPU)."""
    labels = {"nvidia.com/gpu.present": "true"}
    if not state:
        return labels
    labels.update(driver_labels(driver))
    labels["nvidia.com/mig.capable"] = "true" if product.get("mig_capable") else "false"
    if sharing is not None and sharing["strategy"] == sharing_mod.MPS:
        if any(g["mig"] for g in state):
            raise PluginError("MPS sharing is not supported for mig devices")
        labels["nvidia.com/mps.capable"] = "true"
    else:
        labels["nvidia.com/mps.capable"] = "false"
    labels["nvidia.com/gpu.mode"] = "compute"

    total = len(state)
    mig_enabled = [g for g in state if g["mig"]] if strategy != "none" else []
    full = [g for g in state if not (g["mig"] and strategy != "none")]
    if mig_enabled:
        labels.update(_full_gpu_labels(product, total, None))
    if full:
        labels.update(_full_gpu_labels(product, total, sharing))
    if strategy == "none":
        return labels
    labels["nvidia.com/mig.strategy"] = strategy
    migs = {}
    for g in mig_enabled:
        for prof, n in g["devices"].items():
            if n > 0:
                migs[prof] = migs.get(prof, 0) + n
    model = model_name(product)
    if strategy == "single":
        if not mig_enabled:
            return labels
        invalid = (any(not any(n > 0 for n in g["devices"].values()) for g in mig_enabled)
                   or bool(full) or len(migs) != 1)
        if invalid:
            labels.update({
                GPU + ".product": "-".join([sanitise(model), "MIG", "INVALID"]),
                GPU + ".count": "0", GPU + ".replicas": "0", GPU + ".sharing-strategy": "",
                GPU + ".memory": "0",
            })
            return labels
        (prof, n), = migs.items()
        labels.update(_base_labels(GPU, n, [model, "MIG", mig_device_name(prof)], sharing))
        labels.update(_mig_attribute_labels(GPU, product, prof))
        return labels
    for prof, n in sorted(migs.items()):
        res = mig_resource_name(prof)
        labels.update(_base_labels(res, n, [model, "MIG", mig_device_name(prof)], sharing))
        labels.update(_mig_attribute_labels(res, product, prof))
    return labels
