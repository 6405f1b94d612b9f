"""gpusim: simulated NVIDIA / OpenShift node agents for the virtual GPU cluster (tests/testbed).

Pure logic lives in the top-level modules (``placement``, ``migparted``, ``sharing``, ``gfd``,
``nfd``, ``olm``, ``machineapi``); the thin Kubernetes watch loops live in ``agents``.
Run with ``PYTHONPATH=tests/testbed python3 -m gpusim --kubeconfig K --config FILE``.
See README.md in this directory for the contract (annotations, labels, config keys).
"""

__version__ = "0.1.0"
