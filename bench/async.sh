#!/usr/bin/env bash
# Asynchronous training against the synchronous loop on the same two cores, on the demo config
# (demo/demo.yaml, rows written by `or1 gen-arith` as demo/demo.py writes them, into build/async_bench/):
# wall seconds, trained tokens/s, held-out avg@8 at every eval, the wall time at which each run
# first reaches a held-out accuracy, each role's waiting, and the last step's sampled entropy.
# Variants: 1 process x 2 threads; mpirun -np 2 x 1 thread (data parallel); mpirun -np 2
# --bind-to core with train.async (1 trainer rank, 1 rollout rank) at max_staleness 1, 2, and 1
# with partial_tokens 32. Options pass through to bench/async_bench.py, e.g.
#   bash bench/async.sh --seeds 3 --markdown --json build/async_bench/result.json
#   bash bench/async.sh --seeds 1 --steps 4 --eval-every 2 --held-out 16   (a smoke test)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/bench/blas_env.sh"
if ! command -v mpirun >/dev/null; then
  echo "bench/async.sh: skipped: mpirun missing (openmpi-bin)" >&2
  exit 77
fi
/usr/bin/python3 "$root/bench/async_bench.py" --or1 "$root/build/or1" --root "$root" "$@"
