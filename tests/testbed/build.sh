#!/usr/bin/env bash
# Builds the real parts of the virtual GPU cluster into a cache OUTSIDE the work tree:
#   ${GPUOPS_CACHE:-$HOME/.cache/gpuops}/testbed/<key>/bin/
#     etcd kube-apiserver kube-controller-manager kube-scheduler   (one binary, cmd/control-plane, four names)
#     kwok                                                          (go install sigs.k8s.io/kwok)
#     gpu-operator                                                  (NVIDIA/gpu-operator, via operator/go.mod)
#   ${GPUOPS_CACHE:-$HOME/.cache/gpuops}/testbed/<key>/nvml-gpus.json
#     what NVIDIA's mock NVML answers for each GPU it mocks (nvml/main.go, its own module nvml/go.mod,
#     rebuilt only when nvml/ changes); the simulated node agents (gpusim) read their GPUs from it
# <key> is derived from hack/versions.env, go.mod, go.sum, cmd/**.go and the Go version, so a
# second run with nothing changed only checks that the binaries are there (seconds).
# Prints the bin dir as the last line of stdout. Logs and timings go to stderr.
#   --print-bin   print the bin dir for the current key and exit (no build)
#   --force       rebuild even when binaries exist
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=/dev/null
source "$here/hack/versions.env"
# shellcheck source=hack/flags.sh
source "$here/hack/flags.sh"
export GOTOOLCHAIN=local
export CGO_ENABLED=0
cache_root=${GPUOPS_CACHE:-$HOME/.cache/gpuops}/testbed

parse_flags 2,11 "$@"

hash=$( { cat "$here/hack/versions.env" "$here/go.mod" "$here/go.sum" "$here/operator/go.mod" "$here/operator/go.sum"; \
          find "$here/cmd" -name '*.go' -type f | LC_ALL=C sort | xargs cat; go env GOVERSION; } \
        | sha256sum | cut -c1-10)
key="k8s-${K8S_VERSION}_kwok-${KWOK_VERSION}_gpuop-${GPU_OPERATOR_RELEASE}_${hash}"
dir="$cache_root/$key"
bin="$dir/bin"
if [ "$print_only" = 1 ]; then echo "$bin"; exit 0; fi
mkdir -p "$bin"
# one build at a time per key: a second run (make's background build, then the stage that needs the
# binaries) waits here and then finds them built
exec 9>"$dir/.lock"
flock 9

log() { printf '[build %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
have() { [ "$force" = 0 ] && for f in "$@"; do [ -x "$bin/$f" ] || return 1; done; }
t_all=$(date +%s)

# The steps below run side by side (each go build uses every core, but links, downloads and the linker's
# single thread leave room): 1. the control plane, 2. kwok, 3. gpu-operator, 4. the asset modules, 5. the
# mock NVML GPUs.

# 1. etcd, kube-apiserver, kube-controller-manager, kube-scheduler: one binary (cmd/control-plane), linked
#    once and hard-linked under the four names it dispatches on
step_control_plane() {
  if have etcd kube-apiserver kube-controller-manager kube-scheduler; then
    log "k8s ${K8S_VERSION} + etcd control plane: cached"; return
  fi
  local t tmp p f ld vpkgs build_date minor
  t=$(date +%s)
  vpkgs="k8s.io/component-base/version k8s.io/client-go/pkg/version"
  build_date=$(sed -n 's/.*"Time":"\([^"]*\)".*/\1/p' \
    "$(go env GOMODCACHE)/cache/download/k8s.io/kubernetes/@v/${K8S_VERSION}.info" 2>/dev/null || true)
  build_date=${build_date:-1970-01-01T00:00:00Z}
  minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
  ld="-s -w"
  for p in $vpkgs; do
    ld="$ld -X $p.gitVersion=${K8S_VERSION} -X $p.gitMajor=1 -X $p.gitMinor=${minor}"
    ld="$ld -X $p.gitTreeState=clean -X $p.buildDate=${build_date}"
  done
  log "building the control plane: etcd kube-apiserver kube-controller-manager kube-scheduler (k8s ${K8S_VERSION})"
  tmp=$(mktemp -d "$dir/.build.XXXXXX")
  (cd "$here" && GOFLAGS=-mod=mod go build -trimpath -ldflags "$ld" -o "$tmp/control-plane" ./cmd/control-plane)
  for f in etcd kube-apiserver kube-controller-manager kube-scheduler; do ln -f "$tmp/control-plane" "$tmp/$f"; done
  for f in etcd kube-apiserver kube-controller-manager kube-scheduler; do mv -f "$tmp/$f" "$bin/$f"; done
  rm -rf "$tmp"
  log "control plane built in $(( $(date +%s) - t ))s"
}

# 2. kwok, 3. gpu-operator: plain `go install pkg@version` into a temp GOBIN, then move.
gobin_install() { # name pkg@version ldflags
  local name=$1 pkgver=$2 ld=$3 t tmp
  if have "$name"; then log "$name: cached"; return; fi
  t=$(date +%s)
  log "go install $pkgver"
  tmp=$(mktemp -d "$dir/.build.XXXXXX")
  (cd "$dir" && GOFLAGS= GOBIN="$tmp" go install -trimpath -ldflags "$ld" "$pkgver")
  mv -f "$tmp/$name" "$bin/$name"; rmdir "$tmp"
  log "$name built in $(( $(date +%s) - t ))s"
}
step_kwok() { gobin_install kwok "sigs.k8s.io/kwok/cmd/kwok@${KWOK_VERSION}" "-s -w"; }
# gpu-operator: built through our wrapper module operator/ (see hack/gen-operator-mod.sh for why
# `go install ...@version` cannot be used), with the operator's own dependency versions.
step_operator() {
  if have gpu-operator; then log "gpu-operator: cached"; return; fi
  local t tmp
  t=$(date +%s)
  log "building github.com/NVIDIA/gpu-operator/cmd/gpu-operator ${GPU_OPERATOR_RELEASE} (${GPU_OPERATOR_VERSION})"
  tmp=$(mktemp -d "$dir/.build.XXXXXX")
  (cd "$here/operator" && GOFLAGS=-mod=mod go build -trimpath \
    -ldflags "-s -w -X github.com/NVIDIA/gpu-operator/internal/info.version=${GPU_OPERATOR_RELEASE} -X github.com/NVIDIA/gpu-operator/internal/info.gitCommit=${GPU_OPERATOR_VERSION##*-}" \
    -o "$tmp/gpu-operator" github.com/NVIDIA/gpu-operator/cmd/gpu-operator)
  mv -f "$tmp/gpu-operator" "$bin/gpu-operator"; rmdir "$tmp"
  log "gpu-operator built in $(( $(date +%s) - t ))s"
}

# 4. modules whose YAML (CRDs, kwok stages, operator assets) `testbed up` reads at run time; the marker is
#    keyed by the module table, so a module added to it is downloaded by the next build
step_assets() {
  assets_ok="$dir/assets-$(sha256sum "$here/hack/asset-modules.sh" | cut -c1-12).ok"
  if [ -f "$assets_ok" ] && [ "$force" = 0 ]; then
    log "asset modules: cached"
  else
    t=$(date +%s)
    "$here/hack/asset-modules.sh" download >/dev/null
    touch "$assets_ok"
    log "asset modules downloaded in $(( $(date +%s) - t ))s"
  fi
}

# cgo needs a C compiler: installed with apt-get where there is none and this run may (root), else a clear error
need_c_compiler() {
  command -v gcc >/dev/null 2>&1 && return
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    log "no C compiler (cgo of the mock NVML step): apt-get install gcc libc6-dev"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends gcc libc6-dev
  else
    log "the mock NVML step needs a C compiler (cgo): install gcc (e.g. apt-get install gcc libc6-dev)"; exit 1
  fi
}

# 5. the GPUs of NVIDIA's mock NVML (go-nvml pkg/nvml/mock, cgo: its types come from nvml.h; the mock
#    itself never loads libnvidia-ml), dumped once as JSON; the marker is keyed by nvml/'s files
step_nvml() {
  local h t tmp
  h=$(cat "$here/nvml/go.mod" "$here/nvml/go.sum" "$here/nvml/main.go" | sha256sum | cut -c1-12)
  if [ "$force" = 0 ] && [ -f "$dir/nvml-$h.ok" ] && [ -s "$dir/nvml-gpus.json" ]; then
    log "NVIDIA mock NVML GPUs: cached"; return
  fi
  t=$(date +%s)
  need_c_compiler
  tmp=$(mktemp -d "$dir/.build.XXXXXX")
  (cd "$here/nvml" && CGO_ENABLED=1 CGO_CFLAGS="-O2 -Wno-deprecated-declarations" GOFLAGS=-mod=mod \
    go build -trimpath -ldflags "-s -w" -o "$tmp/nvml-dump" .)
  "$tmp/nvml-dump" >"$tmp/nvml-gpus.json"
  mv -f "$tmp/nvml-dump" "$bin/nvml-dump"
  mv -f "$tmp/nvml-gpus.json" "$dir/nvml-gpus.json"
  rm -rf "$tmp" "$dir"/nvml-*.ok
  touch "$dir/nvml-$h.ok"
  log "NVIDIA mock NVML GPUs dumped in $(( $(date +%s) - t ))s: $dir/nvml-gpus.json"
}

pids=()
for step in step_control_plane step_kwok step_operator step_assets step_nvml; do
  "$step" & pids+=($!)
done
failed=0
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
if [ "$failed" = 1 ]; then log "build failed (see the messages above)"; exit 1; fi

# keep this key and the previous one; older builds only take disk (running processes keep their
# deleted binaries open, and `testbed up` restarts a cluster whose binaries changed)
for old in $(ls -dt "$cache_root"/k8s-*/ 2>/dev/null | tail -n +3); do
  log "removing old build $old"
  rm -rf "$old"
done
log "done in $(( $(date +%s) - t_all ))s: $bin"
echo "$bin"
