"""NVIDIA DRA kubelet plugin (driver gpu.nvidia.com): the ResourceSlice of every node it runs on.

A node is served while a Running pod of the driver's kubelet-plugin DaemonSet (label
``nvidia-dra-driver-gpu-component=kubelet-plugin``) is on it, so whatever installs the driver (its chart's
node affinity, tolerations, node selectors) decides placement, as on a real cluster. The slice follows the
node's GPUs and the MIG layout the simulated MIG manager applied (``gpusim.dra``); when the pod goes, the
node's slices go. Slices of a deleted node go with it (the Node owns them; the garbage collector deletes them).
While the GPU operator's GPUCluster is active (gpusim/gpucluster.py), the plugin the operator deploys also serves
every node whose ``nvidia.com/gpu.deploy.dra-driver`` is ``true``, without a pod: the operator's DaemonSet is not
simulated.
With ``simulation.dra_plugin_start_seconds`` the plugin publishes a node's slice only that many seconds after it
saw its pod Running (a timer per node: the work queue's delayed add), the stack-switch time of a cutover.
"""

import time

from gpusim import contract as C
from gpusim import dra
from gpusim import dynmig
from gpusim import gpucluster
from gpusim import kube as K
from gpusim.agents.nodes import gpu_product
from gpusim.controller import Agent
from gpusim.informer import DELETED

RESOURCESLICES = K.Resource("resource.k8s.io", "v1", "resourceslices", False, "ResourceSlice")


def _pool(s):
    spec = s.get("spec") or {}
    return [(spec.get("pool") or {}).get("name")] if spec.get("driver") == dra.DRIVER else []


class DRAKubeletPluginAgent(Agent):
    name = "dra-kubelet-plugin"
    workers = 4

    def setup(self):
        self.slices = self.ctx.informer(RESOURCESLICES)
        if "pool" not in self.slices.indexers:
            self.slices.add_indexer("pool", _pool)
        self.slices.add_handler(self._on_slice)
        self.started = {}    # kubelet-plugin pod uid: when this agent first saw it Running (monotonic)
        self.ctx.pods().add_handler(self._on_pod)
        self.ctx.nodes().add_handler(self._on_node)
        self.ctx.gpuclusters().add_handler(self._on_config)
        self.ctx.clusterpolicies().add_handler(self._on_config)

    def watched(self):
        return (self.ctx.nodes(), self.ctx.pods(), self.slices, self.ctx.gpuclusters(), self.ctx.clusterpolicies())

    def _on_config(self, etype, obj, old):
        """A GPUCluster or ClusterPolicy came, changed or went: whether the operator's plugin runs may change."""
        if etype == "SYNC" and old is not None:
            return
        for node in self.ctx.nodes().items():
            self.queue.add(C.node_name(node))

    def _on_node(self, etype, obj, old):
        if etype == DELETED:
            return
        ann, was = C.node_annotations(obj), C.node_annotations(old or {})
        label = gpucluster.DRA_DRIVER_LABEL
        if old is None or any(ann.get(k) != was.get(k) for k in (C.ANN_MIG_APPLIED, C.ANN_PRODUCT, C.ANN_GPUS,
                                                      dynmig.ANN_DYNAMIC_MIG)) \
                or C.node_labels(obj).get(label) != C.node_labels(old).get(label):
            self.queue.add(obj["metadata"]["name"])

    def _on_pod(self, etype, obj, old):
        labels = obj["metadata"].get("labels") or {}
        node = obj["spec"].get("nodeName")
        if node and labels.get(dra.PLUGIN_POD_LABEL[0]) == dra.PLUGIN_POD_LABEL[1]:
            uid = obj["metadata"].get("uid")
            if etype == DELETED:
                self.started.pop(uid, None)
            elif obj["status"].get("phase") == "Running" and uid not in self.started:
                # a pod already Running when the simulator started up has long started
                self.started[uid] = None if etype == "SYNC" else time.monotonic()
            self.queue.add(node)

    def _on_slice(self, etype, obj, old):
        for pool in _pool(obj):
            if etype != "SYNC":
                self.queue.add(pool)

    def served(self, node_name):
        """Whether a Running, not terminating kubelet-plugin pod is on the node, or the GPUCluster's plugin."""
        if gpucluster.serves_dra(self.ctx.nodes().get(node_name) or {}, self.ctx.gpu_cluster()):
            return True
        key, value = dra.PLUGIN_POD_LABEL
        now, delay, waits = time.monotonic(), self.cfg.get("dra_plugin_start_seconds", 0.0), []
        for p in self.ctx.pods().by_index("node", node_name):
            if (p["metadata"].get("labels") or {}).get(key) == value and not p["metadata"].get("deletionTimestamp") \
                    and p["status"].get("phase") == "Running":
                waits.append(dra.plugin_wait(self.started.get(p["metadata"].get("uid"), now), now, delay))
        if waits and min(waits) > 0:
            self.queue.add_after(node_name, min(waits))   # the plugin is still starting: look again then
        return bool(waits) and min(waits) <= 0

    def reconcile(self, name):
        node = self.ctx.nodes().get(name)
        current = self.slices.by_index("pool", name)
        if node is None:
            product, gpus, served = None, 0, False
        else:
            product, gpus = gpu_product(self.ctx, node)
            served = self.served(name)
        step = dra.plan(node, product, gpus, self.cfg["driver"], served, current,
                        dynmig.enabled(node, self.cfg["driver"]))
        if step is None:
            return
        action, what = step
        if action == "delete":
            for slice_name in what:
                self.kube.delete(RESOURCESLICES, slice_name)
            self.log.info("%s: deleted ResourceSlice %s", name, ", ".join(what))
        elif action == "create":
            self.slices.update_local(self.kube.create(RESOURCESLICES, what))
            self.log.info("%s: published %d devices", name, len(what["spec"].get("devices") or []))
        else:
            self.slices.update_local(self.kube.replace(RESOURCESLICES, what))
            self.log.info("%s: updated to %d devices", name, len(what["spec"].get("devices") or []))
