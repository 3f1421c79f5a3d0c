#!/usr/bin/env python3
"""Runs that cannot be lost.

A new run refuses a folder that holds a run (its metrics and checkpoints stay byte for byte),
also when `--resume` lost its value; `--resume auto`, a run folder, a checkpoint folder and
`checkpoints/latest` (a link that works as a path; an older text-file `latest` too) all
continue it; resuming at the end says so and trains nothing; `--overwrite` replaces the run;
`checkpoint.keep_last` keeps the newest checkpoints only and `checkpoint.dtype: bf16` halves
the weights; an override that a stages list shadows is refused naming both.

Usage: test_run_dir.py OR1 FIXTURE_DIR SCRATCH_DIR
"""
import os
import re
import shutil
import sys

from or1test import safetensors as st
from or1test import train as C
from or1test.check import check, finish
from or1test.files import fresh

OR1, FX, SCRATCH = sys.argv[1], sys.argv[2], fresh(sys.argv[3])
SFT, ROWS = os.path.join(FX, "sft"), os.path.join(FX, "rows.jsonl")
RUN = os.path.join(SCRATCH, "run")


def config(name, steps, **over):
    """A config file writing to RUN (steps steps, a checkpoint each, the newest 3 kept)."""
    cfg = C.base_config(SFT, ROWS, RUN, train={"steps": steps}, **over)
    return C.write_config(os.path.join(SCRATCH, name + ".yaml"), cfg)


def snapshot():
    """The run folder's files and their bytes."""
    out = {}
    for root, _, names in os.walk(RUN):
        for n in names:
            p = os.path.join(root, n)
            out[os.path.relpath(p, RUN)] = open(p, "rb").read()
    return out


def steps_kept():
    """Step numbers of the checkpoints in RUN, and where `latest` points."""
    ck = os.path.join(RUN, "checkpoints")
    steps = sorted(int(d[5:]) for d in os.listdir(ck) if d.startswith("step-"))
    return steps, os.readlink(os.path.join(ck, "latest"))


def protected():
    """A second new run, or a --resume without its value, leaves the run as it was."""
    C.train(OR1, config("two", 2))
    before = snapshot()
    for extra, what in (([], "a second new run"), (["--resume"], "--resume without a value")):
        p = C.train(OR1, config("two", 2), *extra, ok=False)
        check(p.returncode != 0 and ("holds a run" in p.stderr or "--resume" in p.stderr),
              f"{what}: rc {p.returncode}, stderr {p.stderr[-300:]!r}")
        check(snapshot() == before, f"{what} changed the run folder")
    check("--resume auto continues it, --overwrite replaces it" in C.train(OR1, config("two", 2), ok=False).stderr,
          "the refusal says how to continue or replace")


def resume_forms():
    """auto, the run folder, `latest` and a checkpoint folder all continue the run."""
    p = C.train(OR1, config("four", 4), "--resume", "auto")
    check("resuming from" in p.stderr and "step-000002" in p.stderr, f"auto: {p.stderr[-300:]!r}")
    check(steps_kept() == ([2, 3, 4], "step-000004"), f"after auto: {steps_kept()} (keep_last 3)")
    check([r["step"] for r in C.metrics(RUN)] == [1, 2, 3, 4], "metrics after auto")
    for arg in (RUN, os.path.join(RUN, "checkpoints", "latest"), C.ckpt(RUN, 4)):
        p = C.train(OR1, config("four", 4), "--resume", arg)
        check(p.returncode == 0 and "nothing to train" in p.stderr and "step 4" in p.stderr,
              f"--resume {arg} at the end: {p.stderr[-300:]!r}")
    p = C.train(OR1, config("five", 5), "--resume", os.path.join(RUN, "checkpoints", "latest"))
    check([r["step"] for r in C.metrics(RUN)] == [1, 2, 3, 4, 5], "latest as a path continued the run")
    # An older run's `latest` is a text file naming the folder.
    ck = os.path.join(RUN, "checkpoints")
    os.remove(os.path.join(ck, "latest"))
    with open(os.path.join(ck, "latest"), "w") as f:
        f.write("step-000005\n")
    p = C.train(OR1, config("six", 6), "--resume", os.path.join(ck, "latest"))
    check(p.returncode == 0 and [r["step"] for r in C.metrics(RUN)][-1] == 6, "a text-file latest resumes")
    check(os.path.islink(os.path.join(ck, "latest")), "latest became a link again")
    p = C.train(OR1, config("six", 6), "--resume", os.path.join(SCRATCH, "nowhere"), ok=False)
    check(p.returncode != 0 and "no such checkpoint or run folder" in p.stderr, f"a bad --resume: {p.stderr[-200:]!r}")


def overwrite_and_keep():
    """--overwrite replaces the run; keep_last 2 and bf16 weights."""
    p = C.train(OR1, config("keep", 3, checkpoint={"every": 1, "keep_last": 2, "dtype": "bf16"}), "--overwrite")
    check("--overwrite: removed the run" in p.stderr, "--overwrite says what it removed")
    check([r["step"] for r in C.metrics(RUN)] == [1, 2, 3], f"metrics after --overwrite {C.metrics(RUN)[:1]}")
    check(steps_kept() == ([2, 3], "step-000003"), f"keep_last 2: {steps_kept()}")
    _, dtypes, _ = st.read_arrays(os.path.join(C.ckpt(RUN, 3), "model.safetensors"))
    check(set(dtypes.values()) == {"BF16"}, f"checkpoint.dtype bf16: {set(dtypes.values())}")


def shadowed():
    """--set train.steps under a stages list is refused naming both."""
    cfg = C.write_config(os.path.join(SCRATCH, "staged.yaml"), C.base_config(
        SFT, ROWS, os.path.join(SCRATCH, "staged"), stages=[{"steps": 1}, {"steps": 2, "n": 2}]))
    p = C.train(OR1, cfg, "--set", "train.steps=9", ok=False)
    check(p.returncode == 2 and re.search(r"--set train.steps=9: the stages list \(.*staged.yaml:\d+\) sets steps", p.stderr),
          f"shadowed train.steps: rc {p.returncode}, {p.stderr[-300:]!r}")
    p = C.train(OR1, cfg, "--set", "rollout.n=3", ok=False)
    check(p.returncode == 0 and "has no effect" not in p.stderr,
          f"rollout.n is the first stage's default: accepted (rc {p.returncode}, {p.stderr[-200:]!r})")


protected()
resume_forms()
overwrite_and_keep()
shadowed()
finish("run folder")
