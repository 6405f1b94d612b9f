#!/usr/bin/env bash
# Builds Prometheus' promtool (github.com/prometheus/prometheus/cmd/promtool, the version pinned in go.mod
# here) into a cache OUTSIDE the work tree and prints its path as the last line of stdout:
#   ${GPUOPS_CACHE:-$HOME/.cache/gpuops}/tools/promtool-<key>/promtool
# <key> is derived from go.mod, go.sum, the build tags and the Go version, so a second run only checks that
# the binary is there (well under a second). Called by the test that uses it (tests/integration/test_alerts.py),
# not by `make demo`. Its own module: Prometheus needs newer k8s.io modules than the virtual cluster pins.
# remove_all_sd leaves out the service-discovery plugins (plugins/plugin_*.go of the Prometheus module);
# promtool still imports discovery/kubernetes itself.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exec "$here/../hack/build-go-tool.sh" "$here" promtool github.com/prometheus/prometheus/cmd/promtool remove_all_sd
