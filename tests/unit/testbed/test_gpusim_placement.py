"""NVML-style MIG instance creation (gpusim.placement) — checked against the NVIDIA MIG User Guide's placement tables."""
import itertools

import pytest
from gpusim import placement
from gpusim_util import CATALOG, product

A100 = "A100-SXM4-40GB"


@pytest.mark.parametrize("devices", [
    {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1},   # all-balanced / MIG guide example 2
    {"4g.20gb": 1, "3g.20gb": 1},               # >= R510
    {"4g.20gb": 1, "1g.5gb": 3},
    {"2g.10gb": 3, "1g.5gb": 1},
    {"1g.10gb": 4},
    {"1g.5gb": 7},
    {"7g.40gb": 1},
    {"1g.5gb+me": 1, "1g.5gb": 6},
    {"3g.20gb": 2},
])
def test_fits_on_a100(devices):
    placed, err = placement.create_instances(product(A100), devices)
    assert err is None
    used = set()
    for _name, start, size in placed:
        slices = set(range(start, start + size))
        assert not slices & used, placed
        used |= slices
    assert len(placed) == sum(devices.values())


@pytest.mark.parametrize("devices", [
    {"3g.20gb": 2, "1g.5gb": 1},                # 8 slices consumed
    {"4g.20gb": 1, "2g.10gb": 1, "1g.5gb": 2},  # 1g cannot start at 7
    {"1g.5gb": 8},
    {"1g.5gb+me": 2},                           # at most one +me per GPU
    {"7g.40gb": 1, "1g.5gb": 1},
    {"4g.20gb": 2},
    {"1g.10gb": 4, "1g.5gb": 1},
])
def test_does_not_fit_on_a100(devices):
    placed, err = placement.create_instances(product(A100), devices)
    assert placed is None
    assert "all orderings failed" in err


def test_a30_has_four_slices_and_no_3g():
    a30 = product("A30")
    assert placement.fits(a30, {"1g.6gb": 4})
    assert placement.fits(a30, {"2g.12gb": 1, "1g.6gb": 2})
    assert not placement.fits(a30, {"2g.12gb": 2, "1g.6gb": 1})
    _placed, err = placement.create_instances(a30, {"3g.20gb": 1})
    assert "not found on this GPU" in err


def test_unknown_profile_and_non_mig_gpu():
    _p, err = placement.create_instances(product(A100), {"1g.10gb+me": 1})
    assert "not found on this GPU" in err
    _p, err = placement.create_instances(product(A100), {"1g.10gb.me": 1})
    assert "cannot parse" in err
    _p, err = placement.create_instances(product("T4"), {"1g.5gb": 1})
    assert "not MIG capable" in err


def test_profile_aliases_resolve_like_go_nvlib():
    p = product(A100)
    assert placement.resolve_profile(p, "1c.1g.5gb") == "1g.5gb"
    assert placement.resolve_profile(p, "7c.7g.40gb") == "7g.40gb"
    with pytest.raises(placement.ProfileError):
        placement.resolve_profile(p, "1c.3g.20gb")   # compute-instance profiles not simulated


@pytest.mark.parametrize("bad", ["", "1g", "g.5gb", "1g.5gb+", "1g.5gb+me+me", "1g.5gb+me-me",
                                 "1g.5gb+1me", "x1g.5gb"])
def test_parse_profile_rejects(bad):
    with pytest.raises(placement.ProfileError):
        placement.parse_profile(bad)


def test_flatten_orders_largest_first_like_mig_parted():
    flat = placement.flatten(product(A100), {"1g.5gb": 2, "3g.20gb": 1, "2g.10gb": 1})
    assert flat == ["3g.20gb", "2g.10gb", "1g.5gb", "1g.5gb"]


def test_distinct_permutations_are_distinct_and_complete():
    items = ["a", "b", "b", "c"]
    perms = list(placement._distinct_permutations(items))
    assert len(perms) == len(set(map(tuple, perms))) == 12
    assert set(map(tuple, perms)) == set(itertools.permutations(items))


def _backtracking_fits(prod, devices):
    """Reference: exhaustive assignment of placements (what mig-parted's tries of creation orders amount to: simple backtracking)."""
    flat = []
    for name, n in devices.items():
        flat += [name] * n
    for name, n in devices.items():
        if n > prod["profiles"][name]["max"]:
            return False
    if sum(prod["profiles"][n]["compute_slices"] for n in flat) > prod["compute_slices"]:
        return False

    def rec(i, used):
        if i == len(flat):
            return True
        prof = prod["profiles"][flat[i]]
        for start in prof["placements"]:
            span = set(range(start, start + prof["size"]))
            if not span & used and max(span) < prod["memory_slices"]:
                if rec(i + 1, used | span):
                    return True
        return False
    return rec(0, set())


@pytest.mark.parametrize("name", ["A100-SXM4-40GB", "H100-80GB-HBM3", "A30"])
def test_ordering_search_agrees_with_exhaustive_placement(name):
    """Every multiset of up to 7 instances: NVML-style ordering search == exhaustive search."""
    prod = product(name)
    profiles = sorted(prod["profiles"])
    checked = 0
    for total in range(1, 8):
        for combo in itertools.combinations_with_replacement(profiles, total):
            devices = {}
            for p in combo:
                devices[p] = devices.get(p, 0) + 1
            assert placement.fits(prod, devices) == _backtracking_fits(prod, devices), devices
            checked += 1
    assert checked > 100


def test_every_catalog_mig_product_fits_its_homogeneous_max():
    for name in CATALOG.names():
        prod = CATALOG.product(name)
        if not prod["mig_capable"]:
            continue
        for pname, prof in prod["profiles"].items():
            assert placement.fits(prod, {pname: prof["max"]}), (name, pname)
            assert not placement.fits(prod, {pname: prof["max"] + 1}), (name, pname)
