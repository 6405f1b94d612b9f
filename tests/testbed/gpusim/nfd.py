"""Simulated NFD worker (pure): the feature labels the GPU operator needs.

nfd-worker publishes `feature.node.kubernetes.io/pci-<vendor>.present` for whitelisted PCI
classes (the OpenShift sample CR labels classes 0200/03/12 by vendor -> pci-10de.present for
NVIDIA GPUs), `system-os_release.ID/VERSION_ID(.major/.minor)` and
`kernel-version.full/major/minor/revision`. The operator needs pci-10de.present, os release
ID/VERSION_ID and kernel-version.full (NVIDIA/gpu-operator controllers/state_manager.go).
"""

import re

PREFIX = "feature.node.kubernetes.io/"
PCI_NVIDIA = PREFIX + "pci-10de.present"


def kernel_parts(full):
    m = re.match(r"^(\d+)\.(\d+)\.(\d+)", full or "")
    if not m:
        return None
    return m.group(1), m.group(2), m.group(3)


def nfd_labels(is_gpu_node, os_cfg):
    labels = {}
    if is_gpu_node:
        labels[PCI_NVIDIA] = "true"
    os_id = str(os_cfg.get("id", ""))
    version = str(os_cfg.get("version_id", ""))
    kernel = str(os_cfg.get("kernel", ""))
    if os_id:
        labels[PREFIX + "system-os_release.ID"] = os_id
    if version:
        labels[PREFIX + "system-os_release.VERSION_ID"] = version
        parts = version.split(".")
        labels[PREFIX + "system-os_release.VERSION_ID.major"] = parts[0]
        if len(parts) > 1:
            labels[PREFIX + "system-os_release.VERSION_ID.minor"] = parts[1]
    if kernel:
        labels[PREFIX + "kernel-version.full"] = kernel
        kp = kernel_parts(kernel)
        if kp:
            labels[PREFIX + "kernel-version.major"] = kp[0]
            labels[PREFIX + "kernel-version.minor"] = kp[1]
            labels[PREFIX + "kernel-version.revision"] = kp[2]
    return labels


def label_patch(current_labels, is_gpu_node, os_cfg):
    """Merge patch for the node's labels (adds/updates only, never removes: the testbed CLI
    may set feature labels itself)."""
    desired = nfd_labels(is_gpu_node, os_cfg)
    return {k: v for k, v in desired.items() if current_labels.get(k) != v}
