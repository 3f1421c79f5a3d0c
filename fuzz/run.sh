#!/usr/bin/env bash
# `make fuzz`: builds the libFuzzer targets with clang (build-fuzz/) and runs each for
# FUZZ_SECONDS (default 60) from a seed corpus made of the repository's own files; a crash,
# leak or sanitizer report stops with the reproducer kept in build-fuzz/crashes/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
seconds=${FUZZ_SECONDS:-60}
out=build-fuzz
CC=clang cmake -S . -B "$out" -DCMAKE_BUILD_TYPE=Debug -DOR1_FUZZ=ON -DOR1_NATIVE=ON >/dev/null
cmake --build "$out" -j"$(nproc)" --target fuzz_train_config fuzz_safetensors fuzz_data_row fuzz_math_verify
corpus=$out/corpus
rm -rf "$corpus"
mkdir -p "$corpus"/{train_config,safetensors,data_row,math_verify} "$out/crashes"
cp configs/*.yaml demo/demo.yaml "$corpus/train_config/"
cp models/arith-base/model.safetensors "$corpus/safetensors/"
i=0
while IFS= read -r line && [ $i -lt 40 ]; do printf '%s' "$line" > "$corpus/data_row/row$i.json"; i=$((i + 1)); done \
  < <(cat data/aime24.jsonl data/deepscaler_first500.jsonl)
i=0
while IFS= read -r line && [ $i -lt 200 ]; do printf '%s' "$line" > "$corpus/math_verify/case$i"; i=$((i + 1)); done \
  < tests/math/cases.jsonl
status=0
for name in train_config safetensors data_row math_verify; do
  echo "== fuzz_$name ($seconds s)"
  if ! "$out/fuzz_$name" -max_total_time="$seconds" -max_len=65536 -artifact_prefix="$out/crashes/$name-" \
       -print_final_stats=1 "$corpus/$name" 2>"$out/$name.log"; then
    echo "fuzz_$name: FAILED, see $out/$name.log and $out/crashes/"; status=1
  fi
  grep -E "^#[0-9]+.*(DONE|pulse)|stat::number_of_executed_units|stat::peak_rss" "$out/$name.log" | tail -3 || true
done
exit $status
