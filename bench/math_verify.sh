#!/usr/bin/env bash
# Per-call latency of `or1 verify-math` against the real Math-Verify (pinned in
# scripts/python-test-requirements.txt, called as Skywork-OR1 calls it) on the same corpus: the
# RL-shaped pairs scripts/make_math_corpus.py makes from the golds of data/ (the corpus of the
# math_verify_oracle test). or1's figure is its own timer over a run of each category (reading,
# verifying and writing every row, the category's rows 20 times over so that the timer's
# milliseconds resolve; the best of 3 runs), Math-Verify's the mean of its timed calls, one at a
# time. Run from the repository root after `make build` (make bench does both).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
venv="$here/build/venv"
bash "$here/scripts/venv.sh" "$venv" "$here/scripts/python-test-requirements.txt"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 "$here/scripts/make_math_corpus.py" "$here/data" "$tmp/corpus.jsonl" >&2
reps=20
python3 - "$tmp/corpus.jsonl" "$tmp/cat" "$reps" <<'PY'
import json, os, sys
cats = {}
for line in open(sys.argv[1], encoding="utf-8"):
    cats.setdefault(json.loads(line)["category"], []).append(line)
os.makedirs(sys.argv[2])
for c, lines in cats.items():
    with open(os.path.join(sys.argv[2], c + ".jsonl"), "w", encoding="utf-8") as f:
        f.write("".join(lines) * int(sys.argv[3]))
PY
for f in "$tmp"/cat/*.jsonl; do
  best=
  for _ in 1 2 3; do
    s=$("$here/build/or1" verify-math --input "$f" --output /dev/null 2>&1 | sed -n 's/.* \([0-9.]*\) s$/\1/p')
    best=$(python3 -c "print(min(float('$s'), float('${best:-inf}')))")
  done
  echo "$(basename "$f" .jsonl) $(($(wc -l < "$f") / reps)) $best"
done > "$tmp/ours.txt"
PYTHONPATH="$here/tests/math" "$venv/bin/python" "$here/bench/math_verify_ref.py" "$tmp/corpus.jsonl" > "$tmp/ref.json"
python3 - "$tmp/ours.txt" "$tmp/ref.json" <<'PY'
import json, sys
reps = 20  # as above: or1 ran each category's rows this many times
ours = {c: (int(n), float(s) / reps) for c, n, s in (line.split() for line in open(sys.argv[1]))}
ref = json.load(open(sys.argv[2]))
n_all, s_all = sum(n for n, _ in ours.values()), sum(s for _, s in ours.values())
print(f"{'category':18} {'pairs':>6} {'or1 us/call':>12} {'MV ms/call':>11} {'MV median':>10} {'MV p99':>8} {'MV/or1':>8}")
for c, (n, s) in sorted(ours.items()):
    r = ref["categories"][c]
    us = 1e6 * s / n
    print(f"{c:18} {n:6} {us:12.1f} {r['mean_ms']:11.3f} {r['median_ms']:10.3f} {r['p99_ms']:8.1f} {1e3 * r['mean_ms'] / us:7.0f}x")
us = 1e6 * s_all / n_all
a = ref["all"]
print(f"math_verify: {n_all} pairs, one at a time: or1 {us:.1f} us/call (its timer, JSON in and out included); "
      f"{ref['impl']} {a['mean_ms']:.3f} ms/call mean, {a['median_ms']:.3f} median, {a['p99_ms']:.1f} p99 "
      f"({ref['cpu_s']:.1f} CPU s); Math-Verify/or1 = {1e3 * a['mean_ms'] / us:.0f}x per call")
PY
