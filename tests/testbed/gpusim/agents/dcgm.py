"""The simulated node agent of NVIDIA's DCGM exporter: ``GET /metrics`` on loopback answers the XID metric of every
simulated GPU node (``gpusim/dcgm.py``), rendered from the node cache at each scrape, so an XID set or cleared with
``gpusim.gpuops.dev/unhealthy-gpus`` is in the next scrape.

One HTTP server for the whole cluster (a real exporter runs per node; the ``Hostname`` label names the node either
way), on ``127.0.0.1`` and the port ``simulation.dcgm_exporter_port`` (0: one the kernel picks). Its URL is written to
``$GPUOPS_TESTBED_STATE/dcgm-exporter.url`` once it listens (tests read it there) and logged.
"""

import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from gpusim import contract as C
from gpusim import dcgm
from gpusim.controller import Agent

URL_FILE = "dcgm-exporter.url"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class DCGMExporterAgent(Agent):
    """Serves /metrics; reconciles nothing (no writes to the API)."""

    name = "dcgm-exporter"
    workers = 0

    def setup(self):
        self.server = None
        self.url = None
        self.ctx.nodes()

    def watched(self):
        return (self.ctx.nodes(),)

    def metrics(self):
        def product_of(node):
            name, count = C.node_product_and_count(node, self.cfg.get("default_gpus", 8))
            return (self.ctx.catalog.product(name) if name else None), count
        return dcgm.render(self.ctx.nodes().items(), product_of, self.cfg["driver"]["version"])

    def start(self):
        agent = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's name)
                if self.path.split("?")[0] != "/metrics":
                    self.send_error(404, "only /metrics here")
                    return
                body = agent.metrics().encode()
                self.send_response(200)
                self.send_header("Content-Type", CONTENT_TYPE)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, fmt, *args):
                agent.log.debug("%s " + fmt, self.address_string(), *args)

        self.server = ThreadingHTTPServer(("127.0.0.1", int(self.cfg.get("dcgm_exporter_port") or 0)), Handler)
        self.server.daemon_threads = True
        self.url = "http://127.0.0.1:%d/metrics" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, name=self.name, daemon=True).start()
        state = os.environ.get("GPUOPS_TESTBED_STATE")
        if state:
            tmp = os.path.join(state, URL_FILE + ".tmp")
            with open(tmp, "w") as handle:
                handle.write(self.url + "\n")
            os.replace(tmp, os.path.join(state, URL_FILE))
        self.log.info("DCGM exporter metrics at %s", self.url)

    def stop(self, timeout=5):
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
