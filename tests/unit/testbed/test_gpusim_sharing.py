"""Device-plugin config parsing (gpusim.sharing) — k8s-device-plugin v0.20 semantics."""
import re

import pytest
from gpusim import sharing
from gpusim_util import TS_CONFIG


def test_time_slicing():
    c = sharing.parse(TS_CONFIG)
    assert c["strategy"] == "time-slicing"
    assert c["resources"] == [{"name": "nvidia.com/gpu", "replicas": 4, "rename": ""}]
    assert c["fail_requests_greater_than_one"] is False


def test_short_names_get_prefix_and_rename_by_default():
    c = sharing.parse("""sharing:
  timeSlicing:
    renameByDefault: true
    resources: [{name: gpu, replicas: 2}, {name: mig-1g.5gb, replicas: 3, rename: custom}]
""")
    assert [r["name"] for r in c["resources"]] == ["nvidia.com/gpu", "nvidia.com/mig-1g.5gb"]
    # rename is ignored by the plugin; renameByDefault gives <name>.shared
    assert [r["rename"] for r in c["resources"]] == [
        "nvidia.com/gpu.shared", "nvidia.com/mig-1g.5gb.shared"]


def test_rename_without_rename_by_default_is_ignored():
    c = sharing.parse("""version: v1
sharing: {timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 2, rename: other}]}}""")
    assert c["resources"][0]["rename"] == ""


def test_mps_wins_and_forces_fail_requests():
    c = sharing.parse("""version: v1
sharing:
  timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 8}]}
  mps: {resources: [{name: nvidia.com/gpu, replicas: 4}]}
""")
    assert c["strategy"] == "mps"
    assert c["resources"][0]["replicas"] == 4
    assert c["fail_requests_greater_than_one"] is True


@pytest.mark.parametrize("text, msg", [
    ("version: v2", "unknown version"),
    ("sharing: {timeSlicing: {}}", "no resources specified"),
    ("sharing: {timeSlicing: {resources: []}}", "no resources specified"),
    ("sharing: {timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 1}]}}", ">= 2"),
    ("sharing: {timeSlicing: {resources: [{name: nvidia.com/gpu}]}}", "no replicas"),
    ("sharing: {timeSlicing: {resources: [{replicas: 2}]}}", "no resource name"),
    ("sharing: {timeSlicing: {resources: [{name: nvidia.com/GPU_X, replicas: 2}]}}",
     "incorrect format"),
    ("sharing: {timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 2, devices: some}]}}",
     "only valid string"),
    ("sharing: {timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 2, devices: 0}]}}",
     "must be > 0"),
    ("sharing: {timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: two}]}}", "integer"),
    ("[1, 2]", "not a mapping"),
    ("a: b: c", "unmarshal error"),
])
def test_invalid(text, msg):
    with pytest.raises(sharing.SharingConfigError, match=re.escape(msg)):
        sharing.parse(text)


def test_empty_and_flags_only():
    assert sharing.parse("") == sharing.empty_config()
    assert sharing.parse("version: v1\nflags: {migStrategy: mixed}")["strategy"] == "none"


# The real plugin's decoding (NVIDIA/k8s-device-plugin v0.20.0 api/config/v1): explicit nulls,
# Go int/uint64 ranges and case-insensitive struct keys. The simulator refuses what the plugin
# refuses, so an integration test can show a config the collection would never write.
_TS = "sharing: {timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 2%s}]}}"


@pytest.mark.parametrize("text, msg", [
    ("sharing: {timeSlicing: null}", "no resources specified"),                  # sharing.go:22, replicas.go:190
    (_TS % ", rename: null", "incorrect format for resource name 'nvidia.com/'"),  # replicas.go:255-263
    (_TS % ", devices: null", "only valid string input is 'all'"),               # replicas.go:231-239, :271-276
    (_TS % ", devices: 9223372036854775808", "unrecognized type"),               # replicas.go:281-322
    (_TS % ", devices: [18446744073709551616]", "unsupported type for device"),  # replicas.go:300-315
    (_TS % ", devices: ['0:18446744073709551616']", "unsupported type for device"),
    (_TS % ", devices: [-1]", "unsupported type for device"),
    ("sharing: {timeSlicing: {resources: [{name: gpu, replicas: 9223372036854775808}]}}",
     "cannot unmarshal number 9223372036854775808"),                             # replicas.go:85, :246
    ("sharing: {timeSlicing: {resources: [{name: gpu, replicas: null}]}}", ">= 2"),
    ("sharing: {timeSlicing: {resources: [{name: null, replicas: 2}]}}", "incorrect format"),
])
def test_refuses_what_the_real_plugin_refuses(text, msg):
    with pytest.raises(sharing.SharingConfigError, match=re.escape(msg)):
        sharing.parse(text)


@pytest.mark.parametrize("text, strategy, replicas", [
    ("sharing: {mps: null, timeSlicing: {resources: [{name: gpu, replicas: 3}]}}", "time-slicing", 3),  # sharing.go:24
    ("sharing: {timeslicing: {resources: [{name: gpu, replicas: 3}]}}", "time-slicing", 3),  # sharing.go:20-25
    ("SHARING: {TimeSlicing: {resources: [{name: gpu, replicas: 3}]}}", "time-slicing", 3),  # config.go:34-40
    ("sharing: {timeSlicing: {resources: [{name: gpu, replicas: 3}]},"
     " timeslicing: {resources: [{name: gpu, replicas: 5}]}}", "time-slicing", 5),  # the last spelling wins
    ("sharing: {timeSlicing: {renameByDefault: null, resources: [{name: gpu, replicas: 3, devices: [0, '1:2']}]}}",
     "time-slicing", 3),                                                                 # replicas.go:173-181
    ("sharing: null\nflags: null\nversion: null", "none", None),
])
def test_reads_what_the_real_plugin_reads(text, strategy, replicas):
    c = sharing.parse(text)
    assert c["strategy"] == strategy
    assert [r["replicas"] for r in c["resources"]] == ([replicas] if replicas else [])
