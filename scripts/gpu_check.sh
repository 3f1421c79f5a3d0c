#!/usr/bin/env bash
# One run on a machine with an NVIDIA GPU: builds (Release, with the CUDA backend), runs the
# CUDA tests verbosely (every kernel and the device model against the CPU), then
# bench/cuda.sh: or1 against PyTorch, and the cost model's rows (decode steps at 64 and 256
# rows of 2K and 8K context, a training step on a packed 8K sequence) measured beside their
# predictions (bench/cost_model.py). Prints everything; exits non-zero if the build or a test
# fails. Sized to fit one 10-minute command (build ~2 min on 16 cores, tests ~2 min, benchmark
# <= 400 s).
# Usage: bash scripts/gpu_check.sh [build folder, default build]
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
cd "$root"
echo "== machine"
date -u
nvidia-smi || echo "nvidia-smi failed"
nvcc --version 2>/dev/null | tail -1 || /usr/local/cuda/bin/nvcc --version | tail -1
/usr/bin/python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.is_available())' ||
  echo "no PyTorch: the benchmark prints or1's figures only"

echo "== build ($build)"
export PATH=$PATH:/usr/local/cuda/bin
if ! { cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DOR1_BENCH=ON >/dev/null && cmake --build "$build" -j"$(nproc)" 2>&1 | tail -3; }; then
  echo "gpu_check: build failed"
  exit 1
fi
[[ -x $build/cuda_test_kernels ]] ||
  { echo "gpu_check: the GPU tests were not built (nvcc not found, or nvidia-smi listed no GPU when configuring?)"; exit 1; }

status=0
echo "== CUDA tests on the GPU (kernels, backend operations, device model, --device cuda CLI, trainer), every check printed"
(cd "$build" && ctest -R '^cuda_' -E 'emu|cost_model' -V --timeout 240) || { echo "gpu_check: a CUDA test failed"; status=1; }

echo "== CPU model tests (the reference the CUDA tests compare with)"
(cd "$build" && ctest -R '^model_(logprobs|grad)_qwen2$' -j2 --output-on-failure) || status=1

echo "== benchmark"
OR1_BUILD=$build timeout 400 bash bench/cuda.sh || { echo "gpu_check: bench/cuda.sh failed"; status=1; }
echo "== gpu_check done: status $status"
exit $status
