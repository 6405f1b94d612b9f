"""NVIDIA k8s-device-plugin config file semantics (pure): parse + normalise the sharing part.

Source: NVIDIA/k8s-device-plugin v0.20 api/config/v1/{config,replicas,sharing,resources}.go
(summarised in docs/facts.md). The plugin parses with sigs.k8s.io/yaml (unknown fields ignored), then
DisableResourceNamingInConfig drops `rename` (unless renameByDefault) and non-"all" `devices`.
"""

import re

from gpusim import contract as C

RESOURCE_PREFIX = "nvidia.com"
MAX_RESOURCE_NAME = 63
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


def _devices(value):
    if value is None or value == "all":
        return "all"
    if isinstance(value, str):
        raise SharingConfigError("devices set as '%s' but the only valid string input is 'all'"
                                 % value)
    if isinstance(value, bool):
        raise SharingConfigError("unrecognized type for devices spec: %r" % (value,))
    if isinstance(value, int):
        if value <= 0:
            raise SharingConfigError("devices set as '%d' but a count of devices must be > 0"
                                     % value)
        return value
    if isinstance(value, list):
        return list(value)
    raise SharingConfigError("unrecognized type for devices spec: %r" % (value,))


def _replicated(section, label):
    if not isinstance(section, dict):
        raise SharingConfigError("sharing.%s must be a mapping" % label)
    rbd = section.get("renameByDefault", False)
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
        _devices(r.get("devices"))
        if "replicas" not in r:
            raise SharingConfigError("no replicas specified")
        replicas = r["replicas"]
        if not isinstance(replicas, int) or isinstance(replicas, bool):
            raise SharingConfigError("replicas must be an integer: %r" % (replicas,))
        if replicas < 2:
            raise SharingConfigError("number of replicas must be >= 2")
        if r.get("rename") is not None:
            resource_name(r["rename"])
        # DisableResourceNamingInConfig: rename only via renameByDefault, devices always "all"
        rename = name + ".shared" if rbd else ""
        resources.append({"name": name, "replicas": replicas, "rename": rename})
    return {"rename_by_default": rbd, "fail": frgo, "resources": resources}


def parse(text):
    """Parse the text of one device-plugin config (one ConfigMap key) -> normalised dict.

    Raises SharingConfigError where the real plugin would fail to start.
    """
    doc = C.yaml_mapping(text if text is not None else "", SharingConfigError,
                         "unable to parse config file: unmarshal error")
    version = doc.get("version") or "v1"
    if version != "v1":
        raise SharingConfigError("unable to parse config file: unknown version: %s" % version)
    sharing = doc.get("sharing") or {}
    if not isinstance(sharing, dict):
        raise SharingConfigError("sharing must be a mapping")
    ts = _replicated(sharing["timeSlicing"], "timeSlicing") if sharing.get("timeSlicing") \
        is not None else None
    if "timeSlicing" in sharing and sharing["timeSlicing"] == {}:
        raise SharingConfigError("no resources specified")
    mps = _replicated(sharing["mps"], "mps") if sharing.get("mps") is not None else None
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
