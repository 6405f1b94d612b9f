#!/usr/bin/env bash
# Installs the helm CLI that kubernetes.core.helm (and the roles that use it) run, built from
# its Go module with the local Go toolchain: no prebuilt binary is downloaded.
#
#   tests/testbed/hack/install-helm.sh [--print-bin] [--force]
#
# Installs ${GPUOPS_CACHE:-$HOME/.cache/gpuops}/bin/helm (HELM_VERSION, default below; a v3.x.y
# or v4.x.y tag). Idempotent: when that binary already reports HELM_VERSION nothing is built, so a
# second call takes milliseconds. Safe to call concurrently (flock). Prints the binary's path as
# the LAST line of stdout; progress goes to stderr.
#   --print-bin   print the path and exit 0 if it is installed at HELM_VERSION, else exit 1
#   --force       rebuild even if installed
set -euo pipefail

HELM_VERSION=${HELM_VERSION:-v3.22.0}
bin_dir=${GPUOPS_CACHE:-$HOME/.cache/gpuops}/bin
helm=$bin_dir/helm

# shellcheck source=flags.sh
source "$(dirname "$0")/flags.sh"
parse_flags 2,12 "$@"

case "$HELM_VERSION" in
  v3.*) module=helm.sh/helm/v3 ;;
  v4.*) module=helm.sh/helm/v4 ;;
  *) echo "HELM_VERSION must be a helm v3.x.y or v4.x.y tag, got '$HELM_VERSION'" >&2; exit 2 ;;
esac

installed() {
  [ -x "$helm" ] && [ "$("$helm" version --template '{{.Version}}' 2>/dev/null || true)" = "$HELM_VERSION" ]
}

if [ "$print_only" = 1 ]; then
  installed && { echo "$helm"; exit 0; }
  echo "helm $HELM_VERSION is not installed at $helm (run $0)" >&2
  exit 1
fi

mkdir -p "$bin_dir"
exec 9>"$bin_dir/.helm.lock"
flock 9
if [ "$force" = 0 ] && installed; then
  echo "helm $HELM_VERSION: cached ($helm)" >&2
  echo "$helm"
  exit 0
fi

command -v go >/dev/null || { echo "install-helm.sh needs the Go toolchain (go) on PATH" >&2; exit 1; }
t=$(date +%s)
echo "building helm $HELM_VERSION from $module (go install; a cold build takes a few minutes)" >&2
tmp=$(mktemp -d "$bin_dir/.helm-build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# the version ldflag makes `helm version` report the full tag (go install alone reports "v3.NN")
GOTOOLCHAIN=${GOTOOLCHAIN:-local} CGO_ENABLED=0 GOFLAGS= GOBIN=$tmp \
  go install -trimpath -ldflags "-s -w -X $module/internal/version.version=$HELM_VERSION" \
  "$module/cmd/helm@$HELM_VERSION" >&2
mv -f "$tmp/helm" "$helm"
installed || { echo "built $helm but it does not report $HELM_VERSION" >&2; exit 1; }
echo "helm $HELM_VERSION installed in $(( $(date +%s) - t ))s: $helm" >&2
echo "$helm"
