#!/usr/bin/env bash
# Math verifier throughput against a SymPy reference on the same pairs (MATH-500 golds).
# Run from the repository root after `make build` (make bench does both).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
data="$here/data/math500.jsonl"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 "$here/bench/math_ref.py" make-pairs "$data" > "$tmp/pairs.jsonl"
"$here/build/math_bench" "$tmp/pairs.jsonl" "$tmp/verdicts.txt" | tee "$tmp/ours.txt"
python3 "$here/bench/math_ref.py" verify "$tmp/pairs.jsonl" "$tmp/verdicts.txt" | tee "$tmp/ref.txt"
ours=$(sed -n 's/.*reference pairs: *\([0-9.]*\) verifications.*/\1/p' "$tmp/ours.txt")
ref=$(sed -n 's/.*pairs, \([0-9.]*\) verifications.*/\1/p' "$tmp/ref.txt")
python3 -c "print(f'math: or1 / SymPy reference on the same pairs = {$ours / $ref:.0f}x (1 thread each)')"
