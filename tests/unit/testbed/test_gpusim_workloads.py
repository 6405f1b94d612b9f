"""gpusim's validation workload logs: which container prints what, and the files and Logs object kwok serves."""
import pytest
from gpusim import contract as C
from gpusim import workloads as W

SAMPLE = "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0-ubuntu22.04"


def node(allocatable=None, inject=""):
    annotations = {C.ANN_INJECT: inject} if inject else {}
    return {"metadata": {"name": "a100-0", "annotations": annotations},
            "status": {"allocatable": {"nvidia.com/gpu": "8"} if allocatable is None else allocatable}}


@pytest.mark.parametrize("image, expected", [
    (SAMPLE, True),
    ("mirror.example.com:5000/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0-ubi8", True),
    ("nvcr.io/nvidia/k8s/cuda-sample:nbody", False),
    ("nvcr.io/nvidia/k8s/cuda-sample", False),
    ("registry.example.com/gpu-burn:1", False),
    ("localhost:5000/cuda-sample", False),
    ("nvcr.io/nvidia/k8s/cuda-sample@sha256:" + "0" * 64, False),
    (None, False),
])
def test_is_vectoradd(image, expected):
    assert W.is_vectoradd(image) is expected


def test_the_sample_prints_test_passed_on_an_allocated_device():
    lines = W.container_log({"name": "smoke", "image": SAMPLE}, ["nvidia.com/gpu"], node())
    assert [text for _stream, text in lines] == [
        "[Vector addition of 50000 elements]", "Copy input data from the host memory to the CUDA device",
        "CUDA kernel launch with 196 blocks of 256 threads", "Copy output data from the CUDA device to the host memory",
        "Test PASSED", "Done"]
    assert {stream for stream, _text in lines} == {"stdout"}
    mig = node({"nvidia.com/mig-1g.5gb": "7"})
    assert W.container_log({"name": "smoke", "image": SAMPLE}, ["nvidia.com/mig-1g.5gb"], mig) == W.VECTORADD_PASSED


def test_no_log_without_an_allocated_device_a_known_entrypoint_or_with_the_injection():
    smoke = {"name": "smoke", "image": SAMPLE}
    assert W.container_log(smoke, [], node()) is None  # no GPU requested
    assert W.container_log(smoke, ["nvidia.com/gpu"], node({"nvidia.com/gpu": "0"})) is None
    assert W.container_log(smoke, ["nvidia.com/mig-1g.5gb"], node()) is None  # not advertised there
    assert W.container_log(dict(smoke, command=True), ["nvidia.com/gpu"], node()) is None
    assert W.container_log({"name": "burn", "image": "gpu-burn:1"}, ["nvidia.com/gpu"], node()) is None
    assert W.container_log(smoke, ["nvidia.com/gpu"], node(inject="slow," + C.INJECT_NO_LOG)) is None


def test_a_device_allocated_through_dra_prints_too():
    """The real scheduler binds a pod only after allocating its claims: a container using a pod claim, or whose
    extended resources a DeviceClass served (the pod's extendedResourceClaimStatus), got a device on a node that
    advertises no GPU resource."""
    dra_node = node({"nvidia.com/gpu": "0"})
    smoke = {"name": "smoke", "image": SAMPLE}
    assert W.container_log(dict(smoke, claims=True), [], dra_node) == W.VECTORADD_PASSED
    assert W.container_log(smoke, ["example.com/t4"], dra_node, dra=True) == W.VECTORADD_PASSED
    assert W.container_log(smoke, ["nvidia.com/gpu"], dra_node, dra=False) is None
    assert W.container_log(dict(smoke, claims=True), [], node(inject=C.INJECT_NO_LOG)) is None


def test_the_pod_informer_keeps_what_the_logs_need_of_dra():
    from gpusim.informer import slim_pod
    pod = {"metadata": {"name": "p", "namespace": "n"}, "spec": {"nodeName": "t4-0", "containers": [
        {"name": "smoke", "image": SAMPLE, "resources": {"claims": [{"name": "gpu"}]}},
        {"name": "ext", "image": SAMPLE, "resources": {"limits": {"example.com/t4": "1"}}}]},
        "status": {"phase": "Pending", "extendedResourceClaimStatus": {"resourceClaimName": "p-extended-resources-x",
                                                                       "requestMappings": [{"containerName": "ext"}]}}}
    slim = slim_pod(pod)
    assert [c["claims"] for c in slim["spec"]["containers"]] == [True, False]
    assert slim["status"]["extendedResourceContainers"] == ["ext"]


def test_wrong_output_injection_ends_with_the_failed_result_check():
    lines = W.container_log({"name": "smoke", "image": SAMPLE}, ["nvidia.com/gpu"], node(inject=C.INJECT_WRONG_OUTPUT))
    assert lines[-1] == ("stderr", "Result verification failed at element 0!")
    assert "Test PASSED" not in [text for _stream, text in lines]


def test_cri_file_and_logs_object(tmp_path):
    text = W.cri_log([("stdout", "a b"), ("stderr", "c")], "2026-01-01T00:00:00.000000Z")
    assert text == "2026-01-01T00:00:00.000000Z stdout F a b\n2026-01-01T00:00:00.000000Z stderr F c\n"
    path = W.log_file(str(tmp_path), "ns", "pod-x", "uid-1", "smoke")
    assert path == str(tmp_path / "ns_pod-x_uid-1" / "smoke.log")
    obj = W.logs_object("ns", "pod-x", "uid-1", {"smoke": path})
    assert obj["metadata"] == {"name": "pod-x", "namespace": "ns", "ownerReferences": [
        {"apiVersion": "v1", "kind": "Pod", "name": "pod-x", "uid": "uid-1"}]}
    assert obj["spec"] == {"logs": [{"containers": ["smoke"], "logsFile": path}]}
    assert (obj["apiVersion"], obj["kind"]) == ("kwok.x-k8s.io/v1alpha1", "Logs")
