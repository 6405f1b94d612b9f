// Command nvml-dump prints, as JSON, what NVIDIA's mock NVML (github.com/NVIDIA/go-nvml pkg/nvml/mock)
// answers for every GPU it mocks: the name, memory, PCI device ID and compute capability NVML reports,
// and each MIG GPU-instance profile with the placements NVML offers for it. Profile names are made by
// go-nvlib (github.com/NVIDIA/go-nvlib pkg/nvlib/device), as NVIDIA's device plugin and GPU feature
// discovery make them. Everything is read through the NVML API (device handles,
// GetGpuInstanceProfileInfo, GetGpuInstancePossiblePlacements), never from the mock's tables, so the dump
// is what NVML would answer. The virtual GPU cluster's simulated node agents (tests/testbed/gpusim) read it.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime/debug"

	"github.com/NVIDIA/go-nvlib/pkg/nvlib/device"
	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// every GPU configuration the mock defines (pkg/nvml/mock/gpus)
var mocked = []gpus.Config{
	gpus.A100_SXM4_40GB, gpus.A100_SXM4_80GB, gpus.A100_PCIE_40GB, gpus.A100_PCIE_80GB,
	gpus.A30_PCIE_24GB, gpus.H100_SXM5_80GB, gpus.H200_SXM5_141GB, gpus.B200_SXM5_180GB,
}

type placement struct {
	Start uint32 `json:"start"`
	Size  uint32 `json:"size"`
}

type profile struct {
	Name          string      `json:"name"`           // go-nvlib's name, e.g. 1g.5gb, 1g.5gb+me
	Profile       int         `json:"profile"`        // the NVML_GPU_INSTANCE_PROFILE_* index queried
	ID            uint32      `json:"id"`             // GpuInstanceProfileInfo.Id
	SliceCount    uint32      `json:"slice_count"`    // compute slices
	InstanceCount uint32      `json:"instance_count"` // most instances per GPU
	MemoryMiB     uint64      `json:"memory_mib"`     // GpuInstanceProfileInfo.MemorySizeMB
	Placements    []placement `json:"placements"`     // GetGpuInstancePossiblePlacements (memory slices)
	// the engine counts of GpuInstanceProfileInfo (what NVIDIA's DRA driver publishes as capacity)
	Multiprocessors uint32 `json:"multiprocessors"`
	CopyEngines     uint32 `json:"copy_engines"`
	Decoders        uint32 `json:"decoders"`
	Encoders        uint32 `json:"encoders"`
	JpegEngines     uint32 `json:"jpeg_engines"`
	OfaEngines      uint32 `json:"ofa_engines"`
}

type gpu struct {
	Name              string    `json:"name"`               // nvmlDeviceGetName
	MemoryMiB         uint64    `json:"memory_mib"`         // nvmlDeviceGetMemoryInfo total / MiB
	PciDeviceID       string    `json:"pci_device_id"`      // upper 16 bits of nvmlPciInfo.pciDeviceId
	ComputeCapability string    `json:"compute_capability"` // nvmlDeviceGetCudaComputeCapability
	Architecture      string    `json:"architecture"`       // go-nvlib GetArchitectureAsString
	Brand             string    `json:"brand"`              // go-nvlib GetBrandAsString
	MigCapable        bool      `json:"mig_capable"`
	Profiles          []profile `json:"profiles"`
}

type dump struct {
	Source map[string]string `json:"source"` // module path -> version this program was built with
	GPUs   []gpu             `json:"gpus"`
}

func check(ret nvml.Return, what string) {
	if ret != nvml.SUCCESS {
		fmt.Fprintf(os.Stderr, "nvml-dump: %s: %v\n", what, ret)
		os.Exit(1)
	}
}

func must(err error) {
	if err != nil {
		fmt.Fprintf(os.Stderr, "nvml-dump: %v\n", err)
		os.Exit(1)
	}
}

// ciProfile is the compute-instance profile that spans a whole GPU instance of g compute slices.
var ciProfile = map[uint32]int{
	1: nvml.COMPUTE_INSTANCE_PROFILE_1_SLICE, 2: nvml.COMPUTE_INSTANCE_PROFILE_2_SLICE,
	3: nvml.COMPUTE_INSTANCE_PROFILE_3_SLICE, 4: nvml.COMPUTE_INSTANCE_PROFILE_4_SLICE,
	6: nvml.COMPUTE_INSTANCE_PROFILE_6_SLICE, 7: nvml.COMPUTE_INSTANCE_PROFILE_7_SLICE,
	8: nvml.COMPUTE_INSTANCE_PROFILE_8_SLICE,
}

func profiles(lib device.Interface, dev nvml.Device, total uint64) []profile {
	out := []profile{}
	for i := 0; i < nvml.GPU_INSTANCE_PROFILE_COUNT; i++ {
		info, ret := dev.GetGpuInstanceProfileInfo(i)
		if ret == nvml.ERROR_NOT_SUPPORTED || ret == nvml.ERROR_INVALID_ARGUMENT {
			continue
		}
		check(ret, fmt.Sprintf("GetGpuInstanceProfileInfo(%d)", i))
		ci, ok := ciProfile[info.SliceCount]
		if !ok {
			fmt.Fprintf(os.Stderr, "nvml-dump: GPU-instance profile %d has %d slices\n", i, info.SliceCount)
			os.Exit(1)
		}
		name, err := lib.NewMigProfile(i, ci, nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, info.MemorySizeMB, total)
		must(err)
		places, ret := dev.GetGpuInstancePossiblePlacements(&info)
		check(ret, fmt.Sprintf("GetGpuInstancePossiblePlacements(%d)", i))
		p := profile{Name: name.String(), Profile: i, ID: info.Id, SliceCount: info.SliceCount,
			InstanceCount: info.InstanceCount, MemoryMiB: info.MemorySizeMB, Placements: []placement{},
			Multiprocessors: info.MultiprocessorCount, CopyEngines: info.CopyEngineCount,
			Decoders: info.DecoderCount, Encoders: info.EncoderCount, JpegEngines: info.JpegCount,
			OfaEngines: info.OfaCount}
		for _, pl := range places {
			p.Placements = append(p.Placements, placement{Start: pl.Start, Size: pl.Size})
		}
		out = append(out, p)
	}
	return out
}

func describe(lib device.Interface, nvmllib nvml.Interface, index int) gpu {
	dev, ret := nvmllib.DeviceGetHandleByIndex(index)
	check(ret, "DeviceGetHandleByIndex")
	name, ret := dev.GetName()
	check(ret, "GetName")
	mem, ret := dev.GetMemoryInfo()
	check(ret, "GetMemoryInfo")
	pci, ret := dev.GetPciInfo()
	check(ret, "GetPciInfo")
	major, minor, ret := dev.GetCudaComputeCapability()
	check(ret, "GetCudaComputeCapability")
	d, err := lib.NewDevice(dev)
	must(err)
	capable, err := d.IsMigCapable()
	must(err)
	arch, err := d.GetArchitectureAsString()
	must(err)
	brand, err := d.GetBrandAsString()
	must(err)
	g := gpu{Name: name, MemoryMiB: mem.Total / (1024 * 1024), PciDeviceID: fmt.Sprintf("0x%04X", pci.PciDeviceId>>16),
		ComputeCapability: fmt.Sprintf("%d.%d", major, minor), Architecture: arch, Brand: brand,
		MigCapable: capable, Profiles: []profile{}}
	if capable {
		g.Profiles = profiles(lib, dev, mem.Total)
	}
	return g
}

func main() {
	srv, err := server.New(server.WithGPUs(mocked...))
	must(err)
	var nvmllib nvml.Interface = srv
	check(nvmllib.Init(), "Init")
	lib := device.New(nvmllib)
	count, ret := nvmllib.DeviceGetCount()
	check(ret, "DeviceGetCount")
	out := dump{Source: map[string]string{}, GPUs: []gpu{}}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			out.Source[dep.Path] = dep.Version
		}
	}
	for i := 0; i < count; i++ {
		out.GPUs = append(out.GPUs, describe(lib, nvmllib, i))
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	must(enc.Encode(out))
}
