"""Entry point: python3 -m gpusim --kubeconfig K --config FILE [--agents a,b] [--ready-file F]."""

import argparse
import logging
import os
import signal
import sys
import threading
import time

from gpusim import config as config_mod


def parse_args(argv):
    p = argparse.ArgumentParser(prog="gpusim", description="Simulated NVIDIA/OpenShift agents for "
                                "the gpuops virtual GPU cluster.")
    p.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG"))
    p.add_argument("--context", default=None)
    p.add_argument("--config", default=None, help="YAML file; only its 'simulation:' section is read")
    p.add_argument("--agents", default=None,
                   help="comma list overriding simulation.agents (nfd,gfd,mig-manager,olm,machine-api,workload-logs,"
                        "dra-kubelet-plugin,dcgm-exporter,gpucluster)")
    p.add_argument("--ready-file", default=None,
                   help="write this file once every agent's caches are synced")
    p.add_argument("--log-level", default=os.environ.get("GPUSIM_LOG_LEVEL", "INFO"))
    return p.parse_args(argv)


def load_config(args):
    """The simulation config of --config (and --agents); raises config.ConfigError."""
    text = None
    if args.config:
        with open(args.config) as f:
            text = f.read()
    cfg = config_mod.load(text)
    if args.agents:
        cfg["agents"] = [a.strip() for a in args.agents.split(",") if a.strip()]
        cfg = config_mod.validate(cfg)
    return cfg


def handle_signals(stop, stats, log):
    """SIGTERM/SIGINT stop the agents; SIGUSR1 logs the request count and queue lengths."""
    def on_signal(signum, _frame):
        log.info("signal %d: shutting down", signum)
        stop.set()

    def on_usr1(_signum, _frame):
        if stats["client"] is not None:
            log.info("stats: %d API requests so far; queues %s", stats["client"].requests,
                     {a.name: len(a.queue) for a in stats["agents"]})

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGUSR1, on_usr1)


def announce_ready(agents, stop, ready_file, log):
    """Log (and write ``ready_file`` with our PID) once every agent's caches are synced."""
    for a in agents:
        while not stop.is_set() and not a.ready(timeout=5):
            log.info("waiting for %s caches", a.name)
    if stop.is_set():
        return
    log.info("all agent caches synced")
    if ready_file:
        with open(ready_file, "w") as f:
            f.write("%d\n" % os.getpid())


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(stream=sys.stderr, level=getattr(logging, args.log_level.upper(), logging.INFO),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("gpusim")
    try:
        cfg = load_config(args)
    except config_mod.ConfigError as exc:
        log.error("bad config: %s", exc)
        return 2

    # imported late: the kubernetes client is only needed for the live run
    from gpusim import kube
    from gpusim.agents import AGENTS
    from gpusim.catalog import Catalog
    from gpusim.controller import Context

    stop = threading.Event()
    stats = {"client": None, "agents": []}
    handle_signals(stop, stats, log)
    client = kube.Kube(args.kubeconfig, args.context)
    ctx = Context(client, cfg, Catalog(cfg.get("catalog_overrides")), stop)
    agents = [AGENTS[name](ctx) for name in cfg["agents"]]
    stats.update(client=client, agents=agents)
    for a in agents:
        a.setup()
    for a in agents:
        a.start()
    log.info("gpusim started: agents=%s operator_namespace=%s", ",".join(cfg["agents"]),
             ctx.operator_namespace)
    threading.Thread(target=announce_ready, args=(agents, stop, args.ready_file, log), name="ready",
                     daemon=True).start()
    last = time.monotonic()
    while not stop.wait(1.0):
        if time.monotonic() - last >= 300:
            last = time.monotonic()
            log.info("alive: %d API requests so far; queues %s", client.requests,
                     {a.name: len(a.queue) for a in agents})
    for a in agents:
        a.stop(timeout=5)
    log.info("gpusim stopped (%d API requests)", client.requests)
    return 0
