#!/usr/bin/env bash
# Chunked prefill against the whole prefill: `or1 generate` of one 4,000-token prompt (4 samples
# of 16 tokens, 2 threads) on a random 4-layer width-896 Qwen2 model (vocabulary 8,000), with
# --prefill-chunk 0 (whole), 1024 and 256; each twice, alternating. Prints wall seconds and peak
# resident memory (/usr/bin/time), and checks that every run wrote the same samples.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/bench/scratch.sh"
PYTHONPATH="$root/tests" /usr/bin/python3 - "$work" <<'PY'
import sys, torch
from or1test import ref, rollout
ref.new_checkpoint(f"{sys.argv[1]}/m", seed=3, arch="qwen2", hidden=896, inter=4864, layers=4, heads=14, kv_heads=2,
                   vocab=8000)
g = torch.Generator().manual_seed(5)
rollout.write_prompts(f"{sys.argv[1]}/p.jsonl", [ref.random_ids(g, 8000, 4000)])
PY
printf "%-16s %9s %12s\n" "--prefill-chunk" "seconds" "peak RSS MB"
for round in 1 2; do
  for c in 0 1024 256; do
    /usr/bin/time -f "%e %M" -o "$work/time" "$root/build/or1" generate --model "$work/m" --input "$work/p.jsonl" \
        --n 4 --max-new-tokens 16 --temperature 1 --seed 1 --threads 2 --prefill-chunk "$c" > "$work/out_$c" 2> /dev/null
    read -r secs kb < "$work/time"
    printf "%-16s %9.2f %12.0f\n" "$c" "$secs" "$((kb / 1024))"
    cmp -s "$work/out_0" "$work/out_$c" || { echo "bench/prefill_chunk.sh: chunk $c wrote other samples" >&2; exit 1; }
  done
done
