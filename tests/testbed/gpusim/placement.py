"""NVML-style MIG instance creation, independent of the collection's validator (pure).

It does what mig-parted + NVML do on a real GPU (NVIDIA MIG User Guide, docs.nvidia.com/datacenter/tesla/mig-user-guide):
  * mig-parted flattens the requested {profile: count} map, largest G first
    (pkg/types/mig_config.go Flatten), then tries every DISTINCT permutation of the creation
    order (pkg/mig/config/config.go iteratePermutationsUntilSuccess) until one succeeds;
  * for each GPU instance, NVML's CreateGpuInstance (no explicit placement) takes a free
    placement from the profile's placement list; creation fails when none is free, when the
    profile's instance count is exhausted (e.g. a second "+me") or the compute slices run out.
We model NVML's choice as first-fit over the profile's placement starts. Only the profile table
(placement lists, sizes, counts) comes from gpusim.catalog (NVIDIA's mock NVML); the decision is made here.
"""

import functools
import re

_FIELDS = re.compile(r"^(?:(\d+)c\.)?(\d+)g\.(\d+)gb$")


class ProfileError(ValueError):
    pass


def parse_profile(name):
    """go-nvlib parseMigProfile: '[<c>c.]<g>g.<gb>gb[+a,b|-a,b]' -> (c, g, gb, attrs, negattrs)."""
    if not isinstance(name, str) or not name:
        raise ProfileError("profile is the empty string")
    plus = name.split("+", 1)
    minus = name.split("-", 1)
    if len(plus) == 2 and len(minus) == 2:
        raise ProfileError("profile '%s' contains both '+/-' attributes" % name)
    parts, neg = (plus, False) if len(plus) == 2 else (minus, len(minus) == 2)
    m = _FIELDS.match(parts[0])
    if not m:
        raise ProfileError("cannot parse fields of '%s'" % name)
    g = int(m.group(2))
    c = int(m.group(1)) if m.group(1) else g
    gb = int(m.group(3))
    if c <= 0 or g <= 0 or gb <= 0:
        raise ProfileError("cannot parse fields of '%s'" % name)
    attrs = ()
    if len(parts) == 2:
        raw = parts[1].split(",")
        seen = set()
        for a in raw:
            if not a or a in seen or a[0].isdigit() or a[0] == "." or a[-1] == ".":
                raise ProfileError("cannot parse attributes of '%s'" % name)
            if not re.match(r"^[A-Za-z0-9.]+$", a):
                raise ProfileError("cannot parse attributes of '%s'" % name)
            seen.add(a)
        attrs = tuple(raw)
    if neg:
        return (c, g, gb, (), tuple(sorted(attrs)))
    return (c, g, gb, tuple(sorted(attrs)), ())


def resolve_profile(product, name):
    """Name of the catalog profile that a requested profile string matches on this GPU.

    Like mig-parted resolveMigProfileOnDevice (go-nvlib MigProfile.Matches). Compute-instance
    profiles (c < g) are not simulated. Raises ProfileError when nothing matches.
    """
    key = parse_profile(name)
    for pname in product["profiles"]:
        try:
            if parse_profile(pname) == key:
                return pname
        except ProfileError:
            continue
    raise ProfileError("MIG profile %r not found on this GPU (%s)" % (name, product["product"]))


def flatten(product, devices):
    """Resolved profile names, one per instance, largest G (then C) first like mig-parted."""
    out = []
    for name, count in sorted(devices.items()):
        if count is None or int(count) < 0:
            raise ProfileError("invalid count for %r" % name)
        if int(count) == 0:
            continue
        resolved = resolve_profile(product, name)
        out.extend([resolved] * int(count))

    def order(pname):
        c, g, _gb, attrs, _neg = parse_profile(pname)
        return (-g, -c, ",".join(attrs))
    out.sort(key=order)
    return out


def _distinct_permutations(items):
    """Distinct permutations in the order mig-parted's swap recursion produces them."""
    items = list(items)

    def rec(i):
        if i >= len(items):
            yield list(items)
            return
        for j in range(i, len(items)):
            if items[j] in items[i:j]:
                continue  # shouldSwap: skip a value already tried at position i
            items[i], items[j] = items[j], items[i]
            yield from rec(i + 1)
            items[i], items[j] = items[j], items[i]
    return rec(0)


def _create_in_order(product, order):
    """Create the instances in this order, NVML-style. Returns [(profile, start, size)] or None."""
    used = [False] * int(product["memory_slices"])
    compute_left = int(product["compute_slices"])
    counts = {}
    placed = []
    for pname in order:
        prof = product["profiles"][pname]
        if counts.get(pname, 0) >= int(prof["max"]):
            return None  # NVML_ERROR_INSUFFICIENT_RESOURCES: instance count exhausted
        size = int(prof["size"])
        need_compute = int(prof.get("compute_slices") or 0)
        if need_compute > compute_left:
            return None
        for start in prof["placements"]:
            start = int(start)
            if start + size <= len(used) and not any(used[start:start + size]):
                for k in range(start, start + size):
                    used[k] = True
                compute_left -= need_compute
                counts[pname] = counts.get(pname, 0) + 1
                placed.append((pname, start, size))
                break
        else:
            return None
    return placed


def _product_key(product):
    profs = tuple(sorted(
        (n, int(p["size"]), tuple(int(s) for s in p["placements"]), int(p["max"]),
         int(p.get("compute_slices") or 0))
        for n, p in product["profiles"].items()))
    return (product["product"], int(product["memory_slices"]), int(product["compute_slices"]), profs)


@functools.lru_cache(maxsize=4096)
def _create_cached(pkey, flat):
    product = {"product": pkey[0], "memory_slices": pkey[1], "compute_slices": pkey[2],
               "profiles": {n: {"size": s, "placements": pl, "max": mx, "compute_slices": cs}
                            for n, s, pl, mx, cs in pkey[3]}}
    # Shortcut for sets that no ordering can create (too many slices / instances): the result is
    # the same as trying all of them, only faster.
    profs = product["profiles"]
    if (sum(profs[n]["size"] for n in flat) > product["memory_slices"]
            or sum(profs[n]["compute_slices"] for n in flat) > product["compute_slices"]
            or any(flat.count(n) > profs[n]["max"] for n in set(flat))):
        return None, 0
    tried = 0
    for order in _distinct_permutations(flat):
        tried += 1
        placed = _create_in_order(product, order)
        if placed is not None:
            return tuple(placed), tried
    return None, tried


def create_instances(product, devices):
    """Create the requested MIG devices on one empty GPU, the way mig-parted + NVML would.

    Returns (placements, error): placements is a list of (profile, start, size) in memory
    slices; error is None on success or the text mig-parted would log on failure.
    """
    if not product.get("mig_capable"):
        return None, "GPU %s is not MIG capable" % product["product"]
    try:
        flat = tuple(flatten(product, devices))
    except ProfileError as exc:
        return None, str(exc)
    if not flat:
        return [], None
    placed, _tried = _create_cached(_product_key(product), flat)
    if placed is None:
        return None, ("error attempting multiple config orderings: all orderings failed "
                      "(Insufficient Resources)")
    return list(placed), None


def fits(product, devices):
    _placed, err = create_instances(product, devices)
    return err is None
