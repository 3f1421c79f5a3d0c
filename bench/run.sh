#!/usr/bin/env bash
# Runs every benchmark script bench/*.sh (other than this one, and the helpers the scripts source,
# which have no #! line) in turn, from the repository root; `make bench` builds first and then
# calls this. Exit 77 means skipped.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
status=0
for script in bench/*.sh; do
  [[ "$(basename "$script")" == run.sh || "$(head -c 2 "$script")" != "#!" ]] && continue
  echo "== $script"
  rc=0
  bash "$script" || rc=$?
  if [[ $rc -eq 77 ]]; then echo "bench: $script skipped" >&2
  elif [[ $rc -ne 0 ]]; then echo "bench: $script failed" >&2; status=1; fi
done
exit $status
