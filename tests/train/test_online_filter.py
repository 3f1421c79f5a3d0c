#!/usr/bin/env python3
"""The online filter (paper §3.1): at a stage's start, prompts that every
sample solved in the previous stage are dropped and never drawn again.

Data: "1+1" (the SFT model solves it with every sample) and two rows it never solves. Stage 1
draws all three with 8 samples each; stage 2 draws 2 prompts per step for 4 steps. With the
filter on, stderr says "online filter dropped 1", the checkpoint's sampler state lists row 0 as
dropped, and no stage-2 group is solved at all (accuracy 0, solve_all 0): "1+1" would be.
The same schedule with the filter off and 3 prompts per stage-2 step does draw "1+1" (so the
stage-2 check can fail), and a stage that drops more rows than it needs fails naming the
counts.

Usage: test_online_filter.py OR1 FIXTURE_DIR SCRATCH_DIR
"""
import json
import os
import re
import sys

from or1test import train as C
from or1test.check import check, finish
from or1test.files import fresh

OR1, FX, SCRATCH = sys.argv[1], sys.argv[2], fresh(sys.argv[3])
DATA = C.write_rows(os.path.join(SCRATCH, "rows.jsonl"), [C.EASY, C.HARD6, C.HARD63])


def config(name, filt, prompts2, steps2=4):
    """The two-stage config."""
    out = os.path.join(SCRATCH, name)
    cfg = C.base_config(os.path.join(FX, "sft"), DATA, out, checkpoint={"every": 0}, stages=[
        {"name": "one", "context_length": 24, "prompts": 3, "n": 8, "mini_batch": 1, "steps": 1},
        {"name": "two", "context_length": 24, "prompts": prompts2, "n": 4, "mini_batch": 1, "steps": steps2}])
    cfg["data"]["online_filter"] = filt
    return C.write_config(os.path.join(SCRATCH, name + ".yaml"), cfg), out


def filter_on():
    """The solved row is dropped at stage 2's start and not drawn in 4 steps."""
    cfg, out = config("on", True, 2)
    p = C.train(OR1, cfg)
    rows = C.metrics(out)
    s1 = [r for r in rows if r["stage"] == 0]
    s2 = [r for r in rows if r["stage"] == 1]
    check(len(s1) == 1 and len(s2) == 4, f"stage rows {len(s1)}, {len(s2)}")
    solved = round(s1[0]["solve_all_ratio"] * s1[0]["groups"])
    check(solved == 1, f"stage 1: {solved} groups solved by every sample (the test needs 1+1 solved 8/8)")
    m = re.search(r"online filter dropped (\d+)", p.stderr)
    check(m is not None and int(m.group(1)) == 1, f"stderr lacks 'online filter dropped 1': {p.stderr!r}")
    check(p.stderr.count("online filter dropped") == 1, "the filter ran more than once")
    check(all(r["accuracy"] == 0 and r["solve_all_ratio"] == 0 for r in s2),
            f"stage 2 solved something, so the dropped row was drawn: {[r['accuracy'] for r in s2]}")
    state = json.load(open(os.path.join(C.ckpt(out, 5), "trainer_state.json")))
    check(state["data"].get("dropped") == [0], f"sampler state dropped {state['data'].get('dropped')}")
    return out


def filter_off():
    """Without the filter, stage 2 draws the easy row and solves it."""
    cfg, out = config("off", False, 3, steps2=2)
    p = C.train(OR1, cfg)
    s2 = [r for r in C.metrics(out) if r["stage"] == 1]
    check("online filter dropped" not in p.stderr, "filter off, but it dropped rows")
    check(any(r["solve_all_ratio"] > 0 for r in s2), "filter off: stage 2 never solved 1+1")
    state = json.load(open(os.path.join(C.ckpt(out, 3), "trainer_state.json")))
    check(state["data"].get("dropped") == [], f"filter off: sampler state dropped {state['data'].get('dropped')}")


def too_few_left():
    """Stage 2 wanting 3 prompts when 2 remain: a clear error at the stage start."""
    cfg, out = config("few", True, 3)
    p = C.train(OR1, cfg, ok=False)
    check(p.returncode != 0 and "only 2 remain" in p.stderr, f"too few rows: rc {p.returncode} {p.stderr[-300:]!r}")


def main():
    """Filter on, off, and over-filtering."""
    filter_on()
    filter_off()
    too_few_left()
    finish("train_online_filter")


main()
