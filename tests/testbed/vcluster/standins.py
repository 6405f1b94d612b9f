"""Stand-in CRDs for APIs no served Go module carries, so their schemas cannot be read from the module
cache like the ones of assets.CRD_FILES. Each is a minimal structural schema with only the fields the
collection writes (unknown fields are pruned, as the API server does for any structural schema); the
facts and their upstream sources are in docs/openshift-ai.md, the reasons in docs/testbed.md."""
from __future__ import annotations

_TOLERATIONS = {"type": "array", "items": {"type": "object", "properties": {
    "key": {"type": "string"}, "operator": {"type": "string"}, "value": {"type": "string"},
    "effect": {"type": "string"}, "tolerationSeconds": {"type": "integer", "format": "int64"}}}}
_INT_OR_STRING = {"x-kubernetes-int-or-string": True}


def _crd(group: str, versions: tuple, kind: str, spec: dict, required: list) -> dict:
    """A CRD serving ``versions`` with one schema; the first is the storage version."""
    plural = kind.lower() + "s"
    schema = {"type": "object", "properties": {
        "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
        "spec": {"type": "object", "required": required, "properties": spec}}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}", "labels": {"gpuops.dev/stand-in": "true"}},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"kind": kind, "listKind": kind + "List", "plural": plural,
                               "singular": kind.lower()},
                     "versions": [{"name": version, "served": True, "storage": index == 0,
                                   "schema": {"openAPIV3Schema": schema}}
                                  for index, version in enumerate(versions)]}}


def openshift_ai_crds() -> list:
    """OpenShift AI / Open Data Hub: AcceleratorProfile (dashboard.opendatahub.io/v1) and HardwareProfile
    (infrastructure.opendatahub.io v1, the storage version, and v1alpha1, one schema for both as upstream), with
    the fields roles/openshift_ai sets."""
    accelerator = {"displayName": {"type": "string"}, "enabled": {"type": "boolean"},
                   "identifier": {"type": "string"}, "description": {"type": "string"},
                   "tolerations": _TOLERATIONS}
    identifier = {"type": "object", "required": ["displayName", "identifier", "minCount", "defaultCount"],
                  "properties": {"displayName": {"type": "string"}, "identifier": {"type": "string"},
                                 "resourceType": {"type": "string", "enum": ["CPU", "Memory", "Accelerator"]},
                                 "minCount": _INT_OR_STRING, "maxCount": _INT_OR_STRING,
                                 "defaultCount": _INT_OR_STRING}}
    hardware = {"identifiers": {"type": "array", "items": identifier},
                "scheduling": {"type": "object", "required": ["type"], "properties": {
                    "type": {"type": "string", "enum": ["Queue", "Node"]},
                    "node": {"type": "object", "properties": {
                        "nodeSelector": {"type": "object", "additionalProperties": {"type": "string"}},
                        "tolerations": _TOLERATIONS}}}}}
    return [_crd("dashboard.opendatahub.io", ("v1",), "AcceleratorProfile", accelerator,
                 ["displayName", "enabled", "identifier"]),
            _crd("infrastructure.opendatahub.io", ("v1", "v1alpha1"), "HardwareProfile", hardware, [])]


def stand_in_crds() -> list:
    """Every stand-in CRD the testbed installs next to the real ones."""
    return openshift_ai_crds()
