#!/usr/bin/env bash
# One run on a machine with an NVIDIA GPU: builds (Release, with the CUDA backend), runs the
# CUDA tests verbosely (every kernel and the device model against the CPU), then
# bench/cuda.sh. Prints everything; exits non-zero if the build or a test fails.
# Usage: bash scripts/gpu_check.sh [build folder, default build-gpu]
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-gpu}
cd "$root"
echo "== machine"
date -u
nvidia-smi || echo "nvidia-smi failed"
nvcc --version 2>/dev/null | tail -1 || /usr/local/cuda/bin/nvcc --version | tail -1
/usr/bin/python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.is_available())' ||
  echo "no PyTorch: the benchmark prints or1's figures only"

echo "== build ($build)"
export PATH=$PATH:/usr/local/cuda/bin
if ! { cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build "$build" -j"$(nproc)" 2>&1 | tail -3; }; then
  echo "gpu_check: build failed"
  exit 1
fi
[[ -x $build/cuda_test_kernels ]] || { echo "gpu_check: the CUDA backend was not built (nvcc not found?)"; exit 1; }

status=0
echo "== CUDA tests"
for t in kernels model; do
  echo "-- cuda_test_$t"
  timeout 600 "$build/cuda_test_$t"
  rc=$?
  [[ $rc -eq 0 ]] || { echo "gpu_check: cuda_test_$t exited $rc"; status=1; }
done

echo "== CPU model tests (the reference the CUDA tests compare with)"
(cd "$build" && ctest -R '^model_(logprobs|grad)_qwen2$' --output-on-failure) || status=1

echo "== benchmark"
OR1_BUILD=$build timeout 900 bash bench/cuda.sh || { echo "gpu_check: bench/cuda.sh failed"; status=1; }
echo "== gpu_check done: status $status"
exit $status
