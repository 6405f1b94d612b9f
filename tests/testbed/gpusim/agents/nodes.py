"""Node agents: NFD worker, device plugin + GFD, mig-manager."""

import time

from gpusim import contract as C
from gpusim import deviceplugin
from gpusim import gfd
from gpusim import kube as K
from gpusim import mig
from gpusim import migparted
from gpusim import nfd
from gpusim.controller import Agent
from gpusim.informer import DELETED

TERMINAL = ("Succeeded", "Failed")


def patch_node(ctx, name, metadata=None, status=None):
    """One merge patch: metadata alone through the node; status, with any metadata, through the node's
    status subresource, which keeps the metadata of the patch (the API server resets only the spec there:
    docs/facts.md, "Node status subresource"). The cache gets the answer at once."""
    if status:
        body = dict({"metadata": metadata} if metadata else {}, status=status)
        obj = ctx.kube.merge_patch(K.NODES, name, body, subresource="status")
    elif metadata:
        obj = ctx.kube.merge_patch(K.NODES, name, {"metadata": metadata})
    else:
        return
    ctx.nodes().update_local(obj)


def node_event(ctx, node, etype, reason, message, component):
    ref = {"apiVersion": "v1", "kind": "Node",
           "metadata": {"name": node["metadata"]["name"], "uid": node["metadata"].get("uid")}}
    ctx.kube.event(ref, etype, reason, message, component)


def gpu_product(ctx, node):
    name, count = C.node_product_and_count(node, ctx.cfg.get("default_gpus", 8))
    if not name:
        return None, 0
    return ctx.catalog.product(name), count


def gpu_pods_on_node(ctx, node_name):
    """Names of non-terminal pods on the node that request GPU resources."""
    out = []
    for p in ctx.pods().by_index("node", node_name):
        if p["status"].get("phase") in TERMINAL:
            continue
        if any(C.is_gpu_resource(r) for r in p.get("resources") or ()):
            out.append("%s/%s" % (p["metadata"]["namespace"], p["metadata"]["name"]))
    return out


def device_plugin_pod_uid(ctx, node_name, pod_label=C.DP_POD_LABEL):
    """uid of the newest live pod with this app label on the node ("" if none)."""
    app_key, app_val = pod_label
    pods = [p for p in ctx.pods().by_index("node", node_name)
            if (p["metadata"].get("labels") or {}).get(app_key) == app_val
            and not p["metadata"].get("deletionTimestamp")
            and p["status"].get("phase") not in TERMINAL]
    if not pods:
        return ""
    pods.sort(key=lambda p: (p["metadata"].get("creationTimestamp") or "", p["metadata"]["uid"]))
    return pods[-1]["metadata"]["uid"]


def spec_changed(etype, obj, old):
    """Whether a ClusterPolicy event changes what the agents read (its spec), not only its status."""
    return etype == DELETED or old is None or obj.get("spec") != old.get("spec")


class _NodeAgent(Agent):
    workers = 8    # I/O bound (one PATCH per changed node); the GIL is released while waiting

    def enqueue_all_nodes(self, *_args):
        for key in self.ctx.nodes().keys():
            self.queue.add(key)

    def _on_node(self, etype, obj, old):
        if etype == DELETED:
            self.node_deleted(obj["metadata"]["name"])
            return
        if self.relevant(obj, old):
            self.queue.add(obj["metadata"]["name"])

    def relevant(self, obj, old):
        return True

    def node_deleted(self, name):
        pass

    def watched(self):
        return (self.ctx.nodes(),)


class _OperandAgent(_NodeAgent):
    """A node agent that stands for an operand pod of the gpu-operator (``pod_label``): it
    follows the ClusterPolicy, the operator's ConfigMaps and the pods on its nodes."""

    pod_label = None   # (key, value) of the operand pod
    # a batch of nodes changes at once (a rollout labels 100 nodes in a second or two) and each node's
    # reaction is one PATCH, mostly waiting for the API server: enough workers that a node's write does not
    # queue behind its batch-mates' (the client's connection pool is sized for them, kube.Kube)
    workers = 32

    def _on_cp(self, etype, obj, old):
        if spec_changed(etype, obj, old):
            self.enqueue_all_nodes()

    def watched(self):
        return (self.ctx.nodes(), self.ctx.pods(), self.ctx.configmaps(), self.ctx.clusterpolicies())

    def _on_pod(self, etype, obj, old):
        """A (re)started or deleted operand pod on a node: look at the node again."""
        labels = obj["metadata"].get("labels") or {}
        if labels.get(self.pod_label[0]) != self.pod_label[1]:
            return
        node = obj["spec"].get("nodeName")
        if node and (old is None or etype == DELETED
                     or old["metadata"].get("deletionTimestamp") != obj["metadata"].get("deletionTimestamp")
                     or old["status"].get("phase") != obj["status"].get("phase")):
            self.queue.add(node)


class NFDAgent(_NodeAgent):
    """nfd-worker: feature.node.kubernetes.io labels (pci-10de.present on GPU nodes, OS, kernel)."""

    name = "nfd"

    def setup(self):
        self.nfd_crs = []
        if self.cfg["nfd"] == "on-cr":
            for res in (K.NFD_OPENSHIFT, K.NFD_K8S):
                inf = self.ctx.informer(res)
                inf.add_handler(self.enqueue_all_nodes)
                self.nfd_crs.append(inf)
        self.ctx.nodes().add_handler(self._on_node)

    def relevant(self, obj, old):
        if old is None:
            return True
        return (C.node_labels(obj) != C.node_labels(old)
                or C.node_annotations(obj).get(C.ANN_PRODUCT)
                != C.node_annotations(old).get(C.ANN_PRODUCT))

    def active(self):
        if self.cfg["nfd"] == "always":
            return True
        return any(inf.items() for inf in self.nfd_crs)

    def reconcile(self, name):
        node = self.ctx.nodes().get(name)
        if node is None or not self.active():
            return
        product, count = gpu_product(self.ctx, node)
        is_gpu = product is not None and count > 0
        patch = nfd.label_patch(C.node_labels(node), is_gpu, self.cfg["os"])
        if patch:
            patch_node(self.ctx, name, metadata={"labels": patch})


class DevicePluginAgent(_OperandAgent):
    """NVIDIA device plugin + GPU feature discovery (+ config-manager sidecars)."""

    name = "gfd"
    pod_label = C.DP_POD_LABEL

    def setup(self):
        self.ctx.clusterpolicies().add_handler(self._on_cp)
        self.ctx.configmaps().add_handler(self._on_configmap)
        self.ctx.pods().add_handler(self._on_pod)
        self.ctx.pods().add_handler(self._on_driver_pod)
        self.ctx.nodes().add_handler(self._on_node)
        self.ctx.gpuclusters().add_handler(self._on_gpucluster)

    def watched(self):
        return super(DevicePluginAgent, self).watched() + (self.ctx.gpuclusters(),)

    def _on_gpucluster(self, etype, obj, old):
        """A GPUCluster came or went: the deploy labels decide where the plugin runs, or no longer do."""
        if etype == DELETED or old is None or bool(obj["metadata"].get("deletionTimestamp")) != \
                bool(old["metadata"].get("deletionTimestamp")):
            self.enqueue_all_nodes()

    def _on_driver_pod(self, etype, obj, old):
        """A driver pod started, went Running or left: GFD's cuda.driver labels follow the driver that runs
        (gfd.running_driver)."""
        labels = obj["metadata"].get("labels") or {}
        node = obj["spec"].get("nodeName")
        if not gfd.is_driver_pod(labels) or not node:
            return
        if (old is None or etype == DELETED or old["status"].get("phase") != obj["status"].get("phase")
                or old["metadata"].get("deletionTimestamp") != obj["metadata"].get("deletionTimestamp")):
            self.queue.add(node)

    def _driver(self, name):
        """The driver GFD reports on the node: the version of its newest Running driver pod's image."""
        pods = sorted((p for p in self.ctx.pods().by_index("node", name)
                       if gfd.is_driver_pod(p["metadata"].get("labels"))
                       and p["status"].get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")),
                      key=lambda p: p["metadata"].get("creationTimestamp") or "")
        images = [c.get("image") for p in pods for c in (p["spec"].get("containers") or [])[:1]]
        return gfd.running_driver(images, self.cfg["driver"])

    def relevant(self, obj, old):
        if old is None:
            return True
        return (C.node_labels(obj) != C.node_labels(old)
                or C.node_annotations(obj) != C.node_annotations(old)
                or (obj.get("status") or {}).get("capacity") != (old.get("status") or {}).get("capacity")
                or (obj.get("status") or {}).get("allocatable")
                != (old.get("status") or {}).get("allocatable"))

    def _on_configmap(self, etype, obj, old):
        # Content changes are NOT picked up by a running plugin, but a crash-looping plugin
        # (missing ConfigMap/key, bad content) re-reads at its next restart: re-check the nodes when
        # the ConfigMap the plugin reads appears, goes or changes (not at every resync, not for others).
        _s, cm_name, _d, _e, _g = deviceplugin.cp_settings(self.ctx.cluster_policy(), self.cfg)
        if obj["metadata"]["name"] != cm_name:
            return
        if etype == DELETED or old is None or obj.get("data") != old.get("data"):
            self.enqueue_all_nodes()

    def reconcile(self, name):
        node = self.ctx.nodes().get(name)
        if node is None:
            return
        product, _count = gpu_product(self.ctx, node)
        if product is None:
            pname, _ = C.node_product_and_count(node)
            if pname and C.node_annotations(node).get(C.ANN_DP_ERROR) is None:
                patch_node(self.ctx, name, metadata={"annotations": {
                    C.ANN_DP_ERROR: "unknown GPU product %r (not a simulated GPU: gpusim/catalog.py)" % pname}})
            return
        cp = self.ctx.cluster_policy()
        _s, cm_name, _d, _e, _g = deviceplugin.cp_settings(cp, self.cfg)
        cm = self.ctx.operator_configmap(cm_name)
        plan = deviceplugin.reconcile(node, product, cp, cm, device_plugin_pod_uid(self.ctx, name),
                                      dict(self.cfg, driver=self._driver(name),
                                           gpucluster_active=self.ctx.gpu_cluster() is not None))
        if plan.empty():
            return
        self.log.debug("%s: %r", name, plan)
        patch_node(self.ctx, name, metadata=plan.metadata, status=plan.status)
        for etype, reason, message in plan.events:
            node_event(self.ctx, node, etype, reason, message, "nvidia-device-plugin")
        if plan.error:
            self.log.info("%s: device plugin failing: %s", name, plan.error)


class MigManagerAgent(_OperandAgent):
    """nvidia-mig-manager: nvidia.com/mig.config -> mig.config.state, geometry, deploy labels."""

    name = "mig-manager"
    pod_label = C.MM_POD_LABEL

    def setup(self):
        # Like nvidia-mig-manager (cmd/nvidia-mig-manager/main.go): its node informer hands the
        # label to SyncableMigConfig only when the VALUE changes; re-setting the same value (or
        # clearing mig.config.state) does nothing, removing the label and setting it again does
        # re-apply (the waiting loop wakes on the next non-empty value). A new mig-manager pod
        # (delete the app=nvidia-mig-manager pod on the node, or bump the annotation
        # gpusim.gpuops.dev/mig-manager-restart when there is none) re-reads the current value.
        self.handled = {}     # node -> label value processed by the (simulated) running pod
        self.epochs = {}      # node -> (mig-manager pod uid, restart annotation) of that pod
        self.jobs = {}        # node -> {"value", "spec", "due", "source", "epoch"}
        self.waiting = {}     # node -> value waiting for a missing ConfigMap
        self.seen = {}        # node -> (label value, when the watch delivered it): the reconfiguration's start
        self.ctx.clusterpolicies().add_handler(self._on_cp)
        self.ctx.configmaps().add_handler(self._on_configmap)
        self.ctx.pods().add_handler(self._on_pod)  # GPU pods block a reconfiguration
        self.ctx.nodes().add_handler(self._on_node)

    def _on_node(self, etype, obj, old):
        # Event-level, like the real informer: a removed label is seen even when it is set
        # again before the worker gets to the node.
        if etype != DELETED:
            was = C.node_labels(old).get(C.L_MIG_CONFIG) if old is not None else None
            value = C.node_labels(obj).get(C.L_MIG_CONFIG)
            if was and not value:
                self.handled.pop(obj["metadata"]["name"], None)
            if value and value != was:
                # the real mig-manager starts when its informer hands it the label: the reconfiguration
                # time counts from here, not from when a worker got to the node or its first write returned
                self.seen[obj["metadata"]["name"]] = (value, time.monotonic())
        _NodeAgent._on_node(self, etype, obj, old)

    def _epoch(self, node):
        name = node["metadata"]["name"]
        return (device_plugin_pod_uid(self.ctx, name, C.MM_POD_LABEL),
                C.node_annotations(node).get(C.ANN_MM_RESTART, ""))

    def _on_configmap(self, etype, obj, old):
        if etype in ("ADDED", "SYNC"):
            for name in list(self.waiting):
                self.queue.add(name)

    def relevant(self, obj, old):
        if old is None:
            return True
        lo, ln = C.node_labels(old), C.node_labels(obj)
        ao, an = C.node_annotations(old), C.node_annotations(obj)
        return (lo.get(C.L_MIG_CONFIG) != ln.get(C.L_MIG_CONFIG)
                or lo.get(C.L_DEPLOY_MIG) != ln.get(C.L_DEPLOY_MIG)
                or ao.get(C.ANN_INJECT) != an.get(C.ANN_INJECT)
                or ao.get(C.ANN_MM_RESTART) != an.get(C.ANN_MM_RESTART)
                or ao.get(C.ANN_PRODUCT) != an.get(C.ANN_PRODUCT))

    def node_deleted(self, name):
        self.handled.pop(name, None)
        self.epochs.pop(name, None)
        self.jobs.pop(name, None)
        self.waiting.pop(name, None)
        self.seen.pop(name, None)

    def _runs(self, node, cp):
        enabled = True
        if cp is not None:
            enabled = ((cp.get("spec") or {}).get("migManager") or {}).get("enabled", True) is not False
        return deviceplugin.component_runs(self.cfg["mig_manager"], cp is not None,
                                           C.node_labels(node).get(C.L_DEPLOY_MIG), enabled)

    def _delay(self, node):
        delay = float(self.cfg["mig_reconfigure_seconds"])
        raw = C.node_annotations(node).get(C.ANN_RECONFIGURE_SECONDS)
        if raw:
            try:
                delay = max(0.0, float(raw))
            except ValueError:
                self.log.warning("%s: bad %s=%r", node["metadata"]["name"],
                                 C.ANN_RECONFIGURE_SECONDS, raw)
        if C.INJECT_SLOW in C.injections(node):
            delay *= float(self.cfg["slow_factor"])
        return delay

    def _apply(self, node, step):
        name = node["metadata"]["name"]
        md = step.metadata_patch()
        if md:
            patch_node(self.ctx, name, metadata=md)
        if step.event and step.event[0] == "Warning":
            # only failures become Events (the real mig-manager records none; at 1000 nodes
            # a Normal event per transition would double the writes)
            node_event(self.ctx, node, step.event[0], step.event[1], step.event[2],
                       "nvidia-mig-manager")
        self.log.info("%s: %s=%s%s", name, C.L_MIG_STATE, step.state,
                      (" (%s)" % step.error) if step.error else "")

    def _start(self, node):
        """When a reconfiguration this reconciliation begins starts: when the watch delivered the node's
        label value (the entry is used up), or now if it delivered another value since (a newer one: kept for
        the reconciliation the watch queued after this one) or none (a restart, a ConfigMap that appeared)."""
        name, now = node["metadata"]["name"], time.monotonic()
        seen = self.seen.get(name)
        if seen is None or seen[0] != C.node_labels(node).get(C.L_MIG_CONFIG):
            return now
        self.seen.pop(name, None)
        return min(now, seen[1])

    def reconcile(self, name):
        node = self.ctx.nodes().get(name)
        if node is None:
            self.node_deleted(name)
            return
        product, gpus = gpu_product(self.ctx, node)
        if product is None or not product.get("mig_capable") or gpus <= 0:
            return
        job = self.jobs.get(name)
        if job is not None:
            self._continue(node, product, gpus, job)
            return
        start = self._start(node)
        cp = self.ctx.cluster_policy()
        if not self._runs(node, cp):
            self.handled.pop(name, None)  # a new mig-manager pod re-reads the label
            return
        epoch = self._epoch(node)
        if name in self.handled and self.epochs.get(name) != epoch:
            self.log.info("%s: mig-manager restarted: re-reading %s", name, C.L_MIG_CONFIG)
            self.handled.pop(name, None)
        value = C.node_labels(node).get(C.L_MIG_CONFIG)
        if not value:
            # k8s-mig-manager's informer hands every label change to its loop; an empty value is
            # "no config" there, so removing and re-setting the same value applies it again.
            self.handled.pop(name, None)
            return
        if self.handled.get(name) == value:
            return
        try:
            source, spec = mig.resolve_spec(cp, self.ctx.operator_configmaps(), product, self.cfg)
        except mig.MissingConfigMap as exc:
            if self.waiting.get(name) != value:
                self.waiting[name] = value
                node_event(self.ctx, node, "Warning", "MigManagerWaiting",
                           "%s: mig-manager cannot start" % exc, "nvidia-mig-manager")
                self.log.info("%s: waiting: %s", name, exc)
            return
        except migparted.MigPartedError as exc:
            source, spec = "configmap", exc
        self.waiting.pop(name, None)
        step = mig.begin(node, product, spec, value, gpus)
        self._apply(node, step)
        if step.state == "pending":
            due = start + self._delay(node)
            self.jobs[name] = {"value": value, "spec": spec, "due": due, "source": source, "epoch": epoch}
            self.queue.add_after(name, due - time.monotonic())
        else:
            self.handled[name] = value
            self.epochs[name] = epoch

    def _continue(self, node, product, gpus, job):
        name = node["metadata"]["name"]
        inject = C.injections(node)
        if C.INJECT_STUCK in inject:
            self.queue.add_after(name, 1.0)  # stays pending while the injection is there
            return
        left = job["due"] - time.monotonic()
        if left > 0:
            self.queue.add_after(name, left)
            return
        step = mig.finish(node, product, job["spec"], job["value"], gpus,
                          gpu_pods_on_node(self.ctx, name), C.INJECT_FAIL in inject)
        self._apply(node, step)
        self.jobs.pop(name, None)
        self.handled[name] = job["value"]
        self.epochs[name] = job["epoch"]
        self.queue.add(name)  # the label may have changed meanwhile
