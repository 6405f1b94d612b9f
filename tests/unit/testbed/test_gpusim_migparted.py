"""mig-parted semantics: config parsing, selection, apply, generated configs."""
import re

import pytest
import yaml
from gpusim import migparted
from gpusim_util import product

A100 = "A100-SXM4-40GB"

GOOD = """
version: v1
mig-configs:
  all-disabled:
    - devices: all
      mig-enabled: false
  custom:
    - device-filter: ["0x20B010DE"]
      devices: [0, 1]
      mig-enabled: true
      mig-devices:
        "3g.20gb": 2
    - devices: [2, 3, 4, 5, 6, 7]
      mig-enabled: true
      mig-devices: {"1g.5gb": 7}
  bad-geometry:
    - devices: all
      mig-enabled: true
      mig-devices: {"3g.20gb": 2, "1g.5gb": 1}
  other-gpu:
    - device-filter: "0x233010DE"
      devices: all
      mig-enabled: true
      mig-devices: {"1g.10gb": 7}
"""


def test_parse_good():
    spec = migparted.parse_spec(GOOD)
    assert set(spec["mig-configs"]) == {"all-disabled", "custom", "bad-geometry", "other-gpu"}
    assert spec["mig-configs"]["other-gpu"][0]["device-filter"] == ["0x233010DE"]


@pytest.mark.parametrize("text, msg", [
    ("mig-configs: {a: [{devices: all, mig-enabled: false}]}", "missing 'version'"),
    ("version: v2\nmig-configs: {a: [{devices: all, mig-enabled: false}]}", "unknown version"),
    ("version: v1\nfoo: 1\nmig-configs: {a: [{devices: all, mig-enabled: false}]}", "unexpected field"),
    ("version: v1\nmig-configs: {}", "at least one entry"),
    ("version: v1\nmig-configs: {a: []}", "at least one entry in 'a'"),
    ("version: v1\nmig-configs: {a: [{mig-enabled: false}]}", "missing required field: devices"),
    ("version: v1\nmig-configs: {a: [{devices: some, mig-enabled: false}]}", "invalid string"),
    ("version: v1\nmig-configs: {a: [{devices: all, mig-enabled: true}]}", "'mig-devices' when"),
    ("version: v1\nmig-configs: {a: [{devices: all, mig-enabled: false, mig-devices: {1g.5gb: 1}}]}",
     "included when 'mig-enabled' is false"),
    ("version: v1\nmig-configs: {a: [{devices: all, mig-enabled: true, mig-devices: {1g.5gb: 0}}]}",
     "all counts"),
    ("version: v1\nmig-configs: {a: [{devices: all, mig-enabled: true, mig-devices: {one-g: 1}}]}",
     "invalid format"),
    ("version: v1\nmig-configs: {a: [{devices: all, mig-enabled: true, extra: 1, mig-devices: {}}]}",
     "unexpected field: extra"),
    ("version: v1\nmig-configs: {a: [{devices: all, mig-enabled: true, mig-devices: {1g.5gb: -1}}]}",
     "invalid count"),
    ("{{{", "error parsing"),
])
def test_parse_errors(text, msg):
    with pytest.raises(migparted.MigPartedError, match=re.escape(msg)):
        migparted.parse_spec(text)


def test_select_unknown_config():
    spec = migparted.parse_spec(GOOD)
    with pytest.raises(migparted.MigPartedError, match="does not exist"):
        migparted.select(spec, "nope")


def test_apply_per_index_and_filter():
    spec = migparted.parse_spec(GOOD)
    state, err = migparted.apply_config(migparted.select(spec, "custom"), product(A100),
                                        migparted.initial_state(8))
    assert err is None
    assert state[0] == {"mig": True, "devices": {"3g.20gb": 2}}
    assert state[7] == {"mig": True, "devices": {"1g.5gb": 7}}


def test_device_filter_other_product_leaves_gpus_alone():
    spec = migparted.parse_spec(GOOD)
    start = migparted.initial_state(8)
    state, err = migparted.apply_config(migparted.select(spec, "other-gpu"), product(A100), start)
    assert err is None and state == start


def test_failed_geometry_clears_the_failing_gpu_and_stops():
    spec = migparted.parse_spec(GOOD)
    current = [{"mig": True, "devices": {"7g.40gb": 1}} for _i in range(8)]
    state, err = migparted.apply_config(migparted.select(spec, "bad-geometry"), product(A100),
                                        current)
    assert "GPU 0" in err and "all orderings failed" in err
    assert state[0] == {"mig": True, "devices": {}}
    assert state[1:] == current[1:]


def test_mode_pass_runs_on_every_gpu_before_instances():
    spec = migparted.parse_spec(GOOD)
    state, err = migparted.apply_config(migparted.select(spec, "bad-geometry"), product(A100),
                                        migparted.initial_state(2))
    assert err
    assert state == [{"mig": True, "devices": {}}, {"mig": True, "devices": {}}]


def test_last_matching_entry_wins():
    spec = migparted.parse_spec("""version: v1
mig-configs:
  twice:
    - {devices: all, mig-enabled: true, mig-devices: {"1g.5gb": 7}}
    - {devices: [1], mig-enabled: true, mig-devices: {"7g.40gb": 1}}
""")
    state, err = migparted.apply_config(migparted.select(spec, "twice"), product(A100),
                                        migparted.initial_state(2))
    assert err is None
    assert state == [{"mig": True, "devices": {"1g.5gb": 7}}, {"mig": True, "devices": {"7g.40gb": 1}}]


def test_non_mig_gpu_skipped_for_all_but_error_for_index():
    t4 = product("T4")
    spec = migparted.parse_spec("""version: v1
mig-configs:
  all: [{devices: all, mig-enabled: true, mig-devices: {"1g.5gb": 1}}]
  idx: [{devices: [0], mig-enabled: true, mig-devices: {"1g.5gb": 1}}]
""")
    state, err = migparted.apply_config(migparted.select(spec, "all"), t4, migparted.initial_state(1))
    assert err is None and state == migparted.initial_state(1)
    _state, err = migparted.apply_config(migparted.select(spec, "idx"), t4, migparted.initial_state(1))
    assert "non MIG-capable" in err


def test_generated_config_names_and_balanced():
    spec = migparted.generated_spec(product(A100))
    names = set(spec["mig-configs"])
    assert {"all-disabled", "all-enabled", "all-balanced", "all-1g.5gb", "all-1g.5gb.me",
            "all-1g.10gb", "all-2g.10gb", "all-3g.20gb", "all-4g.20gb", "all-7g.40gb"} == names
    assert spec["mig-configs"]["all-balanced"][0]["mig-devices"] == {
        "1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1}
    assert spec["mig-configs"]["all-1g.5gb"][0]["mig-devices"] == {"1g.5gb": 7}
    assert spec["mig-configs"]["all-1g.5gb.me"][0]["mig-devices"] == {"1g.5gb+me": 1}
    # the generated text round-trips through the real parser and every config applies
    parsed = migparted.parse_spec(migparted.generated_yaml(product(A100)))
    for name in names:
        _s, err = migparted.apply_config(migparted.select(parsed, name), product(A100),
                                         migparted.initial_state(8))
        assert err is None, name


def test_generated_balanced_per_product():
    h100 = migparted.generated_spec(product("H100-80GB-HBM3"))["mig-configs"]["all-balanced"]
    assert h100[0]["mig-devices"] == {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}
    a30 = migparted.generated_spec(product("A30"))["mig-configs"]["all-balanced"]
    assert a30[0]["mig-devices"] == {"1g.6gb": 2, "2g.12gb": 1}
    t4 = migparted.generated_spec(product("T4"))["mig-configs"]
    assert set(t4) == {"all-disabled", "all-enabled"}


def test_packed_ids():
    assert migparted.packed_device_ids(product(A100)) == [0x20B010DE]
    assert migparted.packed_device_ids(product("A100-PCIE-40GB")) == [0x20F110DE]


def test_normalize_state_tolerates_garbage():
    assert migparted.normalize_state(None, 2) == migparted.initial_state(2)
    st = migparted.normalize_state([{"mig": True, "devices": {"1g.5gb": "2", "2g.10gb": 0}}], 2)
    assert st == [{"mig": True, "devices": {"1g.5gb": 2}}, {"mig": False, "devices": {}}]
    assert yaml.safe_load(migparted.generated_yaml(product("A30")))["version"] == "v1"
