"""Stand-in CRDs for APIs no served Go module carries, so their schemas cannot be read from the module
cache like the ones of assets.CRD_FILES. Each is a minimal structural schema with only the fields the
collection writes (unknown fields are pruned, as the API server does for any structural schema); the
facts and their upstream sources are in docs/openshift-ai.md and docs/facts.md ("The GPU operator's GPUCluster"),
the reasons in docs/testbed.md."""
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


_STR = {"type": "string"}
_ENV = {"type": "array", "items": {"type": "object", "required": ["name"],
                                   "properties": {"name": _STR, "value": _STR}}}
_RESOURCES = {"type": "object", "properties": {
    key: {"type": "object", "additionalProperties": _INT_OR_STRING} for key in ("limits", "requests")}}
_KUBELET_PLUGIN = {"type": "object", "properties": {
    "env": _ENV, "resources": _RESOURCES,
    "healthcheck": {"type": "object", "properties": {
        "enabled": {"type": "boolean", "default": True},
        "port": {"type": "integer", "format": "int32", "minimum": 1, "maximum": 65535}}}}}


def _component(extra=None) -> dict:
    """An operand block of the GPU operator's v1 types (DCGMSpec, DCGMExporterSpec): the fields the dra role sets
    and the image fields; anything else is kept as given (not checked)."""
    props = {"enabled": {"type": "boolean"}, "repository": _STR, "image": _STR, "version": _STR,
             "imagePullPolicy": _STR, "imagePullSecrets": {"type": "array", "items": _STR}}
    props.update(extra or {})
    return {"type": "object", "properties": props, "x-kubernetes-preserve-unknown-fields": True}


def gpucluster_crd() -> dict:
    """GPU operator v26.7.0's GPUCluster (nvidia.com/v1alpha1, cluster-scoped singleton ``gpu-cluster``, status
    subresource), written from its Go type (api/nvidia/v1alpha1/gpucluster_types.go): spec.draDriver (required),
    dcgm, dcgmExporter, hostPaths, daemonsets (kept as given); status.state (ready, notReady, disabled),
    namespace, conditions. Installed only when the operator module carries no CRD of its own."""
    dra_driver = {"type": "object", "properties": {
        "repository": _STR, "image": {"type": "string", "pattern": "^[a-zA-Z0-9\\-]+$"}, "version": _STR,
        "imagePullPolicy": _STR, "imagePullSecrets": {"type": "array", "items": _STR},
        "featureGates": {"type": "object", "additionalProperties": {"type": "boolean"}},
        "gpus": {"type": "object", "properties": {"kubeletPlugin": _KUBELET_PLUGIN}},
        "computeDomains": {"type": "object", "properties": {
            "enabled": {"type": "boolean", "default": True},
            "controller": {"type": "object", "properties": {"env": _ENV, "resources": _RESOURCES}},
            "kubeletPlugin": _KUBELET_PLUGIN}}}}
    spec = {"draDriver": dra_driver, "dcgm": _component(), "dcgmExporter": _component(),
            "hostPaths": {"type": "object", "properties": {
                "driverInstallDir": _STR, "kubeletRootDir": {"type": "string", "default": "/var/lib/kubelet"}}},
            "daemonsets": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    crd = _crd("nvidia.com", ("v1alpha1",), "GPUCluster", spec, ["draDriver"])
    crd["spec"]["scope"] = "Cluster"
    crd["spec"]["names"]["shortNames"] = ["gc"]
    version = crd["spec"]["versions"][0]
    version["subresources"] = {"status": {}}
    version["additionalPrinterColumns"] = [
        {"name": "Status", "type": "string", "jsonPath": ".status.state"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]
    schema = version["schema"]["openAPIV3Schema"]
    schema["properties"]["status"] = {"type": "object", "required": ["state"], "properties": {
        "state": {"type": "string", "enum": ["ready", "notReady", "disabled"]}, "namespace": _STR,
        "conditions": {"type": "array", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}
    schema["x-kubernetes-validations"] = [{"rule": "self.metadata.name == 'gpu-cluster'",
                                           "message": "GPUCluster is a singleton, metadata.name must be 'gpu-cluster'"}]
    return crd


def stand_in_crds(installed=()) -> list:
    """Every stand-in CRD the testbed installs next to the real ones (``installed``: the names of the real CRDs;
    the GPUCluster stand-in only when the operator module has none)."""
    crds = openshift_ai_crds()
    if "gpuclusters.nvidia.com" not in installed:
        crds.append(gpucluster_crd())
    return crds
