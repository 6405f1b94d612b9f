# shellcheck shell=bash
# The flags of build.sh and hack/install-helm.sh: `parse_flags HELP_LINES "$@"` sets
#   force=1       for --force       (rebuild even when the binaries exist)
#   print_only=1  for --print-bin   (print the path, build nothing)
# -h/--help prints the lines HELP_LINES (a sed range such as 2,12) of the calling script.
parse_flags() {
  local help=$1 a
  shift
  force=0 print_only=0
  for a in "$@"; do
    case "$a" in
      --force) force=1 ;;
      --print-bin) print_only=1 ;;
      -h|--help) sed -n "${help}p" "$0"; exit 0 ;;
      *) echo "unknown argument: $a" >&2; exit 2 ;;
    esac
  done
}
