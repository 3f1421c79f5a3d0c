"""`or1 grad --micro-batch-tokens K`: the loss and gradient must not depend on K.

usage: test_microbatch.py OR1

One batch of 5 lines run without the flag, then with K = all tokens (1 micro-batch), K packing
it into 2 micro-batches, and K = 1 (every line alone: 5 micro-batches). Eq. 3.1 divides by the
token count of the whole batch, so only the summation order may change: each gradient tensor must
agree with the whole-batch run to 5e-5 norm-wise relative and element-wise relative to the
tensor's largest entry, the statistics to 1e-5. fp32 re-association differs with the sgemm
kernels' blocking, which OpenBLAS chooses by shape: with its AVX-512 kernels, micro-batches of one
line moved a bias gradient by 1.2e-5 of its tensor's largest entry, the norm-wise difference to
5.6e-6 and the gradient norm by 1.1e-6 (under the sanitizer build). A per-micro-batch mean (the
classic mistake) is off by 10% or more here, a thousand times the bound.
"""
import os
import sys
import tempfile

from or1test import files, proc, ref
from or1test.check import Checker

NORMWISE, ELEM, STATS = 5e-5, 5e-5, 1e-5


def compare_runs(chk, what, got, base, keys):
    """A split run's statistics (keys) and gradients against the whole-batch run's, within the
    bounds above; each gradient element-wise (of its tensor's largest entry) and norm-wise."""
    for key in keys:
        want = base[0].get(key)
        chk.close(f"{what}: {key}", got[0].get(key), want, STATS * max(1.0, abs(want)))
    for name, g in base[1].items():
        if not chk.ok(name in got[1], f"{what}: no gradient {name}"):
            continue
        chk.close(f"{what}: grad {name}", got[1][name], g, ELEM * float(g.abs().max()))
        rel = float((got[1][name] - g).norm() / max(float(g.norm()), 1e-30))
        chk.ok(rel <= NORMWISE, f"{what}: grad {name} norm-wise difference {rel:.3g}")
LENGTHS = ((7, 9), (3, 4), (12, 6), (2, 11), (5, 3))


def greedy_count(lines, k):
    """Micro-batches the spec's greedy in-order packing makes with at most k tokens each."""
    count, cur = 0, 0
    for n in lines:
        if cur and cur + n > k:
            count, cur = count + 1, 0
        cur += n
    return count + (1 if cur else 0)


def k_for(lines, want):
    """Smallest K giving exactly `want` micro-batches."""
    for k in range(1, sum(lines) + 1):
        if greedy_count(lines, k) == want:
            return k
    raise AssertionError(f"no K packs {lines} into {want} micro-batches")


def run(chk, or1, tmp, model, bpath, k):
    """One or1 grad run; returns (stats, grads) or None."""
    out = os.path.join(tmp, f"g{k or 0}.safetensors")
    args = ["grad", "--model", model, "--batch", bpath, "--out", out, "--temperature", 0.8,
            "--entropy-coef", 0.01, "--clip-high", 0.28]
    if k is not None:
        args += ["--micro-batch-tokens", k]
    r = proc.run_or1(or1, args)
    if not chk.ok(r.returncode == 0, f"K={k}: exit {r.returncode}: {r.stderr.strip()}"):
        return None
    return proc.parse_json_line(r.stdout.strip(), f"K={k}"), ref.read_safetensors(out)[0]


def main():
    or1 = sys.argv[1]
    chk = Checker("micro-batch invariance")
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "m")
        cfg, params = ref.new_checkpoint(model, seed=3, arch="qwen2", tied=True)
        batch = ref.make_batch(params, cfg, seed=5, lengths=LENGTHS, temperature=0.8)
        bpath = os.path.join(tmp, "b.jsonl")
        files.write_jsonl(bpath, batch)
        lines = [p + r for p, r in LENGTHS]
        ks = {1: sum(lines), 2: k_for(lines, 2), 5: 1}
        base = run(chk, or1, tmp, model, bpath, None)
        want_stats, want_grads = ref.loss_and_grads(params, cfg, batch, temperature=0.8,
                                                    ent_coef=0.01, clip_high=0.28)
        if base:
            chk.close("whole batch: loss vs reference", base[0].get("loss"), want_stats["loss"],
                      2e-5)
            for name, w in want_grads.items():
                chk.close(f"whole batch: grad {name} vs reference", base[1].get(name), w,
                          1e-4 * float(w.abs().max()))
        for n_micro, k in ks.items():
            got = run(chk, or1, tmp, model, bpath, k)
            if not (got and base):
                continue
            what = f"K={k} ({n_micro} micro-batches)"
            compare_runs(chk, what, got, base, ("loss", "pg_loss", "entropy", "clip_frac", "grad_norm"))
            chk.ok(got[0].get("tokens") == base[0].get("tokens"), f"{what}: tokens differ")
    chk.finish()


if __name__ == "__main__":
    main()
