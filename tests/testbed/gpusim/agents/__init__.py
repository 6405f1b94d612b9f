"""Thin watch loops around the pure logic. One Agent subclass per simulated component."""

from gpusim.agents.nodes import DevicePluginAgent, MigManagerAgent, NFDAgent
from gpusim.agents.olm import OLMAgent
from gpusim.agents.machineapi import MachineAPIAgent
from gpusim.agents.workloads import WorkloadLogAgent
from gpusim.agents.dra import DRAKubeletPluginAgent
from gpusim.agents.dcgm import DCGMExporterAgent
from gpusim.agents.gpucluster import GPUClusterAgent

AGENTS = {
    "nfd": NFDAgent,
    "gfd": DevicePluginAgent,
    "mig-manager": MigManagerAgent,
    "olm": OLMAgent,
    "machine-api": MachineAPIAgent,
    "workload-logs": WorkloadLogAgent,
    "dra-kubelet-plugin": DRAKubeletPluginAgent,
    "dcgm-exporter": DCGMExporterAgent,
    "gpucluster": GPUClusterAgent,
}
