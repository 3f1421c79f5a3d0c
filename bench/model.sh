#!/usr/bin/env bash
# Model core: or1 grad forward+backward tokens/s against PyTorch fp32 on the same batches.
# OR1_BENCH_THREADS (default 2) sets or1's --threads and torch.set_num_threads alike.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/bench/blas_env.sh"
# The benchmark imports the tests' shared package (tests/or1test).
export PYTHONPATH="$root/tests${PYTHONPATH:+:$PYTHONPATH}"
/usr/bin/python3 "$root/bench/bench_model.py" --or1 "$root/build/or1" \
    --sgemm "$root/build/bench_sgemm" --threads "${OR1_BENCH_THREADS:-2}" "$@"
