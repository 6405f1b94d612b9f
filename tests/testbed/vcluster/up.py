"""``testbed up``: start (or reconcile) a cluster. Each step starts what is not running yet,
so a second ``up`` on a running cluster only applies config changes (nodes, gpusim)."""
from __future__ import annotations

import concurrent.futures
import contextlib
import os
import time

import yaml

from gpusim.contract import ANN_GPUS
from gpusim.kube import NAMESPACES, NODES, SERVICEACCOUNTS, ApiError, Kube

from . import common, components
from .assets import apply_kwok_stages, asset_dirs, crds_established, ensure_bin, install_crds
from .common import DEFAULT_CONFIG, HERE, MANAGED_SELECTOR, log, read_versions
from .commands import down
from .config import desired_nodes, load_config
from .pki import make_pki, write_kubeconfig
from .processes import alive, free_port, http_ok, insecure_ctx, port_free, start_process, stop_process, tail, wait_for
from .state import State

# port name -> the component that listens on it
PORT_OWNERS = {"etcd": "etcd", "etcd_peer": "etcd", "apiserver": "kube-apiserver",
               "kcm": "kube-controller-manager", "scheduler": "kube-scheduler", "kwok": "kwok",
               "operator_metrics": "gpu-operator", "operator_probe": "gpu-operator"}
# they read the apiserver address once, at start
APISERVER_CLIENTS = ("gpusim", "gpu-operator", "kwok", "kube-scheduler", "kube-controller-manager")
PORT_IN_USE = "address already in use"


def cmd_up(args) -> int:
    cfg_path = os.path.abspath(args.config or DEFAULT_CONFIG)
    st = State(args.name)
    with st.lock():
        return Up(args, st, cfg_path).run()


class Up:
    """One ``testbed up`` run: what the steps share (state, config, binaries, ports, client)."""

    def __init__(self, args, st: State, cfg_path: str):
        self.args = args
        self.st = st
        self.cfg_path = cfg_path
        self.versions = read_versions()
        self.cfg = load_config(cfg_path, args)
        self.binp = ensure_bin(not args.no_build)
        self.assets: dict = {}
        self.kubeconfig = ""
        self.kube = None
        self.want: dict = {}

    # -- what the components' argv read ----------------------------------------------------

    def bin(self, name: str) -> str:
        return os.path.join(self.binp, name)

    def pki(self, name: str) -> str:
        return self.st.path("pki", name)

    @property
    def ports(self) -> dict:
        return self.st.data["ports"]

    @property
    def etcd_url(self) -> str:
        return f"http://127.0.0.1:{self.ports['etcd']}"

    @property
    def operator_namespace(self) -> str:
        return self.cfg["cluster"].get("operator_namespace", "gpu-operator")

    def running(self, comp: str) -> bool:
        return alive(self.st.proc(comp))

    def procs_of(self, *comps: str) -> list:
        return [(self.st, c) for c in comps]

    # -- the steps -------------------------------------------------------------------------

    def run(self) -> int:
        self.prepare()
        self.start_control_plane()
        self.start_nodes()
        self.start_gpu_agents()
        self.wait_healthy()
        self.wait_gpu_operator()
        self.check_gpusim()
        st = self.st
        st.data["up_seconds"] = round(time.monotonic() - common.T0, 1)
        st.save()
        log(f"cluster {st.name!r} up in {time.monotonic() - common.T0:.1f}s; KUBECONFIG={self.kubeconfig}")
        print(self.kubeconfig)
        return 0

    def prepare(self) -> None:
        """State dir, ports, effective config, module assets, PKI and kubeconfig."""
        os.makedirs(self.st.dir, exist_ok=True)
        procs = self.st.data.get("procs", {})
        if self.st.data.get("bin") and self.st.data["bin"] != self.binp and any(alive(r) for r in procs.values()):
            log("binaries changed since this cluster started: restarting it")
            down(self.st, keep_state=False)
            self.st = State(self.st.name)
            os.makedirs(self.st.dir, exist_ok=True)
        st = self.st
        st.data.update(bin=self.binp, config=self.cfg_path, versions=self.versions)
        self.pick_ports()
        st.save()
        # the effective config for gpusim and tests
        with open(st.path("config.yaml"), "w") as f:
            yaml.safe_dump(self.cfg, f, sort_keys=False)
        self.assets = asset_dirs(st)
        make_pki(st)
        self.kubeconfig = write_kubeconfig(st)

    def pick_ports(self) -> None:
        """Keep each component's port unless another process took it meanwhile."""
        st = self.st
        ports = st.data.setdefault("ports", {})
        for p, comp in PORT_OWNERS.items():
            if p in ports and not self.running(comp) and not port_free(ports[p]):
                log(f"port {ports[p]} ({p}) is taken by another process: picking a new one")
                del ports[p]
                if p == "apiserver":  # clients read the server address at start: restart them
                    for c in APISERVER_CLIENTS:
                        stop_process(st, c)
            if p not in ports:
                ports[p] = free_port(set(ports.values()))

    def start(self, comp: str, argv_of, message: str) -> None:
        if not self.running(comp):
            start_process(self.st, comp, argv_of(self))
            log(message)

    def start_control_plane(self) -> None:
        """etcd, kube-apiserver, the CRDs (real schemas from the module cache), then
        kube-controller-manager and kube-scheduler (they warm up while we work)."""
        self.start("etcd", components.etcd, f"started etcd on {self.etcd_url}")
        wait_for("etcd /health", lambda: http_ok(self.etcd_url + "/health"), 60, procs=self.procs_of("etcd"))
        api_url = f"https://127.0.0.1:{self.ports['apiserver']}"
        self.start("kube-apiserver", components.kube_apiserver, f"started kube-apiserver on {api_url}")
        self.kube = Kube(self.kubeconfig, timeout=60, retries=4)
        wait_for("kube-apiserver /readyz", self.kube.ready, 120, interval=0.3,
                 procs=self.procs_of("etcd", "kube-apiserver"))
        log("kube-apiserver ready")
        crd_names = install_crds(self.kube, self.assets)
        log(f"applied {len(crd_names)} CRDs")
        self.start("kube-controller-manager", components.kube_controller_manager, "started kube-controller-manager")
        self.start("kube-scheduler", components.kube_scheduler, "started kube-scheduler")
        wait_for("CRDs established", lambda: crds_established(self.kube, crd_names), 60)

    def start_nodes(self) -> None:
        """kwok (its stages as Stage objects first), the namespaces and the config's nodes."""
        apply_kwok_stages(self.kube, self.assets)
        self.start("kwok", components.kwok, "started kwok")
        for ns in ["gpuops-system", self.operator_namespace]:
            self.kube.apply(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
                            common.FIELD_MANAGER)
        self.want = desired_nodes(self.cfg, self.versions["K8S_VERSION"])
        created, deleted = sync_nodes(self.kube, self.want)
        log(f"nodes: {len(self.want)} wanted, {created} created, {deleted} deleted")

    def start_gpu_agents(self) -> None:
        """The real gpu-operator and gpusim (started only when its package exists), each unless
        the config turns it off; gpusim restarts when the config file changed."""
        st, cluster = self.st, self.cfg["cluster"]
        if cluster.get("gpu_operator", True):
            components.start_gpu_operator(self)
        else:
            stop_process(st, "gpu-operator")
        if not (cluster.get("gpusim", True) and os.path.exists(os.path.join(HERE, "gpusim", "__main__.py"))):
            stop_process(st, "gpusim")
        elif not self.running("gpusim") or st.data.get("gpusim_config") != self.cfg_path:
            stop_process(st, "gpusim")
            components.start_gpusim(self)
            st.data["gpusim_config"] = self.cfg_path
            st.save()
            log("started gpusim")

    def wait_healthy(self) -> None:
        """Components healthy, the default service account, every node Ready."""
        ictx, ports, kube = insecure_ctx(), self.ports, self.kube
        wait_for("kube-controller-manager /healthz",
                 lambda: http_ok(f"https://127.0.0.1:{ports['kcm']}/healthz", ictx), 90,
                 procs=self.procs_of("kube-controller-manager"))
        wait_for("kube-scheduler /healthz",
                 lambda: http_ok(f"https://127.0.0.1:{ports['scheduler']}/healthz", ictx), 90,
                 procs=self.procs_of("kube-scheduler"))
        wait_for("kwok /healthz", lambda: http_ok(f"http://127.0.0.1:{ports['kwok']}/healthz"), 60,
                 procs=self.procs_of("kwok"))
        wait_for("default service account",
                 lambda: kube.get(SERVICEACCOUNTS, "default", "default"), 60)
        n_want = len(self.want)
        wait_for(f"{n_want} nodes Ready", lambda: count_ready(kube) >= n_want,
                 max(60, n_want * 0.3), interval=0.5, procs=self.procs_of("kwok"))
        log(f"{n_want} nodes Ready")

    def wait_gpu_operator(self) -> None:
        """gpu-operator /readyz; when it exited because another process bound one of its ports
        between the pick and the start, restart it on new ports (up to 3 tries)."""
        st, ports = self.st, self.ports
        for attempt in range(3):
            rec = st.proc("gpu-operator")
            if not (alive(rec) or (attempt and rec)):
                return
            if not alive(rec) and PORT_IN_USE in tail(rec["log"]):
                log("gpu-operator: a port was taken meanwhile; restarting it on new ports")
                for p in ("operator_metrics", "operator_probe"):
                    ports[p] = free_port(set(ports.values()))
                st.save()
                components.start_gpu_operator(self)
            try:
                wait_for("gpu-operator /readyz",
                         lambda: http_ok(f"http://127.0.0.1:{ports['operator_probe']}/readyz"), 90,
                         procs=self.procs_of("gpu-operator"))
                log("gpu-operator ready")
                return
            except SystemExit:
                rec = st.proc("gpu-operator")
                if attempt == 2 or alive(rec) or PORT_IN_USE not in tail(rec["log"]):
                    raise

    def check_gpusim(self) -> None:
        """Warn when gpusim exited; with --wait-gpus wait for GPU capacity on every GPU node."""
        rec = self.st.proc("gpusim")
        if rec and not alive(rec):
            log(f"WARNING: gpusim exited; last lines of {rec['log']}:\n{tail(rec['log'])}")
        elif rec and self.args.wait_gpus:
            gpu_nodes = {n for n, o in self.want.items() if ANN_GPUS in o["metadata"]["annotations"]}
            wait_for(f"GPU capacity on {len(gpu_nodes)} GPU nodes (gpusim)",
                     lambda: len(gpu_nodes - nodes_without_gpus(self.kube)) == len(gpu_nodes),
                     max(60, len(gpu_nodes) * 0.3), interval=0.5, procs=self.procs_of("gpusim"))
            log(f"GPU capacity published on {len(gpu_nodes)} nodes")


# -- the testbed's nodes ------------------------------------------------------------------

def _managed_nodes(kube) -> list:
    return kube.list(NODES, label_selector=MANAGED_SELECTOR)[0]


def sync_nodes(kube, want: dict):
    """Create the wanted nodes that are missing, delete the managed ones not wanted (16 at a
    time); returns (created, deleted)."""
    have_names = {n["metadata"]["name"] for n in _managed_nodes(kube)}
    to_create = [n for name, n in want.items() if name not in have_names]
    to_delete = [n for n in have_names if n not in want]

    def create(node):
        try:
            kube.create(NODES, node)
        except ApiError as e:
            if e.status != 409:
                raise

    def delete(name):
        with contextlib.suppress(ApiError):
            kube.delete(NODES, name)

    with concurrent.futures.ThreadPoolExecutor(16) as ex:
        list(ex.map(create, to_create))
        list(ex.map(delete, to_delete))
    return len(to_create), len(to_delete)


def nodes_without_gpus(kube) -> set:
    return {n["metadata"]["name"] for n in _managed_nodes(kube)
            if not any(k.startswith("nvidia.com/") and v not in ("0", "")
                       for k, v in (n.get("status", {}).get("allocatable") or {}).items())}


def count_ready(kube) -> int:
    return sum(1 for n in _managed_nodes(kube) if any(c["type"] == "Ready" and c["status"] == "True"
                                                      for c in n.get("status", {}).get("conditions", [])))
