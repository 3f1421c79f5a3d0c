#!/usr/bin/env bash
# Sampler: CPU-ms per token on a 151,936-token vocabulary, the O(V) sampler against the
# sort-based one it replaced, and a 128-row step of the CPU backend on 2 threads.
# Run from the repository root after `make bench` has built build/sample_bench.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[[ -x "$root/build/sample_bench" ]] || { echo "bench/sample.sh: build/sample_bench missing (make bench)" >&2; exit 77; }
OMP_NUM_THREADS=${OR1_BENCH_THREADS:-2} OMP_WAIT_POLICY=passive "$root/build/sample_bench" 151936 128
