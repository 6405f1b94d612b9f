"""Simulation configuration: defaults, loading and validation (pure).

The simulator reads ONLY the ``simulation:`` section of the YAML file given with ``--config``
(the file may hold other sections for the testbed CLI). Every key is optional.
"""

import copy

import yaml

MODES = ("auto", "always", "operator")

DEFAULTS = {
    # Agents to run (threads). Any subset of: nfd, gfd, mig-manager, olm, machine-api, workload-logs,
    # dra-kubelet-plugin, dcgm-exporter, gpucluster.
    "agents": ["nfd", "gfd", "mig-manager", "olm", "machine-api", "workload-logs", "dra-kubelet-plugin",
               "dcgm-exporter", "gpucluster"],
    # Loopback port of the dcgm-exporter agent's /metrics (0: one the kernel picks; its URL is written to
    # $GPUOPS_TESTBED_STATE/dcgm-exporter.url).
    "dcgm_exporter_port": 0,
    # Namespace of the GPU operator (ConfigMaps for mig-parted and the device plugin live here).
    # Empty: env OPERATOR_NAMESPACE, else "gpu-operator".
    "operator_namespace": "",
    # NFD worker: "always" labels every node; "on-cr" only while a NodeFeatureDiscovery CR exists.
    "nfd": "always",
    # Where the device plugin / GFD / mig-manager "run":
    #   operator: only where the operator's deploy label nvidia.com/gpu.deploy.<x> is "true"
    #   always:   on every GPU node unless that label says otherwise (paused-for-mig-change/false)
    #   auto:     "operator" while a ClusterPolicy exists, else "always"
    "device_plugin": "auto",
    "gfd": "",            # empty: same as device_plugin
    "mig_manager": "",    # empty: same as device_plugin
    # Seconds a MIG reconfiguration stays "pending" before it ends (x slow_factor with inject=slow).
    "mig_reconfigure_seconds": 2.0,
    # Seconds the simulated DRA kubelet plugin takes to publish a node's ResourceSlice after its pod is Running
    # (the stack-switch time of a cutover from the device plugin to DRA); 0: at once.
    "dra_plugin_start_seconds": 0.0,
    # Play the GPU operator v26.7's node labelling for a ClusterPolicy too (deploy labels of the ClusterPolicy stack
    # where absent, the DRA stack's swept: gpusim/gpucluster.py), in a test bed without the operator binary.
    "clusterpolicy_node_labels": False,
    "slow_factor": 10,
    # Full re-list interval of every informer (seconds); watches are restarted more often.
    "resync_seconds": 300,
    "watch_timeout_seconds": 240,
    # Defaults used when no ClusterPolicy exists.
    "defaults": {
        "mig_strategy": "single",
        "device_plugin_config": {"name": "", "default": ""},
        "mig_parted_config": "",
    },
    # What NFD reports (all nodes) and what GFD reports for the driver.
    "os": {"id": "rhcos", "version_id": "4.18", "kernel": "5.14.0-427.50.1.el9_4.x86_64"},
    # dynamic_mig: the DRA driver's DynamicMIG gate (gpusim.dynmig; per node: gpusim.gpuops.dev/dra-dynamic-mig).
    "driver": {"version": "580.95.05", "cuda": "13.0", "dynamic_mig": False},
    # GPUs per node when a node has a product annotation but no count.
    "default_gpus": 8,
    # Extra/changed GPU products, merged over the simulated GPUs (gpusim.catalog.merge).
    "catalog_overrides": {},
    "olm": {
        "install_seconds": 1.0,
        # CatalogSources created (and kept READY) at start; removed/re-added per OperatorHub.
        "default_catalog_sources": [
            {"name": "certified-operators", "namespace": "openshift-marketplace",
             "displayName": "Certified Operators", "publisher": "Red Hat"},
            {"name": "redhat-operators", "namespace": "openshift-marketplace",
             "displayName": "Red Hat Operators", "publisher": "Red Hat"},
        ],
        # Only CatalogSources with these names serve packages; empty list = every CatalogSource
        # serves every package (mirrored catalogs get the packages of the originals).
        "serving_catalogs": [],
        # Path of the gpu-operator module dir (bundle/manifests); empty: derived from
        # tests/testbed/hack/versions.env + GOMODCACHE.
        "gpu_operator_module_dir": "",
        "packages": {
            "gpu-operator-certified": {
                "display_name": "NVIDIA GPU Operator",
                "catalog": "certified-operators",
                "default_channel": "v26.7",
                "channels": {
                    "stable": ["gpu-operator-certified.v25.10.1", "gpu-operator-certified.v26.3.3",
                               "gpu-operator-certified.v26.7.0"],
                    "v26.7": ["gpu-operator-certified.v26.7.0"],
                    "v26.3": ["gpu-operator-certified.v26.3.3"],
                    "v25.10": ["gpu-operator-certified.v25.10.1"],
                },
                "install_modes": ["OwnNamespace", "SingleNamespace"],
                "bundle": "gpu-operator",
            },
            "nfd": {
                "display_name": "Node Feature Discovery Operator",
                "catalog": "redhat-operators",
                "default_channel": "stable",
                # two CSVs, named like the OpenShift NFD operator's (nfd.<version>-<build timestamp>), so an
                # install pinned to the first is offered the second (tests/integration/test_upgrade.py)
                "channels": {"stable": ["nfd.4.18.0-202509100907", "nfd.4.18.0-202510211040"]},
                "install_modes": ["OwnNamespace", "SingleNamespace"],
                "bundle": "nfd",
            },
        },
    },
    "machine_api": {
        "namespace": "openshift-machine-api",
        # instance type (providerSpec.value.instanceType / vmSize / machineType) -> GPUs
        "instance_types": {
            "p4d.24xlarge": {"product": "A100-SXM4-40GB", "gpus": 8, "cpu": 96, "memory_mb": 1179648},
            "p4de.24xlarge": {"product": "A100-SXM4-80GB", "gpus": 8, "cpu": 96, "memory_mb": 1179648},
            "p5.48xlarge": {"product": "H100-80GB-HBM3", "gpus": 8, "cpu": 192, "memory_mb": 2097152},
            "p5e.48xlarge": {"product": "H200", "gpus": 8, "cpu": 192, "memory_mb": 2097152},
            "g4dn.xlarge": {"product": "T4", "gpus": 1, "cpu": 4, "memory_mb": 16384},
            "g4dn.12xlarge": {"product": "T4", "gpus": 4, "cpu": 48, "memory_mb": 196608},
            "g6e.xlarge": {"product": "L40S", "gpus": 1, "cpu": 4, "memory_mb": 32768},
            "g6e.12xlarge": {"product": "L40S", "gpus": 4, "cpu": 48, "memory_mb": 393216},
            "Standard_NC24ads_A100_v4": {"product": "A100-PCIE-80GB", "gpus": 1, "cpu": 24,
                                         "memory_mb": 225280},
            "a2-highgpu-8g": {"product": "A100-SXM4-40GB", "gpus": 8, "cpu": 96, "memory_mb": 696320},
        },
        "default_cpu": 16,
        "default_memory_mb": 65536,
        "provision_seconds": 0.5,
    },
}


class ConfigError(ValueError):
    pass


def deep_merge(base, override):
    """Return base updated recursively with override (dicts merge, everything else replaces)."""
    out = copy.deepcopy(base)
    for key, value in (override or {}).items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def load(text_or_none):
    """Parse a config file's text (or None) into the effective ``simulation`` settings."""
    doc = yaml.safe_load(text_or_none) if text_or_none else {}
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        raise ConfigError("config file must be a mapping")
    sim = doc.get("simulation")
    if sim is None:
        sim = {}
    if not isinstance(sim, dict):
        raise ConfigError("'simulation' must be a mapping")
    cfg = deep_merge(DEFAULTS, sim)
    if not cfg.get("operator_namespace"):
        # the testbed CLI's own key for the namespace it runs the operator with
        cfg["operator_namespace"] = ((doc.get("cluster") or {}).get("operator_namespace") or "")
    return validate(cfg)


def validate(cfg):
    for key in ("device_plugin",):
        if cfg[key] not in MODES:
            raise ConfigError("simulation.%s must be one of %s" % (key, ", ".join(MODES)))
    for key in ("gfd", "mig_manager"):
        if not cfg[key]:
            cfg[key] = cfg["device_plugin"]
        if cfg[key] not in MODES:
            raise ConfigError("simulation.%s must be one of %s" % (key, ", ".join(MODES)))
    if cfg["nfd"] not in ("always", "on-cr"):
        raise ConfigError("simulation.nfd must be 'always' or 'on-cr'")
    known = {"nfd", "gfd", "mig-manager", "olm", "machine-api", "workload-logs", "dra-kubelet-plugin",
             "dcgm-exporter", "gpucluster"}
    unknown = set(cfg["agents"]) - known
    if unknown:
        raise ConfigError("unknown agents: %s" % ", ".join(sorted(unknown)))
    try:
        cfg["mig_reconfigure_seconds"] = float(cfg["mig_reconfigure_seconds"])
        cfg["dra_plugin_start_seconds"] = float(cfg["dra_plugin_start_seconds"])
        cfg["slow_factor"] = float(cfg["slow_factor"])
        cfg["olm"]["install_seconds"] = float(cfg["olm"]["install_seconds"])
    except (TypeError, ValueError):
        raise ConfigError("durations must be numbers")
    if cfg["mig_reconfigure_seconds"] < 0:
        raise ConfigError("simulation.mig_reconfigure_seconds must be >= 0")
    if not isinstance(cfg["driver"].get("dynamic_mig"), bool):
        raise ConfigError("simulation.driver.dynamic_mig must be true or false")
    if not isinstance(cfg["clusterpolicy_node_labels"], bool):
        raise ConfigError("simulation.clusterpolicy_node_labels must be true or false")
    if cfg["dra_plugin_start_seconds"] < 0:
        raise ConfigError("simulation.dra_plugin_start_seconds must be >= 0")
    for name, pkg in cfg["olm"]["packages"].items():
        if not pkg.get("channels"):
            raise ConfigError("olm package %s has no channels" % name)
        if pkg.get("default_channel") and pkg["default_channel"] not in pkg["channels"]:
            raise ConfigError("olm package %s: default_channel %s is not a channel"
                              % (name, pkg["default_channel"]))
    return cfg
