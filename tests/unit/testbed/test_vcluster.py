"""The testbed CLI package (tests/testbed/vcluster): config -> Node objects, manifests -> REST
resources, the parser; and the retry rule of the one REST client (gpusim.kube)."""
import argparse

import pytest
import urllib3
from gpusim import contract as C
from gpusim import kube
from vcluster import cli, components, config
from vcluster.assets import resource_of

NO_ARGS = argparse.Namespace(nodes=None)


def write(tmp_path, text):
    path = tmp_path / "cluster.yaml"
    path.write_text(text)
    return str(path)


def test_groups_inherit_node_defaults_and_override_them(tmp_path):
    cfg = config.load_config(write(tmp_path, """
node_defaults: {cpu: 8, labels: {zone: a, tier: x}, annotations: {note: d},
                taints: [{key: k, effect: NoSchedule}]}
node_groups:
  - {name: a100, count: 2, gpu_product: NVIDIA-A100-SXM4-40GB, gpus_per_node: 8, labels: {tier: y}}
  - {name: cpu, count: 1, taints: [], cpu: 4}
"""), NO_ARGS)
    nodes = config.desired_nodes(cfg, "v1.36.3")
    assert sorted(nodes) == ["a100-0", "a100-1", "cpu-0"]
    gpu, cpu = nodes["a100-1"], nodes["cpu-0"]
    labels, ann = gpu["metadata"]["labels"], gpu["metadata"]["annotations"]
    assert (labels["zone"], labels["tier"], labels[config.GROUP_LABEL]) == ("a", "y", "a100")
    assert labels["kubernetes.io/hostname"] == "a100-1" and labels[config.MANAGED_LABEL] == "true"
    assert (ann[C.ANN_PRODUCT], ann[C.ANN_GPUS], ann[C.ANN_KWOK], ann["note"]) == (
        "NVIDIA-A100-SXM4-40GB", "8", "fake", "d")
    assert gpu["spec"] == {"providerID": "kwok://a100-1", "taints": [{"key": "k", "effect": "NoSchedule"}]}
    assert gpu["status"]["capacity"]["cpu"] == "8" and gpu["status"]["nodeInfo"]["kubeletVersion"] == "v1.36.3"
    # a group's own taints (even none) replace the default ones; no GPUs, no GPU annotations
    assert cpu["spec"]["taints"] == [] and cpu["status"]["allocatable"]["cpu"] == "4"
    assert C.ANN_PRODUCT not in cpu["metadata"]["annotations"]


def test_nodes_flag_replaces_the_groups(tmp_path):
    args = argparse.Namespace(nodes=3, group_name=None, gpu=None, gpus_per_node=None,
                              no_gpu_operator=True, no_gpusim=False)
    cfg = config.load_config(write(tmp_path, "node_groups: [{name: x, count: 9}]\n"), args)
    assert cfg["node_groups"] == [{"name": "gpu", "count": 3, "gpu_product": config.DEFAULT_PRODUCT,
                                   "gpus_per_node": 8}]
    assert cfg["cluster"] == {"gpu_operator": False}
    assert sorted(config.desired_nodes(cfg, "v1")) == ["gpu-0", "gpu-1", "gpu-2"]


@pytest.mark.parametrize("groups, why", [
    ("[{count: 1}]", "every node group needs a name"),
    ("[{name: a}, {name: a}]", "duplicate node group 'a'"),
    ("[{name: a, count: -1}]", "count must be >= 0"),
])
def test_bad_groups(tmp_path, capsys, groups, why):
    with pytest.raises(SystemExit):
        config.load_config(write(tmp_path, "node_groups: %s\n" % groups), NO_ARGS)
    assert why in capsys.readouterr().err


def test_resource_of_a_manifest():
    stage = resource_of({"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "Stage", "metadata": {"name": "s"}})
    assert stage.path(name="s") == "/apis/kwok.x-k8s.io/v1alpha1/stages/s"
    ns = resource_of({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n"}})
    assert ns.path("n", "c") == "/api/v1/namespaces/n/configmaps/c"


def test_name_after_the_command_and_simple_names_only(capsys):
    args = cli.parser().parse_args(["up", "--name", "x", "-q", "--nodes", "2"])
    assert (args.cmd, args.name, args.quiet, args.nodes) == ("up", "x", True, 2)
    with pytest.raises(SystemExit):
        cli.main(["--name", "../x", "kubeconfig"])
    assert "--name must be a simple name" in capsys.readouterr().err


@pytest.mark.parametrize("exc, transient", [
    (kube.ApiError(0, "no connection"), True),
    (kube.ApiError(429, "Too Many Requests"), True),
    (kube.ApiError(503, "Service Unavailable"), True),
    (kube.ApiError(409, "Conflict"), False),
    (kube.ApiError(404, "Not Found"), False),
    (urllib3.exceptions.MaxRetryError(None, "/"), True),
    (ConnectionRefusedError(), True),
    (ValueError("bad JSON"), False),
])
def test_which_failures_are_sent_again(exc, transient):
    assert kube.is_transient(exc) is transient


def test_transient_failures_are_sent_again_up_to_retries(monkeypatch):
    monkeypatch.setattr(kube.time, "sleep", lambda s: None)
    client = object.__new__(kube.Kube)
    answers = [kube.ApiError(503, "Unavailable"), ConnectionResetError(), {"kind": "NodeList"}]

    def call_once(*_args):
        a = answers.pop(0)
        if isinstance(a, Exception):
            raise a
        return a

    client._call_once = call_once
    client.retries = 2
    assert client._call("GET", "/api/v1/nodes") == {"kind": "NodeList"}
    client.retries, answers[:] = 1, [kube.ApiError(503, "a"), kube.ApiError(503, "b"), {}]
    with pytest.raises(kube.ApiError, match="b"):
        client._call("GET", "/api/v1/nodes")
    client.retries, answers[:] = 3, [kube.ApiError(409, "Conflict"), {}]
    with pytest.raises(kube.ApiError, match="Conflict"):  # not transient: raised at once
        client._call("GET", "/api/v1/nodes")


@pytest.mark.parametrize("counts, lease, grace", [
    ([2, 3], 40, 60), ([1000], 40, 60), ([1001], 80, 100), ([4000, 1000], 200, 220)])
def test_node_leases_grow_past_1000_nodes(counts, lease, grace):
    cfg = {"node_groups": [{"name": "g%d" % i, "count": c} for i, c in enumerate(counts)]}
    assert components.lease_seconds(cfg) == lease and components.grace_seconds(cfg) == grace


@pytest.mark.parametrize('cluster, apiserver, others', [
    ({}, [], []),
    ({'feature_gates': {'DRADeviceTaintRules': True, 'B': False}, 'runtime_config': ['resource.k8s.io/v1beta2=true']},
     ['--feature-gates=B=false,DRADeviceTaintRules=true', '--runtime-config=resource.k8s.io/v1beta2=true'],
     ['--feature-gates=B=false,DRADeviceTaintRules=true']),
])
def test_feature_gates_reach_the_control_plane(cluster, apiserver, others):
    cfg = {'cluster': cluster}
    assert components.gate_flags(cfg, runtime_config=True) == apiserver
    assert components.gate_flags(cfg) == others
