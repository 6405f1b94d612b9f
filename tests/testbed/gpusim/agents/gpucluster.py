"""The GPU operator v26.7's GPUCluster (gpusim/gpucluster.py): the DRA stack's node deploy labels while a GPUCluster
is the operator's active configuration, and the GPUCluster's status. Event-driven: a GPUCluster or ClusterPolicy
event queues the status and every node, a node event queues that node while a GPUCluster is active."""

import datetime

from gpusim import contract as C
from gpusim import gpucluster
from gpusim.agents.nodes import patch_node
from gpusim.controller import Agent
from gpusim.informer import DELETED

STATUS = "\x00status"   # the queue key of the GPUCluster's status (never a node name)


class GPUClusterAgent(Agent):
    name = "gpucluster"
    workers = 2

    def setup(self):
        self.ctx.gpuclusters().add_handler(self._on_config)
        self.ctx.clusterpolicies().add_handler(self._on_config)
        self.ctx.nodes().add_handler(self._on_node)

    def watched(self):
        return (self.ctx.gpuclusters(), self.ctx.clusterpolicies(), self.ctx.nodes())

    def _on_config(self, etype, obj, old):
        if etype == "SYNC" and old is not None:
            return
        self.queue.add(STATUS)
        for node in self.ctx.nodes().items():
            self.queue.add(C.node_name(node))

    def _on_node(self, etype, obj, old):
        if etype == DELETED or self.ctx.gpu_cluster() is None:
            return
        if old is None or C.node_labels(obj) != C.node_labels(old):
            self.queue.add(C.node_name(obj))

    def reconcile(self, key):
        if key == STATUS:
            return self._status()
        node = self.ctx.nodes().get(key)
        if node is None or self.ctx.gpu_cluster() is None:
            return
        patch = gpucluster.label_patch(C.node_labels(node))
        if patch:
            patch_node(self.ctx, key, metadata={"labels": patch})
            self.log.info("%s: DRA stack deploy labels: %s", key, ", ".join(
                "%s=%s" % (k[len(C.DEPLOY_PREFIX):], v) for k, v in sorted(patch.items(), key=lambda i: i[0])))

    def _status(self):
        policies = self.ctx.clusterpolicies().items()
        for cr in self.ctx.gpuclusters().items():
            if cr["metadata"].get("deletionTimestamp"):
                continue
            desired = gpucluster.status(self.ctx.gpuclusters().items(), policies, self.ctx.operator_namespace)
            if not gpucluster.status_differs(cr.get("status"), desired):
                continue
            now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            for condition in desired["conditions"]:
                condition["lastTransitionTime"] = now
            self.patch_status(self.ctx.gpuclusters(), cr, desired)
            self.log.info("%s: state %s", cr["metadata"]["name"], desired["state"])
