#!/usr/bin/env bash
# Decode speed beside llama.cpp: or1 generate against llama-batched-bench on the same random F32
# weights (bench/bench_llamacpp.py). llama.cpp is not part of the project: LLAMA_CPP_DIR names a
# CPU build of it (the folder holding bin/llama-batched-bench; its source tree, whose gguf-py writes
# the GGUF files, is taken to be the folder above, or LLAMA_CPP_SRC). Without it the benchmark is
# skipped (exit 77). OR1_BENCH_THREADS (default 2) sets both sides' threads; OpenMP threads of both
# sleep rather than spin while waiting (OMP_WAIT_POLICY=passive unless set), as in bench/rollout.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [[ -z "${LLAMA_CPP_DIR:-}" ]]; then
  echo "llamacpp.sh: LLAMA_CPP_DIR is not set (a llama.cpp build folder with bin/llama-batched-bench); skipped" >&2
  exit 77
fi
if [[ ! -x "$LLAMA_CPP_DIR/bin/llama-batched-bench" ]]; then
  echo "llamacpp.sh: LLAMA_CPP_DIR=$LLAMA_CPP_DIR has no bin/llama-batched-bench; skipped" >&2
  exit 77
fi
source "$root/bench/blas_env.sh"
# The benchmark imports the tests' shared package (tests/or1test).
export PYTHONPATH="$root/tests${PYTHONPATH:+:$PYTHONPATH}"
threads=${OR1_BENCH_THREADS:-2}
OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive} OPENBLAS_NUM_THREADS=$threads \
    /usr/bin/python3 "$root/bench/bench_llamacpp.py" --or1 "$root/build/or1" \
    --llama-dir "$LLAMA_CPP_DIR" --threads "$threads" "$@"
