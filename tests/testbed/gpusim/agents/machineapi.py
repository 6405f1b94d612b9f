"""Simulated machine-api controllers: MachineSet -> Machines -> KWOK Nodes."""

from datetime import datetime, timezone

from gpusim import kube as K
from gpusim import machineapi as M
from gpusim.controller import Agent
from gpusim.informer import DELETED, obj_key
from gpusim.kube import now_iso


def _ready(node):
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in ((node or {}).get("status") or {}).get("conditions") or [])


def _age_seconds(ts):
    try:
        t = datetime.strptime(ts, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    except (TypeError, ValueError):
        return 1e9
    return (datetime.now(timezone.utc) - t).total_seconds()


class MachineAPIAgent(Agent):
    name = "machine-api"
    workers = 2

    def setup(self):
        self.ma_cfg = self.cfg["machine_api"]
        ns = self.ma_cfg.get("namespace") or None
        self.msets = self.ctx.informer(K.MACHINESETS, namespace=ns)
        self.machines = self.ctx.informer(K.MACHINES, namespace=ns)
        self.nodes = self.ctx.nodes()
        self.kubelet_version = None
        self.msets.add_handler(lambda e, o, old: self.queue.add("ms/" + obj_key(o)))
        self.machines.add_handler(self._on_machine)
        self.nodes.add_handler(self._on_node)

    def watched(self):
        return (self.msets, self.machines, self.nodes)

    def _on_machine(self, etype, obj, old):
        key = obj_key(obj)
        if etype == DELETED:
            self.queue.add("gone/" + key)
        else:
            self.queue.add("m/" + key)
        ms = (obj["metadata"].get("labels") or {}).get(M.MS_LABEL)
        if ms:
            self.queue.add("ms/%s/%s" % (obj["metadata"]["namespace"], ms))

    def _on_node(self, etype, obj, old):
        ref = (obj["metadata"].get("annotations") or {}).get(M.MACHINE_ANN)
        if not ref:
            return
        if old is None or etype == DELETED or _ready(old) != _ready(obj):
            self.queue.add("m/" + ref)

    def _version(self):
        if self.kubelet_version is None:
            try:
                self.kubelet_version = self.kube._call("GET", "/version").get("gitVersion") or "v1.36.0"
            except K.ApiError:
                self.kubelet_version = "v1.36.0"
        return self.kubelet_version

    def reconcile(self, key):
        kind, _, rest = key.partition("/")
        if kind == "ms":
            self.reconcile_machineset(rest)
        elif kind == "m":
            self.reconcile_machine(rest)
        elif kind == "gone":
            # the Machine is gone: so is its instance (Node)
            name = rest.split("/", 1)[1]
            node = self.nodes.get(name)
            if node is not None and (node["metadata"].get("annotations") or {}).get(M.MACHINE_ANN) == rest:
                self.kube.delete(K.NODES, name)
                self.log.info("deleted node %s (machine %s deleted)", name, rest)

    def _owned(self, ms):
        md = ms["metadata"]
        return [m for m in self.machines.items()
                if m["metadata"]["namespace"] == md["namespace"]
                and (m["metadata"].get("labels") or {}).get(M.MS_LABEL) == md["name"]]

    def reconcile_machineset(self, key):
        ms = _live(self.msets.get(key))
        if ms is None:
            return
        md = ms["metadata"]
        replicas = (ms.get("spec") or {}).get("replicas")
        replicas = 1 if replicas is None else int(replicas)
        owned = self._owned(ms)
        live = [m for m in owned if not m["metadata"].get("deletionTimestamp")]
        if len(live) < replicas:
            for _ in range(replicas - len(live)):
                obj = M.machine_object(ms, M.machine_name(md["name"]))
                new = self.kube.create(K.MACHINES, obj, md["namespace"])
                self.machines.update_local(new)
                self.queue.add_after("m/%s/%s" % (md["namespace"], new["metadata"]["name"]),
                                     float(self.ma_cfg.get("provision_seconds", 0.5)))
                self.log.info("%s: created machine %s", key, new["metadata"]["name"])
        elif len(live) > replicas:
            for m in M.to_delete(live, len(live) - replicas):
                self.kube.delete(K.MACHINES, m["metadata"]["name"], md["namespace"])
                self.log.info("%s: deleted machine %s", key, m["metadata"]["name"])
        owned = [m for m in self._owned(ms) if not m["metadata"].get("deletionTimestamp")]
        ready = {n["metadata"]["name"] for n in self.nodes.items() if _ready(n)}
        status = M.machineset_status(ms, owned, ready)
        old = ms.get("status") or {}
        if any(old.get(k) != v for k, v in status.items()):
            self.patch_status(self.msets, ms, status)

    def reconcile_machine(self, key):
        m = _live(self.machines.get(key))
        if m is None:
            return
        md = m["metadata"]
        ms_name = (md.get("labels") or {}).get(M.MS_LABEL)
        ms = self.msets.get("%s/%s" % (md["namespace"], ms_name)) if ms_name else None
        node = self.nodes.get(md["name"])
        now = now_iso()
        st = m.get("status") or {}
        if node is None:
            wait = float(self.ma_cfg.get("provision_seconds", 0.5)) - _age_seconds(
                md.get("creationTimestamp"))
            if st.get("phase") != "Provisioning":
                self.patch_status(self.machines, m, M.machine_status("Provisioning", now=now))
            if wait > 0:
                self.queue.add_after("m/" + key, wait)
                return
            hw = M.hardware(ms or {"metadata": {}, "spec": {"template": {"spec": m.get("spec")}}},
                            self.ma_cfg, self.cfg.get("default_gpus", 8))
            obj = M.node_object(m, hw, self._version(), self.ma_cfg)
            try:
                node = self.kube.create(K.NODES, obj)
            except K.ApiError as exc:
                if exc.status != 409:
                    raise
                node = self.kube.get(K.NODES, md["name"])
            self.nodes.update_local(node)
            if not (m.get("spec") or {}).get("providerID"):
                self.kube.merge_patch(K.MACHINES, md["name"], {"spec": {
                    "providerID": node["spec"]["providerID"]}}, md["namespace"])
            self.log.info("machine %s: node %s created (%s x%s)", key, md["name"],
                          hw.get("product"), hw.get("gpus"))
        phase = "Running" if _ready(node) else "Provisioned"
        if st.get("phase") != phase or (st.get("nodeRef") or {}).get("name") != md["name"]:
            self.patch_status(self.machines, m, M.machine_status(phase, md["name"],
                                                                 node["metadata"].get("uid"), now))
        if ms_name:
            self.queue.add("ms/%s/%s" % (md["namespace"], ms_name))



def _live(obj):
    """The cached object unless it is gone or being deleted (then None: nothing to do)."""
    if obj is None or obj["metadata"].get("deletionTimestamp"):
        return None
    return obj
