#!/usr/bin/env bash
# Rollout engine: or1 generate tokens/s against a PyTorch fp32 sampler with a KV cache, same run.
# OR1_BENCH_THREADS (default 2) sets or1's --threads, torch.set_num_threads and the thread count
# of the OpenBLAS that Debian's PyTorch calls (OPENBLAS_NUM_THREADS) alike. OpenMP threads of both
# sleep rather than spin while waiting (OMP_WAIT_POLICY=passive unless set): on a shared 2-core
# machine a spinning thread holds a core another process needs, which made a decode step of either
# side many times slower at load averages above the core count.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/bench/blas_env.sh"
# The benchmark imports the tests' shared package (tests/or1test).
export PYTHONPATH="$root/tests${PYTHONPATH:+:$PYTHONPATH}"
threads=${OR1_BENCH_THREADS:-2}
OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive} OPENBLAS_NUM_THREADS=$threads \
    /usr/bin/python3 "$root/bench/bench_rollout.py" --or1 "$root/build/or1" \
    --sgemm "$root/build/bench_sgemm" --threads "$threads" "$@"
