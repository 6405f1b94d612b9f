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
export GOTOOLCHAIN=local
export CGO_ENABLED=0
tags=remove_all_sd
key=$( { cat "$here/go.mod" "$here/go.sum"; echo "$tags"; go env GOVERSION; } | sha256sum | cut -c1-10)
dir=${GPUOPS_CACHE:-$HOME/.cache/gpuops}/tools/promtool-$key
mkdir -p "$dir"
exec 9>"$dir/.lock"
flock 9
if [ ! -x "$dir/promtool" ]; then
  t=$(date +%s)
  echo "[promtool] building github.com/prometheus/prometheus/cmd/promtool (tags $tags) into $dir" >&2
  (cd "$here" && GOFLAGS=-mod=mod go build -trimpath -tags "$tags" -ldflags "-s -w" \
    -o "$dir/promtool.tmp" github.com/prometheus/prometheus/cmd/promtool)
  mv -f "$dir/promtool.tmp" "$dir/promtool"
  echo "[promtool] built in $(( $(date +%s) - t ))s" >&2
  # older keys only take disk
  for old in "$(dirname "$dir")"/promtool-*/; do
    [ "${old%/}" = "$dir" ] || rm -rf "$old"
  done
fi
echo "$dir/promtool"
