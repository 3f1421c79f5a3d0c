#!/usr/bin/env bash
# `make fuzz` (or `bash fuzz/run.sh [TARGET...]`, e.g. fuzz_tokenizer): builds the libFuzzer
# targets with clang in build-fuzz/ and runs each, one at a time and niced, for FUZZ_SECONDS
# (default 60) from a scratch copy of its committed seed corpus fuzz/corpus/<name>/ (so a run
# does not grow the repository). A crash, hang (over 10 s), leak or sanitizer report fails the
# target; its reproducer is kept in build-fuzz/crashes/ and copied into fuzz/corpus/<name>/,
# where the replay test (tests/fuzz) runs it from then on.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
seconds=${FUZZ_SECONDS:-60}
out=build-fuzz
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for src in fuzz/fuzz_*.c; do targets+=("$(basename "$src" .c)"); done
fi
CC=clang cmake -S . -B "$out" -DCMAKE_BUILD_TYPE=Debug -DOR1_FUZZ=ON -DOR1_NATIVE=ON >/dev/null
nice -n 10 cmake --build "$out" -j"${FUZZ_JOBS:-2}" --target "${targets[@]}" >"$out/build.log" ||
  { tail -40 "$out/build.log"; exit 1; }
mkdir -p "$out/crashes"
status=0
for target in "${targets[@]}"; do
  name=${target#fuzz_}
  corpus=$out/corpus/$name
  rm -rf "$corpus"
  mkdir -p "$corpus"
  cp fuzz/corpus/"$name"/* "$corpus/"
  before=$(ls "$out/crashes" | sort)
  echo "== $target ($seconds s)"
  if ! OMP_NUM_THREADS=1 nice -n 10 "$out/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
       -max_len=65536 -close_fd_mask=1 -artifact_prefix="$out/crashes/$name-" -print_final_stats=1 \
       "$corpus" 2>"$out/$name.log"; then
    echo "$target: FAILED, see $out/$name.log"; status=1
  fi
  for f in $(comm -13 <(echo "$before") <(ls "$out/crashes" | sort)); do
    cp "$out/crashes/$f" "fuzz/corpus/$name/" && echo "$target: reproducer fuzz/corpus/$name/$f (commit it)"
  done
  grep -E "^#[0-9]+.*(DONE|pulse|NEW|REDUCE)" "$out/$name.log" | tail -1 || true
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$out/$name.log" || true
done
exit $status
