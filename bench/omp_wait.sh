#!/usr/bin/env bash
# How OpenMP threads wait between parallel regions, against decode time: `or1 generate` on 2
# threads with a sleep at once (OMP_WAIT_POLICY=passive), or1's default (GOMP_SPINCOUNT=1000)
# and longer spins, on a 24-layer width-64 model (200 tokens of 1 sample) and a 4-layer width-896
# one (4 prompts x 4 samples of 64 tokens), random checkpoints; each setting twice, alternating,
# quiet and then beside two busy loops (OR1_BENCH_LOAD=0: quiet only). Seconds of wall time.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/bench/scratch.sh"
PYTHONPATH="$root/tests" /usr/bin/python3 - "$work" <<'PY'
import sys, torch
from or1test import ref, rollout
for name, shape, vocab, prompts in (("small", dict(hidden=64, inter=128, layers=24, heads=4), 600, 1),
                                    ("wide", dict(hidden=896, inter=4864, layers=4, heads=14), 8000, 4)):
    ref.new_checkpoint(f"{sys.argv[1]}/{name}", seed=3, arch="qwen2", kv_heads=2, vocab=vocab, **shape)
    g = torch.Generator().manual_seed(5)
    rollout.write_prompts(f"{sys.argv[1]}/{name}.jsonl", [ref.random_ids(g, vocab, 32) for _ in range(prompts)])
PY
settings=("OMP_WAIT_POLICY=passive" "GOMP_SPINCOUNT=1000" "GOMP_SPINCOUNT=10000" "GOMP_SPINCOUNT=300000")
run() { # model, samples, tokens, setting
  local t0=$EPOCHREALTIME
  env "$4" "$root/build/or1" generate --model "$work/$1" --input "$work/$1.jsonl" --n "$2" --max-new-tokens "$3" \
      --temperature 1 --seed 1 --threads 2 > /dev/null 2>&1
  awk -v m="$1" -v s="$4" -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%-6s %-24s %6.2f s\n", m, s, b - a }'
}
rounds() {
  for i in 1 2; do for s in "${settings[@]}"; do run small 1 200 "$s"; run wide 4 64 "$s"; done; done
}
echo "quiet:"; rounds
[[ "${OR1_BENCH_LOAD:-1}" == 0 ]] && exit 0
yes > /dev/null & yes > /dev/null &
echo "beside two busy loops:"; rounds
