#!/usr/bin/env bash
# Remakes the demo's base model in models/arith-base with the project's own tools:
#   1. the demo tokenizer (demo/make_tokenizer.py),
#   2. a random Qwen2-shaped checkpoint (or1 init) for the config below,
#   3. SFT phase 1: or1 sft on correct step-by-step traces with partial products
#      (or1 gen-arith --traces --split-products), the rate decaying on a cosine,
#   4. SFT phase 2: a short or1 sft on traces of which a share GUESS skip the working and
#      box a wrong answer, so the base model sometimes answers without computing,
#   5. BF16 weights with the tokenizer files into models/arith-base, then avg@8 at
#      temperature 1 and greedy accuracy on held-out test rows, of the shipped model and of
#      phase 1 alone (demo/eval_arith.py, through or1 eval).
# Work files go to runs/base/ (ignored); only models/arith-base is written in the tree.
# Settings can be overridden from the environment, e.g. STEPS1=500 bash demo/make_base.sh;
# HIDDEN, INTER, LAYERS and HEADS size the model, SPLIT=0 writes plain traces.
set -euo pipefail
cd "$(dirname "$0")/.."

OR1=${OR1:-build/or1}
OUT=${OUT:-models/arith-base}
WORK=${WORK:-runs/base}
SEED=${SEED:-1}
EVAL_ROWS=${EVAL_ROWS:-200}
TRAIN_ROWS=${TRAIN_ROWS:-200000}
STEPS1=${STEPS1:-4000}
LR1=${LR1:-0.002}
MIN_LR1=${MIN_LR1:-0.0002}
SPLIT=${SPLIT:-1}
HIDDEN=${HIDDEN:-128}
INTER=${INTER:-384}
LAYERS=${LAYERS:-4}
HEADS=${HEADS:-4}
GUESS=${GUESS:-0.6}
GUESS_ROWS=${GUESS_ROWS:-30000}
STEPS2=${STEPS2:-300}
LR2=${LR2:-0.0002}
BATCH=${BATCH:-64}
THREADS=${THREADS:-1}
PY=${PY:-/usr/bin/python3}

[ -x "$OR1" ] || { echo "make_base: $OR1 not built (run make build)" >&2; exit 1; }
rm -rf "$WORK"
mkdir -p "$WORK"
start=$(date +%s)

"$PY" demo/make_tokenizer.py "$WORK/tok"
vocab=$("$PY" -c 'import json,sys; t=json.load(open(sys.argv[1])); print(len(t["model"]["vocab"])+len(t["added_tokens"]))' "$WORK/tok/tokenizer.json")
eos=$("$PY" -c 'import json,sys; t=json.load(open(sys.argv[1])); print([a["id"] for a in t["added_tokens"] if a["content"]=="<|endoftext|>"][0])' "$WORK/tok/tokenizer.json")

# The model: 4 layers of width 128 (4 query heads, 2 key/value heads of 32), SwiGLU 384, tied
# embeddings over the demo vocabulary; about 0.8M parameters.
cat > "$WORK/config.json" <<EOF
{
  "architectures": ["Qwen2ForCausalLM"],
  "model_type": "qwen2",
  "hidden_size": $HIDDEN,
  "intermediate_size": $INTER,
  "num_hidden_layers": $LAYERS,
  "num_attention_heads": $HEADS,
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

split=()
[ "$SPLIT" = 1 ] && split=(--split-products)
"$OR1" gen-arith --n "$TRAIN_ROWS" --seed "$SEED" --split train --traces "${split[@]}" --tokenizer "$WORK/tok" \
    --out "$WORK/traces.jsonl"
"$OR1" gen-arith --n "$GUESS_ROWS" --seed $((SEED + 500)) --split train --traces "${split[@]}" --tokenizer "$WORK/tok" \
    --guess "$GUESS" --out "$WORK/traces_guess.jsonl"
"$OR1" gen-arith --n "$EVAL_ROWS" --seed $((SEED + 1000)) --split test --out "$WORK/test.jsonl"

sft() { "$OR1" sft --threads "$THREADS" --batch "$BATCH" --seed "$SEED" --log-every 50 "$@"; }
echo "make_base: sft phase 1, $STEPS1 steps of $BATCH correct traces" >&2
sft --model "$WORK/init" --data "$WORK/traces.jsonl" --out "$WORK/sft1" --steps "$STEPS1" --lr "$LR1" \
    --min-lr "$MIN_LR1" --warmup 30 > "$WORK/sft1_log.jsonl"
echo "make_base: sft phase 2, $STEPS2 steps of $BATCH traces, $GUESS of them guessing" >&2
sft --model "$WORK/sft1" --data "$WORK/traces_guess.jsonl" --out "$WORK/sft2" --steps "$STEPS2" --lr "$LR2" \
    --warmup 10 > "$WORK/sft2_log.jsonl"
# Zero steps only converts the weights to BF16 (and carries the config and tokenizer files).
sft --model "$WORK/sft2" --data "$WORK/traces_guess.jsonl" --out "$WORK/bf16" --steps 0 --save-dtype bf16 \
    > /dev/null

mkdir -p "$OUT"
for f in config.json generation_config.json model.safetensors tokenizer.json tokenizer_config.json; do
    cp "$WORK/bf16/$f" "$OUT/$f.tmp" && mv "$OUT/$f.tmp" "$OUT/$f"
done

echo "make_base: evaluating $OUT on $EVAL_ROWS held-out rows" >&2
"$PY" demo/eval_arith.py "$OR1" "$OUT" "$WORK/test.jsonl" --n 8 --temperature 1 --threads "$THREADS" \
    --samples "$WORK/samples_t1.jsonl" | tee "$WORK/eval_t1.json"
"$PY" demo/eval_arith.py "$OR1" "$OUT" "$WORK/test.jsonl" --n 1 --temperature 0 --threads "$THREADS" \
    | tee "$WORK/eval_greedy.json"
"$PY" demo/eval_arith.py "$OR1" "$WORK/sft2" "$WORK/test.jsonl" --n 1 --temperature 0 --threads "$THREADS" \
    | tee "$WORK/eval_greedy_f32.json"
"$PY" demo/eval_arith.py "$OR1" "$WORK/sft1" "$WORK/test.jsonl" --n 8 --temperature 1 --threads "$THREADS" \
    | tee "$WORK/eval_t1_phase1.json"
"$PY" demo/eval_arith.py "$OR1" "$WORK/sft1" "$WORK/test.jsonl" --n 1 --temperature 0 --threads "$THREADS" \
    | tee "$WORK/eval_greedy_phase1.json"
echo "make_base: done in $(( $(date +%s) - start )) s; model in $OUT, logs in $WORK" >&2
