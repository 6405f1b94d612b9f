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
export GOTOOLCHAIN=local
export CGO_ENABLED=0
tags=remove_all_sd
key=$( { cat "$here/go.mod" "$here/go.sum"; echo "$tags"; go env GOVERSION; } | sha256sum | cut -c1-10)
dir=${GPUOPS_CACHE:-$HOME/.cache/gpuops}/tools/prometheus-$key
mkdir -p "$dir"
exec 9>"$dir/.lock"
flock 9
if [ ! -x "$dir/prometheus" ]; then
  t=$(date +%s)
  echo "[prometheus] building github.com/prometheus/prometheus/cmd/prometheus (tags $tags) into $dir" >&2
  (cd "$here" && GOFLAGS=-mod=mod go build -trimpath -tags "$tags" -ldflags "-s -w" \
    -o "$dir/prometheus.tmp" github.com/prometheus/prometheus/cmd/prometheus)
  mv -f "$dir/prometheus.tmp" "$dir/prometheus"
  echo "[prometheus] built in $(( $(date +%s) - t ))s" >&2
  # older keys only take disk
  for old in "$(dirname "$dir")"/prometheus-*/; do
    [ "${old%/}" = "$dir" ] || rm -rf "$old"
  done
fi
echo "$dir/prometheus"
