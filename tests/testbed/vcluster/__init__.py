"""vcluster: the testbed CLI (``tests/testbed/testbed``) as a package.

  common.py     paths, names, the progress log and ``die``
  config.py     the cluster config file and the Node objects it asks for
  state.py      the per-cluster state directory (state.json, lock)
  processes.py  ports, starting/stopping the processes this CLI owns, waiting
  pki.py        certificates (openssl CLI) and the admin kubeconfig
  assets.py     binaries (build.sh), Go module assets, CRDs
  components.py the argv of each component (etcd, apiserver, ..., gpu-operator, gpusim)
  up.py         ``testbed up``: start or reconcile a cluster, step by step
  commands.py   ``down``, ``status``, ``kubeconfig``, ``env``, ``logs``, ``build``
  chaos.py      ``chaos``: faults by recorded PID (freeze, kill, start again) and on nodes
  cli.py        the argument parser

API calls go through the simulator's REST client, ``gpusim.kube.Kube`` (one client for the
whole testbed). Everything listens on 127.0.0.1; every process is started by this CLI,
recorded by PID in the state dir and stopped by that PID on ``down``.
"""
