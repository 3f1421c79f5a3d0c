#!/usr/bin/env bash
# CUDA backend: training and rollout tokens/s of random-weight R1-Distill-Qwen-1.5B-shaped
# models (bench/cuda_bench.cu) against PyTorch on the same GPU (bench/cuda_ref.py), with
# model FLOPs utilisation against OR1_PEAK_TFLOPS (default 989, H100/H200 dense bf16).
# Then the cost model's rows (bench/cost_model.py), measured beside their predictions.
# Skips (exit 77) without a GPU or without the CUDA build. OR1_BUILD picks the build folder (default build);
# OR1_BENCH_7B=1 adds the 7B shape (rollout only: fp32 masters and AdamW do not fit one GPU).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${OR1_BUILD:-$root/build}
bin=$build/cuda_bench
peak=${OR1_PEAK_TFLOPS:-989}
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "bench/cuda.sh: skipped: no NVIDIA GPU visible (nvidia-smi finds none); nothing measured" >&2
  exit 77
fi
if [[ ! -x $bin ]]; then
  echo "bench/cuda.sh: skipped: $bin is missing (the CUDA backend builds only where nvcc is found)" >&2
  exit 77
fi
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader

# Runs or1 and PyTorch with the same arguments and prints both JSON lines plus the ratios.
compare() {
  local out_or1 out_ref
  out_or1=$("$bin" "$@" --peak-tflops "$peak") || { echo "cuda_bench $* failed" >&2; return 1; }
  echo "$out_or1"
  if out_ref=$(/usr/bin/python3 "$root/bench/cuda_ref.py" "$@" --peak-tflops "$peak"); then
    echo "$out_ref"
  else
    echo "bench/cuda.sh: PyTorch reference failed for: $*" >&2
    out_ref=""
  fi
  OR1="$out_or1" REF="$out_ref" /usr/bin/python3 - <<'PY'
import json, os
ours = {j["mode"]: j for j in map(json.loads, filter(None, os.environ["OR1"].splitlines()))}
ref = {j["mode"]: j for j in map(json.loads, filter(None, os.environ["REF"].splitlines()))}
for mode, o in ours.items():
    line = f"{mode:8s} {o['model']}: or1 {o['tokens_per_s']:.0f} tok/s"
    if "mfu" in o:
        line += f" (MFU {100 * o['mfu']:.1f}%)"
    if mode in ref:
        r = ref[mode]
        line += f", PyTorch {r['tokens_per_s']:.0f} tok/s"
        if "mfu" in r:
            line += f" (MFU {100 * r['mfu']:.1f}%)"
        line += f", ratio or1/PyTorch {o['tokens_per_s'] / r['tokens_per_s']:.2f}"
    print(line)
PY
}

compare 1.5b --seqs 8 --len 1024 --steps 3 --slots 64 --prompt 256 --new 128
if [[ ${OR1_BENCH_7B:-0} == 1 ]]; then
  compare 7b --skip-train --slots 32 --prompt 256 --new 64
fi

# The cost model's rows (bench/cost_model.py, an estimate from the emulator's counters),
# measured: one decode step at 64 and 256 rows of 2K and 8K context, a training step on one
# packed 8K sequence; 1.5B (and 7B decode with OR1_BENCH_7B=1), each beside its prediction.
echo "== the cost model's rows: predicted (estimate) and measured"
pred=$(mktemp)
trap 'rm -f "$pred"' EXIT
/usr/bin/python3 "$root/bench/cost_model.py" --build "$build" --json "$pred" >/dev/null ||
  echo "bench/cuda.sh: the cost model failed; measurements only" >&2
models=(1.5b)
[[ ${OR1_BENCH_7B:-0} == 1 ]] && models+=(7b)
# 256 rows of 8K context need 2M prompt tokens prefilled twice: only with OR1_BENCH_LONG=1
for m in "${models[@]}"; do
  for shape in 64:2048 64:8192 256:2048 256:8192; do
    rows=${shape%:*} ctx=${shape#*:}
    [[ $shape == 256:8192 && ${OR1_BENCH_LONG:-0} != 1 ]] && continue
    "$bin" "$m" --skip-train --decode-step 16 --slots "$rows" --prompt "$ctx" || echo "cuda_bench $m decode $rows x $ctx failed" >&2
  done
done | tee -a "$pred.measured"
"$bin" 1.5b --skip-rollout --seqs 1 --len 8192 --steps 2 --peak-tflops "$peak" | tee -a "$pred.measured" ||
  echo "cuda_bench 1.5b train 8K failed" >&2
PRED="$pred" /usr/bin/python3 - <<'PY'
import json, os
names = {"1.5b": "R1-Distill-Qwen-1.5B", "7b": "R1-Distill-Qwen-7B"}
path = os.environ["PRED"]
pred = {}
if os.path.exists(path):
    for p in map(json.loads, open(path)):
        pred[(p["model"], p["kind"], p["rows"] if p["kind"] == "decode" else 8192, p["context"])] = p
for m in map(json.loads, filter(None, open(path + ".measured").read().splitlines())):
    if m["mode"] == "decode":
        key = (names[m["model"]], "decode", m["slots"], m["context"])
        what = f"decode {m['slots']} x {m['context']}"
    else:
        key = (names[m["model"]], "train", 8192, None)
        what = f"train 1 x {m['len']}"
    p = pred.get(key)
    line = f"{m['model']:4s} {what:22s} measured {m['tokens_per_s']:10.0f} tok/s"
    if p:
        line += f", predicted {p['tokens_per_s']:10.0f} tok/s, measured/predicted {m['tokens_per_s'] / p['tokens_per_s']:.2f}"
    print(line)
PY
rm -f "$pred.measured"
