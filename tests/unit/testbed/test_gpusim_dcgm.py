"""The simulated DCGM exporter: DCGM_FI_DEV_XID_ERRORS per GPU with the exporter's labels (gpusim/dcgm.py), served
on loopback by the dcgm-exporter agent (agents/dcgm.py) from the node cache at each scrape."""
import urllib.error
import urllib.request

from gpusim import contract as C
from gpusim import dcgm
from gpusim.agents.dcgm import URL_FILE, DCGMExporterAgent
from gpusim_util import CATALOG, cfg, node


class Nodes(object):
    """The node cache the agent reads (an informer's items())."""

    def __init__(self):
        self.store = {}

    def put(self, obj):
        self.store[obj["metadata"]["name"]] = obj

    def items(self):
        return list(self.store.values())

    def wait_synced(self, timeout=None):
        return True


class Ctx(object):
    def __init__(self):
        self.cfg, self.catalog, self.kube, self._nodes = cfg(), CATALOG, None, Nodes()

    def nodes(self):
        return self._nodes


def setup(agent_cls):
    ctx = Ctx()
    agent = agent_cls(ctx)
    agent.setup()
    return ctx, agent


def product_of(n):
    name, count = C.node_product_and_count(n)
    return (CATALOG.product(name) if name else None), count


def series(text):
    """{(Hostname, gpu): (value, labels)} of an exposition."""
    out = {}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        head, value = line.rsplit(" ", 1)
        labels = dict(pair.split("=", 1) for pair in head[head.index("{") + 1:-1].split(","))
        labels = dict((k, v.strip('"')) for k, v in labels.items())
        out[(labels["Hostname"], labels["gpu"])] = (int(value), labels)
    return out


def test_every_gpu_reports_0_and_the_first_n_of_an_unhealthy_node_their_xid():
    bad = node("a100-0", annotations={C.ANN_UNHEALTHY: "2:48"})
    good = node("t4-0", product_name="Tesla-T4", gpus=1)
    cpu = node("cpu-0", product_name=None)
    text = dcgm.render([good, bad, cpu], product_of, "580.95.05")
    assert text.startswith("# HELP DCGM_FI_DEV_XID_ERRORS Value of the last XID error encountered.\n"
                           "# TYPE DCGM_FI_DEV_XID_ERRORS gauge\n")
    got = series(text)
    assert sorted(got) == [("a100-0", str(i)) for i in range(8)] + [("t4-0", "0")]
    assert [got[("a100-0", str(i))][0] for i in range(8)] == [48, 48, 0, 0, 0, 0, 0, 0] and got[("t4-0", "0")][0] == 0
    value, labels = got[("a100-0", "1")]
    assert list(labels) == ["gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname", "DCGM_FI_DRIVER_VERSION",
                            "err_code", "err_msg"]
    assert labels["UUID"].startswith("GPU-") and labels["device"] == "nvidia1"
    assert labels["modelName"] == "NVIDIA A100-SXM4-40GB" and labels["pci_bus_id"] == "00000000:11:00.0"
    assert (labels["err_code"], labels["err_msg"]) == ("48", "Double Bit ECC Error")
    assert got[("a100-0", "5")][1]["err_msg"] == "No Error"


def test_no_series_where_the_exporter_is_paused_or_switched_off():
    paused = node("a100-0", labels={dcgm.DEPLOY_LABEL: C.PAUSED})
    off = node("a100-1", labels={dcgm.DEPLOY_LABEL: "false"})
    on = node("a100-2", labels={dcgm.DEPLOY_LABEL: "true"}, annotations={C.ANN_UNHEALTHY: "1:999"})
    got = series(dcgm.render([paused, off, on], product_of, "580"))
    assert set(h for h, _gpu in got) == {"a100-2"} and got[("a100-2", "0")][1]["err_msg"] == "Unknown Error"


def test_the_agent_serves_the_node_cache_at_each_scrape_on_loopback(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUOPS_TESTBED_STATE", str(tmp_path))
    ctx, agent = setup(DCGMExporterAgent)
    ctx.nodes().put(node("a100-0"))
    agent.start()
    try:
        url = (tmp_path / URL_FILE).read_text().strip()
        assert url == agent.url and url.startswith("http://127.0.0.1:") and url.endswith("/metrics")
        with urllib.request.urlopen(url, timeout=5) as answer:
            assert answer.headers["Content-Type"].startswith("text/plain; version=0.0.4")
            assert series(answer.read().decode())[("a100-0", "0")][0] == 0
        ctx.nodes().put(node("a100-0", annotations={C.ANN_UNHEALTHY: "1"}))
        with urllib.request.urlopen(url, timeout=5) as answer:
            assert series(answer.read().decode())[("a100-0", "0")][0] == 79
        try:
            urllib.request.urlopen(url.replace("/metrics", "/api/v1/query"), timeout=5)
            raise AssertionError("not 404")
        except urllib.error.HTTPError as exc:
            assert exc.code == 404
    finally:
        agent.stop()
