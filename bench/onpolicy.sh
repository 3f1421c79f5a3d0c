#!/usr/bin/env bash
# The real-size on-policy run: one `or1 train` step on a random checkpoint of the Qwen2.5-0.5B
# shape (24 layers, hidden 896, 14/2 heads, vocabulary 151,936, tied) with the Qwen2.5 tokenizer,
# 2 DeepScaleR prompts x 2 samples of 512 new tokens (EOS rarely comes from random weights),
# gradient checkpointing on, the old log-probs recomputed over every token and no group rejected,
# in fp32 and in bf16. Prints each run's step time, peak memory and the rollout/trainer mismatch
# of its metrics row (exactly 0 when the rollout is on-policy to the bit).
# usage: bash bench/onpolicy.sh [OR1] [PRECISIONS]   (default: build/or1, "fp32 bf16")
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
or1=${1:-$root/build/or1}
precisions=${2:-fp32 bf16}
threads=${OR1_BENCH_THREADS:-$(nproc)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
PYTHONPATH="$root/tests" /usr/bin/python3 "$root/tests/tokenizer/ref_files.py" "$root/data" "$tmp/tok" >/dev/null
cat > "$tmp/config.json" <<'EOF'
{"model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"], "hidden_size": 896, "intermediate_size": 4864,
 "num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2, "vocab_size": 151936,
 "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "tie_word_embeddings": true, "max_position_embeddings": 32768,
 "hidden_act": "silu", "torch_dtype": "float32", "eos_token_id": 151645}
EOF
"$or1" init --config "$tmp/config.json" --out "$tmp/model" --seed 1 >/dev/null
cp "$tmp/tok/qwen2_5/tokenizer.json" "$tmp/tok/qwen2_5/tokenizer_config.json" "$tmp/model/"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); or1 $("$or1" --version | head -1)"
for precision in $precisions; do
  cat > "$tmp/$precision.yaml" <<EOF
model: {path: $tmp/model}
data:
  train: [{path: $root/data/deepscaler_first500.jsonl}]
  max_prompt_length: 256
rollout: {n: 2, temperature: 1.0, max_new_tokens: 512}
train: {prompts_per_step: 2, mini_batch: 2, steps: 1, lr: 1.0e-6, gradient_checkpointing: true,
        recompute_logprobs: true}
rejection: {enabled: false}
precision: $precision
output: {dir: $tmp/run_$precision}
seed: 1
EOF
  /usr/bin/time -f "%e s wall, %M KiB peak" -o "$tmp/time" "$or1" train --config "$tmp/$precision.yaml" \
      --threads "$threads" > "$tmp/out" 2> "$tmp/err" || { tail -20 "$tmp/err"; exit 1; }
  /usr/bin/python3 - "$precision" "$tmp/run_$precision/metrics.jsonl" "$(cat "$tmp/time")" <<'PY'
import json, sys
precision, path, time = sys.argv[1], sys.argv[2], sys.argv[3]
row = [json.loads(l) for l in open(path) if l.strip()][-1]
print(f"{precision}: {time}; response tokens {row.get('response_length_mean', 0) * 4:.0f}, "
      f"mismatch over {row.get('mismatch_over')}: mean |d log p| {row.get('mismatch_abs_mean')}, "
      f"max {row.get('mismatch_abs_max')}, k3 {row.get('mismatch_k3')} ({row.get('mismatch_tokens')} tokens); "
      f"rollout {row.get('seconds_rollout', 0):.1f} s, update {row.get('seconds_update', 0):.1f} s")
PY
done
