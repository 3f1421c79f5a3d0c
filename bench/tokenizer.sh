#!/usr/bin/env bash
# Tokenizer encode throughput (MB/s) against Hugging Face's tokenizers (the Rust library, pinned
# in scripts/python-test-requirements.txt) in the same run, on two corpora: every text of data/
# (prompts and ground truths, as the tokenizer tests take them) and the tests' stress corpus
# (tests/tokenizer/stress.py, without its texts holding U+0000, which tokenizer_bench's reader
# refuses), through the Qwen2.5 (= R1-Distill-Qwen vocabulary) and Llama-3 tokenizers of
# data/tokenizers. Run from the repository root after `make build` (make bench does both);
# OR1_BUILD (default build) and OR1_VENV (default build/venv) point elsewhere.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${OR1_BUILD:-$here/build}
venv=${OR1_VENV:-$here/build/venv}
bash "$here/scripts/venv.sh" "$venv" "$here/scripts/python-test-requirements.txt"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
PYTHONPATH="$here/tests" python3 "$here/tests/tokenizer/ref_files.py" "$here/data" "$tmp/tok" >&2
threads=$(nproc)
PYTHONPATH="$here/tests" python3 - "$here/data" "$tmp" <<'PY'
import json, os, sys
from or1test import hf_tokenizers as hf
data, tmp = sys.argv[1], sys.argv[2]
with open(os.path.join(tmp, "data.jsonl"), "w", encoding="utf-8") as f:
    f.writelines(json.dumps({"text": t}, ensure_ascii=False) + "\n" for t in hf.data_texts(data))
with open(os.path.join(tmp, "tok", "stress.jsonl"), encoding="utf-8") as src, \
        open(os.path.join(tmp, "stress.jsonl"), "w", encoding="utf-8") as f:
    f.writelines(json.dumps({"text": t}, ensure_ascii=False) + "\n"
                 for t in (json.loads(line)["text"] for line in src) if "\0" not in t)
PY
for corpus in data stress; do
  for model in qwen2_5 llama3; do
    dir="$tmp/tok/$model"
    ours=$("$build/tokenizer_bench" "$dir" "$tmp/$corpus.jsonl" 3 "$threads")
    ref=$("$venv/bin/python" "$here/bench/tokenizer_ref.py" "$dir" "$tmp/$corpus.jsonl" 3 "$threads")
    echo "$ours"
    echo "$ref"
    python3 - "$model" "$corpus" "$ours" "$ref" <<'PY'
import json, sys
model, corpus, a, b = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
assert a["ids"] == b["ids"], f"id counts differ: {a['ids']} vs {b['ids']}"
r = lambda k: a[k] / b[k]
name = f"tokenizer {model} on {corpus} ({a['rows']} texts, {a['mb']:.2f} MB)"
print(f"{name}: {b['impl']}; per CPU second, one text at a time: "
      f"or1 {a['cold_mb_cpu_s']:.1f} MB/s cold, {a['warm_mb_cpu_s']:.1f} warm; reference "
      f"{b['cold_mb_cpu_s']:.1f} cold, {b['warm_mb_cpu_s']:.1f} warm; or1/reference "
      f"{r('cold_mb_cpu_s'):.2f}x cold, {r('warm_mb_cpu_s'):.2f}x warm")
print(f"{name}: per wall second: or1 {a['cold_mb_s']:.1f} cold, {a['warm_mb_s']:.1f} warm "
      f"(1 thread), {a['threads_mb_s']:.1f} on {a['threads']} threads; reference {b['cold_mb_s']:.1f} cold, "
      f"{b['warm_mb_s']:.1f} warm, encode_batch {b['threads_mb_s']:.1f} on {b['threads']} threads; "
      f"or1/reference {r('warm_mb_s'):.2f}x warm, {r('threads_mb_s'):.2f}x threaded")
PY
  done
done
