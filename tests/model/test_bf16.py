"""`precision: bf16` on the CPU against the float64 reference with bf16 matmuls.

usage: test_bf16.py OR1

In bf16 each matmul of the model (projections, MLP, head) takes its input and its weight rounded to
bfloat16 and sums their products in fp32; the input gradient is taken against the rounded weight,
the weight gradient against the fp32 input, and embedding rows come from the rounded table
(ref.set_matmul_precision documents the reference's form).
Checked: `or1 logprobs --precision bf16` (two checkpoints, temperatures 1 and 0.7, a vocabulary
over two head blocks), `or1 grad --precision bf16` (loss statistics and every gradient tensor), and
that an unknown precision is refused naming the flag.
Tolerances: most log-probs and entropies are within 1e-6 of the bf16 reference; an activation
that or1's fp32 and the float64 reference round to neighbouring bf16 values moves the positions
that see it (by up to 6.7e-3 measured; a float32 reference moves them as much, on other
sequences), so at least 75% must be within TIGHT and all within LOOSE (measured: 86-99% within
1e-5).
Gradients are within 1e-6 of the tensor's largest. The fp32 reference is 2e-3 or more away in
log-probs and 3e-2 in gradients, so each bound below also requires that the run did round to bf16
(the "far" checks).
"""
import json
import os
import sys
import tempfile

import torch

from or1test import files, proc, ref
from or1test.check import Checker

TIGHT, SHARE, LOOSE = 1e-5, 0.75, 2e-2  # log-prob and entropy: SHARE within TIGHT, all within LOOSE
FAR = 2e-3             # the fp32 reference must be at least this far somewhere
STAT_TOL = 2e-5        # loss statistics, relative to max(1, |value|) (measured: 3e-7)
STAT_FAR = 1e-5        # the fp32 reference's entropy at least this far (measured: 5.4e-5)
GRAD_ELEM = 1e-4       # element error / largest |gradient| of that tensor (measured: 1e-6)
GRAD_FAR = 1e-3        # ... and against the fp32 reference at least this much somewhere (measured: 3e-2)
MODELS = [dict(arch="qwen2", tied=False, heads=4, kv_heads=2),
          dict(arch="llama", tied=True, heads=4, kv_heads=4, vocab=8300)]


def reference(fn, precision):
    """fn() with the reference's matmuls in the given precision (restored to fp32 after)."""
    ref.set_matmul_precision(precision)
    try:
        return fn()
    finally:
        ref.set_matmul_precision("fp32")


def diffs(got_rows, want_rows, key, idx):
    """Every |got - want| of the rows' lists `key` against the reference's tensors idx."""
    return [abs(a - b) for g, w in zip(got_rows, want_rows) for a, b in zip(g[key], w[idx].tolist())]


def max_diff(got_rows, want_rows, key, idx):
    """The largest |got - want| over every row's list `key` against the reference's tensor idx."""
    return max(diffs(got_rows, want_rows, key, idx))


def check_logprobs(chk, or1, tmp, k, spec):
    """or1 logprobs in bf16 against the bf16 reference, and away from the fp32 one."""
    model = os.path.join(tmp, f"lp{k}")
    cfg, params = ref.new_checkpoint(model, seed=30 + k, **spec)
    g = torch.Generator().manual_seed(k)
    seqs = [ref.random_ids(g, cfg["vocab_size"], n) for n in (2, 17, 40, 70)]
    inp = os.path.join(tmp, f"lp{k}.jsonl")
    files.write_jsonl(inp, [{"ids": s} for s in seqs])
    for temp in (1.0, 0.7):
        what = f"logprobs {spec['arch']} vocab {cfg['vocab_size']} T={temp}"
        r = proc.run_or1(or1, ["logprobs", "--model", model, "--input", inp, "--precision", "bf16",
                               "--temperature", temp])
        if not chk.ok(r.returncode == 0, f"{what}: exit {r.returncode}: {r.stderr.strip()}"):
            continue
        got = [proc.parse_json_line(line, what) for line in r.stdout.splitlines()]
        if not chk.ok(len(got) == len(seqs), f"{what}: {len(got)} rows for {len(seqs)} sequences"):
            continue
        with torch.no_grad():
            rows = {p: reference(lambda: [ref.sequence_logprobs(params, cfg, s, temp) for s in seqs], p)
                    for p in ("bf16", "fp32")}
        for key, idx in (("logprobs", 0), ("entropy", 1)):
            d = diffs(got, rows["bf16"], key, idx)
            share = sum(x <= TIGHT for x in d) / len(d)
            chk.ok(share >= SHARE and max(d) <= LOOSE,
                   f"{what}: {key}: {share:.0%} within {TIGHT} of the bf16 reference (want {SHARE:.0%}), "
                   f"largest {max(d):.3g} (bound {LOOSE})")
        far = max_diff(got, rows["fp32"], "logprobs", 0)
        chk.ok(far >= FAR, f"{what}: log-probs within {far:.3g} of the fp32 reference: no bf16 rounding?")


def check_grad(chk, or1, tmp):
    """or1 grad in bf16: statistics and gradients against the bf16 reference (straight-through)."""
    model = os.path.join(tmp, "grad")
    cfg, params = ref.new_checkpoint(model, seed=40, arch="qwen2", tied=False)
    kw = dict(temperature=0.7, clip_low=0.2, clip_high=0.28, ent_coef=0.01)
    batch = ref.make_batch(params, cfg, seed=4, temperature=0.7)
    bpath, gpath = os.path.join(tmp, "b.jsonl"), os.path.join(tmp, "g.safetensors")
    files.write_jsonl(bpath, batch)
    r = proc.run_or1(or1, ["grad", "--model", model, "--batch", bpath, "--out", gpath, "--precision", "bf16",
                           "--temperature", 0.7, "--clip-low", 0.2, "--clip-high", 0.28, "--entropy-coef", 0.01])
    if not chk.ok(r.returncode == 0, f"grad bf16: exit {r.returncode}: {r.stderr.strip()}"):
        return
    stats = proc.parse_json_line(r.stdout.strip(), "grad bf16")
    want, want_g = reference(lambda: ref.loss_and_grads(params, cfg, batch, **kw), "bf16")
    fp32, fp32_g = ref.loss_and_grads(params, cfg, batch, **kw)
    for key in ("loss", "pg_loss", "entropy", "grad_norm"):
        chk.close(f"grad bf16: {key}", stats.get(key), want[key], STAT_TOL * max(1.0, abs(want[key])))
    chk.ok(abs(stats["entropy"] - fp32["entropy"]) >= STAT_FAR,
           f"grad bf16: entropy {stats['entropy']} is the fp32 reference's {fp32['entropy']}")
    got, _, _ = ref.read_safetensors(gpath)
    chk.ok(set(got) == set(want_g), f"grad bf16: gradient names differ from the reference's")
    far = 0.0
    for name in sorted(set(got) & set(want_g)):
        w = want_g[name]
        chk.close(f"grad bf16: {name}", got[name], w, GRAD_ELEM * max(float(w.abs().max()), 1e-12))
        f = fp32_g[name]
        far = max(far, float((got[name] - f).abs().max()) / max(float(f.abs().max()), 1e-12))
    chk.ok(far >= GRAD_FAR, f"grad bf16: every gradient within {far:.3g} of the fp32 reference's: no bf16 rounding?")


def check_refused(chk, or1, tmp):
    """An unknown precision: a non-zero exit and a message naming it and the choices."""
    model = os.path.join(tmp, "lp0")
    inp = os.path.join(tmp, "lp0.jsonl")
    r = proc.run_or1(or1, ["logprobs", "--model", model, "--input", inp, "--precision", "fp16"])
    chk.ok(r.returncode != 0 and "precision" in r.stderr and "fp16" in r.stderr and "bf16" in r.stderr,
           f"--precision fp16: exit {r.returncode}, stderr {r.stderr.strip()!r}")


def main():
    or1 = sys.argv[1]
    chk = Checker("bf16")
    with tempfile.TemporaryDirectory() as tmp:
        for k, spec in enumerate(MODELS):
            check_logprobs(chk, or1, tmp, k, spec)
        check_grad(chk, or1, tmp)
        check_refused(chk, or1, tmp)
    chk.finish()


if __name__ == "__main__":
    main()
