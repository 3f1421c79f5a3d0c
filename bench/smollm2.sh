#!/usr/bin/env bash
# or1 beside llama.cpp and PyTorch on a real model, SmolLM2-135M-Instruct (bench/bench_smollm2.py):
# decode tokens/s of or1 generate (fp32, bf16) against llama.cpp (llama-cpp-python in the tests'
# virtual environment) on F32 and BF16 files of the same weights, 1 and 64 sequences; a training
# step of or1 grad against PyTorch fp32. Needs the model file (scripts/smollm2.sh build/models),
# llama-cpp-python in build/venv (scripts/llama_cpp.sh build/venv) and the system Python's
# PyTorch; without one of them the benchmark is skipped (exit 77). OR1_BENCH_THREADS (default 2)
# sets every side's threads; OpenMP threads sleep rather than spin while waiting
# (OMP_WAIT_POLICY=passive unless set), as in bench/rollout.sh. Flags go to bench_smollm2.py.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/bench/scratch.sh"
model="$root/build/models/SmolLM2-135M-Instruct.Q4_1.gguf"
venv_python="$root/build/venv/bin/python"
if [[ ! -f "$model" ]]; then
  echo "smollm2.sh: $model missing (bash scripts/smollm2.sh build/models); skipped" >&2
  exit 77
fi
if ! "$venv_python" -c "import llama_cpp" 2>/dev/null; then
  echo "smollm2.sh: $venv_python cannot import llama_cpp (bash scripts/llama_cpp.sh build/venv); skipped" >&2
  exit 77
fi
if ! /usr/bin/python3 -c "import numpy, torch" 2>/dev/null; then
  echo "smollm2.sh: /usr/bin/python3 cannot import numpy and torch (python3-torch); skipped" >&2
  exit 77
fi
source "$root/bench/blas_env.sh"
# The benchmark imports the tests' shared package (tests/or1test).
export PYTHONPATH="$root/tests${PYTHONPATH:+:$PYTHONPATH}"
threads=${OR1_BENCH_THREADS:-2}
TMPDIR="$work" OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive} OPENBLAS_NUM_THREADS=$threads \
    /usr/bin/python3 "$root/bench/bench_smollm2.py" --or1 "$root/build/or1" --model "$model" \
    --llama-python "$venv_python" --sgemm "$root/build/bench_sgemm" --threads "$threads" "$@"
