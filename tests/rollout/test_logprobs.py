"""The log-prob generate reports for each sampled token is the trainer's: `or1 logprobs` on the same
prompt + response sequence, at the same temperature, gives the same bits (both commands print
floats that round-trip, so the parsed values must be equal), in fp32 and in bf16.

usage: test_logprobs.py OR1 [PRECISION]   (fp32 by default; bf16: both commands with --precision bf16)

Exact because both sides run the same kernels in the same order: every forward matmul is the
batch-invariant row kernel, the engine's decode attention gathers its context and runs the packed
attention's kernels for that token, and the sampler reports the head's log-prob of the same
logits (docs/model.md, "Exactly on-policy"). A deeper and longer model, thread counts, slot counts
and a preemption are in rollout_onpolicy.

Settings: temperature 1; temperature 0.7 with top-p 0.8 and top-k 10 (the log-prob stays the
untruncated one at 0.7, so a renormalised truncated log-prob fails); greedy (temperature 0, whose
log-probs are at temperature 1). Two checkpoints: Qwen2 with GQA and a 4500-token vocabulary (wider
than one 4096-entry head chunk), and a tied Llama.
"""
import os
import sys
import tempfile

import torch

from or1test import ref, rollout
from or1test.check import Checker

N, NEW = 3, 30
SETTINGS = [(1.0, {}), (0.7, {"temperature": 0.7, "top-p": 0.8, "top-k": 10}),
            (1.0, {"temperature": 0})]
MODELS = [dict(arch="qwen2", heads=4, kv_heads=2, vocab=4500),
          dict(arch="llama", tied=True, heads=4, kv_heads=4, vocab=97)]


def check_model(chk, or1, tmp, k, spec, precision):
    """Every setting on one checkpoint."""
    model = os.path.join(tmp, f"m{k}")
    cfg, _ = ref.new_checkpoint(model, seed=20 + k, **spec)
    g = torch.Generator().manual_seed(k)
    prompts = [ref.random_ids(g, cfg["vocab_size"], n) for n in (1, 6, 23, 50)]
    inp = rollout.write_prompts(os.path.join(tmp, f"in{k}.jsonl"), prompts)
    for temp, flags in SETTINGS:
        what = f"{spec['arch']} vocab {cfg['vocab_size']} {rollout.flag_args(flags) or 'T=1'}"
        rows = rollout.generate(chk, or1, model, inp, len(prompts), n=N, seed=k, precision=precision,
                               **{"max-new-tokens": NEW}, **flags)
        if rows is None:
            continue
        seqs = [prompts[r["index"]] + r["response_ids"] for r in rows]
        want = rollout.logprobs(chk, or1, model, seqs, tmp, temp, precision=precision)
        if want is None:
            continue
        for r, w in zip(rows, want):
            rollout.same_logprobs(chk, what, r, w)
        chk.ok(any(lp < -1.0 for r in rows for lp in r["logprobs"]),
               f"{what}: every log-prob is above -1; the model should be less certain")


def main():
    or1, precision = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None
    chk = Checker(f"rollout logprobs {precision or 'fp32'}")
    with tempfile.TemporaryDirectory() as tmp:
        for k, spec in enumerate(MODELS):
            check_model(chk, or1, tmp, k, spec, precision)
    chk.finish()


if __name__ == "__main__":
    main()
