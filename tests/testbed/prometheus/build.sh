#!/usr/bin/env bash
# Builds the Prometheus server (github.com/prometheus/prometheus/cmd/prometheus, the version pinned in go.mod here,
# v0.316.0 as promtool's) into a cache OUTSIDE the work tree and prints its path as the last line of stdout:
#   ${GPUOPS_CACHE:-$HOME/.cache/gpuops}/tools/prometheus-<key>/prometheus
# <key> is derived from go.mod, go.sum, the build tags and the Go version, so a second run only checks that the
# binary is there (well under a second). Called by the test that uses it (tests/integration/test_gpu_health.py,
# which runs it against the simulated DCGM exporter), not by `make demo`. Its own module beside promtool's (same
# versions, plus what the server needs); remove_all_sd leaves out the service-discovery plugins (static targets
# only), and without the builtinassets tag the web UI is not embedded (the HTTP API is all the test asks).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exec "$here/../hack/build-go-tool.sh" "$here" prometheus github.com/prometheus/prometheus/cmd/prometheus remove_all_sd
