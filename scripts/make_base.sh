#!/usr/bin/env bash
# Remakes the demo's base model in models/arith-base with the project's own tools:
#   1. the demo tokenizer (scripts/make_tokenizer.py),
#   2. a random Qwen2-shaped checkpoint (or1 init) for the config below,
#   3. SFT traces (or1 gen-arith --traces; NOISE, GUESS and SPLIT choose the trace options),
#   4. or1 sft on them, saved as BF16 with the tokenizer files,
#   5. avg@8 at temperature 1 on held-out test rows (scripts/eval_arith.py), and greedy accuracy.
# Work files go to runs/base/ (ignored); only models/arith-base is written in the tree.
# Settings can be overridden from the environment, e.g. STEPS=200 bash scripts/make_base.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

OR1=${OR1:-build/or1}
OUT=${OUT:-models/arith-base}
WORK=${WORK:-runs/base}
SEED=${SEED:-1}
TRAIN_ROWS=${TRAIN_ROWS:-100000}
EVAL_ROWS=${EVAL_ROWS:-200}
NOISE=${NOISE:-0}
GUESS=${GUESS:-0}
SPLIT=${SPLIT:-0}
STEPS=${STEPS:-1600}
BATCH=${BATCH:-64}
LR=${LR:-0.002}
WARMUP=${WARMUP:-30}
THREADS=${THREADS:-1}
PY=${PY:-/usr/bin/python3}

[ -x "$OR1" ] || { echo "make_base: $OR1 not built (run make build)" >&2; exit 1; }
rm -rf "$WORK"
mkdir -p "$WORK"
start=$(date +%s)

"$PY" scripts/make_tokenizer.py "$WORK/tok"
vocab=$("$PY" -c 'import json,sys; t=json.load(open(sys.argv[1])); print(len(t["model"]["vocab"])+len(t["added_tokens"]))' "$WORK/tok/tokenizer.json")
eos=$("$PY" -c 'import json,sys; t=json.load(open(sys.argv[1])); print([a["id"] for a in t["added_tokens"] if a["content"]=="<|endoftext|>"][0])' "$WORK/tok/tokenizer.json")

# The model: 4 layers of width 128 (4 query heads, 2 key/value heads of 32), SwiGLU 384, tied
# embeddings over the demo vocabulary; about 0.8M parameters.
cat > "$WORK/config.json" <<EOF
{
  "architectures": ["Qwen2ForCausalLM"],
  "model_type": "qwen2",
  "hidden_size": 128,
  "intermediate_size": 384,
  "num_hidden_layers": 4,
  "num_attention_heads": 4,
  "num_key_value_heads": 2,
  "vocab_size": $vocab,
  "max_position_embeddings": 512,
  "rms_norm_eps": 1e-06,
  "rope_theta": 10000.0,
  "tie_word_embeddings": true,
  "hidden_act": "silu",
  "bos_token_id": $eos,
  "eos_token_id": $eos,
  "torch_dtype": "bfloat16"
}
EOF
cat > "$WORK/generation_config.json" <<EOF
{"bos_token_id": $eos, "eos_token_id": $eos, "do_sample": true, "temperature": 1.0}
EOF

"$OR1" init --config "$WORK/config.json" --out "$WORK/init" --seed "$SEED"
cp "$WORK/generation_config.json" "$WORK/tok/tokenizer.json" "$WORK/tok/tokenizer_config.json" "$WORK/init/"

split_flag=()
[ "$SPLIT" = 1 ] && split_flag=(--split-products)
"$OR1" gen-arith --n "$TRAIN_ROWS" --seed "$SEED" --split train --traces --tokenizer "$WORK/tok" \
    --noise "$NOISE" --guess "$GUESS" "${split_flag[@]}" --out "$WORK/traces.jsonl"
"$OR1" gen-arith --n "$EVAL_ROWS" --seed $((SEED + 1000)) --split test --out "$WORK/test.jsonl"

echo "make_base: sft, $STEPS steps of $BATCH traces (noise $NOISE, guess $GUESS, split products $SPLIT)" >&2
"$OR1" sft --threads "$THREADS" --model "$WORK/init" --data "$WORK/traces.jsonl" --out "$WORK/sft" \
    --steps "$STEPS" --batch "$BATCH" --lr "$LR" --warmup "$WARMUP" --seed "$SEED" --log-every 50 \
    --save-dtype bf16 > "$WORK/sft_log.jsonl"

mkdir -p "$OUT"
for f in config.json generation_config.json model.safetensors tokenizer.json tokenizer_config.json; do
    cp "$WORK/sft/$f" "$OUT/$f.tmp" && mv "$OUT/$f.tmp" "$OUT/$f"
done

echo "make_base: evaluating $OUT on $EVAL_ROWS held-out rows" >&2
"$PY" scripts/eval_arith.py "$OR1" "$OUT" "$WORK/test.jsonl" --n 8 --temperature 1 --threads "$THREADS" \
    --samples "$WORK/samples_t1.jsonl" | tee "$WORK/eval_t1.json"
"$PY" scripts/eval_arith.py "$OR1" "$OUT" "$WORK/test.jsonl" --n 1 --temperature 0 --threads "$THREADS" \
    | tee "$WORK/eval_greedy.json"
echo "make_base: done in $(( $(date +%s) - start )) s; model in $OUT, logs in $WORK" >&2
