"""mig-parted semantics (pure): config file parsing, per-GPU selection, generated configs, apply.

Sources: NVIDIA/mig-parted api/spec/v1/spec.go (file format),
cmd/nvidia-mig-parted/assert/assert.go (WalkSelectedMigConfigForEachGPU),
cmd/nvidia-mig-parted/apply/config.go (apply), pkg/mig/config/config.go (SetMigConfig: on total
failure the GPU is cleared), pkg/mig/builder (v26.3+ generated config).

Applied MIG state of a node = list with one entry per GPU: {"mig": bool, "devices": {name: n}}.
"""

import copy

import yaml

from gpusim import contract as C
from gpusim import placement

VERSION = "v1"
SPEC_KEYS = {"version", "mig-configs"}
ENTRY_KEYS = {"device-filter", "devices", "mig-enabled", "mig-devices"}


class MigPartedError(ValueError):
    pass


# ---------------------------------------------------------------------------------------------
# parsing


def parse_spec(text):
    """Parse a mig-parted config.yaml the way spec.go does; raise MigPartedError on any error."""
    doc = C.yaml_mapping(text, MigPartedError, "error parsing config file")
    if "version" not in doc and doc:
        raise MigPartedError("unable to parse with missing 'version' field")
    if doc.get("version") != VERSION:
        raise MigPartedError("unknown version: %s" % doc.get("version"))
    for key in doc:
        if key not in SPEC_KEYS:
            raise MigPartedError("unexpected field: %s" % key)
    configs = doc.get("mig-configs")
    if "mig-configs" in doc:
        if not isinstance(configs, dict) or not configs:
            raise MigPartedError("at least one entry in 'mig-configs' is required")
    configs = configs or {}
    out = {}
    for name, entries in configs.items():
        if not isinstance(entries, list) or not entries:
            raise MigPartedError("at least one entry in '%s' is required" % name)
        out[str(name)] = [parse_entry(e) for e in entries]
    return {"version": VERSION, "mig-configs": out}


def parse_entry(entry):
    if not isinstance(entry, dict):
        raise MigPartedError("mig config entry must be a mapping")
    for req in ("devices", "mig-enabled"):
        if req not in entry:
            raise MigPartedError("missing required field: %s" % req)
    out = {}
    for key, value in entry.items():
        if key not in ENTRY_KEYS:
            raise MigPartedError("unexpected field: %s" % key)
        if key == "device-filter":
            if isinstance(value, str):
                out[key] = [value]
            elif isinstance(value, list) and all(isinstance(v, str) for v in value):
                out[key] = list(value)
            else:
                raise MigPartedError("invalid device-filter: %r" % (value,))
        elif key == "devices":
            if isinstance(value, str):
                if value != "all":
                    raise MigPartedError("invalid string input for 'devices': %s" % value)
                out[key] = "all"
            elif isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool)
                                                 for v in value):
                out[key] = list(value)
            else:
                raise MigPartedError("invalid value for 'devices': %r" % (value,))
        elif key == "mig-enabled":
            if not isinstance(value, bool):
                raise MigPartedError("invalid value for 'mig-enabled': %r" % (value,))
            out[key] = value
        elif key == "mig-devices":
            out[key] = parse_mig_devices(value)
    if out["mig-enabled"] and "mig-devices" not in out:
        raise MigPartedError("missing required field 'mig-devices' when 'mig-enabled' is true")
    if not out["mig-enabled"] and out.get("mig-devices"):
        raise MigPartedError("MIG devices included when 'mig-enabled' is false")
    return out


def parse_mig_devices(value):
    """The 'mig-devices' field of an entry: profile -> count, checked as mig-parted checks it."""
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise MigPartedError("invalid value for 'mig-devices': %r" % (value,))
    devices = {}
    for prof, count in value.items():
        try:
            placement.parse_profile(str(prof))
        except placement.ProfileError as exc:
            raise MigPartedError("error validating values in 'mig-devices' field: "
                                 "invalid format for '%s': %s" % (prof, exc))
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise MigPartedError("error validating values in 'mig-devices' field: "
                                 "invalid count for '%s': %r" % (prof, count))
        devices[str(prof)] = count
    if devices and not any(devices.values()):
        raise MigPartedError("error validating values in 'mig-devices' field: "
                             "all counts for all MigProfiles are 0")
    return devices


# ---------------------------------------------------------------------------------------------
# selection


def packed_device_ids(product):
    """Packed device<<16|vendor ids (mig-parted device-filter form) of the product's GPUs."""
    ids = [product.get("pci_device_id")] + list(product.get("alt_pci_device_ids") or [])
    out = []
    for dev in ids:
        if dev is None or dev == "":
            continue
        value = int(dev, 16) if isinstance(dev, str) else int(dev)
        out.append(((value & 0xFFFF) << 16) | 0x10DE)
    return out


def _filter_matches(filters, product):
    """MigConfigSpec.MatchesDeviceFilter: empty filter = every GPU."""
    if not filters:
        return True
    mine = packed_device_ids(product)
    for f in filters:
        if ":" in f:
            # We do not simulate PCI subsystem ids: a filter naming one never matches.
            continue
        try:
            if int(f, 0) in mine:
                return True
        except ValueError:
            continue
    return False


def select(spec, config_name):
    """The entries of the named config; raise like `mig-parted assert --valid-config`."""
    configs = spec.get("mig-configs") or {}
    if config_name not in configs:
        raise MigPartedError("selected mig-config does not exist: %s" % config_name)
    return configs[config_name]


# ---------------------------------------------------------------------------------------------
# state


def initial_state(gpus):
    return [{"mig": False, "devices": {}} for _ in range(gpus)]


def normalize_state(state, gpus):
    """A well-formed state list of length gpus (tolerates missing/short annotations)."""
    out = []
    for i in range(gpus):
        entry = state[i] if state and i < len(state) and isinstance(state[i], dict) else {}
        devices = {str(k): int(v) for k, v in (entry.get("devices") or {}).items() if int(v) > 0}
        out.append({"mig": bool(entry.get("mig")), "devices": devices})
    return out


def _walk(entries, product, ngpus):
    """(entry, gpu index) pairs in WalkSelectedMigConfigForEachGPU order (entry-major)."""
    for entry in entries:
        if not _filter_matches(entry.get("device-filter"), product):
            continue
        for i in range(ngpus):
            if entry["devices"] != "all" and i not in entry["devices"]:
                continue
            yield entry, i


def apply_config(entries, product, current):
    """Simulate `nvidia-mig-parted apply --mode-only` then `apply` of the selected entries.

    Returns (new_state, error). On error the state reflects what NVML left behind: the mode
    pass ran on every GPU; in the config pass the entries before the failing GPU were applied,
    the failing GPU was cleared (SetMigConfig clears it after all orderings failed) and later
    GPUs kept their instances.
    """
    state = copy.deepcopy(current)
    capable = bool(product.get("mig_capable"))
    # pass 1: MIG mode
    for entry, i in _walk(entries, product, len(state)):
        enabled = entry["mig-enabled"]
        if not capable:
            if entry["devices"] == "all" or not enabled:
                continue
            return state, "GPU %d: cannot set MIG mode on non MIG-capable GPU" % i
        if state[i]["mig"] != enabled:
            state[i] = {"mig": enabled, "devices": {}}
    # pass 2: MIG devices
    for entry, i in _walk(entries, product, len(state)):
        if not capable or not entry["mig-enabled"]:
            continue
        wanted = {k: v for k, v in (entry.get("mig-devices") or {}).items() if v > 0}
        try:
            resolved = {}
            for name, count in wanted.items():
                rn = placement.resolve_profile(product, name)
                resolved[rn] = resolved.get(rn, 0) + count
        except placement.ProfileError as exc:
            state[i] = {"mig": True, "devices": {}}
            return state, "GPU %d: error setting MIGConfig: %s" % (i, exc)
        if resolved == state[i]["devices"]:
            continue
        _placed, err = placement.create_instances(product, resolved)
        if err is not None:
            state[i] = {"mig": True, "devices": {}}
            return state, "GPU %d: error setting MIGConfig: %s" % (i, err)
        state[i] = {"mig": True, "devices": resolved}
    return state, None


# ---------------------------------------------------------------------------------------------
# generated config (mig-parted pkg/mig/builder, used by mig-manager v26.3+ when no custom
# config is named and the operator's default ConfigMap is absent)

_BALANCED = {7: {1: 2, 2: 1, 3: 1}, 4: {1: 2, 2: 1}}


def normalize_profile_name(name):
    return name.replace("+", ".")


def generated_spec(product):
    configs = {
        "all-disabled": [{"devices": "all", "mig-enabled": False}],
        "all-enabled": [{"devices": "all", "mig-enabled": True, "mig-devices": {}}],
    }
    if not product.get("mig_capable") or not product.get("profiles"):
        return {"version": VERSION, "mig-configs": configs}
    base = {}
    total = 0
    for name, prof in product["profiles"].items():
        c, g, _gb, attrs, neg = placement.parse_profile(name)
        if c < g:
            continue
        if attrs or neg:
            continue
        total = max(total, g)
        if g < 1 or g > 3:
            continue
        if g not in base or int(prof["max"]) > int(product["profiles"][base[g]]["max"]):
            base[g] = name
    formula = _BALANCED.get(total)
    if formula and all(g in base for g in formula):
        configs["all-balanced"] = [{"devices": "all", "mig-enabled": True,
                                    "mig-devices": {base[g]: n for g, n in formula.items()}}]
    for name in sorted(product["profiles"]):
        c, g, _gb, _a, _n = placement.parse_profile(name)
        if c < g:
            continue
        configs["all-%s" % normalize_profile_name(name)] = [{
            "devices": "all", "mig-enabled": True,
            "mig-devices": {name: int(product["profiles"][name]["max"])}}]
    return {"version": VERSION, "mig-configs": configs}


def generated_yaml(product):
    return yaml.safe_dump(generated_spec(product), sort_keys=True)
