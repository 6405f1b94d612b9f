"""``testbed chaos`` (tests/testbed/vcluster/chaos.py) on a real process of our own: freeze/thaw,
kill and start again by the recorded PID, argv, env and cwd; the node a new group member gets."""
import argparse
import os
import sys

import pytest
import yaml
from gpusim import contract as C
from vcluster import chaos, cli, processes
from vcluster.state import State


@pytest.fixture
def state(tmp_path, monkeypatch):
    """A State in tmp_path with one 'gpusim' process started as up starts one (a python that sleeps)."""
    st = State("unit-chaos")
    monkeypatch.setattr(st, "dir", str(tmp_path))
    monkeypatch.setattr(st, "file", str(tmp_path / "state.json"))
    argv = [sys.executable, "-c", "import os, time; open('cwd', 'w').write(os.environ['MARK']); time.sleep(60)"]
    processes.start_process(st, "gpusim", argv, env={"MARK": "one"}, cwd=str(tmp_path))
    yield st
    rec = st.proc("gpusim")
    if processes.alive(rec):
        os.kill(rec["pid"], 18)  # SIGCONT, then stop it the way down does
        processes.stop_process(st, "gpusim", timeout=5)


def test_freeze_thaw_kill_start_by_the_recorded_pid(state, tmp_path):
    first = state.proc("gpusim")
    chaos.freeze(state, "gpusim")
    assert processes.proc_state(first["pid"]) == "T"
    chaos.thaw(state, "gpusim")
    assert processes.proc_state(first["pid"]) in ("S", "R")
    chaos.kill(state, "gpusim")
    assert not processes.alive(first) and state.proc("gpusim")["argv"] == first["argv"]  # record kept
    (tmp_path / "cwd").unlink(missing_ok=True)
    chaos.start(state, "gpusim")
    again = state.proc("gpusim")
    assert processes.alive(again) and again["pid"] != first["pid"]
    assert (again["argv"], again["env"], again["cwd"]) == (first["argv"], {"MARK": "one"}, str(tmp_path))
    processes.wait_for("the marker", (tmp_path / "cwd").exists, 20, interval=0.05)
    assert (tmp_path / "cwd").read_text() == "one"  # same env, same working directory
    chaos.start(state, "gpusim")  # running: nothing to do
    assert state.proc("gpusim")["pid"] == again["pid"]


def test_a_dead_or_unknown_component_is_an_error(state, capsys):
    chaos.kill(state, "gpusim")
    for action in (chaos.freeze, chaos.kill):
        with pytest.raises(SystemExit):
            action(state, "gpusim")
    with pytest.raises(SystemExit):
        chaos.start(state, "etcd")
    assert "never started" in capsys.readouterr().err


def test_add_node_is_shaped_like_its_group(tmp_path, monkeypatch):
    st = State("unit-chaos")
    monkeypatch.setattr(st, "dir", str(tmp_path))
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({"node_groups": [
        {"name": "a100", "count": 1, "gpu_product": "NVIDIA-A100-SXM4-40GB", "gpus_per_node": 8,
         "labels": {"gpuops.dev/pool": "training"}}]}))
    node = chaos.new_node(st, "a100-7", "a100")
    md = node["metadata"]
    assert md["name"] == "a100-7" and md["labels"]["gpuops.dev/pool"] == "training"
    assert (md["annotations"][C.ANN_KWOK], md["annotations"][C.ANN_GPUS]) == ("fake", "8")
    with pytest.raises(SystemExit):
        chaos.new_node(st, "x-0", "nope")


def test_chaos_command_line():
    args = cli.parser().parse_args(["chaos", "add-node", "a100-3", "--group", "a100", "--name", "c"])
    assert (args.action, args.target, args.group, args.name) == ("add-node", "a100-3", "a100", "c")
    with pytest.raises(SystemExit):
        cli.parser().parse_args(["chaos", "explode", "etcd"])
    assert isinstance(args, argparse.Namespace)
