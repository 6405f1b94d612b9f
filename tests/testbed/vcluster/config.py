"""The cluster config file (configs/*.yaml) and the Node objects it asks for."""
from __future__ import annotations

import yaml

from gpusim.contract import ANN_GPUS, ANN_KWOK, ANN_PRODUCT

from .common import GROUP_LABEL, MANAGED_LABEL, die

DEFAULT_PRODUCT = "NVIDIA-A100-SXM4-40GB"
NODE_DEFAULTS = {
    "cpu": "96", "memory": "1Ti", "pods": "250", "ephemeral_storage": "2Ti",
    "container_runtime_version": "containerd://1.7.27",
    "kernel_version": "5.14.0-427.50.1.el9_4.x86_64",
    "os_image": "Red Hat Enterprise Linux CoreOS 418.94.202501221327-0", "architecture": "amd64",
    "labels": {}, "annotations": {}, "taints": [],
}


def load_config(path: str, args) -> dict:
    """The config file with the command-line overrides (--nodes, --no-gpu-operator, ...)."""
    with open(path) as f:
        cfg = yaml.safe_load(f) or {}
    for key in ("cluster", "node_defaults"):
        cfg.setdefault(key, {})
    cfg.setdefault("node_groups", [])
    cfg.setdefault("simulation", {})
    if getattr(args, "nodes", None) is not None:
        cfg["node_groups"] = [{
            "name": args.group_name or "gpu",
            "count": args.nodes,
            "gpu_product": args.gpu or DEFAULT_PRODUCT,
            "gpus_per_node": 8 if args.gpus_per_node is None else args.gpus_per_node,
        }]
    if getattr(args, "no_gpu_operator", False):
        cfg["cluster"]["gpu_operator"] = False
    if getattr(args, "no_gpusim", False):
        cfg["cluster"]["gpusim"] = False
    check_groups(path, cfg["node_groups"])
    return cfg


def check_groups(path: str, groups: list) -> None:
    names = set()
    for g in groups:
        if not g.get("name"):
            die(f"{path}: every node group needs a name")
        if g["name"] in names:
            die(f"{path}: duplicate node group {g['name']!r}")
        names.add(g["name"])
        if int(g.get("count", 0)) < 0:
            die(f"{path}: node group {g['name']!r}: count must be >= 0")


def desired_nodes(cfg: dict, k8s_version: str) -> dict:
    """{name: Node object} for every node of every node group (node_defaults under each group)."""
    nodes = {}
    for g in cfg["node_groups"]:
        spec = group_spec(cfg, g)
        for i in range(int(g.get("count", 0))):
            name = f"{g['name']}-{i}"
            nodes[name] = node_object(name, g["name"], spec, k8s_version)
    return nodes


def group_spec(cfg: dict, g: dict) -> dict:
    """The node spec of node group ``g``: node_defaults with the group's keys over them."""
    d = dict(NODE_DEFAULTS)
    d.update(cfg.get("node_defaults") or {})
    spec = dict(d)
    spec.update({k: v for k, v in g.items() if k not in ("labels", "annotations", "taints")})
    spec["labels"] = {**(d.get("labels") or {}), **(g.get("labels") or {})}
    spec["annotations"] = {**(d.get("annotations") or {}), **(g.get("annotations") or {})}
    spec["taints"] = list(g["taints"]) if "taints" in g else list(d.get("taints") or [])
    return spec


def node_object(name: str, group: str, spec: dict, k8s_version: str) -> dict:
    """One KWOK-managed Node of ``group``; the GPU annotations tell gpusim what hardware it has."""
    arch = spec["architecture"]
    labels = {
        "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": arch,
        "beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": arch,
        "node-role.kubernetes.io/worker": "", "type": "kwok",
        MANAGED_LABEL: "true", GROUP_LABEL: group,
    }
    labels.update({k: str(v) for k, v in spec["labels"].items()})
    annotations = {ANN_KWOK: "fake", "node.alpha.kubernetes.io/ttl": "0"}
    gpus = int(spec.get("gpus_per_node", 0) or 0)
    if gpus:
        annotations[ANN_PRODUCT] = str(spec.get("gpu_product", DEFAULT_PRODUCT))
        annotations[ANN_GPUS] = str(gpus)
    annotations.update({k: str(v) for k, v in spec["annotations"].items()})
    res = {"cpu": str(spec["cpu"]), "memory": str(spec["memory"]), "pods": str(spec["pods"]),
           "ephemeral-storage": str(spec["ephemeral_storage"])}
    node_info = {
        "architecture": arch, "bootID": "", "containerRuntimeVersion": spec["container_runtime_version"],
        "kernelVersion": spec["kernel_version"], "kubeProxyVersion": k8s_version,
        "kubeletVersion": k8s_version, "machineID": "", "operatingSystem": "linux",
        "osImage": spec["os_image"], "systemUUID": "",
    }
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": labels, "annotations": annotations},
        "spec": {"providerID": f"kwok://{name}", "taints": spec["taints"]},
        "status": {"capacity": dict(res), "allocatable": dict(res), "nodeInfo": node_info},
    }
