"""What a validation workload's container prints, from the simulator's knowledge of its node (pure).

The smoke test's default workload is NVIDIA's CUDA vectorAdd sample image (``cuda-sample:vectoradd-*``, a
mirror keeps the repository name and tag). Its entrypoint is the vectorAdd sample, which prints the lines
below and ``Test PASSED`` when the sum computed on the GPU is right (docs/facts.md). The simulator writes
that log for a container of that image (entrypoint not overridden) in a pod bound to a node whose
simulated device plugin advertises every GPU resource the pod requests (allocatable > 0: a device was
allocated), or that got its device through Dynamic Resource Allocation: the container uses a pod claim, or the
pod's extended resources were served through a DeviceClass (``status.extendedResourceClaimStatus``); the real
scheduler binds such a pod only after allocating its claims. Node injections (``gpusim.gpuops.dev/inject``):

* ``workload-wrong-output``: the sample's result check fails (``Result verification failed at element 0!``
  on stderr, no ``Test PASSED``); KWOK still completes the pod with exit code 0, so only the log shows it.
* ``workload-no-log``: no log is written, so the API server's log request fails (an unreadable log).

Every other container (other images, a command override, no GPU allocated) gets no log: the simulator
does not know what it would print.
"""

import os

from gpusim import contract as C

SAMPLE_REPOSITORY = "cuda-sample"
SAMPLE_TAG_PREFIX = "vectoradd"
ELEMENTS = 50000
THREADS_PER_BLOCK = 256

VECTORADD_HEAD = (
    ("stdout", "[Vector addition of %d elements]" % ELEMENTS),
    ("stdout", "Copy input data from the host memory to the CUDA device"),
    ("stdout", "CUDA kernel launch with %d blocks of %d threads"
     % ((ELEMENTS + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK, THREADS_PER_BLOCK)),
    ("stdout", "Copy output data from the CUDA device to the host memory"),
)
VECTORADD_PASSED = VECTORADD_HEAD + (("stdout", "Test PASSED"), ("stdout", "Done"))
VECTORADD_WRONG = VECTORADD_HEAD + (("stderr", "Result verification failed at element 0!"),)


def is_vectoradd(image):
    """Whether ``image`` is the CUDA vectorAdd sample (``<registry>/<path>/cuda-sample:vectoradd-...``)."""
    if not isinstance(image, str) or "@" in image:
        return False
    repository, _sep, tag = image.rpartition(":")
    if not repository or "/" in tag:
        return False
    return repository.rsplit("/", 1)[-1] == SAMPLE_REPOSITORY and tag.startswith(SAMPLE_TAG_PREFIX)


def _quantity(value):
    try:
        return int(str(value or "0"))
    except ValueError:
        return 0


def device_allocated(requested, node):
    """Whether the node advertises every GPU resource of ``requested`` (and there is one)."""
    gpu = [r for r in requested or () if C.is_gpu_resource(r)]
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    return bool(gpu) and all(_quantity(allocatable.get(r)) > 0 for r in gpu)


def container_log(container, requested, node, dra=False):
    """The (stream, line) pairs the container prints, or None when the simulator writes no log for it. ``dra``: the
    scheduler served the container's extended resources through a DeviceClass (the pod's
    ``status.extendedResourceClaimStatus`` maps them); a container with pod claims (``claims``) got its devices
    through DRA too."""
    if container.get("command") or not is_vectoradd(container.get("image")):
        return None
    inject = C.injections(node)
    through_dra = bool(container.get("claims")) or dra
    if C.INJECT_NO_LOG in inject or not (through_dra or device_allocated(requested, node)):
        return None
    return VECTORADD_WRONG if C.INJECT_WRONG_OUTPUT in inject else VECTORADD_PASSED


def cri_log(lines, timestamp):
    """The text of a container log file in the CRI format the kubelet reads (``<time> <stream> F <line>``)."""
    return "".join("%s %s F %s\n" % (timestamp, stream, line) for stream, line in lines)


def pod_dir(root, namespace, pod, uid):
    """The folder of one pod's log files (by uid: a new pod of the same name gets a new folder)."""
    return os.path.join(root, "%s_%s_%s" % (namespace, pod, uid))


def log_file(root, namespace, pod, uid, container):
    """The log file of one container."""
    return os.path.join(pod_dir(root, namespace, pod, uid), container + ".log")


def logs_object(namespace, pod, uid, files):
    """The kwok ``Logs`` object mapping the pod's containers to their files ({container: path}); owned by the
    pod, so the garbage collector removes it with the pod."""
    return {
        "apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "Logs",
        "metadata": {"name": pod, "namespace": namespace,
                     "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": pod, "uid": uid}]},
        "spec": {"logs": [{"containers": [name], "logsFile": path} for name, path in sorted(files.items())]},
    }
