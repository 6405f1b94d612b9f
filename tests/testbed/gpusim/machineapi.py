"""Simulated OpenShift machine-api (pure part): MachineSet -> Machines -> KWOK Nodes.

* spec.replicas Machines named <machineset>-<5 chars>, labelled from spec.template.metadata.labels
  (+ machine.openshift.io/cluster-api-machineset), owned by the MachineSet;
* each Machine gets a Node of the same name managed by KWOK (annotation kwok.x-k8s.io/node=fake,
  providerID kwok://<name>), carrying spec.template.spec.metadata.labels and spec.template.spec.taints,
  annotation machine.openshift.io/machine=<ns>/<machine> (as the nodelink controller sets);
* the GPUs of the Node come from (first match): MachineSet annotations gpusim.gpuops.dev/product
  (+ gpusim.gpuops.dev/gpus), the instance type in providerSpec.value (instanceType | vmSize |
  machineType) via simulation.machine_api.instance_types, or the scale-from-zero annotation
  machine.openshift.io/GPU (count) with a product from the label nvidia.com/gpu.product on the
  template (or the default product).
* scale down deletes Machines annotated machine.openshift.io/delete-machine first, then the newest.
"""

import random
import string

from gpusim import contract as C

MS_LABEL = "machine.openshift.io/cluster-api-machineset"
MACHINE_ANN = "machine.openshift.io/machine"
DELETE_ANN = "machine.openshift.io/delete-machine"
GPU_ANN = "machine.openshift.io/GPU"
VCPU_ANN = "machine.openshift.io/vCPU"
MEM_ANN = "machine.openshift.io/memoryMb"
DEFAULT_GPU_PRODUCT = "NVIDIA-A100-SXM4-40GB"


def machine_name(ms_name, rng=random):
    suffix = "".join(rng.choice(string.ascii_lowercase + string.digits) for _i in range(5))
    return "%s-%s" % (ms_name, suffix)


def instance_type(spec):
    value = (((spec or {}).get("providerSpec") or {}).get("value")) or {}
    for key in ("instanceType", "vmSize", "machineType", "flavor"):
        if value.get(key):
            return str(value[key])
    return None


def hardware(ms, cfg_ma, default_gpus=8):
    """{"product", "gpus", "cpu", "memory_mb"} for nodes of this MachineSet."""
    md = ms.get("metadata") or {}
    ann = md.get("annotations") or {}
    tmpl = ((ms.get("spec") or {}).get("template") or {})
    tlabels = ((((tmpl.get("spec") or {}).get("metadata")) or {}).get("labels")) or {}
    itype = instance_type(tmpl.get("spec") or {})
    known = (cfg_ma.get("instance_types") or {}).get(itype) or {} if itype else {}
    product = ann.get(C.ANN_PRODUCT) or known.get("product")
    gpus = ann.get(C.ANN_GPUS)
    if gpus is None and known.get("gpus") is not None:
        gpus = known["gpus"]
    if gpus is None and ann.get(GPU_ANN) is not None:
        gpus = ann[GPU_ANN]
    try:
        gpus = int(gpus) if gpus not in (None, "") else (default_gpus if product else 0)
    except ValueError:
        gpus = 0
    if gpus > 0 and not product:
        product = tlabels.get("nvidia.com/gpu.product") or DEFAULT_GPU_PRODUCT
    cpu = ann.get(VCPU_ANN) or known.get("cpu") or cfg_ma.get("default_cpu", 16)
    mem = ann.get(MEM_ANN) or known.get("memory_mb") or cfg_ma.get("default_memory_mb", 65536)
    return {"product": product if gpus > 0 else None, "gpus": gpus, "cpu": int(cpu),
            "memory_mb": int(mem)}


def machine_object(ms, name):
    md = ms["metadata"]
    tmpl = (ms.get("spec") or {}).get("template") or {}
    labels = dict(((tmpl.get("metadata") or {}).get("labels")) or {})
    labels[MS_LABEL] = md["name"]
    tspec = tmpl.get("spec") or {}
    spec = {"metadata": dict(tspec.get("metadata") or {}),
            "providerSpec": tspec.get("providerSpec") or {}}
    if tspec.get("taints"):
        spec["taints"] = list(tspec["taints"])
    return {
        "apiVersion": "machine.openshift.io/v1beta1", "kind": "Machine",
        "metadata": {"name": name, "namespace": md["namespace"], "labels": labels,
                     "annotations": dict(((tmpl.get("metadata") or {}).get("annotations")) or {}),
                     "ownerReferences": [{"apiVersion": "machine.openshift.io/v1beta1",
                                          "kind": "MachineSet", "name": md["name"],
                                          "uid": md.get("uid"), "controller": True,
                                          "blockOwnerDeletion": True}]},
        "spec": spec,
    }


def node_object(machine, hw, kubelet_version, cfg_ma):
    md = machine["metadata"]
    name = md["name"]
    spec = machine.get("spec") or {}
    labels = {
        "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
        "beta.kubernetes.io/arch": "amd64", "node-role.kubernetes.io/worker": "",
        "type": "kwok",
    }
    itype = instance_type(spec)
    if itype:
        labels["node.kubernetes.io/instance-type"] = itype
        labels["beta.kubernetes.io/instance-type"] = itype
    labels.update({k: str(v) for k, v in (((spec.get("metadata") or {}).get("labels")) or {}).items()})
    ann = {C.ANN_KWOK: "fake", MACHINE_ANN: "%s/%s" % (md["namespace"], name),
           "node.alpha.kubernetes.io/ttl": "0"}
    if hw.get("product") and hw.get("gpus"):
        ann[C.ANN_PRODUCT] = hw["product"]
        ann[C.ANN_GPUS] = str(hw["gpus"])
    res = {"cpu": str(hw["cpu"]), "memory": "%dMi" % hw["memory_mb"], "pods": "250",
           "ephemeral-storage": "500Gi"}
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": labels, "annotations": ann},
        "spec": {"providerID": "kwok://%s" % name, "taints": list(spec.get("taints") or [])},
        "status": {
            "capacity": dict(res), "allocatable": dict(res),
            "nodeInfo": {"architecture": "amd64", "bootID": "",
                         "containerRuntimeVersion": cfg_ma.get("container_runtime_version",
                                                               "containerd://1.7.27"),
                         "kernelVersion": cfg_ma.get("kernel_version",
                                                     "5.14.0-427.50.1.el9_4.x86_64"),
                         "kubeProxyVersion": kubelet_version, "kubeletVersion": kubelet_version,
                         "machineID": "", "operatingSystem": "linux",
                         "osImage": cfg_ma.get("os_image", "Red Hat Enterprise Linux CoreOS"),
                         "systemUUID": ""},
        },
    }


def to_delete(machines, count):
    """Which machines a scale-down removes: delete-annotated first, then the newest."""
    def order(m):
        md = m["metadata"]
        flagged = DELETE_ANN in (md.get("annotations") or {})
        return (0 if flagged else 1, _neg_ts(md.get("creationTimestamp") or ""), md["name"])
    return sorted(machines, key=order)[:max(0, count)]


def _neg_ts(ts):
    # newest first: invert the sortable ISO timestamp
    return "".join(chr(0x10FFFF - ord(c)) for c in ts)


def machineset_status(ms, machines, ready_names):
    n = len(machines)
    ready = sum(1 for m in machines if m["metadata"]["name"] in ready_names)
    return {"replicas": n, "fullyLabeledReplicas": n, "readyReplicas": ready,
            "availableReplicas": ready,
            "observedGeneration": (ms.get("metadata") or {}).get("generation", 1)}


def machine_status(phase, node_name=None, node_uid=None, now=""):
    st = {"phase": phase, "lastUpdated": now}
    if node_name:
        st["nodeRef"] = {"kind": "Node", "name": node_name, "uid": node_uid}
        st["addresses"] = [{"type": "InternalIP", "address": "127.0.0.1"},
                           {"type": "Hostname", "address": node_name},
                           {"type": "InternalDNS", "address": node_name}]
    return st
