"""ProRL's reference reset in a real training run (kl.reset_every, kl.reset_optimizer).

5 steps, one mini-batch per step (N_SGD 1), KL on (k3), kl.reset_every 2:
- the KL of a step is taken before its only update, so it is exactly 0 while the reference is
  the policy the step starts from: at steps 1, 3 and 5 (after the resets at 2 and 4), and above
  0 at steps 2 and 4; without resets step 3 and 5 are above 0;
- the checkpoints of steps 2 and 3 hold the reference (reference/) equal to the step-2 weights,
  those of step 4 and 5 the step-4 weights; step 1 holds none;
- with kl.reset_optimizer the step-2 and step-4 checkpoints hold a zeroed AdamW state;
- a run resumed from the step-3 checkpoint (into a new folder) gives the same steps 4 and 5, so
  the reset reference travels with the checkpoint.

Usage: test_reset.py OR1 FIXTURE_DIR SCRATCH_DIR
"""
import json
import os
import sys

import numpy as np

from or1test import train as C
from or1test.check import check, finish
from or1test.files import fresh

OR1, FX, SCRATCH = sys.argv[1], sys.argv[2], fresh(sys.argv[3])
SFT, ROWS = os.path.join(FX, "sft"), os.path.join(FX, "rows.jsonl")
ZERO = 1e-9


def config(name, **kl):
    """5 steps of 4 prompts, one mini-batch each, KL on with the given kl keys."""
    out = os.path.join(SCRATCH, name)
    cfg = C.base_config(SFT, ROWS, out, train={"steps": 5, "mini_batch": 4}, checkpoint={"every": 1, "keep_last": 0},
                        kl={"enabled": True, "coef": 0.01, **kl})
    return C.write_config(os.path.join(SCRATCH, name + ".yaml"), cfg), out


def weights(path):
    """The model tensors of a checkpoint folder."""
    return C.tensors(os.path.join(path, "model.safetensors"))


def kl_pattern(out, zero_steps, what):
    """KL exactly 0 at zero_steps, above 0 at the other updated steps."""
    for r in C.metrics(out):
        if r["step"] in zero_steps:
            check(abs(r["kl"]) < ZERO, f"{what}: step {r['step']}: kl {r['kl']} (the reference is the policy)")
        elif not r["skipped"]:
            check(r["kl"] > 1e-7, f"{what}: step {r['step']}: kl {r['kl']} (the policy has moved)")


def references(out):
    """Each checkpoint's reference: the weights of the last reset step, none before the first."""
    check(not os.path.isdir(os.path.join(C.ckpt(out, 1), "reference")), "step 1: a reference was saved before any reset")
    for step, reset in ((2, 2), (3, 2), (4, 4), (5, 4)):
        ref = os.path.join(C.ckpt(out, step), "reference")
        if check(os.path.isdir(ref), f"step {step}: no reference/ folder"):
            d = C.max_rel_diff(weights(ref), weights(C.ckpt(out, reset)))
            check(d == 0, f"step {step}: the reference differs from the step-{reset} weights by {d:g}")


def zeroed_optimizer(out):
    """kl.reset_optimizer: the AdamW state saved right after a reset is all zero."""
    for step in (2, 4):
        arrays = C.tensors(os.path.join(C.ckpt(out, step), "optimizer.safetensors"))
        worst = max(float(np.abs(a.astype(np.float64)).max(initial=0)) for a in arrays.values())
        check(worst == 0, f"step {step}: AdamW state after the reset holds {worst:g}")
    arrays = C.tensors(os.path.join(C.ckpt(out, 3), "optimizer.safetensors"))
    check(any(np.abs(a.astype(np.float64)).max(initial=0) > 0 for a in arrays.values()), "step 3: AdamW state is zero")


def main():
    cfg, plain = config("plain")
    C.train(OR1, cfg)
    kl_pattern(plain, {1}, "no reset")
    cfg, reset = config("reset", reset_every=2)
    p = C.train(OR1, cfg)
    check(p.stderr.count("the KL reference is now the current policy") == 2, "two resets announced")
    kl_pattern(reset, {1, 3, 5}, "reset every 2")
    references(reset)
    cfg, opt = config("reset_opt", reset_every=2, reset_optimizer=True)
    C.train(OR1, cfg)
    kl_pattern(opt, {1, 3, 5}, "reset every 2 with the optimizer")
    zeroed_optimizer(opt)
    cfg, resumed = config("resumed", reset_every=2)
    C.train(OR1, cfg, "--resume", C.ckpt(reset, 3))
    bad = C.rows_close(C.metrics(resumed), [r for r in C.metrics(reset) if r["step"] > 3], 1e-6)
    check(bad is None, f"resumed from step 3: {bad}")
    finish("train_reset")


if __name__ == "__main__":
    main()
