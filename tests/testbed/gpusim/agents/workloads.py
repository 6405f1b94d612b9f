"""The container logs of validation workloads: what the kubelet's container runtime would keep.

When a pod is bound to a node, the agent writes the log each of its containers prints (``workloads.py``) as
a CRI log file under ``$GPUOPS_TESTBED_STATE/pod-logs`` and a kwok ``Logs`` object naming those files;
kwok's server, which is every node's kubelet endpoint in the testbed, then serves them to the API server's
``pods/log`` requests. Files go when the pod goes; the Logs object is owned by the pod.
"""

import datetime
import os
import shutil
import tempfile

from gpusim import kube as K
from gpusim import workloads as W
from gpusim.controller import Agent
from gpusim.informer import DELETED

LOGS = K.Resource("kwok.x-k8s.io", "v1alpha1", "logs", True, "Logs")
FIELD_MANAGER = "gpusim"


def log_root():
    state = os.environ.get("GPUOPS_TESTBED_STATE")
    return os.path.join(state, "pod-logs") if state else tempfile.mkdtemp(prefix="gpusim-pod-logs-")


class WorkloadLogAgent(Agent):
    """Writes the logs of the validation workload containers of every bound pod."""

    name = "workload-logs"
    workers = 4

    def setup(self):
        self.root = log_root()
        self.written = {}   # pod key -> uid whose logs are written (or known to have none)
        self.available = None
        self.ctx.pods().add_handler(self._on_pod)

    def watched(self):
        return (self.ctx.nodes(), self.ctx.pods())

    def _on_pod(self, etype, obj, old):
        md = obj["metadata"]
        key = "%s/%s" % (md["namespace"], md["name"])
        if etype == DELETED:
            if self.written.get(key) == md.get("uid"):
                self.written.pop(key, None)
            shutil.rmtree(W.pod_dir(self.root, md["namespace"], md["name"], md.get("uid")), ignore_errors=True)
            return
        if obj["spec"].get("nodeName") and self.written.get(key) != md.get("uid") and any(
                W.is_vectoradd(c.get("image")) for c in obj["spec"].get("containers") or ()):
            self.queue.add(key)

    def _served(self):
        if self.available is None:
            self.available = self.kube.exists(LOGS)
            if not self.available:
                self.log.warning("kwok.x-k8s.io/v1alpha1 logs not served: no pod logs are written")
        return self.available

    def reconcile(self, key):
        pod = self.ctx.pods().get(key)
        if pod is None or not self._served():
            return
        md, spec = pod["metadata"], pod["spec"]
        if self.written.get(key) == md["uid"]:
            return
        node = self.ctx.nodes().get(spec.get("nodeName") or "")
        if node is None:
            return
        now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        files = {}
        for container in spec.get("containers") or ():
            lines = W.container_log(container, pod.get("resources"), node, dra=container["name"] in (
                (pod.get("status") or {}).get("extendedResourceContainers") or ()))
            if lines is None:
                continue
            path = W.log_file(self.root, md["namespace"], md["name"], md["uid"], container["name"])
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as handle:
                handle.write(W.cri_log(lines, now))
            files[container["name"]] = path
        if files:
            self.kube.apply(LOGS, W.logs_object(md["namespace"], md["name"], md["uid"], files), FIELD_MANAGER)
        else:
            self.log.info("%s on %s: no container log (injection, no GPU allocated)", key, spec["nodeName"])
        self.written[key] = md["uid"]
