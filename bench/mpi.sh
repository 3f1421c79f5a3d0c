#!/usr/bin/env bash
# Data parallelism: or1 train step time with 1 rank x 2 threads (the reference) against
# 2 ranks x 1 thread, and the bytes each rank sends through MPI_Allreduce per step (counted
# by a PMPI wrapper), extrapolated to a 7B model on 8, 64 and 256 GPUs.
# Options pass through to bench/bench_mpi.py (e.g. --steps 6 --rounds 3 --bandwidth-gbs 50).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/bench/blas_env.sh"
if ! command -v mpirun >/dev/null || ! command -v mpicc >/dev/null; then
  echo "bench/mpi.sh: skipped: mpirun or mpicc missing (openmpi-bin, libopenmpi-dev)" >&2
  exit 77
fi
/usr/bin/python3 "$root/bench/bench_mpi.py" --or1 "$root/build/or1" --root "$root" "$@"
