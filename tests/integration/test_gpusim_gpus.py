"""The collection's MIG catalog against NVIDIA's data (no cluster).

The virtual cluster's GPUs come from NVIDIA's mock NVML (go-nvml, dumped by tests/testbed/build.sh) plus the
simulator's own rows (tests/testbed/gpusim/local_gpus.py, docs/testbed.md). These tests pin every catalog
row NVIDIA mocks to those GPUs, field by field, so a wrong profile name, placement, count or memory figure in
plugins/module_utils/gpu/catalog.py fails here (and in the MIG integration tests, whose agents use the same
GPUs); every simulator correction must still differ from the mock (a fixed mock drops it); and gpusim must
not load the collection.
"""
from __future__ import annotations

import ast
import json
import os
import subprocess
import sys

import pytest
from conftest import REPO

sys.path.insert(0, os.path.join(REPO, "tests", "testbed"))
from gpusim import catalog as sim  # noqa: E402
from gpusim import local_gpus  # noqa: E402

from ansible_collections.gpuops.gpu.plugins.module_utils.gpu import catalog  # noqa: E402


def _dump_path():
    binp = subprocess.run(["bash", os.path.join(REPO, "tests", "testbed", "build.sh"), "--print-bin"],
                          check=True, stdout=subprocess.PIPE, text=True).stdout.strip()
    return os.path.join(os.path.dirname(binp), "nvml-gpus.json")


@pytest.fixture(scope="module")
def dump():
    """The fresh dump (the integration stage runs build.sh first; a missing dump fails, never skips)."""
    path = _dump_path()
    assert os.path.exists(path), "%s missing: run tests/testbed/build.sh" % path
    with open(path) as f:
        return json.load(f)


@pytest.fixture(scope="module")
def simulated(dump):
    return {e["product"]: e for e in sim.products(dump).values() if e["source"].startswith("go-nvml")}


def test_dump_is_nvidias_mock_at_the_pinned_version(dump):
    assert dump["source"]["github.com/NVIDIA/go-nvml"] == "v0.13.4-1"
    assert dump["source"]["github.com/NVIDIA/go-nvlib"] == "v0.13.0"
    assert len(dump["gpus"]) == 8, [g["name"] for g in dump["gpus"]]


def _catalog_row(gpu):
    key = catalog.canonical_product(gpu["gfd_product"])
    entry = catalog.get_product(key)
    assert entry is not None, "NVIDIA mocks %s (%s); the catalog has no row for it" % (gpu["product"], key)
    return entry


def _catalog_view(entry):
    return {"memory_mib": entry["memory_mib"], "pci_device_id": entry["pci_device_id"],
            "compute_capability": entry["compute_capability"], "mig_capable": entry["mig_capable"],
            "memory_slices": entry["memory_slices"], "compute_slices": entry["compute_slices"],
            "profiles": {name: {k: p[k] for k in ("gi_id", "size", "placements", "max", "compute_slices", "memory_mib")}
                         for name, p in entry["profiles"].items()}}


def _differences(row, gpu):
    ours, nvidia = _catalog_view(row), _catalog_view(gpu)
    out = ["%s: catalog %r, NVIDIA %r" % (k, ours[k], nvidia[k]) for k in sorted(ours)
           if k != "profiles" and ours[k] != nvidia[k]]
    for name in sorted(set(ours["profiles"]) | set(nvidia["profiles"])):
        mine, theirs = ours["profiles"].get(name), nvidia["profiles"].get(name)
        if mine is None or theirs is None:
            out.append("profile %s only in %s" % (name, "NVIDIA's GPU" if mine is None else "the catalog"))
        else:
            out.extend("%s %s: catalog %r, NVIDIA %r" % (name, k, mine[k], theirs[k]) for k in sorted(mine)
                       if mine[k] != theirs[k])
    return ["catalog row %s vs NVIDIA's %s: %s" % (row["product"], gpu["product"], d) for d in out]


def test_every_mocked_gpu_matches_its_catalog_row(simulated):
    """Names, PCI ID, memory, compute capability, slices and every profile (with the GPU-instance profile IDs the
    simulator corrects): catalog == NVIDIA's GPUs."""
    assert len(simulated) == 8
    wrong = [d for _name, gpu in sorted(simulated.items()) for d in _differences(_catalog_row(gpu), gpu)]
    assert not wrong, "\n".join(wrong)


def test_every_correction_differs_from_nvidias_mock(dump):
    """A correction the mock no longer needs fails here (then delete it from local_gpus.CORRECTIONS)."""
    mocked = {g["name"]: g for g in dump["gpus"]}
    assert set(local_gpus.CORRECTIONS) <= set(mocked)
    for name, fix in local_gpus.CORRECTIONS.items():
        assert fix.get("evidence"), name
        changed = sim.corrected(mocked[name])["corrected"]
        wanted = [f for f in ("name", "pci_device_id", "memory_mib") if f in fix]
        wanted += ["%s.%s" % (p["name"], f) for p in mocked[name]["profiles"]
                   for f in (fix.get("profiles") or {}).get(p["profile"], {})]
        assert sorted(changed) == sorted(wanted), (name, sorted(set(wanted) - set(changed)))


def test_fallback_rows_are_gpus_nvidia_does_not_mock(dump):
    mocked = {sim.clean(local_gpus.CORRECTIONS.get(g["name"], {}).get("name", g["name"])) for g in dump["gpus"]}
    for row in local_gpus.FALLBACK:
        assert sim.clean(row["name"]) not in mocked, row["name"]
        assert row["evidence"], row["name"]


def test_gpusim_loads_nothing_of_the_collection():
    """No module of the simulator imports plugins/ or the collection's package, nor opens its files."""
    root = os.path.join(REPO, "tests", "testbed", "gpusim")
    for dirpath, _dirs, files in os.walk(root):
        for fname in (f for f in files if f.endswith(".py")):
            path = os.path.join(dirpath, fname)
            with open(path) as f:
                text = f.read()
            for node in ast.walk(ast.parse(text)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                    [node.module or ""] if isinstance(node, ast.ImportFrom) else []
                assert not any(n.startswith(("ansible_collections", "plugins")) for n in names), path
            assert "module_utils" not in text and "spec_from_file_location" not in text, path
