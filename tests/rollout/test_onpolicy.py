"""Exactly on-policy at depth and length: on a 24-layer model, the log-probs `or1 generate` reports
for 1,000-token samples equal, bit for bit, those `or1 logprobs` (the trainer's forward and head)
computes for the same prompt + response, in fp32 and in bf16; and the samples themselves (tokens
and log-probs) are the same bytes with 1 or 2 threads, 1 or 3 slots, and with a KV pool so small
that sequences are preempted and started again.

usage: test_onpolicy.py OR1 [NEW]   (NEW: new tokens per sample, default 1000)

A difference in the last bit anywhere (attention summed in another order in decode than in the
packed forward, a matmul that depends on the batch, the sampler's log-sum-exp against the head's,
an activation rounded to bf16 at another point) moves every later layer and token, so one
comparison of whole sequences at this depth covers them all.
"""
import json
import os
import re
import sys
import tempfile

import torch

from or1test import proc, ref, rollout
from or1test.check import Checker

MODEL = dict(arch="qwen2", hidden=64, inter=128, layers=24, heads=4, kv_heads=2, vocab=600)
PROMPTS = (5, 37)
N = 2


def run(chk, or1, args, what):
    """Runs or1 with args; returns its stdout and stderr (None after recording a failure)."""
    r = proc.run_or1(or1, args, timeout=1800)
    if not chk.ok(r.returncode == 0 and not proc.sanitizer_report(r.stderr),
                  f"{what}: exit {r.returncode}: {r.stderr.strip()[-1500:]}"):
        return None
    return r.stdout, r.stderr


def main():
    or1 = sys.argv[1]
    new = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    chk = Checker("rollout_onpolicy")
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "deep")
        cfg, _ = ref.new_checkpoint(model, seed=3, **MODEL)
        g = torch.Generator().manual_seed(5)
        prompts = [ref.random_ids(g, cfg["vocab_size"], n) for n in PROMPTS]
        inp = rollout.write_prompts(os.path.join(tmp, "prompts.jsonl"), prompts)
        # bytes of KV per token (fp32 keys and values of every layer): a pool of 1.5 samples
        kv_tok = MODEL["layers"] * 2 * MODEL["kv_heads"] * (MODEL["hidden"] // MODEL["heads"]) * 4
        small = f"{1.5 * (max(PROMPTS) + new) * kv_tok / 2**30:.6f}"
        for precision in ("fp32", "bf16"):
            base = ["generate", "--model", model, "--input", inp, "--n", N, "--max-new-tokens", new,
                    "--temperature", 1.0, "--seed", 11, "--precision", precision]
            runs = {}
            for name, extra in (("2 threads, 3 slots", ["--threads", 2, "--max-slots", 3]),
                                ("1 thread, 3 slots", ["--threads", 1, "--max-slots", 3]),
                                ("2 threads, 1 slot", ["--threads", 2, "--max-slots", 1]),
                                ("2 threads, preempted", ["--threads", 2, "--max-slots", 3, "--kv-cache-gb", small])):
                out = run(chk, or1, base + extra, f"{precision} generate, {name}")
                if out is None:
                    continue
                runs[name] = out[0]
                if "preempted" in name:
                    m = re.search(r"(\d+) preemptions", out[1])
                    chk.ok(m and int(m.group(1)) > 0, f"{precision}: the small pool preempted nothing: {out[1][-300:]}")
            first = next(iter(runs.values()), None)
            for name, text in runs.items():
                chk.ok(text == first, f"{precision}: the samples of '{name}' differ from those of the first run")
            if first is None:
                continue
            rows = rollout.parse_rows(chk, f"{precision} generate", first, len(prompts), N)
            if rows is None:
                continue
            lengths = [len(r["response_ids"]) for r in rows]
            chk.ok(max(lengths) >= min(new, 200), f"{precision}: samples end too early to test depth: {lengths}")
            path = os.path.join(tmp, f"seqs_{precision}.jsonl")
            with open(path, "w") as f:
                f.write("".join(json.dumps({"ids": prompts[r["index"]] + r["response_ids"]}) + "\n" for r in rows))
            for threads in (1, 2):
                out = run(chk, or1, ["logprobs", "--model", model, "--input", path, "--precision", precision,
                                     "--threads", threads], f"{precision} logprobs, {threads} thread(s)")
                if out is None:
                    continue
                want = [proc.parse_json_line(line, "logprobs")["logprobs"] for line in out[0].splitlines()]
                for r, w in zip(rows, want):
                    rollout.same_logprobs(chk, f"{precision}, {threads} thread(s)", r, w)
            print(f"{precision}: {len(rows)} samples of {lengths} tokens, {len(runs)} generate runs alike, "
                  f"log-probs equal to the trainer's")
    chk.finish()


if __name__ == "__main__":
    main()
