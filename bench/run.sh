#!/usr/bin/env bash
# Runs every benchmark script bench/*.sh (other than this one) in turn, from the
# repository root; `make bench` builds first and then calls this.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
status=0
for script in bench/*.sh; do
  [[ "$(basename "$script")" == run.sh ]] && continue
  echo "== $script"
  bash "$script" || { echo "bench: $script failed" >&2; status=1; }
done
exit $status
