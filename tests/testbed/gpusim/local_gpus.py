"""GPU facts the simulator holds itself: NOT from NVIDIA's mock NVML (docs/testbed.md, "Simulated GPUs").

FALLBACK: GPUs the virtual cluster uses that go-nvml does not mock, in the dump's shape.
CORRECTIONS: fields of a mocked GPU where go-nvml's mock contradicts real hardware, keyed by the name
the mock reports; ``profiles`` is keyed by the NVML GPU-instance profile index (the dump's "profile").
Every row names its evidence; gpusim logs each use (gpusim.catalog).
"""

# `nvidia-smi` figures of real GPUs (docs/facts.md, "GPU feature discovery labels" and "MIG profiles")
FALLBACK = (
    {"name": "Tesla T4", "memory_mib": 15360, "pci_device_id": "0x1EB8", "compute_capability": "7.5",
     "mig_capable": False, "profiles": [], "evidence": "not mocked by go-nvml; nvidia-smi on a T4"},
    {"name": "NVIDIA L40S", "memory_mib": 46068, "pci_device_id": "0x26B9", "compute_capability": "8.9",
     "mig_capable": False, "profiles": [], "evidence": "not mocked by go-nvml; nvidia-smi on an L40S"},
    {"name": "NVIDIA L4", "memory_mib": 23034, "pci_device_id": "0x27B8", "compute_capability": "8.9",
     "mig_capable": False, "profiles": [], "evidence": "not mocked by go-nvml; nvidia-smi on an L4"},
    {"name": "NVIDIA A10", "memory_mib": 23028, "pci_device_id": "0x2236", "compute_capability": "8.6",
     "mig_capable": False, "profiles": [], "evidence": "not mocked by go-nvml; nvidia-smi on an A10"},
)


def _eight_slice(memory, names=None):
    """Corrections of go-nvml's 8-slice Hopper/Blackwell tables (profile index: fields); ``names`` only
    (profile index: name) where go-nvlib's names from the mock's memory figures are wrong."""
    fixes = {0: {"memory_mib": memory[0]}, 7: {"memory_mib": memory[0]},
             9: {"memory_mib": memory[1], "placements": [[0, 2], [2, 2], [4, 2], [6, 2]]},
             1: {"memory_mib": memory[1]}, 2: {"memory_mib": memory[2], "placements": [[0, 4], [4, 4]]},
             3: {"memory_mib": memory[2]}, 4: {"memory_mib": memory[3], "placements": [[0, 8]]}}
    for index, name in (names or {}).items():
        fixes[index]["name"] = name
    return fixes


_HOPPER_PLACEMENTS = ("go-nvml's H100/H200/B200 tables give 1g.<2 slices> size 1 at 0..6, 3g size 3 and 7g "
                      "size 7; real `nvidia-smi mig -lgipp` on H100 gives {0,2,4,6}:2, {0,4}:4 and {0}:8, as "
                      "go-nvml's own A100 table does")

CORRECTIONS = {
    "Mock NVIDIA A100-SXM4-40GB": {
        "name": "NVIDIA A100-SXM4-40GB",
        "evidence": "go-nvml prefixes this one name with 'Mock ' (its other A100s have none); nvidia-smi "
                    "and the MIG user guide print 'NVIDIA A100-SXM4-40GB'"},
    "NVIDIA A30-PCIE-24GB": {
        "name": "NVIDIA A30",
        "profiles": {0: {"memory_mib": 5952}, 7: {"memory_mib": 5952}, 1: {"memory_mib": 11968},
                     8: {"memory_mib": 11968}, 3: {"memory_mib": 24000}},
        "evidence": "nvidia-smi names the GPU 'NVIDIA A30'; real `nvidia-smi mig -lgip` (driver 535.183.01) "
                    "gives 5.81/11.69/23.44 GiB, go-nvml 5836/11672/23344 MiB"},
    "NVIDIA H100 80GB HBM3": {
        "memory_mib": 81559,
        "profiles": _eight_slice((9984, 20096, 40448, 81152)),
        "evidence": "nvidia-smi totals 81559 MiB and `-lgip` 9.75/19.62/39.50/79.25 GiB (go-nvml: round "
                    "GiB); " + _HOPPER_PLACEMENTS},
    "NVIDIA H200 141GB HBM3e": {
        "name": "NVIDIA H200", "pci_device_id": "0x2335", "memory_mib": 143771,
        "profiles": _eight_slice((16512, 33216, 71232, 143040),
                                 {0: "1g.18gb", 7: "1g.18gb+me", 2: "3g.71gb", 3: "4g.71gb"}),
        "evidence": "go-nvml's profile memory (8 x 18432 MiB) exceeds its device (144384 MiB), so go-nvlib "
                    "names both 1-slice profiles 1g.35gb; names from the MIG user guide's H200 table, "
                    "PCI ID from gpu-operator's default mig-parted config; memory figures inferred; "
                    + _HOPPER_PLACEMENTS},
    "NVIDIA B200 180GB HBM3e": {
        "name": "NVIDIA B200", "pci_device_id": "0x2901", "memory_mib": 183359,
        "profiles": _eight_slice((22528, 45312, 90816, 182400), {0: "1g.23gb", 7: "1g.23gb+me"}),
        "evidence": "go-nvml's profile memory (8 x 23552 MiB) exceeds its device (184320 MiB), so go-nvlib "
                    "names both 1-slice profiles 1g.45gb; names from the MIG user guide's B200 table, "
                    "1- and 2-slice memory from published `-lgip`, PCI ID from gpu-operator's default "
                    "mig-parted config; " + _HOPPER_PLACEMENTS},
}

# Real NVML GPU-instance profile IDs (what `nvidia-smi mig -lgip` prints), by the number of memory slices of the
# GPU and the NVML profile index (NVML_GPU_INSTANCE_PROFILE_*) the dump's "profile" holds: go-nvml's mock returns
# the index itself as GpuInstanceProfileInfo.Id. NVIDIA's DRA driver names MIG devices with the real ID.
# Evidence: docs/facts.md, "8-memory-slice GPUs" and "A30" (published `-lgip` output).
GI_PROFILE_IDS = {
    8: {0: 19, 7: 20, 9: 15, 1: 14, 2: 9, 3: 5, 4: 0},
    4: {0: 14, 7: 21, 1: 5, 8: 6, 3: 0},
}

# Architecture and brand of the fallback rows (go-nvlib's strings, as NVIDIA's DRA driver publishes them; the
# mock's GPUs carry their own in the dump): not from NVIDIA's mock, from each GPU's architecture.
FALLBACK_ARCH = {"Tesla T4": ("Turing", "Nvidia"), "NVIDIA L40S": ("Ada Lovelace", "Nvidia"),
                 "NVIDIA L4": ("Ada Lovelace", "Nvidia"), "NVIDIA A10": ("Ampere", "Nvidia")}
