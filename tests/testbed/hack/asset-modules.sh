#!/usr/bin/env bash
# Go modules whose plain files (CRDs with their real schemas, kwok stages, gpu-operator assets)
# the testbed reads from the Go module cache at run time. Nothing is copied into this repo.
#   asset-modules.sh            download what is missing, print "<key> <module dir>" per line
# Modules the checksum database does not know (openshift pseudo-versions) are downloaded with
# GONOSUMDB for that module only and then checked against the h1 sum pinned below.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=/dev/null
source "$here/hack/versions.env"
export GOTOOLCHAIN=local GOFLAGS=

# key  module@version  pinned-h1-sum (or -)
table="
kwok            sigs.k8s.io/kwok@${KWOK_VERSION}  -
gpu-operator    github.com/NVIDIA/gpu-operator@${GPU_OPERATOR_VERSION}  -
olm             github.com/operator-framework/api@v0.35.0  -
openshift-api   github.com/openshift/api@v0.0.0-20251021124544-a2cb0c5d994d  h1:qV7SZW35RjLL0Hq8yW1Cbsa4F4zb6Fc+jFfUAKvHIbE=
autoscaler      github.com/openshift/cluster-autoscaler-operator@v0.0.1-0.20241204142113-43631b045675  -
nfd-operator    github.com/openshift/cluster-nfd-operator@v0.0.0-20260629131115-e53505ffcb61  h1:Ehnmbf0JYcNE3p48+o4dfjQLconilhS3hlZv5e1SmvU=
prometheus-op   github.com/prometheus-operator/prometheus-operator@v0.83.0  -
grafana-op      github.com/grafana/grafana-operator/v5@v5.16.0  -
"
echo "$table" | while read -r key mv sum; do
  [ -n "$key" ] || continue
  mod=${mv%@*}
  nosum=
  [ "$sum" != - ] && nosum=$mod
  out=$(cd / && GONOSUMDB=$nosum go mod download -json "$mv")
  dir=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' <<<"$out")
  got=$(sed -n 's/^[[:space:]]*"Sum": "\(.*\)",\{0,1\}$/\1/p' <<<"$out")
  if [ -z "$dir" ] || [ ! -d "$dir" ]; then echo "asset module $mv: $out" >&2; exit 1; fi
  if [ "$sum" != - ] && [ "$got" != "$sum" ]; then
    echo "asset module $mv: checksum $got, expected $sum" >&2; exit 1
  fi
  echo "$key $dir"
done
