"""The DCGM exporter's XID metric of the simulated GPUs (pure): what NVIDIA's dcgm-exporter serves on a GPU node's
``/metrics`` for ``DCGM_FI_DEV_XID_ERRORS`` (a gauge: the code of the last XID error of the GPU, 0 when none),
with the labels of its release template (docs/facts.md, "DCGM exporter": ``gpu``, ``UUID``, ``pci_bus_id``,
``device``, ``modelName``, ``Hostname``, the label field ``DCGM_FI_DRIVER_VERSION`` and the XID attributes
``err_code``, ``err_msg``).

One exposition for every simulated GPU node where the exporter runs (its deploy label is not ``false`` or
``paused-for-mig-change``): the first n GPUs of a node annotated ``gpusim.gpuops.dev/unhealthy-gpus: "<n>[:<xid>]"``
report that XID, the others 0; without the annotation (the repair) every GPU reports 0. Whole GPUs only: no
series per MIG instance. The agent that serves it is ``agents/dcgm.py``.
"""

from gpusim import contract as C
from gpusim import dra

METRIC = "DCGM_FI_DEV_XID_ERRORS"
HELP = "Value of the last XID error encountered."  # etc/default-counters.csv
DEPLOY_LABEL = C.DEPLOY_PREFIX + "dcgm-exporter"
# dcgm-exporter's internal/pkg/collector/xid_errors.go, for the codes the simulator uses
XID_TEXT = {0: "No Error", 13: "Graphics Engine Exception", 31: "GPU memory page fault", 43: "GPU stopped processing",
            48: "Double Bit ECC Error", 63: "ECC page retirement or row remapping recording event",
            64: "ECC page retirement or row remapper recording failure", 74: "NVLINK Error",
            79: "GPU has fallen off the bus", 94: "Contained ECC error", 95: "Uncontained ECC error",
            109: "Context Switch Timeout Error"}
UNKNOWN = "Unknown Error"


def exporter_runs(node):
    return C.node_labels(node).get(DEPLOY_LABEL) not in ("false", C.PAUSED)


def _quote(value):
    return str(value).replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n")


def gpu_series(node, model, gpus, driver_version):
    """[(labels dict, value)] of one node's GPUs."""
    name = C.node_name(node)
    bad, xid = C.unhealthy_gpus(node)
    out = []
    for minor in range(gpus):
        value = xid if minor < bad else 0
        out.append(({"gpu": str(minor), "UUID": dra.gpu_uuid(name, minor),
                     "pci_bus_id": "00000000:%02X:00.0" % (0x10 + minor), "device": "nvidia%d" % minor,
                     "modelName": model, "Hostname": name, "DCGM_FI_DRIVER_VERSION": driver_version,
                     "err_code": str(value), "err_msg": XID_TEXT.get(value, UNKNOWN)}, value))
    return out


def exposition(rows):
    """The text format of ``rows`` ([(labels, value)], in the exporter's label order)."""
    lines = ["# HELP %s %s" % (METRIC, HELP), "# TYPE %s gauge" % METRIC]
    for labels, value in rows:
        lines.append("%s{%s} %s" % (METRIC, ",".join('%s="%s"' % (k, _quote(v)) for k, v in labels.items()), value))
    return "\n".join(lines) + "\n"


def render(nodes, product_of, driver_version):
    """The exposition of every node of ``nodes`` with GPUs where the exporter runs; ``product_of(node)`` is
    (catalog product dict or None, GPU count)."""
    rows = []
    for node in sorted(nodes, key=C.node_name):
        product, gpus = product_of(node)
        if product is None or not gpus or not exporter_runs(node):
            continue
        rows.extend(gpu_series(node, product.get("product") or "", gpus, driver_version))
    return exposition(rows)
