"""The command line of each component the CLI runs. Each function takes the ``up.Up`` of the
cluster being started (binaries, ports, PKI paths, kubeconfig) and returns the argv; the ones
with a config file write it into the state dir first."""
from __future__ import annotations

import os
import shutil

import yaml

from gpusim.contract import ANN_KWOK

from .assets import csv_operator_env, python_with_kubernetes
from .common import HERE, REPO, log
from .processes import start_process

ALWAYS_ALLOW = "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics"
LEASE_SECONDS = 40         # node lease duration; kwok renews every quarter of it (10 s)
LEASE_NODES = 1000         # nodes per LEASE_SECONDS: past them the lease grows (see lease_seconds)


def lease_seconds(cfg: dict) -> int:
    """Node lease duration for the config's node count: 40 s up to 1000 nodes, 40 s more per further
    1000. kwok renews every lease each quarter of its duration, so 5000 nodes at 40 s would be 500 lease
    writes a second, more than kwok and the apiserver keep up with on 2 cores: leases went stale and
    nodes flapped to NotReady (NodeStatusUnknown) before `up` saw them all Ready."""
    nodes = sum(int(group.get("count", 0) or 0) for group in cfg.get("node_groups") or [])
    return LEASE_SECONDS * max(1, -(-nodes // LEASE_NODES))


def grace_seconds(cfg: dict) -> int:
    """kube-controller-manager's node monitor grace period: 60 s, or the lease plus 20 s when larger."""
    return max(60, lease_seconds(cfg) + 20)


def gate_flags(cfg: dict, runtime_config: bool = False) -> list:
    """cluster.feature_gates ({gate: bool}) as --feature-gates (apiserver, controller-manager, scheduler) and, for
    the apiserver, cluster.runtime_config ([group/version[/resource]=true, ...]) as --runtime-config."""
    cluster = cfg.get("cluster") or {}
    gates = cluster.get("feature_gates") or {}
    out = ["--feature-gates=" + ",".join("%s=%s" % (k, str(bool(v)).lower()) for k, v in sorted(gates.items()))
           ] if gates else []
    if runtime_config and cluster.get("runtime_config"):
        out.append("--runtime-config=" + ",".join(cluster["runtime_config"]))
    return out


def etcd(up) -> list:
    url, peer = up.etcd_url, f"http://127.0.0.1:{up.ports['etcd_peer']}"
    return [
        up.bin("etcd"), "--name=testbed", f"--data-dir={up.st.path('etcd')}",
        f"--listen-client-urls={url}", f"--advertise-client-urls={url}",
        f"--listen-peer-urls={peer}", f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=testbed={peer}", "--unsafe-no-fsync=true",
        "--quota-backend-bytes=8589934592", "--auto-compaction-retention=1",
        "--snapshot-count=50000", "--log-level=warn",
    ]


def kube_apiserver(up) -> list:
    pki = up.pki
    return [
        up.bin("kube-apiserver"),
        f"--etcd-servers={up.etcd_url}", "--etcd-prefix=/registry",
        "--bind-address=127.0.0.1", f"--secure-port={up.ports['apiserver']}",
        "--advertise-address=127.0.0.1", "--endpoint-reconciler-type=none",
        f"--tls-cert-file={pki('apiserver.crt')}", f"--tls-private-key-file={pki('apiserver.key')}",
        f"--client-ca-file={pki('ca.crt')}",
        f"--kubelet-client-certificate={pki('admin.crt')}", f"--kubelet-client-key={pki('admin.key')}",
        # pod logs (and exec, port-forward) go to the node's InternalIP (127.0.0.1, set by kwok) at its
        # daemonEndpoints port (kwok's server); no --kubelet-certificate-authority: kwok's server presents a
        # self-signed certificate, which the apiserver then does not verify
        "--kubelet-preferred-address-types=InternalIP",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        f"--service-account-key-file={pki('sa.pub')}",
        f"--service-account-signing-key-file={pki('sa.key')}",
        "--service-cluster-ip-range=10.96.0.0/16",
        "--authorization-mode=RBAC", "--anonymous-auth=false", "--allow-privileged=true",
        "--max-requests-inflight=0", "--max-mutating-requests-inflight=0",
        "--enable-priority-and-fairness=false",
        "--profiling=false", "--event-ttl=30m", "--v=1",
    ] + gate_flags(up.cfg, runtime_config=True)


def kube_controller_manager(up) -> list:
    kc = up.kubeconfig
    return [
        up.bin("kube-controller-manager"), f"--kubeconfig={kc}",
        f"--authentication-kubeconfig={kc}", f"--authorization-kubeconfig={kc}",
        "--leader-elect=false", "--bind-address=127.0.0.1", f"--secure-port={up.ports['kcm']}",
        ALWAYS_ALLOW,
        f"--service-account-private-key-file={up.pki('sa.key')}", f"--root-ca-file={up.pki('ca.crt')}",
        "--use-service-account-credentials=false", "--cluster-name=" + up.st.name,
        "--kube-api-qps=5000", "--kube-api-burst=10000",
        "--concurrent-daemonset-syncs=8", "--concurrent-deployment-syncs=8",
        "--concurrent-replicaset-syncs=8", "--concurrent-gc-syncs=40",
        f"--node-monitor-grace-period={grace_seconds(up.cfg)}s", "--v=1",
    ] + gate_flags(up.cfg)


def kube_scheduler(up) -> list:
    kc = up.kubeconfig
    sched_cfg = up.st.path("scheduler.yaml")
    with open(sched_cfg, "w") as f:
        yaml.safe_dump({
            "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "clientConnection": {"kubeconfig": kc, "qps": 5000, "burst": 10000},
            "leaderElection": {"leaderElect": False},
        }, f)
    return [
        up.bin("kube-scheduler"), f"--config={sched_cfg}",
        f"--authentication-kubeconfig={kc}", f"--authorization-kubeconfig={kc}",
        "--bind-address=127.0.0.1", f"--secure-port={up.ports['scheduler']}", ALWAYS_ALLOW, "--v=1",
    ] + gate_flags(up.cfg)


def kwok(up) -> list:
    kwok_cfg = up.st.path("kwok.yaml")
    with open(kwok_cfg, "w") as f:
        yaml.safe_dump({"apiVersion": "config.kwok.x-k8s.io/v1alpha1", "kind": "KwokConfiguration",
                        # explicit: kwok does not default options read from --config
                        "options": {
                            "cidr": "10.128.0.0/14", "manageAllNodes": False,
                            "enableDebuggingHandlers": True, "enableContentionProfiling": False,
                            "enableProfilingHandler": False,
                            "podPlayStageParallelism": 16, "nodePlayStageParallelism": 32,
                            "nodeLeaseParallelism": 16, "podsOnNodeSyncParallelism": 4,
                            "enablePodsOnNodeSyncListPager": True,
                            "enablePodsOnNodeSyncStreamWatch": False,
                        }}, f)
    return [
        up.bin("kwok"), f"--config={kwok_cfg}", f"--kubeconfig={up.kubeconfig}",
        "--manage-all-nodes=false", f"--manage-nodes-with-annotation-selector={ANN_KWOK}=fake",
        # every node's kubelet endpoint is kwok's own server (127.0.0.1, its port): the apiserver reads pod
        # logs there, which kwok serves from the files named by Logs objects (written by gpusim)
        "--node-ip=127.0.0.1", f"--node-port={up.ports['kwok']}",
        f"--server-address=127.0.0.1:{up.ports['kwok']}", "--cidr=10.128.0.0/14",
        f"--node-lease-duration-seconds={lease_seconds(up.cfg)}", "--enable-crds=Stage,Logs",
    ]


# Private mount namespace: tmpfs over /opt and /host-etc, assets copied from the module cache
# into it, then exec the operator (same PID). Nothing on the host is changed.
OPERATOR_SCRIPT = (
    "set -e; mount --make-rprivate / ; "
    "mount -t tmpfs -o size=64m gpuops-opt /opt; mkdir -p /opt/gpu-operator; "
    'cp -rL "$GPUOP_MOD/assets/." /opt/gpu-operator/; '
    'cp -rL "$GPUOP_MOD/manifests" /opt/gpu-operator/manifests; chmod -R u+w /opt/gpu-operator; '
    "mount -t tmpfs -o size=1m gpuops-host-etc /host-etc; "
    'cp "$GPUOP_OS_RELEASE" /host-etc/os-release; '
    'exec "$GPUOP_BIN" "$@"'
)


def start_gpu_operator(up) -> None:
    """The real gpu-operator controller, unless it runs; needs root and unshare(1) (it reads
    /opt/gpu-operator and /host-etc/os-release)."""
    st, cfg = up.st, up.cfg
    if up.running("gpu-operator"):
        return
    unshare = shutil.which("unshare")
    if os.geteuid() != 0 or not unshare:
        log("gpu-operator NOT started: needs root and unshare(1) (it reads /opt/gpu-operator)")
        return
    mod = up.assets["gpu-operator"]
    osr = cfg["cluster"].get("host_os_release") or {"ID": "ubuntu", "VERSION_ID": "22.04"}
    with open(st.path("os-release"), "w") as f:
        for k, v in osr.items():
            f.write(f'{k}="{v}"\n')
    # /host-etc must exist as a mount point; create it only if absent and remember that.
    try:
        os.mkdir("/host-etc")
        st.data["created_host_etc"] = True
    except FileExistsError:
        pass
    env = csv_operator_env(mod)
    env.update({
        "KUBECONFIG": up.kubeconfig, "OPERATOR_NAMESPACE": up.operator_namespace,
        "GPUOP_MOD": mod, "GPUOP_BIN": up.bin("gpu-operator"), "GPUOP_OS_RELEASE": st.path("os-release"),
    })
    start_process(st, "gpu-operator", [
        unshare, "-m", "--", "/bin/sh", "-c", OPERATOR_SCRIPT, "gpu-operator",
        f"--metrics-bind-address=127.0.0.1:{up.ports['operator_metrics']}",
        f"--health-probe-bind-address=127.0.0.1:{up.ports['operator_probe']}",
        "--leader-elect=false", "--zap-log-level=info",
    ], env=env)
    log("started gpu-operator (private mount namespace, assets from the module cache)")


def start_gpusim(up) -> None:
    """The simulated node agents (tests/testbed/gpusim) on the effective config."""
    st = up.st
    start_process(st, "gpusim", [
        python_with_kubernetes(), "-m", "gpusim", "--kubeconfig", up.kubeconfig, "--config", st.path("config.yaml"),
    ], env={"KUBECONFIG": up.kubeconfig, "PYTHONPATH": HERE + os.pathsep + REPO,
            "GPUOPS_TESTBED_NAME": st.name, "GPUOPS_TESTBED_STATE": st.dir,
            "GPUOPS_TESTBED_CONFIG": up.cfg_path,
            # the GPUs of NVIDIA's mock NVML, dumped by build.sh beside the bin dir (gpusim/catalog.py)
            "GPUSIM_NVML_GPUS": os.path.join(os.path.dirname(up.binp), "nvml-gpus.json")},
        cwd=HERE)
