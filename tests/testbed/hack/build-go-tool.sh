#!/usr/bin/env bash
# Builds one Go command of a tool module of the test bed into a cache OUTSIDE the work tree and prints the binary's
# path as the last line of stdout:
#   build-go-tool.sh <module dir> <name> <package> [build tags]
#   -> ${GPUOPS_CACHE:-$HOME/.cache/gpuops}/tools/<name>-<key>/<name>
# <key> is derived from the module dir's go.mod and go.sum, the tags and the Go version, so a second run only checks
# that the binary is there (well under a second); a lock keeps two builders apart, and older keys are removed.
# Used by tests/testbed/promtool/build.sh and tests/testbed/prometheus/build.sh.
set -euo pipefail
moddir=$(cd "$1" && pwd)
name=$2
pkg=$3
tags=${4:-}
export GOTOOLCHAIN=local
export CGO_ENABLED=0
key=$( { cat "$moddir/go.mod" "$moddir/go.sum"; echo "$tags"; go env GOVERSION; } | sha256sum | cut -c1-10)
dir=${GPUOPS_CACHE:-$HOME/.cache/gpuops}/tools/$name-$key
mkdir -p "$dir"
exec 9>"$dir/.lock"
flock 9
if [ ! -x "$dir/$name" ]; then
  t=$(date +%s)
  echo "[$name] building $pkg (tags $tags) into $dir" >&2
  (cd "$moddir" && GOFLAGS=-mod=mod go build -trimpath -tags "$tags" -ldflags "-s -w" -o "$dir/$name.tmp" "$pkg")
  mv -f "$dir/$name.tmp" "$dir/$name"
  echo "[$name] built in $(( $(date +%s) - t ))s" >&2
  # older keys only take disk
  for old in "$(dirname "$dir")/$name"-*/; do
    [ "${old%/}" = "$dir" ] || rm -rf "$old"
  done
fi
echo "$dir/$name"
