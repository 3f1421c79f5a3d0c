#!/usr/bin/env bash
# or1 beside the peer a TRL user would pick (bench/trl_bench.py): TRL's GRPOTrainer on the CPU
# against `or1 train`, and transformers' generate against `or1 generate`, on the same Hugging Face
# Qwen2 checkpoints (the demo's models/arith-base, then a wider random one with its tokenizer),
# prompts, group size, lengths, threads (OR1_BENCH_THREADS, default 2) and steps; extra arguments
# go to trl_bench.py. It needs PyTorch >= 2 from PyPI (the pinned environment of
# scripts/python-peers-requirements.txt under build/peers-venv, made once); where that cannot be
# installed it skips (exit 77) saying so. Run after `make build`; see docs/training.md.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
source "$here/bench/blas_env.sh"
venv="$here/build/peers-venv"
if ! bash "$here/scripts/venv.sh" "$venv" "$here/scripts/python-peers-requirements.txt"; then
  echo "trl: skipped: the peers' environment (PyTorch 2.9.1, TRL 1.16, transformers 5.10 from PyPI)" \
       "could not be installed; TRL needs PyTorch >= 2.6, Debian's is 1.13" >&2
  exit 77
fi
for shape in "--steps 8" "--shape wide --prompts 4 --length 64 --steps 4"; do
  # shellcheck disable=SC2086  # the shape's flags split at spaces
  "$venv/bin/python" "$here/bench/trl_bench.py" "$here/build/or1" "$here/models/arith-base" $shape \
      --threads "${OR1_BENCH_THREADS:-2}" "$@"
done
