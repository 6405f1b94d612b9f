"""The GPU operator v26.7's GPUCluster (gpusim/gpucluster.py): the DRA stack's node deploy labels while a GPUCluster
is the operator's active configuration (and, with simulation.clusterpolicy_node_labels, the ClusterPolicy stack's
while a ClusterPolicy is), and the GPUCluster's status. Event-driven: a GPUCluster or ClusterPolicy
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
        pods = (self.ctx.pods(),) if self.cfg.get("clusterpolicy_node_labels") else ()
        return (self.ctx.gpuclusters(), self.ctx.clusterpolicies(), self.ctx.nodes()) + pods

    def _on_config(self, etype, obj, old):
        if etype == "SYNC" and old is not None:
            return
        self.queue.add(STATUS)
        for node in self.ctx.nodes().items():
            self.queue.add(C.node_name(node))

    def _labelling(self):
        """Whether the operator labels the nodes now: for a GPUCluster, or for a ClusterPolicy when the test bed
        plays that part too (simulation.clusterpolicy_node_labels)."""
        return self.ctx.gpu_cluster() is not None or self._policy_labelling()

    def _policy_labelling(self):
        live = [g for g in self.ctx.gpuclusters().items() if not g["metadata"].get("deletionTimestamp")]
        return bool(self.cfg.get("clusterpolicy_node_labels") and self.ctx.cluster_policy() and not live)

    def _on_node(self, etype, obj, old):
        if etype == DELETED or not self._labelling():
            return
        if old is None or C.node_labels(obj) != C.node_labels(old):
            self.queue.add(C.node_name(obj))

    def reconcile(self, key):
        if key == STATUS:
            return self._status()
        node = self.ctx.nodes().get(key)
        if node is None:
            return
        if self.ctx.gpu_cluster() is not None:
            patch, stack = gpucluster.label_patch(C.node_labels(node)), "DRA"
        elif self._policy_labelling():
            claims = any(c.get("claims") for p in self.ctx.pods().by_index("node", key)
                         if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
                         for c in p["spec"].get("containers") or [])
            patch, stack = gpucluster.policy_label_patch(C.node_labels(node), claims), "ClusterPolicy"
        else:
            return
        if patch:
            patch_node(self.ctx, key, metadata={"labels": patch})
            self.log.info("%s: %s stack deploy labels: %s", key, stack, ", ".join(
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
