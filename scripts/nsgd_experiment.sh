#!/usr/bin/env bash
# The N_SGD experiment on the demo task (docs/algorithms.md, "Entropy control per mini-batch"):
# the shipped arithmetic base model trained with configs/quickstart.yaml (32 prompts per step,
# 8 samples, T = 160, the demo's controller) for STEPS steps with N_SGD = 1, 2, 4 (mini_batch 32,
# 16, 8), the adaptive controller per step and per mini-batch (N_SGD 1 runs once: there the two
# are the same), each with train.clip_high 0.2 and 0.28 (clip-higher). Validation (avg@8 at T = 1
# on 100 held-out problems) every EVAL_EVERY steps. Then scripts/plot_nsgd.py writes the entropy
# and held-out accuracy curves (PNG) and a CSV of every run's rows.
#
# usage: scripts/nsgd_experiment.sh [STEPS] [OUT]
#   STEPS       steps per run (default 200)
#   OUT         runs folder (default runs/nsgd); the plot and CSV go to docs/nsgd_experiment.{png,csv}
#               unless PLOT_OUT names another prefix
# Environment: NSGD="1 2 4", UPDATES="step minibatch", CLIP_HIGHS="0.2 0.28" restrict the grid;
# EVAL_EVERY (default 20); OR1 (default build/or1). Needs `make build` and Debian's
# python3-matplotlib. The full grid is 10 runs of STEPS steps each (hours on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
STEPS=${1:-200}
OUT=${2:-runs/nsgd}
OR1=${OR1:-build/or1}
NSGD=${NSGD:-"1 2 4"}
UPDATES=${UPDATES:-"step minibatch"}
CLIP_HIGHS=${CLIP_HIGHS:-"0.2 0.28"}
EVAL_EVERY=${EVAL_EVERY:-20}
PLOT_OUT=${PLOT_OUT:-docs/nsgd_experiment}
PROMPTS=32

[[ "$STEPS" =~ ^[1-9][0-9]*$ ]] || { echo "nsgd_experiment: STEPS must be a positive integer, got '$STEPS'" >&2; exit 2; }
[ -x "$OR1" ] || { echo "nsgd_experiment: $OR1 not found (run make build first)" >&2; exit 2; }

# The demo's rows (the same generator and seeds as demo/demo.py), written once.
mkdir -p "$OUT"
[ -s "$OUT/train.jsonl" ] || "$OR1" gen-arith --n 20000 --seed 11 --split train --out "$OUT/train.jsonl"
[ -s "$OUT/test.jsonl" ] || "$OR1" gen-arith --n 100 --seed 12 --split test --out "$OUT/test.jsonl"

runs=()
for n in $NSGD; do
  [ $((PROMPTS % n)) -eq 0 ] || { echo "nsgd_experiment: N_SGD $n does not divide $PROMPTS prompts" >&2; exit 2; }
  for update in $UPDATES; do
    # with one mini-batch per step the two cadences are the same run
    if [ "$n" -eq 1 ] && [ "$update" = minibatch ] && [[ " $UPDATES " == *" step "* ]]; then continue; fi
    for ch in $CLIP_HIGHS; do
      name="nsgd${n}_${update}_ch${ch}"
      echo "nsgd_experiment: $name ($STEPS steps)" >&2
      "$OR1" train --config configs/quickstart.yaml --overwrite \
        --set "train.steps=$STEPS" --set "train.mini_batch=$((PROMPTS / n))" \
        --set "entropy.update=$update" --set "train.clip_high=$ch" \
        --set "data.train=[{path: $OUT/train.jsonl}]" --set "eval.files=[$OUT/test.jsonl]" \
        --set "eval.every=$EVAL_EVERY" --set "checkpoint.every=0" --set "checkpoint.keep_last=1" \
        --set "output.dir=$OUT/$name"
      runs+=("$OUT/$name")
    done
  done
done
/usr/bin/python3 scripts/plot_nsgd.py --out "$PLOT_OUT" "${runs[@]}"
