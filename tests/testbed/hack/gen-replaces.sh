#!/usr/bin/env bash
# Regenerates tests/testbed/go.mod's k8s.io staging replace list for K8S_VERSION.
#
# k8s.io/kubernetes requires its ~33 staging modules at v0.0.0 and resolves them with
# relative "=> ./staging/src/..." replaces, which a consumer cannot use. The published
# staging modules for Kubernetes v1.X.Y are v0.X.Y, so we read k/k's own go.mod (through
# `go mod download -json`, i.e. the module cache, no other network) and pin each one.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=/dev/null
source "$here/hack/versions.env"
export GOTOOLCHAIN=local GOFLAGS=-mod=mod
cd "$here"

gomod=$(go mod download -json "k8s.io/kubernetes@${K8S_VERSION}" \
  | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')
[ -f "$gomod" ] || { echo "cannot read go.mod of k8s.io/kubernetes@${K8S_VERSION}" >&2; exit 1; }
staging_version="v0.${K8S_VERSION#v1.}"

# Drop old k8s.io replaces, then add the current set.
for old in $(go mod edit -json | sed -n 's/^[[:space:]]*"Path": "\(k8s\.io\/[^"]*\)",\{0,1\}$/\1/p' | sort -u); do
  go mod edit -dropreplace="$old" 2>/dev/null || true
done
mods=$(sed -n 's|^[[:space:]]*\(k8s\.io/[^ ]*\) => \./staging/.*|\1|p' "$gomod" | sort -u)
n=0
for m in $mods; do
  go mod edit -replace="$m=$m@$staging_version"
  n=$((n + 1))
done
echo "pinned $n staging modules to $staging_version"

# etcd server: the version k/k requires (etcdmain lives in go.etcd.io/etcd/server/v3).
etcd=$(sed -n 's|^[[:space:]]*go\.etcd\.io/etcd/server/v3 \(v[^ ]*\).*|\1|p' "$gomod" | head -1)
go get "k8s.io/kubernetes@${K8S_VERSION}" "go.etcd.io/etcd/server/v3@${etcd}"
go mod tidy
echo "k8s.io/kubernetes ${K8S_VERSION}, etcd server ${etcd}"
