#!/usr/bin/env bash
# The rollout's batch-invariant matmul (fp32 and bf16) against OpenBLAS sgemm on the Qwen-shaped model's decode
# shapes (64, 128 and 256 rows), one thread and then OR1_BENCH_THREADS (default 2), both sides
# on the OpenBLAS core or1 runs. Run from the repository root after `make bench`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/bench/blas_env.sh"
[[ -x "$root/build/bench_matmul" ]] || { echo "bench/matmul.sh: build/bench_matmul missing (make bench)" >&2; exit 77; }
# First the core's peak rate of bf16 dot products both ways (VDPBF16PS, widened fp32 FMAs).
"$root/build/bench_dot_rate" || [[ $? -eq 77 ]]
for threads in 1 "${OR1_BENCH_THREADS:-2}"; do
  OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads OMP_WAIT_POLICY=passive "$root/build/bench_matmul" "$@"
done
