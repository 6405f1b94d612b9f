"""The simulated DRA kubelet plugin with the driver's DynamicMIG gate on (gpusim.dynmig): partitionable devices,
their shared counters and what the pool's slices look like."""
import copy

from gpusim import dra
from gpusim import dynmig
from gpusim_util import cfg, node, product

A100 = product("A100-SXM4-40GB")
DRIVER = cfg()["driver"]


def by_name(minor=0):
    return {d["name"]: d for d in dynmig.gpu_devices("gpu-0", A100, DRIVER, minor)}


def placed(devs, profile):
    return sorted(int(n.rsplit("-", 1)[1]) for n, d in devs.items()
                  if d["attributes"].get("profile") == {"string": profile})


def test_gate_is_off_by_default_and_a_node_annotation_overrides_it():
    assert DRIVER["dynamic_mig"] is False
    assert not dynmig.enabled(node(), DRIVER)
    assert dynmig.enabled(node(annotations={dynmig.ANN_DYNAMIC_MIG: "true"}), DRIVER)
    assert not dynmig.enabled(node(annotations={dynmig.ANN_DYNAMIC_MIG: "false"}), dict(DRIVER, dynamic_mig=True))
    assert dynmig.enabled(node(), dict(DRIVER, dynamic_mig=True))


def test_counter_names_as_the_driver_forms_them():
    assert dynmig.counter_name("copyEngines") == "copy-engines"
    assert dynmig.counter_name("jpegEngines") == "jpeg-engines"
    assert dynmig.counter_name("multiprocessors") == "multiprocessors"


def test_full_gpu_and_every_placement_of_every_profile():
    devs = by_name()
    assert placed(devs, "1g.5gb") == list(range(7))
    assert placed(devs, "7g.40gb") == [0]
    assert placed(devs, "3g.20gb") == [0, 4]
    assert "gpu-0" in devs and "gpu-0-mig-1g5gb-19-6" in devs and "gpu-0-mig-7g40gb-0-0" in devs
    assert len(devs) == 1 + sum(len(p["placements"]) for p in A100["profiles"].values())
    assert len(devs) <= 64          # ResourceSliceMaxDevicesWithAdvancedFeatures
    part = devs["gpu-0-mig-3g20gb-9-4"]
    assert "uuid" not in part["attributes"]          # a partition has no MIG device (yet)
    assert part["attributes"]["parentUUID"] == devs["gpu-0"]["attributes"]["uuid"]
    assert not any(k.startswith("memorySlice") for k in part["capacity"])
    (use,) = part["consumesCounters"]
    assert use["counterSet"] == "gpu-0-counter-set"
    assert sorted(k for k in use["counters"] if k.startswith("memory-slice-")) == \
        ["memory-slice-%d" % i for i in range(4, 8)]
    assert use["counters"]["multiprocessors"] == {"value": "42"}


def test_counter_set_holds_the_largest_capacities_and_every_memory_slice():
    cs = dynmig.counter_set(A100, 0)
    assert cs["name"] == "gpu-0-counter-set"
    assert len(cs["counters"]) <= 32                 # ResourceSliceMaxCountersPerCounterSet
    assert ["memory-slice-%d" % i for i in range(8)] == sorted(k for k in cs["counters"] if k.startswith("memory-sl"))
    assert cs["counters"]["multiprocessors"] == {"value": "98"}
    assert cs["counters"]["memory"] == {"value": str(A100["profiles"]["7g.40gb"]["memory_mib"] * 2 ** 20)}
    # the full GPU consumes all of it
    assert by_name()["gpu-0"]["consumesCounters"][0]["counters"] == cs["counters"]


def test_consumption_sums_let_non_overlapping_layouts_fit_and_refuse_overlaps():
    devs, sets = by_name(), [dynmig.counter_set(A100, 0)]

    def fits(*names):
        return dynmig.fits(sets, [devs[n] for n in names])
    assert fits(*["gpu-0-mig-1g5gb-19-%d" % s for s in range(7)])
    assert fits("gpu-0-mig-4g20gb-5-0", "gpu-0-mig-2g10gb-14-4", "gpu-0-mig-1g5gb-19-6")
    assert fits("gpu-0-mig-3g20gb-9-0", "gpu-0-mig-3g20gb-9-4")
    # an A100-40GB's two 3g.20gb take all 8 memory slices: no 1g.5gb beside them at any placement
    assert not any(fits("gpu-0-mig-3g20gb-9-0", "gpu-0-mig-3g20gb-9-4", "gpu-0-mig-1g5gb-19-%d" % s)
                   for s in range(7))
    assert not fits("gpu-0-mig-3g20gb-9-0", "gpu-0-mig-1g5gb-19-3")          # same memory slice 3
    assert not fits("gpu-0-mig-4g20gb-5-0", "gpu-0-mig-3g20gb-9-0")
    assert not fits("gpu-0", "gpu-0-mig-1g5gb-19-6")                         # the whole GPU takes everything
    assert fits("gpu-0")


def test_pool_has_the_counter_sets_first_then_one_slice_per_gpu():
    parts = dynmig.slices("gpu-0", A100, DRIVER, 2)
    assert [sorted(p) for p in parts] == [["sharedCounters"], ["devices"], ["devices"]]
    assert [c["name"] for c in parts[0]["sharedCounters"]] == ["gpu-0-counter-set", "gpu-1-counter-set"]
    assert {d["consumesCounters"][0]["counterSet"] for d in parts[2]["devices"]} == {"gpu-1-counter-set"}


def named(obj, name):
    obj = copy.deepcopy(obj)
    obj["metadata"] = {"name": name}
    return obj


def converge(n, gpus, dynamic_mig, current, limit=40):
    """Apply plan steps like the API server until nothing is left to do; returns the slices and the steps."""
    current, steps, seq = list(current), [], 0
    for _step in range(limit):
        step = dra.plan(n, A100, gpus, DRIVER, True, current, dynamic_mig)
        if step is None:
            return current, steps
        action, what = step
        steps.append(action)
        if action == "delete":
            current = [s for s in current if s["metadata"]["name"] not in what]
        elif action == "create":
            seq += 1
            current.append(named(what, what["metadata"]["generateName"] + "x%d" % seq))
        else:
            current = [what if s["metadata"]["name"] == what["metadata"]["name"] else s for s in current]
    raise AssertionError("no convergence: %s" % steps)


def test_plan_publishes_g_plus_one_slices_and_goes_back_to_one_when_the_gate_is_off():
    n = node(gpus=2)
    got, steps = converge(n, 2, True, [])
    assert steps == ["create"] * 3
    got = sorted(got, key=lambda s: s["metadata"]["name"])
    assert [s["metadata"]["name"][:6] for s in got] == ["00000-", "00001-", "00002-"]
    assert {s["spec"]["pool"]["resourceSliceCount"] for s in got} == {3}
    assert "sharedCounters" in got[0]["spec"] and "devices" not in got[0]["spec"]
    assert dra.plan(n, A100, 2, DRIVER, True, got, True) is None
    back, steps = converge(n, 2, False, got)
    assert len(back) == 1 and "sharedCounters" not in back[0]["spec"]
    assert [d["name"] for d in back[0]["spec"]["devices"]] == ["gpu-0", "gpu-1"]
    assert back[0]["spec"]["pool"] == {"name": "gpu-0", "generation": 1, "resourceSliceCount": 1}
    again, steps = converge(n, 2, True, back)
    assert steps[0] == "update" and {s["spec"]["pool"]["generation"] for s in again} == {2}
    assert len(again) == 3


def test_gate_has_no_effect_on_a_gpu_without_mig():
    n = node(gpus=2)
    assert dra.parts(n, dict(A100, mig_capable=False), 2, DRIVER, True) == \
        [{"devices": dra.devices(n, dict(A100, mig_capable=False), 2, DRIVER)}]
