# Sourced by the benchmark scripts that run build/or1 on checkpoints they make: stops with 77
# (skipped) when or1 is not built, and gives a scratch folder $work, removed at exit with any
# background job the script started.
[[ -x "$root/build/or1" ]] || { echo "bench/$(basename "$0"): build/or1 missing (make build)" >&2; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"; kill $(jobs -p) 2>/dev/null || true' EXIT
