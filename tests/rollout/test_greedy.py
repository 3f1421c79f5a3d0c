"""Greedy `or1 generate` (temperature 0) against a float64 PyTorch greedy decode.

usage: test_greedy.py OR1 ARCH   (ARCH: qwen2 | llama)

Random EOS-free checkpoints (tied and untied, MHA and GQA, an explicit head_dim, Llama with and
without attention_bias), four prompts of 1 to 37 tokens, 24 new tokens, so every sample must run to
its length. The reference is or1test/ref.py's float64 model, run once over prompt + response:
or1's token at step t must be the reference argmax given the prompt and or1's tokens before t,
which, step by step, is exactly the reference greedy decode. Where the reference's two best logits
are within 1e-4 (an fp32 engine may then legitimately pick the other one) any token within 1e-4 of
the best is accepted, and the comparison of that sample stops there. The greedy log-probs (at
temperature 1) must match the reference's to 1e-4.
"""
import os
import sys
import tempfile

import torch

from or1test import ref, rollout
from or1test.check import Checker

NEW_TOKENS = 24
TIE = 1e-4
ATOL = 1e-4
PROMPT_LENGTHS = [1, 4, 13, 37]
# (tied, heads, kv_heads, head_dim, hidden, vocab, extra config)
VARIANTS = {
    "qwen2": [(False, 4, 2, None, 32, 97, {}), (True, 8, 2, None, 64, 151, {}),
              (False, 4, 1, 16, 32, 120, {})],
    "llama": [(False, 4, 4, None, 32, 97, {}), (True, 4, 1, 16, 32, 130, {}),
              (False, 8, 2, None, 64, 101, {"attention_bias": True})],
}


def check_sample(chk, what, params, cfg, prompt, row):
    """Checks one greedy sample against the reference; returns True if a near-tie was hit."""
    resp = row["response_ids"]
    chk.ok(len(resp) == NEW_TOKENS and row["finish_reason"] == "length",
           f"{what}: {len(resp)} tokens, finish {row['finish_reason']}; want {NEW_TOKENS}, length "
           "(the checkpoint has no EOS)")
    with torch.no_grad():
        logits = ref.forward_logits(params, cfg, prompt + resp)[len(prompt) - 1:-1]
    logp_all = torch.log_softmax(logits, -1)
    for t, tok in enumerate(resp):
        row_logits = logits[t]
        best = float(row_logits.max())
        top2 = torch.topk(row_logits, 2).values
        tie = float(top2[0] - top2[1]) < TIE
        if not chk.ok(0 <= tok < cfg["vocab_size"] and best - float(row_logits[tok]) < TIE,
                      f"{what} step {t}: or1 chose {tok}, the reference's greedy token is "
                      f"{int(row_logits.argmax())} (logit gap {best - float(row_logits[tok]):.3g})"):
            return False
        chk.close(f"{what} step {t} logprob", row["logprobs"][t], logp_all[t, tok], ATOL)
        if tie:
            print(f"{what}: near-tie at step {t} (margin {float(top2[0] - top2[1]):.2g}); "
                  "comparison stops there")
            return True
    return False


def check_variant(chk, or1, tmp, arch, k, variant):
    """One checkpoint: greedy generate over the prompts, every sample checked."""
    tied, heads, kv, hd, hidden, vocab, extra = variant
    model = os.path.join(tmp, f"m{k}")
    cfg, params = ref.new_checkpoint(model, seed=10 + k, arch=arch, tied=tied, heads=heads,
                                     kv_heads=kv, head_dim=hd, hidden=hidden, vocab=vocab, **extra)
    g = torch.Generator().manual_seed(k)
    prompts = [ref.random_ids(g, vocab, n) for n in PROMPT_LENGTHS]
    inp = rollout.write_prompts(os.path.join(tmp, f"in{k}.jsonl"), prompts)
    n = 2 if k == 0 else 1
    rows = rollout.generate(chk, or1, model, inp, len(prompts), n=n, temperature=0,
                           **{"max-new-tokens": NEW_TOKENS, "max-slots": 3, "threads": 1 + k % 2,
                              "seed": 7})
    if rows is None:
        return
    ties = 0
    for row in rows:
        what = (f"{arch} tied={tied} heads={heads}/{kv} head_dim={hd} hidden={hidden} "
                f"prompt {row['index']} (len {len(prompts[row['index']])}) sample {row['sample']}")
        ties += check_sample(chk, what, params, cfg, prompts[row["index"]], row)
        if row["sample"] > 0:
            first = rows[rows.index(row) - row["sample"]]
            chk.ok(row["response_ids"] == first["response_ids"],
                   f"{what}: greedy samples of one prompt differ")
    chk.ok(ties <= 1, f"{arch} variant {k}: {ties} near-ties; random logits should rarely tie")


def main():
    or1, arch = sys.argv[1], sys.argv[2]
    chk = Checker(f"greedy {arch}")
    with tempfile.TemporaryDirectory() as tmp:
        for k, variant in enumerate(VARIANTS[arch]):
            check_variant(chk, or1, tmp, arch, k, variant)
    chk.finish()


if __name__ == "__main__":
    main()
