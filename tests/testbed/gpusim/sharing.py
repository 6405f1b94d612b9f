"""NVIDIA k8s-device-plugin config file semantics (pure): parse + normalise the sharing part.

Source: NVIDIA/k8s-device-plugin v0.20 api/config/v1/{config,replicas,sharing,resources}.go
(summarised in docs/facts.md). The plugin parses with sigs.k8s.io/yaml (unknown fields ignored), then
DisableResourceNamingInConfig drops `rename` (unless renameByDefault) and non-"all" `devices`.

Decoding details kept here (the simulator's own reading, independent of the collection's validator):
keys of Config and Sharing match case-insensitively (encoding/json; with two spellings the last in
sorted order wins), keys inside a replicated block match exactly; an explicit null is absent for
`sharing.mps` (a pointer) but reaches the decoders of `timeSlicing`, `rename` and `devices`, which
fail on it; integers are Go int (int64), device indexes uint64.
"""

import re

from gpusim import contract as C

RESOURCE_PREFIX = "nvidia.com"
GO_INT_MAX = 2 ** 63 - 1
GO_UINT64_MAX = 2 ** 64 - 1
MAX_RESOURCE_NAME = 63
_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_DEVICE_REF = re.compile(r"^([0-9]+|[0-9]+:[0-9]+|GPU-%s|MIG-%s|MIG-GPU-%s/[0-9]+/[0-9]+)$" % (_UUID, _UUID, _UUID))
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")

NONE = "none"
TIME_SLICING = "time-slicing"
MPS = "mps"


class SharingConfigError(ValueError):
    pass


def empty_config():
    return {"strategy": NONE, "resources": [], "rename_by_default": False,
            "fail_requests_greater_than_one": False}


def resource_name(raw):
    if raw is None:
        raw = ""  # ResourceName.UnmarshalJSON reads null as the empty string
    if not isinstance(raw, str):
        raise SharingConfigError("resource name must be a string: %r" % (raw,))
    name = raw if raw.startswith(RESOURCE_PREFIX + "/") else RESOURCE_PREFIX + "/" + raw
    if len(name) > MAX_RESOURCE_NAME:
        raise SharingConfigError("fully-qualified resource name must be %d characters or less: %s"
                                 % (MAX_RESOURCE_NAME, name))
    short = name.split("/", 1)[1]
    if len(short) > 253 or not _DNS_SUBDOMAIN.match(short):
        raise SharingConfigError("incorrect format for resource name '%s'" % name)
    return name


def _go_int(value, what):
    """A JSON number decoded into a Go int: refused past int64."""
    if value > GO_INT_MAX or value < -GO_INT_MAX - 1:
        raise SharingConfigError("json: cannot unmarshal number %d into Go struct field %s of type int"
                                 % (value, what))
    return value


def _device_ref(item):
    """replicas.go: a uint64 index, or a GPU index / MIG index / UUID string."""
    if isinstance(item, int) and not isinstance(item, bool):
        if 0 <= item <= GO_UINT64_MAX:
            return str(item)
    elif isinstance(item, str) and _DEVICE_REF.match(item):
        numbers = item.split("/")[1:] if item.startswith("MIG-GPU-") else item.split(":")
        if all(int(n) <= GO_UINT64_MAX for n in numbers if n.isdigit()):
            return item
    raise SharingConfigError("unsupported type for device in devices list: %r" % (item,))


def _devices(value):
    if value is None:
        value = ""  # an explicit null reaches ReplicatedDevices.UnmarshalJSON as the string ''
    if value == "all":
        return "all"
    if isinstance(value, str):
        raise SharingConfigError("devices set as '%s' but the only valid string input is 'all'"
                                 % value)
    if isinstance(value, bool):
        raise SharingConfigError("unrecognized type for devices spec: %r" % (value,))
    if isinstance(value, int):
        if value > GO_INT_MAX:
            raise SharingConfigError("unrecognized type for devices spec: %d" % value)
        if value <= 0:
            raise SharingConfigError("devices set as '%d' but a count of devices must be > 0"
                                     % value)
        return value
    if isinstance(value, list):
        return [_device_ref(item) for item in value]
    raise SharingConfigError("unrecognized type for devices spec: %r" % (value,))


def _replicated(section, label):
    if not isinstance(section, dict):
        raise SharingConfigError("sharing.%s must be a mapping" % label)
    rbd = section.get("renameByDefault")
    rbd = False if rbd is None else rbd  # a null decodes into the bool as a no-op
    if not isinstance(rbd, bool):
        raise SharingConfigError("sharing.%s.renameByDefault must be a boolean" % label)
    frgo = section.get("failRequestsGreaterThanOne")
    if frgo is not None and not isinstance(frgo, bool):
        raise SharingConfigError("sharing.%s.failRequestsGreaterThanOne must be a boolean" % label)
    if "resources" not in section:
        raise SharingConfigError("no resources specified")
    raw = section.get("resources")
    if raw is None:
        raw = []
    if not isinstance(raw, list):
        raise SharingConfigError("sharing.%s.resources must be a list" % label)
    if not raw:
        raise SharingConfigError("no resources specified")
    resources = []
    for r in raw:
        if not isinstance(r, dict):
            raise SharingConfigError("sharing.%s.resources entries must be mappings" % label)
        if "name" not in r:
            raise SharingConfigError("no resource name specified")
        name = resource_name(r["name"])
        _devices(r.get("devices", "all"))
        if "replicas" not in r:
            raise SharingConfigError("no replicas specified")
        replicas = r["replicas"] if r["replicas"] is not None else 0  # null: Go's zero value
        if not isinstance(replicas, int) or isinstance(replicas, bool):
            raise SharingConfigError("replicas must be an integer: %r" % (replicas,))
        if _go_int(replicas, "replicas") < 2:
            raise SharingConfigError("number of replicas must be >= 2")
        if "rename" in r:
            resource_name(r["rename"])
        # DisableResourceNamingInConfig: rename only via renameByDefault, devices always "all"
        rename = name + ".shared" if rbd else ""
        resources.append({"name": name, "replicas": replicas, "rename": rename})
    return {"rename_by_default": rbd, "fail": frgo, "resources": resources}


def _field_key(mapping, name):
    """The key encoding/json decodes into struct field ``name``: case-insensitive, and of two
    spellings the one that sorts last (sigs.k8s.io/yaml emits JSON object keys sorted)."""
    keys = sorted(k for k in mapping if isinstance(k, str) and k.lower() == name.lower())
    return keys[-1] if keys else None


def _field(mapping, name):
    key = _field_key(mapping, name)
    return mapping[key] if key is not None else None


def parse(text):
    """Parse the text of one device-plugin config (one ConfigMap key) -> normalised dict.

    Raises SharingConfigError where the real plugin would fail to start.
    """
    doc = C.yaml_mapping(text if text is not None else "", SharingConfigError,
                         "unable to parse config file: unmarshal error")
    version = _field(doc, "version") or "v1"
    if version != "v1":
        raise SharingConfigError("unable to parse config file: unknown version: %s" % version)
    sharing = _field(doc, "sharing") or {}
    if not isinstance(sharing, dict):
        raise SharingConfigError("sharing must be a mapping")
    ts_key = _field_key(sharing, "timeSlicing")
    if ts_key is not None and sharing[ts_key] is None:
        raise SharingConfigError("no resources specified")  # a struct value: its decoder gets the null
    ts = _replicated(sharing[ts_key], "timeSlicing") if ts_key is not None else None
    mps = _replicated(_field(sharing, "mps"), "mps") if _field(sharing, "mps") is not None else None
    out = empty_config()
    # Sharing.SharingStrategy(): mps if any mps replicas > 1, else time-slicing if replicated
    # Sharing.ReplicatedResources(): the mps section whenever it is present
    active = mps if mps is not None else ts
    if mps is not None and mps["resources"]:
        out["strategy"] = MPS
    elif ts is not None and ts["resources"]:
        out["strategy"] = TIME_SLICING
    if active is not None:
        out["resources"] = active["resources"]
        out["rename_by_default"] = active["rename_by_default"]
        fail = active["fail"]
        if mps is not None and fail is None:
            fail = True  # NewConfig forces failRequestsGreaterThanOne for MPS when unset
        out["fail_requests_greater_than_one"] = bool(fail)
    return out
