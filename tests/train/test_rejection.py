#!/usr/bin/env python3
"""Rejection of groups whose rewards are all equal (paper §3.1).

With the random model (it solves nothing) every group is solve-none: every step is skipped
with the loud WARNING, no update happens (the checkpoint's weights equal the start, AdamW's
step count stays 0, the entropy controller does not move). With rejection.max_rounds = 3 each
step generates exactly 3 rounds and then gives up (bounded), still without an update. With
max_new_tokens = 2 every response is truncated: the truncation WARNING. With the SFT model
and refill, rounds stop as soon as N groups are kept, never exceed the bound, and the step
trains.

Usage: test_rejection.py OR1 FIXTURE_DIR SCRATCH_DIR
"""
import os
import re
import sys

from or1test import safetensors as st
from or1test import train as C
from or1test.check import check, finish
from or1test.files import fresh

OR1, FX, SCRATCH = sys.argv[1], sys.argv[2], fresh(sys.argv[3])
INIT, SFT, ROWS = os.path.join(FX, "init"), os.path.join(FX, "sft"), os.path.join(FX, "rows.jsonl")
# Golds the random model cannot hit by chance (the verifier reads the last number of free text,
# and short random outputs do hold single digits).
UNSOLVABLE = C.write_rows(os.path.join(SCRATCH, "unsolvable.jsonl"),
                          [(p, 9876543210 + i, "hard") for i, p in enumerate(["1+1", "2+2", "3+3", "7*9", "5+5"])])


def run(name, model, rows=ROWS, **over):
    """Trains name on rows with overrides; returns (stderr, metrics rows, output folder)."""
    out = os.path.join(SCRATCH, name)
    cfg = C.base_config(model, rows, out, checkpoint={"every": 0}, **over)
    p = C.train(OR1, C.write_config(os.path.join(SCRATCH, name + ".yaml"), cfg))
    return p.stderr, C.metrics(out), out


def unchanged(out, steps, what):
    """The final checkpoint holds the starting weights and an untouched optimizer."""
    d = C.ckpt(out, steps)
    diff = C.max_rel_diff(C.tensors(os.path.join(d, "model.safetensors")), C.tensors(os.path.join(INIT, "model.safetensors")))
    check(diff == 0, f"{what}: weights moved by {diff:g} without an update")
    meta = st.metadata(os.path.join(d, "optimizer.safetensors"))
    check(meta.get("step") == "0", f"{what}: AdamW step {meta.get('step')}")
    moments = C.tensors(os.path.join(d, "optimizer.safetensors"))
    check(all(not a.any() for a in moments.values()), f"{what}: AdamW moments are not zero")


def all_rejected():
    """Random model: every step skipped, loudly, with no update."""
    err, rows, out = run("none", INIT, UNSOLVABLE, train={"steps": 3}, entropy={"initial": 0.001})
    check(len(rows) == 3 and all(r["skipped"] and r["kept_groups"] == 0 for r in rows),
            f"random model: skipped {[r.get('skipped') for r in rows]}, kept {[r.get('kept_groups') for r in rows]}")
    check(all(r["solve_none_ratio"] == 1 and r["loss_tokens"] == 0 for r in rows), "random model: solve_none != 1")
    warned = re.findall(r"^WARNING: step (\d+): every group was rejected", err, re.M)
    check(warned == ["1", "2", "3"], f"rejection warnings for steps {warned}")
    check(all(r["entropy_coef_next"] == 0.001 for r in rows), "the controller moved on skipped steps")
    unchanged(out, 3, "all rejected")


def bounded_refill():
    """max_rounds = 3 on the random model: three rounds per step, then the skip."""
    err, rows, out = run("refill_none", INIT, UNSOLVABLE, rejection={"max_rounds": 3})
    check([r["groups"] for r in rows] == [12, 12], f"refill rounds: groups {[r['groups'] for r in rows]} (want 3 x 4)")
    check(all(r["skipped"] for r in rows), "refill on the random model trained")
    check(err.count("every group was rejected") == 2, "refill: rejection warnings")
    unchanged(out, 2, "refill, all rejected")


def all_truncated():
    """Two new tokens: every response truncated, the truncation warning per step."""
    err, rows, _ = run("trunc", SFT, rollout={"max_new_tokens": 2})
    check(all(r["truncated_ratio"] == 1 and r["response_length_max"] == 2 for r in rows),
            f"truncated ratios {[r['truncated_ratio'] for r in rows]}")
    warned = re.findall(r"^WARNING: step (\d+): every response was truncated", err, re.M)
    check(warned == ["1", "2"], f"truncation warnings for steps {warned}")


def refill_trains():
    """SFT model with refill: rounds stop once N groups are kept; at most max_rounds."""
    _, rows, _ = run("refill_sft", SFT, rejection={"max_rounds": 4}, train={"steps": 4, "prompts_per_step": 4})
    for r in rows:
        rounds = r["groups"] // 4
        check(r["groups"] % 4 == 0 and 1 <= rounds <= 4, f"step {r['step']}: {r['groups']} groups")
        if rounds < 4:
            check(r["kept_groups"] >= 4, f"step {r['step']}: stopped after {rounds} rounds with {r['kept_groups']} kept")
    check(any(r["groups"] > 4 for r in rows), "refill never ran a second round (the test data should need one)")
    check(any(not r["skipped"] for r in rows), "refill with the SFT model never trained")
    _, plain, _ = run("norefill_sft", SFT, train={"steps": 4, "prompts_per_step": 4})
    check(all(r["groups"] == 4 for r in plain), "without refill a step has more than N groups")


def main():
    """Every scenario."""
    all_rejected()
    bounded_refill()
    all_truncated()
    refill_trains()
    finish("train_rejection")


main()
