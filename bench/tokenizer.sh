#!/usr/bin/env bash
# Tokenizer encode throughput (MB/s) against Hugging Face's tokenizers (the Rust library, pinned
# in scripts/python-test-requirements.txt) on the same corpus: the real prompts of data/ plus the
# test corpus, through the Qwen2.5 (= R1-Distill-Qwen vocabulary) and Llama-3 tokenizers of
# data/tokenizers. Run from the repository root after `make build` (make bench does both).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
venv="$here/build/venv"
bash "$here/scripts/venv.sh" "$venv" "$here/scripts/python-test-requirements.txt"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
PYTHONPATH="$here/tests" python3 "$here/tests/tokenizer/ref_files.py" "$here/data" "$tmp/tok" >&2
threads=$(nproc)
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
  dir="$tmp/tok/$model"
  ours=$("$here/build/tokenizer_bench" "$dir" "$tmp/corpus.jsonl" 3 "$threads")
  ref=$("$venv/bin/python" "$here/bench/tokenizer_ref.py" "$dir" "$tmp/corpus.jsonl" 3 "$threads")
  echo "$ours"
  echo "$ref"
  python3 - "$model" "$ours" "$ref" <<'PY'
import json, sys
model, a, b = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
assert a["ids"] == b["ids"], f"id counts differ: {a['ids']} vs {b['ids']}"
r = lambda k: a[k] / b[k]
print(f"tokenizer {model}: {a['mb']:.2f} MB, {b['impl']}; per CPU second, one text at a time: "
      f"or1 {a['cold_mb_cpu_s']:.1f} MB/s cold, {a['warm_mb_cpu_s']:.1f} warm; reference "
      f"{b['cold_mb_cpu_s']:.1f} cold, {b['warm_mb_cpu_s']:.1f} warm; or1/reference "
      f"{r('cold_mb_cpu_s'):.2f}x cold, {r('warm_mb_cpu_s'):.2f}x warm")
print(f"tokenizer {model}: per wall second: or1 {a['cold_mb_s']:.1f} cold, {a['warm_mb_s']:.1f} warm "
      f"(1 thread), {a['threads_mb_s']:.1f} on {a['threads']} threads; reference {b['cold_mb_s']:.1f} cold, "
      f"{b['warm_mb_s']:.1f} warm, encode_batch {b['threads_mb_s']:.1f} on {b['threads']} threads; "
      f"or1/reference {r('warm_mb_s'):.2f}x warm, {r('threads_mb_s'):.2f}x threaded")
PY
done
